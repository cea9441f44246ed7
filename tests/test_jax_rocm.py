"""JAX on AMD GPUs (issue 26): the ROCm plugin builds of jax[rocm7-local], measured from PyPI's
wheels, the ROCm they load (the host's, given with --rocm or read from /opt/rocm, or AMD's rocm
wheels in the environment), and one ROCm release beside a torch ROCm build."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudafit.cli import main

SYSFS = Path(__file__).parent / "fixtures" / "sysfs"
LINUX = ["--os", "linux", "--arch", "x86_64", "--python", "3.12"]
AMD_INDEX = "https://repo.amd.com/rocm/whl-multi-arch/"


def cli(*args: str, root: Path | None = None) -> tuple[int, str, str]:
    env = {"CUDAFIT_SYSFS_ROOT": str(root)} if root else {}
    result = CliRunner().invoke(main, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def answer(*args: str, root: Path | None = None) -> dict:
    code, out, err = cli("resolve", *args, "--json", root=root)
    assert code in (0, 1), err
    return json.loads(out)


def chosen(data: dict) -> list[str]:
    return [p["requirement"] for p in data.get("packages", [])]


def test_jax_on_an_amd_gpu_is_the_rocm_plugin_with_amds_rocm_wheels_for_its_target():
    data = answer("jax", *LINUX, "--gfx", "gfx942")
    assert chosen(data) == ["jax[rocm7-local]==0.12.0", "rocm[libraries,device-gfx942]==7.14.1"]
    assert data["packages"][1]["index_url"] == AMD_INDEX
    assert any("bring the ROCm 7.14" in n for n in data["notes"])


def test_a_host_rocm_of_the_plugins_release_needs_no_wheels():
    data = answer("jax", *LINUX, "--gfx", "gfx942", "--rocm", "7.14.1")
    assert chosen(data) == ["jax[rocm7-local]==0.12.0"]
    assert any("loads the host's ROCm 7.14.1" in n for n in data["notes"])


def test_a_plugin_built_against_rocm_7_2_needs_the_hosts_rocm_7_2():
    unchecked = answer("jax<0.11", *LINUX, "--gfx", "gfx1100")
    assert chosen(unchecked) == ["jax[rocm7-local]==0.10.2"]
    assert any("not given (--rocm): not checked" in w for w in unchecked["warnings"])
    matching = answer("jax<0.11", *LINUX, "--gfx", "gfx1100", "--rocm", "7.2.1")
    assert chosen(matching) == ["jax[rocm7-local]==0.10.2"] and not any("--rocm" in w for w in matching["warnings"])
    for host, has in (("none", "no ROCm"), ("6.4.3", "ROCm 6.4.3")):
        data = answer("jax<0.11", *LINUX, "--gfx", "gfx1100", "--rocm", host)
        assert chosen(data) == ["jax==0.10.2"]  # the CPU build, and why
        assert any(f"the host has {has}" in n for n in data["notes"])
        shortfall = next(r["shortfall"] for r in data["rejected"] if r.get("shortfall")) if "rejected" in data else None
        code, out, _err = cli("resolve", "jax<0.11", *LINUX, "--gfx", "gfx1100", "--rocm", host, "--why", "jax==0.10.2+rocm7")
        assert f"the host has {has}" in out and shortfall in (None, {"quantity": "rocm", "needs": "7.2", "has": host})


def test_torch_and_jax_share_one_rocm_release_and_one_install_of_its_wheels():
    data = answer("torch", "jax", *LINUX, "--gfx", "gfx942")
    assert chosen(data) == ["torch==2.14.1+rocm7.14", "jax[rocm7-local]==0.12.0"]  # torch's index brings the rocm wheels
    assert any("the ROCm 7.14 it was built against comes with torch 2.14.1+rocm7.14" in n for n in data["notes"])


def test_a_torch_on_another_rocm_release_moves_jax_to_a_plugin_of_the_same_release():
    data = answer("torch<2.14", "jax", *LINUX, "--gfx", "gfx942", "--rocm", "7.2.1")
    assert chosen(data)[0].endswith("+rocm7.2") and chosen(data)[1] == "jax[rocm7-local]==0.10.2"
    assert any("one process loads one ROCm runtime" in n for n in data["notes"])


def test_the_plugin_python_and_the_hosts_rocm_are_both_checked():
    # 0.11 and 0.12's plugins start at Python 3.12: on 3.11 the newest plugin is 0.10.2's (ROCm 7.2)
    data = answer("jax", "--os", "linux", "--arch", "x86_64", "--python", "3.11", "--gfx", "gfx90a")
    assert chosen(data) == ["jax[rocm7-local]==0.10.2"]


def test_rocm_extras_and_cuda_extras_keep_to_their_gpus():
    code, out, _err = cli("resolve", "jax[rocm7-local]", *LINUX, "--gpu", "RTX 4090", "--driver", "580.65.06")
    assert code == 1 and "is a ROCm build, for AMD GPUs" in out
    assert chosen(answer("jax[rocm7-local]", *LINUX, "--gfx", "gfx1201")) == ["jax[rocm7-local]==0.12.0", "rocm[libraries,device-gfx1201]==7.14.1"]


def test_a_uv_project_routes_amds_rocm_wheels_to_amds_index():
    code, out, _err = cli("resolve", "jax", *LINUX, "--gfx", "gfx942", "--format", "uv-project")
    assert code == 0
    assert f'url = "{AMD_INDEX}"' in out
    for name in ("rocm", "rocm-sdk-core", "rocm-sdk-device-gfx942"):
        assert f"\n{name} = {{index = " in out


def test_bad_rocm_values_are_input_errors():
    for value in ("seven", "7.2.1+local", "7.2rc1"):
        code, _out, err = cli("resolve", "jax", *LINUX, "--gfx", "gfx942", "--rocm", value)
        assert code == 2 and f"--rocm '{value}': expected a ROCm release like 7.2" in err


@pytest.fixture
def mi300x_with_rocm(tmp_path: Path) -> Path:
    """The MI300X tree of a real machine, with ROCm 7.2.1 installed as its packages write it."""
    root = tmp_path / "root"
    shutil.copytree(SYSFS / "mi300x", root, symlinks=True)
    (root / "opt" / "rocm" / ".info").mkdir(parents=True)
    (root / "opt" / "rocm" / ".info" / "version").write_text("7.2.1-81\n")
    return root


def test_the_hosts_rocm_is_read_from_its_version_file(mi300x_with_rocm: Path):
    code, out, _err = cli("detect", "--json", "--os", "linux", root=mi300x_with_rocm)
    assert code == 0 and json.loads(out)["rocm"] == "7.2.1"
    data = answer("jax<0.11", "--os", "linux", "--python", "3.12", root=mi300x_with_rocm)
    assert chosen(data) == ["jax[rocm7-local]==0.10.2"] and not any("--rocm" in w for w in data["warnings"])


def test_a_host_without_rocm_reads_as_none(tmp_path: Path):
    root = tmp_path / "root"
    shutil.copytree(SYSFS / "mi300x", root, symlinks=True)
    code, out, _err = cli("detect", "--json", "--os", "linux", root=root)
    assert json.loads(out)["rocm"] is None and "rocm:    none" in cli("detect", "--os", "linux", root=root)[1]


# --- TensorFlow: AMD's tensorflow-rocm, which links the host's ROCm ------------------------------


def test_tensorflow_on_an_amd_gpu_is_amds_build_for_the_hosts_rocm():
    data = answer("tensorflow", *LINUX, "--gfx", "gfx942", "--rocm", "6.4.1")
    assert chosen(data) == ["tensorflow-rocm==2.18.1"]
    assert data["commands"]["pip"] == "pip install -f https://repo.radeon.com/rocm/manylinux/rocm-rel-6.4/ tensorflow-rocm==2.18.1"
    older = answer("tensorflow", "--os", "linux", "--arch", "x86_64", "--python", "3.11", "--gfx", "gfx90a", "--rocm", "6.0.2")
    assert chosen(older) == ["tensorflow-rocm==2.14.0.600"]  # PyPI's last, for ROCm 6.0


def test_tensorflow_without_the_hosts_rocm_names_the_declared_build_and_says_it_is_unchecked():
    data = answer("tensorflow", *LINUX, "--gfx", "gfx942")
    assert chosen(data) == ["tensorflow-rocm==2.18.1"] and "rocm-rel-6.4/" in data["commands"]["pip"]
    assert any("the host's ROCm was not given (--rocm)" in w for w in data["warnings"])


def test_tensorflow_on_a_host_rocm_no_build_links_is_the_cpu_build_and_says_why():
    data = answer("tensorflow", *LINUX, "--gfx", "gfx1100", "--rocm", "7.14")
    assert chosen(data) == ["tensorflow==2.21.0"]
    assert any("a CPU build" in w for w in data["warnings"])
    code, out, _err = cli("resolve", "tensorflow", *LINUX, "--gfx", "gfx1100", "--rocm", "7.14", "--why", "tensorflow==2.18.1+rocm6.4")
    assert "links ROCm 6.4 from the host, and the host has ROCm 7.14" in out


def test_detect_shows_the_dkms_driver_version_or_the_kernels_own():
    code, out, _err = cli("detect", "--json", "--os", "linux", root=SYSFS / "rx7900xtx")
    assert json.loads(out)["amdgpu_dkms"] == "6.16.13"
    code, out, _err = cli("detect", "--os", "linux", root=SYSFS / "mi300x")
    assert "amdgpu:  the kernel's own driver" in out


# --- a newcomer's findings --------------------------------------------------------------------------


def test_gfx906_gets_no_rocm_7_plugin_whose_rocblas_has_no_kernels_for_it():
    data = answer("jax", *LINUX, "--gfx", "gfx906")
    assert chosen(data) == ["jax==0.12.0.1"]
    code, out, _err = cli("resolve", "jax", *LINUX, "--gfx", "gfx906", "--why", "jax==0.12.0+rocm7")
    assert "rocBLAS has no kernels for gfx906" in out


def test_the_cpu_answer_beside_an_amd_gpu_says_the_frameworks_own_reason():
    windows = ["--os", "windows", "--arch", "x86_64", "--python", "3.12", "--gpu", "RX 7900 XTX"]
    for family in ("jax", "tensorflow"):
        data = answer(family, *windows)
        assert any(f"{family} has no ROCm build for Windows" in w for w in data["warnings"])
    data = answer("tensorflow", *LINUX, "--gfx", "gfx942", "--rocm", "none")
    assert any("the host's ROCm" in w and "--why NAME==VERSION" in w for w in data["warnings"])


def test_a_find_links_page_is_in_the_json_and_why_takes_the_package_name():
    data = answer("tensorflow", *LINUX, "--gfx", "gfx942", "--rocm", "6.4.1")
    assert data["packages"][0]["find_links"] == "https://repo.radeon.com/rocm/manylinux/rocm-rel-6.4/"
    code, out, _err = cli("resolve", "tensorflow", *LINUX, "--gfx", "gfx942", "--rocm", "7.14", "--why", "tensorflow-rocm==2.18.1")
    assert code == 0 and "the host has ROCm 7.14" in out


@pytest.mark.parametrize("value, said", [("7", "major.minor at least"), ("99.0", "the newest is 10.1.0"), ("11.2", "the newest is")])
def test_a_rocm_release_that_cannot_be_is_an_input_error(value, said):
    code, _out, err = cli("resolve", "jax", *LINUX, "--gfx", "gfx942", "--rocm", value)
    assert code == 2 and said in err


def test_rocm_without_an_amd_gpu_is_said():
    data = answer("torch", *LINUX, "--rocm", "7.2")
    assert any(w.startswith("--rocm without an AMD GPU") for w in data["warnings"])


def test_a_mac_takes_no_discrete_intel_gpu_and_an_unknown_name_is_unknown():
    code, _out, err = cli("resolve", "torch", "--os", "macos", "--python", "3.12", "--gpu", "Arc A770")
    assert code == 2 and "no Mac has this GPU" in err
    code, _out, err = cli("resolve", "torch", "--os", "macos", "--python", "3.12", "--gpu", "Radeon Pro 5500M")
    assert code == 2 and "not in cudafit's GPU table" in err and "NVIDIA driver" not in err


def test_a_uv_project_says_the_variable_the_set_needs_once(tmp_path: Path):
    out_file = tmp_path / "pyproject.toml"
    for _ in range(2):
        code, _out, err = cli("resolve", "torch", *LINUX, "--gfx", "gfx1031", "--format", "uv-project", "-o", str(out_file))
        assert code == 0, err
    assert out_file.read_text().count("export HSA_OVERRIDE_GFX_VERSION=10.3.0") == 1


def test_doctor_says_what_reading_the_machine_showed():
    code, out, _err = cli("doctor", "--os", "linux", root=SYSFS / "amd-no-kfd")
    assert "note: no /dev/kfd" in out
