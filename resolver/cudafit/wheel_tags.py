"""Where a wheel installs, from its file name (PEP 425 tags, read by packaging): the platforms of its
platform tag and the CPython minors of its interpreter and ABI tags, bounded by the Requires-Python
of its file where that is known. Used to measure PyPI's file lists (scripts/wheel_inventory.py) and
to read a lockfile's own wheel lists (`cudafit check`, CF015)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Optional

from packaging.specifiers import SpecifierSet
from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from cudafit.records import PURE

PYTHON_MINORS = tuple(f"3.{m}" for m in range(6, 16))
# musllinux wheels are left out: the platforms cudafit names are glibc Linux.
_PLATFORM_OF_TAG = (
    (re.compile(r"manylinux.*_x86_64|linux_x86_64"), ("linux-x86_64",)),
    (re.compile(r"manylinux.*_aarch64|linux_aarch64"), ("linux-aarch64",)),
    (re.compile(r"win_amd64"), ("windows-x86_64",)),
    (re.compile(r"win_arm64"), ("windows-arm64",)),
    (re.compile(r"macosx_\d+_\d+_arm64"), ("macos-arm64",)),
    (re.compile(r"macosx_\d+_\d+_x86_64"), ("macos-x86_64",)),
    # a universal2 wheel carries both architectures (ONNX Runtime's macOS wheels)
    (re.compile(r"macosx_\d+_\d+_universal2"), ("macos-arm64", "macos-x86_64")),
)


@lru_cache(maxsize=1024)  # a lockfile names the same few tags thousands of times
def platforms_of_tag(platform_tag: str) -> tuple[str, ...]:
    """cudafit's platforms a wheel platform tag installs on; () for one it does not name."""
    if platform_tag == "any":
        return (PURE,)
    for pattern, platforms in _PLATFORM_OF_TAG:
        if pattern.fullmatch(platform_tag):
            return platforms
    return ()


@lru_cache(maxsize=1024)
def python_minors(interpreter: str, abi: str, requires: Optional[SpecifierSet] = None) -> frozenset[str]:
    """The CPython minors (3.6-3.15) a wheel with these interpreter and ABI tags installs on: cpXY is
    3.X; with abi3, 3.X and later; py3 every minor. Free-threaded builds, PyPy and Python 2: none."""
    if abi.endswith("t"):
        return frozenset()
    if interpreter.startswith("cp") and interpreter[2:].isdigit():
        minor = f"{interpreter[2]}.{interpreter[3:]}"
        floor = tuple(int(x) for x in minor.split("."))
        found = {m for m in PYTHON_MINORS if (tuple(int(x) for x in m.split(".")) >= floor if abi == "abi3" else m == minor)}
    elif interpreter.startswith("py3") or interpreter == "py2.py3":
        found = set(PYTHON_MINORS)
    else:
        return frozenset()
    if requires is not None:
        found = {m for m in found if requires.contains(f"{m}.0", prereleases=True) or requires.contains(f"{m}.99", prereleases=True)}
    return frozenset(found)


# PEP 825: a variant wheel's name ends in `-{label}` after its platform tag (1-16 of [0-9a-z._])
_VARIANT_LABEL = re.compile(r"[0-9a-z._]{1,16}")


def parse_wheel_name(filename: str) -> Optional[tuple]:
    """packaging's parse_wheel_filename, also for a variant wheel (torch-...-x86_64-cuda12.6.whl,
    whose label it drops); None for a name that is no wheel's."""
    try:
        return parse_wheel_filename(filename)
    except InvalidWheelFilename:
        pass
    stem, dot, _ext = filename.rpartition(".")
    head, dash, label = stem.rpartition("-")
    if dot and dash and head.count("-") in (4, 5) and _VARIANT_LABEL.fullmatch(label):
        try:
            return parse_wheel_filename(f"{head}.whl")
        except InvalidWheelFilename:
            return None
    return None


def variant_label(filename: str) -> Optional[str]:
    """The variant label of a variant wheel's name (cuda12.6, null), or None for any other name."""
    if filename.count("-") < 5:
        return None  # five parts at most: no room for a label (most names: no need to parse them)
    try:
        parse_wheel_filename(filename)
        return None  # an ordinary wheel: its last part is the platform tag
    except InvalidWheelFilename:
        pass
    return filename.rpartition(".")[0].rpartition("-")[2] if parse_wheel_name(filename) is not None else None


def where(wheels: Iterable[tuple[str, Optional[SpecifierSet]]]) -> dict[str, frozenset[str]]:
    """Per platform ("any" for a pure wheel), the CPython minors some of these wheels (file name,
    Requires-Python or None) install on; a name that is not a wheel's is passed over."""
    found: dict[str, set[str]] = {}
    for filename, requires in wheels:
        parsed = parse_wheel_name(filename)
        if parsed is None:
            continue
        for tag in parsed[3]:
            minors = python_minors(tag.interpreter, tag.abi, requires)
            for platform in platforms_of_tag(tag.platform) if minors else ():
                found.setdefault(platform, set()).update(minors)
    return {p: frozenset(m) for p, m in sorted(found.items())}
