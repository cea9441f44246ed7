"""doctor on AMD and Intel machines (issue 26): a CPU or CUDA torch where a ROCm or XPU build runs,
a ROCm build without kernels for the GPU, an override left unset, a /dev/kfd ROCm cannot open."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from doctor_env import FakeEnv

from cudafit.cli import main

SYSFS = Path(__file__).parent / "fixtures" / "sysfs"
LINUX = ("--os", "linux", "--arch", "x86_64")


@pytest.fixture
def env(tmp_path, monkeypatch):
    for var in ("HSA_OVERRIDE_GFX_VERSION", "CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr("cudafit.doctor.libraries.DEFAULT_DIRS", ())
    return FakeEnv(tmp_path / "venv")


def findings(env: FakeEnv, *machine: str, environ: dict | None = None) -> dict[str, dict]:
    result = CliRunner().invoke(main, ["doctor", "--env", str(env.prefix), *machine, "--json"], env=environ or {})
    assert result.exit_code in (0, 1) and "Traceback" not in result.output, result.output
    return {f["code"]: f for f in json.loads(result.stdout)["findings"]}


def test_a_cpu_torch_on_an_rx_7900_xtx_is_told_the_rocm_build(env):
    env.torch("2.14.1+cpu", None)
    found = findings(env, *LINUX, "--gpu", "AMD Radeon RX 7900 XTX")
    assert "DR010" in found and "AMD Radeon RX 7900 XTX (gfx1100)" in found["DR010"]["message"]
    assert any("rocm7.14" in c for c in found["DR010"]["commands"])
    assert "DR001" not in found  # no NVIDIA driver is no problem on an AMD machine


def test_a_cuda_torch_on_an_amd_machine_is_the_wrong_vendor(env):
    env.torch("2.14.1+cu126", "12.6")
    found = findings(env, *LINUX, "--gpu", "AMD Radeon RX 7900 XTX")
    assert "DR012" in found and "a CUDA build, for NVIDIA GPUs" in found["DR012"]["message"] and "DR001" not in found


def test_a_rocm_torch_without_kernels_for_gfx906(env):
    env.torch("2.14.1+rocm7.14", None, hip="7.14.60850")
    found = findings(env, *LINUX, "--gpu", "AMD Radeon VII")
    assert "DR021" in found and "no kernels for AMD Radeon VII (gfx906)" in found["DR021"]["message"]
    assert any("rocm6.3" in c for c in found["DR021"]["commands"])
    env2 = env
    env2.torch("2.14.1+rocm7.2", None, hip="7.2.53211")
    assert "rocBLAS has no kernels for gfx906" in findings(env2, *LINUX, "--gpu", "AMD Radeon VII")["DR021"]["message"]


def test_an_override_the_gpu_needs_is_said_until_it_is_set(env):
    env.torch("2.14.1+rocm7.14", None, hip="7.14.60850")
    found = findings(env, *LINUX, "--gpu", "AMD Radeon RX 6700 XT")
    assert found["DR024"]["severity"] == "warning" and "HSA_OVERRIDE_GFX_VERSION=10.3.0" in found["DR024"]["message"] and "is not set" in found["DR024"]["message"]
    assert "DR024" not in findings(env, *LINUX, "--gpu", "AMD Radeon RX 6700 XT", environ={"HSA_OVERRIDE_GFX_VERSION": "10.3.0"})


def test_a_rocm_torch_on_an_nvidia_machine(env):
    env.torch("2.14.1+rocm7.2", None, hip="7.2.53211")
    found = findings(env, *LINUX, "--driver", "580.95.05", "--gpu", "NVIDIA GeForce RTX 4090")
    assert "DR012" in found and "a ROCm build, for AMD GPUs" in found["DR012"]["message"]


def test_a_healthy_rocm_environment_has_no_vendor_finding(env):
    env.torch("2.14.1+rocm7.14", None, hip="7.14.60850")
    found = findings(env, *LINUX, "--gpu", "AMD Radeon RX 7900 XTX")
    assert not {"DR005", "DR010", "DR012", "DR021", "DR024", "DR001"} & set(found)


def test_rocm_without_kfd_is_said(env, monkeypatch):
    env.torch("2.14.1+rocm7.14", None, hip="7.14.60850")
    monkeypatch.setenv("CUDAFIT_SYSFS_ROOT", str(SYSFS / "amd-no-kfd"))
    monkeypatch.setattr("cudafit.detection.nvidia_smi_candidates", lambda os_name: [])
    result = CliRunner().invoke(main, ["doctor", "--env", str(env.prefix), "--json"])
    found = {f["code"]: f for f in json.loads(result.stdout)["findings"]}
    assert "DR005" in found and "no KFD topology" in found["DR005"]["message"]


def test_an_override_that_puts_a_native_gpu_on_other_kernels_is_an_error(env):
    env.torch("2.14.1+rocm7.14", None, hip="7.14.60850")
    found = findings(env, *LINUX, "--gpu", "AMD Radeon RX 7900 XTX", environ={"HSA_OVERRIDE_GFX_VERSION": "10.3.0"})
    assert found["DR024"]["severity"] == "error" and "onto gfx1030's kernels" in found["DR024"]["message"]
    found = findings(env, *LINUX, "--gpu", "AMD Radeon RX 6700 XT", environ={"HSA_OVERRIDE_GFX_VERSION": "11.0.0"})
    assert found["DR024"]["severity"] == "error" and "Set it to 10.3.0" in found["DR024"]["fix"]


def test_the_repair_of_a_gpu_that_needs_the_override_exports_it(env):
    env.torch("2.14.1+cpu", None)
    found = findings(env, *LINUX, "--gpu", "AMD Radeon RX 6700 XT")
    assert found["DR010"]["commands"][-1] == "export HSA_OVERRIDE_GFX_VERSION=10.3.0"
