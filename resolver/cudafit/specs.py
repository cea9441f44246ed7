"""Spec texts to the solver's question: each PEP 508 requirement (a bare framework name, a version
range, extras, an environment marker) becomes its framework family's member specifiers and extras,
markers evaluated for the target machine rather than this one."""

from __future__ import annotations

from typing import Optional

from packaging.specifiers import SpecifierSet

from cudafit.errors import InputError
from cudafit.frameworks import BY_FAMILY, BY_MEMBER, DEFAULT_SPEC, KNOWN
from cudafit.records import Machine, Matrices


def parse_specs(
    texts: list[str], machine: Machine, matrices: Optional[Matrices] = None
) -> tuple[dict[str, dict[str, SpecifierSet]], dict[str, frozenset[str]]]:
    """(family -> {distribution: combined specifier}, family -> extras asked for), families in the
    order first named. Markers are evaluated for the target machine."""
    families: dict[str, dict[str, SpecifierSet]] = {}
    extras: dict[str, frozenset[str]] = {}
    for text in texts or [DEFAULT_SPEC]:
        if text in BY_MEMBER:
            # A bare framework name (the common `resolve torch`) has nothing to parse; PEP 508's
            # parser and its marker machinery cost a tenth of the whole run to import.
            provider = BY_MEMBER[text]
            members = families.setdefault(provider.FAMILY, {})
            members[text] = members.get(text, SpecifierSet())
            families[provider.FAMILY] = provider.implied(members)
            continue
        from packaging.requirements import InvalidRequirement, Requirement
        from packaging.utils import canonicalize_name

        try:
            req = Requirement(text)
        except InvalidRequirement as exc:
            raise InputError(f"not a PEP 508 requirement{_column(str(exc))} ({str(exc).splitlines()[0]})", field="spec", value=text) from None
        name = canonicalize_name(req.name)
        if name not in BY_MEMBER:
            raise InputError(f"unknown framework {req.name!r}; expected one of {KNOWN}", field="spec", value=text)
        if req.url:
            raise InputError("a URL requirement names one file; cudafit picks among releases", field="spec", value=text)
        wanted = {canonicalize_name(e) for e in req.extras}
        provider = BY_MEMBER[name]
        known = {canonicalize_name(e) for e in (provider.known_extras(matrices) if matrices is not None else ())}
        unknown = wanted - known
        if unknown:
            raise InputError(
                f"unknown extra {', '.join(sorted(unknown))} for {name}"
                + (f" (known: {', '.join(sorted(known))})" if known else " (it has none cudafit knows)"),
                field="spec",
                value=text,
            )
        if req.marker is not None and not req.marker.evaluate(marker_env(machine)):
            continue
        family = provider.FAMILY
        members = families.setdefault(family, {})
        members[name] = members.get(name, SpecifierSet()) & req.specifier
        families[family] = provider.implied(members)
        if wanted:
            extras[family] = extras.get(family, frozenset()) | frozenset(wanted)  # PEP 685 normalised
            problem = provider.check_extras(extras[family])
            if problem:
                raise InputError(problem, field="spec", value=text)
    if not families:
        raise InputError("no spec applies to this machine (every environment marker is false)", field="spec", value=" ".join(texts))
    # A library built against a framework brings that framework along.
    for family in list(families):
        for needed in BY_FAMILY[family].REQUIRES:
            families.setdefault(needed, {BY_FAMILY[needed].MEMBERS[0]: SpecifierSet()})
        # and the companions it pins (torchvision), so that they come from that framework's index
        for dist in BY_FAMILY[family].BRINGS:
            owner = BY_MEMBER[dist]
            members = families.setdefault(owner.FAMILY, {})
            members.setdefault(dist, SpecifierSet())
            families[owner.FAMILY] = owner.implied(members)
    return families, extras


def _column(message: str) -> str:
    """packaging prints the spec indented by 4 with a caret line under it; keep the caret's
    column (1-based), so the message stays on one line."""
    for line in message.splitlines()[2:]:
        if "^" in line and set(line.strip()) <= {"^", "~"}:
            return f" at column {line.index('^') - 3}"
    return ""


def marker_env(machine: Machine) -> dict[str, str]:
    from packaging.markers import default_environment

    env: dict[str, str] = {k: str(v) for k, v in default_environment().items()}
    if machine.python:
        env["python_version"] = machine.python
        env["python_full_version"] = machine.python + ".0"
    if machine.os:
        env["sys_platform"] = {"linux": "linux", "wsl": "linux", "windows": "win32", "macos": "darwin"}.get(machine.os, machine.os)
        env["platform_system"] = {"linux": "Linux", "wsl": "Linux", "windows": "Windows", "macos": "Darwin"}.get(machine.os, machine.os)
        env["os_name"] = "nt" if machine.os == "windows" else "posix"
    if machine.arch:
        env["platform_machine"] = {
            "x86_64": "AMD64" if machine.os == "windows" else "x86_64",
            "aarch64": "arm64" if machine.os in ("macos", "windows") else "aarch64",
        }.get(machine.arch, machine.arch)
    return env
