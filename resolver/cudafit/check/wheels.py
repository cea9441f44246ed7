"""CF015: an exact pin of a release that has no wheel where the file installs it.

torch, TensorFlow, jaxlib, ONNX Runtime GPU and the libraries without an sdist are wheels only:
where a release has no wheel for a platform or Python, pip and uv find nothing to install (uv:
"has no wheels with a matching platform tag"). The data records each release's platforms and
Pythons from its PyPI file list, so this is a fact, not a guess. Pythons are the file's own:
those its requires-python admits (of the ones check evaluates), or the one its markers split on;
a file that states none is judged on platforms only, since its user picks the Python.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from cudafit.check.environments import Environment, admitted, holds, marker_values
from cudafit.check.model import Document, Span
from cudafit.records import Matrices


class Missing(NamedTuple):
    """A pin with no wheel in some environments: what to say, how to fix it, and where it holds."""

    span: Span
    message: str
    fix: str
    environments: list[Environment]


def stated_pythons(doc: Document) -> tuple[Optional[str], ...]:
    """The Pythons the file says it installs on, of those check evaluates; (None,) where it says none."""
    return admitted(doc.requires_python) or (None,)


def wheel_releases(doc: Document, matrices: Matrices) -> dict[tuple[str, str], Any]:
    """(name, version) -> the data's release of each wheels-only distribution `doc` pins exactly,
    which CF015 judges (from PyPI's wheels: a +local build is the index's, which the index rules
    judge; a lock's package whose reach is unknown is not judged)."""
    from cudafit.frameworks import BY_MEMBER

    out: dict[tuple[str, str], Any] = {}
    for pin in doc.pins:
        if pin.version is None or pin.local is not None or pin.reached is None or pin.name not in BY_MEMBER:
            continue
        module = BY_MEMBER[pin.name]
        if module.SDIST or pin.name != module.WHEELS or (pin.name, pin.version) in out:
            continue
        try:
            wanted = Version(pin.version)
        except InvalidVersion:
            continue
        release = next((r for r in module.releases(matrices) if r.version == wanted), None)
        if release is not None:
            out[(pin.name, pin.version)] = release
    return out


def no_wheel(doc: Document, judged: dict[tuple[str, str], Any], env: Environment, pythons: tuple[Optional[str], ...]) -> list[Missing]:
    """Each exact pin of `doc` (one environment's view) whose release in `judged` (wheel_releases()) has
    no wheel on `env`'s platform, or on some of `pythons` there: the finding, and the environments
    it holds in."""
    from cudafit.frameworks import BY_MEMBER
    from cudafit.frameworks.base import python_range, screen

    out: list[Missing] = []
    wanted = (env.python,) if env.python is not None else pythons
    for pin in doc.pins:
        release = judged.get((pin.name, pin.version or ""))
        if release is None or pin.local is not None or pin.reached is None:
            continue
        module = BY_MEMBER[pin.name]
        exact = SpecifierSet(f"=={release.version}")
        missing: list[Optional[str]] = []
        platform_gone = False
        for python in wanted:
            if pin.reached and not holds(pin.reached, marker_values(Environment(env.platform, python, env.selection))):
                continue  # the project does not install it there
            rejection = screen(module.FAMILY, release, exact, pin.name, pin.name, env.machine()._replace(python=python))
            if rejection is None:
                continue
            if rejection.constraint == "platform":
                platform_gone = True
                break
            missing.append(python)
        if platform_gone:
            has = ", ".join(sorted(release.platforms)) or "none"
            said = f"{pin.name} {pin.version} has no wheel for this platform (its wheels: {has}) and no sdist to build from: pip and uv find nothing to install"
            fix = "limit it with an environment marker to the platforms it has wheels for, or pin a release that has wheels here"
            out.append(Missing(pin.span, said, fix, [env]))
        elif missing:
            where = [Environment(env.platform, py, env.selection) for py in missing if py is not None]
            versions = ", ".join(py for py in missing if py is not None)
            has = python_range(release.pythons(env.platform))
            said = f"{pin.name} {pin.version} has no wheel for Python {versions} (its wheels: Python {has})"
            if doc.requires_python:
                said += f", which requires-python '{doc.requires_python}' admits"
            limit = "narrow requires-python" if doc.requires_python else "limit it with a marker"
            fix = f"{limit} to the Pythons {pin.name} {pin.version} has wheels for, or pin a release that has wheels for Python {versions}"
            out.append(Missing(pin.span, said, fix, where))
    return out
