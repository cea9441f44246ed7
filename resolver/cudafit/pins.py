"""Shared nvidia-*/cuda-* requirements: can two frameworks' pins on one distribution both hold?

Each framework's build names versions of the same NVIDIA wheels (nvidia-cudnn-cu12 ==9.1.0.70,
>=9.3.0.75, ...). A set of builds can share one environment only if, for every distribution they
both name, some version satisfies every specifier. The real list of published versions is not in
cudafit's data, so satisfiability is decided over the versions the specifiers themselves name and
the nearest versions around them, which is exact for ==, >=, >, <=, < and ~= bounds.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Optional

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version


@lru_cache(maxsize=None)  # a joint solve meets the same few specifiers in many pairs
def _probes(text: str) -> frozenset[Version]:
    probes: set[Version] = set()
    for item in SpecifierSet(text):
        text = item.version.removesuffix(".*")
        try:
            v = Version(text)
        except InvalidVersion:
            continue
        release = list(v.release)
        probes.add(v)
        # just above the bound (for > and !=), and the next release of each component (for < and ~=)
        probes.add(Version(".".join(map(str, release + [1]))))
        probes.add(Version(".".join(map(str, release + [0, 1]))))
        for i in range(len(release)):
            bumped = release[: i + 1]
            bumped[-1] += 1
            probes.add(Version(".".join(map(str, bumped))))
    return frozenset(probes)


def satisfiable(specs: list[str]) -> bool:
    return _satisfiable(tuple(sorted(specs)))


@lru_cache(maxsize=None)
def _satisfiable(specs: tuple[str, ...]) -> bool:
    # Joint solves ask about the same few specifier pairs many times over. Most pins are exact
    # (torch's are): then the question is only whether the other specifiers admit that version.
    exact = [t[2:] for t in specs if t.startswith("==") and "," not in t and not t.endswith("*")]
    if exact:
        try:
            version = Version(exact[0])
        except InvalidVersion:
            version = None
        if version is not None:
            return all(SpecifierSet(t).contains(version, prereleases=True) for t in specs if t)
    combined = SpecifierSet()
    for text in specs:
        combined &= SpecifierSet(text)
    if not str(combined):
        return True
    candidates: set[Version] = set()
    for text in specs:
        candidates |= _probes(text)
    return any(combined.contains(v, prereleases=True) for v in candidates)


def clash(a: dict[str, str], b: dict[str, str]) -> Optional[tuple[str, str, str]]:
    """(distribution, spec in a, spec in b) for the first distribution both name that no version
    can satisfy, else None."""
    for dist in sorted(set(a) & set(b)):
        try:
            if not satisfiable([a[dist], b[dist]]):
                return dist, a[dist], b[dist]
        except InvalidSpecifier:
            return dist, a[dist], b[dist]
    return None


def combined(pin_sets: list[dict[str, str]]) -> dict[str, str]:
    """For every distribution named by more than one build, the specifier all of them allow."""
    names: dict[str, list[str]] = {}
    for pins in pin_sets:
        for dist, spec in pins.items():
            names.setdefault(dist, []).append(spec)
    out = {}
    for dist, specs in names.items():
        if len(specs) < 2:
            continue
        exact = [t for t in specs if t.startswith("==") and "," not in t and not t.endswith("*")]
        if exact:
            out[dist] = exact[0]  # an exact pin says it all (the others were checked to allow it)
            continue
        # A release pinned by prefix (cuda-toolkit's ==12.6.4.1.*) says it all too, where every
        # other bound admits that release.
        parts = [item for text in specs for item in SpecifierSet(text)]
        prefix = next((item for item in parts if item.operator == "==" and item.version.endswith(".*")), None)
        if prefix is not None:
            release = Version(prefix.version[:-2])
            if all(item.contains(release, prereleases=True) for item in parts if item is not prefix):
                out[dist] = str(prefix)
                continue
        joined = SpecifierSet()
        for text in specs:
            joined &= SpecifierSet(text)
        out[dist] = str(joined)
    return out
