"""`cudafit check --resolve`: each environment a file describes, asked of uv, the resolver that installs it.

cudafit's data answers what a GPU install turns on (which builds exist, which wheels a release
has, which CUDA majors meet); a clash between two ordinary packages (numpy, setuptools) or the
missing wheel of a dependency's dependency is the resolver's to find. With --resolve, `check` runs
`uv pip compile` for each environment the file describes (platform x Python x extra or group, as
the offline rules enumerate them) against the indexes the file names, and reports CF016 where uv
finds no solution, with uv's own reason: an error that rests on the resolver, not on a guess.
Where uv cannot answer (an index it cannot reach, a build that fails) the finding is a note.

Requirements files and pyproject.toml are asked; lockfiles are judged from their own file lists
(CF015). An environment where an offline rule already found an error is not asked again: one
problem is reported once.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple, Optional

from packaging.utils import canonicalize_name

from cudafit.check.environments import PYTHONS, Environment, admitted, describe
from cudafit.check.model import Document, Finding, Span
from cudafit.errors import InputError
from cudafit.records import Matrices

KINDS = ("requirements", "pyproject")
# The oldest systems a GPU machine runs today, not uv's defaults (glibc 2.28, macOS 13): wheels
# people install target glibc 2.34 (warp-lang's aarch64 wheels) and macOS 14 (bitsandbytes', mlx's).
UV_PLATFORMS = {
    "linux-x86_64": "x86_64-manylinux_2_34",
    "linux-aarch64": "aarch64-manylinux_2_34",
    "windows-x86_64": "x86_64-pc-windows-msvc",
    "windows-arm64": "aarch64-pc-windows-msvc",
    "macos-arm64": "aarch64-apple-darwin",
    "macos-x86_64": "x86_64-apple-darwin",
}
MACOS = "14.0"
PREFERRED = ("3.12", "3.13", "3.11", "3.10")
# A file that names no Python is for the one its user runs: where the one asked finds no solution,
# these are asked in turn, and the first that installs makes it no error (3.9 too: old files).
ELSEWHERE = (*PREFERRED, "3.9")
TIMEOUT_S = 180.0
REFUSED = "refused"
UNKNOWN = "unknown"


class Answer(NamedTuple):
    """What uv said of one environment: ok, refused (no solution: the reason is uv's), or unknown."""

    env: Environment
    python: str
    state: str
    reason: str = ""
    installs_on: str = ""  # refused with `python`, but another Python installs it (the file names none)


def find_uv(explicit: Optional[str] = None) -> str:
    """The uv to ask: `explicit`, $CUDAFIT_UV, else uv on PATH, else the one installed beside
    cudafit's own Python (a venv run by its path, not activated)."""
    wanted = explicit or os.environ.get("CUDAFIT_UV") or "uv"
    found = shutil.which(wanted)
    if found is None and wanted == "uv":
        found = shutil.which("uv", path=os.path.dirname(sys.executable))
    if found is None:
        raise InputError(f"--resolve asks uv, and {wanted!r} was not found (install it with `pip install uv`, or set CUDAFIT_UV to its path)")
    return found


def python_for(doc: Document, matrices: Matrices, env: Environment) -> str:
    """The Python to ask about: the environment's own, else one its requires-python admits that every
    wheels-only release the file pins exactly has wheels for (its user picks a Python that works)."""
    if env.python is not None:
        return env.python
    allowed = admitted(doc.requires_python) or PYTHONS
    usable = set(allowed)
    for pin in doc.pins:
        files = matrices.wheel_files.get(pin.name, ()) if pin.version is not None and pin.local is None and not pin.marker else ()
        for release in files:
            if str(release.version) == pin.version and not release.sdist:
                usable &= set().union(*release.wheels.values())
    return next((py for py in PREFERRED if py in usable), next((py for py in PREFERRED if py in allowed), PREFERRED[0]))


@lru_cache(maxsize=16)
def interpreter(python: str) -> str:
    """The interpreter uv builds with while it resolves for `python`: a python3.X of that minor on
    PATH that runs (a pyenv shim of a version not selected does not), else the one running cudafit.
    Without one uv looks for that minor alone, and where there is none it downloads one (or,
    offline, answers nothing)."""
    if f"{sys.version_info.major}.{sys.version_info.minor}" == python:
        return sys.executable
    found = shutil.which(f"python{python}")
    if found is not None:
        try:
            works = subprocess.run([found, "-c", "pass"], capture_output=True, timeout=20, stdin=subprocess.DEVNULL).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            works = False
        if works:
            return found
    return sys.executable


def _selection_args(selection: str) -> list[str]:
    kind, _, name = selection.partition(" ")
    return {"extra": ["--extra", name], "group": ["--group", name]}.get(kind, [])


def ask(uv: str, path: Path, env: Environment, python: str, timeout: float = TIMEOUT_S) -> Answer:
    """`uv pip compile` of one file in one environment, run where the file lives (its -r includes and
    relative paths resolve as they would for its user); nothing is installed or written."""
    args = [uv, "pip", "compile", path.name, "--python-platform", UV_PLATFORMS[env.platform], "--python-version", python, "--python", interpreter(python)]
    args += [*_selection_args(env.selection), "--no-header", "--no-annotate", "--quiet"]
    environ = {**os.environ, "MACOSX_DEPLOYMENT_TARGET": MACOS, "UV_NO_PROGRESS": "1", "NO_COLOR": "1"}
    try:
        done = subprocess.run(args, cwd=path.parent, env=environ, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return Answer(env, python, UNKNOWN, f"uv did not answer in {timeout:.0f} s")
    except OSError as exc:
        return Answer(env, python, UNKNOWN, f"uv could not be run: {exc.strerror}")
    if done.returncode == 0:
        return Answer(env, python, "ok")
    text = done.stderr + "\n" + done.stdout
    state = REFUSED if "no solution found" in text.lower() else UNKNOWN
    if _OFFLINE.search(text):
        state = UNKNOWN  # uv offline (UV_OFFLINE) counts what its cache lacks as missing: not a verdict
    return Answer(env, python, state, reason_of(text))


_OFFLINE = re.compile(r"needs to be downloaded from a registry|network connectivity is disabled|not found in the cache|network was disabled", re.IGNORECASE)
_DRAWING = re.compile(r"^[\s×│├╰─▶]+")
_EXAMPLE_TAG = re.compile(r" \(e\.g\., `[^`]*`\)")


def reason_of(text: str, limit: int = 400) -> str:
    """uv's reason in one line: the lines after its error line, up to its hints, without the tree
    drawing and the example tag (which differs per platform, so that one reason reads the same on each)."""
    lines = [_DRAWING.sub("", line).strip() for line in text.splitlines()]
    lines = [line for line in lines if line]
    start = next((i for i, line in enumerate(lines) if line.lower().startswith(("error:", "no solution found"))), 0)
    kept: list[str] = []
    for line in lines[start:]:
        if line.lower().startswith(("hint:", "help:")):
            break
        line = line.removeprefix("error: ").removeprefix("cause: ")
        if not line.lower().startswith("no solution found"):  # the finding says so already
            kept.append(line)
    said = _EXAMPLE_TAG.sub("", " ".join(kept))
    return said if len(said) <= limit else said[: limit - 1] + "…"


_NAMED = re.compile(r"\bBecause (?:all of: )?(?:only )?([A-Za-z0-9][A-Za-z0-9._-]*)")


def _span(doc: Document, reason: str) -> Span:
    """The requirement uv's reason starts from, where the file writes it; else the file's first line."""
    match = _NAMED.search(reason)
    if match:
        name = canonicalize_name(match.group(1))
        for pin in doc.pins:
            if pin.name == name and pin.span.path == doc.path:
                return pin.span
    return Span(doc.path, 1, 1, "")


def held(found: Iterable[Finding], every: list[Environment]) -> set[Environment]:
    """The environments where an offline error already holds."""
    out: set[Environment] = set()
    for finding in found:
        if finding.severity != "error":
            continue
        if not finding.environments:
            return set(every)
        keys = set(finding.environments)
        out |= {e for e in every if e.key() in keys or e._replace(python=None).key() in keys}
    return out


def resolve_findings(doc: Document, every: list[Environment], matrices: Matrices, uv: str, skip: set[Environment], jobs: int = 0) -> list[Finding]:
    """CF016 for each reason uv refuses the file for (with the environments it holds in), and one
    note where uv could not answer."""
    if doc.kind not in KINDS:
        return []
    asked = [e for e in every if e not in skip and e.platform in UV_PLATFORMS]
    if not asked:
        return []
    path = Path(doc.path)
    workers = jobs or min(8, 2 * (os.cpu_count() or 2))  # uv waits on the network and its cache more than on a CPU
    with ThreadPoolExecutor(max_workers=workers) as pool:
        answers = list(pool.map(lambda e: _answer(doc, matrices, uv, path, e), asked))
    from cudafit.check.rules import BY_CODE

    by_reason: dict[tuple[str, str, str], list[Environment]] = {}
    for answer in answers:
        if answer.state != "ok":
            by_reason.setdefault((answer.state, answer.reason, answer.installs_on), []).append(answer.env)
    out: list[Finding] = []
    unknown: list[Environment] = []
    for (state, reason, installs_on), envs in by_reason.items():
        if state == UNKNOWN:
            unknown += envs
            continue
        span = _span(doc, reason)
        where = describe(envs, every)
        if installs_on:
            python = next(a.python for a in answers if a.env in envs)
            message = f"uv finds no solution with Python {python} and does with Python {installs_on} (the file names no Python): {reason}"
            keys = tuple(sorted({e.key() for e in envs})) if where else ()
            said = f"on {where}: {message}" if where else message
            out.append(Finding(span.path, span.line, span.col, "CF013", said, BY_CODE["CF013"].severity, "", None, where, keys))
            continue
        message = f"uv finds no solution: {reason}"
        keys = tuple(sorted({e.key() for e in envs})) if where else ()
        out.append(
            Finding(
                span.path,
                span.line,
                span.col,
                "CF016",
                f"on {where}: {message}" if where else message,
                BY_CODE["CF016"].severity,
                _fix(reason),
                None,
                where,
                keys,
            )
        )
    if unknown:
        reasons = sorted({a.reason for a in answers if a.state == UNKNOWN})
        where = describe(unknown, every)
        message = f"uv could not answer{' on ' + where if where else ''}: {reasons[0]}"
        keys = tuple(sorted({e.key() for e in unknown})) if where else ()
        out.append(Finding(doc.path, 1, 1, "CF013", message, BY_CODE["CF013"].severity, "", None, where, keys))
    return out


def _answer(doc: Document, matrices: Matrices, uv: str, path: Path, env: Environment) -> Answer:
    """uv's answer for one environment; for a file that names no Python, a refusal stands only where
    no other Python (ELSEWHERE) installs it either. A file whose requires-python names its Pythons
    claims each of them: a refusal on one it admits stands."""
    python = python_for(doc, matrices, env)
    answer = ask(uv, path, env, python)
    if answer.state != REFUSED or env.python is not None or doc.requires_python:
        return answer
    for other in (py for py in ELSEWHERE if py != python):
        if ask(uv, path, env, other).state == "ok":
            return answer._replace(installs_on=other)
    return answer


def _fix(reason: str) -> str:
    if "no wheels with a matching" in reason:
        return "limit the requirement with a marker to where it has wheels, or allow a release that has one there"
    return "loosen or change the pins uv names so that one set satisfies them all"
