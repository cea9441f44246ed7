"""pyproject.toml for uv: the PyTorch index as an explicit [[tool.uv.index]] (only the packages
routed to it by [tool.uv.sources] come from it) and exact pins in [project].dependencies. When the
output file exists, only those places (and uv's find-links and constraint-dependencies) change:
tomlkit edits the parsed document in place, so every other line keeps its comments and layout
(pyproject_edit.py); a user's lines for other platforms stay, under markers (platform_markers.py)."""

from __future__ import annotations

from typing import Any, Callable

import tomlkit
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from tomlkit.items import AoT, Array, Table

from cudafit.answers import Resolution
from cudafit.emit import GENERATED, EmitOptions, cuda_from_conda, environment, header
from cudafit.emit.platform_markers import for_other_platforms, here_or_unmarked, holds_here, platform_marker, requirement_marker
from cudafit.emit.pyproject_edit import (
    blank_before_subtables,
    dependency_lists,
    drop_items,
    ends_blank,
    parse_existing,
    pins_home,
    replace_pins,
    replace_strings,
    requirement_name,
    table,
)
from cudafit.errors import InputError

FAMILY = {"torch", "torchvision", "torchaudio"}
NEEDS = "# needs, from conda first:"
THEN = "# then, wherever it runs: export "  # a variable the set needs when it runs (uv has no place for it)


def index_name(url: str) -> str:
    return "pytorch-" + url.rstrip("/").rsplit("/", 1)[-1]


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


def render(resolution: Resolution, options: EmitOptions) -> str:
    check_project_name(options.env_name)
    doc = parse_existing(options.existing) if options.existing else tomlkit.document()
    project = table(doc, "project", "[project]")
    # A [project] needs a name and a version for uv to lock it; a file that had no [project] gets them.
    if "name" not in project:
        project["name"] = options.env_name
    if "version" not in project and "version" not in (project.get("dynamic") or []):
        project["version"] = "0.1.0"
    if "requires-python" not in project and resolution.machine.python:
        project["requires-python"] = f">={resolution.machine.python}"
    ours: set[str] = {canonicalize_name(p.name) for p in resolution.packages}
    here = holds_here(resolution)
    kept = for_other_platforms(resolution)
    home = pins_home(doc, project, ours)
    elsewhere: list[str] = []  # markers of our packages' lines for other platforms, which stay
    for where, parent, key in dependency_lists(doc, project):
        for item in parent[key]:
            if not isinstance(item, str):
                continue  # a dependency group's {include-group = ...}
            name = requirement_name(item)
            marker = requirement_marker(item)
            if name in ours and marker and not here(marker):
                elsewhere.append(marker)
            elif name in FAMILY and name not in ours and (not marker or here(marker)):
                # A torch-family pin left behind would fight the new set: resolve it together instead.
                raise InputError(f"existing pyproject.toml: {where} has {str(item)!r}; add {name} to the specs so it is resolved with the rest")
            elif name in ours and kept(item) is not None:
                elsewhere.append(str(kept(item)))
        if (parent, key) != home:
            mine = [i for i, item in enumerate(parent[key]) if isinstance(item, str) and requirement_name(item) in ours and here_or_unmarked(item, here)]
            for i in reversed(mine):
                line = kept(parent[key][i])
                if line is None:
                    del parent[key][i]
                else:
                    parent[key][i] = line  # the other platforms keep it; this one gets our pin
    # With lines for other platforms kept, ours get a marker of their own platform.
    marked = (bool(elsewhere) or options.per_platform) and bool(platform_marker(resolution))
    suffix = f"; {platform_marker(resolution)}" if marked else ""
    replace_pins(
        home[0],
        home[1],
        lambda item: isinstance(item, str) and requirement_name(item) in ours and here_or_unmarked(item, here),
        # A URL requirement ends at whitespace: its marker needs one before the semicolon (PEP 508).
        [p.requirement + (f" {suffix}" if p.url and suffix else suffix) for p in resolution.packages],
        kept if marked else lambda _item: None,
    )
    _narrow_requires_python(project, resolution)
    routed = {canonicalize_name(name) for c in resolution.candidates for name in c.index_packages}
    _edit_tool_uv(doc, resolution, ours | routed, here, marked)
    return _with_header(tomlkit.dumps(doc), resolution, options)


def _edit_tool_uv(doc: Any, resolution: Resolution, ours: set[str], here: Callable[[str], bool], marked: bool) -> None:
    """[tool.uv]: the PyTorch indexes and the sources routing our packages to them, find-links,
    constraint-dependencies and extra-build-dependencies; [tool.uv] and [tool] go when left empty."""
    tool = table(doc, "tool", "[tool]", super_table=True)
    uv = table(tool, "uv", "[tool.uv]", super_table=True)
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
            drop_items(value, lambda e: not (isinstance(e, dict) and e.get("marker") and not here(str(e["marker"]))))
            if len(value):
                split_by_platform[canonicalize_name(key)] = value
                continue
        del sources[key]
    # What a build requires that only its index serves (triton-rocm, the rocm wheels) is routed
    # there too: with an explicit index, uv takes every other name from PyPI.
    routes = [(pin.name, pin.index_url) for pin in resolution.packages]
    for c in resolution.candidates:
        url = next((p.index_url for p in c.packages if p.index_url), None)
        routes += [(name, url) for name in c.index_packages if url is not None]
    for pin_name, index_url in routes:
        if index_url is None:
            continue
        name = index_name(index_url)
        if not any(i.get("name") == name for i in indexes):
            entry = tomlkit.inline_table() if inline else tomlkit.table()
            entry.update({"name": name, "url": index_url, "explicit": True})
            if not inline and indexes:
                # a blank line between tables, as uv and people write them, and after the last as before
                if ends_blank(indexes[-1]):
                    entry.add(tomlkit.nl())
                else:
                    indexes[-1].add(tomlkit.nl())
            indexes.append(entry)
        route = tomlkit.inline_table()
        route["index"] = name
        others = split_by_platform.pop(canonicalize_name(pin_name), None)
        if others is not None:
            route["marker"] = platform_marker(resolution) or "true"
            others.append(route)
        elif marked:
            route["marker"] = platform_marker(resolution) or "true"
            split = tomlkit.array()
            split.append(route)
            sources[pin_name] = split
        else:
            sources[pin_name] = route
    # Old JAX CUDA wheels live on a find-links page, which uv reads from [tool.uv] find-links.
    links = sorted({p.find_links for p in resolution.packages if p.find_links})
    if links:
        replace_strings(uv, "find-links", "[tool.uv] find-links", lambda link: link in links, links)
    # The nvidia-* versions every chosen framework allows, and the bound that keeps a framework on
    # the GPU's last release line (`uv lock --upgrade` stays below it), as uv constraints.
    if resolution.shared_pins or resolution.last_lines:
        bounds = [f"{last.family}{last.bound}" for last in resolution.last_lines]
        ours_pins = {canonicalize_name(d) for d in resolution.shared_pins} | {canonicalize_name(last.family) for last in resolution.last_lines}
        pins = [f"{d}{s}" for d, s in sorted(resolution.shared_pins.items())] + bounds
        replace_strings(uv, "constraint-dependencies", "[tool.uv] constraint-dependencies", lambda c: requirement_name(c) in ours_pins, pins)
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
    drop_items(indexes, lambda i: str(i.get("name", "")).startswith("pytorch-") and i.get("name") not in used)
    if headless and any(k is not None and not isinstance(v, (Table, AoT)) for k, v in uv.value.body):
        blank_before_subtables(uv)
    for key, value in (("index", indexes), ("sources", sources)):
        if value and key not in uv:
            uv[key] = value
        elif not value and key in uv:
            del uv[key]
    if not uv:
        del tool["uv"]
    if not tool:
        del doc["tool"]


def _with_header(body: str, resolution: Resolution, options: EmitOptions) -> str:
    """The document under cudafit's first line, and the conda step uv cannot take."""
    lines = [f"# {header(resolution, options.described, options.title)}"]
    if options.existing:
        # Our own leading comments describe the set they were written for: they are replaced.
        first, _, rest = body.partition("\n")
        if first.endswith(GENERATED):
            body = rest
        else:
            lines = []
        while body.startswith((NEEDS, THEN)):
            body = body.partition("\n")[2]
    else:
        body = body.rstrip("\n") + "\n"
    runtime = cuda_from_conda(resolution)
    if runtime is not None:
        # uv cannot install this CUDA runtime; the step stays in the file, as in every format.
        lines.append(f"{NEEDS} {' '.join(runtime[0])} -c {runtime[1]}")
    lines += [f"{THEN}{name}={value}" for name, value in environment(resolution).items()]
    return "".join(f"{line}\n" for line in lines) + body
