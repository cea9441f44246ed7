"""What `-o` may write over, the one-line error form of every usage error, --version, and the
names that go into conda and uv-project output (issue 7, items 1, 2, 9, 13 and 16)."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudafit import __version__, fileio
from cudafit.cli import main
from cudafit.errors import InputError

LINUX_3090 = ["--os", "linux", "--arch", "x86_64", "--python", "3.11", "--driver", "535.104.05",
              "--gpu", "NVIDIA GeForce RTX 3090"]
RESOLVE = ["resolve", "torch<2.9", *LINUX_3090]
PIP_LINE = "pip install --index-url https://download.pytorch.org/whl/cu128 torch==2.8.0+cu128\n"


def cli(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def one_error_line(result) -> str:
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("cudafit: error: ") and "Traceback" not in result.stderr
    return lines[0]


# -- item 1: -o never destroys what is not a regular file ------------------------------------

def _is_char_device(path: str) -> bool:
    return stat.S_ISCHR(os.stat(path).st_mode)


@pytest.fixture
def no_rename_into_dev(monkeypatch):
    """The suite runs as root in CI: a regression here must fail the test, not replace /dev/null
    with a file (which is what the code before the fix did)."""
    real = os.replace

    def replace(src, dst, *args, **kwargs):
        if os.path.abspath(os.fspath(dst)).startswith("/dev/"):
            raise AssertionError(f"renamed a file over {dst}")
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", replace)


def test_output_into_fifo_is_written_straight(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()), daemon=True)
    reader.start()
    result = cli(*RESOLVE, "--format", "pip", "-o", str(fifo))
    reader.join(timeout=20)
    assert result.exit_code == 0, result.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert got == [PIP_LINE]


def test_output_into_dev_null_keeps_the_device(no_rename_into_dev):
    result = cli(*RESOLVE, "--format", "pip", "-o", "/dev/null")
    assert result.exit_code == 0, result.stderr
    assert _is_char_device("/dev/null")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
def test_write_error_is_exit_2_naming_the_path(no_rename_into_dev):
    result = cli(*RESOLVE, "--format", "pip", "-o", "/dev/full")
    assert result.exit_code == 2
    line = one_error_line(result)
    assert "/dev/full" in line and "No space left" in line and "wrote" not in result.stderr
    assert _is_char_device("/dev/full")


def _socket(tmp_path: Path) -> Path:
    path = tmp_path / "sock"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    sock.close()
    return path


def _dir_link(tmp_path: Path) -> Path:
    (tmp_path / "d").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "d")
    return tmp_path / "link"


@pytest.mark.parametrize("make, kind", [
    (lambda tmp: tmp, "a directory"),
    (_dir_link, "a directory"),
    (_socket, "a socket"),
])
def test_output_refuses_what_is_not_a_file(tmp_path, make, kind):
    target = make(tmp_path)
    before = target.lstat()
    result = cli(*RESOLVE, "--format", "pip", "-o", str(target))
    assert result.exit_code == 2
    line = one_error_line(result)
    assert str(target) in line and kind in line
    after = target.lstat()
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)


def test_output_dash_is_stdout(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = cli(*RESOLVE, "--format", "pip", "-o", "-")
    assert result.exit_code == 0 and result.stdout == PIP_LINE
    assert not (tmp_path / "-").exists() and "wrote" not in result.stderr


def test_output_through_symlink_replaces_the_file_not_the_link(tmp_path):
    real = tmp_path / "real.txt"
    real.write_text("old\n")
    real.chmod(0o640)
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    assert cli(*RESOLVE, "--format", "pip", "-o", str(link)).exit_code == 0
    assert link.is_symlink() and real.read_text() == PIP_LINE
    assert stat.S_IMODE(real.stat().st_mode) == 0o640


def test_uv_project_does_not_read_a_fifo(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    # reading a FIFO to merge with would block until someone writes into it
    assert fileio.read_existing(fifo) is None
    assert fileio.read_existing(tmp_path / "new.toml") is None
    with pytest.raises(InputError, match="a directory"):
        fileio.read_existing(tmp_path)


# -- item 2: --json -o, and --format with --json --------------------------------------------

def test_json_output_file(tmp_path):
    out = tmp_path / "answer.json"
    result = cli(*RESOLVE, "--json", "-o", str(out))
    assert result.exit_code == 0, result.stderr
    assert json.loads(out.read_text())["packages"][0]["requirement"] == "torch==2.8.0+cu128"
    assert result.stdout == ""


def test_json_output_file_without_a_solution_is_exit_1(tmp_path):
    out = tmp_path / "answer.json"
    result = cli("resolve", "torch<2", "torch>3", *LINUX_3090, "--json", "-o", str(out))
    assert result.exit_code == 1
    assert json.loads(out.read_text())["ok"] is False


@pytest.mark.parametrize("args, needle", [
    (["--format", "pip", "--json"], "--format and --json"),
    (["-o", "x.txt"], "-o/--output"),
])
def test_output_options_that_do_not_combine(tmp_path, monkeypatch, args, needle):
    monkeypatch.chdir(tmp_path)
    result = cli(*RESOLVE, *args)
    assert result.exit_code == 2 and needle in one_error_line(result)
    assert result.stdout == "" and not (tmp_path / "x.txt").exists()


# -- item 9: click's usage errors in the contract's form; Ctrl-C ------------------------------

@pytest.mark.parametrize("args, needle", [
    (["resolve", "--format", "yaml"], "invalid value for '--format': 'yaml' is not one of"),
    (["data", "check", "--dir", "/nonexistent"], "'/nonexistent' does not exist"),
    (["resolve", "--bogus"], "no such option"),
    (["resolve", "--why"], "option '--why' requires an argument"),
    (["no-such-command"], "no such command 'no-such-command'"),
    (["data", "coverage", "--framework", "pytorch"], "invalid value for '--framework'"),
])
def test_usage_error_is_one_line_exit_2(args, needle):
    result = cli(*args)
    assert result.exit_code == 2
    assert needle in one_error_line(result).lower()
    assert result.stdout == ""


def test_usage_error_through_the_real_entry_point():
    proc = subprocess.run([sys.executable, "-m", "cudafit", "resolve", "--format", "yaml"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [proc.stderr.strip()] and proc.stderr.startswith("cudafit: error: Invalid value")
    assert "'cudafit resolve --help'" in proc.stderr


def test_ctrl_c_is_exit_130_without_traceback(monkeypatch):
    def interrupted():
        raise KeyboardInterrupt

    monkeypatch.setattr("cudafit.cli.resolve.load_matrices", interrupted)
    result = cli(*RESOLVE)
    assert result.exit_code == 130
    assert "Traceback" not in result.stderr and len([x for x in result.stderr.splitlines() if x.strip()]) <= 1


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["resolve", "--help"], ["data", "check", "--help"]])
def test_help_still_exit_0(args):
    result = cli(*args)
    assert result.exit_code == 0 and "Usage:" in result.stdout


# -- item 13: --version, -V, and help about all of cudafit -----------------------------------

@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version(flag):
    result = cli(flag)
    assert result.exit_code == 0 and result.stdout == f"cudafit {__version__}\n"


def test_top_level_help_covers_all_frameworks():
    text = cli("--help").stdout
    assert all(word in text for word in ("PyTorch", "TensorFlow", "JAX", "data"))


# -- item 16: environment and project names ------------------------------------------------

BAD_CONDA = ["bad name/with slash", "a:b", "a#b", "a\\b", "base", "root", "", "two\nlines"]


@pytest.mark.parametrize("fmt", ["conda", "environment.yml"])
@pytest.mark.parametrize("name", BAD_CONDA)
def test_bad_conda_name_is_exit_2(fmt, name):
    result = cli(*RESOLVE, "--format", fmt, "--name", name)
    assert result.exit_code == 2 and result.stdout == ""
    assert repr(name) in one_error_line(result)


@pytest.mark.parametrize("name", ["bad name", "-x", "x-", "a/b", "", "x==1", "x[y]"])
def test_bad_project_name_is_exit_2(name):
    result = cli(*RESOLVE, "--format", "uv-project", "--name", name)
    assert result.exit_code == 2 and result.stdout == ""
    assert repr(name) in one_error_line(result)


@pytest.mark.parametrize("fmt", ["conda", "environment.yml", "uv-project"])
def test_good_name_is_used(fmt):
    result = cli(*RESOLVE, "--format", fmt, "--name", "ml-env_2.8")
    assert result.exit_code == 0, result.stderr
    assert "ml-env_2.8" in result.stdout


def test_conda_commands_quote_the_name():
    # conda allows ';' and '$' in a name; the printed commands must not hand them to the shell.
    out = cli(*RESOLVE, "--format", "conda", "--name", "a;b").stdout
    assert "conda create -n 'a;b'" in out and "conda activate 'a;b'" in out


def test_environment_yml_quotes_a_name_yaml_would_misread():
    out = cli(*RESOLVE, "--format", "environment.yml", "--name", "yes").stdout
    assert 'name: "yes"\n' in out


def test_dev_stdout_redirected_to_a_file_keeps_what_came_before(tmp_path):
    """-o /dev/stdout writes through the inherited descriptor: a redirected file keeps the lines
    around it, in order (opening the path anew would truncate it or interleave the writes)."""
    import subprocess
    import sys

    out = tmp_path / "out.txt"
    cmd = (f'{{ echo before; "{sys.executable}" -m cudafit resolve "torch<2.9" --os linux --arch x86_64 --python 3.11 '
           f'--driver 535.104.05 --gpu "NVIDIA GeForce RTX 3090" --format pip -o /dev/stdout; echo after; }} > "{out}"')
    proc = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert out.read_text().splitlines() == [
        "before", "pip install --index-url https://download.pytorch.org/whl/cu128 torch==2.8.0+cu128", "after"]


def test_conda_name_starting_with_a_dash_is_refused():
    from click.testing import CliRunner

    from cudafit.cli import main

    result = CliRunner().invoke(main, ["resolve", "torch", "--os", "linux", "--arch", "x86_64", "--python", "3.12",
                                       "--driver", "none", "--format", "conda", "--name", "-flag"])
    assert result.exit_code == 2
    assert "starts with '-'" in result.stderr


def test_run_takes_argv_and_returns_the_exit_code(capsys):
    from cudafit.cli import run

    machine = ["--os", "linux", "--arch", "x86_64", "--python", "3.12", "--driver", "535.104.05",
               "--gpu", "NVIDIA GeForce RTX 3090"]
    assert run(["resolve", "torch", *machine, "--format", "pip"]) == 0
    assert capsys.readouterr().out.startswith("pip install --index-url https://download.pytorch.org/whl/cu126 ")
    assert run(["resolve", "torch==9.9", *machine]) == 1
    capsys.readouterr()
    assert run(["resolve", "--format", "yaml"]) == 2
    assert run(["resolve", "torch", "--os", "solaris"]) == 2
    err = capsys.readouterr().err
    assert err.count("cudafit: error:") == 2 and "Traceback" not in err
    assert run(["--version"]) == 0


def test_the_program_ends_with_the_commands_code_and_all_its_output():
    """The program ends the process without the interpreter's teardown: what a command printed is
    flushed first, and the exit code is the command's (1: no answer), through a pipe."""
    machine = ["--os", "linux", "--arch", "x86_64", "--python", "3.12", "--driver", "535.104.05", "--gpu", "NVIDIA GeForce RTX 3090"]
    proc = subprocess.run([sys.executable, "-m", "cudafit", "resolve", "torch==9.9", "tensorflow", "jax", *machine, "--json"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    answer = json.loads(proc.stdout)
    assert answer["ok"] is False and answer["machine"]["driver"] == "535.104.05"
    proc = subprocess.run([sys.executable, "-m", "cudafit", "gpus"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.count("\n") > 100 and "RTX 3090" in proc.stdout


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_output_that_cannot_be_written_is_one_line_and_exit_2():
    """A full disk under standard output is said as -o FILE says it; a closed descriptor (`>&-`)
    drops the output and keeps the command's exit code."""
    machine = "--os linux --arch x86_64 --python 3.12 --driver 535.104.05 --gpu 'NVIDIA GeForce RTX 3090'"
    for output in ("--json", "--format pip", ""):
        proc = subprocess.run(["bash", "-c", f'"{sys.executable}" -m cudafit resolve torch {machine} {output} > /dev/full'],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2, (output, proc.stderr)
        assert proc.stderr.splitlines() == ["cudafit: error: cannot write the output: No space left on device"]
    for closed, code in (("resolve torch " + machine, 0), ("resolve torch==9.9 " + machine, 1), ("resolve torch --driver abc", 2)):
        proc = subprocess.run(["bash", "-c", f'"{sys.executable}" -m cudafit {closed} >&- 2>&-'], capture_output=True, text=True, timeout=60)
        assert proc.returncode == code and proc.stdout == proc.stderr == "", (closed, proc)


def test_the_program_flushes_what_is_still_buffered(tmp_path):
    """Output that sits in Python's buffer when a command returns (here: a print before it, with a
    command that writes only a file) is flushed before the process ends without teardown."""
    out = tmp_path / "pip.txt"
    argv = ["cudafit", "resolve", "torch", "--os", "linux", "--arch", "x86_64", "--python", "3.12", "--driver", "535.104.05",
            "--gpu", "NVIDIA GeForce RTX 3090", "--format", "pip", "-o", str(out)]
    code = f"import sys; sys.argv = {argv!r}; print('buffered', end=''); from cudafit.__main__ import main; main()"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "buffered" and out.read_text().startswith("pip install")
