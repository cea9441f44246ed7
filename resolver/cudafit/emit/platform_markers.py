"""Environment markers of requirement lines: whether a line is for the platform the set was solved
for, the marker that keeps our pins to that platform, and what a user's line for one of our
packages keeps on the other platforms."""

from __future__ import annotations

import re
from typing import Callable, Optional

from packaging.requirements import InvalidRequirement, Requirement

from cudafit.answers import Resolution


def requirement_marker(requirement: str) -> Optional[str]:
    try:
        marker = Requirement(requirement).marker
    except InvalidRequirement:
        return None
    return str(marker) if marker is not None else None


def holds_here(resolution: Resolution) -> Callable[[str], bool]:
    """Whether a marker holds on the machine the set was solved for (one it cannot evaluate does)."""
    from packaging.markers import InvalidMarker, Marker, UndefinedComparison, UndefinedEnvironmentName

    from cudafit.specs import marker_env

    env = marker_env(resolution.machine)

    def holds(text: str) -> bool:
        try:
            return bool(Marker(text).evaluate(env))
        except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
            return True

    return holds


def here_or_unmarked(requirement: str, here: Callable[[str], bool]) -> bool:
    marker = requirement_marker(requirement)
    return marker is None or here(marker)


_PLATFORM_WORDS = re.compile(r"\b(?:sys_platform|platform_system|os_name|platform_machine|sys\.platform|os\.name|platform\.machine)\b")
_SYS_PLATFORM = {"linux": "linux", "wsl": "linux", "windows": "win32", "macos": "darwin"}


def platform_marker(resolution: Resolution) -> str:
    platform = _SYS_PLATFORM.get(resolution.machine.os or "")
    return f"sys_platform == '{platform}'" if platform else ""


def _holds_somewhere(marker: str) -> bool:
    """Whether a marker holds on any platform and Python a project installs on (one packaging
    cannot evaluate is taken to hold: the line is kept, never dropped on a guess)."""
    from packaging.markers import InvalidMarker, Marker, UndefinedComparison, UndefinedEnvironmentName

    from cudafit.records import Machine
    from cudafit.specs import marker_env

    try:
        parsed = Marker(marker)
    except InvalidMarker:
        return True
    places = [("linux", "x86_64"), ("linux", "aarch64"), ("windows", "x86_64"), ("macos", "aarch64"), ("macos", "x86_64")]
    for os_name, arch in places:
        for python in ("3.9", "3.10", "3.11", "3.12", "3.13", "3.14"):
            try:
                if parsed.evaluate(marker_env(Machine(os=os_name, arch=arch, python=python, driver=None))):
                    return True
            except (UndefinedComparison, UndefinedEnvironmentName):
                return True
    return False


def for_other_platforms(resolution: Resolution) -> Callable[[str], Optional[str]]:
    """What a user's line for one of our packages keeps on the platforms the answer is not for: a
    range or a bare name (`torch>=2.4`, `torchvision`) stays there, under a marker that leaves this
    platform out; an exact pin (an earlier answer) is replaced, not kept."""
    platform = _SYS_PLATFORM.get(resolution.machine.os or "")

    def kept(item: str) -> Optional[str]:
        if not platform:
            return None
        try:
            requirement = Requirement(item)
        except InvalidRequirement:
            return None
        if requirement.url or any(s.operator in ("==", "===") and "*" not in s.version for s in requirement.specifier):
            return None
        elsewhere = f"sys_platform != '{platform}'"
        marker = f"({requirement.marker}) and {elsewhere}" if requirement.marker else elsewhere
        if requirement.marker is not None and _PLATFORM_WORDS.search(str(requirement.marker)) and not _holds_somewhere(marker):
            return None  # a line for this platform alone: ours replaces it
        requirement.marker = None
        return f"{requirement}; {marker}"

    return kept
