"""Requirements of one package that no version meets together (CF017): `setuptools<81` in an
included file beside `setuptools>=83`, a `-c` constraint that excludes a pinned version. pip and
uv then find no solution, whatever the index holds: the file alone is the evidence.

Only what is certain is reported. Each specifier set is widened to an interval of public versions
(`!=` and local tags ignored, so the interval holds at least every version the set admits); an
empty meeting of intervals proves that no version exists. Exact pins are tested as they are:
`==2.5.1` and `==2.5.1+cu124` meet (the local build satisfies both)."""

from __future__ import annotations

from functools import lru_cache
from itertools import chain, combinations, product
from typing import NamedTuple, Optional

from packaging.specifiers import InvalidSpecifier, Specifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from cudafit.check.environments import Environment, environments, view
from cudafit.check.model import BUILD_SYSTEM, ONE_SET, Document, Pin
from cudafit.check.pins import recorded
from cudafit.records import Matrices

# Resolved files: their resolver wrote one version per package and fork.
_RESOLVED = ("uv-lock", "pylock", "conda-env")


class Clash(NamedTuple):
    """Two requirements of one package that admit no common version in `environments`."""

    first: Pin
    second: Pin
    environments: tuple[Environment, ...]


class _Bound(NamedTuple):
    version: Version
    inclusive: bool


def contradictions(doc: Document, matrices: Optional[Matrices] = None) -> tuple[list[Clash], list[Environment]]:
    """The clashes of the file, each with the environments it holds in, and the environments
    they were asked of (to word where a clash holds). With the data, an exact pin of a release
    whose own requirements it records (jax's numpy floor) brings those requirements in too."""
    if doc.kind in _RESOLVED:
        return [], []
    suspects = _suspects(doc._replace(pins=doc.pins + _required(doc, matrices)) if matrices is not None else doc)
    if not suspects:
        return [], []
    # Only the pins of pairs that clash somewhere are asked per environment, in every selection of
    # the file: a clash in the base set holds in each of them (each installs the base set).
    sub = doc._replace(pins=suspects)
    every = environments(sub, doc)
    # A view's pins are copies with their markers settled: the original pin is found by what it
    # is (a release's requirement shares the line of the pin that brings it).
    original = {_identity(p): p for p in suspects}
    held: dict[tuple, Clash] = {}
    asked: dict[tuple, Optional[tuple[Pin, Pin]]] = {}
    for env in every:
        pins = view(sub, env).pins
        key = tuple(_identity(p) for p in pins)
        if key not in asked:
            asked[key] = _first_clash(pins)
        found = asked[key]
        if found is not None:
            first, second = (original[_identity(p)] for p in found)
            pair = (_identity(first), _identity(second))
            clash = held.setdefault(pair, Clash(first, second, ()))
            held[pair] = clash._replace(environments=(*clash.environments, env))
    return list(held.values()), every


def _identity(pin: Pin) -> tuple:
    return (pin.span, pin.name, pin.specifier, pin.required_by)


def _required(doc: Document, matrices: Matrices) -> tuple[Pin, ...]:
    """The requirements the data records of each exactly pinned release (jax 0.4.26: numpy>=1.26 on
    Python 3.12), as pins at the line that brings them, under that line's marker too."""

    from cudafit.frameworks import BY_MEMBER

    out: list[Pin] = []
    for pin in doc.pins:
        # the family's own package only: a companion's version (torchvision 0.20.1) is not a release's
        if pin.version is None or pin.group == BUILD_SYSTEM or pin.constraint or pin.name not in BY_MEMBER or pin.name != BY_MEMBER[pin.name].FAMILY:
            continue
        release = next((r for r in BY_MEMBER[pin.name].releases(matrices) if str(r.version) == pin.version), None)
        for text in getattr(release, "requires", ()):
            wanted = recorded(text)
            markers = [m for m in (pin.marker, wanted.marker) if m]
            marker = " and ".join(f"({m})" for m in markers) if len(markers) > 1 else (markers[0] if markers else None)
            brought = pin._replace(name=wanted.name, specifier=wanted.specifier, version=None, local=None, marker=marker, extras=())
            out.append(brought._replace(required_by=f"{pin.name} {pin.version}"))
    return tuple(out)


def _suspects(doc: Document) -> tuple[Pin, ...]:
    """The pins of each pair of one name that can install together (the same set, or the base set
    and an extra or group) and whose specifiers admit no common version, markers aside: most files
    have none, and then no environment is asked."""
    # An override replaces every requirement of its name (uv's override-dependencies): nothing
    # of that name can contradict.
    overridden = {p.name for p in doc.pins if p.override}
    pins = [p for p in doc.pins if p.group != BUILD_SYSTEM and p.specifier and p.name not in overridden]
    by_name: dict[str, list[Pin]] = {}
    for pin in pins:
        by_name.setdefault(pin.name, []).append(pin)
    one_set = doc.kind in ONE_SET  # its includes are all installed together
    kept: set[tuple] = set()
    for same in by_name.values():
        if len(same) < 2:
            continue
        sets: dict[str, list[Pin]] = {}
        for pin in same:
            sets.setdefault("" if one_set else pin.group, []).append(pin)
        base = sets.pop("", [])
        pairs = [combinations(base, 2)] + [chain(combinations(members, 2), product(base, members)) for members in sets.values()]
        for a, b in chain.from_iterable(pairs):
            if a.constraint and b.constraint:
                continue  # constraints install nothing: two of them only bite once a requirement names it
            if disjoint(a.specifier, b.specifier):
                if a.required_by and b.required_by and a.span == b.span:
                    continue  # one release's own lines (numpy>=1.22 and >=1.26 on 3.12) always meet
                kept.update((_identity(a), _identity(b)))
    return tuple(p for p in pins if _identity(p) in kept)


def _first_clash(pins: tuple[Pin, ...]) -> Optional[tuple[Pin, Pin]]:
    """The first pair, in file order, of requirements of one name that admit no common version."""
    by_name: dict[str, list[Pin]] = {}
    for pin in pins:
        by_name.setdefault(pin.name, []).append(pin)
    for same in by_name.values():
        for i, later in enumerate(same):
            for earlier in same[:i]:
                if disjoint(earlier.specifier, later.specifier):
                    return earlier, later
    return None


@lru_cache(maxsize=4096)
def disjoint(a: str, b: str) -> bool:
    """Whether no version meets both specifiers (False where that is not certain, or one cannot
    be read: CF000 speaks of that)."""
    try:
        sets = (SpecifierSet(a), SpecifierSet(b))
    except InvalidSpecifier:
        return False
    exact = [s.version for spec in sets for s in spec if s.operator == "==" and not s.version.endswith(".*")]
    if any(s.operator == "===" for spec in sets for s in spec):
        return False  # arbitrary equality compares strings: nothing to reason about
    if exact:
        try:
            candidates = [Version(v) for v in exact]
        except InvalidVersion:
            return False
        return not any(all(spec.contains(v, prereleases=True) for spec in sets) for v in candidates)
    low: Optional[_Bound] = None
    high: Optional[_Bound] = None
    for spec in sets:
        for one in spec:
            for bound, upper in _bounds(one):
                if upper:
                    high = bound if high is None or _tighter_high(bound, high) else high
                else:
                    low = bound if low is None or _tighter_low(bound, low) else low
    if low is None or high is None:
        return False
    return low.version > high.version or (low.version == high.version and not (low.inclusive and high.inclusive))


def _bounds(spec: Specifier) -> list[tuple[_Bound, bool]]:
    """The interval one specifier lies in, as (bound, is-upper) pairs, on public versions."""
    op, text = spec.operator, spec.version
    if op in ("!=", "==="):
        return []  # nothing an interval can say (!=1.25.* too); === compares strings
    if "!" in text:
        return []  # an epoch: rare enough to leave to the resolver rather than reason about
    try:
        if text.endswith(".*"):  # ==2.5.*: from 2.5's first pre-release to 2.6's
            prefix = Version(text[:-2]).release
            return [(_Bound(Version(_joined(prefix) + ".dev0"), True), False), (_Bound(Version(_joined(_next(prefix)) + ".dev0"), False), True)]
        version = Version(Version(text).public)
    except InvalidVersion:
        return []
    if op == ">=":
        return [(_Bound(version, True), False)]
    if op == ">":
        return [(_Bound(version, False), False)]
    if op == "<=":
        return [(_Bound(version, True), True)]
    if op == "<":
        return [(_Bound(version, False), True)]
    if op == "~=":  # ~=2.5.1: >=2.5.1, ==2.5.*
        prefix = version.release[:-1]
        return [(_Bound(version, True), False), (_Bound(Version(_joined(_next(prefix)) + ".dev0"), False), True)]
    return []  # != narrows nothing that an interval can say


def _joined(release: tuple[int, ...]) -> str:
    return ".".join(map(str, release))


def _next(release: tuple[int, ...]) -> tuple[int, ...]:
    return (*release[:-1], release[-1] + 1)


def _tighter_low(new: _Bound, old: _Bound) -> bool:
    return new.version > old.version or (new.version == old.version and not new.inclusive)


def _tighter_high(new: _Bound, old: _Bound) -> bool:
    return new.version < old.version or (new.version == old.version and not new.inclusive)
