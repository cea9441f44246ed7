"""Lockfiles: uv's `uv.lock` and PEP 751's `pylock.toml`. Each package is an exact version with
the index it came from; a lockfile of a version this reader does not know is refused, not guessed."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Optional

from cudafit.check.model import EVERYWHERE, Document, Pin, Problem, Reach, Span
from cudafit.check.pins import NOT_A_REQUIREMENT
from cudafit.check.pyproject import load_toml
from cudafit.check.source import read_text
from cudafit.errors import InputError
from cudafit.records import PURE, WheelFiles

UV_LOCK_VERSIONS = (1,)  # the `version` uv writes; `revision` changes do not alter what is read here
PYLOCK_MAJORS = ("1",)


def read_uv_lock(path: Path) -> Document:
    text = read_text(path)
    data = load_toml(path, text)
    version = data.get("version")
    if version not in UV_LOCK_VERSIONS:
        raise InputError(f"{path}:1: uv.lock version {version!r} is not one cudafit reads (known: {', '.join(map(str, UV_LOCK_VERSIONS))})")
    packages = data.get("package")
    packages = packages if isinstance(packages, list) else []
    doc = _document(path, text, "uv-lock", "package", packages, _uv_index, _uv_marker, _uv_files)
    reach = _reach(packages)
    # `supported-markers` (tool.uv.environments): the lock is for those environments only.
    supported = data.get("supported-markers")
    only = " or ".join(f"({m})" for m in supported if isinstance(m, str) and m.strip()) if isinstance(supported, list) else ""
    # A package no project path reaches is not installed: left unknown, never judged.
    doc = doc._replace(pins=tuple(p._replace(reached=_within(reach.get((p.name, p.specifier[2:])), only)) for p in doc.pins))
    requires = data.get("requires-python")
    return doc._replace(requires_python=requires) if isinstance(requires, str) else doc


# Beyond this many paths into one package, or this many markers along one, its reach is left unknown.
_MAX_PATHS, _MAX_MARKERS = 6, 64


def _reach(packages: list[Any]) -> dict[tuple[str, str], Optional[Reach]]:
    """(name, version) -> the paths by which the project's own packages reach it through the
    lock's edges, each the markers along it (EVERYWHERE: unconditionally; None: too many paths to
    say; absent: not reached). An extra of the project reads `extra == 'NAME'`, a group
    `extra == 'cudafit-group-NAME'`, as the environments evaluate them."""
    from packaging.utils import canonicalize_name

    from cudafit.check.environments import GROUP_EXTRA

    by_name: dict[str, list[dict]] = {}
    for entry in packages:
        if isinstance(entry, dict) and isinstance(entry.get("name"), str) and isinstance(entry.get("version", ""), str):
            by_name.setdefault(canonicalize_name(entry["name"]), []).append(entry)
    paths: dict[tuple[str, str], Optional[list[tuple[str, ...]]]] = {}
    todo: list[tuple[list, tuple[str, ...]]] = []  # (edges, the markers their package is reached under)

    keys = {id(e): _key(e) for group in by_name.values() for e in group}

    def reach(entry: dict, condition: tuple[str, ...]) -> None:
        mine = paths.setdefault(keys[id(entry)], [])
        if mine is None or () in mine or condition in mine:
            return
        if len(mine) >= _MAX_PATHS or len(condition) > _MAX_MARKERS:
            paths[keys[id(entry)]] = None  # unknown; what it alone reaches stays unreached, so unknown too
            return
        mine.append(condition)
        todo.append((_edges(entry.get("dependencies")), condition))

    for group in by_name.values():
        for entry in group:
            source = entry.get("source")
            if isinstance(source, dict) and {"editable", "virtual"} & set(source):
                reach(entry, ())
                for table, prefix in (("optional-dependencies", ""), ("dev-dependencies", GROUP_EXTRA)):
                    for name, edges in _tables(entry.get(table)).items():
                        todo.append((edges, (f"extra == '{prefix}{name}'",)))
    while todo:
        edges, condition = todo.pop()
        for edge in edges:
            marker = edge.get("marker")
            met = conflict_marker(marker) if isinstance(marker, str) and marker.strip() else ""
            under = (*condition, met) if met and met not in condition else condition
            for target in by_name.get(canonicalize_name(edge["name"]), []):
                if "version" in edge and _normal(edge["name"], str(edge["version"])) != keys[id(target)]:
                    continue
                reach(target, under)
                # Extras asked of a dependency bring its optional dependencies along.
                extras = edge.get("extra")
                for extra in extras if isinstance(extras, list) else []:
                    todo.append((_tables(target.get("optional-dependencies")).get(str(extra), []), under))
    return {k: (None if v is None else EVERYWHERE if () in v else tuple(v)) for k, v in paths.items()}


@lru_cache(maxsize=4096)  # a lock names each version on many edges
def _normal(name: str, version: str) -> tuple[str, str]:
    from packaging.utils import canonicalize_name
    from packaging.version import InvalidVersion, Version

    try:
        return canonicalize_name(name), str(Version(version))
    except InvalidVersion:
        return canonicalize_name(name), version


def _key(entry: dict) -> tuple[str, str]:
    return _normal(str(entry["name"]), str(entry.get("version", "")))


def _edges(found: Any) -> list[dict]:
    return [e for e in found if isinstance(e, dict) and isinstance(e.get("name"), str)] if isinstance(found, list) else []


def _tables(found: Any) -> dict[str, list[dict]]:
    return {str(k): _edges(v) for k, v in found.items()} if isinstance(found, dict) else {}


def read_pylock(path: Path) -> Document:
    text = read_text(path)
    data = load_toml(path, text)
    version = str(data.get("lock-version", ""))
    if version.split(".")[0] not in PYLOCK_MAJORS:
        raise InputError(f"{path}:1: pylock lock-version {version!r} is not one cudafit reads (known: 1.x)")
    packages = data.get("packages")
    doc = _document(path, text, "pylock", "packages", packages if isinstance(packages, list) else [], _pylock_index, _pylock_marker, _pylock_files)
    requires = data.get("requires-python")
    return doc._replace(requires_python=requires) if isinstance(requires, str) else doc


def _within(reached: Optional[Reach], only: str) -> Optional[Reach]:
    if reached is None or not only:
        return reached
    return tuple((only, *path) for path in reached)


def _files(entry: dict, wheels: Any, buildable: bool) -> Optional[WheelFiles]:
    """The package's files as the lock lists them, or None where it lists no wheel (a project of
    its own, a path or git source: built, not chosen)."""
    from urllib.parse import unquote

    from packaging.version import Version

    from cudafit.wheel_tags import where

    if not isinstance(wheels, list) or not wheels:
        return None
    if buildable:
        # Where the wheels do not fit, pip and uv build it: which wheels it has decides nothing.
        return WheelFiles(Version(entry["version"]), True, {})
    names = []
    for wheel in wheels:
        if isinstance(wheel, dict):
            name = wheel.get("name") or wheel.get("filename") or wheel.get("url") or wheel.get("path")
            if isinstance(name, str):
                names.append((unquote(name.rsplit("/", 1)[-1].split("#", 1)[0].split("?", 1)[0]), None))
    # Most packages ship one pure wheel, which installs everywhere: reading it alone says so.
    pure = [n for n in names if n[0].endswith("-any.whl")]
    found = where(pure[:1]) if pure else {}
    return WheelFiles(Version(entry["version"]), buildable, found if PURE in found else where(names))


def _labels(entry: dict) -> tuple[str, ...]:
    """The variant labels of the entry's wheels (uv.lock and pylock list them alike), in order."""
    from urllib.parse import unquote

    from cudafit.wheel_tags import variant_label

    found: list[str] = []
    for wheel in entry.get("wheels") or ():
        name = (wheel.get("name") or wheel.get("filename") or wheel.get("url") or wheel.get("path")) if isinstance(wheel, dict) else None
        label = variant_label(unquote(name.rsplit("/", 1)[-1].split("#", 1)[0].split("?", 1)[0])) if isinstance(name, str) else None
        if label is not None and label not in found:
            found.append(label)
    return tuple(found)


def _uv_files(entry: dict) -> Optional[WheelFiles]:
    source = entry.get("source")
    built = not (isinstance(source, dict) and ("registry" in source or "url" in source))
    return _files(entry, entry.get("wheels"), built or isinstance(entry.get("sdist"), dict))


def _pylock_files(entry: dict) -> Optional[WheelFiles]:
    built = any(isinstance(entry.get(k), dict) for k in ("sdist", "vcs", "directory", "archive"))
    return _files(entry, entry.get("wheels"), built)


def _uv_index(entry: dict) -> Optional[str]:
    source = entry.get("source")
    if isinstance(source, dict) and isinstance(source.get("registry"), str):
        return str(source["registry"])
    return None


def _pylock_index(entry: dict) -> Optional[str]:
    index = entry.get("index")
    return index if isinstance(index, str) else None


def _pylock_marker(entry: dict) -> Optional[str]:
    marker = entry.get("marker")
    return marker if isinstance(marker, str) and marker.strip() else None


# uv writes the extras and groups of a project whose extras conflict as extra names of their own:
# 'extra-8-invokeai-cuda' is extra `cuda` of package `invokeai` (8 characters), 'group-3-app-dev'
# is group `dev` of `app`.
_CONFLICT = re.compile(r"'(extra|group)-(\d+)-([^']*)'")


@lru_cache(maxsize=8192)  # a lock writes one marker on many edges
def conflict_marker(marker: str) -> str:
    """A lock marker with uv's conflict names rewritten to the names the environments evaluate
    (the extra itself; a group as GROUP_EXTRA + its name)."""
    from cudafit.check.environments import GROUP_EXTRA

    def name(match: re.Match) -> str:
        kind, length, rest = match[1], int(match[2]), match[3]
        own = rest[length + 1 :] if len(rest) > length + 1 and rest[length] == "-" else rest
        return f"'{own}'" if kind == "extra" else f"'{GROUP_EXTRA}{own}'"

    return _CONFLICT.sub(name, marker)


def _uv_marker(entry: dict) -> Optional[str]:
    """Where a locked version is installed: the forks of the resolution it was chosen in (a
    version every fork shares has none)."""
    forks = entry.get("resolution-markers")
    if not isinstance(forks, list) or not forks or not all(isinstance(f, str) for f in forks):
        return None
    if any(not f.strip() for f in forks):
        return None  # one fork holds everywhere
    return conflict_marker(" or ".join(f"({f})" for f in forks))


def _document(
    path: Path,
    text: str,
    kind: str,
    table: str,
    packages: list[Any],
    index_of: Callable[[dict], Optional[str]],
    marker_of: Callable[[dict], Optional[str]],
    files_of: Callable[[dict], Optional[WheelFiles]],
) -> Document:
    from packaging.utils import canonicalize_name
    from packaging.version import InvalidVersion, Version

    lines = text.splitlines()
    headers = [n for n, line in enumerate(lines) if line.strip() == f"[[{table}]]"]
    found: list[Pin] = []
    problems: list[Problem] = []
    for number, entry in enumerate(packages):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not isinstance(entry.get("version"), str):
            continue
        span = _name_span(str(path), lines, headers[number] if number < len(headers) else 0, entry["name"])
        try:
            version = Version(entry["version"])
        except InvalidVersion:
            # uv and pip refuse the whole lockfile: say where, and check the rest.
            problems.append(Problem(NOT_A_REQUIREMENT, f"{entry['name']} is locked at {entry['version']!r}, which is not a PEP 440 version", span))
            continue
        marker = marker_of(entry)
        found.append(
            Pin(
                canonicalize_name(entry["name"]),
                f"=={version}",
                span,
                version=version.public,
                local=version.local,
                marker=marker,
                from_index=index_of(entry),
                files=files_of(entry),
                labels=_labels(entry),
            )
        )
    return Document(str(path), kind, pins=tuple(found), problems=tuple(problems), lines={str(path): tuple(lines)})


def _name_span(path: str, lines: list[str], header: int, name: str) -> Span:
    for number in range(header, min(header + 8, len(lines))):
        match = re.match(r"\s*name\s*=\s*[\"']", lines[number])
        if match:
            return Span(path, number + 1, match.end() + 1, name)
    return Span(path, header + 1, 1, "")
