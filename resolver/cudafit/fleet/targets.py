"""A pyproject.toml's `[[tool.cudafit.targets]]` as a fleet: read and checked exactly as `cudafit
check` reads them (check.runner), so a target means the same machine in both commands."""

from __future__ import annotations

import re
import sys

from cudafit.check.runner import settings_from, targets_from
from cudafit.errors import InputError
from cudafit.fleet.node import Node
from cudafit.records import Matrices

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# A TOML document opens with a table header ([project], [[tool.cudafit.targets]]) or a key; a JSON
# array opens with "[" and a value.
_TOML_START = re.compile(rb"^\s*(\[\[?[A-Za-z_\"']|(?!NodeName=)[A-Za-z_][\w.-]*\s*=\s*[\"'\[{0-9tf])")


def looks_like_toml(head: bytes, label: str) -> bool:
    return label.endswith(".toml") or bool(_TOML_START.match(head))


def nodes(blob: bytes, label: str, matrices: Matrices) -> list[Node]:
    try:
        doc = tomllib.loads(blob.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise InputError(f"{label}: not UTF-8 text (byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{label}: not valid TOML: {exc}") from None
    tool = doc.get("tool")
    table = tool.get("cudafit") if isinstance(tool, dict) else None
    if table is not None and not isinstance(table, dict):
        raise InputError(f"{label}: [tool.cudafit] is not a table")
    settings = settings_from(table, label)
    if not settings.targets:
        raise InputError(f"{label}: no [[tool.cudafit.targets]] to read as the fleet's machines")
    return [
        Node(name=t.name, pool=t.name, os=t.machine.os or "linux", arch=t.machine.arch or "x86_64", machine=t.machine) for t in targets_from(settings, matrices)
    ]
