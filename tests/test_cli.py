"""The command line through its contract (docs/cli.md): options, JSON, exit codes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from click.testing import CliRunner

from cudafit import detection as detect
from cudafit.cli import main
from cudafit.loader import data_dir

LINUX_3090 = ["--os", "linux", "--arch", "x86_64", "--python", "3.11", "--driver", "535.104.05",
              "--gpu", "NVIDIA GeForce RTX 3090"]


def cli(*args, **kw):
    result = CliRunner().invoke(main, list(args), catch_exceptions=False, **kw)
    return result


def test_resolve_json_contract():
    result = cli("resolve", "torch<2.9", *LINUX_3090, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["ok"] is True
    assert data["machine"] == {"os": "linux", "arch": "x86_64", "python": "3.11", "driver": "535.104.05",
                               "gpus": [{"name": "NVIDIA GeForce RTX 3090", "compute_capability": "8.6"}]}
    evidence = data["packages"][0].pop("evidence")
    assert data["packages"] == [{"name": "torch", "version": "2.8.0", "variant": "cu128",
                                 "index_url": "https://download.pytorch.org/whl/cu128",
                                 "requirement": "torch==2.8.0+cu128"}]
    # the 2.8.0 Linux x86_64 cu128 build is PyPI's default: its facts are read from the wheel
    assert evidence["sass"]["grade"] == "measured" and evidence["sass"]["source"]
    assert set(evidence) >= {"exists", "cuda", "sass", "ptx"}
    assert data["cuda"] == "12.8" and data["cudnn"]
    assert data["commands"]["pip"] == "pip install --index-url https://download.pytorch.org/whl/cu128 torch==2.8.0+cu128"
    assert data["commands"]["uv"].startswith("uv pip install --index-url")
    assert data["notes"] and all(isinstance(n, str) for n in data["notes"])


def test_resolve_default_spec_is_torch():
    data = json.loads(cli("resolve", *LINUX_3090, "--json").stdout)
    assert [p["name"] for p in data["packages"]] == ["torch"]


def test_no_solution_is_exit_1_with_conflicts():
    result = cli("resolve", "torch<2.7", "--os", "linux", "--arch", "x86_64", "--python", "3.12",
                 "--driver", "570.124.04", "--gpu", "NVIDIA GeForce RTX 5090", "--json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["ok"] is False and data["machine"]["driver"] == "570.124.04"
    assert any("sm_120" in c for c in data["conflicts"])


def test_cpu_machine_gets_null_cuda():
    data = json.loads(cli("resolve", "torch<2.9", "--os", "linux", "--arch", "x86_64", "--python", "3.12",
                          "--driver", "none", "--json").stdout)
    assert data["cuda"] is None and data["cudnn"] is None
    assert data["packages"][0]["variant"] == "cpu"


def test_arm64_is_aarch64():
    data = json.loads(cli("resolve", "torch<2.9", "--os", "macos", "--arch", "arm64", "--python", "3.12", "--json").stdout)
    assert data["machine"]["arch"] == "aarch64"
    assert data["packages"][0]["index_url"] is None


BAD = [
    (["--driver", "abc"], "--driver 'abc': expected an NVIDIA driver version"),
    (["--driver", "535"], "--driver '535': expected an NVIDIA driver version"),
    (["--python", "3"], "--python '3': expected a Python version like 3.12"),
    (["--compute-capability", "eight"], "--compute-capability 'eight': expected MAJOR.MINOR"),
    (["--os", "beos"], "--os 'beos': expected one of linux, windows, macos, wsl"),
    (["--arch", "sparc"], "--arch 'sparc': expected x86_64 or aarch64"),
    (["--gpu", "NVIDIA GeForce RTX 9999 Fake"], "--gpu 'NVIDIA GeForce RTX 9999 Fake': not in cudafit's GPU table"),
    (["torch>>2"], "spec 'torch>>2': not a PEP 508 requirement at column 6"),
    (["numpy"], "spec 'numpy': unknown framework 'numpy'"),
    (["torch[cuda]"], "spec 'torch[cuda]': unknown extra cuda for torch (it has none cudafit knows)"),
    (["tensorflow[gpu]"], "spec 'tensorflow[gpu]': unknown extra gpu for tensorflow (known: and-cuda)"),
]


@pytest.mark.parametrize("args, message", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_input_is_exit_2_one_line(args, message):
    base = ["--os", "linux", "--arch", "x86_64", "--python", "3.11", "--driver", "535.104.05"]
    result = cli("resolve", *_merge(base, args))
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith("cudafit: error: ")
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


def _merge(base, args):
    """Options in `args` replace the same option in `base`."""
    out, skip = [], set(a for a in args if a.startswith("--"))
    it = iter(base)
    for opt in it:
        value = next(it)
        if opt not in skip:
            out += [opt, value]
    return out + args


def test_bad_format_is_usage_error():
    result = cli("resolve", *LINUX_3090, "--format", "nope")
    assert result.exit_code == 2 and "Invalid value for '--format'" in result.stderr


def test_output_written_atomically(tmp_path):
    out = tmp_path / "requirements.txt"
    result = cli("resolve", "torch<2.9", *LINUX_3090, "--format", "requirements", "-o", str(out))
    assert result.exit_code == 0, result.stderr
    assert out.read_text().splitlines()[1:] == ["--index-url https://download.pytorch.org/whl/cu128", "torch==2.8.0+cu128"]
    assert [p.name for p in tmp_path.iterdir()] == ["requirements.txt"]


def test_unwritable_output_is_exit_2_and_leaves_nothing(tmp_path):
    out = tmp_path / "missing-dir" / "req.txt"
    result = cli("resolve", *LINUX_3090, "--format", "pip", "-o", str(out))
    assert result.exit_code == 2 and f"cannot write {out}" in result.stderr
    assert not out.parent.exists()


def test_output_needs_format(tmp_path):
    assert cli("resolve", *LINUX_3090, "-o", str(tmp_path / "x")).exit_code == 2


def test_failed_resolution_writes_no_file(tmp_path):
    out = tmp_path / "req.txt"
    result = cli("resolve", "torch<2", "torch>3", *LINUX_3090, "--format", "requirements", "-o", str(out))
    assert result.exit_code == 1 and not out.exists()


def test_uv_project_updates_existing_file(tmp_path):
    out = tmp_path / "pyproject.toml"
    out.write_text('[project]\nname = "mine"\nversion = "1"\ndependencies = ["numpy"]\n')
    assert cli("resolve", "torch<2.9", *LINUX_3090, "--format", "uv-project", "-o", str(out)).exit_code == 0
    text = out.read_text()
    assert 'name = "mine"' in text and '"numpy"' in text and '"torch==2.8.0+cu128"' in text and "explicit = true" in text


def test_uv_project_names_the_broken_pyproject_it_would_merge_into(tmp_path):
    out = tmp_path / "pyproject.toml"
    out.write_text('[project\nname = "x"\n')
    result = cli("resolve", *LINUX_3090, "--format", "uv-project", "-o", str(out))
    assert result.exit_code == 2 and "Traceback" not in result.stderr
    assert f"{out}: not valid TOML" in result.stderr and "line 1" in result.stderr
    assert out.read_text() == '[project\nname = "x"\n'  # left as it was


def test_broken_data_is_exit_2(tmp_path, monkeypatch):
    copy = tmp_path / "m"
    shutil.copytree(data_dir(), copy)
    (copy / "nvidia.toml").write_text("schema = 1\n[oops\n")
    monkeypatch.setenv("CUDAFIT_DATA_DIR", str(copy))
    result = cli("resolve", *LINUX_3090)
    assert result.exit_code == 2
    assert "nvidia.toml: not valid TOML" in result.stderr and "Traceback" not in result.stderr


def test_data_check():
    result = cli("data", "check")
    assert result.exit_code == 0 and "ok (data of" in result.stdout


def test_detect_json_with_fake_nvidia_smi(fake_smi):
    fake_smi("mixed-4090-1080ti-550")
    result = cli("detect", "--json", "--python", "3.12")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert set(data) >= {"os", "arch", "python", "driver", "cuda_driver_max", "gpus", "toolkits", "frameworks"}
    assert data["driver"] == "550.54.14" and data["cuda_driver_max"] == "12.4"
    assert data["gpus"] == [
        {"name": "NVIDIA GeForce RTX 4090", "compute_capability": "8.9", "memory_mib": 24564},
        {"name": "NVIDIA GeForce GTX 1080 Ti", "compute_capability": "6.1", "memory_mib": 11264},
    ]


def test_detect_old_driver_fills_compute_capability_from_table(fake_smi):
    fake_smi("v100-470-old")
    data = json.loads(cli("detect", "--json", "--python", "3.10").stdout)
    assert data["gpus"][0]["compute_capability"] == "7.0"


def test_resolve_on_detected_machine(fake_smi):
    fake_smi("rtx5090-570")
    data = json.loads(cli("resolve", "torch<2.9", "--python", "3.12", "--os", "linux", "--arch", "x86_64", "--json").stdout)
    assert data["packages"][0]["requirement"] == "torch==2.8.0+cu128"


def test_garbled_nvidia_smi_is_exit_2(fake_smi):
    fake_smi("garbled")
    result = cli("resolve", "--python", "3.12", "--os", "linux", "--arch", "x86_64")
    assert result.exit_code == 2 and "nvidia-smi output line 1" in result.stderr


def test_hanging_nvidia_smi_times_out(fake_smi, monkeypatch):
    fake_smi("rtx3090-535", hang=True)
    monkeypatch.setattr(detect, "TIMEOUT_S", 0.5)
    result = cli("detect", "--json", "--python", "3.12")
    assert result.exit_code == 0
    assert any("did not answer" in w for w in json.loads(result.stdout)["warnings"])


def test_install_dry_run(tmp_path):
    env = tmp_path / "venv"
    (env / "bin").mkdir(parents=True)
    (env / "bin" / "python").write_text("")
    result = cli("install", "torch<2.9", "torchvision", *LINUX_3090, "--env", str(env), "--dry-run")
    assert result.exit_code == 0, result.stderr
    line = result.stdout.strip()
    assert line.endswith("--index-url https://download.pytorch.org/whl/cu128 torch==2.8.0+cu128 torchvision==0.23.0+cu128")
    assert str(env / "bin" / "python") in line


def test_install_bad_env():
    result = cli("install", *LINUX_3090, "--env", "/nonexistent/env", "--dry-run")
    assert result.exit_code == 2 and "--env '/nonexistent/env'" in result.stderr


def test_python_dash_m():
    proc = subprocess.run([sys.executable, "-m", "cudafit", "resolve", "torch<2.9", *LINUX_3090, "--format", "pip"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "pip install --index-url https://download.pytorch.org/whl/cu128 torch==2.8.0+cu128\n"


def _fake_env(tmp_path, installs: str):
    """An environment whose python 'installs' by creating the .dist-info folders pip would."""
    env = tmp_path / "env"
    site = env / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (env / "bin").mkdir()
    log = tmp_path / "calls.txt"
    script = env / "bin" / "python"
    script.write_text(f"#!/bin/sh\necho \"$@\" >> {log}\n" + "".join(
        f"{shutil.which('mkdir')} -p {site}/{d}.dist-info\n" for d in installs.split()))
    script.chmod(0o755)
    return env, log


def test_install_runs_pip_and_reads_back(tmp_path, monkeypatch):
    env, log = _fake_env(tmp_path, "torch-2.8.0+cu128")
    monkeypatch.setenv("PATH", str(env / "bin"))  # no uv on PATH: pip is used
    result = cli("install", "torch<2.9", *LINUX_3090, "--env", str(env))
    assert result.exit_code == 0, result.stderr
    # the first call asks the environment's Python for its version (this fake does not answer)
    assert log.read_text().strip().splitlines()[-1] == "-m pip install --index-url https://download.pytorch.org/whl/cu128 torch==2.8.0+cu128"
    assert "installed torch 2.8.0+cu128" in result.stdout


def test_install_reports_a_mismatch(tmp_path, monkeypatch):
    env, _log = _fake_env(tmp_path, "torch-2.8.0+cpu")
    monkeypatch.setenv("PATH", str(env / "bin"))
    result = cli("install", "torch<2.9", *LINUX_3090, "--env", str(env))
    assert result.exit_code == 1
    assert "MISMATCH  torch 2.8.0+cpu (wanted 2.8.0+cu128)" in result.stdout


def test_requirements_moves_pypi_builds_to_pypi():
    """torch 2.15.0+cu132 is the build PyPI serves on Linux x86_64 (torch-2.15.toml pypi_variant), so a
    requirements file can take it from PyPI beside torchaudio 2.11.1, which only PyPI has."""
    args = ["--os", "linux", "--arch", "x86_64", "--python", "3.12", "--driver", "580.65.06", "--gpu", "NVIDIA H100 80GB HBM3"]
    result = cli("resolve", "torch==2.15.0", "torchaudio", *args, "--format", "requirements")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[1:] == ["torch==2.15.0", "torchaudio==2.11.1"]
    pip = cli("resolve", "torch==2.15.0", "torchaudio", *args, "--format", "pip")
    assert pip.stdout.splitlines() == ["pip install --index-url https://download.pytorch.org/whl/cu132 torch==2.15.0+cu132",
                                       "pip install torchaudio==2.11.1"]


def test_requirements_refuses_two_indexes():
    """torch 2.14.1+cu126 is not the build PyPI serves (cu130 is), and torchaudio 2.11.1 is only on PyPI."""
    result = cli("resolve", "torch>=2.12", "torchaudio", "--os", "linux", "--arch", "x86_64", "--python", "3.12",
                 "--driver", "535.104.05", "--gpu", "NVIDIA GeForce RTX 3090", "--format", "requirements")
    assert result.exit_code == 2
    assert "needs two indexes (torch from https://download.pytorch.org/whl/cu126; torchaudio from PyPI)" in result.stderr


H100 = ["--os", "linux", "--arch", "x86_64", "--python", "3.12", "--driver", "580.65.06", "--gpu", "NVIDIA H100 80GB HBM3"]


def test_why_names_the_pin_that_rules_a_release_out():
    result = cli("resolve", "torch==2.10.0", "tensorflow", *H100, "--why", "tensorflow==2.21.0")
    assert result.exit_code == 0, result.stderr
    assert "tensorflow 2.21.0+cu12: fits no torch build that runs here, e.g. nvidia-nccl-cu12: >=2.27.7,<3.0 vs ==2.27.5 (torch 2.10.0+cu128)" in result.stdout
    assert result.stdout.count("tensorflow 2.21.0+cu12:") == 1  # said once, not again as a clash with the chosen build
    data = json.loads(cli("resolve", "torch==2.10.0", "tensorflow", *H100, "--why", "tensorflow==2.21.0", "--json").stdout)
    assert data["why_not"]["release"] == "tensorflow==2.21.0" and data["why_not"]["reasons"]


@pytest.mark.parametrize(
    "args, code, message",
    [
        (["jax[cuda99]"], 2, "unknown extra cuda99 for jax"),
        (["torch<2", "torch>3"], 1, "spec: no torch release in cudafit's data"),
        (["tensorflow==9.9"], 1, "spec: no tensorflow release in cudafit's data"),
        (["--why", "tensorflow=2.21"], 2, "expected NAME==VERSION"),
    ],
)
def test_bad_or_impossible_requests(args, code, message):
    result = cli("resolve", *args, *H100)
    assert result.exit_code == code
    assert message in (result.stderr + result.stdout)


def test_joint_pip_commands_pin_the_shared_wheels():
    result = cli("resolve", "torch", "tensorflow", *H100, "--format", "pip")
    first, second = result.stdout.splitlines()
    assert first == "pip install --index-url https://download.pytorch.org/whl/cu126 torch==2.14.1+cu126"
    assert second.startswith("pip install 'tensorflow[and-cuda]==2.21.0' ")
    assert "nvidia-cudnn-cu12==9.10.2.21" in second and "nvidia-nccl-cu12==2.29.3" in second
    data = json.loads(cli("resolve", "torch", "tensorflow", *H100, "--json").stdout)
    assert data["pins"]["nvidia-nccl-cu12"] == "==2.29.3"
    assert [p["variant"] for p in data["packages"]] == ["cu126", "cu12"]


def test_install_dry_run_pins_shared_wheels(tmp_path):
    env = tmp_path / "venv"
    (env / "bin").mkdir(parents=True)
    (env / "bin" / "python").write_text("")
    result = cli("install", "torch", "tensorflow", *H100, "--env", str(env), "--dry-run")
    assert result.exit_code == 0, result.stderr
    first, second = result.stdout.splitlines()
    assert first.endswith("--index-url https://download.pytorch.org/whl/cu126 torch==2.14.1+cu126")
    assert "'tensorflow[and-cuda]==2.21.0'" in second and "nvidia-nccl-cu12==2.29.3" in second


@pytest.mark.parametrize(
    "args, expected",
    [
        # tensorflow-cpu has wheels for Linux x86_64 and Windows only (PyPI file list, tensorflow-2.21.toml)
        (["--os", "linux", "--arch", "x86_64", "--driver", "none"], "pip install tensorflow-cpu==2.21.0"),
        (["--os", "macos", "--arch", "arm64"], "pip install tensorflow==2.21.0"),
    ],
)
def test_tensorflow_cpu_only_where_published(args, expected):
    result = cli("resolve", "tensorflow-cpu", "--python", "3.12", *args, "--format", "pip")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == expected


def test_why_maps_companion_versions_and_exits_1_without_a_set():
    result = cli("resolve", "torch<2.6", "tensorflow", *H100, "--why", "torchvision==0.20.1")
    assert result.exit_code == 1
    assert "torch 2.5.1+cu124: fits no tensorflow build that runs here" in result.stdout


def test_two_cuda_flavours_is_an_input_error():
    result = cli("resolve", "jax[cuda12,cuda13]", *H100)
    assert result.exit_code == 2 and "one CUDA flavour per environment" in result.stderr


def test_default_text_output_of_resolve():
    result = cli("resolve", "torch<2.9", *LINUX_3090)
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0] == "machine: linux-x86_64, Python 3.11, driver 535.104.05, NVIDIA GeForce RTX 3090 (sm_86)"
    assert lines[1] == "chosen: torch==2.8.0+cu128  (CUDA 12.8, cuDNN 9.10.2)"
    assert lines[2] == (
        "kernels: NVIDIA GeForce RTX 3090 (sm_86): the GPU has fp16 Tensor Cores, bf16, TF32 but not FP8, FP4; "
        "torch 2.8.0 gets bf16, TF32 matmul (opt-in), TF32 convolutions, SDPA flash, SDPA memory-efficient, SDPA cuDNN (opt-in) but not FP8 (fails)"
    )
    assert lines[3:5] == ["install:", "  pip install --index-url https://download.pytorch.org/whl/cu128 torch==2.8.0+cu128"]
    assert lines[5] == "why:" and lines[6].startswith("  - chose torch 2.8.0+cu128: the newest release matching 'torch<2.9'")


def test_default_text_output_of_detect(fake_smi):
    fake_smi("rtx3090-535")
    result = cli("detect", "--os", "linux", "--arch", "x86_64", "--python", "3.12")
    assert result.exit_code == 0, result.output
    assert "driver:  535" in result.stdout
    assert "gpu:     NVIDIA GeForce RTX 3090 (compute capability 8.6" in result.stdout
