"""nvidia-smi parsing and driver reading, against outputs of real driver branches
(tests/fixtures/nvidia-smi/*.toml; each file says which machine it stands for)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cudafit import detection as detect
from cudafit.errors import InputError
from cudafit.machine import cuda_driver_max
from cudafit.machine_input import normalize_arch
from cudafit.records import GpuInfo

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

CASES = Path(__file__).parent / "fixtures" / "nvidia-smi"


def replay(case: str, *, timeout: bool = False):
    data = tomllib.loads((CASES / f"{case}.toml").read_text())

    def run(cmd, _timeout):
        if timeout:
            return detect.RunResult(None, "", "", timed_out=True)
        if len(cmd) == 1:
            part = data.get("banner", {"rc": 0, "stdout": ""})
        elif "compute_cap" in cmd[1]:
            part = data["query"]
        else:
            part = data.get("query_old", data["query"])
        return detect.RunResult(part["rc"], part["stdout"], "")

    return run


def read(case: str, tmp_path: Path, **kw) -> detect.DriverReading:
    return detect.read_driver("linux", run=replay(case, **kw), candidates=["/usr/bin/nvidia-smi"],
                              proc_version=tmp_path / "absent")


@pytest.mark.parametrize(
    "case, driver, gpus, cuda",
    [
        ("rtx3090-535", "535.104.05", [("NVIDIA GeForce RTX 3090", (8, 6), 24576)], "12.2"),
        ("a100x8-535", "535.129.03", [("NVIDIA A100-SXM4-80GB", (8, 0), 81920)] * 8, "12.2"),
        # R470 has no compute_cap field: the second query leaves it to the GPU table.
        ("v100-470-old", "470.82.01", [("Tesla V100-SXM2-16GB", None, 16160)], "11.4"),
        # R610 renamed the banner fields (KMD Version, CUDA UMD Version).
        ("h100-610-renamed", "610.43.03", [("NVIDIA H100 80GB HBM3", (9, 0), 81559)], "13.3"),
        ("wsl-4070laptop-566", "566.36", [("NVIDIA GeForce RTX 4070 Laptop GPU", (8, 9), 8188)], "12.7"),
        ("mixed-4090-1080ti-550", "550.54.14",
         [("NVIDIA GeForce RTX 4090", (8, 9), 24564), ("NVIDIA GeForce GTX 1080 Ti", (6, 1), 11264)], "12.4"),
        ("rtx5090-570", "570.124.04", [("NVIDIA GeForce RTX 5090", (12, 0), 32607)], "12.8"),
        ("titanv-rtx5880-570", "570.86.15",
         [("NVIDIA TITAN V", (7, 0), 12288), ("NVIDIA RTX 5880 Ada Generation", (8, 9), 49140)], "12.8"),
    ],
)
def test_reads_driver_and_gpus(case, driver, gpus, cuda, tmp_path):
    reading = read(case, tmp_path)
    assert reading.driver == driver
    assert reading.gpus == tuple(GpuInfo(n, cc, m) for n, cc, m in gpus)
    assert reading.cuda_driver_max == cuda
    assert reading.gpus_known and reading.driver_known
    assert reading.warnings == ()


@pytest.mark.parametrize(
    "case, warning",
    [
        ("driver-not-loaded", "nvidia-smi failed: NVIDIA-SMI has failed because it couldn't communicate"),
        ("no-devices", "nvidia-smi reports no NVIDIA GPU"),
    ],
)
def test_failures_become_warnings(case, warning, tmp_path):
    reading = read(case, tmp_path)
    assert reading.gpus == ()
    assert any(w.startswith(warning) for w in reading.warnings), reading.warnings


def test_failure_falls_back_to_proc_driver_version(tmp_path):
    proc = tmp_path / "version"
    proc.write_text(
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.14  Release Build  (dvs-builder@U16-I3-B03-4-3)  Thu Feb 22 01:25:25 UTC 2024\n"
        "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n"
    )
    reading = detect.read_driver("linux", run=replay("driver-not-loaded"), candidates=["/x/nvidia-smi"], proc_version=proc)
    assert reading.driver == "550.54.14"
    assert reading.driver_known and not reading.gpus_known


def test_timeout_is_a_warning_not_a_hang(tmp_path):
    reading = read("rtx3090-535", tmp_path, timeout=True)
    assert not reading.gpus_known and not reading.driver_known
    assert "did not answer" in reading.warnings[0]


def test_no_nvidia_smi_and_no_module_means_no_driver(tmp_path):
    reading = detect.read_driver("linux", candidates=[], proc_version=tmp_path / "absent")
    assert reading.driver is None and reading.driver_known and reading.gpus == ()


def test_module_without_nvidia_smi(tmp_path):
    proc = tmp_path / "version"
    proc.write_text("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n")
    reading = detect.read_driver("linux", candidates=[], proc_version=proc)
    assert reading.driver == "535.104.05" and not reading.gpus_known


@pytest.mark.parametrize(
    "case, message",
    [
        ("garbled", "nvidia-smi output line 1: expected 4 comma-separated fields"),
        ("garbled-driver", "driver_version '[Unknown Error]' is not a version"),
    ],
)
def test_garbage_is_an_input_error_naming_line_and_value(case, message, tmp_path):
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("]", r"\]")):
        read(case, tmp_path)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  470.82.01  Wed Oct 27 21:21:55 UTC 2021", "470.82.01"),
        ("NVRM version: NVIDIA UNIX aarch64 Kernel Module  540.3.0  Release Build", "540.3.0"),
        ("garbage", None),
    ],
)
def test_proc_version(text, expected):
    assert detect.parse_proc_version(text + "\n") == expected


@pytest.mark.parametrize("raw, arch", [("AMD64", "x86_64"), ("x86_64", "x86_64"), ("arm64", "aarch64"), ("aarch64", "aarch64")])
def test_normalize_arch(raw, arch):
    assert normalize_arch(raw) == arch


def test_python_of_venv_reads_pyvenv_cfg(tmp_path):
    (tmp_path / "pyvenv.cfg").write_text("home = /usr/bin\ninclude-system-site-packages = false\nversion_info = 3.12.7\n")
    assert detect.python_of_prefix(tmp_path) == "3.12"


def test_installed_distributions_from_dist_info(tmp_path):
    site = tmp_path / "lib" / "python3.12" / "site-packages"
    for name in ("torch-2.5.1+cu124.dist-info", "nvidia_cudnn_cu12-9.1.0.70.dist-info", "six.py"):
        (site / name).mkdir(parents=True)
    found = detect.installed_distributions(tmp_path)
    assert found["torch"] == "2.5.1+cu124"
    assert found["nvidia-cudnn-cu12"] == "9.1.0.70"


def test_toolkit_version_files(tmp_path):
    new = tmp_path / "cuda-12.4"
    new.mkdir()
    (new / "version.json").write_text('{"cuda": {"name": "CUDA SDK", "version": "12.4.1"}}')
    old = tmp_path / "cuda-10.2"
    old.mkdir()
    (old / "version.txt").write_text("CUDA Version 10.2.89\n")
    assert detect.toolkit_version(new) == "12.4.1"
    assert detect.toolkit_version(old) == "10.2.89"


def test_cuda_driver_max_from_toolkit_drivers(matrices):
    """When nvidia-smi gives no CUDA version (old driver, banner not read, or a described
    driver), the data's toolkit drivers give the floor of what it supports, per OS column."""
    toolkits = matrices.toolkits.values()
    assert cuda_driver_max("566.36", "wsl", toolkits) == "12.6"
    assert cuda_driver_max("566.36", "windows", toolkits) == "12.6"
    assert cuda_driver_max("550.54.14", "linux", toolkits) == "12.4"
    assert cuda_driver_max("570.26", "linux", toolkits) == "12.8"
    assert cuda_driver_max("400.10", "linux", toolkits) is None
    assert cuda_driver_max(None, "linux", toolkits) is None
