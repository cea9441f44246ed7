"""`install` installs into an environment on this machine: it resolves for that environment's
Python and this machine's OS and arch, and uses the installer asked for (issue 7, item 5)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudafit.cli import main
from cudafit.errors import InputError
from cudafit.installer import Target, check_description, plan
from cudafit.machine import MachineOptions, build_machine
from cudafit.records import Policy
from cudafit.resolution import resolve


def _never_read(*args, **kwargs):
    raise AssertionError("a machine described whole read this machine's driver")

TARGET = Target("/envs/x/bin/python", Path("/envs/x"))


@pytest.mark.parametrize("python, os_name, arch, message", [
    ("3.9", None, None, "--python 3.9: the target environment (/envs/x) runs Python 3.11"),
    (None, "windows", None, "os 'windows': install runs on this machine (linux)"),
    (None, "macos", None, "os 'macos': install runs on this machine (linux)"),
    (None, None, "aarch64", "arch 'aarch64': install runs on this machine (x86_64)"),
])
def test_a_description_of_another_machine_is_refused(python, os_name, arch, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_description(TARGET, "3.11", python, os_name, arch, "linux", "x86_64")


def test_the_environment_python_is_taken():
    assert check_description(TARGET, "3.11", None, None, None, "linux", "x86_64") == "3.11"
    assert check_description(TARGET, "3.11", "3.11", "linux", "x86_64", "linux", "x86_64") == "3.11"
    assert check_description(TARGET, None, "3.12", None, None, "linux", "x86_64") == "3.12"  # could not ask it
    assert check_description(TARGET, "3.11", None, "linux", None, "wsl", "x86_64") == "3.11"  # WSL is Linux


def _res(matrices):
    machine = build_machine(MachineOptions(driver="535.104.05", gpus=("NVIDIA GeForce RTX 3090",), os="linux",
                                           arch="x86_64", python="3.12"), matrices, reader=_never_read)
    return resolve(["torch<2.9"], machine, matrices, Policy())


def test_the_format_names_the_installer(matrices):
    res = _res(matrices)
    with_uv = lambda name: f"/usr/bin/{name}" if name == "uv" else None  # noqa: E731
    assert plan(res, TARGET, installer="pip", which=with_uv)[0][:3] == ["/envs/x/bin/python", "-m", "pip"]
    assert plan(res, TARGET, installer="uv", which=with_uv)[0][:2] == ["/usr/bin/uv", "pip"]
    assert plan(res, TARGET, which=with_uv)[0][:2] == ["/usr/bin/uv", "pip"]  # default: uv where present
    with pytest.raises(InputError, match="format 'uv': uv is not on PATH"):
        plan(res, TARGET, installer="uv", which=lambda name: None)


def test_conda_format_needs_a_conda_environment(matrices, tmp_path):
    venv = Target(str(tmp_path / "bin" / "python"), tmp_path)
    with pytest.raises(InputError, match="is not a conda environment"):
        plan(_res(matrices), venv, conda=True, dry_run=True, which=lambda name: None)
    (tmp_path / "conda-meta").mkdir()
    assert plan(_res(matrices), venv, conda=True, dry_run=True, which=lambda name: None)


def test_install_refuses_another_os_on_the_command_line():
    result = CliRunner().invoke(main, ["install", "torch", "--os", "windows" if sys.platform != "win32" else "linux",
                                       "--env", sys.executable, "--dry-run", "--driver", "566.36"])
    assert result.exit_code == 2
    assert "install runs on this machine" in result.stderr


def test_install_states_what_the_answer_assumed(tmp_path):
    import venv

    env = tmp_path / "env"
    venv.create(env, with_pip=False)
    result = CliRunner().invoke(main, ["install", "torch", "--env", str(env), "--dry-run", "--format", "pip",
                                       "--gpu", "NVIDIA GeForce RTX 3090"])
    assert result.exit_code == 0, result.output
    assert "cudafit: note: the driver is unknown" in result.stderr
    assert "cudafit: warning: driver not given" in result.stderr


def test_a_launcher_outside_an_environment_is_asked_for_its_prefix(tmp_path, monkeypatch):
    from cudafit import detection as detect

    shims = tmp_path / "shims"
    shims.mkdir()
    shim = shims / "python"
    shim.write_text(f"#!/bin/sh\nexec {sys.executable} \"$@\"\n")
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", str(shims))
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    monkeypatch.delenv("CONDA_PREFIX", raising=False)
    assert detect.target_prefix() == Path(sys.prefix)


def test_install_conda_route_into_a_conda_environment(tmp_path, monkeypatch):
    """torch 2.5 and older had CUDA builds on the pytorch channel: --format conda installs them
    with conda into a conda environment (conda-meta marks one)."""
    env = tmp_path / "conda-env"
    (env / "bin").mkdir(parents=True)
    (env / "conda-meta").mkdir()
    python = env / "bin" / "python"
    python.write_text(f"#!/bin/sh\nexec {sys.executable} \"$@\"\n")
    python.chmod(0o755)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    conda = bindir / "conda"
    conda.write_text("#!/bin/sh\nexit 0\n")
    conda.chmod(0o755)
    monkeypatch.setenv("PATH", str(bindir))
    result = CliRunner().invoke(main, ["install", "torch<2.6", "--env", str(env), "--dry-run", "--format", "conda",
                                       "--driver", "550.54.15", "--gpu", "NVIDIA GeForce RTX 4090"])
    assert result.exit_code == 0, result.output
    first = result.stdout.splitlines()[0]
    assert first.startswith(f"{conda} install -y -p {env} pytorch==2.5.1 ") and "pytorch-cuda=12.4 -c pytorch -c nvidia" in first


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX shell script stands in for the environment's Python")
def test_a_failing_install_command_is_exit_1_and_says_so(tmp_path):
    env = tmp_path / "env"
    (env / "bin").mkdir(parents=True)
    python = env / "bin" / "python"
    # answers the Python-version probe as a real interpreter would, then fails the install as pip does
    python.write_text(f"#!/bin/sh\nif [ \"$1\" = -c ]; then exec {sys.executable} \"$@\"; fi\nexit 3\n")
    python.chmod(0o755)
    result = CliRunner().invoke(main, ["install", "torch", "--env", str(env), "--format", "pip", "--driver", "580.95.05",
                                       "--gpu", "NVIDIA GeForce RTX 3090"])
    assert result.exit_code == 1, result.output
    assert "cudafit: the install command failed (exit 3)" in result.stderr and "Traceback" not in result.stderr
