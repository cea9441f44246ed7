"""Lockfiles: uv's `uv.lock` and PEP 751's `pylock.toml`. Each package is an exact version with
the index it came from; a lockfile of a version this reader does not know is refused, not guessed."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Optional

from cudafit.check.model import Document, Pin, Span
from cudafit.check.pyproject import load_toml
from cudafit.check.source import read_text
from cudafit.errors import InputError

UV_LOCK_VERSIONS = (1,)  # the `version` uv writes; `revision` changes do not alter what is read here
PYLOCK_MAJORS = ("1",)


def read_uv_lock(path: Path) -> Document:
    text = read_text(path)
    data = load_toml(path, text)
    version = data.get("version")
    if version not in UV_LOCK_VERSIONS:
        raise InputError(f"{path}:1: uv.lock version {version!r} is not one cudafit reads (known: {', '.join(map(str, UV_LOCK_VERSIONS))})")
    packages = data.get("package")
    return _document(path, text, "uv-lock", "package", packages if isinstance(packages, list) else [], _uv_index)


def read_pylock(path: Path) -> Document:
    text = read_text(path)
    data = load_toml(path, text)
    version = str(data.get("lock-version", ""))
    if version.split(".")[0] not in PYLOCK_MAJORS:
        raise InputError(f"{path}:1: pylock lock-version {version!r} is not one cudafit reads (known: 1.x)")
    packages = data.get("packages")
    return _document(path, text, "pylock", "packages", packages if isinstance(packages, list) else [], _pylock_index)


def _uv_index(entry: dict) -> Optional[str]:
    source = entry.get("source")
    if isinstance(source, dict) and isinstance(source.get("registry"), str):
        return str(source["registry"])
    return None


def _pylock_index(entry: dict) -> Optional[str]:
    index = entry.get("index")
    return index if isinstance(index, str) else None


def _document(path: Path, text: str, kind: str, table: str, packages: list[Any], index_of) -> Document:
    from packaging.utils import canonicalize_name
    from packaging.version import InvalidVersion, Version

    lines = text.splitlines()
    headers = [n for n, line in enumerate(lines) if line.strip() == f"[[{table}]]"]
    found: list[Pin] = []
    for number, entry in enumerate(packages):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not isinstance(entry.get("version"), str):
            continue
        try:
            version = Version(entry["version"])
        except InvalidVersion:
            continue
        span = _name_span(str(path), lines, headers[number] if number < len(headers) else 0, entry["name"])
        marker = entry.get("marker")
        found.append(
            Pin(
                canonicalize_name(entry["name"]),
                f"=={version}",
                span,
                version=version.public,
                local=version.local,
                marker=marker if isinstance(marker, str) else None,
                from_index=index_of(entry),
            )
        )
    return Document(str(path), kind, pins=tuple(found), lines={str(path): tuple(lines)})


def _name_span(path: str, lines: list[str], header: int, name: str) -> Span:
    for number in range(header, min(header + 8, len(lines))):
        match = re.match(r"\s*name\s*=\s*[\"']", lines[number])
        if match:
            return Span(path, number + 1, match.end() + 1, name)
    return Span(path, header + 1, 1, "")
