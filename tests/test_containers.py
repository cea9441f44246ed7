"""`cudafit containers` (issue 29): NGC PyTorch containers against a host, from
matrices/ngc-containers.toml. The driver a release needs is its notes' branch, else its CUDA's
toolkit driver; data-center GPUs run older branches the release lists (forward compatibility);
what the data lacks stays unknown."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from packaging.version import Version

from cudafit.cli import main
from cudafit.containers.data import Container, Fact
from cudafit.containers.judge import judge
from cudafit.loader import load
from cudafit.records import GpuInfo, Machine

LINUX = ["--os", "linux", "--arch", "x86_64", "--python", "3.12"]


def verdicts(*machine: str) -> dict[str, dict]:
    result = CliRunner().invoke(main, ["containers", *machine, "--json"])
    assert result.exit_code in (0, 1), result.output
    doc = json.loads(result.stdout)
    return {c["tag"]: c for c in doc["containers"]}


def test_every_release_has_the_fields_the_contract_names():
    found = verdicts("--gpu", "NVIDIA A100-SXM4-80GB", "--driver", "580.65.06", *LINUX)
    assert len(found) == len([c for c in load().ngc_containers if c.framework == "pytorch"]) >= 40
    for tag, c in found.items():
        assert c["image"] == f"nvcr.io/nvidia/pytorch:{tag}-py3"
        assert set(c) >= {"tag", "image", "cuda", "torch", "driver_min", "runs", "why"}
        assert c["runs"] in (True, False, None) and c["why"]
    assert "25.07" not in found  # NVIDIA published no 25.07 PyTorch container


def test_a_new_driver_runs_what_its_cuda_allows():
    found = verdicts("--gpu", "NVIDIA GeForce RTX 4090", "--driver", "580.65.06", *LINUX)
    assert found["25.12"]["cuda"] == "13.1.0" and found["25.12"]["runs"] is False  # CUDA 13.1's toolkit driver is 590.44.01
    assert found["24.10"]["runs"] is True and found["24.10"]["driver_min"] == "560"  # its notes: 560 or later
    assert found["23.02"]["runs"] is True


@pytest.mark.parametrize(
    "gpu, runs, said",
    [
        ("Tesla P100-PCIE-16GB", True, "R470 runs it through forward compatibility (data-center GPU)"),
        ("NVIDIA GeForce GTX 1080", False, "forward compatibility is for data-center GPUs only"),
    ],
)
def test_an_old_driver_runs_a_newer_cuda_only_on_data_center_gpus(gpu, runs, said):
    found = verdicts("--gpu", gpu, "--driver", "470.82.01", *LINUX)
    assert found["23.02"]["runs"] is runs and said in found["23.02"]["why"]  # 23.02 lists R470 >= 470.57
    assert found["23.02"]["forward_compatibility"] is runs


def test_what_the_data_lacks_stays_unknown():
    found = verdicts("--gpu", "NVIDIA A100-SXM4-80GB", "--driver", "535.104.05", *LINUX)
    assert found["24.04"]["runs"] is None and "branches are not in the data" in found["24.04"]["why"]
    assert any(c["runs"] is None and "its CUDA version is not in cudafit's data" in c["why"] for c in found.values())
    no_driver = verdicts("--gpu", "NVIDIA A100-SXM4-80GB", *LINUX)
    assert all(c["runs"] is None for c in no_driver.values())


def test_a_host_without_an_nvidia_driver_or_linux():
    assert all(c["runs"] is False for c in verdicts("--driver", "none", *LINUX).values() if c["cuda"])
    mac = verdicts("--os", "macos", "--arch", "aarch64", "--python", "3.12")
    assert all(c["runs"] is False for c in mac.values() if c["cuda"] and c["driver_min"])


def test_the_table_and_the_since_bound():
    result = CliRunner().invoke(main, ["containers", "--gpu", "NVIDIA GeForce RTX 4090", "--driver", "580.65.06", *LINUX, "--since", "24.01"])
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert all(len(line) <= 100 for line in lines)
    assert not any(line.startswith("23.") for line in lines)
    assert "newest that runs: nvcr.io/nvidia/pytorch:" in result.stdout


@pytest.mark.parametrize("since", ["25", "abc", "25.x", "2025.01", "25.13", "25.00", "2.4", "25.1"])
def test_a_bad_since_is_exit_2(since):
    result = CliRunner().invoke(main, ["containers", *LINUX, "--since", since])
    assert result.exit_code == 2 and "expected a release like 25.01" in result.stderr


def test_a_release_whose_own_floor_is_unknown_still_needs_its_majors():
    # Windows drivers' floors for CUDA 13.x toolkits are not in the data; every 13.x build needs R580
    found = verdicts("--os", "wsl", "--arch", "x86_64", "--python", "3.12", "--gpu", "NVIDIA GeForce RTX 4090", "--driver", "566.36")
    assert found["26.06"]["runs"] is False and "the floor of every CUDA 13.x build under minor-version compatibility" in found["26.06"]["why"]


# --- issue 1: the GPU against what the container's CUDA has code for ------------------------------


def test_cuda_12_dropped_kepler():
    found = verdicts("--gpu", "Tesla K80", "--driver", "470.82.01", "--since", "23.01", *LINUX)
    why = found["23.03"]["why"]  # CUDA 12.1; 23.03 lists R470 for forward compatibility, but not for sm_37
    assert found["23.03"]["runs"] is False and "CUDA 12.1 supports compute capability 5.0 and up, not Tesla K80 (sm_37), a Kepler GPU" in why
    assert "CUDA 12.1's targets" in why and "declared" in why  # its evidence: nvidia.toml's targets and the image's CUDA grade
    assert found["23.02"]["runs"] is False and "not Tesla K80" in found["23.02"]["why"]
    assert not any(c["runs"] for c in found.values())
    assert all(c["runs"] is None for c in found.values() if c["cuda"] is None)  # its CUDA unknown: so is its GPU support


def test_cuda_13_dropped_maxwell_pascal_and_volta():
    found = verdicts("--gpu", "NVIDIA GeForce GTX 1080", "--driver", "580.65.06", "--since", "25.01", *LINUX)
    for tag in ("25.08", "25.12", "26.02"):
        assert found[tag]["runs"] is False and "CUDA 13." in found[tag]["why"] and "supports compute capability 7.5 and up" in found[tag]["why"]
    assert found["25.06"]["runs"] is True  # CUDA 12.9 still has sm_60 and sm_61
    volta = verdicts("--gpu", "Tesla V100-SXM2-16GB", "--driver", "580.65.06", "--since", "25.08", *LINUX)
    assert all(c["runs"] is False for c in volta.values() if c["cuda"])


def test_a_driver_past_its_gpus_last_branch_runs_nothing_on_it():
    # R580 is the last branch for Pascal (nvidia.toml): 590 drives no GTX 1080, whatever the image
    found = verdicts("--gpu", "NVIDIA GeForce GTX 1080", "--driver", "590.44.01", "--since", "25.01", *LINUX)
    assert found["26.02"]["runs"] is False and found["25.12"]["runs"] is False
    assert found["25.06"]["runs"] is False and "last branch supporting Pascal (R580)" in found["25.06"]["why"]


def test_a_release_whose_own_floor_is_unknown_keeps_an_earlier_floor_in_doubt():
    found = verdicts("--gpu", "Tesla M60", "--driver", "535.104.05", *LINUX)
    assert found["23.08"]["runs"] is False and "it supports compute capability 6.0 and up" in found["23.08"]["why"]
    # 23.10's own lowest compute capability is not in the data; 23.08 already needed 6.0: not a yes
    assert found["23.10"]["runs"] is None and "release 23.08 already supported only compute capability 6.0" in found["23.10"]["why"]
    assert not any(c["runs"] for c in found.values())


def test_a_gpu_newer_than_the_cudas_targets_is_unknown():
    found = verdicts("--gpu", "NVIDIA GeForce RTX 5090", "--driver", "580.65.06", *LINUX)
    assert found["24.10"]["runs"] is None and "only PTX could" in found["24.10"]["why"]  # CUDA 12.6 has no sm_120 target
    assert found["25.06"]["runs"] is True  # CUDA 12.9 has


def test_a_cuda_whose_targets_are_unknown_leaves_the_gpu_unknown():
    image = Container(tag="described", framework="pytorch", image="an image", cuda=Fact("13.5", "declared"))
    host = Machine(os="linux", arch="x86_64", python="3.12", driver="620.10.01", gpus=(GpuInfo("NVIDIA H100 80GB HBM3", (9, 0)),))
    verdict = judge(image, host, load())
    assert verdict.runs is None and "which GPUs CUDA 13.5 supports is not in cudafit's data" in verdict.why


# --- issue 2: forward compatibility below a CUDA major's floor -----------------------------------


def test_forward_compatibility_is_answered_alike_whether_the_releases_floor_is_known():
    found = verdicts("--gpu", "NVIDIA A100-SXM4-80GB", "--driver", "535.104.05", *LINUX)
    for tag in ("26.09", "26.06"):  # CUDA 13.4 (its toolkit's driver unknown) and 13.3 (610.43.02)
        assert found[tag]["runs"] is None and "a data-center GPU may run it through forward compatibility" in found[tag]["why"]
    assert "the floor of every CUDA 13.x build under minor-version compatibility" in found["26.09"]["why"]


@pytest.mark.parametrize("gpu", ["NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 3090"])
def test_below_a_majors_floor_a_geforce_gpu_runs_nothing(gpu):
    found = verdicts("--gpu", gpu, "--driver", "535.104.05", "--since", "26.06", *LINUX)
    assert all(c["runs"] is False for c in found.values())
    assert "forward compatibility is for data-center GPUs only" in found["26.09"]["why"]


def test_a_workstation_gpu_may_be_an_ngc_server_ready_one():
    found = verdicts("--gpu", "NVIDIA RTX A6000", "--driver", "535.104.05", "--since", "26.06", *LINUX)
    assert all(c["runs"] is None and "NGC Server Ready" in c["why"] for c in found.values())


# --- issue 3: no GPU given ----------------------------------------------------------------------


def test_without_a_gpu_forward_compatibility_is_unknown():
    result = CliRunner().invoke(main, ["containers", "--driver", "470.82.01", *LINUX, "--json"])
    assert result.exit_code == 1  # none is known to run
    found = {c["tag"]: c for c in json.loads(result.stdout)["containers"]}
    assert found["23.02"]["runs"] is None and found["26.09"]["runs"] is None
    for c in found.values():  # no; only where the release's list leaves R470 out, whatever the GPU
        assert c["runs"] is None or (c["runs"] is False and "not among those it runs on" in c["why"])


def test_without_a_gpu_the_gpus_the_driver_drives_decide():
    found = verdicts("--driver", "590.44.01", *LINUX)
    assert found["25.12"]["runs"] is True  # CUDA 13.1 has code for every GPU R590 drives (Turing on)
    assert found["24.10"]["runs"] is None and "sm_120" in found["24.10"]["why"]  # a Blackwell GPU would need PTX


# --- issue 4: specs ------------------------------------------------------------------------------


def test_a_spec_keeps_the_releases_of_that_torch():
    expected = {
        c.tag
        for c in load().ngc_containers
        if c.framework == "pytorch" and c.torch is not None and Version(c.torch.value).base_version == "2.4.0"
    }
    assert expected >= {"24.05"}  # NVIDIA's 2.4.0a0+07cecf4168 is a snapshot of torch 2.4.0
    result = CliRunner().invoke(main, ["containers", "torch==2.4.0", "--driver", "550.54.15", *LINUX, "--json"])
    doc = json.loads(result.stdout)
    assert {c["tag"] for c in doc["containers"]} == expected
    assert any("torch version not in cudafit's data" in n for n in doc["notes"])  # the unknown ones are left out, and said
    named = verdicts_of(["pytorch>=2.4,<2.5", "--driver", "550.54.15", *LINUX])  # NGC's name for it
    assert set(named) == expected


def verdicts_of(args: list[str]) -> dict[str, dict]:
    result = CliRunner().invoke(main, ["containers", *args, "--json"])
    assert result.exit_code in (0, 1), result.output
    return {c["tag"]: c for c in json.loads(result.stdout)["containers"]}


def test_every_record_names_its_framework_and_version():
    for c in verdicts("--gpu", "NVIDIA H100 80GB HBM3", "--driver", "580.65.06", *LINUX).values():
        assert c["framework"] == "pytorch" and c["version"] == c["torch"]


@pytest.mark.parametrize("spec, said", [("xformers", "none of them"), ("torchvision", "name torch"), ("jax[cuda12]", "no extras"), ("torch==", "PEP 508")])
def test_a_spec_that_names_no_container_is_exit_2(spec, said):
    result = CliRunner().invoke(main, ["containers", spec, *LINUX])
    assert result.exit_code == 2 and said in result.stderr


def test_one_framework_at_a_time():
    result = CliRunner().invoke(main, ["containers", "torch", "jax", *LINUX])
    assert result.exit_code == 2 and "one framework at a time" in result.stderr


def test_a_spec_no_release_has_says_so():
    result = CliRunner().invoke(main, ["containers", "torch==1.0", "--driver", "580.65.06", *LINUX])
    assert result.exit_code == 1 and "no NGC PyTorch release in cudafit's data has torch==1.0" in result.stdout


def with_containers(monkeypatch, containers: tuple) -> None:
    """The command with its data's NGC records replaced: the tests hold whatever the data has."""
    import cudafit.cli.containers as command

    data = load()._replace(ngc_containers=containers)
    monkeypatch.setattr(command, "load_matrices", lambda: data)


@pytest.mark.parametrize("framework, spec", [("tensorflow", "tensorflow==2.17"), ("jax", "jax>=0.4")])
def test_a_framework_the_data_holds_no_containers_of_is_exit_2(monkeypatch, framework, spec):
    with_containers(monkeypatch, tuple(c for c in load().ngc_containers if c.framework != framework))
    result = CliRunner().invoke(main, ["containers", spec, *LINUX])
    assert result.exit_code == 2 and "holds no NGC" in result.stderr


def test_tensorflow_and_jax_images_show_their_frameworks_version(monkeypatch):
    tf = Container(tag="25.02", framework="tensorflow", image="nvcr.io/nvidia/tensorflow:25.02-tf2-py3", cuda=Fact("12.8", "reported"), tensorflow=Fact("2.17.0", "reported"))
    older = Container(tag="24.01", framework="tensorflow", image="nvcr.io/nvidia/tensorflow:24.01-tf2-py3", tensorflow=Fact("2.14.0", "reported"))
    jax = Container(tag="24.10", framework="jax", image="nvcr.io/nvidia/jax:24.10-py3", cuda=Fact("12.6", "reported"), jax=Fact("0.4.33", "reported"))
    with_containers(monkeypatch, (tf, older, jax))
    host = ["--gpu", "NVIDIA H100 80GB HBM3", "--driver", "580.65.06", *LINUX]
    result = CliRunner().invoke(main, ["containers", "tensorflow>=2.17", *host])
    assert result.exit_code == 0, result.output
    assert "NGC TensorFlow containers" in result.stdout and any(line.startswith("tag") and "tensorflow" in line for line in result.stdout.splitlines())
    assert "2.17.0" in result.stdout and "24.01" not in result.stdout
    doc = json.loads(CliRunner().invoke(main, ["containers", "jax", *host, "--json"]).stdout)
    (record,) = doc["containers"]
    assert doc["framework"] == "jax" and record["framework"] == "jax" and record["version"] == "0.4.33" and record["torch"] is None
    assert record["evidence"]["jax"] == {"grade": "reported"} and record["runs"] is True


# --- issue 5: --since ----------------------------------------------------------------------------


def test_a_since_after_every_release_says_so():
    result = CliRunner().invoke(main, ["containers", "--driver", "580.65.06", *LINUX, "--since", "30.01"])
    assert result.exit_code == 1 and "cudafit's data has no NGC PyTorch release from 30.01 on" in result.stdout


# --- issue 6: Jetson -----------------------------------------------------------------------------


def test_a_jetson_before_thor_runs_no_server_image():
    found = verdicts("--jetpack", "6.2", "--python", "3.10")
    assert found and all(c["runs"] is False and "discrete GPUs" in c["why"] and "-py3-igpu" in c["why"] for c in found.values())
    # a Jetson without its JetPack is taken to be a board before Thor on the newest line (6.2), as resolve takes it
    unknown_board = verdicts("--jetson", "--python", "3.10")
    assert unknown_board == found


def test_jetson_thor_is_judged_as_an_sbsa_server():
    found = verdicts("--jetpack", "7.1", "--python", "3.12", "--driver", "580.65.06")
    assert not any("-py3-igpu" in c["why"] for c in found.values())
