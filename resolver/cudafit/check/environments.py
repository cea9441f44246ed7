"""The environments a dependency file describes, and the file as each of them sees it.

A file is not one set of pins: markers (`platform_machine == 'aarch64'`), uv's per-extra and
per-group sources, a lockfile's forked resolutions and extras make it several, one per platform,
Python and selection (the base set, or an extra or group on top of it). `check` evaluates each on
its own, so two pins that never install together never clash, and a finding names where it holds.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, NamedTuple, Optional

from cudafit.check.memo import by_identity
from cudafit.check.model import BUILD_SYSTEM, ONE_SET, Document, Pin, Reach
from cudafit.records import Machine

# The platforms wheels are built for, in the data's names; a file that does not limit its
# platforms describes all of them.
PLATFORMS = ("linux-x86_64", "linux-aarch64", "windows-x86_64", "macos-arm64")
# Pythons a file is split by, only where one of its markers asks for the Python.
PYTHONS = ("3.10", "3.11", "3.12", "3.13")
_PYTHON_MARKER = re.compile(r"\bpython_(?:full_)?version\b")


class Environment(NamedTuple):
    platform: str  # linux-x86_64, ...
    python: Optional[str]  # "3.12"; None where the file does not tell Pythons apart
    selection: str  # "" (the base set), "extra cuda", "group dev"

    def label(self) -> str:
        return self.platform + (f", Python {self.python}" if self.python else "") + (f", {self.selection}" if self.selection else "")

    def key(self) -> str:
        """platform/python/selection, as scripts/uv_oracle.py names environments ('*': any Python)."""
        return f"{self.platform}/{self.python or '*'}/{self.selection.replace(' ', ':', 1)}"

    def machine(self) -> Machine:
        """The environment as the machine the joint check asks about: a driver past every floor
        and GPUs unknown, so only the builds' own facts can fail."""
        os_name, arch = self.platform.split("-")
        return Machine(
            os=os_name, arch="aarch64" if arch == "arm64" else arch, python=self.python, driver="999.99.99", driver_known=True, gpus=(), gpus_known=False
        )


def relevant(pin: Pin) -> bool:
    """A pin the environment rules look at: a framework, a library built against one, a CUDA wheel."""
    return pin.name.startswith(("nvidia-", "cuda-")) or pin.name in _members()


@lru_cache(maxsize=1)
def _members() -> frozenset[str]:
    from cudafit.frameworks import BY_MEMBER

    return frozenset(BY_MEMBER)


def selections(doc: Document) -> list[str]:
    """The base set, and each extra or group a file installs on top of it (a requirements file's
    includes are all one set: pip installs them together)."""
    if doc.kind in ONE_SET:
        return [""]
    named = dict.fromkeys(p.group for p in doc.pins if p.group and p.group != BUILD_SYSTEM)
    named.update(dict.fromkeys(r.selection for p in doc.pins for r in p.routes if r.selection))
    # A lockfile has one set of packages; its markers say which extra or group installs each.
    markers = {pin.marker for pin in doc.pins if pin.marker}
    markers.update(atom for pin in doc.pins for path in pin.reached or () for atom in path)
    for marker in sorted(markers):
        for match in _SELECTION_MARKER.finditer(marker):
            name = match["extra"] or match["inside"]
            group = match["extra"] is not None and name.startswith(GROUP_EXTRA) or match["kind"] == "dependency_groups"
            named[f"group {name.removeprefix(GROUP_EXTRA)}" if group else f"extra {name}"] = None
    return ["", *named]


# `extra == 'cuda'` (uv.lock, as lockfiles.conflict_marker rewrites it) and PEP 751's `'cuda' in extras`.
_SELECTION_MARKER = re.compile(
    r"\bextra\s*[=!]=\s*['\"](?P<extra>[^'\"]+)['\"]"
    r"|['\"](?P<inside>[^'\"]+)['\"]\s+(?:not\s+)?in\s+(?P<kind>extras|dependency_groups)\b"
)


def pythons(doc: Document, pins: list[Pin]) -> list[Optional[str]]:
    if not any(p.marker and _PYTHON_MARKER.search(p.marker) for p in pins):
        return [None]
    return list(admitted(doc.requires_python) or PYTHONS)


def admitted(requires_python: str) -> tuple[str, ...]:
    """The Pythons check evaluates that a requires-python admits in some patch release (">=3.10.4"
    admits 3.10); () where it states none or cannot be read (CF000's business, not a guess)."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    if not requires_python:
        return ()
    try:
        allowed = SpecifierSet(requires_python)
    except InvalidSpecifier:
        return ()
    return tuple(py for py in PYTHONS if allowed.contains(f"{py}.0", prereleases=True) or allowed.contains(f"{py}.99", prereleases=True))


def environments(doc: Document, whole: Optional[Document] = None) -> list[Environment]:
    """Every environment of the file: `doc` holds the pins the environment rules read, `whole` (by
    default `doc`) every pin, whose extras and groups are selections too: an extra with no pin of
    its own that the rules read still installs the base set, which may fail there."""
    pins = list(doc.pins)
    if not pins:
        return []
    chosen = selections(whole if whole is not None else doc)
    told = pythons(doc, pins)
    return [Environment(platform, python, selection) for selection in chosen for python in told for platform in doc.platforms or PLATFORMS]


def view(doc: Document, env: Environment) -> Document:
    """The file as `env` installs it: the pins of its selection whose markers hold there, each
    from the index its sources name there; markers are settled, so none is left on a pin."""
    values = marker_values(env)
    kept = []
    for pin in _in_selection(doc, env.selection):
        if pin.marker and not holds(pin.marker, values):
            continue
        if not pin.marker and not pin.group and not pin.routes:
            kept.append(pin)  # settled already: most of a lockfile's packages
            continue
        url = pin.from_index
        if pin.routes:
            url = next((r.url for r in pin.routes if r.selection in ("", env.selection) and (not r.marker or holds(r.marker, values))), None)
        kept.append(pin._replace(marker=None, group="", from_index=url, routes=()))
    return doc._replace(pins=tuple(kept))


def _in_selection(doc: Document, selection: str) -> tuple[Pin, ...]:
    """The pins `selection` installs before markers are read, in file order: the base set and the
    selection's own (a requirements file's includes are all one set). Kept per file, so that the
    views of a file with hundreds of extras each read only their own."""
    if doc.kind in ONE_SET:
        return doc.pins
    return by_identity(doc, ("selection", selection), lambda: _merged(_by_group(doc).get("", ()), _by_group(doc).get(selection, ()) if selection else ()))


def _by_group(doc: Document) -> dict[str, tuple[tuple[int, Pin], ...]]:
    """The file's pins by group (the base set under ""), each with its place in the file: read once."""

    def split() -> dict[str, tuple[tuple[int, Pin], ...]]:
        out: dict[str, list[tuple[int, Pin]]] = {}
        for place, pin in enumerate(doc.pins):
            out.setdefault(pin.group, []).append((place, pin))
        return {group: tuple(pins) for group, pins in out.items()}

    return by_identity(doc, ("by-group",), split)


def _merged(base: tuple[tuple[int, Pin], ...], own: tuple[tuple[int, Pin], ...]) -> tuple[Pin, ...]:
    return tuple(pin for _place, pin in sorted(base + own, key=lambda item: item[0])) if own else tuple(pin for _place, pin in base)


def selective(doc: Document) -> bool:
    """Whether the file's selection (extra or group) changes which pins install or where from: else
    one view serves every selection of a platform and Python."""
    for pin in doc.pins:
        if (pin.group and doc.kind not in ONE_SET) or names_extra(pin.marker):
            return True
        if any(r.selection or names_extra(r.marker) for r in pin.routes):
            return True
    return False


def names_extra(marker: Optional[str]) -> bool:
    return bool(marker) and ("extra" in marker or "dependency_groups" in marker)  # type: ignore[operator]


def reach_names_extra(reached: Optional[Reach]) -> bool:
    return any(names_extra(atom) for path in reached or () for atom in path)


def reaches(reached: Optional[Reach], env: Environment) -> bool:
    """Whether some path of a lock package's reach holds in an environment (None, unknown: held)."""
    return reached is None or any(all(holds_in(atom, env) for atom in path) for path in reached)


def selection_paths(reached: Reach, platform: str, python: Optional[str]) -> Reach:
    """The paths of a reach whose markers that name no selection hold on this platform and Python,
    each cut to the markers that name one: what is left to ask per selection (most paths of a
    package missing a wheel here end at a platform marker, once for every selection)."""
    here = Environment(platform, python, "")
    return tuple(tuple(a for a in path if names_extra(a)) for path in reached if all(holds_in(a, here) for a in path if not names_extra(a)))


def holds_in(marker: str, env: Environment) -> bool:
    """holds(marker, marker_values(env)), remembered by the environment's names (a lock asks a few
    markers of hundreds of environments; hashing three names is cheaper than the values)."""
    return _holds_at(marker, env.platform, env.python, env.selection if names_extra(marker) else "")


@lru_cache(maxsize=65536)
def _holds_at(marker: str, platform: str, python: Optional[str], selection: str) -> bool:
    return holds(marker, marker_values(Environment(platform, python, selection)))


@lru_cache(maxsize=8192)  # platforms x Pythons x a file's extras and groups, met by every file
def marker_values(env: Environment) -> tuple[tuple[str, str], ...]:
    values = dict(_machine_values(env.platform, env.python))
    values["extra"] = env.selection.split(" ", 1)[1] if env.selection.startswith("extra ") else ""
    # Lockfiles write a group as a selection of its own (see lockfiles.conflict_marker).
    if env.selection.startswith("group "):
        values["extra"] = GROUP_EXTRA + env.selection.split(" ", 1)[1]
    if env.python is None:
        # The file does not tell Pythons apart: a Python the frameworks support.
        values["python_version"], values["python_full_version"] = "3.12", "3.12.0"
    return tuple(values.items())  # built in one order every time: equal environments give equal keys


GROUP_EXTRA = "cudafit-group-"


@lru_cache(maxsize=64)  # a file with hundreds of extras has a few platforms and Pythons
def _machine_values(platform: str, python: Optional[str]) -> tuple[tuple[str, str], ...]:
    from cudafit.specs import marker_env

    return tuple(marker_env(Environment(platform, python, "").machine()).items())


def holds(marker: str, values: tuple[tuple[str, str], ...]) -> bool:
    """Whether a marker holds in an environment; one packaging cannot evaluate is taken to hold
    (a finding then rests on the rest of the file, never on a guess that it does not apply)."""
    # The answer depends on the values the marker names alone: `sys_platform == 'linux'` is asked
    # once per platform, not once per platform, Python and extra.
    named = _names_in(marker)
    return _holds(marker, tuple(v for v in values if v[0] in named))


_VARIABLE = re.compile(r"[a-z_]+")


@lru_cache(maxsize=65536)
def _names_in(marker: str) -> frozenset[str]:
    """The environment values a marker may read: every word of it that names one (a word inside a
    quoted value only makes the set larger, which costs a little caching, never a wrong answer)."""
    # packaging still reads PEP 345's dotted names (sys.platform, os.name, platform.machine) and
    # python_implementation as today's names
    words = set(_VARIABLE.findall(marker.replace(".", "_")))
    if "python_implementation" in words:
        words.add("platform_python_implementation")
    if words & {"extras", "dependency_groups"}:
        words.add("extra")  # _holds derives both from the selection
    return frozenset(words)


@lru_cache(maxsize=65536)  # a file's markers meet its environments many times (a lock: hundreds x dozens)
def _holds(marker: str, values: tuple[tuple[str, str], ...]) -> bool:
    from packaging.markers import UndefinedComparison, UndefinedEnvironmentName

    parsed = parsed_marker(marker)
    if parsed is None:
        return True
    env: dict = dict(values)
    extra = env.get("extra", "")
    # PEP 751's markers ('cuda' in extras, 'dev' in dependency_groups) read sets.
    env["extras"] = frozenset({extra}) if extra and not extra.startswith(GROUP_EXTRA) else frozenset()
    env["dependency_groups"] = frozenset({extra.removeprefix(GROUP_EXTRA)}) if extra.startswith(GROUP_EXTRA) else frozenset()
    try:
        return bool(parsed.evaluate(env))
    except (UndefinedComparison, UndefinedEnvironmentName, TypeError, ValueError):
        return True


@lru_cache(maxsize=4096)  # a lock's markers are met in every environment: parsed once each
def parsed_marker(marker: str) -> Any:
    from packaging.markers import InvalidMarker, Marker

    try:
        return Marker(marker)
    except InvalidMarker:
        return None


def describe(envs: list[Environment], every: list[Environment]) -> str:
    """The environments a finding holds in, in few words: '' where it holds in all of them."""
    if set(envs) >= set(every):
        return ""
    # A finding in every Python of a platform and selection need not name them, nor one in every
    # selection of a platform and Python.
    every_python = {e.python for e in every}
    pythons: dict[tuple[str, str], set[Optional[str]]] = {}
    for env in envs:
        pythons.setdefault((env.platform, env.selection), set()).add(env.python)
    selections: dict[tuple[str, Optional[str]], list[str]] = {}
    for (platform, selection), held in pythons.items():
        # None stands for every Python (a file that does not tell them apart).
        for python in [None] if None in held or held >= every_python else sorted(p for p in held if p):
            selections.setdefault((platform, python), []).append(selection)
    every_selection = {e.selection for e in every}
    by_rest: dict[tuple[Optional[str], str], list[str]] = {}
    for (platform, python), chosen in selections.items():
        for selection in [""] if set(chosen) >= every_selection else chosen:
            by_rest.setdefault((python, selection), []).append(platform)
    # Pythons that hold on the same platforms in the same selection are said together.
    by_place: dict[tuple[tuple[str, ...], str], list[str]] = {}
    for (python, selection), platforms in by_rest.items():
        by_place.setdefault((tuple(dict.fromkeys(platforms)), selection), []).append(python or "")
    # Selections that hold on the same platforms and Pythons are said together (extras a, b).
    by_reach: dict[tuple[tuple[str, ...], tuple[str, ...]], list[str]] = {}
    for (places, selection), versions in by_place.items():
        by_reach.setdefault((places, tuple(v for v in versions if v)), []).append(selection)
    parts = []
    for (places, named), chosen in by_reach.items():
        extra = ", ".join(x for x in ("Python " + ", ".join(named) if named else "", _selections_text(chosen)) if x)
        if set(places) >= set(PLATFORMS) and extra:
            parts.append(extra)  # every platform: the selection says it
            continue
        parts.append(", ".join(places) + (f" ({extra})" if extra else ""))
    return "; ".join(parts)


def _selections_text(chosen: list[str]) -> str:
    """'extra cuda', or 'extras cuda, rocm; group dev' for several."""
    if len(chosen) < 2 or "" in chosen:
        return "; ".join(x for x in chosen if x) if "" not in chosen else ""
    kinds: dict[str, list[str]] = {}
    for selection in chosen:
        kind, _, name = selection.partition(" ")
        kinds.setdefault(kind, []).append(name)
    return "; ".join(f"{kind}s {', '.join(names)}" if len(names) > 1 else f"{kind} {names[0]}" for kind, names in kinds.items())
