"""pyproject.toml for uv: the PyTorch index as an explicit [[tool.uv.index]] (only the packages
routed to it by [tool.uv.sources] come from it) and exact pins in [project].dependencies. When the
output file exists, those three places are updated and everything else is kept."""

from __future__ import annotations

import sys

import tomli_w
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from cudafit.emit import EmitOptions, header
from cudafit.errors import InputError
from cudafit.records import Resolution

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def index_name(url: str) -> str:
    return "pytorch-" + url.rstrip("/").rsplit("/", 1)[-1]


def render(resolution: Resolution, options: EmitOptions) -> str:
    doc: dict = {}
    if options.existing:
        try:
            doc = tomllib.loads(options.existing)
        except tomllib.TOMLDecodeError as exc:
            raise InputError(f"existing pyproject.toml is not valid TOML: {exc}") from None
    project = doc.setdefault("project", {})
    if not options.existing:
        project["name"] = options.env_name
        project["version"] = "0.1.0"
        if resolution.machine.python:
            project["requires-python"] = f">={resolution.machine.python}"
    ours = {canonicalize_name(p.name) for p in resolution.packages}
    kept = []
    for item in project.get("dependencies", []):
        try:
            if canonicalize_name(Requirement(item).name) in ours:
                continue
        except InvalidRequirement:
            pass
        kept.append(item)
    project["dependencies"] = kept + [p.requirement for p in resolution.packages]
    uv = doc.setdefault("tool", {}).setdefault("uv", {})
    indexes = [i for i in uv.get("index", []) if not str(i.get("name", "")).startswith("pytorch-")]
    sources = {k: v for k, v in uv.get("sources", {}).items() if canonicalize_name(k) not in ours}
    for pin in resolution.packages:
        if pin.index_url is None:
            continue
        name = index_name(pin.index_url)
        if not any(i.get("name") == name for i in indexes):
            indexes.append({"name": name, "url": pin.index_url, "explicit": True})
        sources[pin.name] = {"index": name}
    if indexes:
        uv["index"] = indexes
    else:
        uv.pop("index", None)
    if sources:
        uv["sources"] = sources
    else:
        uv.pop("sources", None)
    if not uv:
        doc["tool"].pop("uv")
        if not doc["tool"]:
            doc.pop("tool")
    body = tomli_w.dumps(doc)
    return body if options.existing else f"# {header(resolution)}\n{body}"
