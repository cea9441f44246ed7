"""matrices/numpy-abi.toml: the framework releases built against NumPy 1.x whose metadata lets pip
install NumPy 2 beside them, and what then fails (the import, or NumPy conversions)."""

from __future__ import annotations

from typing import NamedTuple, Optional

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from cudafit.fields import read_grade, read_str, read_str_list, table_entries
from cudafit.records import PLATFORMS

FILE = "numpy-abi.toml"
EFFECTS = ("import", "interop")
FAMILIES = ("torch", "tensorflow", "jax", "onnxruntime-gpu")


class NumpyOne(NamedTuple):
    """Releases of a family built against NumPy 1.x, on some platforms (() every one)."""

    family: str
    releases: str  # a specifier over the public version
    platforms: tuple[str, ...]
    effect: str  # import | interop
    grade: str
    sources: tuple[str, ...]


def read(doc: dict, dates: list[str]) -> tuple[NumpyOne, ...]:
    out = []
    for e in table_entries(FILE, doc, "numpy1", "family", dates):
        family = e.get("family", read_str)
        if family not in FAMILIES:
            raise e.fail("family", f"expected one of {', '.join(FAMILIES)}")
        releases = e.get("releases", read_str)
        try:
            SpecifierSet(releases)
        except InvalidSpecifier:
            raise e.fail("releases", "expected a version specifier like >=2.10,<2.12") from None
        platforms = tuple(e.get("platforms", read_str_list, required=False, default=[]))
        unknown = [p for p in platforms if p not in PLATFORMS]
        if unknown:
            raise e.fail("platforms", f"expected platforms among {', '.join(PLATFORMS)}")
        effect = e.get("effect", read_str)
        if effect not in EFFECTS:
            raise e.fail("effect", f"expected one of {', '.join(EFFECTS)}")
        out.append(NumpyOne(family, releases, platforms, effect, e.get("grade", read_grade), tuple(e.get("source", read_str_list))))
        e.finish()
    return tuple(out)


def built_on_numpy1(facts: tuple[NumpyOne, ...], family: str, version: str, platform: Optional[str]) -> Optional[NumpyOne]:
    """The fact that says this release was built against NumPy 1.x on this platform, or None."""
    try:
        public = Version(Version(version).public)
    except InvalidVersion:
        return None
    for fact in facts:
        if fact.family == family and public in SpecifierSet(fact.releases) and (not fact.platforms or platform in fact.platforms):
            return fact
    return None
