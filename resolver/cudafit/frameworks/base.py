"""What every provider's candidate loop does before it judges a release's builds: the spec, the
wheels for the platform, the Mac's version, the target Python."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any, Optional, Union

from packaging.specifiers import SpecifierSet

from cudafit import rules
from cudafit.answers import VERSION_SPEC, Candidate, Rejection
from cudafit.records import Build, Constraint, Machine, Shortfall


def python_key(python: str) -> tuple[int, ...]:
    """'3.10' sorts after '3.9'."""
    return tuple(int(x) for x in python.split("."))


@lru_cache(maxsize=256)  # the same few sets come back for every build a solve rejects on Python
def python_range(pythons: frozenset[str]) -> str:
    """The Pythons as a range, 3.9-3.12; a gap is written out (3.10, 3.12: petit-kernel 0.0.2 has no 3.11 wheel)."""
    ordered = sorted(pythons, key=python_key)
    if not ordered:
        return "none"
    runs: list[list[str]] = [[ordered[0]]]
    for python in ordered[1:]:
        major, minor = python_key(runs[-1][-1])[:2]
        if python_key(python)[:2] == (major, minor + 1):
            runs[-1].append(python)
        else:
            runs.append([python])
    return ", ".join(run[0] if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs)


# Defaults of the provider protocol for a family of one member with no extras of its own to pair
# (ONNX Runtime, the libraries built against torch): a provider assigns them by name.
def named(label: str, warnings: Iterable[str]) -> list[str]:
    """Warnings said beside other frameworks' own: each names whose it is ("tensorflow 2.20.0+cu12:
    no SASS for this GPU ..."), unless it already begins with the package's name."""
    family = label.split(" ", 1)[0].split("[", 1)[0]
    return [w if w.startswith(family) else f"{label}: {w}" for w in warnings]


def no_extras(matrices: Any) -> set[str]:
    return set()


def releases_of(family: str) -> Callable[[Any], tuple]:
    """The `releases` of a family whose records the loader keeps as they are, newest first."""

    def releases(matrices: Any) -> tuple:
        return matrices.frameworks.get(family, ())

    return releases


def single_member_protocol(family: str) -> tuple[Callable[..., Any], ...]:
    """known_extras, releases, implied, check_extras, pairs of a family of one distribution with
    no extras of its own (ONNX Runtime's siblings: the libraries built against torch)."""
    return no_extras, releases_of(family), implied_none, extras_always_fit, pairs_itself


def implied_none(member_specs: dict[str, SpecifierSet]) -> dict[str, SpecifierSet]:
    return member_specs


def extras_always_fit(extras: frozenset[str]) -> Optional[str]:
    return None


def pairs_itself(member: str, version: Any, matrices: Any) -> list[Any]:
    return [version]


def screen(family: str, release: Any, spec: SpecifierSet, spec_name: str, wheels: str, machine: Machine) -> Optional[Rejection]:
    """Why `release` is out before any build of it is judged, or None. `release` has version,
    platforms, pythons(platform), macos_min and macos_min_by_python; `wheels` names the
    distribution whose wheels decide the platform (jaxlib for jax)."""

    def out(constraint: Constraint, reason: str, cause: str = "", shortfall: Optional[Shortfall] = None) -> Rejection:
        return Rejection(family, release.version, None, constraint, reason, cause=cause, shortfall=shortfall)

    if not spec.contains(release.version, prereleases=True):
        return out("spec", f"does not satisfy {spec_name}{spec}", VERSION_SPEC)
    platform = machine.platform
    if platform not in release.platforms:
        return out("platform", f"no {wheels} wheels for {platform}")
    too_old = rules.macos_too_old(release.macos_min, release.macos_min_by_python, machine)
    if too_old:
        return out("platform", too_old)
    pythons = release.pythons(platform)
    if machine.python is not None and machine.python not in pythons:
        has = python_range(pythons)
        return out("python", f"no wheel for Python {machine.python} (has {has})", shortfall=Shortfall("python", has, machine.python))
    return None


# judge(release, build) -> a Rejection, or (sort key after the release's age, candidate)
Judge = Callable[[Any, Build], Union[Rejection, tuple[tuple, Candidate]]]


def rank_builds(family: str, releases: Iterable[Any], spec: SpecifierSet, machine: Machine, judge: Judge) -> tuple[list[Candidate], list[Rejection]]:
    """The candidate loop of a family of one distribution (ONNX Runtime, a library built against
    torch): each release that passes the screen, each of its builds for this platform judged,
    best first by (the judge's tier, newest release, the judge's preference)."""
    ranked: list[tuple[tuple, Candidate]] = []
    rejected: list[Rejection] = []
    for age, release in enumerate(releases):
        out = screen(family, release, spec, family, family, machine)
        if out is not None:
            rejected.append(out)
            continue
        builds = [b for b in release.builds if machine.platform in b.platforms]
        if not builds:
            rejected.append(Rejection(family, release.version, None, "platform", f"no build for {machine.platform} in cudafit's data (see its notes)"))
        for build in builds:
            verdict = judge(release, build)
            if isinstance(verdict, Rejection):
                rejected.append(verdict)
                continue
            (tier, *preference), candidate = verdict
            ranked.append(((tier, age, *preference), candidate))
    ranked.sort(key=lambda item: item[0])
    return [c for _k, c in ranked], rejected


def split_locals(specs: dict[str, SpecifierSet]) -> tuple[dict[str, SpecifierSet], set[str]]:
    """(the specs with local version labels removed, the build tags those labels named)."""
    public: dict[str, SpecifierSet] = {}
    tags: set[str] = set()
    for name, spec in specs.items():
        kept = []
        for item in spec:
            version = item.version.rstrip(".*")
            if "+" in version and item.operator in ("==", "==="):
                base, _, local = item.version.partition("+")
                tags.add(local.lower())
                kept.append(f"=={base}")
            else:
                kept.append(str(item))
        public[name] = SpecifierSet(",".join(kept))
    return public, tags


def amd_answered(machine: Machine, family: str) -> Optional[str]:
    """Where an AMD GPU is answered (JAX's and TensorFlow's ROCm builds are then judged), why a
    CPU build of `family` would be the answer; None elsewhere (the NVIDIA path never imports the
    AMD rules)."""
    if not any(g.vendor == "amd" for g in machine.gpus):
        return None
    from cudafit.vendor_rules import answered_gpus, cpu_beside

    return (cpu_beside(machine, family=family) or "") if answered_gpus(machine, "amd") else None
