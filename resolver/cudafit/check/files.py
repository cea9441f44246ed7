"""Which files to check and how to read each: by name when a folder is walked, by name and then
by content when a file is named on the command line (pre-commit passes file names)."""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path
from typing import Callable, Optional

from cudafit.check import conda_env, dockerfile, lockfiles, pyproject, requirements
from cudafit.check.model import Document
from cudafit.check.source import read_text, regular_file
from cudafit.errors import InputError

Reader = Callable[[Path], Document]

# name pattern -> reader, first match wins
BY_NAME: tuple[tuple[str, Reader], ...] = (
    ("pyproject.toml", pyproject.read),
    ("uv.lock", lockfiles.read_uv_lock),
    ("pylock.toml", lockfiles.read_pylock),
    ("pylock.*.toml", lockfiles.read_pylock),
    ("environment*.yml", conda_env.read),
    ("environment*.yaml", conda_env.read),
    ("conda*.yml", conda_env.read),  # dinov2's conda.yaml, conda-extras.yaml
    ("conda*.yaml", conda_env.read),
    ("*requirements*.txt", requirements.read),
    ("*requirements*.in", requirements.read),
    ("constraints*.txt", requirements.read),
    ("Dockerfile", dockerfile.read),
    ("Dockerfile.*", dockerfile.read),
    ("*.Dockerfile", dockerfile.read),
    ("*.dockerfile", dockerfile.read),
    ("Containerfile", dockerfile.read),
    ("Containerfile.*", dockerfile.read),
)
# A `requirements/` folder holds requirement files under any name (base.txt, gpu.txt, pytorch/base.txt).
_REQUIREMENT_FOLDERS = ("requirements", "reqs")
_SKIP_DIRS = {
    *(".git", ".hg", ".svn", ".tox", ".nox", ".venv", "venv", "node_modules", "__pycache__", "site-packages", "build", "dist"),
    *(".mypy_cache", ".pytest_cache", ".ruff_cache", ".cache", ".eggs", ".idea", ".vscode", ".ipynb_checkpoints", ".pixi", ".conda"),
}


def _declaring_pyproject(path: Path) -> Optional[Path]:
    """The pyproject.toml whose `[tool.setuptools.dynamic] dependencies` names this requirements
    file: the nearest one above it, where it does (a hook given only that file checks the project)."""
    from cudafit.check.extension import dynamic_files

    try:
        here = path.resolve()
    except (OSError, RuntimeError):
        return None
    for folder in list(here.parents)[:4]:
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            break
    else:
        return None
    try:
        text = read_text(candidate)
        if "dynamic" not in text:
            return None
        data = pyproject.load_toml(candidate, text)
    except InputError:
        return None  # checked on its own where it is named
    if here not in {f.resolve() for f in dynamic_files(candidate, data)}:
        return None
    try:
        return Path(os.path.relpath(candidate))
    except ValueError:  # another drive (Windows)
        return candidate


def _unreadable_folder(path: Path) -> Document:
    """The reader of a folder a walk could not list: says why."""
    try:
        os.listdir(path)
    except OSError as exc:
        raise InputError(f"{path}: cannot read the folder: {exc.strerror}") from None
    raise InputError(f"{path}: could not be read while its folder was walked")


def reader_by_name(path: Path) -> Optional[Reader]:
    if path.name.endswith(".dockerignore"):
        return None  # BuildKit's per-Dockerfile ignore file (Dockerfile.dockerignore), not a Dockerfile
    for pattern, reader in BY_NAME:
        if fnmatch.fnmatch(path.name, pattern):
            return reader
    # requirements/base.txt, and one folder further (Lightning's requirements/pytorch/base.txt)
    if path.suffix in (".txt", ".in") and (path.parent.name in _REQUIREMENT_FOLDERS or path.parent.parent.name in _REQUIREMENT_FOLDERS):
        return requirements.read
    return None


def reader_by_content(path: Path) -> Reader:
    """A file named on the command line under another name (ci/gpu-deps.txt, deps.lock)."""
    try:
        regular_file(path)
    except InputError:
        return requirements.read  # the reader says why, without opening it
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096).decode("utf-8", "replace")
    except OSError:
        return requirements.read  # the reader reports why it cannot be read
    lines = [line.strip() for line in head.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    first = lines[0] if lines else ""
    if first.startswith("lock-version"):
        return lockfiles.read_pylock
    if first.startswith("version") and "[[package]]" in head:
        return lockfiles.read_uv_lock
    if first.startswith("[") and not first.startswith("[["):
        return pyproject.read
    if any(line.startswith(("dependencies:", "channels:")) for line in lines):
        return conda_env.read
    if first.upper().startswith(("FROM ", "ARG ", "# SYNTAX=")) or head.lstrip().lower().startswith("# syntax="):
        return dockerfile.read
    return requirements.read


def discover(paths: list[Path]) -> list[tuple[Path, Reader]]:
    """(file, reader) for each path: a folder is walked for files known by name."""
    out: list[tuple[Path, Reader]] = []
    for path in paths:
        if path.is_dir():
            unreadable: list[OSError] = []
            for root, dirs, files in os.walk(path, onerror=unreadable.append):
                # Hidden folders hold dependency files too (.github/, .runpod/); tool caches are skipped.
                dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith(".venv"))
                for name in sorted(files):
                    reader = reader_by_name(Path(root, name))
                    if reader is not None:
                        out.append((Path(root, name), reader))
            # a folder the walk cannot list is reported as a file that cannot be read, not skipped
            out += [(Path(exc.filename or path), _unreadable_folder) for exc in unreadable]
        elif path.name == "setup.py":
            # Read with the pyproject.toml beside it (how it compiles, the torch it declares): a hook
            # given a changed setup.py checks that project. Alone it is no dependency file.
            if path.with_name("pyproject.toml").is_file():
                out.append((path.with_name("pyproject.toml"), pyproject.read))
        elif not path.name.endswith(".dockerignore"):  # BuildKit's ignore file beside a Dockerfile: nothing to check
            reader = reader_by_name(path) or reader_by_content(path)
            out.append((path, reader))
            owner = _declaring_pyproject(path) if reader is requirements.read else None
            if owner is not None:  # its torch is that project's runtime torch (CF014)
                out.append((owner, pyproject.read))
    # a file named twice (a pyproject.toml and its setup.py, both changed) is checked once
    return list(dict.fromkeys(out))
