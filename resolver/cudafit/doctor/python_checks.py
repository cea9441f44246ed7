"""Checks on the environment's own files: builds installed for another Python, Pythons a release
has no wheels for, and the parts of the environment that could not be read."""

from __future__ import annotations

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from cudafit.doctor.context import Context, finding
from cudafit.doctor.model import Finding


def python(ctx: Context) -> list[Finding]:
    py = ctx.env.python
    if not py:
        return []
    out = []
    want = "cp" + py.replace(".", "")
    for build in ctx.env.builds:
        dist = ctx.env.distributions.get(canonicalize_name(build.dist))
        if dist is None or not dist.tags:
            continue
        interpreters = {tag.interpreter for text in dist.tags for tag in _tags(text)}
        if all(i.startswith("cp3") for i in interpreters) and want not in interpreters:
            out.append(
                finding(
                    "DR070",
                    f"{build.label} was installed for {', '.join(sorted(interpreters))}, but this environment runs Python {py}: it will not import.",
                    "Reinstall it with this environment's Python:",
                    ctx.repair.commands(),
                )
            )
    return out


def _tags(text: str) -> frozenset:
    from packaging.tags import parse_tag

    try:
        return parse_tag(text)
    except ValueError:
        return frozenset()


def python_support(ctx: Context) -> list[Finding]:
    """The environment's Python against the Pythons the installed release has wheels for (data)."""
    from cudafit.frameworks import release_of
    from cudafit.frameworks.base import python_key

    py = ctx.env.python
    if not py or ctx.machine.platform is None:
        return []
    out = []
    for build in ctx.env.builds:
        try:
            public = Version(Version(build.version).public)
        except InvalidVersion:
            continue
        release = release_of(build.family, public, ctx.matrices)
        if release is None:
            continue
        pythons = release.pythons(ctx.machine.platform)
        if pythons and py not in pythons:
            have = ", ".join(sorted(pythons, key=python_key))
            out.append(
                finding(
                    "DR071",
                    f"{build.label} has no wheels for Python {py} on {ctx.machine.platform} (it has {have}): "
                    "it was built from source or forced in, and is untested there.",
                    "Use a Python its wheels cover, or a release that has wheels for this one:",
                    ctx.repair.commands(),
                    severity="warning",
                )
            )
    return out


def unreadable(ctx: Context) -> list[Finding]:
    return [finding("DR090", problem, severity="warning") for problem in ctx.env.problems]
