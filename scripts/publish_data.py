#!/usr/bin/env python3
"""Maintainer tool: publish the data in matrices/ as a `cudafit-matrices` bundle, in one command.

`cudafit data update` (without --from) installs the newest bundle of PyPI's `cudafit-matrices`
project; this script makes the wheel that project serves. It builds the bundle (what `cudafit data
bundle` writes: the data validated first, a reproducible wheel versioned by the data date), writes
it to dist/, and checks it before anything leaves this machine:

- a second build gives the same bytes (the wheel is reproducible, so anyone can rebuild and compare);
- the wheel's METADATA names `cudafit-matrices` and the manifest's version, and its RECORD hashes
  match its members;
- every check `cudafit data update` makes before installing it passes: member names and sizes, the
  manifest (schema, the cudafit versions that read it, each file's sha256), a date no later than
  today, the loader's validation of the unpacked data;
- `twine check`, where twine is installed.

The upload is the last step: printed, or run with --upload (needs twine and a PyPI token for the
`cudafit-matrices` project, as twine reads them: TWINE_USERNAME=__token__, TWINE_PASSWORD). Exit 0
when the bundle is built, checked (and uploaded), 2 when a step fails.

    python scripts/publish_data.py [--dir matrices] [--dist dist] [--version 2027.1.10.post1] [--upload]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import importlib.util
import subprocess
import sys
import zipfile
from collections.abc import Callable, Sequence
from email.parser import HeaderParser
from pathlib import Path
from typing import Optional

from cudafit import bundle, update
from cudafit.errors import CudafitError, InputError
from cudafit.fileio import write_atomic_bytes

ROOT = Path(__file__).resolve().parents[1]
Runner = Callable[[list[str]], int]


def _run(argv: list[str]) -> int:
    return subprocess.call(argv)


def twine() -> Optional[list[str]]:
    """The command that runs twine with this Python, or None where it is not installed."""
    return [sys.executable, "-m", "twine"] if importlib.util.find_spec("twine") is not None else None


def build(root: Path, dist: Path, version: Optional[str]) -> Path:
    """Build the bundle twice (the bytes must agree), write it into `dist`, and return its path."""
    name, blob = update.build_bundle(root, version)
    _again, second = update.build_bundle(root, version)
    if second != blob:
        raise InputError(f"{root}: two builds of the bundle differ; a bundle must be reproducible (a file changed while building?)")
    try:
        dist.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create {dist}: {exc.strerror}") from None
    path = dist / name
    write_atomic_bytes(path, blob)
    return path


def check_wheel(path: Path, manifest: bundle.Manifest) -> None:
    """What PyPI and pip read of the wheel agrees with the manifest: name, version, RECORD."""
    expected = f"{bundle.PACKAGE}-{manifest.version}-py3-none-any.whl"
    if path.name != expected:
        raise InputError(f"{path}: the file name should be {expected} for version {manifest.version}")
    dist_info = f"{bundle.PACKAGE}-{manifest.version}.dist-info"
    with zipfile.ZipFile(path) as archive:
        metadata = HeaderParser().parsestr(archive.read(f"{dist_info}/METADATA").decode())
        if metadata["Name"] != bundle.DISTRIBUTION or metadata["Version"] != manifest.version:
            raise InputError(f"{path}: METADATA names {metadata['Name']} {metadata['Version']}, not {bundle.DISTRIBUTION} {manifest.version}")
        for line in archive.read(f"{dist_info}/RECORD").decode().splitlines():
            member, digest, _size = line.rsplit(",", 2)
            if not digest:
                continue  # RECORD itself
            found = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(archive.read(member)).digest()).rstrip(b"=").decode()
            if found != digest:
                raise InputError(f"{path}: RECORD: {member}: {digest} is not the member's {found}")


def publish(root: Path, dist: Path, version: Optional[str], upload: bool, run: Runner = _run, tool: Optional[list[str]] = None) -> int:
    path = build(root, dist, version)
    manifest = update.check_bundle(path)
    check_wheel(path, manifest)
    sha256 = hashlib.sha256(path.read_bytes()).hexdigest()
    print(f"{path}: data of {manifest.data_date}, version {manifest.version}, {len(manifest.files)} data files, sha256 {sha256}")
    print("checked: reproducible, wheel metadata and RECORD, and every check `cudafit data update` makes before installing it")
    if tool is not None:
        if run([*tool, "check", str(path)]) != 0:
            raise InputError(f"{path}: `twine check` failed (see above)")
    upload_command = [*(tool or ["twine"]), "upload", str(path)]
    if not upload:
        print("to publish it (the last step), run: " + " ".join(upload_command))
        print(f"air-gapped sites: cudafit data update --from {path.name} --sha256 {sha256}")
        return 0
    if tool is None:
        raise InputError("--upload needs twine: pip install twine (the bundle is built and checked; nothing was uploaded)")
    if run(upload_command) != 0:
        raise InputError(f"{path}: the upload failed (see twine's message above); the bundle stays in {path.parent}")
    print(f"published {bundle.DISTRIBUTION} {manifest.version}: `cudafit data update` installs it")
    return 0


def main(argv: Sequence[str] | None = None, run: Runner = _run) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=ROOT / "matrices", help="the matrices folder to publish (default: this checkout's)")
    parser.add_argument("--dist", type=Path, default=ROOT / "dist", help="where the wheel is written (default: dist/, created if missing)")
    parser.add_argument("--version", help="the bundle's version (default: its data date; a corrected bundle of the same date: 2027.1.10.post1)")
    parser.add_argument("--upload", action="store_true", help="upload with twine after the checks (default: print the command)")
    args = parser.parse_args(argv)
    try:
        return publish(args.dir, args.dist, args.version, args.upload, run, twine())
    except CudafitError as exc:
        print(f"publish_data: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
