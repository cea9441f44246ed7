"""pyproject.toml for uv: the PyTorch index as an explicit [[tool.uv.index]] (only the packages
routed to it by [tool.uv.sources] come from it) and exact pins in [project].dependencies. When the
output file exists, those three places are updated and every other setting is kept (comments and
formatting are not: the file is rewritten from its parsed form)."""

from __future__ import annotations

import sys

import tomli_w
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from cudafit.emit import EmitOptions, cuda_from_conda, header
from cudafit.errors import InputError
from cudafit.records import Resolution

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


FAMILY = {"torch", "torchvision", "torchaudio"}


def index_name(url: str) -> str:
    return "pytorch-" + url.rstrip("/").rsplit("/", 1)[-1]


def _table(parent: dict, key: str, where: str) -> dict:
    value = parent.setdefault(key, {})
    if not isinstance(value, dict):
        raise InputError(f"existing pyproject.toml: {where} is not a table")
    return value


def check_project_name(name: str) -> str:
    """The name, or an InputError: [project] name must be a PEP 508 name, which packaging's
    requirement parser reads whole only when it is one (letters, digits, '.', '_', '-', starting
    and ending with a letter or digit)."""
    try:
        whole = str(Requirement(name)) == name and Requirement(name).name == name
    except InvalidRequirement:
        whole = False
    if not whole:
        raise InputError(f"--name {name!r}: not a project name (PEP 508: letters, digits, '.', '_' and '-', starting and ending with a letter or digit)")
    return name


def render(resolution: Resolution, options: EmitOptions) -> str:
    check_project_name(options.env_name)
    doc: dict = {}
    if options.existing:
        try:
            doc = tomllib.loads(options.existing)
        except tomllib.TOMLDecodeError as exc:
            raise InputError(f"existing pyproject.toml is not valid TOML: {exc}") from None
    project = _table(doc, "project", "[project]")
    if not options.existing:
        project["name"] = options.env_name
        project["version"] = "0.1.0"
        if resolution.machine.python:
            project["requires-python"] = f">={resolution.machine.python}"
    dependencies = project.get("dependencies", [])
    if not isinstance(dependencies, list) or not all(isinstance(d, str) for d in dependencies):
        raise InputError("existing pyproject.toml: [project] dependencies is not a list of strings")
    ours: set[str] = {canonicalize_name(p.name) for p in resolution.packages}
    kept = []
    for item in dependencies:
        try:
            name: str = canonicalize_name(Requirement(item).name)
        except InvalidRequirement:
            kept.append(item)
            continue
        if name in ours:
            continue
        if name in FAMILY:
            # A torch-family pin left behind would fight the new set: resolve it together instead.
            raise InputError(f"existing pyproject.toml depends on {item!r}; add {name} to the specs so it is resolved with the rest")
        kept.append(item)
    project["dependencies"] = kept + [p.requirement for p in resolution.packages]
    uv = _table(_table(doc, "tool", "[tool]"), "uv", "[tool.uv]")
    sources = {k: v for k, v in _table(uv, "sources", "[tool.uv.sources]").items() if canonicalize_name(k) not in ours}
    indexes = uv.get("index", [])
    if not isinstance(indexes, list) or not all(isinstance(i, dict) for i in indexes):
        raise InputError("existing pyproject.toml: [[tool.uv.index]] is not an array of tables")
    for pin in resolution.packages:
        if pin.index_url is None:
            continue
        name = index_name(pin.index_url)
        if not any(i.get("name") == name for i in indexes):
            indexes.append({"name": name, "url": pin.index_url, "explicit": True})
        sources[pin.name] = {"index": name}
    # Old JAX CUDA wheels live on a find-links page, which uv reads from [tool.uv] find-links.
    links = sorted({p.find_links for p in resolution.packages if p.find_links})
    if links:
        uv["find-links"] = sorted(set(uv.get("find-links", [])) | set(links))
    # The nvidia-* versions every chosen framework allows, as uv constraints (not dependencies).
    if resolution.shared_pins:
        ours_pins = {canonicalize_name(d) for d in resolution.shared_pins}
        constraints = [c for c in uv.get("constraint-dependencies", []) if not isinstance(c, str) or canonicalize_name(Requirement(c).name) not in ours_pins]
        uv["constraint-dependencies"] = constraints + [f"{d}{s}" for d, s in sorted(resolution.shared_pins.items())]
    # Our old PyTorch indexes go once nothing routes to them any more.
    used = {v.get("index") for v in sources.values() if isinstance(v, dict)}
    indexes = [i for i in indexes if not str(i.get("name", "")).startswith("pytorch-") or i.get("name") in used]
    for key, value in (("index", indexes), ("sources", sources)):
        if value:
            uv[key] = value
        else:
            uv.pop(key, None)
    if not uv:
        doc["tool"].pop("uv")
        if not doc["tool"]:
            doc.pop("tool")
    body = tomli_w.dumps(doc)
    lines = [] if options.existing else [f"# {header(resolution)}"]
    runtime = cuda_from_conda(resolution)
    if runtime is not None:
        # uv cannot install this CUDA runtime; the step stays in the file, as in every format.
        lines.append(f"# needs, from conda first: {' '.join(runtime[0])} -c {runtime[1]}")
    return "".join(f"{line}\n" for line in lines) + body
