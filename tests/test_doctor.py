"""`cudafit doctor` (issue 10): every check with an environment that triggers it and one that does
not, on described machines (the machine options of the contract) and on fake nvidia-smi outputs of
real machines; fake environments are built by doctor_env."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
from click.testing import CliRunner
from doctor_env import CP, PY, FakeEnv, elf

from cudafit import detection as detect
from cudafit import toolkits as toolkits_module
from cudafit.cli import main

LINUX = ["--os", "linux", "--arch", "x86_64"]
RTX3090_535 = [*LINUX, "--driver", "535.104.05", "--gpu", "NVIDIA GeForce RTX 3090"]
RTX5090_570 = [*LINUX, "--driver", "570.124.04", "--gpu", "NVIDIA GeForce RTX 5090"]
GTX1080_580 = [*LINUX, "--driver", "580.65.06", "--gpu", "NVIDIA GeForce GTX 1080"]
H100_580 = [*LINUX, "--driver", "580.65.06", "--gpu", "NVIDIA H100 80GB HBM3"]
NO_DRIVER = [*LINUX, "--driver", "none"]
WINDOWS_4090 = ["--os", "windows", "--arch", "x86_64", "--driver", "566.36", "--gpu", "NVIDIA GeForce RTX 4090"]

TORCH_29_CU128 = tuple(
    f"{name}=={version}; platform_system == 'Linux' and platform_machine == 'x86_64'"
    for name, version in [("nvidia-cudnn-cu12", "9.10.2.21"), ("nvidia-cublas-cu12", "12.8.4.1"), ("nvidia-cuda-runtime-cu12", "12.8.90")]
)


@pytest.fixture(autouse=True)
def _quiet_machine(monkeypatch, tmp_path):
    """No real toolkit, loader cache or CUDA variable of the machine running the tests leaks in."""
    for var in ("CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES"):
        monkeypatch.delenv(var, raising=False)
    empty = tmp_path / "usr-local"
    empty.mkdir()
    monkeypatch.setattr(toolkits_module, "USR_LOCAL", empty)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setattr("cudafit.doctor.libraries.DEFAULT_DIRS", ())
    real = detect.run_command

    def run(cmd, timeout):
        if cmd[0].endswith("ldconfig"):
            return detect.RunResult(0, "")
        return real(cmd, timeout)

    monkeypatch.setattr(detect, "run_command", run)
    # Nor the driver's kernel module: a GPU host's /proc/driver/nvidia/version would name a driver
    # the fake nvidia-smi outputs do not.
    monkeypatch.setitem(detect.read_driver.__kwdefaults__, "proc_version", tmp_path / "no-proc" / "version")


@pytest.fixture
def env(tmp_path):
    return FakeEnv(tmp_path / "venv")


def doctor(env: FakeEnv, *machine: str, fmt: str = "--json"):
    result = CliRunner().invoke(main, ["doctor", "--env", str(env.prefix), *machine, *([fmt] if fmt else [])], catch_exceptions=False)
    assert "Traceback" not in result.output
    return result


def codes(env: FakeEnv, *machine: str) -> list[str]:
    result = doctor(env, *machine)
    assert result.exit_code in (0, 1), result.output
    data = json.loads(result.stdout)
    assert data["ok"] is (result.exit_code == 0)
    return [f["code"] for f in data["findings"]]


def test_healthy_environment(env):
    env.torch("2.9.0+cu128", "12.8", TORCH_29_CU128)
    for name, version in [("nvidia-cudnn-cu12", "9.10.2.21"), ("nvidia-cublas-cu12", "12.8.4.1"), ("nvidia-cuda-runtime-cu12", "12.8.90")]:
        env.dist(name, version)
    result = doctor(env, *RTX3090_535, fmt="")
    assert result.exit_code == 0, result.output
    assert "torch 2.9.0+cu128: CUDA 12.8 build" in result.stdout and "No problems found." in result.stdout


def test_json_contract(env):
    env.torch("2.9.0+cpu", None)
    data = json.loads(doctor(env, *RTX3090_535).stdout)
    assert set(data) >= {"ok", "machine", "findings"} and data["ok"] is False
    assert data["machine"]["driver"] == "535.104.05"
    assert data["environment"]["frameworks"] == [
        {"name": "torch", "version": "2.9.0+cpu", "kind": "cpu", "cuda": None, "cudnn": None, "read_from": str(env.site / "torch/version.py")}
    ]
    finding = data["findings"][0]
    assert set(finding) >= {"code", "severity", "message", "fix"}


# -- 1. driver and GPUs ------------------------------------------------------------------------


def test_no_driver_with_a_cuda_build(env):
    env.torch("2.9.0+cu128", "12.8")
    assert "DR001" in codes(env, *NO_DRIVER)
    assert "DR001" not in codes(env, *RTX3090_535)


def test_driver_that_does_not_answer(env, fake_smi, monkeypatch):
    env.torch("2.9.0+cu128", "12.8")
    fake_smi("rtx3090-535", hang=True)
    monkeypatch.setattr(detect, "TIMEOUT_S", 0.5)
    found = codes(env, *LINUX)
    assert "DR002" in found


def test_no_gpu_visible(env, fake_smi):
    env.torch("2.9.0+cu128", "12.8")
    fake_smi("no-devices")
    assert "DR003" in codes(env, *LINUX)
    fake_smi("rtx3090-535")
    assert "DR003" not in codes(env, *LINUX)


def test_cuda_visible_devices_hides_every_gpu(env, monkeypatch):
    env.torch("2.9.0+cu128", "12.8")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    assert "DR004" in codes(env, *RTX3090_535)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert "DR004" not in codes(env, *RTX3090_535)


# -- 2. CPU builds -----------------------------------------------------------------------------


def test_cpu_build_beside_a_gpu_keeps_the_release(env):
    env.torch("2.9.0+cpu", None)
    result = doctor(env, *RTX3090_535)
    assert result.exit_code == 1
    dr010 = next(f for f in json.loads(result.stdout)["findings"] if f["code"] == "DR010")
    assert "CPU-only" in dr010["message"] and "RTX 3090" in dr010["message"]
    assert any("--index-url https://download.pytorch.org/whl/cu128 torch==2.9.0+cu128" in c for c in dr010["commands"])
    assert "DR010" not in codes(env, *NO_DRIVER)


def test_conda_build_without_a_tag_is_still_a_cuda_build(env):
    env.torch("2.5.1", "12.4")
    assert "DR010" not in codes(env, *RTX3090_535)


def test_tensorflow_without_its_cuda_libraries(env):
    requires = ("nvidia-cudnn-cu12==9.3.0.75; extra == 'and-cuda'", "nvidia-cublas-cu12==12.5.3.2; extra == 'and-cuda'")
    env.tensorflow("2.18.0", "12.5.1", arch=("sm_60", "sm_70", "sm_80", "sm_89", "compute_90"), requires=requires, extras=("and-cuda",))
    assert "DR011" in codes(env, *RTX3090_535)
    env.dist("nvidia-cudnn-cu12", "9.3.0.75").dist("nvidia-cublas-cu12", "12.5.3.2")
    assert "DR011" not in codes(env, *RTX3090_535)


# -- 3, 4. driver floor and kernels ------------------------------------------------------------


def test_cuda13_build_on_a_535_driver(env):
    env.torch("2.9.0+cu130", "13.0")
    result = doctor(env, *RTX3090_535)
    dr020 = next(f for f in json.loads(result.stdout)["findings"] if f["code"] == "DR020")
    assert "580" in dr020["message"] and "535.104.05" in dr020["message"]
    # The newest build of the same release that driver 535 runs.
    assert any("torch==2.9.0+cu128" in c for c in dr020["commands"])
    assert "DR020" not in codes(env, *H100_580)


def test_no_kernel_image_from_the_data(env):
    env.torch("2.9.0+cu126", "12.6")
    assert "DR021" in codes(env, *RTX5090_570)  # cu126 has no sm_120
    assert "DR021" not in codes(env, *RTX3090_535)


def test_no_kernel_image_read_from_the_installed_library(env):
    env.torch("2.9.0+cu130", "13.0", arch="sm_75 sm_80 sm_86 sm_90 sm_100 sm_120")
    result = doctor(env, *GTX1080_580)
    dr021 = next(f for f in json.loads(result.stdout)["findings"] if f["code"] == "DR021")
    assert "sm_61" in dr021["message"] and "its own library" in dr021["message"]
    assert "DR021" not in codes(env, *H100_580)


# -- 5. CUDA libraries that disagree -----------------------------------------------------------


def test_frameworks_on_two_cuda_majors(env):
    env.torch("2.9.0+cu130", "13.0")
    env.tensorflow("2.18.0", "12.5.1", arch=("sm_80", "compute_90"))
    assert "DR030" in codes(env, *H100_580)


def test_two_cudnn_stacks(env):
    env.torch("2.9.0+cu128", "12.8").dist("nvidia-cudnn-cu11", "8.9.7.29").dist("nvidia-cudnn-cu12", "9.10.2.21")
    assert "DR030" in codes(env, *H100_580)


def test_nvidia_wheel_of_the_wrong_version_or_missing(env):
    env.torch("2.9.0+cu128", "12.8", TORCH_29_CU128).dist("nvidia-cudnn-cu12", "9.1.0.70").dist("nvidia-cuda-runtime-cu12", "12.8.90")
    result = doctor(env, *H100_580)
    messages = [f["message"] for f in json.loads(result.stdout)["findings"] if f["code"] == "DR031"]
    assert any("nvidia-cudnn-cu12==9.10.2.21, but 9.1.0.70 is installed" in m for m in messages)
    assert any("nvidia-cublas-cu12==12.8.4.1, which is not installed" in m for m in messages)


def test_nvidia_wheels_that_fit(env):
    env.torch("2.9.0+cu128", "12.8", TORCH_29_CU128)
    env.dist("nvidia-cudnn-cu12", "9.10.2.21").dist("nvidia-cublas-cu12", "12.8.4.1").dist("nvidia-cuda-runtime-cu12", "12.8.90")
    assert "DR031" not in codes(env, *H100_580)


def test_onnxruntime_and_onnxruntime_gpu(env):
    env.dist("onnxruntime", "1.20.1").dist("onnxruntime-gpu", "1.20.2")
    assert "DR032" in codes(env, *H100_580)


# -- 6. system CUDA ----------------------------------------------------------------------------


def _toolkit(root, version):
    (root / "bin").mkdir(parents=True)
    (root / "lib64").mkdir()
    (root / "version.json").write_text(json.dumps({"cuda": {"name": "CUDA SDK", "version": version}}))
    nvcc = root / "bin" / "nvcc"
    nvcc.write_text("#!/bin/sh\necho 'Cuda compilation tools, release %s, V%s'\n" % (".".join(version.split(".")[:2]), version))
    nvcc.chmod(0o755)
    return root


def test_toolkits_that_disagree(env, tmp_path, monkeypatch):
    env.torch("2.9.0+cu128", "12.8")
    usr = tmp_path / "usr-local"
    old, new = _toolkit(usr / "cuda-11.8", "11.8.89"), _toolkit(usr / "cuda-12.8", "12.8.93")
    monkeypatch.setenv("CUDA_HOME", str(old))
    monkeypatch.setenv("PATH", f"{new}/bin:/usr/bin:/bin")
    found = codes(env, *H100_580)
    assert "DR040" in found and "DR042" in found
    result = doctor(env, *H100_580)
    dr042 = next(f for f in json.loads(result.stdout)["findings"] if f["code"] == "DR042")
    assert "CUDA 11.8.89" in dr042["message"] and dr042["commands"] == ["cudafit env-script --toolkit 12.8 -o env.sh && . ./env.sh"]
    monkeypatch.setenv("CUDA_HOME", str(new))
    found = codes(env, *H100_580)
    assert "DR040" not in found and "DR042" not in found


def test_ld_library_path_shadows_the_wheel_library(env, tmp_path, monkeypatch):
    env.torch("2.9.0+cu128", "12.8", needed=["libcudnn.so.9", "libc10_cuda.so"])
    env.file("torch/lib/libc10_cuda.so", elf([]))
    env.nvidia_lib("cudnn", "libcudnn.so.9")
    old = tmp_path / "old-cudnn"
    old.mkdir()
    (old / "libcudnn.so.9").write_bytes(elf([]))
    assert "DR041" not in codes(env, *H100_580)
    monkeypatch.setenv("LD_LIBRARY_PATH", str(old))
    assert "DR041" in codes(env, *H100_580)


# -- 7. libraries that will not load -----------------------------------------------------------


def test_a_cuda_library_the_loader_cannot_find(env):
    env.torch("2.9.0+cu128", "12.8", needed=["libcudnn.so.9", "libcublas.so.12", "libc10_cuda.so"])
    env.file("torch/lib/libc10_cuda.so", elf([]))
    env.nvidia_lib("cudnn", "libcudnn.so.9")
    result = doctor(env, *H100_580)
    dr050 = next(f for f in json.loads(result.stdout)["findings"] if f["code"] == "DR050")
    assert "libcublas.so.12" in dr050["message"] and "libcudnn" not in dr050["message"]
    env.nvidia_lib("cublas", "libcublas.so.12")
    assert "DR050" not in codes(env, *H100_580)


def test_the_loader_cache_counts(env, monkeypatch):
    env.torch("2.9.0+cu128", "12.8", needed=["libcuda.so.1"])

    def run(cmd, timeout):
        return detect.RunResult(0, "2 libs found in cache `/etc/ld.so.cache'\n\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcuda.so.1\n")

    assert "DR050" in codes(env, *H100_580)
    monkeypatch.setattr(detect, "run_command", run)
    assert "DR050" not in codes(env, *H100_580)


# -- 8. platform dead ends ---------------------------------------------------------------------


def test_tensorflow_gpu_on_native_windows(env):
    env.tensorflow("2.18.0", None)
    result = doctor(env, *WINDOWS_4090)
    found = [f for f in json.loads(result.stdout)["findings"] if f["code"] == "DR060"]
    assert len(found) == 1 and "2.10" in found[0]["message"]
    env2 = FakeEnv(env.prefix.parent / "other")
    env2.tensorflow("2.10.1", "11.2", arch=("sm_35", "sm_50", "sm_60", "sm_70", "sm_75", "compute_80"))
    assert "DR060" not in codes(env2, *WINDOWS_4090)


def test_jax_gpu_on_native_windows(env):
    env.dist("jax", "0.4.38").dist("jaxlib", "0.4.38")
    assert "DR061" in codes(env, *WINDOWS_4090)
    assert "DR061" not in codes(env, *H100_580)


def test_wsl_without_the_driver_library(env, monkeypatch, tmp_path, fake_smi):
    env.torch("2.9.0+cu128", "12.8")
    fake_smi("wsl-4070laptop-566")  # the WSL machine as its nvidia-smi describes it
    wsl = ["--os", "wsl", "--arch", "x86_64"]
    monkeypatch.setattr("cudafit.doctor.runner.WSL_DRIVER", str(tmp_path / "absent" / "libcuda.so.1"))
    assert "DR062" in codes(env, *wsl)
    # A described WSL machine is not this one: its files are not read.
    assert "DR062" not in codes(env, *wsl, "--driver", "566.36", "--gpu", "NVIDIA GeForce RTX 4090")
    (tmp_path / "libcuda.so.1").write_bytes(b"")
    monkeypatch.setattr("cudafit.doctor.runner.WSL_DRIVER", str(tmp_path / "libcuda.so.1"))
    assert "DR062" not in codes(env, *wsl)


def test_server_builds_on_a_jetson(env):
    jetson = ["--os", "linux", "--arch", "aarch64", "--jetson", "--driver", "540.4.0", "--compute-capability", "8.7"]
    env.torch("2.9.0+cu128", "12.8")
    assert "DR063" in codes(env, *jetson)
    other = FakeEnv(env.prefix.parent / "jetson-build")
    other.torch("2.5.0a0+872d972e41.nv24.08", "12.6")
    assert "DR063" not in codes(other, *jetson)


def test_blackwell_on_a_driver_older_than_570(env):
    env.torch("2.9.0+cu128", "12.8")
    assert "DR064" in codes(env, *LINUX, "--driver", "560.35.03", "--gpu", "NVIDIA GeForce RTX 5090")
    assert "DR064" not in codes(env, *RTX5090_570)


# -- 9. Python ---------------------------------------------------------------------------------


def test_framework_installed_for_another_python(env):
    other = "cp39" if CP != "cp39" else "cp310"
    env.dist("torch", "2.9.0+cu128", tag=f"{other}-{other}-manylinux_2_28_x86_64")
    env.file("torch/version.py", "__version__ = '2.9.0+cu128'\ncuda = '12.8'\n")
    assert "DR070" in codes(env, *H100_580)


def test_framework_for_this_python(env):
    env.torch("2.9.0+cu128", "12.8")
    assert "DR070" not in codes(env, *H100_580)


# -- bad input ---------------------------------------------------------------------------------


def test_a_version_file_that_does_not_parse(env):
    env.dist("torch", "2.9.0+cu128")
    env.file("torch/version.py", "__version__ = (\n")
    result = doctor(env, *H100_580)
    assert result.exit_code == 0
    assert any(f["code"] == "DR090" and "does not parse" in f["message"] for f in json.loads(result.stdout)["findings"])


def test_torch_without_its_version_file(env):
    env.dist("torch", "2.9.0+cu128")
    result = doctor(env, *H100_580)
    assert any("broken install" in f["message"] for f in json.loads(result.stdout)["findings"])


def test_unreadable_metadata_and_a_broken_library(env):
    env.torch("2.9.0+cu128", "12.8")
    (env.site / "torch-2.9.0+cu128.dist-info" / "METADATA").write_bytes(b"\xff\xfe\x00garbage")
    env.file("torch/lib/libtorch_cuda.so", b"not an elf")
    result = doctor(env, *H100_580)
    assert result.exit_code in (0, 1) and "Traceback" not in result.output


def test_not_an_environment(tmp_path):
    result = CliRunner().invoke(main, ["doctor", "--env", str(tmp_path), *H100_580])
    assert result.exit_code == 2 and "not an environment folder" in result.stderr


def test_doctor_never_changes_the_environment(env):
    env.torch("2.9.0+cpu", None)
    before = sorted((p, p.stat().st_mtime_ns) for p in env.prefix.rglob("*"))
    doctor(env, *RTX3090_535)
    assert sorted((p, p.stat().st_mtime_ns) for p in env.prefix.rglob("*")) == before


# -- toolkits and env-script -------------------------------------------------------------------


def test_detect_lists_the_toolkits_that_toolkits_lists(tmp_path, monkeypatch):
    """One finder for both: a toolkit without a version file is known by its nvcc."""
    usr = tmp_path / "usr-local"
    _toolkit(usr / "cuda-12.6", "12.6.85")
    bare = _toolkit(usr / "cuda-13.0", "13.0.88")
    (bare / "version.json").unlink()
    monkeypatch.setattr(detect, "read_driver", lambda os_name, want_banner=False: detect.DriverReading(None, True, (), True, None, ()))
    detected = json.loads(CliRunner().invoke(main, ["detect", "--json", "--os", "linux", "--arch", "x86_64", "--python", "3.12"]).stdout)["toolkits"]
    listed = json.loads(CliRunner().invoke(main, ["toolkits", "--json"]).stdout)["toolkits"]
    assert [(t["version"], t["path"]) for t in detected] == [(t["version"], t["path"]) for t in listed]
    assert [t["version"] for t in detected] == ["12.6.85", "13.0.88"]


def test_an_nvcc_on_path_outside_a_toolkit_folder_is_known_by_the_folder_above_its_bin(tmp_path, monkeypatch):
    """As torch.utils.cpp_extension takes CUDA_HOME from `which nvcc`: the folder above bin/, and
    the script that selects it keeps that bin/ on PATH."""
    loose = tmp_path / "loose"
    (loose / "bin").mkdir(parents=True)
    nvcc = loose / "bin" / "nvcc"
    nvcc.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 12.8, V12.8.93'\n")
    nvcc.chmod(0o755)
    monkeypatch.setenv("PATH", f"{loose / 'bin'}:/usr/bin:/bin")
    listed = json.loads(CliRunner().invoke(main, ["toolkits", "--json"]).stdout)["toolkits"]
    assert [(t["version"], t["path"]) for t in listed] == [("12.8.93", str(loose))]
    script = CliRunner().invoke(main, ["env-script", "--toolkit", "12.8"]).stdout
    assert f"CUDA_HOME={loose}" in script


def test_toolkits_and_env_script(tmp_path, monkeypatch):
    usr = tmp_path / "usr-local"
    old, new = _toolkit(usr / "cuda-11.8", "11.8.89"), _toolkit(usr / "cuda-12.6", "12.6.85")
    (usr / "cuda").symlink_to(new)
    listed = json.loads(CliRunner().invoke(main, ["toolkits", "--json"]).stdout)
    assert [(t["version"], t["default"]) for t in listed["toolkits"]] == [("11.8.89", False), ("12.6.85", True)]
    script = tmp_path / "env.sh"
    result = CliRunner().invoke(main, ["env-script", "--toolkit", "12.6", "-o", str(script)])
    assert result.exit_code == 0, result.output
    shell = subprocess.run(
        ["sh", "-c", f". {script} && printf '%s|%s|%s' \"$CUDA_HOME\" \"$PATH\" \"$LD_LIBRARY_PATH\""],
        env={"PATH": f"{old}/bin:/usr/bin:/bin", "LD_LIBRARY_PATH": f"{old}/lib64:/opt/other"},
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    home, path, ld = shell.stdout.split("|")
    assert home == str(new)
    assert path == f"{new}/bin:/usr/bin:/bin"
    assert ld == f"{new}/lib64:/opt/other"
    missing = CliRunner().invoke(main, ["env-script", "--toolkit", "10.2"])
    assert missing.exit_code == 2 and "11.8.89" in missing.stderr


def test_env_python_is_the_one_read(env):
    env.torch("2.9.0+cu128", "12.8")
    data = json.loads(doctor(env, *H100_580).stdout)
    assert data["machine"]["python"] == PY


# -- --import ------------------------------------------------------------------------------------

FAKE_TORCH = """
__version__ = "{version}"
class _Cuda:
    @staticmethod
    def is_available():
        return {gpu}
    @staticmethod
    def device_count():
        return 1
    @staticmethod
    def get_device_capability(i):
        return (8, 6)
    @staticmethod
    def get_arch_list():
        return ["sm_86"]
class _Version:
    cuda = "12.8"
cuda = _Cuda()
version = _Version()
def ones(n, device=None):
    return _Tensor()
class _Tensor:
    def __mul__(self, other):
        return self
    def sum(self):
        return self
    def item(self):
        return 16.0
"""


def test_import_confirms_the_prediction(env):
    env.torch("2.9.0+cu128", "12.8")
    env.file("torch/__init__.py", FAKE_TORCH.format(version="2.9.0+cu128", gpu=True))
    result = CliRunner().invoke(main, ["doctor", "--env", str(env.prefix), *RTX3090_535, "--import", "--json"], catch_exceptions=False)
    data = json.loads(result.stdout)
    assert data["imported"] == [
        {"framework": "torch", "gpu": True, "predicted_gpu": True,
         "seen": {"version": "2.9.0+cu128", "cuda": "12.8", "gpu": True, "devices": ["8.6"], "arch_list": ["sm_86"], "kernel": True}}
    ]  # fmt: skip
    assert "DR080" not in [f["code"] for f in data["findings"]]


def test_import_that_disagrees_is_said(env):
    env.torch("2.9.0+cu128", "12.8")
    env.file("torch/__init__.py", FAKE_TORCH.format(version="2.9.0+cu128", gpu=False))
    result = CliRunner().invoke(main, ["doctor", "--env", str(env.prefix), *RTX3090_535, "--import"], catch_exceptions=False)
    assert "imported torch: sees no GPU (predicted: uses the GPU)" in result.stdout
    assert "DR080 warning" in result.stdout


def test_import_that_hangs_is_stopped(env):
    env.torch("2.9.0+cu128", "12.8")
    env.file("torch/__init__.py", "import time\ntime.sleep(30)\n")
    result = CliRunner().invoke(main, ["doctor", "--env", str(env.prefix), *RTX3090_535, "--import", "--timeout", "1"], catch_exceptions=False)
    assert "DR081 warning: --import: importing the frameworks took longer than 1 s" in result.stdout


def test_import_failure_is_reported(env):
    env.torch("2.9.0+cu128", "12.8")
    env.file("torch/__init__.py", "raise OSError('libcudnn.so.9: cannot open shared object file')\n")
    result = CliRunner().invoke(main, ["doctor", "--env", str(env.prefix), *RTX3090_535, "--import"], catch_exceptions=False)
    assert "imported torch: import failed: OSError: libcudnn.so.9: cannot open shared object file" in result.stdout


def test_detected_rtx5090_with_a_cu126_build(env, fake_smi):
    """The machine read from a real RTX 5090's nvidia-smi output (driver 570)."""
    env.torch("2.9.0+cu126", "12.6")
    fake_smi("rtx5090-570")
    assert "DR021" in codes(env, *LINUX)


def test_a_python_the_release_has_no_wheels_for(env, matrices):
    def cuda_build(release):
        build = next(b for b in release.builds if b.kind == "cuda" and "linux-x86_64" in b.platforms)
        return f"{release.version}+{build.tag}", f"{build.cuda.major}.{build.cuda.minor}"

    cuda = [r for r in matrices.torch if any(b.kind == "cuda" and "linux-x86_64" in b.platforms and b.cuda for b in r.builds)]
    without = next(r for r in cuda if PY not in r.pythons("linux-x86_64"))
    env.torch(*cuda_build(without))
    assert "DR071" in codes(env, *H100_580)
    other = FakeEnv(env.prefix.parent / "fits")
    other.torch(*cuda_build(next(r for r in cuda if PY in r.pythons("linux-x86_64"))))
    assert "DR071" not in codes(other, *H100_580)


def test_an_older_toolkit_of_the_same_major(env, tmp_path, monkeypatch):
    env.torch("2.9.0+cu128", "12.8")
    usr = tmp_path / "usr-local"
    old, new = _toolkit(usr / "cuda-12.1", "12.1.105"), _toolkit(usr / "cuda-12.8", "12.8.93")
    monkeypatch.setenv("CUDA_HOME", str(old))
    result = doctor(env, *H100_580)
    dr042 = [f for f in json.loads(result.stdout)["findings"] if f["code"] == "DR042"]
    assert len(dr042) == 1 and "older than the CUDA 12.8" in dr042[0]["message"]
    assert dr042[0]["commands"] == ["cudafit env-script --toolkit 12.8 -o env.sh && . ./env.sh"]
    monkeypatch.setenv("CUDA_HOME", str(new))
    assert "DR042" not in codes(env, *H100_580)


# -- newcomer-test findings (issue 10 review) ----------------------------------------------------


def test_when_nothing_runs_the_fix_is_a_resolve_for_this_machine(env):
    env.torch("2.5.1+cu124", "12.4")
    result = doctor(env, *LINUX, "--driver", "560.35.03", "--gpu", "NVIDIA GeForce RTX 5090")  # a driver older than Blackwell
    commands = [c for f in json.loads(result.stdout)["findings"] for c in f["commands"]]
    assert f"cudafit resolve torch --os linux --arch x86_64 --python {PY} --driver 560.35.03 --gpu 'NVIDIA GeForce RTX 5090'" in commands
    assert not any("--why" in c for c in commands)


def test_unknown_architectures_are_bounded_by_the_toolkit_or_said(env, matrices):
    unknown = next(
        (r, b) for r in matrices.torch for b in r.builds
        if b.kind == "cuda" and b.sass is None and b.cuda is not None and b.cuda.major == 12 and b.cuda.minor <= 6 and "linux-x86_64" in b.platforms
    )  # fmt: skip
    release, build = unknown
    env.torch(f"{release.version}+{build.tag}", f"{build.cuda.major}.{build.cuda.minor}")
    # CUDA 12.6 cannot compile for sm_120: no kernels, whatever the list.
    assert "DR021" in codes(env, *RTX5090_570)
    # For an Ampere card it could: not known, and said.
    assert "DR022" in codes(env, *RTX3090_535)


@pytest.mark.parametrize("target", ["/etc/passwd", "/usr/bin/env"])
def test_env_that_is_a_file_but_no_python(target):
    result = CliRunner().invoke(main, ["doctor", "--env", target, *H100_580])
    assert result.exit_code == 2 and "not a Python interpreter" in result.stderr


def test_env_with_a_broken_python_link(tmp_path):
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python").symlink_to(tmp_path / "gone" / "python3")
    result = CliRunner().invoke(main, ["doctor", "--env", str(tmp_path), *H100_580])
    assert result.exit_code == 2 and "broken link" in result.stderr


def test_dr040_names_a_toolkit_that_is_installed(env, tmp_path, monkeypatch):
    env.torch("2.7.1+cu126", "12.6")
    usr = tmp_path / "usr-local"
    a, b = _toolkit(usr / "cuda-12.4", "12.4.131"), _toolkit(usr / "cuda-11.8", "11.8.89")
    monkeypatch.setenv("CUDA_HOME", str(a))
    monkeypatch.setenv("PATH", f"{b}/bin:/usr/bin:/bin")
    dr040 = next(f for f in json.loads(doctor(env, *H100_580).stdout)["findings"] if f["code"] == "DR040")
    assert dr040["commands"] == ["cudafit env-script --toolkit 12.4 -o env.sh && . ./env.sh"]


def test_dr050_reinstalls_the_wheel_whose_files_are_gone(env):
    env.torch("2.5.1+cu124", "12.4", needed=["libcublas.so.12"])
    env.dist("nvidia-cublas-cu12", "12.4.5.8")
    dr050 = next(f for f in json.loads(doctor(env, *H100_580).stdout)["findings"] if f["code"] == "DR050")
    assert dr050["commands"] == [f"{env.prefix}/bin/python -m pip install --force-reinstall --no-deps nvidia-cublas-cu12==12.4.5.8"]


def test_dr032_keeps_the_installed_version(env):
    # 1.20.0: a release the data knows (the resolver keeps an installed version only where it has a build that runs here)
    env.dist("onnxruntime", "1.20.0").dist("onnxruntime-gpu", "1.20.0")
    dr032 = next(f for f in json.loads(doctor(env, *H100_580).stdout)["findings"] if f["code"] == "DR032")
    assert dr032["commands"][-1].endswith("pip install onnxruntime-gpu==1.20.0")


def test_two_cuda_majors_with_onnxruntime(env):
    env.torch("2.9.0+cu130", "13.0").dist("onnxruntime-gpu", "1.19.2")
    assert "DR030" in codes(env, *H100_580)


def test_damaged_metadata_is_said(env):
    env.torch("2.9.0+cu128", "12.8")
    (env.site / "torch-2.9.0+cu128.dist-info" / "METADATA").write_bytes(bytes(range(256)) * 4)
    (env.site / "torchvision.dist-info").mkdir()
    messages = [f["message"] for f in json.loads(doctor(env, *H100_580).stdout)["findings"] if f["code"] == "DR090"]
    assert any("metadata is damaged" in m for m in messages) and any("torchvision.dist-info has no version" in m for m in messages)


def test_import_failure_is_an_error(env):
    env.torch("2.9.0+cu128", "12.8")
    env.file("torch/__init__.py", "raise ImportError('libcudnn.so.9: cannot open shared object file')\n")
    result = CliRunner().invoke(main, ["doctor", "--env", str(env.prefix), "--import", "--json", *LINUX], catch_exceptions=False)
    data = json.loads(result.stdout)
    assert result.exit_code == 1 and data["ok"] is False
    assert [f["code"] for f in data["findings"] if f["code"].startswith("DR08")] == ["DR082"]


def test_timeout_must_be_positive(env):
    result = CliRunner().invoke(main, ["doctor", "--env", str(env.prefix), "--import", "--timeout", "0"])
    assert result.exit_code == 2


# -- issue 23, item 4: CPU onnxruntime, fixes from the resolver, an nvidia-smi that says nothing usable ----

V100_470 = [*LINUX, "--driver", "470.82.01", "--gpu", "Tesla V100-SXM2-16GB"]  # CUDA 11 only
V100_418 = [*LINUX, "--driver", "418.87.01", "--gpu", "Tesla V100-SXM2-16GB"]  # no onnxruntime-gpu runs
MACOS = ["--os", "macos", "--arch", "aarch64"]


def resolved(*args: str) -> list[str]:
    """What `cudafit resolve` installs (pip's arguments, one command a line): the source a fix must agree with."""
    result = CliRunner().invoke(main, ["resolve", *args, "--python", PY], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    lines = result.stdout.split("install:\n", 1)[1].split("why:", 1)[0].splitlines()
    return [line.strip().removeprefix("pip install ") for line in lines if line.strip()]


def installs(commands: list[str]) -> list[str]:
    return [c.split(" -m pip install ", 1)[1] for c in commands if " -m pip install " in c]


def findings_of(env: FakeEnv, *machine: str) -> list[dict]:
    return json.loads(doctor(env, *machine).stdout)["findings"]


# The environment runs this interpreter's Python (3.10 to 3.13): onnxruntime 1.23.2 has wheels for
# all four and runs on an H100 with driver 580; 1.28.0 (CUDA 13 on Linux) needs driver 580, so a
# V100 with 535 runs an older release (1.23.2 or 1.26.0, by Python).
ORT_ALL_PYTHONS = "1.23.2"
V100_535 = [*LINUX, "--driver", "535.104.05", "--gpu", "Tesla V100-SXM2-16GB"]


def test_cpu_onnxruntime_beside_a_gpu_is_dr010(env):
    env.dist("onnxruntime", ORT_ALL_PYTHONS)
    result = doctor(env, *H100_580)
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert [(b["name"], b["version"], b["kind"]) for b in data["environment"]["frameworks"]] == [("onnxruntime", ORT_ALL_PYTHONS, "cpu")]
    dr010 = [f for f in data["findings"] if f["code"] == "DR010"]
    assert len(dr010) == 1 and f"onnxruntime {ORT_ALL_PYTHONS}" in dr010[0]["message"] and "H100" in dr010[0]["message"]
    assert "onnxruntime-gpu" in dr010[0]["fix"] and "same release" in dr010[0]["fix"]
    # onnxruntime goes first: both install the onnxruntime module, and pip removing it later would take onnxruntime-gpu's files.
    assert dr010[0]["commands"][0] == f"{env.prefix}/bin/python -m pip uninstall -y onnxruntime"
    assert installs(dr010[0]["commands"]) == resolved(f"onnxruntime-gpu=={ORT_ALL_PYTHONS}", *H100_580)


def test_cpu_onnxruntime_whose_release_cannot_run_gets_the_resolvers_build(env):
    env.dist("onnxruntime", "1.28.0")
    dr010 = next(f for f in findings_of(env, *V100_535) if f["code"] == "DR010")
    assert "that runs here" in dr010["fix"]
    assert installs(dr010["commands"]) == resolved("onnxruntime-gpu", *V100_535)
    assert not any("==1.28.0" in c for c in installs(dr010["commands"]))


@pytest.mark.parametrize("machine", [NO_DRIVER, MACOS, V100_418], ids=["no-driver", "macos", "no-gpu-build-runs"])
def test_cpu_onnxruntime_where_it_is_the_right_build(env, machine):
    env.dist("onnxruntime", ORT_ALL_PYTHONS)
    result = doctor(env, *machine)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["findings"] == []


def test_every_fix_that_installs_onnxruntime_gpu_removes_onnxruntime_first(env):
    env.torch("2.9.0+cpu", None).dist("onnxruntime", "1.26.0")
    findings = findings_of(env, *H100_580)
    assert sorted(f["message"].split(" ")[0] for f in findings if f["code"] == "DR010") == ["onnxruntime", "torch"]
    for f in findings:
        if any("onnxruntime-gpu" in c for c in installs(f["commands"])):
            assert f["commands"][0] == f"{env.prefix}/bin/python -m pip uninstall -y onnxruntime", f


def test_dr032_never_reinstalls_a_build_another_finding_says_cannot_run(env):
    """Before: DR032 said `pip install onnxruntime-gpu==X`, the build DR020 says needs a newer driver."""
    env.dist("onnxruntime", "1.28.0").dist("onnxruntime-gpu", "1.28.0")
    findings = findings_of(env, *V100_535)
    dr020 = next(f for f in findings if f["code"] == "DR020")
    assert dr020["message"].startswith("onnxruntime-gpu 1.28.0 ")
    dr032 = next(f for f in findings if f["code"] == "DR032")
    assert dr032["commands"][0] == f"{env.prefix}/bin/python -m pip uninstall -y onnxruntime onnxruntime-gpu"
    assert installs(dr032["commands"]) == resolved("onnxruntime-gpu", *V100_535)
    for f in findings:
        assert not any(re.search(r"onnxruntime-gpu(\[[^]]*\])?==1\.28\.0\b", c) for c in installs(f["commands"])), f


def _driver_codes(findings: list[dict]) -> list[str]:
    return [f["code"] for f in findings if f["code"] in ("DR001", "DR002", "DR003")]


def _with_torch(env, build: str) -> None:
    """A CUDA torch, a CPU torch, or none ("none") in the environment."""
    if build == "cuda":
        env.torch("2.9.0+cu128", "12.8")
    elif build == "cpu":
        env.torch("2.9.0+cpu", None)


@pytest.mark.parametrize(
    "case, said",
    [
        ("garbled", "nvidia-smi output line 1: expected 4 comma-separated fields"),
        ("garbled-driver", "nvidia-smi output line 1: driver_version '[Unknown Error]' is not a version"),
    ],
)
@pytest.mark.parametrize("build", ["cuda", "cpu", "none"])
def test_nvidia_smi_garbage_is_a_driver_finding_in_doctor(env, fake_smi, case, said, build):
    _with_torch(env, build)
    fake_smi(case)
    result = doctor(env, *LINUX)
    assert result.exit_code == 1, result.output
    findings = json.loads(result.stdout)["findings"]
    assert _driver_codes(findings) == ["DR002"]
    dr002 = next(f for f in findings if f["code"] == "DR002")
    assert said in dr002["message"] and "cannot read" in dr002["message"] and dr002["severity"] == "error"
    text = doctor(env, *LINUX, fmt="").stdout
    assert "driver did not answer" in text.splitlines()[0]
    # detect and resolve still refuse to answer from it.
    for command in (["detect"], ["resolve", "torch", "--python", PY]):
        refused = CliRunner().invoke(main, [*command, *LINUX])
        assert refused.exit_code == 2 and said in refused.stderr and "Traceback" not in refused.output


def test_nvidia_smi_garbage_with_the_kernel_module_loaded(env, fake_smi, tmp_path, monkeypatch):
    proc = tmp_path / "proc-version"
    proc.write_text("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.14  Release Build  (dvs-builder@U16-I3-B03-4-3)\n")
    monkeypatch.setitem(detect.read_driver.__kwdefaults__, "proc_version", proc)
    env.torch("2.9.0+cu128", "12.8")
    fake_smi("garbled")
    result = doctor(env, *LINUX, fmt="")
    assert result.exit_code == 1
    assert "driver 550.54.14" in result.stdout.splitlines()[0]
    assert _driver_codes(findings_of(env, *LINUX)) == ["DR002"]


@pytest.mark.parametrize("build", ["cuda", "cpu", "none"])
def test_no_devices_is_one_story(env, fake_smi, build):
    _with_torch(env, build)
    fake_smi("no-devices")
    result = doctor(env, *LINUX, fmt="")
    assert result.exit_code == 1, result.output
    machine_line = result.stdout.splitlines()[0]
    # nvidia-smi got an answer from the driver (NVML started) and it named no GPU: not "did not answer", not "no driver".
    assert "did not answer" not in machine_line and "no NVIDIA driver" not in machine_line and "no GPU" in machine_line
    assert _driver_codes(findings_of(env, *LINUX)) == ["DR003"]
    assert CliRunner().invoke(main, ["detect", *LINUX, "--python", PY]).exit_code == 0


@pytest.mark.parametrize("build", ["cuda", "cpu", "none"])
def test_nvidia_smi_absent_and_printing_nothing_both_mean_no_driver(env, fake_smi, tmp_path, monkeypatch, build):
    _with_torch(env, build)
    bare = tmp_path / "bare-bin"
    bare.mkdir()
    monkeypatch.setenv("PATH", str(bare))  # no nvidia-smi anywhere, not even the host's
    seen = {}
    for how in ("absent", "silent"):
        if how == "silent":
            fake_smi("empty-output")
        result = doctor(env, *LINUX)
        text = doctor(env, *LINUX, fmt="").stdout
        detected = CliRunner().invoke(main, ["detect", "--json", *LINUX, "--python", PY])
        assert detected.exit_code == 0, detected.output
        seen[how] = (result.exit_code, json.loads(result.stdout)["findings"], text.splitlines()[0], json.loads(detected.stdout)["driver"])
    assert seen["absent"] == seen["silent"]
    exit_code, findings, machine_line, driver = seen["silent"]
    assert "no NVIDIA driver" in machine_line and driver is None
    assert _driver_codes(findings) == (["DR001"] if build == "cuda" else [])
    assert exit_code == (1 if build == "cuda" else 0)


def test_dr032_where_no_onnxruntime_gpu_runs_installs_nothing(env):
    env.dist("onnxruntime", "1.26.0").dist("onnxruntime-gpu", "1.26.0")
    dr032 = next(f for f in findings_of(env, *V100_418) if f["code"] == "DR032")
    assert f"{env.prefix}/bin/python -m pip uninstall -y onnxruntime onnxruntime-gpu" in dr032["fix"]
    assert installs(dr032["commands"]) == [] and dr032["commands"][0].startswith("cudafit resolve onnxruntime-gpu ")


def test_reinstall_at_the_same_version_is_forced(env):
    # pip calls an installed torch==2.9.0+cu128 satisfied, whatever Python its wheel was for
    other = "cp39" if CP != "cp39" else "cp310"
    env.dist("torch", "2.9.0+cu128", tag=f"{other}-{other}-manylinux_2_28_x86_64")
    env.file("torch/version.py", "__version__ = '2.9.0+cu128'\ncuda = '12.8'\n")
    dr070 = next(f for f in json.loads(doctor(env, *RTX3090_535).stdout)["findings"] if f["code"] == "DR070")
    assert any("pip install --force-reinstall" in c and "torch==2.9.0+cu128" in c for c in dr070["commands"]), dr070["commands"]


def test_fix_commands_use_uv_in_an_environment_uv_made_without_pip(env):
    cfg = env.prefix / "pyvenv.cfg"
    cfg.write_text(cfg.read_text() + "uv = 0.9.5\n")  # as uv writes it, beside the interpreter's own home
    env.torch("2.9.0+cpu", None)
    dr010 = next(f for f in json.loads(doctor(env, *H100_580).stdout)["findings"] if f["code"] == "DR010")
    assert dr010["commands"] and all(c.startswith("uv pip install --python ") for c in dr010["commands"]), dr010["commands"]
    env.dist("pip", "25.0")  # its own pip: pip it is
    dr010 = next(f for f in json.loads(doctor(env, *H100_580).stdout)["findings"] if f["code"] == "DR010")
    assert all(" -m pip install " in c for c in dr010["commands"]), dr010["commands"]


def test_a_driver_not_given_is_not_a_missing_driver(env):
    env.torch("2.9.0+cu128", "12.8")
    found = codes(env, *LINUX, "--gpu", "NVIDIA GeForce RTX 3090")
    assert "DR001" not in found
    assert "DR001" in codes(env, *NO_DRIVER)


@pytest.mark.parametrize("value, hides", [("1", True), ("2,0", True), ("0,2", False), ("0", False), ("GPU-8a5b0f2c", False), ("none", True)])
def test_cuda_visible_devices_that_names_no_gpu_here(env, monkeypatch, value, hides):
    # CUDA reads the list up to its first entry that is no device: on one GPU, "1" and "2,0" hide it
    env.torch("2.9.0+cu128", "12.8")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", value)
    assert ("DR004" in codes(env, *RTX3090_535)) is hides


def test_packages_outside_the_prefix_are_read_where_the_interpreter_imports_them(env, tmp_path, monkeypatch):
    # A user site (pip install --user), a venv with system site packages, Debian's dist-packages:
    # the interpreter's own sys.path says where it imports from.
    user = tmp_path / "home" / ".local" / "lib" / f"python{PY}" / "site-packages"
    user.mkdir(parents=True)
    folder = user / "torch-2.4.1+cpu.dist-info"
    folder.mkdir()
    (folder / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.4.1+cpu\n")
    (user / "torch").mkdir()
    (user / "torch" / "version.py").write_text("__version__ = '2.4.1+cpu'\ncuda = None\n")
    real = detect.run_command

    def run(cmd, timeout):
        if cmd[1:2] == ["-c"] and "sys.path" in cmd[2]:
            return detect.RunResult(0, json.dumps([int(PY.split(".")[0]), int(PY.split(".")[1]), "/usr", ["", str(env.site), str(user), "/nowhere/site-packages"]]))
        return real(cmd, timeout)

    monkeypatch.setattr(detect, "run_command", run)
    data = json.loads(doctor(env, *H100_580).stdout)
    assert "DR010" in [f["code"] for f in data["findings"]]


def test_the_interpreter_says_its_own_package_folders(env):
    layout = detect.interpreter_layout(str(env.prefix / "bin" / "python"))
    assert layout is not None and layout.python == PY
    assert layout.prefix == env.prefix and env.site in layout.sites
    assert detect.interpreter_layout(str(env.prefix / "bin" / "no-python")) is None


def test_torchvision_and_torchaudio_made_for_another_torch(env):
    # torchvision 0.20.1 pins torch 2.5.1 in its METADATA: beside torch 2.6.0 its operators fail to
    # load (operator torchvision::nms does not exist); torchaudio 2.6.0+cu118 brings CUDA 11
    env.torch("2.6.0+cu124", "12.4")
    env.dist("torchvision", "0.20.1+cu121", requires=("torch==2.5.1",))
    env.dist("torchaudio", "2.6.0+cu118", requires=("torch==2.6.0",))
    data = json.loads(doctor(env, *RTX3090_535).stdout)
    dr035 = next(f for f in data["findings"] if f["code"] == "DR035")
    assert "torchvision 0.20.1+cu121 is made for torch 2.5.1" in dr035["message"] and "torchaudio 2.6.0+cu118 is a CUDA 11 build" in dr035["message"]
    assert any("torchvision==" in c and "torch==" in c for c in dr035["commands"]), dr035["commands"]
    assert data["ok"] is False


def test_companions_of_the_installed_torch_pass(env):
    env.torch("2.6.0+cu124", "12.4")
    env.dist("torchvision", "0.21.0+cu124", requires=("torch==2.6.0",))
    env.dist("torchaudio", "2.6.0+cu124", requires=("torch==2.6.0",))
    assert "DR035" not in codes(env, *RTX3090_535)


def test_env_script_keeps_the_active_conda_environments_folders(tmp_path, monkeypatch):
    # a conda environment with its own nvcc: its bin/ also holds its python and pip
    usr = tmp_path / "usr-local"
    new = _toolkit(usr / "cuda-12.6", "12.6.85")
    conda = tmp_path / "conda-env"
    (conda / "bin").mkdir(parents=True)
    (conda / "bin" / "nvcc").write_text("#!/bin/sh\necho 'Cuda compilation tools, release 13.0, V13.0.48'\n")
    (conda / "bin" / "nvcc").chmod(0o755)
    monkeypatch.setenv("CONDA_PREFIX", str(conda))
    script = tmp_path / "env.sh"
    assert CliRunner().invoke(main, ["env-script", "--toolkit", "12.6", "-o", str(script)]).exit_code == 0
    shell = subprocess.run(
        ["sh", "-c", f". {script} && printf '%s' \"$PATH\""], env={"PATH": f"{conda}/bin:/usr/bin:/bin"}, capture_output=True, text=True, check=True
    )
    assert shell.stdout == f"{new}/bin:{conda}/bin:/usr/bin:/bin"


def test_a_jax_plugin_of_another_version_than_jaxlib_is_not_loaded(env):
    # jaxlib/plugin_support.py compares the dotted numbers of both versions: 0.11.2 beside 0.12.0 is
    # skipped ("will not be used"), and JAX runs on the CPU
    env.dist("jax", "0.12.0").dist("jaxlib", "0.12.0").dist("jax-cuda12-plugin", "0.11.2").dist("jax-cuda12-pjrt", "0.11.2")
    data = json.loads(doctor(env, *H100_580).stdout)
    dr036 = next(f for f in data["findings"] if f["code"] == "DR036")
    assert "jax-cuda12-plugin 0.11.2" in dr036["message"] and "jaxlib 0.12.0" in dr036["message"]
    assert "uninstall" in dr036["commands"][0] and "jax-cuda12-plugin" in dr036["commands"][0] and "jax-cuda12-pjrt" in dr036["commands"][0]
    assert dr036["commands"][1].endswith("install 'jax-cuda12-plugin[with-cuda]==0.12.0'"), dr036["commands"]  # jax stays as it is
    # the plugin of jaxlib's own version is the one read, and no finding
    env2 = FakeEnv(env.prefix.parent / "same")
    env2.dist("jax", "0.12.0").dist("jaxlib", "0.12.0").dist("jax-cuda13-plugin", "0.12.0").dist("jax-cuda13-pjrt", "0.12.0")
    assert "DR036" not in codes(env2, *H100_580)


def test_numpy_2_beside_a_framework_built_against_numpy_1(env):
    # tensorflow 2.10 to 2.11 and 2.14.0 were built against NumPy 1.x (numpy-abi.toml, read from the wheels)
    env.tensorflow("2.11.1", "11.2", "8.1")
    env.dist("numpy", "2.2.6")
    dr037 = next(f for f in json.loads(doctor(env, *RTX3090_535).stdout)["findings"] if f["code"] == "DR037")
    assert dr037["severity"] == "error" and "tensorflow 2.11.1" in dr037["message"] and "numpy<2" in dr037["commands"][0]


def test_numpy_2_beside_torch_2_2_is_a_warning_and_numpy_1_passes(env):
    env.torch("2.2.2+cu121", "12.1")
    env.dist("numpy", "2.1.0")
    dr037 = next(f for f in json.loads(doctor(env, *RTX3090_535).stdout)["findings"] if f["code"] == "DR037")
    assert dr037["severity"] == "warning" and "Numpy is not available" in dr037["message"]
    env2 = FakeEnv(env.prefix.parent / "np1")
    env2.torch("2.2.2+cu121", "12.1")
    env2.dist("numpy", "1.26.4")
    assert "DR037" not in codes(env2, *RTX3090_535)


def test_a_companion_of_pypis_build_beside_an_index_torch_of_another_cuda(env):
    # `pip install torchaudio` after torch 2.6.0+cu118: pip keeps the +cu118 torch (it satisfies
    # torch==2.6.0) and takes PyPI's torchaudio 2.6.0, a CUDA 12 build on Linux (the data's pypi_variant)
    env.torch("2.6.0+cu118", "11.8")
    env.dist("torchaudio", "2.6.0", requires=("torch==2.6.0",))
    dr035 = next(f for f in json.loads(doctor(env, *RTX3090_535).stdout)["findings"] if f["code"] == "DR035")
    assert "torchaudio 2.6.0 is a CUDA 12 build beside torch 2.6.0+cu118, a CUDA 11 build" in dr035["message"], dr035["message"]
    # a CPU torch beside a CUDA torchvision: its compiled operators do not load either
    cpu = FakeEnv(env.prefix.parent / "cpu")
    cpu.torch("2.6.0+cpu", None)
    cpu.dist("torchvision", "0.21.0+cu124", requires=("torch==2.6.0",))
    assert "DR035" in codes(cpu, *NO_DRIVER)
