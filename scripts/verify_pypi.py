#!/usr/bin/env python3
"""Maintainer tool: check matrices/pytorch/*.toml against PyPI's file lists (needs the network).

For every torch release in the data, compare the CPython versions and platforms that have wheels on
PyPI with `python`, `python_by_platform` and `platforms`; print each difference, and with
--suggest the python_by_platform table that would make the entry exact. Exit 1 on differences.

    python scripts/verify_pypi.py [--suggest] [--package torch]
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import defaultdict

import requests
from packaging.utils import parse_wheel_filename
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suggest", action="store_true", help="print python_by_platform tables to paste")
    args = parser.parse_args()
    matrices = load(use_cache=False)
    response = requests.get("https://pypi.org/pypi/torch/json", timeout=60)
    response.raise_for_status()
    releases = response.json()["releases"]
    problems = 0
    key = lambda p: tuple(int(x) for x in p.split("."))  # noqa: E731
    for release in sorted(matrices.torch, key=lambda r: r.version):
        files = releases.get(str(release.version))
        if not files:
            print(f"torch {release.version}: not on PyPI")
            problems += 1
            continue
        actual = wheel_matrix(files)
        if set(actual) != set(release.platforms):
            print(f"torch {release.version}: platforms data={sorted(release.platforms)} pypi={sorted(actual)}")
            problems += 1
        exact = {}
        for platform, pythons in sorted(actual.items()):
            if platform not in release.platforms:
                continue
            if release.pythons(platform) != frozenset(pythons):
                print(f"torch {release.version} {platform}: python data={sorted(release.pythons(platform), key=key)} "
                      f"pypi={sorted(pythons, key=key)}")
                problems += 1
            exact[platform] = sorted(pythons, key=key)
        union = set().union(*actual.values()) if actual else set()
        if args.suggest and any(set(v) != union for v in exact.values()):
            table = ", ".join(f'{p} = [{", ".join(repr(v).replace(chr(39), chr(34)) for v in vs)}]'
                              for p, vs in exact.items() if set(vs) != union)
            print(f"  suggest for {release.version}: python = {sorted(union, key=key)}; python_by_platform = {{ {table} }}")
    known = {r.version for r in matrices.torch}
    oldest = min(known)
    for text, files in releases.items():
        version = Version(text)
        if version >= oldest and not version.is_prerelease and files and version not in known:
            print(f"torch {version}: on PyPI but not in matrices/pytorch/")
            problems += 1
    print(f"{problems} difference(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
