"""pyproject.toml for uv: the PyTorch index as an explicit [[tool.uv.index]] (only the packages
routed to it by [tool.uv.sources] come from it) and exact pins in [project].dependencies. When the
output file exists, only those places (and uv's find-links and constraint-dependencies) change:
tomlkit edits the parsed document in place, so every other line keeps its comments and layout."""

from __future__ import annotations

import re
import sys
from typing import Any, Callable, Optional

import tomlkit
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from tomlkit.items import AoT, Array, Table, Whitespace

from cudafit.emit import GENERATED, EmitOptions, cuda_from_conda, header
from cudafit.errors import InputError
from cudafit.records import Resolution

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


FAMILY = {"torch", "torchvision", "torchaudio"}
NEEDS = "# needs, from conda first:"


def index_name(url: str) -> str:
    return "pytorch-" + url.rstrip("/").rsplit("/", 1)[-1]


def _table(parent: Any, key: str, where: str, *, super_table: bool = False) -> Any:
    if key not in parent:
        parent[key] = tomlkit.table(is_super_table=super_table)
    value = parent[key]
    if not isinstance(value, dict):
        raise InputError(f"existing pyproject.toml: {where} is not a table")
    return value


def _string_array(parent: Any, key: str, where: str, *, strings: bool = True) -> Array:
    if key not in parent:
        array = tomlkit.array()
        array.multiline(True)
        parent[key] = array
    value = parent[key]
    if not isinstance(value, Array) or (strings and not all(isinstance(v, str) for v in value)):
        raise InputError(f"existing pyproject.toml: {where} is not a list of strings")
    return value


def _drop(items: Any, unwanted: Callable[[Any], bool]) -> None:
    # Deleting by index keeps the comments and layout that belong to the items that stay.
    for i in reversed(range(len(items))):
        if unwanted(items[i]):
            del items[i]


def _replace(parent: Any, key: str, where: str, unwanted: Callable[[Any], bool], new: list[str]) -> None:
    """Drop the unwanted strings of an array and append the new ones. An array left with none of
    its own items is written afresh (tomlkit would lose the trailing comma of a emptied one)."""
    array = _string_array(parent, key, where, strings=False)
    if all(unwanted(item) for item in array):
        fresh = tomlkit.array()
        fresh.extend(new)
        fresh.multiline(True)
        parent[key] = fresh
        return
    _drop(array, unwanted)
    array.extend(new)


def _replace_pins(parent: Any, key: str, ours: Callable[[Any], bool], new: list[str], kept: Callable[[str], Optional[str]]) -> None:
    """Our pins where the user's lines for the same packages were: each replaced line keeps its
    place, its comment and its extras (torch[opt-einsum]), and is followed by what `kept` keeps of
    it for the other platforms; the rest of ours go, new ones follow."""
    array = _string_array(parent, key, "the list of our pins", strings=False)
    others = [line for item in array if ours(item) and (line := kept(item)) is not None]
    if all(ours(item) for item in array):
        _replace(parent, key, "the list of our pins", ours, [*new, *others])
        return
    waiting = {_name(text): text for text in new}
    gone = []
    after: list[tuple[int, str]] = []
    for i, item in enumerate(array):
        if not ours(item):
            continue
        name = _name(item)
        line = kept(item)
        if line is not None:
            after.append((i, line))
        if name in waiting:
            array[i] = _with_extras(waiting.pop(name), item)
        else:
            gone.append(i)
    for i, line in reversed(after):
        array.insert(i + 1, line)
    for i in reversed(gone):
        del array[i + sum(1 for j, _line in after if j < i)]
    array.extend([text for text in new if _name(text) in waiting])


def _with_extras(requirement: str, old: str) -> str:
    """`requirement` with the extras the user's line asked for as well."""
    try:
        kept = Requirement(old).extras
        new = Requirement(requirement.split(";")[0])
    except InvalidRequirement:
        return requirement
    extras = sorted(kept | new.extras)
    if not extras or extras == sorted(new.extras):
        return requirement
    head = re.match(r"\s*([A-Za-z0-9._-]+)(\[[^\]]*\])?", requirement)
    assert head is not None  # it parsed as a requirement above
    return f"{head.group(1)}[{','.join(extras)}]{requirement[head.end() :]}"


def _blank_before_subtables(table: Table) -> None:
    """A table that had only sub-tables ([tool.uv.index], [tool.uv.sources]) gets its own header
    once a key lands in it; tomlkit then puts the first sub-table right under the key's lines."""
    for _, item in table.value.body:
        first = item[0] if isinstance(item, AoT) and len(item) else item
        if isinstance(first, Table):
            if "\n" not in first.trivia.indent:
                first.trivia.indent = "\n" + first.trivia.indent
            return


def _ends_blank(table: Table) -> bool:
    body = table.value.body
    return bool(body) and isinstance(body[-1][1], Whitespace) and "\n" in body[-1][1].s


def _name(requirement: str) -> str | None:
    try:
        return canonicalize_name(Requirement(requirement).name)
    except InvalidRequirement:
        return None


def check_project_name(name: str) -> str:
    """The name, or an InputError: [project] name must be a PEP 508 name, which packaging's
    requirement parser reads whole only when it is one (letters, digits, '.', '_', '-', starting
    and ending with a letter or digit)."""
    try:
        whole = str(Requirement(name)) == name and Requirement(name).name == name
    except InvalidRequirement:
        whole = False
    if not whole:
        raise InputError(
            "not a project name (PEP 508: letters, digits, '.', '_' and '-', starting and ending with a letter or digit)", field="name", value=name
        )
    return name


def _marker(requirement: str) -> Optional[str]:
    try:
        marker = Requirement(requirement).marker
    except InvalidRequirement:
        return None
    return str(marker) if marker is not None else None


def _holds_here(resolution: Resolution) -> Callable[[str], bool]:
    """Whether a marker holds on the machine the set was solved for (one it cannot evaluate does)."""
    from packaging.markers import InvalidMarker, Marker, UndefinedComparison, UndefinedEnvironmentName

    from cudafit.solve import marker_env

    env = marker_env(resolution.machine)

    def holds(text: str) -> bool:
        try:
            return bool(Marker(text).evaluate(env))
        except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
            return True

    return holds


def _here_or_unmarked(requirement: str, here: Callable[[str], bool]) -> bool:
    marker = _marker(requirement)
    return marker is None or here(marker)


_PLATFORM_WORDS = re.compile(r"\b(?:sys_platform|platform_system|os_name|platform_machine|sys\.platform|os\.name|platform\.machine)\b")
_SYS_PLATFORM = {"linux": "linux", "wsl": "linux", "windows": "win32", "macos": "darwin"}


def _platform_marker(resolution: Resolution) -> str:
    platform = _SYS_PLATFORM.get(resolution.machine.os or "")
    return f"sys_platform == '{platform}'" if platform else ""


def _holds_somewhere(marker: str) -> bool:
    """Whether a marker holds on any platform and Python a project installs on (one packaging
    cannot evaluate is taken to hold: the line is kept, never dropped on a guess)."""
    from packaging.markers import InvalidMarker, Marker, UndefinedComparison, UndefinedEnvironmentName

    from cudafit.records import Machine
    from cudafit.solve import marker_env

    try:
        parsed = Marker(marker)
    except InvalidMarker:
        return True
    places = [("linux", "x86_64"), ("linux", "aarch64"), ("windows", "x86_64"), ("macos", "aarch64"), ("macos", "x86_64")]
    for os_name, arch in places:
        for python in ("3.9", "3.10", "3.11", "3.12", "3.13", "3.14"):
            try:
                if parsed.evaluate(marker_env(Machine(os=os_name, arch=arch, python=python, driver=None))):
                    return True
            except (UndefinedComparison, UndefinedEnvironmentName):
                return True
    return False


def _for_other_platforms(resolution: Resolution) -> Callable[[str], Optional[str]]:
    """What a user's line for one of our packages keeps on the platforms the answer is not for: a
    range or a bare name (`torch>=2.4`, `torchvision`) stays there, under a marker that leaves this
    platform out; an exact pin (an earlier answer) is replaced, not kept."""
    platform = _SYS_PLATFORM.get(resolution.machine.os or "")

    def kept(item: str) -> Optional[str]:
        if not platform:
            return None
        try:
            requirement = Requirement(item)
        except InvalidRequirement:
            return None
        if requirement.url or any(s.operator in ("==", "===") and "*" not in s.version for s in requirement.specifier):
            return None
        elsewhere = f"sys_platform != '{platform}'"
        marker = f"({requirement.marker}) and {elsewhere}" if requirement.marker else elsewhere
        if requirement.marker is not None and _PLATFORM_WORDS.search(str(requirement.marker)) and not _holds_somewhere(marker):
            return None  # a line for this platform alone: ours replaces it
        requirement.marker = None
        return f"{requirement}; {marker}"

    return kept


def _dependency_lists(doc: Any, project: Any) -> list[tuple[str, Any, str]]:
    """(where, parent table, key) of every list that can hold our pins: [project] dependencies,
    each optional-dependencies extra and each dependency group."""
    lists: list[tuple[str, Any, str]] = []
    if "dependencies" in project:
        _string_array(project, "dependencies", "[project] dependencies")
        lists.append(("[project] dependencies", project, "dependencies"))
    for table, where in ((project.get("optional-dependencies"), "[project.optional-dependencies]"), (doc.get("dependency-groups"), "[dependency-groups]")):
        if isinstance(table, dict):
            lists += [(f"{where} {k}", table, k) for k, v in table.items() if isinstance(v, list)]
    return lists


def _home(doc: Any, project: Any, ours: set[str]) -> tuple[Any, str]:
    """Where the pins go: the list that already names one of our packages (an extra such as
    `gpu`, a dependency group), else [project] dependencies."""
    for _where, parent, key in _dependency_lists(doc, project):
        if any(isinstance(item, str) and _name(item) in ours for item in parent[key]):
            return parent, key
    _string_array(project, "dependencies", "[project] dependencies")
    return project, "dependencies"


def _narrow_requires_python(project: Any, resolution: Resolution) -> None:
    """uv locks for every Python requires-python admits: below the oldest Python the pinned
    releases have wheels for, the lock has no solution, so the lower bound is raised to it."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    if not resolution.pythons or not isinstance(project.get("requires-python"), str):
        return
    from cudafit.frameworks.base import python_key

    oldest = min(resolution.pythons, key=python_key)
    try:
        spec = SpecifierSet(project["requires-python"])
    except InvalidSpecifier:
        return
    major, minor = (int(x) for x in oldest.split("."))
    if not any(spec.contains(f"{major}.{m}") for m in range(minor)):
        return
    rest = [str(s) for s in spec if s.operator not in (">=", ">", "~=", "==") or not any(s.contains(f"{major}.{m}") for m in range(minor))]
    project["requires-python"] = ",".join([f">={oldest}", *rest])


def _parse(existing: str) -> tomlkit.TOMLDocument:
    # tomllib is the strict reader and names line and column; tomlkit then edits the same text.
    try:
        tomllib.loads(existing)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"existing pyproject.toml is not valid TOML: {exc}") from None
    return tomlkit.parse(existing)


def render(resolution: Resolution, options: EmitOptions) -> str:
    check_project_name(options.env_name)
    doc = _parse(options.existing) if options.existing else tomlkit.document()
    project = _table(doc, "project", "[project]")
    # A [project] needs a name and a version for uv to lock it; a file that had no [project] gets them.
    if "name" not in project:
        project["name"] = options.env_name
    if "version" not in project and "version" not in (project.get("dynamic") or []):
        project["version"] = "0.1.0"
    if "requires-python" not in project and resolution.machine.python:
        project["requires-python"] = f">={resolution.machine.python}"
    ours: set[str] = {canonicalize_name(p.name) for p in resolution.packages}
    here = _holds_here(resolution)
    kept = _for_other_platforms(resolution)
    home = _home(doc, project, ours)
    elsewhere: list[str] = []  # markers of our packages' lines for other platforms, which stay
    for where, parent, key in _dependency_lists(doc, project):
        for item in parent[key]:
            if not isinstance(item, str):
                continue  # a dependency group's {include-group = ...}
            name = _name(item)
            marker = _marker(item)
            if name in ours and marker and not here(marker):
                elsewhere.append(marker)
            elif name in FAMILY and name not in ours and (not marker or here(marker)):
                # A torch-family pin left behind would fight the new set: resolve it together instead.
                raise InputError(f"existing pyproject.toml: {where} has {str(item)!r}; add {name} to the specs so it is resolved with the rest")
            elif name in ours and kept(item) is not None:
                elsewhere.append(str(kept(item)))
        if (parent, key) != home:
            mine = [i for i, item in enumerate(parent[key]) if isinstance(item, str) and _name(item) in ours and _here_or_unmarked(item, here)]
            for i in reversed(mine):
                line = kept(parent[key][i])
                if line is None:
                    del parent[key][i]
                else:
                    parent[key][i] = line  # the other platforms keep it; this one gets our pin
    # With lines for other platforms kept, ours get a marker of their own platform.
    marked = (bool(elsewhere) or options.per_platform) and bool(_platform_marker(resolution))
    suffix = f"; {_platform_marker(resolution)}" if marked else ""
    _replace_pins(
        home[0],
        home[1],
        lambda item: isinstance(item, str) and _name(item) in ours and _here_or_unmarked(item, here),
        # A URL requirement ends at whitespace: its marker needs one before the semicolon (PEP 508).
        [p.requirement + (f" {suffix}" if p.url and suffix else suffix) for p in resolution.packages],
        kept if marked else lambda _item: None,
    )
    _narrow_requires_python(project, resolution)

    tool = _table(doc, "tool", "[tool]", super_table=True)
    uv = _table(tool, "uv", "[tool.uv]", super_table=True)
    headless = isinstance(uv, Table) and uv.is_super_table()
    # New tables are filled before they are attached: tomlkit then lays them out with the usual
    # blank line before each header.
    indexes = uv.get("index", tomlkit.aot())
    # Either [[tool.uv.index]] tables or an inline `index = [{...}]` array (cudafit wrote those).
    inline = isinstance(indexes, Array)
    if not (isinstance(indexes, AoT) or inline) or not all(isinstance(i, dict) for i in indexes):
        raise InputError("existing pyproject.toml: [[tool.uv.index]] is not an array of tables")
    sources = uv.get("sources", tomlkit.table())
    if not isinstance(sources, dict):
        raise InputError("existing pyproject.toml: [tool.uv.sources] is not a table")
    # A source given per platform (a list of tables with markers) keeps the other platforms'
    # entries, in the array as written (its layout and comments): only this platform's go.
    split_by_platform: dict[str, Array] = {}
    for key in [k for k in sources if canonicalize_name(k) in ours]:
        value = sources[key]
        if isinstance(value, Array):
            _drop(value, lambda e: not (isinstance(e, dict) and e.get("marker") and not here(str(e["marker"]))))
            if len(value):
                split_by_platform[canonicalize_name(key)] = value
                continue
        del sources[key]
    for pin in resolution.packages:
        if pin.index_url is None:
            continue
        name = index_name(pin.index_url)
        if not any(i.get("name") == name for i in indexes):
            entry = tomlkit.inline_table() if inline else tomlkit.table()
            entry.update({"name": name, "url": pin.index_url, "explicit": True})
            if not inline and indexes:
                # a blank line between tables, as uv and people write them, and after the last as before
                if _ends_blank(indexes[-1]):
                    entry.add(tomlkit.nl())
                else:
                    indexes[-1].add(tomlkit.nl())
            indexes.append(entry)
        route = tomlkit.inline_table()
        route["index"] = name
        others = split_by_platform.pop(canonicalize_name(pin.name), None)
        if others is not None:
            route["marker"] = _platform_marker(resolution) or "true"
            others.append(route)
        elif marked:
            route["marker"] = _platform_marker(resolution) or "true"
            split = tomlkit.array()
            split.append(route)
            sources[pin.name] = split
        else:
            sources[pin.name] = route
    # Old JAX CUDA wheels live on a find-links page, which uv reads from [tool.uv] find-links.
    links = sorted({p.find_links for p in resolution.packages if p.find_links})
    if links:
        _replace(uv, "find-links", "[tool.uv] find-links", lambda link: link in links, links)
    # The nvidia-* versions every chosen framework allows, as uv constraints (not dependencies).
    if resolution.shared_pins:
        ours_pins = {canonicalize_name(d) for d in resolution.shared_pins}
        pins = [f"{d}{s}" for d, s in sorted(resolution.shared_pins.items())]
        _replace(uv, "constraint-dependencies", "[tool.uv] constraint-dependencies", lambda c: _name(c) in ours_pins, pins)
    # A library that compiles against torch (flash-attn from its sdist) gets, in its isolated
    # build, the very torch the environment runs: uv's extra build dependency matched to the runtime.
    built = sorted({p.name for p in resolution.packages if p.mode == "no-build-isolation"})
    if built:
        extra = uv.get("extra-build-dependencies", tomlkit.table())
        if not isinstance(extra, dict):
            raise InputError("existing pyproject.toml: [tool.uv] extra-build-dependencies is not a table")
        for name in built:
            runtime_torch = tomlkit.inline_table()
            runtime_torch.update({"requirement": "torch", "match-runtime": True})
            needs = tomlkit.array()
            needs.append(runtime_torch)
            extra[name] = needs
        if "extra-build-dependencies" not in uv:
            uv["extra-build-dependencies"] = extra
    # Our old PyTorch indexes go once nothing routes to them any more.
    used = {e.get("index") for v in sources.values() for e in (v if isinstance(v, list) else [v]) if isinstance(e, dict)}
    _drop(indexes, lambda i: str(i.get("name", "")).startswith("pytorch-") and i.get("name") not in used)
    if headless and any(k is not None and not isinstance(v, (Table, AoT)) for k, v in uv.value.body):
        _blank_before_subtables(uv)
    for key, value in (("index", indexes), ("sources", sources)):
        if value and key not in uv:
            uv[key] = value
        elif not value and key in uv:
            del uv[key]
    if not uv:
        del tool["uv"]
    if not tool:
        del doc["tool"]
    body = tomlkit.dumps(doc)
    lines = [f"# {header(resolution, options.described, options.title)}"]
    if options.existing:
        # Our own leading comments describe the set they were written for: they are replaced.
        first, _, rest = body.partition("\n")
        if first.endswith(GENERATED):
            body = rest
        else:
            lines = []
        if body.startswith(NEEDS):
            body = body.partition("\n")[2]
    else:
        body = body.rstrip("\n") + "\n"
    runtime = cuda_from_conda(resolution)
    if runtime is not None:
        # uv cannot install this CUDA runtime; the step stays in the file, as in every format.
        lines.append(f"{NEEDS} {' '.join(runtime[0])} -c {runtime[1]}")
    return "".join(f"{line}\n" for line in lines) + body
