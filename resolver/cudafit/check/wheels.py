"""CF015: a pin none of whose releases has a wheel where the file installs it.

Much of a GPU install is wheels only (torch, TensorFlow, jaxlib, ONNX Runtime, triton, bitsandbytes
from 0.43, the CUDA libraries, ...), and each release's wheels cover some platforms and Pythons.
Where no release a pin admits has a wheel for an environment, and none has an sdist to build from,
pip and uv find nothing to install (uv: "has no wheels with a matching platform tag"). The data
records every release's files of these distributions from PyPI (matrices/wheels.toml), so the
finding is a fact of PyPI's, not a guess; a pin served by another index (a route, --index-url) is
that index's business and is not judged. Pythons are the file's own: those its requires-python
admits (of the ones check evaluates), or the one its markers split on; a file that states none is
judged on platforms only, since its user picks the Python.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple, Optional

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from cudafit.check.environments import Environment, admitted, reaches, selection_paths
from cudafit.check.memo import by_identity
from cudafit.check.model import Document, Pin, Reach, Span
from cudafit.records import PURE, Matrices, WheelFiles


class Missing(NamedTuple):
    """A pin with no wheel in some environments: what to say, how to fix it, and where it holds."""

    span: Span
    message: str
    fix: str
    environments: list[Environment]


def stated_pythons(doc: Document) -> tuple[Optional[str], ...]:
    """The Pythons the file says it installs on, of those check evaluates; (None,) where it says none."""
    return admitted(doc.requires_python) or (None,)


def judged(pin: Pin, matrices: Matrices) -> bool:
    """Whether CF015 may judge `pin`: a lock's package with a list of wheels of its own and nothing
    to build from, or a pin of a distribution the data lists (not a +local build: another index's,
    which the index rules judge). Never a -c constraint (it installs nothing), nor a lock's package
    whose reach is unknown."""
    if pin.constraint or pin.reached is None:
        return False
    if pin.files is not None:
        return not pin.files.sdist and PURE not in pin.files.wheels
    return pin.local is None and pin.name in matrices.wheel_files


# wheel_key -> the releases of each pin CF015 judges
Judged = dict[tuple[str, str, Optional[WheelFiles]], tuple[WheelFiles, ...]]


def wheel_key(pin: Pin) -> tuple[str, str, Optional[WheelFiles]]:
    """What a pin's wheels depend on: a lock may hold one version twice (PyPI's and another index's
    files), each with its own list."""
    return (pin.name, pin.specifier, pin.files)


def wheel_pins(doc: Document, matrices: Matrices) -> Judged:
    """wheel_key -> the releases each pin CF015 judges admits, newest first, where every
    one of them is wheels only: a lock's package, its own files; any other pin, the data's releases
    (none where the data knows no release the specifier admits)."""
    out: Judged = {}
    for pin in doc.pins:
        key = wheel_key(pin)
        if key in out or not judged(pin, matrices):
            continue
        releases = (pin.files,) if pin.files is not None else admitted_releases(pin, matrices.wheel_files[pin.name])
        if releases and not any(r.sdist for r in releases):
            out[key] = releases
    return out


def admitted_releases(pin: Pin, releases: tuple[WheelFiles, ...]) -> tuple[WheelFiles, ...]:
    """The releases `pin` admits, newest first, as pip and uv choose them (pre-releases only where it
    names one or nothing else fits)."""
    try:
        spec = SpecifierSet(pin.specifier)
    except InvalidSpecifier:
        return ()  # CF000's business
    by_version = {r.version: r for r in releases}
    return tuple(by_version[v] for v in spec.filter(by_version))


def _has_wheel(release: WheelFiles, platform: str, python: Optional[str]) -> bool:
    if python is None:
        return platform in release.wheels or PURE in release.wheels
    return python in release.pythons(platform)


class Gap(NamedTuple):
    """A judged pin and where on one platform its releases have no wheel: for these Pythons, or
    (gone) for none at all."""

    pin: Pin
    releases: tuple[WheelFiles, ...]
    pythons: tuple[Optional[str], ...]
    gone: bool
    # per Python of `pythons`, the paths of the pin's reach left to ask of a selection there
    left: tuple[Reach, ...] = ()


def gaps(doc: Document, judged: Judged, platform: str, wanted: tuple[Optional[str], ...]) -> list[Gap]:
    """The pins of `doc` (one view; `judged` from wheel_pins()) with no wheel on `platform` for some
    of the `wanted` Pythons: what the files say, before asking where the project installs them."""
    out: list[Gap] = []
    for pin in doc.pins:
        releases = judged.get(wheel_key(pin))
        if releases is None or pin.reached is None:
            continue
        # A file's views hold the same pins again and again: each is asked once per platform.
        lacking, gone = by_identity(judged, ("lacking", wheel_key(pin), platform, wanted), partial(_lacking, releases, platform, wanted))
        if lacking:
            left = tuple(selection_paths(pin.reached, platform, py) for py in lacking)
            out.append(Gap(pin, releases, lacking, gone, left))
    return out


def _lacking(releases: tuple[WheelFiles, ...], platform: str, wanted: tuple[Optional[str], ...]) -> tuple[tuple[Optional[str], ...], bool]:
    """The wanted Pythons none of the releases has a wheel for on `platform`, and whether none has one at all."""
    lacking = tuple(py for py in wanted if not any(_has_wheel(r, platform, py) for r in releases))
    return lacking, bool(lacking) and not any(_has_wheel(r, platform, None) for r in releases)


def no_wheel(doc: Document, found: list[Gap], matrices: Matrices, env: Environment) -> list[Missing]:
    """The findings of `found` (gaps() of `doc` on `env`'s platform) where the project installs
    each pin in `env`'s selection, and the environments each holds in."""
    out: list[Missing] = []
    for gap in found:
        pin, releases = gap.pin, gap.releases
        # a lock's reach is asked only where a wheel is missing, and per selection only what names one
        missing = [py for py, left in zip(gap.pythons, gap.left, strict=True) if reaches(left, Environment(env.platform, py, env.selection))]
        if not missing:
            continue  # the project does not install it there
        if gap.gone:
            every = matrices.wheel_files.get(pin.name, ()) if pin.files is None else ()
            out.append(Missing(pin.span, _platform_message(pin, releases), _platform_fix(pin, releases, every, env.platform), [env]))
        else:
            versions = ", ".join(py for py in missing if py is not None)
            where = [Environment(env.platform, py, env.selection) for py in missing if py is not None]
            out.append(Missing(pin.span, _python_message(pin, releases, env.platform, versions, doc), _python_fix(pin, doc, versions), where))
    return out


def _what(pin: Pin, releases: tuple[WheelFiles, ...]) -> str:
    if pin.version is not None:
        return f"{pin.name} {pin.version}"
    span = f"{releases[-1].version}" if len(releases) == 1 else f"{releases[-1].version} to {releases[0].version}"
    return f"no release of {pin.name} that '{pin.specifier}' admits ({span})" if pin.specifier else f"no release of {pin.name} on PyPI ({span})"


def _platforms(releases: tuple[WheelFiles, ...]) -> str:
    return ", ".join(sorted({p for r in releases for p in r.wheels})) or "none"


def _platform_message(pin: Pin, releases: tuple[WheelFiles, ...]) -> str:
    said = _platform_said(pin, releases)
    return f"{pin.required_by} installs {pin.name}; {said}" if pin.required_by else said


def _platform_said(pin: Pin, releases: tuple[WheelFiles, ...]) -> str:
    sdist = "no sdist" if len(releases) == 1 else "none has an sdist"
    tail = f"and {sdist} to build from: pip and uv find nothing to install"
    if pin.files is not None:
        return f"{_what(pin, releases)} has no wheel for this platform in the lock (its wheels there: {_platforms(releases)}) {tail}"
    if pin.version is not None:
        return f"{_what(pin, releases)} has no wheel for this platform (its wheels: {_platforms(releases)}) {tail}"
    return f"{_what(pin, releases)} has a wheel for this platform (theirs: {_platforms(releases)}) {tail}"


def _python_message(pin: Pin, releases: tuple[WheelFiles, ...], platform: str, versions: str, doc: Document) -> str:
    from cudafit.frameworks.base import python_range

    has = python_range(frozenset().union(*(r.pythons(platform) for r in releases)))
    if pin.version is not None:
        said = f"{_what(pin, releases)} has no wheel for Python {versions} (its wheels: Python {has})"
    else:
        said = f"{_what(pin, releases)} has a wheel for Python {versions} (theirs: Python {has})"
    if doc.requires_python:
        said += f", {_whose_python(doc)}"
    return f"{pin.required_by} installs {pin.name}; {said}" if pin.required_by else said


def _whose_python(doc: Document) -> str:
    """Where the file's Pythons come from, in its own terms."""
    if doc.kind == "dockerfile":
        return "the image's Python"
    if doc.kind == "requirements":  # cudafit's own output, which names the Python it was written for
        return "the Python the file was generated for"
    return f"which requires-python '{doc.requires_python}' admits"


def _platform_fix(pin: Pin, releases: tuple[WheelFiles, ...], every: tuple[WheelFiles, ...], platform: str) -> str:
    if pin.required_by:
        # the platforms of the releases the line admits: an older release's wheels do not help it
        where = ", ".join(sorted({p for r in releases for p in r.wheels}))
        return f"limit '{pin.span.text}' with an environment marker to the platforms {pin.name} has wheels for ({where})"
    if pin.files is not None:
        return "in the lock's source, limit it with a marker to the platforms it has wheels for, or take a release with a wheel here; then lock again"
    newest = next((r for r in every if _has_wheel(r, platform, None)), None)
    if newest is None:
        return f"no release of {pin.name} has a wheel for this platform: limit it with an environment marker to the platforms it has wheels for"
    return f"limit it with an environment marker to the platforms it has wheels for, or allow a release with a wheel here ({pin.name} {newest.version} has one)"


def _python_fix(pin: Pin, doc: Document, versions: str) -> str:
    target = f"{pin.name} {pin.version}" if pin.version is not None else f"the releases of {pin.name} it admits"
    allow = f"allow a release that has wheels for Python {versions}"
    if pin.required_by:
        return f"limit '{pin.span.text}' with a marker to the Pythons {target} has wheels for, or {allow}"
    if doc.kind == "dockerfile":
        return f"take an image whose Python {target} has wheels for, or {allow}"
    if doc.requires_python and doc.kind == "requirements":
        return f"generate the file again for a Python {target} has wheels for, or {allow}"
    limit = "narrow requires-python" if doc.requires_python else "limit it with a marker"
    return f"{limit} to the Pythons {target} has wheels for, or {allow}"


def compiled_platforms(doc: Document, matrices: Matrices) -> tuple[str, ...]:
    """Where a file a resolver wrote for its own platform can have been written: the platforms on
    which every exact pin of the data's file lists has a wheel (or an sdist). Judging it elsewhere
    asks of it what it never claimed; () where no pin tells, or no platform fits them all."""
    from cudafit.check.environments import PLATFORMS

    places = set(PLATFORMS)
    told = False
    for pin in doc.pins:
        if pin.version is None or pin.marker or pin.name not in matrices.wheel_files:
            continue
        release = next((r for r in matrices.wheel_files[pin.name] if str(r.version) == pin.version), None)
        if release is None or release.sdist:
            continue
        places &= {p for p in PLATFORMS if _has_wheel(release, p, None)}
        told = True
    return tuple(p for p in PLATFORMS if p in places) if told and places else ()
