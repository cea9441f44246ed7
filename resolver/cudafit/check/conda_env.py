"""conda's environment.yml: channels, conda specs and the `pip:` section (requirements and pip
options, read as a requirements file reads them). ruamel.yaml keeps each item's line and column;
anchors and aliases are kept as references, never expanded, so an alias bomb costs nothing."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from cudafit.check import requirements
from cudafit.check.model import CondaSpec, Document, IndexRef, Pin, Problem, Span
from cudafit.check.source import read_text
from cudafit.errors import InputError

# [channel::]name[ version[ build]] or name[=|==|>=...]version[=build]: conda's match spec as
# environment files write it (conda's own grammar; packaging does not parse it).
_SPEC = re.compile(r"^(?:(?P<channel>[^:\s]+)::)?(?P<name>[A-Za-z0-9_.\-]+)\s*(?P<rest>.*)$")


def parse_spec(text: str, span: Span) -> CondaSpec | None:
    match = _SPEC.match(text.strip())
    if not match:
        return None
    rest = match["rest"].strip()
    if rest.startswith("=") and not rest.startswith("=="):
        rest = rest[1:]
    version = re.split(r"[=\s]", rest.removeprefix("=="), maxsplit=1)[0] if rest else ""
    if rest.startswith(("==", ">", "<", "!", "~")):
        version = rest if not rest.startswith("==") else rest[2:].split("=")[0]
    return CondaSpec(match["name"].lower(), version, match["channel"] or "", span)


def read(path: Path) -> Document:
    text = read_text(path)
    data = _load(path, text)
    if data is None:
        return Document(str(path), "conda-env", lines={str(path): tuple(text.splitlines())})
    if not hasattr(data, "get"):
        raise InputError(f"{path}:1: not an environment file (a YAML mapping with `dependencies`)")
    channels: list[IndexRef] = []
    specs: list[CondaSpec] = []
    found: list[Pin] = []
    indexes: list[IndexRef] = []
    problems: list[Problem] = []
    seq = data.get("channels")
    for i, channel in enumerate(seq if isinstance(seq, list) else []):
        if isinstance(channel, str):
            channels.append(IndexRef(channel, "channel", _span(path, seq, i, channel)))
    deps = data.get("dependencies")
    for i, dep in enumerate(deps if isinstance(deps, list) else []):
        if isinstance(dep, str):
            spec = parse_spec(dep, _span(path, deps, i, dep))
            if spec is not None:
                specs.append(spec)
        elif hasattr(dep, "get") and isinstance(dep.get("pip"), list):
            pip = dep["pip"]
            for j, line in enumerate(pip):
                if not isinstance(line, str):
                    continue
                item = requirements.parse_line(line.strip(), _span(path, pip, j, line.strip()), "pip")
                if isinstance(item, Pin):
                    found.append(item)
                elif isinstance(item, IndexRef):
                    indexes.append(item)
                elif isinstance(item, Problem):
                    problems.append(item)
    return Document(
        str(path),
        "conda-env",
        pins=tuple(found),
        indexes=tuple(indexes),
        conda=tuple(specs),
        channels=tuple(channels),
        problems=tuple(problems),
        lines={str(path): tuple(text.splitlines())},
        platforms=_platforms({spec.name for spec in specs}),
    )


# conda packages built for one system only: an environment that lists one (as `conda env export`
# writes them) is created there alone, and its pip section runs nowhere else
_LINUX_X86_64 = frozenset(("ld_impl_linux-64", "sysroot_linux-64", "kernel-headers_linux-64"))
_LINUX_AARCH64 = frozenset(("ld_impl_linux-aarch64", "sysroot_linux-aarch64", "kernel-headers_linux-aarch64"))
_LINUX = frozenset(("_libgcc_mutex", "libgcc-ng", "libstdcxx-ng", "libgcc", "libstdcxx", "libgomp")) | _LINUX_X86_64 | _LINUX_AARCH64
_WINDOWS = frozenset(("vc", "vs2015_runtime", "vc14_runtime", "ucrt"))


def _platforms(names: set[str]) -> tuple[str, ...]:
    """The platforms the environment can be created on, where its conda packages say; else () for every one."""
    if names & _LINUX_X86_64 and not names & _LINUX_AARCH64:
        return ("linux-x86_64",)
    if names & _LINUX_AARCH64 and not names & _LINUX_X86_64:
        return ("linux-aarch64",)
    if names & _LINUX and not names & _WINDOWS:
        return ("linux-x86_64", "linux-aarch64")
    if names & _WINDOWS and not names & _LINUX:
        return ("windows-x86_64",)
    return ()


def _load(path: Path, text: str) -> Any:
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        return YAML(typ="rt", pure=True).load(text)
    except YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"{path}{line}: not valid YAML: {problem}") from None
    except RecursionError:
        raise InputError(f"{path}: YAML nested too deeply; not checked") from None


def _span(path: Path, seq: Any, index: int, text: str) -> Span:
    try:
        line, col = seq.lc.item(index)
    except (AttributeError, KeyError, TypeError):
        return Span(str(path), 1, 1, "")
    return Span(str(path), line + 1, col + 1, text)
