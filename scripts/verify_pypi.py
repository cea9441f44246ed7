#!/usr/bin/env python3
"""Maintainer tool: check matrices/ against PyPI (needs the network).

For every torch and tensorflow release in the data (and every jax release's jaxlib), compare the
CPython versions and platforms that have wheels on PyPI with `python`, `python_by_platform` and
`platforms`, and list releases on PyPI that the data lacks; print each difference, and with
--suggest the python_by_platform table that would make the entry exact. With --pins, also read the
Requires-Dist of each release's Linux x86_64 and aarch64 wheels (only their METADATA, through HTTP
range requests, not the whole wheel) and compare their nvidia-*/cuda-* requirements, as written
(cuda-toolkit's extras list included), with the pins the data writes for the build PyPI serves
there (not the library wheels the loader adds for those extras); with --companions, check that each recorded torchvision/torchaudio release declares
(Requires-Dist) the torch it is paired with. Exit 1 on differences.

    pip install -e '.[maint]' && python scripts/verify_pypi.py [--suggest] [--pins]
"""

from __future__ import annotations

import argparse
import sys

import requests
from packaging.utils import canonicalize_name
from pypi_wheels import (  # scripts/, next to this file
    linux_wheel,
    macos_minimums,
    missing,
    pick_wheel,
    pin_differences,
    pin_key,
    pypi_wheel_pins,
    requirements,
    wheel_matrix,
    written_cuda_requirements,
)

from cudafit.loader import load


def compare(label: str, data_pins: dict[str, str], actual: dict[str, str], wheel: dict) -> int:
    """The data's pins as written against the wheel's requirements as written: one line per
    distribution that differs (version, range or extras list)."""
    found = pin_differences(data_pins, actual)
    for line in found:
        print(f"{label}: {line} ({wheel['filename']})")
    if not found:
        print(f"{label}: {len(actual)} match {wheel['filename']}")
    return len(found)


def check_tensorflow_pins(matrices, releases: dict) -> int:
    """[and-cuda] requirements of each TensorFlow release against its Linux x86_64 wheel."""
    session = requests.Session()
    problems = 0
    for release in sorted(matrices.frameworks["tensorflow"], key=lambda r: r.version):
        build = next((b for b in release.builds if "linux-x86_64" in b.platforms and b.extras), None)
        if build is None or build.pins is None:
            continue
        wheel = linux_wheel(releases.get(str(release.version), []))
        if wheel is None:
            continue
        base = "https://pypi.org/pypi/tensorflow/json"
        plain = {canonicalize_name(r.name) for r in requirements(session, base, wheel)}
        actual = {pin_key(r): str(r.specifier) for r in requirements(session, base, wheel, "and-cuda") if canonicalize_name(r.name) not in plain}
        problems += compare(f"tensorflow {release.version} [and-cuda]", build.pins, actual, wheel)
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
    """Each torch release's Linux wheels against the pins the data writes for the build PyPI serves
    there (its `pypi_pins` where the data records the PyPI wheel's apart from the index build's)."""
    session = requests.Session()
    problems = 0
    for release in sorted(matrices.torch, key=lambda r: r.version):
        for platform in ("linux-x86_64", "linux-aarch64"):
            tag = release.pypi_variant.get(platform)
            variant = next((v for v in release.builds if v.tag == tag and platform in v.platforms), None)
            pins = None if variant is None else pypi_wheel_pins(variant)
            if pins is None:
                continue
            wheel = pick_wheel(releases.get(str(release.version), []), platform)
            if wheel is None:
                continue
            actual = written_cuda_requirements(session, "https://pypi.org/pypi/torch/json", wheel, platform)
            problems += compare(f"torch {release.version}+{tag} {platform} pins", pins, actual, wheel)
    return problems


def check_wheels(package: str, table, wheel_version, suggest: bool) -> tuple[int, dict]:
    """Compare each release's Pythons and platforms with the wheels of `package` on PyPI
    (`wheel_version(release)` names the wheel release: jax's data is checked against jaxlib)."""
    response = requests.get(f"https://pypi.org/pypi/{package}/json", timeout=60)
    response.raise_for_status()
    releases = response.json()["releases"]
    problems = 0

    def key(p: str) -> tuple[int, ...]:
        return tuple(int(x) for x in p.split("."))

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
                print(f"{name} {platform}: python data={sorted(release.pythons(platform), key=key)} pypi={sorted(pythons, key=key)}")
                problems += 1
            exact[platform] = sorted(pythons, key=key)
        problems += compare_macos(name, release, macos_minimums(files))
        union = set().union(*actual.values()) if actual else set()
        if suggest and any(set(v) != union for v in exact.values()):
            table_text = ", ".join(f"{p} = [{', '.join(repr(v).replace(chr(39), chr(34)) for v in vs)}]" for p, vs in exact.items() if set(vs) != union)
            print(f"  suggest for {name}: python = {sorted(union, key=key)}; python_by_platform = {{ {table_text} }}")
    return problems, releases


def compare_macos(name: str, release, actual: dict[str, dict[str, str]]) -> int:
    """The data's macos_min (and macos_min_by_python) against the macOS tags of the wheels."""
    problems = 0
    for platform, pythons in sorted(actual.items()):
        for python, need in sorted(pythons.items()):
            data = release.macos_min_by_python.get(python) or release.macos_min.get(platform)
            if data != need:
                print(f"{name} {platform} Python {python}: macOS minimum data={data} pypi={need}")
                problems += 1
    return problems


def missing_releases(package: str, table, releases: dict, folder: str) -> int:
    found = missing((r.version for r in table), releases)
    for version in found:
        print(f"{package} {version}: on PyPI but not in matrices/{folder}/")
    return len(found)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suggest", action="store_true", help="print python_by_platform tables to paste")
    parser.add_argument("--pins", action="store_true", help="compare nvidia-* pins with the wheels' METADATA")
    parser.add_argument("--companions", action="store_true", help="check torchvision/torchaudio declare their torch")
    args = parser.parse_args()
    matrices = load(use_cache=False)
    problems, torch_files = check_wheels("torch", matrices.torch, lambda r: r.version, args.suggest)
    problems += missing_releases("torch", matrices.torch, torch_files, "pytorch")
    count, tf_files = check_wheels("tensorflow", matrices.frameworks["tensorflow"], lambda r: r.version, args.suggest)
    problems += count + missing_releases("tensorflow", matrices.frameworks["tensorflow"], tf_files, "tensorflow")
    count, _ = check_wheels("jaxlib", [r for r in matrices.frameworks["jax"] if r.jaxlib], lambda r: r.jaxlib, args.suggest)
    problems += count
    response = requests.get("https://pypi.org/pypi/jax/json", timeout=60)
    response.raise_for_status()
    problems += missing_releases("jax", matrices.frameworks["jax"], response.json()["releases"], "jax")
    if args.pins:
        problems += check_pins(matrices, torch_files)
        problems += check_tensorflow_pins(matrices, tf_files)
    if args.companions:
        problems += check_companions(matrices)
    print(f"{problems} difference(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
