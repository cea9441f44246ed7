"""What the joint rules hand the solver and ask of the data about each framework pin: the spec the
solver gets for a pin, the builds the file's indexes can reach, whether a release is in the data,
whether a pin brings CUDA libraries, and which family it belongs to. No findings of its own."""

from __future__ import annotations

from functools import lru_cache, partial
from typing import Any, Optional

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from cudafit.check.indexes import TORCH_MEMBERS, effective_local, indexes_only, is_pypi, only_from_pypi, serving_urls
from cudafit.check.memo import by_identity
from cudafit.check.model import Document, Pin
from cudafit.records import Machine, Matrices, TorchRelease


def solver_spec(doc: Document, pin: Pin, machine: Optional[Machine] = None, matrices: Optional[Matrices] = None) -> str:
    """The spec the solver gets for a pin: its variant made explicit where the index decides it,
    and, on a target machine, where PyPI does (a plain torch==X from PyPI is the build PyPI serves
    on that platform: CUDA 13 on Linux from 2.11, CPU on Windows)."""
    # Only torch's own family is named by local tag on its index; a library read from there
    # (xformers, vllm) is any build of its version.
    local = effective_local(doc, pin) if pin.name in TORCH_MEMBERS else None
    if local is None and pin.labels and matrices is not None:
        from cudafit.check.variant_pick import label_build

        local = label_build(pin.name, pin.version, pin.labels, machine, matrices)
    if local is None and machine is not None and matrices is not None and pin.version and only_from_pypi(doc, pin):
        release = next((r for r in matrices.torch if pin.name == "torch" and str(r.version) == pin.version), None)
        local = (release.pypi_variant or {}).get(machine.platform or "") if release is not None else None
    specifier = f"=={pin.version}+{local}" if local and not pin.local and pin.version else pin.specifier
    return f"{pin.name}{_extras(pin)}{specifier}" + (f"; {pin.marker}" if pin.marker else "")


def _extras(pin: Pin) -> str:
    return f"[{','.join(pin.extras)}]" if pin.extras else ""


def unknown_release(pin: Pin, matrices: Matrices) -> bool:
    from cudafit.frameworks import BY_MEMBER

    if pin.version is None or pin.name not in BY_MEMBER:
        return False
    module = BY_MEMBER[pin.name]
    try:
        version = Version(Version(pin.version).public)  # the build tag (+cu121) names a build, not a release
    except InvalidVersion:
        return False
    # A companion (torchvision, jaxlib) is known when it pairs with a release the data has.
    known = {r.version for r in module.releases(matrices)}
    return not any(v in known for v in module.pairs(pin.name, version, matrices))


def is_library(pin: Pin) -> bool:
    return _library_name(pin.name)


@lru_cache(maxsize=None)  # the registry imports a provider per look-up; a file's views ask again and again
def _library_name(name: str) -> bool:
    from cudafit.frameworks import BY_MEMBER

    return bool(BY_MEMBER[name].REQUIRES)


def reachable_library_builds(doc: Document, members: list[Pin], matrices: Matrices) -> frozenset[tuple[str, str, str]]:
    """The builds of each library pinned in the set (xformers, vllm, ...) that pip can reach for
    that pin: PyPI's wheels and sdist builds where the pin reaches PyPI, those of the PyTorch
    indexes it is read from, and release assets only through an sdist that fetches them
    (flash-attn's): vllm's GitHub wheels are reached by URL, never by `vllm==X`."""
    from cudafit.frameworks import BY_MEMBER

    out: frozenset[tuple[str, str, str]] = frozenset()
    for pin in members:
        if not is_library(pin):
            continue
        indexes = frozenset(url.rstrip("/") for url in serving_urls(doc, pin))
        pypi = not indexes_only(doc, pin) or any(is_pypi(url) for url in indexes)
        # A file's views ask of the same pins again and again: the answer depends on these alone.
        found = by_identity(matrices, ("library-builds", pin.name, indexes, pypi), partial(_library_builds, BY_MEMBER[pin.name], indexes, pypi, matrices))
        out = out | found if out else found
    return out


def _library_builds(provider: Any, indexes: frozenset[str], pypi: bool, matrices: Matrices) -> frozenset[tuple[str, str, str]]:
    from cudafit.frameworks.library import build_label

    out = set()
    for release in provider.releases(matrices):
        from_sdist = any(b.route == "source" for b in release.builds)
        for build in release.builds:
            if build.index_url:
                reachable = build.index_url.rstrip("/") in indexes
            elif build.route == "asset":
                reachable = pypi and from_sdist
            else:
                reachable = pypi
            if reachable:
                out.add((provider.FAMILY, str(release.version), build_label(build)))
    return frozenset(out)


def reachable_torch_builds(doc: Document, members: list[Pin], matrices: Matrices, machine: Machine) -> frozenset[tuple[str, str, str]]:
    """Where torch comes from PyPI (no index in the file, no local tag), the builds PyPI serves
    on this platform: one per release (CUDA 13 on Linux from 2.11, CPU on Windows and macOS)."""
    pins = [p for p in members if p.name in TORCH_MEMBERS]
    platform = machine.platform
    if not pins or any(p.local is not None or not only_from_pypi(doc, p) for p in pins) or platform is None:
        return frozenset()
    return by_identity(matrices.torch, ("pypi-torch", platform), lambda: _pypi_torch_builds(matrices.torch, platform))


def _pypi_torch_builds(releases: tuple[TorchRelease, ...], platform: str) -> frozenset[tuple[str, str, str]]:
    return frozenset(("torch", str(r.version), r.pypi_variant[platform]) for r in releases if platform in r.pypi_variant)


def built_from_source(members: list[Pin], matrices: Matrices) -> bool:
    """A pinned library that pip may compile from its sdist (flash-attn): the data records the
    toolkits that build was tried with, not every one it compiles with, so a clash with it is
    unknown rather than shown."""
    from cudafit.frameworks import BY_MEMBER

    for pin in members:
        if not is_library(pin) or pin.version is None:
            continue
        release = next((r for r in BY_MEMBER[pin.name].releases(matrices) if str(r.version) == pin.version), None)
        if release is not None and any(b.route == "source" for b in release.builds):
            return True
    return False


def brings_cuda(pin: Pin, matrices: Matrices) -> bool:
    """Where every CUDA build of a framework comes through an extra (TensorFlow's [and-cuda], JAX's
    [cuda12]), a pin without one brings no CUDA libraries and cannot clash."""
    from cudafit.frameworks import BY_MEMBER

    releases = BY_MEMBER[pin.name].releases(matrices)
    # a file states one framework pin in many environments
    return by_identity(releases, ("brings-cuda", pin.specifier, pin.extras), lambda: _brings_cuda_of(releases, pin.specifier, pin.extras))


def _brings_cuda_of(releases: tuple, specifier: str, extras: tuple[str, ...]) -> bool:
    try:
        spec = SpecifierSet(specifier)
    except InvalidSpecifier:
        return True
    release = next((r for r in releases if spec.contains(r.version, prereleases=True)), None)
    builds = [b for b in (release.builds if release is not None else ()) if b.kind == "cuda"]
    if not builds or not all(b.extras for b in builds):
        return True
    aliases = getattr(release, "aliases", {})  # jax[cuda] asks what jax[cuda12] asks
    return bool({e for b in builds for e in b.extras} & {aliases.get(e, e) for e in extras})


def pin_family(pin: Pin) -> str:
    return _family_of(pin.name)


@lru_cache(maxsize=None)
def _family_of(name: str) -> str:
    from cudafit.frameworks import BY_MEMBER

    return str(BY_MEMBER[name].FAMILY)


def pin_families(members: list[Pin]) -> set[str]:
    return {pin_family(p) for p in members}
