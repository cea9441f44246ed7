"""`cudafit check --resolve`: each environment asked of uv (CF016). uv is faked by a script that
answers as uv 0.13.9 answered for these files (its words, from tests/corpus/uv_verdicts.json), so
the tests never touch the network."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest
from test_check import check

from cudafit.check.resolve import reason_of

# What uv 0.13.9 printed for HunyuanVideo's requirements.txt on linux-aarch64 (recorded 2026-12-02).
REFUSED = """\
error: No solution found when resolving dependencies
  cause: Because opencv-python==4.9.0.80 depends on numpy>=1.26.0 and you require opencv-python==4.9.0.80, we can conclude that you require numpy>=1.26.0.
         And because you require numpy==1.24.4, we can conclude that your requirements are unsatisfiable.
"""
UNREACHABLE = "error: Request failed after 3 retries\n  Caused by: Failed to fetch: `https://pypi.org/simple/numpy/`\n  Caused by: dns error\n"

FAKE_UV = """\
#!{python}
import json, os, sys
args = sys.argv[1:]
with open({log!r}, "a") as log:
    log.write(json.dumps({{"args": args, "macos": os.environ.get("MACOSX_DEPLOYMENT_TARGET")}}) + "\\n")
platform = args[args.index("--python-platform") + 1]
if "aarch64-manylinux" in platform:
    sys.stderr.write({refused!r})
    sys.exit(1)
if "windows" in platform:
    sys.stderr.write({unreachable!r})
    sys.exit(2)
print("numpy==1.26.4")
"""


@pytest.fixture
def fake_uv(tmp_path, monkeypatch):
    log = tmp_path / "uv-calls.jsonl"
    script = tmp_path / "bin" / "uv"
    script.parent.mkdir()
    script.write_text(FAKE_UV.format(python=sys.executable, log=str(log), refused=REFUSED, unreachable=UNREACHABLE))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("CUDAFIT_UV", str(script))
    return log


def run(tmp_path, files, *args):
    return check(tmp_path / "w", files, *args)  # fake_uv's log lives beside the files' folder


def calls(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_an_environment_uv_refuses_is_cf016_with_uvs_reason_where_the_pin_is_written(tmp_path, fake_uv):
    result = run(tmp_path, {"requirements.txt": "opencv-python==4.9.0.80\nnumpy==1.24.4\n"}, "--resolve", "--output-format", "json")
    found = json.loads(result.stdout)
    refused = [f for f in found if f["code"] == "CF016"]
    assert [(f["line"], f["environments"], f["severity"]) for f in refused] == [(1, "linux-aarch64", "error")]
    assert "numpy==1.24.4" in refused[0]["message"] and "No solution" not in refused[0]["message"]
    # where uv could not answer (an index it cannot reach): a note, which fails nothing
    assert [(f["code"], f["severity"], f["environments"]) for f in found if f["code"] == "CF013"] == [("CF013", "note", "windows-x86_64")]
    assert result.exit_code == 1
    asked = calls(fake_uv)
    assert {c["macos"] for c in asked} == {"14.0"}
    assert all(c["args"][:3] == ["pip", "compile", "requirements.txt"] for c in asked)
    # the file names no Python: the refusal stands once no other Python installs it either
    pythons = [c["args"][c["args"].index("--python-version") + 1] for c in asked if "aarch64-manylinux_2_34" in c["args"]]
    assert pythons == ["3.12", "3.13", "3.11", "3.10", "3.9"] and len(asked) == 3 + len(pythons)


def test_a_file_whose_requires_python_admits_the_python_asked_is_not_asked_of_others(tmp_path, fake_uv):
    """requires-python names the Pythons the project claims: a refusal on one of them stands (CF016)."""
    text = '[project]\nname = "a"\nversion = "1"\nrequires-python = ">=3.10"\ndependencies = ["opencv-python==4.9.0.80", "numpy==1.24.4"]\n'
    result = run(tmp_path, {"pyproject.toml": text}, "--resolve", "--output-format", "json")
    said = sorted((f["code"], f["environments"]) for f in json.loads(result.stdout) if f["code"] in ("CF016", "CF013"))
    assert said == [("CF013", "windows-x86_64"), ("CF016", "linux-aarch64")]
    asked = [c for c in calls(fake_uv) if "aarch64-manylinux_2_34" in c["args"]]
    assert [c["args"][c["args"].index("--python-version") + 1] for c in asked] == ["3.12"]


# What uv says of HunyuanVideo's pins by Python: opencv-python 4.9.0.80 asks numpy>=1.26 on 3.12
# only, so Python 3.11 installs the file (uv 0.13.9, tests/corpus/uv_verdicts.json `other_pythons`).
BY_PYTHON_UV = """\
#!{python}
import sys
args = sys.argv[1:]
if args[args.index("--python-version") + 1] in ("3.12", "3.13"):
    sys.stderr.write({refused!r})
    sys.exit(1)
print("numpy==1.24.4")
"""


def test_a_file_that_names_no_python_and_installs_on_another_is_a_note(tmp_path, monkeypatch):
    script = tmp_path / "bin" / "uv"
    script.parent.mkdir()
    script.write_text(BY_PYTHON_UV.format(python=sys.executable, refused=REFUSED))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("CUDAFIT_UV", str(script))
    text = "opencv-python==4.9.0.80\nnumpy==1.24.4\n"
    result = run(tmp_path, {"requirements.txt": text}, "--resolve", "--output-format", "json")
    found = [(f["code"], f["severity"]) for f in json.loads(result.stdout)]
    assert found == [("CF013", "note")] and result.exit_code == 0
    assert "with Python 3.12 and does with Python 3.11" in json.loads(result.stdout)[0]["message"]
    # a file that states its Python is held to it: an error there
    pyproject = '[project]\nname = "a"\nversion = "1"\nrequires-python = ">=3.12"\ndependencies = ["opencv-python==4.9.0.80", "numpy==1.24.4"]\n'
    result = run(tmp_path / "p", {"pyproject.toml": pyproject}, "--resolve", "--output-format", "json")
    assert {(f["code"], f["severity"]) for f in json.loads(result.stdout)} == {("CF016", "error")}


def test_each_extra_is_asked_with_the_python_the_file_admits(tmp_path, fake_uv):
    text = '[project]\nname = "a"\nversion = "1"\nrequires-python = ">=3.11,<3.12"\ndependencies = ["numpy"]\n[project.optional-dependencies]\ncv = ["opencv-python"]\n'
    run(tmp_path, {"pyproject.toml": text}, "--resolve")
    asked = calls(fake_uv)
    assert {tuple(c["args"][c["args"].index("--python-version") + 1 :][:1]) for c in asked} == {("3.11",)}
    assert sum("--extra" in c["args"] for c in asked) == 4 and len(asked) == 8
    # uv is handed an interpreter to build with: without one it looks for a python3.11 alone, and
    # on a machine without one it downloads it (offline: answers nothing)
    assert {os.path.exists(c["args"][c["args"].index("--python") + 1]) for c in asked} == {True}


def test_the_interpreter_uv_builds_with_is_one_of_that_minor_that_runs_else_cudafits_own(tmp_path, monkeypatch):
    from cudafit.check import resolve

    # minors no test run uses (cudafit runs on 3.10+): the running one is always its own
    works, shim = tmp_path / "python3.9", tmp_path / "python3.8"
    works.write_text("#!/bin/sh\nexit 0\n")
    # a pyenv shim of a version not selected: on PATH, and it fails (as pyenv's do, with 127)
    shim.write_text("#!/bin/sh\necho 'pyenv: python3.8: command not found' >&2\nexit 127\n")
    for script in (works, shim):
        script.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    resolve.interpreter.cache_clear()
    try:
        assert resolve.interpreter("3.9") == str(works)
        assert resolve.interpreter("3.8") == sys.executable
        assert resolve.interpreter("3.7") == sys.executable  # none on PATH
    finally:
        resolve.interpreter.cache_clear()


def test_uv_offline_counting_a_missing_cache_entry_as_no_solution_is_not_a_verdict(tmp_path, monkeypatch):
    import subprocess

    from cudafit.check import resolve
    from cudafit.check.environments import Environment

    for said in (
        "error: No solution found when resolving dependencies:\n  Because jiter>=0.4.0 needs to be downloaded from a registry and openai==1.99.1 depends on jiter>=0.4.0, we can conclude ...\n",
        # uv 0.13.9 offline with an empty cache
        "error: No solution found when resolving dependencies:\n  Because torch was not found in the cache and you require torch==2.5.1, we can conclude ...\n"
        "  hint: Packages were unavailable because the network was disabled.\n",
    ):
        monkeypatch.setattr(resolve.subprocess, "run", lambda *a, said=said, **k: subprocess.CompletedProcess(a, 1, "", said))
        answer = resolve.ask("uv", tmp_path / "requirements.txt", Environment("linux-x86_64", None, ""), "3.12")
        assert answer.state == resolve.UNKNOWN


def test_an_environment_with_an_offline_error_is_not_asked_again(tmp_path, fake_uv):
    """onnxruntime-gpu 1.22.0 has no wheel on linux-aarch64 or macOS (CF015): uv is asked elsewhere only."""
    result = run(tmp_path, {"requirements.txt": "onnxruntime-gpu==1.22.0\n"}, "--resolve")
    platforms = sorted(c["args"][c["args"].index("--python-platform") + 1] for c in calls(fake_uv))
    assert platforms == ["x86_64-manylinux_2_34", "x86_64-pc-windows-msvc"]
    assert "CF015" in result.stdout and "CF016" not in result.stdout


def test_resolve_from_the_projects_settings_and_without_uv(tmp_path, fake_uv, monkeypatch):
    files = {"pyproject.toml": '[project]\nname = "a"\nversion = "1"\ndependencies = ["numpy"]\n[tool.cudafit]\nresolve = true\n'}
    run(tmp_path / "a", files)
    assert calls(fake_uv)
    wrong = {"pyproject.toml": files["pyproject.toml"].replace("resolve = true", 'resolve = "yes"')}
    result = run(tmp_path / "b", wrong)
    assert result.exit_code == 2 and "[tool.cudafit] resolve: expected true or false" in result.output
    monkeypatch.setenv("CUDAFIT_UV", str(tmp_path / "no-such-uv"))
    result = run(tmp_path / "c", {"requirements.txt": "numpy\n"}, "--resolve")
    assert result.exit_code == 2 and "--resolve asks uv" in result.output and "Traceback" not in result.output


def test_without_resolve_uv_is_never_run(tmp_path, fake_uv):
    run(tmp_path, {"requirements.txt": "numpy==1.24.4\n"})
    assert calls(fake_uv) == []


def test_each_file_uv_is_asked_about_is_told_before_it_is_asked(tmp_path, fake_uv, monkeypatch):
    """A folder takes seconds per file with --resolve: on a terminal the CLI names each one as uv
    is asked (stderr), and pipes get only the findings."""
    from cudafit.check.resolve import find_uv
    from cudafit.check.runner import Settings, check_paths
    from cudafit.cli import check as cli_check
    from cudafit.loader import load

    folder = tmp_path / "w"
    folder.mkdir()
    for name in ("requirements.txt", "requirements-dev.txt"):
        (folder / name).write_text("numpy==1.26.4\n")
    told: list[str] = []
    check_paths([folder], load(), Settings(resolve=True, uv=find_uv()), (), lambda path: told.append(path.name))
    assert sorted(told) == ["requirements-dev.txt", "requirements.txt"]
    told.clear()
    check_paths([folder], load(), Settings(), (), lambda path: told.append(path.name))
    assert told == []  # without --resolve nothing is asked
    said: list[str] = []
    monkeypatch.setattr(cli_check.click, "echo", lambda text, err=False, **_kw: said.append(text) if err else None)
    cli_check._asking(folder / "requirements.txt")
    assert said == [f"cudafit: asking uv about {folder / 'requirements.txt'}"]


def test_uvs_reason_in_one_line_the_same_on_every_platform():
    aarch64 = "error: No solution found when resolving dependencies\n  cause: Because bitsandbytes==0.45.0 has no wheels with a matching platform tag (e.g., `manylinux_2_34_aarch64`) and you require bitsandbytes==0.45.0, we can conclude that your requirements are unsatisfiable.\n\n  hint: Wheels are available for `bitsandbytes` (v0.45.0) on the following platforms: `manylinux_2_24_x86_64`, `win_amd64`\n"
    macos = aarch64.replace("manylinux_2_34_aarch64", "macosx_14_0_arm64")
    assert reason_of(aarch64) == reason_of(macos)
    assert reason_of(aarch64).startswith("Because bitsandbytes==0.45.0 has no wheels with a matching platform tag and you require")
    assert "hint" not in reason_of(aarch64)


def test_uv_beside_cudafits_python_is_found_without_path(tmp_path, monkeypatch):
    # a venv run by its path (/opt/venv/bin/cudafit), not activated: its uv is not on PATH
    from cudafit.check.resolve import find_uv

    uv = tmp_path / "bin" / "uv"
    uv.parent.mkdir()
    uv.write_text("#!/bin/sh\n")
    uv.chmod(0o755)
    monkeypatch.delenv("CUDAFIT_UV", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "elsewhere"))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "bin" / "python"))
    assert find_uv() == str(uv)
