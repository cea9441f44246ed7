"""--format constraints (issue 27): a pip/uv constraints file that holds the resolved set in place,
checked against pip's own resolver (and uv's, where uv is on PATH) on local wheels, and the held
set that `install --constrain` leaves in an environment, which doctor compares with what is
installed (DR034)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from packaging.requirements import Requirement

from cudafit.cli import main

LINUX_4090 = ["--os", "linux", "--arch", "x86_64", "--python", "3.12", "--gpu", "NVIDIA GeForce RTX 4090", "--driver", "580.65.06"]


def cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def constraints(*args: str) -> str:
    code, out, err = cli("resolve", *args, "--format", "constraints")
    assert code == 0, err
    return out


def held_lines(text: str) -> list[Requirement]:
    return [Requirement(line.split("  #")[0]) for line in text.splitlines() if line and not line.startswith("#")]


@pytest.mark.parametrize(
    "args",
    [
        ("torch", "torchvision"),
        ("torch", "tensorflow"),
        ("jax[cuda12]",),
        ("torch", "xformers"),
    ],
)
def test_every_line_is_a_name_and_a_version_pip_and_uv_accept(args):
    text = constraints(*args, *LINUX_4090)
    lines = held_lines(text)
    assert lines
    for requirement in lines:
        # pip refuses extras, URLs and markers in constraints; index options have no place there
        assert not requirement.extras and requirement.url is None and requirement.marker is None
        assert str(requirement.specifier)
    assert not any(line.startswith("-") for line in text.splitlines())
    assert all("  # " in line for line in text.splitlines() if line and not line.startswith("#"))  # each says why


def test_the_header_says_how_the_set_itself_is_installed():
    text = constraints("torch", *LINUX_4090)
    assert "export PIP_CONSTRAINT=THIS_FILE" in text
    assert "#   pip install --index-url https://download.pytorch.org/whl/cu" in text
    assert text.splitlines()[-1].startswith("torch==2.15.0+cu13")


def test_a_joint_answer_holds_the_nvidia_wheels_both_frameworks_need():
    text = constraints("torch", "tensorflow", *LINUX_4090)
    by_name = {r.name: r for r in held_lines(text)}
    assert str(by_name["torch"].specifier).startswith("==2.14.1+cu126")
    assert "nvidia-cudnn-cu12" in by_name
    assert "required by torch 2.14.1+cu126, tensorflow 2.21.0+cu12" in text


def test_jax_holds_jaxlib_and_the_plugins_its_extra_brings():
    names = {r.name: str(r.specifier) for r in held_lines(constraints("jax[cuda12]", *LINUX_4090))}
    assert names["jaxlib"] == names["jax"] == names["jax-cuda12-plugin"] == "==0.12.0.1"


def test_a_wheel_named_by_url_is_held_by_its_full_version():
    text = constraints("torch", "--jetpack", "6.2", "--python", "3.10")
    assert "torch==2.5.0a0+872d972e41.nv24.8.17622132  # installed from https://developer.download.nvidia.com/" in text


# --- pip's and uv's own resolvers, offline, on wheels made here ---------------------------------


def _wheel(folder: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> None:
    dist = f"{name}-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(f"Requires-Dist: {r}\n" for r in requires)
    with zipfile.ZipFile(folder / f"{name}-{version}-py3-none-any.whl", "w") as zf:
        zf.writestr(f"{dist}/METADATA", metadata)
        zf.writestr(f"{dist}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        zf.writestr(f"{dist}/RECORD", "")


@pytest.fixture
def index(tmp_path: Path) -> Path:
    """torch's cu126 build of 2.14.1 and a 2.15.0; a library whose newest release asks for
    torch>=2.15 (what a later `pip install some-lib` pulls in)."""
    folder = tmp_path / "wheels"
    folder.mkdir()
    _wheel(folder, "torch", "2.14.1+cu126")
    _wheel(folder, "torch", "2.15.0")
    _wheel(folder, "somelib", "1.0", ("torch>=2.0",))
    _wheel(folder, "somelib", "2.0", ("torch>=2.15",))
    return folder


def _pip_picks(index: Path, *args: str) -> dict[str, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-index", "--find-links", str(index),
         "--quiet", "--report", "-", "--disable-pip-version-check", *args],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return {item["metadata"]["name"]: item["metadata"]["version"] for item in json.loads(proc.stdout)["install"]}


def test_the_file_keeps_pips_resolver_from_moving_torch(index: Path, tmp_path: Path):
    held = tmp_path / "constraints.txt"
    held.write_text(constraints("torch==2.14.1", "--os", "linux", "--arch", "x86_64", "--python", "3.12", "--gpu", "NVIDIA GeForce RTX 3090", "--driver", "570.86.15"))
    assert "torch==2.14.1+cu126" in held.read_text()
    assert _pip_picks(index, "torch", "somelib")["torch"] == "2.15.0"  # without it, the library moves torch
    picked = _pip_picks(index, "-c", str(held), "torch", "somelib")
    assert picked == {"torch": "2.14.1+cu126", "somelib": "1.0"}


@pytest.mark.skipif(shutil.which("uv") is None, reason="uv is not on PATH")
def test_the_file_keeps_uvs_resolver_from_moving_torch(index: Path, tmp_path: Path):
    held = tmp_path / "constraints.txt"
    held.write_text(constraints("torch==2.14.1", "--os", "linux", "--arch", "x86_64", "--python", "3.12", "--gpu", "NVIDIA GeForce RTX 3090", "--driver", "570.86.15"))
    wanted = tmp_path / "requirements.in"
    wanted.write_text("torch\nsomelib\n")
    proc = subprocess.run(
        ["uv", "pip", "compile", "--no-index", "--find-links", str(index), "--python-version", "3.12", "--quiet", "-c", str(held), str(wanted)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "torch==2.14.1+cu126" in proc.stdout and "somelib==1.0" in proc.stdout


# --- install --constrain and doctor -------------------------------------------------------------


def _fake_env(tmp_path: Path, installs: str) -> Path:
    """An environment whose python 'installs' by creating the .dist-info folders pip would."""
    env = tmp_path / "env"
    site = env / "lib" / "python3.12" / "site-packages"
    site.mkdir(parents=True)
    (env / "bin").mkdir()
    script = env / "bin" / "python"
    script.write_text("#!/bin/sh\n" + "".join(f"{shutil.which('mkdir')} -p {site}/{d}.dist-info\n" for d in installs.split()))
    script.chmod(0o755)
    return env


def test_install_constrain_leaves_the_file_in_the_environment(tmp_path: Path, monkeypatch):
    env = _fake_env(tmp_path, "torch-2.8.0+cu128")
    monkeypatch.setenv("PATH", str(env / "bin"))
    args = ["--os", "linux", "--arch", "x86_64", "--gpu", "NVIDIA GeForce RTX 3090", "--driver", "570.86.15", "--env", str(env)]
    code, out, err = cli("install", "torch<2.9", *args, "--constrain")
    assert code == 0, err
    path = env / "cudafit-constraints.txt"
    assert f"held: {path}; keep the set in place with: export PIP_CONSTRAINT={path}" in out
    assert "torch==2.8.0+cu128" in path.read_text()
    code, out, _err = cli("install", "torch<2.9", *args, "--constrain", "--dry-run")
    assert f"# then write {path}" in out


def test_doctor_says_when_the_environment_moved_off_the_held_set(tmp_path: Path):
    env = tmp_path / "env"
    site = env / "lib" / "python3.12" / "site-packages"
    (site / "torch-2.15.0.dist-info").mkdir(parents=True)
    (site / "torch-2.15.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.15.0\n")
    (env / "bin").mkdir()
    (env / "bin" / "python").write_text("#!/bin/sh\nexit 1\n")
    (env / "bin" / "python").chmod(0o755)
    (env / "cudafit-constraints.txt").write_text(
        "# torch 2.8.0+cu128 ...; generated by cudafit\n"
        "# Install the set itself first (a constraint names versions, not where they come from):\n"
        "#   pip install --index-url https://download.pytorch.org/whl/cu128 torch==2.8.0+cu128\n"
        "torch==2.8.0+cu128  # the cu128 build cudafit chose\n"
        "nvidia-nccl-cu12==2.27.3  # required by torch 2.8.0+cu128\n"
    )
    code, out, _err = cli("doctor", "--json", "--env", str(env), "--os", "linux", "--python", "3.12", "--gpu", "NVIDIA GeForce RTX 3090", "--driver", "570.86.15")
    findings = [f for f in json.loads(out)["findings"] if f["code"] == "DR034"]
    assert [f["message"].split(":")[0] for f in findings] == ["torch", "nvidia-nccl-cu12"]
    assert "2.15.0 is installed" in findings[0]["message"] and "no longer installed" in findings[1]["message"]
    assert "pip install --index-url https://download.pytorch.org/whl/cu128 torch==2.8.0+cu128" in findings[0]["commands"]


# --- the last release line for a GPU ---------------------------------------------------------------

V100 = ["--os", "linux", "--arch", "x86_64", "--python", "3.12", "--gpu", "Tesla V100-SXM2-16GB", "--driver", "580.65.06"]


def test_a_gpu_newer_releases_dropped_is_told_its_last_release_line():
    code, out, _err = cli("resolve", "torch", *V100)
    assert code == 0
    assert "torch 2.14.x is the last release line with kernels for sm_70 (Tesla V100-SXM2-16GB): torch 2.15.0 and later carry none [SASS list measured]; pin torch<2.15" in out
    code, out, _err = cli("resolve", "torch", *V100, "--json")
    assert json.loads(out)["last_lines"] == [
        {"family": "torch", "gpu": "Tesla V100-SXM2-16GB", "arch": "sm_70", "last": "2.14.1", "dropped": "2.15.0", "spec": "torch<2.15", "evidence": "SASS list measured", "cause": "kernels"}
    ]


@pytest.mark.parametrize(
    "gpu, driver, spec, said",
    [
        ("NVIDIA GeForce GTX 1080", "580.65.06", "torch", "torch 2.14.x is the last release line with kernels for sm_61"),
        ("Tesla K80", "470.82.01", "tensorflow", "tensorflow 2.14.x is the last release line with kernels for sm_37"),
        ("Tesla K80", "470.82.01", "torch", "torch 2.7.x is the last release line with kernels for sm_37"),
    ],
)
def test_old_gpus_get_their_last_line(gpu, driver, spec, said):
    code, out, _err = cli("resolve", spec, "--os", "linux", "--arch", "x86_64", "--python", "3.10", "--gpu", gpu, "--driver", driver)
    assert code == 0 and said in out


def test_releases_that_need_a_driver_past_the_gpus_last_branch_end_its_line():
    """The driver side: were R570 Turing's last branch, torch's CUDA 13 builds (R580 and up) would
    never load on a T4, whatever their kernels; the data says Turing has no last branch yet, so
    the test moves it."""
    from cudafit import last_line
    from cudafit.loader import load
    from cudafit.machine import MachineOptions, build_machine

    matrices = load()
    moved = tuple(a._replace(last_driver="570") if a.name == "Turing" else a for a in matrices.architectures)
    machine = build_machine(MachineOptions(os="linux", arch="x86_64", python="3.12", gpus=("Tesla T4",), driver="570.86.15"), matrices)
    (last,) = last_line.last_lines(machine, matrices._replace(architectures=moved), [("torch", matrices.frameworks["torch"])])
    assert (last.last, last.dropped, last.bound, last.cause) == ("2.14.1", "2.15.0", "<2.15", "driver")
    assert "past Turing's last branch R570" in last.evidence and last.reach.startswith("that a driver for sm_75")
    assert last_line.last_lines(machine, matrices, [("torch", matrices.frameworks["torch"])]) == ()


def test_a_gpu_the_newest_release_runs_gets_no_last_line():
    code, out, _err = cli("resolve", "torch", *LINUX_4090, "--json")
    assert "last_lines" not in json.loads(out)


def test_constraints_and_uv_projects_carry_the_bound(index: Path, tmp_path: Path):
    text = constraints("torch", *V100)
    assert "torch<2.15  # torch 2.14.x is the last release line with kernels for sm_70" in text
    held = tmp_path / "constraints.txt"
    held.write_text(text)
    # pip takes both lines of one name: the exact build and the bound
    assert _pip_picks(index, "-c", str(held), "torch", "somelib") == {"torch": "2.14.1+cu126", "somelib": "1.0"}
    code, out, _err = cli("resolve", "torch", *V100, "--format", "uv-project")
    assert code == 0 and 'constraint-dependencies = [\n    "torch<2.15",\n]' in out


def test_check_says_a_spec_admits_the_releases_that_dropped_a_targets_gpu(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the targets are the project's own (its pyproject.toml is the config)
    project = tmp_path / "pyproject.toml"
    project.write_text(
        '[project]\nname = "demo"\nversion = "0.1"\nrequires-python = ">=3.10"\ndependencies = ["torch>=2.4"]\n\n'
        '[[tool.cudafit.targets]]\nname = "v100"\ngpu = "Tesla V100-SXM2-16GB"\ndriver = "580.65.06"\n\n'
        '[[tool.cudafit.targets]]\nname = "a100"\ngpu = "NVIDIA A100-SXM4-80GB"\ndriver = "580.65.06"\n'
    )
    code, out, _err = cli("check", str(project))
    assert code == 1
    findings = [line for line in out.splitlines() if "CF018" in line]
    assert len(findings) == 1 and "target 'v100'" in findings[0] and "torch 2.14.x is its last release line" in findings[0]
    code, _out, _err = cli("check", "--fix", str(project))
    assert '"torch>=2.4,<2.15"' in project.read_text()
    code, out, _err = cli("check", str(project))
    assert "CF018" not in out


def test_an_amd_gpu_newer_rocm_builds_dropped_is_told_its_last_line():
    code, out, _err = cli("resolve", "torch", "--os", "linux", "--arch", "x86_64", "--python", "3.12", "--gpu", "AMD Radeon VII", "--json")
    (last,) = json.loads(out)["last_lines"]
    assert (last["arch"], last["last"], last["spec"]) == ("gfx906", "2.9.1", "torch<2.10")
    assert "rocBLAS gaps reported" in last["evidence"]
