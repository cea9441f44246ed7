"""Shared helpers of the maintainer scripts that read PyPI (verify_pypi.py, read_wheels.py).

A wheel is a zip file; a zip file is read from its end (the central directory) and then member by
member at known offsets, so `RemoteFile` lets `zipfile` read single members of a multi-GB wheel
through HTTP range requests without downloading the rest. requests is the only HTTP client (the
`maint` extra); cudafit itself never uses the network.
"""

from __future__ import annotations

import email.parser
import io
import re
import urllib.parse
import zipfile
from collections import defaultdict
from collections.abc import Iterable, Iterator
from typing import Any

import requests
from packaging.requirements import Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.tags import Tag
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from cudafit.records import PURE
from cudafit.wheel_tags import platforms_of_tag

# PEP 508 marker environments of the platforms whose wheels the scripts read (Python set per call).
MARKER_ENVIRONMENTS: dict[str, dict[str, str]] = {
    "linux-x86_64": {"platform_system": "Linux", "sys_platform": "linux", "platform_machine": "x86_64", "os_name": "posix"},
    "linux-aarch64": {"platform_system": "Linux", "sys_platform": "linux", "platform_machine": "aarch64", "os_name": "posix"},
    "windows-x86_64": {"platform_system": "Windows", "sys_platform": "win32", "platform_machine": "AMD64", "os_name": "nt"},
}


def marker_environment(platform: str, python: str = "3.12", extra: str = "") -> dict[str, str]:
    """The marker environment of CPython `python` on `platform` (a key of MARKER_ENVIRONMENTS)."""
    return {
        **MARKER_ENVIRONMENTS[platform],
        "python_version": python,
        "python_full_version": f"{python}.0",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "extra": extra,
    }


LINUX_X86_64 = marker_environment("linux-x86_64")


def _cpython_tags(files: list[dict]) -> Iterator[tuple[str, Tag]]:
    """(CPython minor, tag) of every wheel tag of the files, free-threaded builds left out."""
    for item in files:
        name = item["filename"]
        if not name.endswith(".whl"):
            continue
        _, _, _, tags = parse_wheel_filename(name)
        for tag in tags:
            if tag.interpreter.startswith("cp") and not tag.abi.endswith("t"):
                yield f"{tag.interpreter[2]}.{tag.interpreter[3:]}", tag


def wheel_matrix(files: list[dict]) -> dict[str, set[str]]:
    """platform -> CPython minors with a (non free-threaded) wheel."""
    found: dict[str, set[str]] = defaultdict(set)
    for python, tag in _cpython_tags(files):
        for platform in platforms_of_tag(tag.platform):
            if platform != PURE:
                found[platform].add(python)
    return found


def macos_minimums(files: list[dict]) -> dict[str, dict[str, str]]:
    """macOS platform -> CPython minor -> the oldest macOS its (non free-threaded) wheel installs on."""
    found: dict[str, dict[str, tuple[int, int]]] = defaultdict(dict)
    for python, tag in _cpython_tags(files):
        match = re.match(r"macosx_(\d+)_(\d+)_(arm64|x86_64)$", tag.platform)
        if match:
            platform = "macos-arm64" if match.group(3) == "arm64" else "macos-x86_64"
            version = (int(match.group(1)), int(match.group(2)))
            found[platform][python] = min(found[platform].get(python, version), version)
    return {p: {py: f"{a}.{b}" for py, (a, b) in pythons.items()} for p, pythons in found.items()}


class RangeNotSupported(RuntimeError):
    """The server answered a range request with something other than 206: reading on would fetch the whole file."""


class RemoteFile(io.RawIOBase):
    """A read-only, seekable view of a URL through HTTP range requests, enough for zipfile.

    Reads shorter than `block` fetch `block` bytes (from the position on, or the file's last block)
    and serve the following small reads (the end records, a member's local header, its name, a small
    member) from that buffer, so the end of the file and a small member cost one request each.
    A server that ignores the Range header (status 200) raises RangeNotSupported before the body is read.
    """

    def __init__(self, session: requests.Session, url: str, size: int, block: int = 64 * 1024):
        self.session, self.url, self.size, self.pos, self.block = session, url, size, 0, block
        self.buffer_start, self.buffer = 0, b""
        self.requests = 0
        self.bytes_read = 0

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = {0: offset, 1: self.pos + offset, 2: self.size + offset}[whence]
        return self.pos

    def read(self, size: int | None = -1) -> bytes:
        end = self.size if size is None or size < 0 else min(self.size, self.pos + size)
        if end <= self.pos:
            return b""
        if not (self.buffer_start <= self.pos and end <= self.buffer_start + len(self.buffer)):
            if end - self.pos >= self.block:
                start, stop = self.pos, end
            else:  # a block from here on, or the last block of the file (zipfile reads its tail backwards)
                start = max(0, min(self.pos, self.size - self.block))
                stop = min(self.size, start + self.block)
            self.buffer_start, self.buffer = start, self._get(start, stop)
        data = self.buffer[self.pos - self.buffer_start : end - self.buffer_start]
        self.pos += len(data)
        return data

    def _get(self, start: int, end: int) -> bytes:
        """Bytes [start, end) of the file."""
        headers = {"Range": f"bytes={start}-{end - 1}"}
        with self.session.get(self.url, headers=headers, timeout=120, stream=True) as reply:
            reply.raise_for_status()
            if reply.status_code != 206:
                raise RangeNotSupported(f"{self.url}: HTTP {reply.status_code} to a range request")
            data = reply.content[: end - start]
        self.requests += 1
        self.bytes_read += len(data)
        return data


def wheel_url(base: str, wheel: dict) -> str:
    """The absolute URL of a file entry of PyPI's JSON API (whose urls may be relative to `base`)."""
    return urllib.parse.urljoin(base, wheel["url"])


def open_wheel(session: requests.Session, base: str, wheel: dict) -> zipfile.ZipFile:
    """The wheel as a ZipFile whose members are read through range requests."""
    return zipfile.ZipFile(RemoteFile(session, wheel_url(base, wheel), wheel["size"]))


def metadata_text(zf: zipfile.ZipFile) -> str:
    name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
    return zf.read(name).decode()


def applying_requirements(metadata: str, platform: str = "linux-x86_64", python: str = "3.12", extra: str = "") -> list[Requirement]:
    """The Requires-Dist of a METADATA text that apply on `platform` with CPython `python` (and `extra`)."""
    message = email.parser.Parser().parsestr(metadata)
    reqs = [Requirement(text) for text in message.get_all("Requires-Dist") or []]
    env = marker_environment(platform, python, extra)
    return [r for r in reqs if r.marker is None or r.marker.evaluate(env)]


def cuda_pins(metadata: str, platform: str = "linux-x86_64", python: str = "3.12") -> dict[str, str]:
    """nvidia-*/cuda-* requirements that apply on `platform`: canonical name -> specifier text."""
    return {
        str(canonicalize_name(r.name)): str(r.specifier)
        for r in applying_requirements(metadata, platform, python)
        if canonicalize_name(r.name).startswith(("nvidia-", "cuda-"))
    }


def requirements(session: requests.Session, base: str, wheel: dict, extra: str = "", platform: str = "linux-x86_64") -> list[Requirement]:
    """Requires-Dist of a wheel that apply on `platform` (Linux x86_64, CPython 3.12; with `extra`
    asked for), read from its METADATA."""
    with open_wheel(session, base, wheel) as zf:
        text = metadata_text(zf)
    return applying_requirements(text, platform, "3.12", extra)


def cuda_requirements(session: requests.Session, base: str, wheel: dict) -> dict[str, str]:
    return {
        str(canonicalize_name(r.name)): str(r.specifier)
        for r in requirements(session, base, wheel)
        if canonicalize_name(r.name).startswith(("nvidia-", "cuda-"))
    }


def pin_key(requirement: Requirement) -> str:
    """A requirement's name as matrices/ keys a pin: canonical, with its extras kept, sorted
    (cuda-toolkit[cublas,cudart]): an extras list is part of what the wheel asks for."""
    name = str(canonicalize_name(requirement.name))
    return f"{name}[{','.join(sorted(requirement.extras))}]" if requirement.extras else name


def written_cuda_pins(metadata: str, platform: str = "linux-x86_64", python: str = "3.12") -> dict[str, str]:
    """nvidia-*/cuda-* requirements that apply on `platform`, as the wheel writes them: pin_key ->
    specifier text (cuda_pins drops the extras; this keeps them)."""
    applying = applying_requirements(metadata, platform, python)
    return {pin_key(r): str(r.specifier) for r in applying if canonicalize_name(r.name).startswith(("nvidia-", "cuda-"))}


def written_cuda_requirements(session: requests.Session, base: str, wheel: dict, platform: str = "linux-x86_64") -> dict[str, str]:
    """written_cuda_pins of a wheel on PyPI, read from its METADATA through range requests, with the
    markers of the CPython the wheel is for (3.12 where its name says none)."""
    with open_wheel(session, base, wheel) as zf:
        text = metadata_text(zf)
    minor = cpython_minor(wheel["filename"])
    return written_cuda_pins(text, platform, f"{minor[0]}.{minor[1]}" if minor else "3.12")


def normal_pins(pins: dict[str, str]) -> dict[str, str]:
    """Pins as matrices/ writes them, in written_cuda_pins' form: names canonical with their extras
    sorted, specifiers in packaging's order. What does not parse stays as written (and so differs)."""
    from packaging.requirements import InvalidRequirement

    out = {}
    for key, spec in pins.items():
        try:
            out[pin_key(Requirement(f"{key}{spec}"))] = str(SpecifierSet(spec))
        except (InvalidRequirement, InvalidSpecifier):
            out[key] = spec
    return out


def pypi_wheel_pins(build: Any) -> dict[str, str] | None:
    """The pins the data writes for the PyPI wheel of `build` (a Build record): its `pypi_pins` where
    the data records them apart from the index build's (torch 2.0, 2.1), else its pins as written
    (cuda-toolkit's extras kept, not the library wheels the loader adds for them); None: unknown."""
    pypi = getattr(build, "pypi_pins", None)
    if pypi is not None:
        return dict(pypi)
    return getattr(build, "written_pins", build.pins)


def pin_differences(data: dict[str, str], wheel: dict[str, str]) -> list[str]:
    """Each way the data's pins (as written) differ from a wheel's written_cuda_pins, one line per
    distribution: its extras and specifier both count."""

    def by_name(pins: dict[str, str]) -> dict[str, str]:
        return {str(canonicalize_name(key.partition("[")[0])): f"{key}{spec}" for key, spec in pins.items()}

    ours, theirs = by_name(normal_pins(data)), by_name(wheel)
    found = []
    for name in sorted(set(ours) | set(theirs)):
        if ours.get(name) != theirs.get(name):
            found.append(f"{name}: data {ours.get(name, 'none')}, wheel {theirs.get(name, 'none')}")
    return found


def linux_wheel(files: list[dict]) -> dict | None:
    """The last Linux x86_64 wheel of a release (the platform whose pins the data records)."""
    wheels = [f for f in files if f["filename"].endswith(".whl") and "x86_64" in f["filename"] and "linux" in f["filename"]]
    return wheels[-1] if wheels else None


def cpython_minor(filename: str) -> tuple[int, int] | None:
    """(3, 12) for a cp312-cp312 wheel; None for other interpreters and free-threaded (cp314t) builds."""
    _, _, _, tags = parse_wheel_filename(filename)
    for tag in tags:
        if tag.interpreter.startswith("cp") and tag.interpreter[2:].isdigit() and not tag.abi.endswith("t"):
            return int(tag.interpreter[2]), int(tag.interpreter[3:])
    return None


def pick_wheel(files: list[dict], platform: str, prefer: tuple[int, int] = (3, 12)) -> dict | None:
    """The cp312 wheel of a release for `platform`, else its newest CPython (non free-threaded) one."""
    candidates = []
    for item in files:
        name = item["filename"]
        if not name.endswith(".whl") or item.get("yanked"):
            continue
        minor = cpython_minor(name)
        platforms = {p for tag in parse_wheel_filename(name)[3] for p in platforms_of_tag(tag.platform)}
        if minor is not None and platform in platforms:
            candidates.append((minor == prefer, minor, item))
    return max(candidates, key=lambda c: (c[0], c[1]))[2] if candidates else None


def missing(known: Iterable[Any], releases: dict[str, list[dict]], newer_only: bool = False) -> list[Version]:
    """Final, unyanked releases with files, no older than the oldest the data knows, that it lacks.
    `newer_only` (companions, jaxlib): only past the newest known; an older one that no framework
    release paired with (jaxlib 0.4.35, which jax 0.4.35 did not pin) is no gap."""
    have = set(known)
    if not have:
        return []
    oldest = max(have) if newer_only else min(have)
    found = []
    for text, files in releases.items():
        try:
            version = Version(text)
        except InvalidVersion:
            continue
        live = [f for f in files if not f.get("yanked")]
        newer = version > oldest if newer_only else version >= oldest
        if live and not version.is_prerelease and not version.is_devrelease and newer and version not in have:
            found.append(version)
    return sorted(found)
