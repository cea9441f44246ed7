"""What a requirement installs besides itself, as pins of the line that asks for it, for CF015 to
judge with the data's file lists: a framework's extra (`jax[cuda12]` brings jax-cuda12-plugin,
which PyPI has for Linux only, so the line fails on macOS and Windows though jax installs there),
and a library's own requirements where the data records them (liger-kernel requires triton, which
has no Windows or macOS wheel). A lockfile, or a resolver's output (uv pip compile, pip-compile),
lists what was brought itself: nothing is added there; nor where an override replaces the package."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from cudafit.check.memo import by_identity
from cudafit.check.model import BUILD_SYSTEM, ONE_SET, Document, Pin
from cudafit.check.pins import recorded
from cudafit.records import Matrices, WheelFiles

if TYPE_CHECKING:
    from cudafit.frameworks.jax import JaxRelease

_LOCKED = ("uv-lock", "pylock")


def brought(doc: Document, matrices: Matrices) -> tuple[Pin, ...]:
    """Each package the file's requirements bring that the data's file lists cover, at the line
    of the requirement that brings it and under its marker (and the requirement's own)."""
    if doc.kind in _LOCKED or doc.compiled_here:
        return ()
    out: list[Pin] = []
    for pin in doc.pins:
        if pin.group == BUILD_SYSTEM or pin.constraint or pin.local is not None:
            continue
        jax_extras = pin.name == "jax" and bool(pin.extras)
        if not jax_extras and pin.name not in matrices.wheel_files:
            continue  # nothing recorded of what it brings
        try:
            spec = SpecifierSet(pin.specifier)
        except InvalidSpecifier:
            continue  # CF000's business
        if jax_extras:
            out += _by_jax_extras(doc, pin, spec, matrices)
        else:
            out += _required(pin, spec, matrices.wheel_files[pin.name], matrices)
    # An override replaces every requirement of its name (uv's override-dependencies): the
    # file decides that package's version, not the line that brings it.
    overridden = {p.name for p in doc.pins if p.override}
    return tuple(p for p in out if p.name not in overridden)


def _by_jax_extras(doc: Document, pin: Pin, spec: SpecifierSet, matrices: Matrices) -> list[Pin]:
    """jax[extra]'s plugin, where every release the environment admits brings one: at the version
    the pinned release fixes, or, for a range, any release of it (the plugins are released with jax,
    version for version). The releases admitted are the line's, narrowed by what installs beside it
    (another jax pin; a library whose recorded requirements floor jax: orbax-checkpoint 0.11.22
    asks jax>=0.5.0). A range that reaches below the data's oldest release, or admits a release
    whose extra brings nothing, is not judged: where the plugin has no wheel pip and uv fall back
    to such a release (an unpinned `jax[cuda12]` alone installs jax 0.4.21 on macOS)."""
    from cudafit.frameworks import jax

    known = jax.releases(matrices)
    if not known:
        return []
    oldest = min(r.version for r in known)
    floored = _floored(spec, oldest)
    allowed = {r.version for r in known if spec.contains(r.version, prereleases=True)}
    for other in doc.pins:
        limit = _jax_limit(other, known, oldest, matrices) if other is not pin and _beside(other, pin, doc) else None
        if limit is not None:
            floored, allowed = floored or limit[0], allowed & limit[1]
    admitted = [r for r in known if r.version in allowed]
    if not floored or not admitted:
        return []  # no jax meets them all: CF017's business
    out: list[Pin] = []
    said: set[str] = set()  # jax[cuda,cuda12] names one plugin twice: one problem, said once
    for extra in pin.extras:
        brings = [dict(jax.extra_brings(release, extra)) for release in admitted]
        # in the data's order: the extra's own requirement (the plugin) before what it brings in turn;
        # one package per extra: the plugin and its pjrt share their platforms
        first = next((n for n in brings[0] if n in matrices.wheel_files), None)
        if first is None or first in said or not all(first in b for b in brings):
            continue
        said.add(first)
        fixed = {b[first] for b in brings}
        text = next(iter(fixed))
        exact = len(fixed) == 1 and "*" not in text
        version = text.removeprefix("==") if exact else None
        label = f"jax[{extra}]" + (f" {Version(pin.version)}" if pin.version is not None else "")
        specifier = f"=={version}" if version is not None else pin.specifier
        out.append(pin._replace(name=first, specifier=specifier, version=version, extras=(), required_by=label))
    return out


def _beside(other: Pin, line: Pin, doc: Document) -> bool:
    """Whether `other` is installed wherever `line` is: unmarked, and in the same set (a
    requirements file's lines all are; a project's main dependencies join each extra and group)."""
    if other.marker or other.group == BUILD_SYSTEM:
        return False
    return doc.kind in ONE_SET or other.group in ("", line.group)


def _jax_limit(other: Pin, known: tuple[JaxRelease, ...], oldest: Version, matrices: Matrices) -> Optional[tuple[bool, set[Version]]]:
    """(whether it floors jax at or above the data's oldest release, the data's jax releases it
    allows) of a pin installed beside a jax[extra] line: another jax pin, or a library whose
    recorded requirements name jax in every release it admits; None where it says nothing."""
    try:
        spec = SpecifierSet(other.specifier)
    except InvalidSpecifier:
        return None
    if other.name == "jax":
        return _floored(spec, oldest), {r.version for r in known if spec.contains(r.version, prereleases=True)}
    releases = [r for r in matrices.wheel_files.get(other.name, ()) if spec.contains(r.version, prereleases=True)]
    asks = [[a for a in map(recorded, r.requires) if a.name == "jax"] for r in releases]
    if not releases or not all(len(a) == 1 and a[0].marker is None for a in asks):
        return None  # a release without one (or with a marked one) lets any jax in
    wanted = [SpecifierSet(a[0].specifier) for a in asks]
    allowed = {r.version for r in known if any(w.contains(r.version, prereleases=True) for w in wanted)}
    return all(_floored(w, oldest) for w in wanted), allowed


def _floored(spec: SpecifierSet, oldest: Version) -> bool:
    """Whether the range admits no release older than `oldest` (its lower bound, or an exact pin,
    at or above it)."""
    for clause in spec:
        text = clause.version.removesuffix(".*")
        try:
            bound = Version(text)
        except ValueError:
            continue  # `===` of a non-PEP 440 string: not a floor
        if clause.operator in (">=", ">", "~=", "==", "===") and bound >= oldest:
            return True
    return False


def _required(pin: Pin, spec: SpecifierSet, releases: tuple[WheelFiles, ...], matrices: Matrices) -> list[Pin]:
    """The requirements every release the pin admits records (liger-kernel's triton), each as the
    releases write it where they agree, else any release of it; under both markers."""
    label = f"{pin.name} {pin.version}" if pin.version is not None else pin.name
    out: list[Pin] = []
    for name, specifier, recorded_marker in by_identity(matrices, ("brought", pin.name, pin.specifier), lambda: _agreed(pin.name, spec, releases, matrices)):
        both = [m for m in (pin.marker, recorded_marker) if m]
        marker = " and ".join(f"({m})" for m in both) if len(both) > 1 else (both[0] if both else None)
        out.append(pin._replace(name=name, specifier=specifier, version=None, local=None, marker=marker, extras=(), required_by=label))
    return out


def _agreed(own: str, spec: SpecifierSet, releases: tuple[WheelFiles, ...], matrices: Matrices) -> tuple[tuple[str, str, str], ...]:
    """(name, specifier or "" where they differ, marker) of each requirement of the data's files
    that every release `spec` admits records, with one marker: asked once per name and range (a
    pyproject repeats a requirement in many extras)."""
    admitted = [r for r in releases if spec.contains(r.version, prereleases=True)]
    if not admitted or not all(r.requires for r in admitted):
        return ()
    said: dict[str, set[tuple[str, str]]] = {}
    for release in admitted:
        for text in release.requires:
            wanted = recorded(text)
            said.setdefault(wanted.name, set()).add((wanted.specifier, wanted.marker or ""))
    out = []
    for name, forms in said.items():
        markers = {m for _s, m in forms}
        if name not in matrices.wheel_files or name == own or len(markers) != 1:
            continue  # releases that disagree on where it applies: not judged
        if sum(1 for r in admitted if any(recorded(t).name == name for t in r.requires)) != len(admitted):
            continue  # some release does without it
        out.append((name, next(iter(forms))[0] if len(forms) == 1 else "", next(iter(markers))))
    return tuple(out)
