"""The constraints file `install --constrain` leaves in an environment (emit/constraints.py writes
its text), and what in the environment has moved off it since: doctor's DR034."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple, Optional

FILE_NAME = "cudafit-constraints.txt"


class Held(NamedTuple):
    name: str  # canonical
    specifier: str  # "==2.14.1+cu126"
    line: int


class Moved(NamedTuple):
    name: str
    specifier: str
    installed: Optional[str]  # None: no longer installed


def path_in(prefix: Path) -> Path:
    return prefix / FILE_NAME


def read(text: str) -> tuple[list[Held], list[str]]:
    """Its requirements, and a sentence for each line that is not one (named by line)."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    held, problems = [], []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        try:
            requirement = Requirement(line)
        except InvalidRequirement as exc:
            problems.append(f"line {number}: {line!r} is not a requirement ({exc})")
            continue
        held.append(Held(str(canonicalize_name(requirement.name)), str(requirement.specifier), number))
    return held, problems


INSTALL_LEAD = "# Install the set itself first"  # emit/constraints.py: the commands follow, as "#   CMD"


def install_commands(text: str) -> tuple[str, ...]:
    """The commands the file's header names for installing the held set."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(INSTALL_LEAD)), None)
    if start is None:
        return ()
    out = []
    for line in lines[start + 1 :]:
        if not line.startswith("#   "):
            break
        out.append(line[4:])
    return tuple(out)


def moved(held: list[Held], installed: dict[str, str]) -> list[Moved]:
    """What is installed at a version the file does not allow, or is gone. A name the file holds
    that was never installed (a constraint, not a requirement) is no drift: only those installed
    when the file was written are judged, and those are the ones it names with ==."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion, Version

    out = []
    for item in held:
        have = installed.get(item.name)
        if have is None:
            if item.specifier.startswith("==") and "*" not in item.specifier:
                out.append(Moved(item.name, item.specifier, None))
            continue
        try:
            ok = SpecifierSet(item.specifier).contains(Version(have), prereleases=True)
        except InvalidVersion:
            ok = False
        if not ok:
            out.append(Moved(item.name, item.specifier, have))
    return out
