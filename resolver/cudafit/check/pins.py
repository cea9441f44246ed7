"""One requirement string to a Pin: packaging parses it; this module only records where it was."""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple, Optional, Union

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from cudafit.check.model import Pin, Problem, Span

NOT_A_REQUIREMENT = "CF000"


def exact(specifier: SpecifierSet) -> tuple[Optional[str], Optional[str]]:
    """(public version, local tag) of an `==X` or `===X` pin without a wildcard, else (None, None)."""
    specs = list(specifier)
    if len(specs) != 1 or specs[0].operator not in ("==", "===") or specs[0].version.endswith(".*"):
        return None, None
    try:
        version = Version(specs[0].version)
    except InvalidVersion:
        return None, None
    return version.public, version.local


def looks_like_path(text: str) -> bool:
    """A line pip reads as a local path or a URL rather than a name (`./pkg`, `https://.../x.whl`)."""
    return "://" in text or text.startswith((".", "/", "~", "\\")) or text.endswith((".whl", ".tar.gz", ".zip")) or "/" in text.split(";")[0].split("@")[0]


def parse(text: str, span: Span, *, group: str = "", index: Optional[str] = None, constraint: bool = False) -> Union[Pin, Problem, None]:
    """The Pin a requirement string states; a Problem where packaging refuses it; None for a path
    or URL requirement without a name (nothing cudafit can check)."""
    said = _requirement(text)
    if isinstance(said, str):
        return None if looks_like_path(text) else Problem(NOT_A_REQUIREMENT, f"not a valid requirement: {text!r} ({said})", span)
    if said is None:
        return None
    return said._replace(span=span, from_index=index, group=group, constraint=constraint)


_NOWHERE = Span("", 0, 0, "")


@lru_cache(maxsize=8192)  # a pyproject states one requirement in many extras (unsloth: 895 for 200 distinct)
def _requirement(text: str) -> Union[Pin, str, None]:
    """The pin a requirement string states (without its place), packaging's first line of refusal,
    or None for a URL requirement."""
    try:
        req = Requirement(text)
    except InvalidRequirement as exc:
        return str(exc).splitlines()[0]
    if req.url:
        return None
    version, local = exact(req.specifier)
    return Pin(
        name=canonicalize_name(req.name),
        specifier=str(req.specifier),
        span=_NOWHERE,
        version=version,
        local=local,
        marker=str(req.marker) if req.marker is not None else None,
        extras=tuple(sorted(req.extras)),
    )


class Recorded(NamedTuple):
    """A requirement the data records of a release (its METADATA's Requires-Dist), as read."""

    name: str  # normalized
    specifier: str
    marker: Optional[str]


@lru_cache(maxsize=4096)  # the same releases' requirements are read for every file that pins them
def recorded(text: str) -> Recorded:
    """A Requires-Dist string of the data (valid: the data's loader checked it), parsed once."""
    req = Requirement(text)
    return Recorded(canonicalize_name(req.name), str(req.specifier), str(req.marker) if req.marker is not None else None)
