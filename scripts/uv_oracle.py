#!/usr/bin/env python3
"""Maintainer tool: record what uv says of each corpus file, in each environment the file describes.

For every file in tests/corpus/MANIFEST.toml (requirements files, pyproject.toml, uv.lock, pylock.toml,
environment.yml), ask uv to resolve or install it, without installing anything, for each platform
(linux-x86_64, linux-aarch64, windows-x86_64, macos-arm64), the Python the file allows (3.12 unless its
requires-python, or a conda env's `python` spec, excludes it) and each selection (the base set, and for a
pyproject.toml or a uv.lock each extra and dependency group), and write one verdict per environment to
tests/corpus/uv_verdicts.json: ok (with the versions of the GPU-relevant packages uv picked), no-solution,
unreachable (an index or host other than PyPI that cannot be reached from here), error, timeout or
unsupported. cudafit's tests compare `cudafit check` with these verdicts offline.

This script is the only code in the repository that asks the network for the corpus: uv talks to PyPI
(and fails, recorded as unreachable, for any other index). Every uv call works in a temporary copy of the
file's project folder, so nothing in the repository is written except the output file.

    python scripts/uv_oracle.py [--corpus tests/corpus] [--only LOCALPATH ...] [--resume] [-o tests/corpus/uv_verdicts.json] [--jobs 4]

Each file is written to the output as soon as it is recorded; --resume goes on from an interrupted run.

uv kinds of call, per file kind:
  requirements, pyproject.toml  uv pip compile FILE --python-platform P --python-version V [--extra X | --group G]
  uv.lock                       uv lock --locked (lock_current); uv export --frozen --format requirements-txt
                                per selection, then uv pip compile of that export (with the lock's own indexes
                                as --extra-index-url); besides, `lock`: uv export --format pylock.toml installed
                                with uv pip install --dry-run --target, which is what the lock itself installs
  pylock.toml                   uv pip install --dry-run --target TMP -r pylock.toml (needs an interpreter of V)
  environment.yml               the `pip:` items written out as a requirements file, compiled like one; the
                                conda specs are not uv's (recorded as `not-uv`)
"""

from __future__ import annotations

import argparse
import datetime
import functools
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

REPO = Path(__file__).resolve().parent.parent
# The oldest systems a GPU machine runs today, not uv's defaults (glibc 2.28, macOS 13): glibc 2.34
# (RHEL 9 and its rebuilds; Ubuntu 22.04 has 2.35) and macOS 14 (MACOSX_DEPLOYMENT_TARGET below).
# Wheels people install do target them: warp-lang's aarch64 wheels are manylinux_2_34, bitsandbytes'
# and mlx's macOS wheels macosx_14_0; an older floor failed environments no user has.
PLATFORMS = {
    "linux-x86_64": "x86_64-manylinux_2_34",
    "linux-aarch64": "aarch64-manylinux_2_34",
    "windows-x86_64": "x86_64-pc-windows-msvc",
    "macos-arm64": "aarch64-apple-darwin",
}
MACOS = "14.0"
# Names the environments this script asks about; an entry recorded under another name is asked again by --resume.
ORACLE = "glibc-2.34/macos-14/pinned-python"
DEFAULT_PYTHON = "3.12"
FALLBACK_PYTHONS = ("3.13", "3.11", "3.10")  # tried in this order when requires-python excludes 3.12
# A file that names no Python is for the one its user runs: where the Python asked finds no solution,
# these are asked in turn (the first that installs ends it), recorded as `other_pythons`.
OTHER_PYTHONS = ("3.11", "3.10", "3.13", "3.9")
ALL_MINORS = tuple(f"3.{m}" for m in range(6, 16))
CARED = {
    "torch",
    "torchvision",
    "torchaudio",
    "tensorflow",
    "tensorflow-cpu",
    "tf-keras",
    "keras",
    "jax",
    "jaxlib",
    "jax-cuda12-plugin",
    "jax-cuda13-plugin",
    "jax-cuda12-pjrt",
    "jax-cuda13-pjrt",
    "onnxruntime",
    "onnxruntime-gpu",
    "xformers",
    "vllm",
    "flash-attn",
    "torchao",
    "bitsandbytes",
    "triton",
    "cuda-toolkit",
    "cuda-bindings",
}
PYPI_HOSTS = ("pypi.org", "files.pythonhosted.org")
# uv's words for a host it could not reach (DNS, connect, TLS, git clone of a remote).
NETWORK_MARKERS = (
    "dns error",
    "error sending request",
    "client error (connect)",
    "failed to lookup address",
    "name or service not known",
    "could not resolve host",
    "connection refused",
    "network is unreachable",
    "tcp connect error",
    "connection reset",
    "operation timed out",
    "unable to access 'http",
)
NO_SOLUTION_MARKERS = ("no solution found", "unsatisfiable")
NOISE_PREFIXES = (
    "warning:",
    "using cpython",
    "using python",
    "resolved ",
    "prepared ",
    "would ",
    "audited ",
    "+ ",
    "- ",
    "downloading ",
    "building ",
    "built ",
)
WHY_LIMIT = 400


# ---------------------------------------------------------------------------------------------------------
# Versions and requires-python (a small PEP 440 subset: release numbers only, which is all requires-python uses)


def allowed_patch(spec: Optional[str], minor: str) -> Optional[int]:
    """The lowest patch release of `minor` (e.g. "3.12") that `spec` allows, or None if it allows none
    (an unreadable spec allows every Python: it excludes nothing)."""
    try:
        allowed = SpecifierSet(spec or "")
    except InvalidSpecifier:
        allowed = SpecifierSet()
    return next((patch for patch in range(0, 40) if allowed.contains(f"{minor}.{patch}", prereleases=True)), None)


def pick_python(spec: Optional[str], usable: Optional[frozenset[str]] = None) -> str:
    """The Python to ask for: 3.12 unless `spec` excludes it, then the newest of 3.13/3.11/3.10 it allows,
    else its lowest allowed minor. Returned as "3.X" or "3.X.P" when only later patches are allowed.
    `usable` (a file that states no Python: the Pythons its pinned frameworks have wheels for, per
    cudafit's data) narrows the choice the same way: a user of the file runs one of them."""
    order = [DEFAULT_PYTHON, *FALLBACK_PYTHONS, *sorted(ALL_MINORS, key=lambda m: -int(m.split(".")[1]))]
    for wanted in ([m for m in order if m in usable] if usable else [], order):
        for minor in dict.fromkeys(wanted):
            patch = allowed_patch(spec, minor)
            if patch is not None:
                return minor if patch == 0 else f"{minor}.{patch}"
    return DEFAULT_PYTHON


def pinned_pythons(path: Path) -> Optional[frozenset[str]]:
    """The Pythons that every framework release `path` pins exactly has wheels for, and every
    release of a binary distribution it pins exactly (matrices/wheels.toml, on some platform):
    cudafit's data, read with check's own readers; None where it pins none the data knows."""
    from cudafit.check.files import reader_by_content, reader_by_name
    from cudafit.errors import InputError
    from cudafit.frameworks import BY_MEMBER

    try:
        doc = (reader_by_name(path) or reader_by_content(path))(path)
    except InputError:
        return None  # an unreadable file is judged on uv's default Python
    usable: Optional[frozenset[str]] = None
    for pin in doc.pins:
        if pin.version is None or pin.name not in BY_MEMBER or pin.marker or pin.group or pin.name != BY_MEMBER[pin.name].MEMBERS[0]:
            continue
        for release in BY_MEMBER[pin.name].releases(_matrices()):
            if release.version == Version(pin.version):
                usable = release.python if usable is None else usable & release.python
    for pin in doc.pins:
        if pin.version is None or pin.local is not None or pin.marker or pin.group or pin.name not in _matrices().wheel_files:
            continue
        for files in _matrices().wheel_files[pin.name]:
            if files.version == Version(pin.version) and not files.sdist:
                wheels = frozenset().union(*files.wheels.values())
                usable = wheels if usable is None else usable & wheels
    return usable


@functools.lru_cache(maxsize=1)
def _matrices() -> Any:
    from cudafit.loader import load

    return load()


def minor_of(version: str) -> str:
    return ".".join(version.split(".")[:2])


_INTERPRETERS: dict[str, Optional[str]] = {}
_INTERPRETER_LOCK = threading.Lock()


def find_interpreter(minor: str) -> Optional[str]:
    """A working python{minor} here (PATH, pyenv, /usr), so that builds and pylock installs run on the
    Python they are asked about; None if there is none (uv then uses whichever it finds)."""
    with _INTERPRETER_LOCK:
        if minor in _INTERPRETERS:
            return _INTERPRETERS[minor]
        candidates: list[str] = []
        found = shutil.which(f"python{minor}")
        if found:
            candidates.append(found)
        candidates += sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{minor}.*/bin/python{minor}")), reverse=True)
        candidates += [f"/usr/bin/python{minor}", f"/usr/local/bin/python{minor}"]
        chosen: Optional[str] = None
        for candidate in candidates:
            if not os.access(candidate, os.X_OK):
                continue
            try:
                out = subprocess.run([candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True, text=True, timeout=20)
            except (OSError, subprocess.TimeoutExpired):
                continue
            if out.returncode == 0 and out.stdout.strip() == minor:
                chosen = candidate
                break
        _INTERPRETERS[minor] = chosen
        return chosen


# ---------------------------------------------------------------------------------------------------------
# Running uv and reading what it says


@dataclass
class UvResult:
    rc: int
    stdout: str
    stderr: str
    timed_out: bool
    seconds: float


@dataclass
class Settings:
    uv: str
    timeout: float
    env: dict[str, str]
    scratch: Path
    cache: str


def _run_once(settings: Settings, args: list[str], cwd: Path, env: dict[str, str]) -> UvResult:
    start = time.monotonic()
    proc = subprocess.Popen(
        [settings.uv, *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=settings.timeout)
        return UvResult(proc.returncode, out, err, False, time.monotonic() - start)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
        return UvResult(-9, out or "", err or "", True, time.monotonic() - start)


def run_uv(settings: Settings, args: list[str], cwd: Path) -> UvResult:
    """Run uv with `args` in `cwd`; on timeout kill its whole process group (builds spawn children).

    The first try makes no HTTP retries, so a host that cannot be reached (download.pytorch.org, github.com)
    fails at once; a failure that names PyPI is tried again with uv's usual retries."""
    res = _run_once(settings, args, cwd, {**settings.env, "UV_HTTP_RETRIES": "0"})
    text = res.stderr + res.stdout
    if classify(res) == "unreachable" and any(h in text for h in PYPI_HOSTS):
        res = _run_once(settings, args, cwd, settings.env)
    return res


def _clean(line: str, settings: Settings) -> str:
    """One line of uv's output without tree drawing, temporary paths, the cache path and timings."""
    line = re.sub(r"^[\s│├╰─▶]+", "", line).rstrip()
    line = line.replace(str(settings.cache), "<cache>")
    line = re.sub(r"(file://)?" + re.escape(str(settings.scratch)) + r"/(\d+/|export-\d+-\d+/|target-[^/\s]+/?)?", "", line)
    return re.sub(r" in \d+(\.\d+)?m?s\b", "", line)


def why_text(res: UvResult, settings: Settings) -> str:
    """uv's first 1-3 meaningful error lines (a `cause:` and the lines that continue it count as one), the
    line naming the host it could not reach, the last line of a failed build's stderr and uv's hint, trimmed."""
    lines = [_clean(x, settings) for x in (res.stderr + "\n" + res.stdout).splitlines()]
    lines = [x for x in lines if x]
    start = next((i for i, x in enumerate(lines) if x.lower().startswith("error:")), None)
    if start is None:
        start = next((i for i, x in enumerate(lines) if not x.lower().startswith(NOISE_PREFIXES)), 0)
    segments: list[str] = []
    for line in lines[start:]:
        low = line.lower()
        if low.startswith(("hint:", "help:")) or line in ("[stderr]", "[stdout]"):
            break
        if not segments or low.startswith(("error:", "cause:")):
            if len(segments) == 3:
                break
            segments.append(line)
        else:
            segments[-1] += " " + line
    text = " | ".join(segments)
    network = [x for x in lines if any(m in x.lower() for m in NETWORK_MARKERS)]
    if network and network[-1] not in text:
        text += " | " + network[-1]
    if "[stderr]" in lines:
        tail = [x for x in lines[lines.index("[stderr]") + 1 :] if not x.lower().startswith(("hint:", "help:")) and x != "[stdout]"]
        if tail and tail[-1] not in text:
            text += " | " + tail[-1]
    hints = [x for x in lines if x.lower().startswith("hint:")]
    if hints and len(text) < WHY_LIMIT - 40 and hints[0] not in text:
        text += " | " + hints[0]
    return text if len(text) <= WHY_LIMIT else text[: WHY_LIMIT - 1] + "…"


def classify(res: UvResult) -> str:
    if res.timed_out:
        return "timeout"
    if res.rc == 0:
        return "ok"
    text = (res.stderr + "\n" + res.stdout).lower()
    if any(m in text for m in NETWORK_MARKERS):
        return "unreachable"
    if any(m in text for m in NO_SOLUTION_MARKERS):
        return "no-solution"
    return "error"


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def cared(name: str) -> bool:
    name = canonical(name)
    return name in CARED or name.startswith("nvidia-")


_PIN = re.compile(r"^\s*(?:\+\s+)?([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*(?:==\s*([^\s;#]+)|@\s*(\S+))")


def resolved_from(text: str, installed: bool) -> dict[str, str]:
    """The cared-about packages in a compile output (`name==version` lines) or a dry-run install (` + name==version`)."""
    picked: dict[str, str] = {}
    for line in text.splitlines():
        if installed and not line.lstrip().startswith("+ "):
            continue
        if not installed and (line.startswith((" ", "#", "-")) or not line.strip()):
            continue
        match = _PIN.match(line)
        if match and cared(match.group(1)):
            picked[canonical(match.group(1))] = match.group(2) or "@ " + match.group(3)
    return dict(sorted(picked.items()))


def verdict_of(res: UvResult, settings: Settings, installed: bool = False) -> dict[str, Any]:
    verdict = classify(res)
    if verdict == "ok":
        return {"verdict": "ok", "resolved": resolved_from(res.stdout + "\n" + res.stderr if installed else res.stdout, installed)}
    if verdict == "timeout":
        return {"verdict": "timeout", "why": f"uv did not finish in {settings.timeout:.0f} s"}
    why = why_text(res, settings)
    if verdict == "unreachable":
        # uv asks an index for many projects at once, and which failure it reports first varies from run to run:
        # name the index, not the project page, so that re-recording gives the same text
        why = re.sub(r"(https?://(?!github\.com/)[^\s()'`|]+?/)[A-Za-z0-9._-]+/(?=[\s)'`|]|$)", r"\1<project>/", why)
    return {"verdict": verdict, "why": why}


# ---------------------------------------------------------------------------------------------------------
# Environments


@dataclass
class Env:
    platform: str
    python: str  # "3.12", or "3.12.3" when the file allows only later patches
    selection: str  # "" | "extra:NAME" | "group:NAME"

    @property
    def key(self) -> str:
        return f"{self.platform}/{minor_of(self.python)}/{self.selection}"


def environments(python: str, selections: list[str]) -> list[Env]:
    return [Env(p, python, s) for s in selections for p in PLATFORMS]


def selection_args(selection: str) -> list[str]:
    if selection.startswith("extra:"):
        return ["--extra", selection[len("extra:") :]]
    if selection.startswith("group:"):
        return ["--group", selection[len("group:") :]]
    return []


def platform_args(env: Env) -> list[str]:
    args = ["--python-platform", PLATFORMS[env.platform], "--python-version", env.python]
    interpreter = find_interpreter(minor_of(env.python))
    if interpreter:
        args += ["--python", interpreter]
    return args


def pyproject_selections(data: dict[str, Any]) -> list[str]:
    project = data.get("project") or {}
    extras = sorted((project.get("optional-dependencies") or {}).keys())
    groups = set((data.get("dependency-groups") or {}).keys())
    if ((data.get("tool") or {}).get("uv") or {}).get("dev-dependencies"):
        groups.add("dev")
    return ["", *(f"extra:{e}" for e in extras), *(f"group:{g}" for g in sorted(groups))]


def read_toml(path: Path) -> dict[str, Any]:
    with path.open("rb") as handle:
        return tomllib.load(handle)


# ---------------------------------------------------------------------------------------------------------
# environment.yml: its `dependencies:` list and the `pip:` items in it


def read_conda_env(path: Path) -> tuple[list[str], list[str]]:
    """(conda specs, pip lines) of an environment.yml; a file that is not a mapping has neither."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        data = YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8", errors="replace"))
    except YAMLError:
        return [], []
    deps = data.get("dependencies") if isinstance(data, dict) else None
    conda: list[str] = []
    pip: list[str] = []
    for item in deps if isinstance(deps, list) else []:
        if isinstance(item, str):
            conda.append(item.strip())
        elif isinstance(item, dict) and isinstance(item.get("pip"), list):
            pip += [str(line).strip() for line in item["pip"] if isinstance(line, (str, int, float))]
    return conda, pip


def conda_python_spec(conda: list[str]) -> Optional[str]:
    """The conda `python` spec as a PEP 440 specifier (conda's `python=3.10` is 3.10.*), or None."""
    for spec in conda:
        spec = spec.split("::")[-1].strip()
        match = re.match(r"^python(?:\s*([=<>!~].*)|\s+(\S+))?$", spec)
        if not match:
            continue
        text = (match.group(1) or match.group(2) or "").replace(" ", "")
        if not text or "|" in text:
            return None
        if re.match(r"^=?[0-9]", text):  # conda's `=3.10` and bare `3.10` mean 3.10.*; `=3.10.8=h7a1cb2a_1` has a build string
            text = "==" + text.lstrip("=").split("=")[0].rstrip("*").rstrip(".") + ".*"
        return text
    return None


# ---------------------------------------------------------------------------------------------------------
# One corpus file


@dataclass
class CorpusFile:
    local: str  # as in MANIFEST.toml
    kind: str
    path: Path  # the file in the corpus
    project: Path  # its <owner>__<repo> folder in the corpus
    meta: dict[str, Any] = field(default_factory=dict)


class Recorder:
    def __init__(self, settings: Settings, pool: ThreadPoolExecutor) -> None:
        self.settings = settings
        self.pool = pool
        self._count = 0
        self._lock = threading.Lock()

    def workdir(self, item: CorpusFile) -> tuple[Path, Path]:
        """A fresh copy of the file's project folder: (the copy's root, the file inside it)."""
        with self._lock:
            self._count += 1
            number = self._count
        root = self.settings.scratch / str(number) / item.project.name
        shutil.copytree(item.project, root, symlinks=True)
        return root, root / item.path.relative_to(item.project)

    def gather(self, jobs: dict[str, Future[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
        return {key: jobs[key].result() for key in sorted(jobs)}

    # -- requirements and pyproject.toml: uv pip compile

    def compile_env(self, item: CorpusFile, env: Env, extra: Optional[list[str]] = None) -> dict[str, Any]:
        root, target = self.workdir(item)
        args = ["pip", "compile", target.name, *platform_args(env), "--no-header", "--no-annotate", *selection_args(env.selection), *(extra or [])]
        res = run_uv(self.settings, args, target.parent)
        return verdict_of(res, self.settings)

    def record_requirements(self, item: CorpusFile) -> dict[str, Any]:
        envs = environments(pick_python(None, pinned_pythons(item.path)), [""])
        jobs = {e.key: self.pool.submit(self.compile_env, item, e) for e in envs}
        return {"environments": self.elsewhere(self.gather(jobs), lambda env: self.compile_env(item, env))}

    def elsewhere(self, found: dict[str, dict[str, Any]], ask: Callable[[Env], dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """For a file that names no Python: each environment with no solution asked again on the other
        Pythons of OTHER_PYTHONS, until one installs; their verdicts as `other_pythons`."""

        def chain(key: str) -> dict[str, str]:
            platform, asked, selection = key.split("/", 2)
            tried: dict[str, str] = {}
            for minor in (m for m in OTHER_PYTHONS if m != asked):
                tried[minor] = ask(Env(platform, minor, selection))["verdict"]
                if tried[minor] == "ok":
                    break
            return tried

        jobs = {key: self.pool.submit(chain, key) for key, verdict in found.items() if verdict["verdict"] == "no-solution"}
        for key, job in jobs.items():
            found[key]["other_pythons"] = job.result()
        return found

    def record_pyproject(self, item: CorpusFile) -> dict[str, Any]:
        try:
            data = read_toml(item.path)
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            return {"environments": {}, "error": f"not TOML: {exc}"[:WHY_LIMIT]}
        project = data.get("project") or {}
        stated = project.get("requires-python")
        python = pick_python(stated, None if stated else pinned_pythons(item.path))
        envs = environments(python, pyproject_selections(data))
        jobs = {e.key: self.pool.submit(self.compile_env, item, e) for e in envs}
        out: dict[str, Any] = {"environments": self.gather(jobs)}
        if not stated:
            self.elsewhere(out["environments"], lambda env: self.compile_env(item, env))
        dynamic = [d for d in project.get("dynamic", []) if d in ("dependencies", "optional-dependencies", "requires-python")]
        if dynamic:
            out["dynamic"] = dynamic
        if not project:
            out["note"] = "no [project] table: uv builds the project to read its metadata"
        return out

    # -- environment.yml: its pip: items as a requirements file

    def record_conda(self, item: CorpusFile) -> dict[str, Any]:
        conda, pip = read_conda_env(item.path)
        out: dict[str, Any] = {"conda": {"verdict": "not-uv", "specs": conda}}
        if not pip:
            out["environments"] = {}
            out["pip"] = "none"
            return out
        spec = conda_python_spec(conda)
        python = pick_python(spec, None if spec else pinned_pythons(item.path))
        if spec:
            out["python_spec"] = spec
        envs = environments(python, [""])
        text = "\n".join(pip) + "\n"
        out["environments"] = self.gather({e.key: self.pool.submit(self.compile_pip_items, item, text, e) for e in envs})
        if not spec:
            self.elsewhere(out["environments"], lambda env: self.compile_pip_items(item, text, env))
        return out

    def compile_pip_items(self, item: CorpusFile, text: str, env: Env) -> dict[str, Any]:
        """An environment.yml's `pip:` items, written out as a requirements file beside it and compiled."""
        _root, target = self.workdir(item)
        reqs = target.parent / ".uv_oracle_pip.txt"
        reqs.write_text(text, encoding="utf-8")
        args = ["pip", "compile", reqs.name, *platform_args(env), "--no-header", "--no-annotate"]
        return verdict_of(run_uv(self.settings, args, target.parent), self.settings)

    # -- pylock.toml: uv pip install --dry-run --target

    def install_lock(self, lock: Path, env: Env, cwd: Path) -> dict[str, Any]:
        target = Path(tempfile.mkdtemp(prefix="target-", dir=self.settings.scratch))
        args = [
            "pip",
            "install",
            "--dry-run",
            "--preview-features",
            "pylock",
            "--target",
            str(target),
            "-r",
            str(lock),
            *platform_args(env),
            *selection_args(env.selection),
        ]
        res = run_uv(self.settings, args, cwd)
        return verdict_of(res, self.settings, installed=True)

    def record_pylock(self, item: CorpusFile) -> dict[str, Any]:
        try:
            data = read_toml(item.path)
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            return {"environments": {}, "error": f"not TOML: {exc}"[:WHY_LIMIT]}
        python = pick_python(data.get("requires-python"))
        selections = ["", *(f"extra:{e}" for e in sorted(data.get("extras") or [])), *(f"group:{g}" for g in sorted(data.get("dependency-groups") or []))]
        envs = environments(python, selections)

        def one(env: Env) -> dict[str, Any]:
            root, target = self.workdir(item)
            verdict = self.install_lock(target, env, target.parent)
            if verdict["verdict"] == "error" and "pylock" in verdict["why"].lower() and "not supported" in verdict["why"].lower():
                verdict["verdict"] = "unsupported"
            return verdict

        return {"environments": self.gather({e.key: self.pool.submit(one, e) for e in envs})}

    # -- uv.lock: uv lock --locked, then per selection an export compiled per platform

    def record_uv_lock(self, item: CorpusFile) -> dict[str, Any]:
        try:
            lock = read_toml(item.path)
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            return {"environments": {}, "error": f"not TOML: {exc}"[:WHY_LIMIT]}
        python = pick_python(lock.get("requires-python"))
        beside = item.path.parent / "pyproject.toml"
        out: dict[str, Any] = {}
        if not beside.is_file():
            envs = environments(python, [""])
            why = "no pyproject.toml beside this uv.lock in the corpus: uv lock and uv export need the project"
            out["lock_current"] = "unsupported"
            out["environments"] = {e.key: {"verdict": "unsupported", "why": why} for e in envs}
            return out
        try:
            selections = pyproject_selections(read_toml(beside))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            selections = [""]
        root, target = self.workdir(item)
        cwd = target.parent
        py_args = []
        interpreter = find_interpreter(minor_of(python))
        if interpreter:
            py_args = ["--python", interpreter]
        res = run_uv(self.settings, ["lock", "--locked", *py_args], cwd)
        state = classify(res)
        if state == "ok":
            out["lock_current"] = True
        elif state in ("unreachable", "timeout"):
            out["lock_current"] = state
            out["lock_why"] = why_text(res, self.settings) if state == "unreachable" else f"uv did not finish in {self.settings.timeout:.0f} s"
        elif "needs to be updated" in (res.stderr + res.stdout):
            out["lock_current"] = False
            out["lock_why"] = why_text(res, self.settings)
        else:
            out["lock_current"] = "error"
            out["lock_why"] = why_text(res, self.settings)
        registries: dict[str, set[str]] = {}  # package -> the non-PyPI indexes the lock takes it from
        for package in lock.get("package", []):
            source = package.get("source")
            registry = source.get("registry") if isinstance(source, dict) else None
            if isinstance(registry, str) and not any(h in registry for h in PYPI_HOSTS):
                registries.setdefault(canonical(str(package.get("name", ""))), set()).add(registry)
        if registries:
            out["indexes"] = sorted(set().union(*registries.values()))
        exports: dict[str, tuple[Optional[Path], Optional[Path], Optional[dict[str, Any]]]] = {}
        for number, selection in enumerate(selections):
            folder = self.settings.scratch / f"export-{root.parent.name}-{number}"
            folder.mkdir()
            common = ["export", "--frozen", "--no-emit-workspace", "--no-emit-local", "--no-default-groups", *selection_args(selection), *py_args]
            res = run_uv(self.settings, [*common, "--no-hashes", "--format", "requirements-txt", "-o", str(folder / "requirements.txt")], cwd)
            if res.rc != 0:
                failed = verdict_of(res, self.settings)
                failed["why"] = "uv export: " + failed.get("why", "")
                exports[selection] = (None, None, failed)
                continue
            reqs = folder / "requirements.txt"
            # requirements-txt has no per-package index: name the lock's other indexes that this export takes packages from
            text = reqs.read_text(encoding="utf-8")
            needed: set[str] = set()
            for line in text.splitlines():
                match = _PIN.match(line)
                if match and not line.startswith((" ", "#", "-")):
                    needed |= registries.get(canonical(match.group(1)), set())
            if needed:
                reqs.write_text("".join(f"--extra-index-url {u}\n" for u in sorted(needed)) + text, encoding="utf-8")
            pylock_dir = folder / "lock"
            pylock_dir.mkdir()
            res = run_uv(self.settings, [*common, "--format", "pylock.toml", "-o", str(pylock_dir / "pylock.toml")], cwd)
            exports[selection] = (reqs, pylock_dir / "pylock.toml" if res.rc == 0 else None, None)

        def one(env: Env) -> dict[str, Any]:
            reqs, pylock, failed = exports[env.selection]
            if failed is not None or reqs is None:
                return dict(failed or {"verdict": "error", "why": "uv export failed"})
            args = ["pip", "compile", reqs.name, *platform_args(env), "--no-header", "--no-annotate"]
            verdict = verdict_of(run_uv(self.settings, args, reqs.parent), self.settings)
            if pylock is not None:
                # the lock's own install (its wheel URLs, no index asked): what `uv sync --frozen` would put there
                verdict["lock"] = self.install_lock(pylock, Env(env.platform, env.python, ""), pylock.parent)
            return verdict

        out["environments"] = self.gather({e.key: self.pool.submit(one, e) for e in environments(python, selections)})
        return out

    def add_elsewhere(self, item: CorpusFile, entry: dict[str, Any]) -> dict[str, Any]:
        """An entry recorded before `other_pythons` given them (--other-pythons), its verdicts kept:
        requirements files, a pyproject.toml without requires-python, an environment.yml without python."""
        if item.kind == "requirements":
            self.elsewhere(entry["environments"], lambda env: self.compile_env(item, env))
        elif item.kind == "pyproject" and not (read_toml(item.path).get("project") or {}).get("requires-python"):
            self.elsewhere(entry["environments"], lambda env: self.compile_env(item, env))
        elif item.kind == "conda-env" and "python_spec" not in entry and entry.get("environments"):
            text = "\n".join(read_conda_env(item.path)[1]) + "\n"
            self.elsewhere(entry["environments"], lambda env: self.compile_pip_items(item, text, env))
        return entry

    def record(self, item: CorpusFile) -> dict[str, Any]:
        started = time.monotonic()
        if not item.path.is_file():
            entry: dict[str, Any] = {"environments": {}, "error": "file missing from the corpus"}
        elif item.kind == "requirements":
            entry = self.record_requirements(item)
        elif item.kind == "pyproject":
            entry = self.record_pyproject(item)
        elif item.kind == "uv-lock":
            entry = self.record_uv_lock(item)
        elif item.kind == "pylock":
            entry = self.record_pylock(item)
        elif item.kind == "conda-env":
            entry = self.record_conda(item)
        else:
            entry = {"environments": {}, "error": f"unknown kind {item.kind!r}"}
        entry["kind"] = item.kind
        counts: dict[str, int] = {}
        for verdict in entry["environments"].values():
            counts[verdict["verdict"]] = counts.get(verdict["verdict"], 0) + 1
        summary = ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or entry.get("error", "no environments")
        print(f"{item.local}: {summary} ({time.monotonic() - started:.0f} s)", file=sys.stderr, flush=True)
        return entry


# ---------------------------------------------------------------------------------------------------------
# Manifest, output, main


def read_manifest(corpus: Path) -> list[CorpusFile]:
    data = read_toml(corpus / "MANIFEST.toml")
    items: list[CorpusFile] = []
    for row in data.get("file", []):
        local = str(row["local"])
        path = resolve_local(corpus, local)
        try:
            rel = path.relative_to(corpus.resolve())
        except ValueError:
            rel = Path(local)
        project = corpus.resolve() / rel.parts[0]
        items.append(CorpusFile(local, str(row.get("kind", "")), path, project, {k: row[k] for k in ("repo", "path", "commit") if k in row}))
    return items


def resolve_local(corpus: Path, local: str) -> Path:
    """A manifest `local` is relative to the corpus folder or to the repository root."""
    for base in (corpus, REPO, Path.cwd()):
        candidate = (base / local).resolve()
        if candidate.exists():
            return candidate
    return (corpus / local).resolve()


def uv_version(uv: str) -> str:
    return subprocess.run([uv, "--version"], capture_output=True, text=True, check=True).stdout.strip()


def write_json(path: Path, data: dict[str, Any]) -> None:
    handle, temp = tempfile.mkstemp(prefix=".uv_verdicts-", suffix=".json", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=1, sort_keys=True, ensure_ascii=False)
            out.write("\n")
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temp, 0o666 & ~umask)  # mkstemp makes it 0600; the output is an ordinary repository file
        os.replace(temp, path)
    except BaseException:
        os.unlink(temp)
        raise


def default_uv() -> str:
    local = REPO / ".venv" / "bin" / "uv"
    return str(local) if local.exists() else (shutil.which("uv") or "uv")


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=REPO / "tests" / "corpus", help="the corpus folder (with MANIFEST.toml)")
    parser.add_argument("--only", nargs="+", metavar="LOCALPATH", help="record only these files (manifest `local` paths); keep the other entries of -o")
    parser.add_argument(
        "--other-pythons",
        action="store_true",
        help="keep -o's verdicts; only ask the other Pythons where a file that names none found no solution",
    )
    parser.add_argument("--resume", action="store_true", help="keep the files -o already has from this oracle and uv; record the rest")
    parser.add_argument("-o", "--output", type=Path, help="the verdicts file (default: CORPUS/uv_verdicts.json)")
    parser.add_argument("--jobs", type=int, default=4, help="uv calls at once (default 4)")
    parser.add_argument("--file-jobs", type=int, default=2, help="files prepared at once (default 2)")
    parser.add_argument("--uv", default=default_uv(), help="the uv binary (default: .venv/bin/uv, else uv on PATH)")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds per uv call (default 180)")
    parser.add_argument(
        "--cache-dir", default=os.path.join(tempfile.gettempdir(), "uv_oracle-cache"), help="UV_CACHE_DIR (default under /tmp, kept between runs)"
    )
    args = parser.parse_args(argv)

    corpus: Path = args.corpus
    output: Path = args.output or corpus / "uv_verdicts.json"
    items = read_manifest(corpus)
    if args.only:
        wanted = {os.path.normpath(w) for w in args.only}
        chosen = [i for i in items if os.path.normpath(i.local) in wanted or os.path.normpath(str(i.path)) in {os.path.abspath(w) for w in wanted}]
        missing = wanted - {os.path.normpath(i.local) for i in chosen}
        if missing and len(chosen) < len(wanted):
            print(f"not in the manifest: {', '.join(sorted(missing))}", file=sys.stderr)
        items = chosen

    env = dict(os.environ)
    env.update(
        {
            "MACOSX_DEPLOYMENT_TARGET": MACOS,
            "UV_PYTHON_DOWNLOADS": "never",
            "UV_CACHE_DIR": args.cache_dir,
            "UV_NO_PROGRESS": "1",
            "NO_COLOR": "1",
            "UV_PREVIEW_FEATURES": "pylock",
        }
    )
    for name in (
        "UV_INDEX_URL",
        "UV_EXTRA_INDEX_URL",
        "UV_INDEX",
        "UV_DEFAULT_INDEX",
        "UV_FIND_LINKS",
        "UV_OFFLINE",
        "UV_FROZEN",
        "UV_LOCKED",
        "VIRTUAL_ENV",
        "UV_PYTHON",
    ):
        env.pop(name, None)
    version = uv_version(args.uv)
    started = time.monotonic()
    files: dict[str, Any] = {}
    if (args.only or args.resume or args.other_pythons) and output.exists():
        files = json.loads(output.read_text(encoding="utf-8")).get("files", {})
    if args.resume:
        # a file recorded by this oracle and this uv is kept; the rest (older oracles, other uv) is asked again
        items = [i for i in items if not (files.get(i.local, {}).get("oracle") == ORACLE and files.get(i.local, {}).get("uv") == version)]
        print(f"resuming: {len(items)} files left to record", file=sys.stderr)
    entries: dict[str, Any] = {}
    written = threading.Lock()

    def record_and_write(item: CorpusFile) -> None:
        if args.other_pythons:
            if item.local not in files:
                return
            entry = recorder.add_elsewhere(item, files[item.local])
            print(f"{item.local}: other Pythons asked", file=sys.stderr, flush=True)
        else:
            entry = recorder.record(item)
        entry["oracle"] = ORACLE
        entry["uv"] = version
        with written:
            # each file is written as it ends, so that an interrupted run keeps what it asked (--resume goes on)
            entries[item.local] = entry
            files[item.local] = entry
            write_json(output, {"uv": version, "recorded": datetime.datetime.now(datetime.timezone.utc).date().isoformat(), "files": files})

    with tempfile.TemporaryDirectory(prefix="uv_oracle-") as scratch, ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        settings = Settings(args.uv, args.timeout, env, Path(scratch), args.cache_dir)
        recorder = Recorder(settings, pool)
        with ThreadPoolExecutor(max_workers=max(1, args.file_jobs)) as files_pool:
            list(files_pool.map(record_and_write, items))
    total: dict[str, int] = {}
    for entry in entries.values():
        for verdict in entry["environments"].values():
            total[verdict["verdict"]] = total.get(verdict["verdict"], 0) + 1
    counts = ", ".join(f"{k} {v}" for k, v in sorted(total.items()))
    print(f"{len(entries)} files, {sum(total.values())} environments in {time.monotonic() - started:.0f} s: {counts}", file=sys.stderr)
    print(f"wrote {output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
