"""The rules that read where a pin installs, from its marker and its specifier, against the data's
releases: a marked torch build that exists on none of the platforms its marker allows (CF002), an
unpinned torch that brings a CUDA 13 build from PyPI on Linux (CF008), and a marker that no
platform and Python with a build satisfies (CF009)."""

from __future__ import annotations

import re
from typing import Optional

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from cudafit.check.environments import Environment, admitted, holds_in, names_extra
from cudafit.check.indexes import other_index, serving_urls, torch_variant
from cudafit.check.model import BUILD_SYSTEM, Document, Finding, Pin
from cudafit.check.rules import finding
from cudafit.records import PLATFORMS, PURE, Matrices, TorchRelease


def marked_builds(doc: Document, matrices: Matrices, releases: dict[str, TorchRelease]) -> list:
    """A marked torch pin whose build exists on none of the platforms its marker allows."""
    out = []
    for pin in doc.pins:
        release = releases.get(pin.version or "") if pin.name == "torch" else None
        missing = _platforms_without(pin, release) if release is not None else []
        if missing:
            out.append(
                finding(
                    "CF002",
                    pin.span,
                    f"{pin.name} {pin.version} has no +{pin.local} build for {', '.join(missing)}, and its marker allows no other platform",
                    "pick a build that exists there, or fix the marker",
                )
            )
    return out


def _platforms_without(pin: Pin, release: TorchRelease) -> list[str]:
    """The platforms a marked torch pin is meant for, when its build exists on none of them (the
    data lists torch's builds per platform; the companions' are not recorded, so only torch)."""
    if pin.name != "torch" or pin.local is None or not pin.marker:
        return []
    built = {p for b in release.builds if b.tag == pin.local for p in b.platforms}
    meant = [p for p in sorted(release.platforms) if _marker_allows(pin.marker, [(p, py) for py in sorted(release.pythons(p))])]
    # A marker that holds nowhere is CF009's finding; one that holds where the build is, is fine.
    return meant if meant and not built & set(meant) else []


def unpinned_cuda13(doc: Document, matrices: Matrices, releases: dict[str, TorchRelease]) -> list:
    """An unpinned torch that installs a CUDA 13 build from PyPI on Linux, which needs a recent driver (CF008)."""
    out: list[Finding] = []
    variants = [(torch_variant(i.url), i.kind) for i in doc.indexes if torch_variant(i.url)]
    # A PyTorch index that pip reads only beside PyPI (--extra-index-url) wins only where it has
    # the highest version: PyPI's CUDA 13 build still comes where that index's newest is older.
    if any(kind != "extra-index-url" for _variant, kind in variants) or doc.kind in ("uv-lock", "pylock"):
        return out
    extra = {str(variant) for variant, _kind in variants}
    floor = matrices.compat.get(13)
    pythons = set(admitted(doc.requires_python))
    for pin in doc.pins:
        if pin.name != "torch" or pin.version is not None or pin.constraint or pin.from_index is not None or pin.group == BUILD_SYSTEM:
            continue
        if pin.marker and not _marker_allows(pin.marker, [("linux-x86_64", None)]):
            continue
        try:
            spec = SpecifierSet(pin.specifier)
        except InvalidSpecifier:
            continue
        # Nightlies are not in the data: a spec that names a pre-release or a nightly index
        # (llama.cpp's `torch>=0.0.0.dev0; platform_machine == "s390x"`) is about builds it cannot judge.
        if any(Version(s.version.rstrip(".*")).is_prerelease for s in spec if _parses(s.version)) or any(
            torch_variant(u) == "nightly" or other_index(doc, pin) for u in serving_urls(doc, pin)
        ):
            continue
        # the newest release with a wheel for a Python the file admits (torch 2.15 needs 3.11: a
        # Python 3.10 file gets 2.14.1)
        release = next((r for r in matrices.torch if spec.contains(r.version) and (not pythons or pythons & set(r.pythons("linux-x86_64")))), None)
        tag = release.pypi_variant.get("linux-x86_64") if release is not None else None
        build = next((b for b in release.builds if b.tag == tag and b.cuda is not None), None) if release is not None and tag else None
        if release is None or build is None or build.cuda is None or build.cuda.major < 13:
            continue
        besides = ""
        if extra:
            served = _newest_served(matrices, spec, pythons, extra)
            if served is None or served >= release.version:
                continue  # the index has it too: its +cuXXX ranks above PyPI's equal version
            besides = f" (pip takes the highest version from any index: the {', '.join(sorted(extra))} index's newest is {served})"
        driver = floor.linux_driver_min if floor is not None else "unknown"
        out.append(
            finding(
                "CF008",
                pin.span,
                f"'{pin.span.text}' installs torch {release.version} from PyPI on Linux{besides}, "
                f"a CUDA {build.cuda} build that needs NVIDIA driver >= {driver}",
                "pin the release and a CUDA variant your drivers run (see `cudafit resolve --driver ...`), with its PyTorch index",
            )
        )
    return out


def _newest_served(matrices: Matrices, spec: SpecifierSet, pythons: set[str], variants: set[str]) -> Optional[Version]:
    """The newest release the spec admits that one of these PyTorch index variants has for
    Linux x86_64 and a Python the file admits; None where the data knows none (a variant it lacks)."""
    for release in matrices.torch:  # newest first
        if not spec.contains(release.version) or (pythons and not pythons & set(release.pythons("linux-x86_64"))):
            continue
        if any(b.tag in variants and "linux-x86_64" in b.platforms for b in release.builds):
            return release.version
    return None


def _parses(text: str) -> bool:
    try:
        Version(text.rstrip(".*"))
    except InvalidVersion:
        return False
    return True


def _marker_allows(marker: str, places: list[tuple[str, Optional[str]]]) -> bool:
    """Whether the marker holds on any of the (platform, Python) places; one packaging cannot
    evaluate (an undefined name, a comparison it refuses) is given the benefit of the doubt."""
    # A selection (extra, group) is no platform: such a marker is given the benefit of the doubt.
    return names_extra(marker) or any(holds_in(marker, Environment(platform, python, "")) for platform, python in places)


_SELECTION_WORD = re.compile(r"\b(?:extra|extras|dependency_groups)\b")


def marker_excludes_all(doc: Document, matrices: Matrices, releases: dict[str, TorchRelease]) -> list:
    """A framework pin whose marker holds on no platform and Python its releases have builds for (CF009)."""
    from cudafit.frameworks import providers

    # Each family's own package: its releases' platforms and Pythons are in the data.
    families = {module.MEMBERS[0]: module for module in providers()}
    out: list[Finding] = []
    if doc.kind in ("uv-lock", "pylock"):
        return out  # a lock's markers are its resolver's forks, not a line someone wrote
    for pin in doc.pins:
        # An extra or group is a selection, not a platform: the environments decide it.
        if pin.name not in families or not pin.marker or _SELECTION_WORD.search(pin.marker):
            continue
        if pin.override:
            continue  # uv's override with a marker that holds nowhere is its way to leave a package out (Megatron-LM's torch)
        try:
            spec = SpecifierSet(pin.specifier)
        except InvalidSpecifier:
            continue
        # Nightlies are not in the data: a spec that names a pre-release or a nightly index
        # (llama.cpp's `torch>=0.0.0.dev0; platform_machine == "s390x"`) is about builds it cannot judge.
        if any(Version(s.version.rstrip(".*")).is_prerelease for s in spec if _parses(s.version)) or any(
            torch_variant(u) == "nightly" or other_index(doc, pin) for u in serving_urls(doc, pin)
        ):
            continue
        if pin.version is not None:
            matching = [r for r in families[pin.name].releases(matrices) if str(r.version) == pin.version]
        else:
            matching = [r for r in families[pin.name].releases(matrices) if spec.contains(r.version, prereleases=True)]
        if not matching:
            continue
        where = {(p, py) for r in matching for p in r.platforms for py in r.pythons(p)}
        # where PyPI's files install, as well as where the builds run (bitsandbytes 0.41's
        # py3-none-any wheel installs on Windows too; an sdist may build anywhere: no claim)
        files = {str(f.version): f for f in matrices.wheel_files.get(pin.name, ())}
        installs = [files[str(r.version)] for r in matching if str(r.version) in files]
        if any(f.sdist for f in installs):
            continue
        # a pure wheel ("any") installs on every platform
        where |= {(q, py) for f in installs for p, pys in f.wheels.items() for q in (PLATFORMS if p == PURE else (p,)) for py in pys}
        if not _marker_allows(pin.marker, sorted(where)):
            out.append(
                finding(
                    "CF009",
                    pin.span,
                    f"the marker '{pin.marker}' holds on no platform and Python that {pin.name}{pin.specifier} has a build for: it installs nowhere",
                    "fix the marker, or drop the line",
                )
            )
    return out
