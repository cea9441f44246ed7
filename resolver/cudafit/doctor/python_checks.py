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
        tags = {tag for text in dist.tags for tag in _tags(text)}
        interpreters = {tag.interpreter for tag in tags}
        machines = {m for tag in tags for m in _platforms_of(tag.platform)}
        # on this machine as read (a described one is the description's: its files are not judged by it)
        if machines and ctx.machine.detected and ctx.machine.platform is not None and ctx.machine.platform not in machines:
            out.append(
                finding(
                    "DR070",
                    f"{build.label} was installed from a wheel for {', '.join(sorted(str(m) for m in machines))}, but this machine is "
                    f"{ctx.machine.platform}: it will not load here.",
                    "Install it here with this environment's own Python:",
                    ctx.repair.commands(),
                )
            )
            continue
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


def _platforms_of(tag: str) -> tuple[str, ...]:
    """cudafit's platforms of a wheel's platform tag (win_amd64: windows-x86_64); none for `any`
    and for tags it does not name."""
    if tag in ("win_amd64", "win_arm64"):
        return ("windows-x86_64",) if tag == "win_amd64" else ("windows-arm64",)
    if tag.startswith(("manylinux", "musllinux", "linux_")):
        return tuple(f"linux-{arch}" for arch in ("x86_64", "aarch64") if tag.endswith(arch))
    if tag.startswith("macosx_"):
        return ("macos-arm64", "macos-x86_64") if tag.endswith("universal2") else ("macos-arm64",) if tag.endswith("arm64") else ("macos-x86_64",)
    return ()


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
