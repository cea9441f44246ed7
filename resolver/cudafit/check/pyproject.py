"""pyproject.toml: `[project]` dependencies and extras, dependency groups (PEP 735), uv's indexes,
sources and constraints, Poetry's dependencies and sources, and `[tool.cudafit]`.

tomllib reads the values; their positions come from the text, where each string value is found
in document order (the same literal twice is matched to its occurrences in turn)."""

from __future__ import annotations

import re
from collections import deque
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional

from cudafit.check import pins
from cudafit.check.extension import built_beside_runtime, compiled_by, declared_torch
from cudafit.check.model import BUILD_SYSTEM, Document, IndexRef, Pin, Problem, Route, Span
from cudafit.check.pins import NOT_A_REQUIREMENT
from cudafit.check.source import read_text
from cudafit.errors import InputError


def load_toml(path: Path, text: str) -> dict[str, Any]:
    # rtoml first (Rust's toml, about 5x tomli on a megabyte lockfile); a file it refuses, or a
    # machine without its wheel, is read by tomli (tomllib's compiled twin), whose words say why.
    try:
        import rtoml
    except ModuleNotFoundError:
        pass
    else:
        try:
            loaded = rtoml.loads(text)
        except (rtoml.TomlParsingError, ValueError):
            pass
        else:
            if isinstance(loaded, dict):
                return loaded
    try:
        import tomli as tomllib
    except ModuleNotFoundError:
        import tomllib  # type: ignore[no-redef]
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not valid TOML: {exc}") from None


# A TOML line's string literals, left to right; a comment outside a string ends the line.
_LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"|\'([^\']*)\'|#.*$')


def _unescaped(literal: str) -> str:
    """A basic string's value (`\\"` is `"`), as the TOML parser reads it; the text itself where it
    does not parse (the finding then falls back to the file's first line)."""
    try:
        import tomli as tomllib
    except ModuleNotFoundError:
        import tomllib  # type: ignore[no-redef]
    try:
        return str(tomllib.loads(f'v = "{literal}"')["v"])
    except tomllib.TOMLDecodeError:
        return literal


# a table header (`[project]`, `[[tool.uv.index]]`) and a key that opens a value (`dependencies =`)
_HEADER = re.compile(r"^\s*\[\[?\s*([^\[\]]+?)\s*\]\]?\s*(?:#.*)?$")
_KEY = re.compile(r"^\s*((?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*'))*)\s*=")


def _path(*parts: str) -> str:
    """A dotted key path as written, its quotes and spaces dropped: `tool . "uv"` is tool.uv."""
    return ".".join(p.strip().strip("\"'") for part in parts if part for p in part.split("."))


class Locator:
    """Finds where each string value of a TOML file is written: the text is scanned once, and
    each value's occurrences are handed out in document order (the same literal twice is matched
    to its occurrences in turn), so reading a file costs time linear in its size. Each occurrence
    knows the key it is written under (`project.dependencies`, `project.keywords`), so a
    requirement is found in its own list, not in a keyword or classifier that reads the same."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = str(path)
        self.lines = text.splitlines()
        self._where: dict[str, deque[tuple[int, int, str]]] = {}
        header, where, depth, multiline = "", "", 0, False
        for number, line in enumerate(self.lines, 1):
            if ('"""' in line or "'''" in line) and (line.count('"""') % 2 or line.count("'''") % 2):
                multiline = not multiline  # a multi-line string's text: no keys, brackets or values
                continue
            if multiline:
                continue
            if depth == 0:
                heading = _HEADER.match(line)
                if heading is not None:
                    header = where = _path(heading[1])
                    continue
                opened = _KEY.match(line)
                if opened is not None:
                    where = _path(header, opened[1])
            quoted = '"' in line or "'" in line or "#" in line
            if quoted:
                for match in _LITERAL.finditer(line):
                    group = 1 if match.group(1) is not None else 2
                    literal = match.group(group)
                    if literal is not None:
                        value = _unescaped(literal) if group == 1 and "\\" in literal else literal
                        self._where.setdefault(value, deque()).append((number, match.start() + 2, where))
            if "[" in line or "]" in line or "{" in line or "}" in line:  # most lines of a list have none
                rest = _LITERAL.sub("", line) if quoted else line
                depth = max(0, depth + rest.count("[") + rest.count("{") - rest.count("]") - rest.count("}"))

    def find(self, value: str, under: str = "") -> Span:
        """The first not yet matched occurrence of `value` as a quoted string, written under the
        key path `under` where one is (or in an inline table of a key above it); line 1 where it
        cannot be found (an escaped string)."""
        places = self._where.get(value)
        if not places:
            return Span(self.path, 1, 1, "")
        chosen = places[0]
        if under and not _within(chosen[2], under):
            chosen = next((place for place in places if _within(place[2], under)), chosen)
        places.remove(chosen)
        return Span(self.path, chosen[0], chosen[1], value)


def _within(written: str, under: str) -> bool:
    return written == under or under.startswith(written + ".") if written else False


def read(path: Path) -> Document:
    text = read_text(path)
    data = load_toml(path, text)
    where = Locator(path, text)
    found: list[Pin] = []
    problems: list[Problem] = []
    indexes: list[IndexRef] = []

    tool = _table(data, "tool")
    uv = _table(tool, "uv")
    poetry = _table(tool, "poetry")

    for entry in _list(uv.get("index")):
        if isinstance(entry, dict) and isinstance(entry.get("url"), str):
            indexes.append(IndexRef(entry["url"], "uv-index", where.find(entry["url"]), name=str(entry.get("name", "")), explicit=bool(entry.get("explicit"))))
    for entry in _list(poetry.get("source")):
        if isinstance(entry, dict) and isinstance(entry.get("url"), str):
            indexes.append(
                IndexRef(entry["url"], "poetry-source", where.find(entry["url"]), name=str(entry.get("name", "")), explicit=entry.get("priority") == "explicit")
            )
    by_name = {i.name: i.url for i in indexes if i.name}
    sources = _uv_sources(uv.get("sources"), by_name)

    def add(value: Any, group: str, constraint: bool = False, under: str = "") -> None:
        if not isinstance(value, str):
            return
        span = where.find(value, under)
        pin = pins.parse(value, span, group=group, constraint=constraint)
        if isinstance(pin, Pin):
            routes = sources.get(pin.name, ())
            if len(routes) == 1 and not routes[0].selection and not routes[0].marker:
                found.append(pin._replace(from_index=routes[0].url))
            else:
                found.append(pin._replace(routes=routes))
        elif isinstance(pin, Problem):
            problems.append(pin)

    def requirements(value: Any, key: str, where_said: str, group: str, *, tables: bool = False, constraint: bool = False, under: str = "") -> None:
        """A list of requirement strings; any other shape is a finding (pip and uv refuse it)."""
        if value is None:
            return
        items = value if isinstance(value, list) else [value]
        wrong = not isinstance(value, list) or any(not isinstance(v, str) and not (tables and isinstance(v, dict)) for v in items)
        if wrong:
            problems.append(Problem(NOT_A_REQUIREMENT, f"{where_said} must be a list of requirement strings, not {value!r}"[:200], _key_span(where, key)))
        for item in items:
            add(item, group, constraint, under)

    project = _table(data, "project")
    requirements(project.get("dependencies"), "dependencies", "[project] dependencies", "", under="project.dependencies")
    optional = project.get("optional-dependencies")
    for extra, values in optional.items() if isinstance(optional, dict) else ():
        requirements(values, extra, f"[project.optional-dependencies] {extra}", f"extra {extra}", under=f"project.optional-dependencies.{extra}")
    build = _table(data, "build-system")
    requirements(build.get("requires"), "requires", "[build-system] requires", BUILD_SYSTEM, under="build-system.requires")
    groups = data.get("dependency-groups")
    for group, values in groups.items() if isinstance(groups, dict) else ():
        # {include-group = ...} tables name no requirement
        requirements(values, group, f"[dependency-groups] {group}", f"group {group}", tables=True, under=f"dependency-groups.{group}")
    for key in ("constraint-dependencies", "override-dependencies"):
        before = len(found)
        requirements(uv.get(key), key, f"[tool.uv] {key}", "", constraint=True, under=f"tool.uv.{key}")
        if key == "override-dependencies":  # they replace the requirements of their name
            found[before:] = [p._replace(override=True) for p in found[before:]]
    found = _overridden(found)
    found += _included(found, project.get("name"), groups)
    found += _poetry(poetry, where, by_name)

    requires_python = project.get("requires-python")
    extension = _extension(path, data, found)
    return Document(
        str(path),
        "pyproject",
        pins=tuple(found),
        indexes=tuple(indexes),
        problems=tuple(problems),
        lines={str(path): tuple(where.lines)},
        requires_python=requires_python if isinstance(requires_python, str) else "",
        extension=extension,
        extension_torch=declared_torch(path, data) if extension else (),
    )


def _extension(path: Path, data: dict[str, Any], found: list[Pin]) -> str:
    """How the project compiles against the torch its build requires (CF014's evidence); a
    setup.py is read only where the build asks for torch."""
    if not any(p.group == BUILD_SYSTEM and p.name == "torch" for p in found) or built_beside_runtime(data):
        return ""
    return compiled_by(path, data)


def _overridden(found: list[Pin]) -> list[Pin]:
    """uv replaces every requirement of an overridden name by its overrides (a build's own
    requirements aside): each such requirement becomes the override's, in the requirement's
    selection and under both markers, found at the override's line. `torch; sys_platform == 'never'`
    so leaves torch out everywhere, as Megatron-LM does for the torch its base image carries."""
    overrides: dict[str, list[Pin]] = {}
    for pin in found:
        if pin.override:
            overrides.setdefault(pin.name, []).append(pin)
    if not overrides:
        return found
    out: list[Pin] = []
    for pin in found:
        if pin.override or pin.name not in overrides or pin.group == BUILD_SYSTEM:
            out.append(pin)
            continue
        for over in overrides[pin.name]:
            marker = over.marker if pin.marker is None else pin.marker if over.marker is None else f"({pin.marker}) and ({over.marker})"
            out.append(over._replace(group=pin.group, marker=marker, constraint=pin.constraint, extras=pin.extras))
    return out


def _included(found: list[Pin], name: Any, groups: Any) -> list[Pin]:
    """The pins an extra or group brings in from others: an extra naming the project itself with
    extras (sglang's `all = ["sglang[srt]", ...]`) installs theirs too, and a group's
    `{include-group = "..."}` that group's. Each is the written pin again, in the including
    selection (under the including requirement's marker too), so a finding names every selection
    it holds in. Names compare normalized (`all_xpu` is `all-xpu`), as pip and uv compare them."""
    from packaging.utils import canonicalize_name

    norm = _normalized_selection
    own = canonicalize_name(name) if isinstance(name, str) else None
    by_group: dict[str, list[Pin]] = {}
    written: dict[str, str] = {}
    for pin in found:
        by_group.setdefault(norm(pin.group), []).append(pin)
        written.setdefault(norm(pin.group), pin.group)
    # selection (normalized) -> the selections it includes, with the marker of the including requirement
    includes: dict[str, list[tuple[str, Optional[str]]]] = {}
    for pin in found:
        if own is not None and pin.name == own and pin.group.startswith(("extra ", "group ")) and not pin.constraint:
            includes.setdefault(norm(pin.group), []).extend((norm(f"extra {x}"), pin.marker) for x in pin.extras)
    for group, values in groups.items() if isinstance(groups, dict) else ():
        for item in values if isinstance(values, list) else ():
            if isinstance(item, dict) and isinstance(item.get("include-group"), str):
                includes.setdefault(norm(f"group {group}"), []).append((norm(f"group {item['include-group']}"), None))
                written.setdefault(norm(f"group {group}"), f"group {group}")
    out: list[Pin] = []
    for selection, first in includes.items():
        seen = {selection}
        todo = list(first)
        while todo:
            other, marker = todo.pop()
            if other in seen:
                continue  # an include cycle (pip and uv stop there too)
            seen.add(other)
            for pin in by_group.get(other, ()):
                if own is not None and pin.name == own:
                    continue
                joined = pin.marker if marker is None else marker if pin.marker is None else f"({marker}) and ({pin.marker})"
                out.append(pin._replace(group=written[selection], marker=joined))
            todo.extend((o, marker if m is None else m if marker is None else f"({marker}) and ({m})") for o, m in includes.get(other, ()))
    return out


@lru_cache(maxsize=4096)  # asked for each pin of a file with hundreds of extras
def _normalized_selection(selection: str) -> str:
    from packaging.utils import canonicalize_name

    kind, _, named = selection.partition(" ")
    return f"{kind} {canonicalize_name(named)}"


def _table(data: dict, key: str) -> dict:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _uv_sources(sources: Any, by_name: dict[str, str]) -> dict[str, tuple[Route, ...]]:
    """package -> the uv indexes its sources name, each with the extra, group or marker it is for
    (InvokeAI routes torch per extra: cpu, cuda, rocm); a source of another kind (git, path, URL)
    names no index."""
    from packaging.utils import canonicalize_name

    out: dict[str, tuple[Route, ...]] = {}
    for name, source in sources.items() if isinstance(sources, dict) else ():
        routes = []
        for entry in source if isinstance(source, list) else [source]:
            if not isinstance(entry, dict) or entry.get("index") not in by_name:
                continue
            extra, group, marker = entry.get("extra"), entry.get("group"), entry.get("marker")
            selection = f"extra {extra}" if isinstance(extra, str) else f"group {group}" if isinstance(group, str) else ""
            routes.append(Route(by_name[entry["index"]], selection, marker if isinstance(marker, str) and marker.strip() else None))
        if routes:
            out[canonicalize_name(name)] = tuple(routes)
    return out


def _poetry(poetry: dict, where: Locator, by_name: dict[str, str]) -> list[Pin]:
    """Poetry's `name = "2.5.1"` or `name = {version = "...", source = "..."}`. Its own operators
    (^, ~) are not PEP 440; only an exact version is read as a pin, anything else as unpinned."""
    from packaging.utils import canonicalize_name

    tables = [("", poetry.get("dependencies"))]
    groups = poetry.get("group")
    for group, table in groups.items() if isinstance(groups, dict) else ():
        if isinstance(table, dict):
            tables.append((f"group {group}", table.get("dependencies")))
    out: list[Pin] = []
    for group, deps in tables:
        for name, given in deps.items() if isinstance(deps, dict) else ():
            if name == "python":
                continue
            # A list is Poetry's multiple-constraints form: one entry per platform or Python.
            for value in given if isinstance(given, list) else [given]:
                spec = value.get("version") if isinstance(value, dict) else value
                source = value.get("source") if isinstance(value, dict) else None
                extras = value.get("extras") if isinstance(value, dict) else None
                markers = value.get("markers") if isinstance(value, dict) else None
                span = where.find(spec) if isinstance(spec, str) else Span(where.path, 1, 1, "")
                if span.line == 1 and not span.text:
                    span = _key_span(where, name)
                version, local = _poetry_exact(spec)
                out.append(
                    Pin(
                        canonicalize_name(name),
                        f"=={version}{'+' + local if local else ''}" if version else "",
                        span,
                        version=version,
                        local=local,
                        marker=markers if isinstance(markers, str) and markers.strip() else None,
                        from_index=by_name.get(source) if isinstance(source, str) else None,
                        group=group,
                        extras=tuple(sorted(e for e in extras if isinstance(e, str))) if isinstance(extras, list) else (),
                    )
                )
    return out


def _poetry_exact(spec: Any) -> tuple[Optional[str], Optional[str]]:
    from packaging.version import InvalidVersion, Version

    if not isinstance(spec, str):
        return None, None
    text = spec.strip().removeprefix("==").strip()
    try:
        version = Version(text)
    except InvalidVersion:
        return None, None
    return version.public, version.local


def _key_span(where: Locator, key: str) -> Span:
    for number, line in enumerate(where.lines, 1):
        if re.match(rf"\s*[\"']?{re.escape(key)}[\"']?\s*=", line):
            return Span(where.path, number, line.index(key) + 1, "")
    return Span(where.path, 1, 1, "")
