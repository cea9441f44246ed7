"""Machine descriptions checked against what exists (issue 7, items 10-12): GPU names with
suggestions and `cudafit gpus`, driver versions and their OS form, Python versions, and the CUDA
version a described driver supports."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from cudafit.cli import main
from cudafit.errors import InputError
from cudafit.gpus import lookup_gpu, match_gpus, suggest_gpus
from cudafit.machine import MachineOptions, build_machine
from cudafit.machine_input import check_driver, check_python

BASE = ["--os", "linux", "--arch", "x86_64", "--python", "3.12", "--driver", "535.104.05"]


def cli(*args):
    return CliRunner().invoke(main, list(args))


def _merge(base, args):
    out = list(base)
    for i in range(0, len(args), 2):
        if args[i] in out:
            out[out.index(args[i]) + 1] = args[i + 1]
        else:
            out += args[i:i + 2]
    return out


# --- item 10: GPU names -------------------------------------------------------------------


def test_unknown_gpu_suggests_the_closest_names(matrices):
    assert suggest_gpus(matrices.gpus, "RTX 3090")[:2] == ["NVIDIA GeForce RTX 3090", "NVIDIA GeForce RTX 3090 Ti"]
    assert suggest_gpus(matrices.gpus, "geforce rtx 4090 laptop")[0] == "NVIDIA GeForce RTX 4090 Laptop GPU"
    assert len(suggest_gpus(matrices.gpus, "RTX")) <= 3
    assert suggest_gpus(matrices.gpus, "zzzz qqqq") == []


def test_unknown_gpu_error_names_the_suggestion():
    result = cli("resolve", "torch", *BASE, "--gpu", "RTX 6000")
    assert result.exit_code == 2
    assert "did you mean 'Quadro RTX 6000', 'NVIDIA RTX 6000 Ada Generation'" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_gpu_name_without_brand_words_is_the_same_card(matrices):
    # "GeForce" names no chip: "RTX 3090" is the GeForce RTX 3090, as "T4" is the Tesla T4.
    assert lookup_gpu(matrices.gpus, "RTX 3090")[0].name == "NVIDIA GeForce RTX 3090"
    assert lookup_gpu(matrices.gpus, "geforce gtx 1080")[0].name == "NVIDIA GeForce GTX 1080"
    result = cli("resolve", "torch", *BASE, "--gpu", "RTX 3090", "--json")
    assert result.exit_code == 0, result.stderr


@pytest.mark.parametrize("name, cc", [
    ("NVIDIA GeForce MX450", (7, 5)),
    ("Tesla M60", (5, 2)),
    ("NVIDIA A800-SXM4-80GB", (8, 0)),
])
def test_gpus_seen_in_the_field_are_known(matrices, name, cc):
    model, warning = lookup_gpu(matrices.gpus, name)
    assert model is not None and model.compute_capability == cc and warning is None


def test_gpus_command_substring_glob_and_json():
    result = cli("gpus", "rtx 3090")
    assert result.exit_code == 0
    assert "NVIDIA GeForce RTX 3090 " in result.stdout and "8.6" in result.stdout
    rows = json.loads(cli("gpus", "*a800*", "--json").stdout)
    assert {r["name"] for r in rows} >= {"NVIDIA A800-SXM4-80GB"}
    assert all(r["compute_capability"] == "8.0" and r["architecture"] for r in rows)
    every = json.loads(cli("gpus", "--json").stdout)
    assert len(every) == len({r["name"] for r in every}) > 150


def test_gpus_command_no_match_is_exit_1():
    result = cli("gpus", "Voodoo 5")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "no known GPU matches" in result.stderr


def test_match_gpus_glob_is_whole_name(matrices):
    assert [m.name for m in match_gpus(matrices.gpus, "tesla m6?")] == ["Tesla M60"]
    assert match_gpus(matrices.gpus, "6?") == []  # a glob covers the whole name, not a part


# --- item 11: drivers and Pythons that exist ------------------------------------------------


@pytest.mark.parametrize("args, message", [
    (["--driver", "9999.99"], "no NVIDIA driver branch R9999"),
    (["--driver", "12.34"], "expected an NVIDIA driver version"),
    (["--driver", "100.10"], "no NVIDIA driver branch R100"),
    (["--python", "3.99"], "--python '3.99': no such Python"),
    (["--python", "4.0"], "--python '4.0': no such Python"),
    (["--os", "wsl", "--driver", "535.104.05"], "under WSL2 nvidia-smi shows the Windows driver's version"),
    (["--os", "windows", "--driver", "535.104.05"], "is a Linux driver version"),
])
def test_descriptions_of_nothing_real_are_exit_2(args, message):
    result = cli("resolve", "torch", *_merge(BASE, args))
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_python_range_comes_from_the_data(matrices):
    with pytest.raises(InputError, match=r"3\.0-3\.16 .*wheels for 3\.6-3\.15"):
        check_python("3.99", matrices)
    assert check_python("3.16", matrices) == "3.16"  # the next one, a prerelease


def test_real_but_unsupported_python_is_a_negative_answer():
    result = cli("resolve", "torch", *_merge(BASE, ["--python", "2.7"]), "--json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["ok"] is False
    assert any("Python 2.7" in c for c in data["conflicts"])


@pytest.mark.parametrize("driver", ["570.26", "440.33", "535.104.05", "580.65.06", "610.43.02"])
def test_real_linux_drivers_pass(matrices, driver):
    assert check_driver(driver, "linux", matrices) == []


def test_windows_driver_on_linux_is_explained(matrices):
    (warning,) = check_driver("566.36", "linux", matrices)
    assert "looks like a Windows driver" in warning and "--os wsl" in warning
    assert check_driver("566.36", "wsl", matrices) == []
    assert check_driver("566.36", "windows", matrices) == []


# --- item 12: the CUDA a described driver supports ------------------------------------------


@pytest.mark.parametrize("os_name, driver, cuda", [
    ("wsl", "566.36", "12.6"),       # Windows column: 560.76 (12.6) <= 566.36 < 570.65 (12.8)
    ("windows", "527.41", "12.0"),
    ("linux", "535.104.05", "12.2"),
    ("linux", "580.65.06", "13.0"),
    ("linux", "440.33", "10.2"),
])
def test_cuda_driver_max_derived_from_the_data(matrices, os_name, driver, cuda):
    machine = build_machine(MachineOptions(driver=driver, os=os_name, arch="x86_64", python="3.12"), matrices)
    assert machine.cuda_driver_max == cuda


def test_detect_json_gives_cuda_driver_max_for_a_described_driver():
    data = json.loads(cli("detect", "--driver", "566.36", "--os", "wsl", "--python", "3.12", "--json").stdout)
    assert data["cuda_driver_max"] == "12.6"
    data = json.loads(cli("detect", "--driver", "none", "--os", "linux", "--python", "3.12", "--json").stdout)
    assert data["cuda_driver_max"] is None


@pytest.mark.parametrize("args, message", [
    (["--os", "macos", "--arch", "arm64", "--driver", "535.104.05", "--gpu", "NVIDIA GeForce RTX 3090"],
     "--os 'macos' with --driver 535.104.05, --gpu 'NVIDIA GeForce RTX 3090': macOS has no NVIDIA driver"),
    (["--os", "macos", "--arch", "arm64", "--compute-capability", "8.6"], "--os 'macos' with --compute-capability 8.6"),
    (["--jetson", "--os", "linux", "--arch", "x86_64"], "--jetson with --arch x86_64: Jetson boards are aarch64"),
    (["--jetson", "--os", "windows"], "--jetson with --os windows: Jetson boards run Linux"),
])
def test_contradictory_descriptions_are_exit_2(args, message):
    from click.testing import CliRunner

    from cudafit.cli import main

    result = CliRunner().invoke(main, ["resolve", "torch", "--python", "3.12", *args])
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert result.stderr.count("\n") == 1


def test_macos_without_a_driver_is_fine():
    from click.testing import CliRunner

    from cudafit.cli import main

    result = CliRunner().invoke(main, ["resolve", "torch", "--python", "3.12", "--os", "macos", "--arch", "arm64", "--driver", "none"])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("text, expected", [("13.6", "13.6"), ("14", "14.0"), ("13.6.1", "13.6"), ("26.1", "26.1")])
def test_macos_versions(text, expected):
    from cudafit.machine_input import check_macos

    assert check_macos(text) == expected


@pytest.mark.parametrize("text", ["ventura", "9.1", "13.x", ""])
def test_bad_macos_versions(text):
    from cudafit.machine_input import check_macos

    with pytest.raises(InputError):
        check_macos(text)


def test_macos_option_needs_a_mac():
    result = CliRunner().invoke(main, ["resolve", "torch", "--os", "linux", "--macos", "14.0", "--python", "3.12"])
    assert result.exit_code == 2 and "--macos '14.0' with --os linux" in result.stderr


def test_a_described_mac_never_reads_this_hosts_nvidia_smi(matrices):
    def boom(*_a, **_k):
        raise AssertionError("nvidia-smi read for a described Mac")

    machine = build_machine(MachineOptions(os="macos", arch="arm64", python="3.12", macos="14.5"), matrices, reader=boom)
    assert machine.driver is None and machine.driver_known and machine.macos == "14.5"


@pytest.mark.parametrize("cc", ["99.9", "8.60", "0.0", "9.9"])
def test_compute_capability_no_gpu_has_is_exit_2(cc):
    result = CliRunner().invoke(main, ["resolve", "torch", "--os", "linux", "--arch", "x86_64", "--python", "3.12",
                                       "--driver", "580.65.06", "--compute-capability", cc])
    assert result.exit_code == 2, result.output
    assert f"--compute-capability {cc!r}: no NVIDIA GPU has it" in result.stderr


def test_python_as_python_prints_it():
    assert check_python("3.12.1") == "3.12"


def test_wsl_is_named_in_the_text():
    result = CliRunner().invoke(main, ["resolve", "torch", "--os", "wsl", "--arch", "x86_64", "--python", "3.12",
                                       "--driver", "566.36", "--gpu", "NVIDIA GeForce RTX 4090"])
    assert result.exit_code == 0
    assert result.stdout.startswith("machine: linux-x86_64 (WSL2), ")


def test_a_detected_os_is_not_called_an_option(monkeypatch):
    monkeypatch.setattr("cudafit.detection.detect_os", lambda: "linux")
    result = CliRunner().invoke(main, ["resolve", "torch", "--macos", "14.5", "--python", "3.12", "--driver", "none"])
    assert result.exit_code == 2
    assert "--macos '14.5': a macOS version describes a Mac, and this machine runs linux" in result.stderr


def test_mac_without_version_says_what_the_wheels_need():
    result = CliRunner().invoke(main, ["resolve", "torch==2.15.0", "--os", "macos", "--arch", "arm64", "--python", "3.12"])
    assert result.exit_code == 0
    assert "the macOS version was not given (--macos): torch 2.15.0's wheels need macOS >= 14.0" in result.stdout


def test_apple_silicon_before_macos_11_is_exit_2():
    result = CliRunner().invoke(main, ["resolve", "jax", "--os", "macos", "--arch", "arm64", "--python", "3.12", "--macos", "10.15"])
    assert result.exit_code == 2 and "Apple silicon Macs run macOS 11 or later" in result.stderr


# --- issue 23, item 9: what users saw ---------------------------------------------------------


@pytest.mark.parametrize("text", ["99.0", "20", "16.1", "25.0"])
def test_a_macos_that_never_existed_is_named_so(text):
    """macOS went from 15 to 26; 16-25 and anything past this year's release never existed."""
    from cudafit.machine_input import check_macos

    with pytest.raises(InputError, match="no such macOS version"):
        check_macos(text)


def test_jetson_describes_linux_aarch64_on_any_host(matrices):
    machine = build_machine(MachineOptions(jetson=True, python="3.12"), matrices, reader=lambda *_a, **_k: None)
    assert (machine.os, machine.arch, machine.jetson) == ("linux", "aarch64", True)


def test_jetson_cpu_asks_nothing_of_the_driver():
    result = cli("resolve", "torch", "--jetson", "--cpu", "--python", "3.12")
    assert result.exit_code == 0, result.output
    said = result.output.partition("warnings:")[2]
    assert "driver not given" not in said and "GPU not given" not in said
    # before Thor the JetPack is the driver: a Jetson assumed on 6.2 asks for none
    with_gpu = cli("resolve", "torch", "--jetson", "--python", "3.12")
    assert "driver not given (--driver)" not in with_gpu.output and "assumed 6.2" in with_gpu.output


def test_a_macos_answer_shows_the_version_pip_shows():
    result = cli("resolve", "torch", "--os", "macos", "--arch", "arm64", "--python", "3.12")
    assert result.exit_code == 0, result.output
    assert "+cpu" not in result.output and "chose torch" in result.output


@pytest.mark.parametrize("spec, package", [("tensorflow", "tensorflow "), ("onnxruntime-gpu==1.24.1", "onnxruntime-gpu ")])
def test_a_no_sass_warning_names_its_package(spec, package):
    """An RTX 5090 (sm_120) runs these builds only through PTX JIT: the warning says whose build."""
    result = cli("resolve", spec, *_merge(BASE, ["--driver", "580.65.06", "--gpu", "NVIDIA GeForce RTX 5090"]))
    jit = [line for line in result.output.splitlines() if "no SASS for this GPU" in line]
    assert jit and all(package in line for line in jit), result.output


def test_gpus_columns_line_up_whatever_the_pattern():
    """The widths are the whole table's: rows of different queries put together still align."""
    import re

    rows = [line for pattern in ("4090", "A100", "GTX 1080", "B200") for line in cli("gpus", pattern).output.splitlines()]
    ends = {re.search(r"\s(\d+\.\d)\s", row).end(1) for row in rows}  # type: ignore[union-attr]
    assert len(rows) > 6 and len(ends) == 1, rows


def test_detect_env_lists_that_environments_frameworks(tmp_path):
    import venv

    venv.create(tmp_path / "env", with_pip=False)
    sites = list((tmp_path / "env").glob("lib/python3*/site-packages")) or [tmp_path / "env" / "Lib" / "site-packages"]
    (sites[0] / "torch-2.5.1+cu124.dist-info").mkdir(parents=True)
    result = cli("detect", "--env", str(tmp_path / "env"), "--json")
    assert result.exit_code == 0, result.output
    assert {"name": "torch", "version": "2.5.1+cu124"} in json.loads(result.stdout)["frameworks"]
    assert cli("detect", "--env", str(tmp_path / "nothing")).exit_code == 2


def test_a_jetson_with_a_discrete_gpu_is_no_machine():
    result = cli("resolve", "torch", "--jetson", "--gpu", "NVIDIA GeForce RTX 4090", "--python", "3.12")
    assert result.exit_code == 2 and "--jetson with --gpu 'NVIDIA GeForce RTX 4090'" in result.stderr
    assert cli("resolve", "torch", "--jetson", "--gpu", "Orin (nvgpu)", "--python", "3.10").exit_code in (0, 1)


def test_a_grace_superchips_gpu_says_its_machine_is_aarch64():
    # GH200, GB200, GB300, GB10 sit beside NVIDIA's Arm Grace CPU (gpus.toml `arch`)
    refused = cli("resolve", "torch", "--arch", "x86_64", "--python", "3.12", "--gpu", "NVIDIA GB10")
    assert refused.exit_code == 2 and "Arm Grace CPU" in refused.stderr
    taken = cli("resolve", "torch", "--os", "linux", "--python", "3.12", "--driver", "580.95.05", "--gpu", "NVIDIA GH200 480GB")
    assert taken.exit_code == 0 and taken.output.startswith("machine: linux-aarch64"), taken.output


def test_a_jetson_modules_gpu_is_a_jetson():
    orin = cli("resolve", "torch", "--os", "linux", "--arch", "aarch64", "--python", "3.10", "--gpu", "NVIDIA Jetson AGX Orin")
    assert orin.exit_code == 0 and "developer.download.nvidia.com/compute/redist/jp/" in orin.output, orin.output
    x86 = cli("resolve", "torch", "--arch", "x86_64", "--python", "3.12", "--compute-capability", "8.7")
    assert x86.exit_code == 2 and "a Jetson module's GPU" in x86.stderr
