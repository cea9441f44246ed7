"""What a requirement installs besides itself, as pins of the line that asks for it, for CF015 to
judge with the data's file lists: a framework's extra (`jax[cuda12]` brings jax-cuda12-plugin,
which PyPI has for Linux only, so the line fails on macOS and Windows though jax installs there),
and a library's own requirements where the data records them (liger-kernel requires triton, which
has no Windows or macOS wheel). A lockfile lists what was brought itself: nothing is added there."""

from __future__ import annotations

from packaging.requirements import Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from cudafit.check.model import BUILD_SYSTEM, Document, Pin
from cudafit.records import Matrices, WheelFiles

_LOCKED = ("uv-lock", "pylock")


def brought(doc: Document, matrices: Matrices) -> tuple[Pin, ...]:
    """Each package the file's requirements bring that the data's file lists cover, at the line
    of the requirement that brings it and under its marker (and the requirement's own)."""
    if doc.kind in _LOCKED:
        return ()
    out: list[Pin] = []
    for pin in doc.pins:
        if pin.group == BUILD_SYSTEM or pin.constraint or pin.local is not None:
            continue
        try:
            spec = SpecifierSet(pin.specifier)
        except InvalidSpecifier:
            continue  # CF000's business
        if pin.name == "jax" and pin.extras:
            out += _by_jax_extras(pin, spec, matrices)
        elif pin.name in matrices.wheel_files:
            out += _required(pin, spec, matrices.wheel_files[pin.name], matrices)
    return tuple(out)


def _by_jax_extras(pin: Pin, spec: SpecifierSet, matrices: Matrices) -> list[Pin]:
    """jax[extra]'s plugin: at the version the pinned release fixes, or, for a range, any release of
    the range (the plugins are released with jax, version for version)."""
    from cudafit.frameworks import jax

    out: list[Pin] = []
    admitted = [r for r in jax.releases(matrices) if spec.contains(r.version, prereleases=True)]
    for extra in pin.extras:
        # in the data's order: the extra's own requirement (the plugin) before what it brings in turn
        brings: dict[str, set[str]] = {}
        for release in admitted:
            for name, spec_text in jax.extra_brings(release, extra):
                brings.setdefault(name, set()).add(spec_text)
        # one package per extra: the plugin and its pjrt share their platforms, one problem is said once
        for name, fixed in [(n, f) for n, f in brings.items() if n in matrices.wheel_files][:1]:
            text = next(iter(fixed))
            exact = pin.version is not None and len(fixed) == 1 and "*" not in text
            version = text.removeprefix("==") if exact else None
            label = f"jax[{extra}]" + (f" {Version(pin.version)}" if pin.version is not None else "")
            specifier = f"=={version}" if version is not None else pin.specifier
            out.append(pin._replace(name=name, specifier=specifier, version=version, extras=(), required_by=label))
    return out


def _required(pin: Pin, spec: SpecifierSet, releases: tuple[WheelFiles, ...], matrices: Matrices) -> list[Pin]:
    """The requirements every release the pin admits records (liger-kernel's triton), each as the
    releases write it where they agree, else any release of it; under both markers."""
    admitted = [r for r in releases if spec.contains(r.version, prereleases=True)]
    if not admitted or not all(r.requires for r in admitted):
        return []
    said: dict[str, set[tuple[str, str]]] = {}
    for release in admitted:
        for text in release.requires:
            wanted = Requirement(text)
            said.setdefault(str(canonicalize_name(wanted.name)), set()).add((str(wanted.specifier), str(wanted.marker or "")))
    out: list[Pin] = []
    label = f"{pin.name} {pin.version}" if pin.version is not None else pin.name
    for name, forms in said.items():
        markers = {m for _s, m in forms}
        if name not in matrices.wheel_files or name == pin.name or len(markers) != 1:
            continue  # releases that disagree on where it applies: not judged
        if sum(1 for r in admitted if any(str(canonicalize_name(Requirement(t).name)) == name for t in r.requires)) != len(admitted):
            continue  # some release does without it
        specifier = next(iter(forms))[0] if len(forms) == 1 else ""
        both = [m for m in (pin.marker, next(iter(markers))) if m]
        marker = " and ".join(f"({m})" for m in both) if len(both) > 1 else (both[0] if both else None)
        out.append(pin._replace(name=name, specifier=specifier, version=None, local=None, marker=marker, extras=(), required_by=label))
    return out
