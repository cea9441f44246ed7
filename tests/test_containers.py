"""`cudafit containers` (issue 29): NGC PyTorch containers against a host, from
matrices/ngc-containers.toml. The driver a release needs is its notes' branch, else its CUDA's
toolkit driver; data-center GPUs run older branches the release lists (forward compatibility);
what the data lacks stays unknown."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from cudafit.cli import main
from cudafit.loader import load

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


@pytest.mark.parametrize("since", ["25", "abc", "25.x"])
def test_a_bad_since_is_exit_2(since):
    result = CliRunner().invoke(main, ["containers", *LINUX, "--since", since])
    assert result.exit_code == 2 and "expected a release like 25.01" in result.stderr


def test_another_framework_is_not_in_the_data_yet():
    result = CliRunner().invoke(main, ["containers", "tensorflow", *LINUX])
    assert result.exit_code == 2 and "PyTorch containers only" in result.stderr
    assert CliRunner().invoke(main, ["containers", "torch", "--driver", "580.65.06", "--gpu", "NVIDIA H100 80GB HBM3", *LINUX]).exit_code == 0


def test_a_release_whose_own_floor_is_unknown_still_needs_its_majors():
    # Windows drivers' floors for CUDA 13.x toolkits are not in the data; every 13.x build needs R580
    found = verdicts("--os", "wsl", "--arch", "x86_64", "--python", "3.12", "--gpu", "NVIDIA GeForce RTX 4090", "--driver", "566.36")
    assert found["26.06"]["runs"] is False and "the floor of every CUDA 13.x build" in found["26.06"]["why"]
