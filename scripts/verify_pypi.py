#!/usr/bin/env python3
"""Maintainer tool: check matrices/ against PyPI (needs the network).

For every torch and tensorflow release in the data (and every jax release's jaxlib), compare the
CPython versions and platforms that have wheels on PyPI with `python`, `python_by_platform` and
`platforms`, and list releases on PyPI that the data lacks; print each difference, and with
--suggest the python_by_platform table that would make the entry exact. With --pins, also read the
Requires-Dist of each release's Linux x86_64 wheel (only its METADATA, through HTTP range requests,
not the whole wheel) and compare its nvidia-*/cuda-* requirements with the pins of the build PyPI
serves there; with --companions, check that each recorded torchvision/torchaudio release declares
(Requires-Dist) the torch it is paired with. Exit 1 on differences.

    pip install -e '.[maint]' && python scripts/verify_pypi.py [--suggest] [--pins]
"""

from __future__ import annotations

import argparse
import email.parser
import io
import re
import sys
import urllib.parse
import zipfile
from collections import defaultdict
from typing import Optional

import requests
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cudafit.loader import load

PLATFORM_OF_TAG = [
    (re.compile(r"manylinux.*_x86_64|linux_x86_64"), "linux-x86_64"),
    (re.compile(r"manylinux.*_aarch64|linux_aarch64"), "linux-aarch64"),
    (re.compile(r"win_amd64"), "windows-x86_64"),
    (re.compile(r"win_arm64"), "windows-arm64"),
    (re.compile(r"macosx_.*_arm64"), "macos-arm64"),
    (re.compile(r"macosx_.*_x86_64"), "macos-x86_64"),
]


def wheel_matrix(files: list[dict]) -> dict[str, set[str]]:
    """platform -> CPython minors with a (non free-threaded) wheel."""
    found: dict[str, set[str]] = defaultdict(set)
    for item in files:
        name = item["filename"]
        if not name.endswith(".whl"):
            continue
        _, _, _, tags = parse_wheel_filename(name)
        for tag in tags:
            if not tag.interpreter.startswith("cp") or tag.abi.endswith("t"):
                continue
            minor = f"{tag.interpreter[2]}.{tag.interpreter[3:]}"
            for pattern, platform in PLATFORM_OF_TAG:
                if pattern.fullmatch(tag.platform) or pattern.search(tag.platform):
                    found[platform].add(minor)
                    break
    return found


class RemoteFile(io.RawIOBase):
    """A read-only, seekable view of a URL through HTTP range requests, enough for zipfile."""

    def __init__(self, session: requests.Session, url: str, size: int):
        self.session, self.url, self.size, self.pos = session, url, size, 0

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = {0: offset, 1: self.pos + offset, 2: self.size + offset}[whence]
        return self.pos

    def read(self, n: int = -1) -> bytes:
        end = self.size if n is None or n < 0 else min(self.size, self.pos + n)
        if end <= self.pos:
            return b""
        reply = self.session.get(self.url, headers={"Range": f"bytes={self.pos}-{end - 1}"}, timeout=120)
        reply.raise_for_status()
        data = reply.content[: end - self.pos]
        self.pos += len(data)
        return data


LINUX_X86_64 = {"platform_system": "Linux", "sys_platform": "linux", "platform_machine": "x86_64",
                "os_name": "posix", "python_version": "3.12", "python_full_version": "3.12.0",
                "implementation_name": "cpython", "platform_python_implementation": "CPython", "extra": ""}


def requirements(session: requests.Session, base: str, wheel: dict, extra: str = "") -> list[Requirement]:
    """Requires-Dist of a wheel that apply on Linux x86_64 (with `extra` asked for), read from its METADATA."""
    url = urllib.parse.urljoin(base, wheel["url"])
    with zipfile.ZipFile(RemoteFile(session, url, wheel["size"])) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = email.parser.Parser().parsestr(zf.read(name).decode())
    reqs = [Requirement(text) for text in metadata.get_all("Requires-Dist") or []]
    env = {**LINUX_X86_64, "extra": extra}
    return [r for r in reqs if r.marker is None or r.marker.evaluate(env)]


def cuda_requirements(session: requests.Session, base: str, wheel: dict) -> dict[str, str]:
    return {canonicalize_name(r.name): str(r.specifier) for r in requirements(session, base, wheel)
            if canonicalize_name(r.name).startswith(("nvidia-", "cuda-"))}


def linux_wheel(files: list[dict]) -> Optional[dict]:
    """The last Linux x86_64 wheel of a release (the platform whose pins the data records)."""
    wheels = [f for f in files if f["filename"].endswith(".whl") and "x86_64" in f["filename"] and "linux" in f["filename"]]
    return wheels[-1] if wheels else None


def compare(label: str, data_pins: dict[str, str], actual: dict[str, str], wheel: dict) -> int:
    data = {k: str(SpecifierSet(v)) for k, v in data_pins.items()}
    if data != actual:
        print(f"{label}: data={data} wheel={actual}")
        return 1
    print(f"{label}: {len(actual)} match {wheel['filename']}")
    return 0


def check_tensorflow_pins(matrices, releases: dict) -> int:
    """[and-cuda] requirements of each TensorFlow release against its Linux x86_64 wheel."""
    session = requests.Session()
    problems = 0
    for release in sorted(matrices.tensorflow, key=lambda r: r.version):
        if release.and_cuda is None:
            continue
        wheel = linux_wheel(releases.get(str(release.version), []))
        if wheel is None:
            continue
        base = "https://pypi.org/pypi/tensorflow/json"
        plain = {canonicalize_name(r.name) for r in requirements(session, base, wheel)}
        actual = {canonicalize_name(r.name): str(r.specifier) for r in requirements(session, base, wheel, "and-cuda")
                  if canonicalize_name(r.name) not in plain}
        problems += compare(f"tensorflow {release.version} [and-cuda]", release.and_cuda, actual, wheel)
    return problems


def check_companions(matrices) -> int:
    """Each recorded torchvision/torchaudio release must declare support for its torch."""
    session = requests.Session()
    problems = 0
    for package in ("torchvision", "torchaudio"):
        base = f"https://pypi.org/pypi/{package}/json"
        files = session.get(base, timeout=60).json()["releases"]
        for release in sorted(matrices.torch, key=lambda r: r.version):
            companion = getattr(release, package)
            wheels = [f for f in files.get(companion or "", []) if f["filename"].endswith(".whl")]
            wheels = [f for f in wheels if "x86_64" in f["filename"] and "linux" in f["filename"]] or wheels
            if not wheels:
                print(f"torch {release.version}: {package} {companion} has no wheel on PyPI")
                problems += 1
                continue
            torch_req = [r for r in requirements(session, base, wheels[-1]) if canonicalize_name(r.name) == "torch"]
            if not torch_req:
                print(f"note: torch {release.version}: {package} {companion} declares no torch requirement")
                continue
            if not torch_req[0].specifier.contains(release.version, prereleases=True):
                print(f"torch {release.version}: {package} {companion} declares torch{torch_req[0].specifier}")
                problems += 1
    return problems


def check_pins(matrices, releases: dict) -> int:
    session = requests.Session()
    problems = 0
    for release in sorted(matrices.torch, key=lambda r: r.version):
        tag = release.pypi_variant.get("linux-x86_64")
        variant = next((v for v in release.variants if v.tag == tag and "linux-x86_64" in v.platforms), None)
        if variant is None or variant.pins is None:
            continue
        wheel = linux_wheel(releases.get(str(release.version), []))
        if wheel is None:
            continue
        actual = cuda_requirements(session, "https://pypi.org/pypi/torch/json", wheel)
        problems += compare(f"torch {release.version}+{tag} pins", variant.pins, actual, wheel)
    return problems


def check_wheels(package: str, table, wheel_version, suggest: bool) -> tuple[int, dict]:
    """Compare each release's Pythons and platforms with the wheels of `package` on PyPI
    (`wheel_version(release)` names the wheel release: jax's data is checked against jaxlib)."""
    response = requests.get(f"https://pypi.org/pypi/{package}/json", timeout=60)
    response.raise_for_status()
    releases = response.json()["releases"]
    problems = 0
    key = lambda p: tuple(int(x) for x in p.split("."))  # noqa: E731
    for release in sorted(table, key=lambda r: r.version):
        name = f"{package} {wheel_version(release)}"
        files = releases.get(str(wheel_version(release)))
        if not files:
            print(f"{name}: no files on PyPI (deleted, or never there)")
            continue
        actual = wheel_matrix(files)
        if set(actual) != set(release.platforms):
            print(f"{name}: platforms data={sorted(release.platforms)} pypi={sorted(actual)}")
            problems += 1
        exact = {}
        for platform, pythons in sorted(actual.items()):
            if platform not in release.platforms:
                continue
            if release.pythons(platform) != frozenset(pythons):
                print(f"{name} {platform}: python data={sorted(release.pythons(platform), key=key)} "
                      f"pypi={sorted(pythons, key=key)}")
                problems += 1
            exact[platform] = sorted(pythons, key=key)
        union = set().union(*actual.values()) if actual else set()
        if suggest and any(set(v) != union for v in exact.values()):
            table_text = ", ".join(f'{p} = [{", ".join(repr(v).replace(chr(39), chr(34)) for v in vs)}]'
                                   for p, vs in exact.items() if set(vs) != union)
            print(f"  suggest for {name}: python = {sorted(union, key=key)}; python_by_platform = {{ {table_text} }}")
    return problems, releases


def missing_releases(package: str, table, releases: dict, folder: str) -> int:
    known = {r.version for r in table}
    problems = 0
    for text, files in releases.items():
        version = Version(text)
        if known and version >= min(known) and not version.is_prerelease and files and version not in known:
            print(f"{package} {version}: on PyPI but not in matrices/{folder}/")
            problems += 1
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suggest", action="store_true", help="print python_by_platform tables to paste")
    parser.add_argument("--pins", action="store_true", help="compare nvidia-* pins with the wheels' METADATA")
    parser.add_argument("--companions", action="store_true", help="check torchvision/torchaudio declare their torch")
    args = parser.parse_args()
    matrices = load(use_cache=False)
    problems, torch_files = check_wheels("torch", matrices.torch, lambda r: r.version, args.suggest)
    problems += missing_releases("torch", matrices.torch, torch_files, "pytorch")
    count, tf_files = check_wheels("tensorflow", matrices.tensorflow, lambda r: r.version, args.suggest)
    problems += count + missing_releases("tensorflow", matrices.tensorflow, tf_files, "tensorflow")
    count, _ = check_wheels("jaxlib", [r for r in matrices.jax if r.jaxlib], lambda r: r.jaxlib, args.suggest)
    problems += count
    response = requests.get("https://pypi.org/pypi/jax/json", timeout=60)
    response.raise_for_status()
    problems += missing_releases("jax", matrices.jax, response.json()["releases"], "jax")
    if args.pins:
        problems += check_pins(matrices, torch_files)
        problems += check_tensorflow_pins(matrices, tf_files)
    if args.companions:
        problems += check_companions(matrices)
    print(f"{problems} difference(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
