#!/usr/bin/env python3
"""Maintainer tool: measure PyTorch's PyPI wheels and compare them with matrices/ (needs the network).

For each torch release on PyPI (from --since on) and each platform (linux-x86_64, linux-aarch64,
windows-x86_64), take one wheel (cp312, else the newest CPython) and read single members of it
through HTTP range requests (a wheel is 0.1-0.9 GB; this reads about 10 MB of it):

- METADATA: the nvidia-*/cuda-* Requires-Dist that apply on that platform, as written (the extras
  a cuda-toolkit requirement names are kept: they decide which library wheels come with it), and
  the cuDNN version of the nvidia-cudnn-cu* pin;
- torch/version.py: __version__ (its local tag names the build) and cuda;
- torch/lib/libtorch_python.so (torch_python.dll on Windows), CUDA builds only: the compiled-in arch
  string that torch.cuda.get_arch_list() returns, split into SASS (sm_XY) and PTX (compute_XY);
- torch/cuda/__init__.py (2.13 on): PYTORCH_RELEASES_CODE_CC, the arch list per CUDA version and host.

Then print the facts per release and platform with every difference from the data (the pins
compared as the data writes them, `pypi_pins` where it records the PyPI wheel's apart; exit 1 on
differences, 2 when a wheel could not be read), or with --json one JSON document to paste from.

    pip install -e '.[maint]' && python scripts/read_wheels.py [--since 2.6] [--release X.Y.Z ...]
        [--platform linux-x86_64 ...] [--json]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import requests
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version
from pypi_wheels import (  # scripts/
    RangeNotSupported,
    RemoteFile,
    metadata_text,
    normal_pins,
    pick_wheel,
    pin_differences,
    pypi_wheel_pins,
    wheel_url,
    written_cuda_pins,
)

from cudafit.binaries import assigned_literal as _assigned_literal
from cudafit.binaries import cc_of_code, find_arch_string, split_arch_list
from cudafit.errors import DataError
from cudafit.loader import load

INDEX = "https://pypi.org/pypi/torch/json"
PLATFORMS = ("linux-x86_64", "linux-aarch64", "windows-x86_64")
# Keys of PYTORCH_RELEASES_CODE_CC (torch/cuda/__init__.py picks one with platform.machine()).
HOST_ARCH = {"linux-x86_64": "x86_64", "linux-aarch64": "aarch64"}
# The host key parse_code_cc gives the flat tables of 2.11 and 2.12 (CUDA version -> one list for
# every host; 2.12 calls it the union of the x86_64 and aarch64 build matrices).
ALL_HOSTS = "*"
PYTHON_LIBRARY = {"linux": "torch/lib/libtorch_python.so", "windows": "torch/lib/torch_python.dll"}
CUDNN_PIN = re.compile(r"nvidia-cudnn-cu\d+")

CC = tuple[int, int]


# --- parsing (pure) -------------------------------------------------------------------------


def cc_text(cc: CC) -> str:
    return f"{cc[0]}.{cc[1]}"


def cc_list(ccs: Iterable[CC]) -> list[str]:
    return [cc_text(cc) for cc in sorted(ccs)]


def parse_version_py(source: str) -> tuple[str, str | None]:
    """(__version__, cuda) of torch/version.py."""
    version = _assigned_literal(source, "__version__")
    try:
        cuda = _assigned_literal(source, "cuda")
    except KeyError:
        cuda = None
    if not isinstance(version, str) or not (cuda is None or isinstance(cuda, str)):
        raise TypeError(f"torch/version.py: unexpected __version__={version!r} cuda={cuda!r}")
    return version, cuda


def parse_code_cc(source: str) -> dict[str, dict[str, frozenset[int]]] | None:
    """PYTORCH_RELEASES_CODE_CC of torch/cuda/__init__.py: CUDA version -> host arch -> {75, 80, ...}
    (2.13 on); a flat table (CUDA version -> {75, ...}, 2.11 and 2.12) comes back under the host
    ALL_HOSTS; None when the file has no such table."""
    try:
        table = _assigned_literal(source, "PYTORCH_RELEASES_CODE_CC")
    except KeyError:
        return None
    if not isinstance(table, dict):
        raise TypeError(f"PYTORCH_RELEASES_CODE_CC is not a dict: {table!r}")
    result: dict[str, dict[str, frozenset[int]]] = {}
    for cuda, by_host in table.items():
        if isinstance(by_host, (set, frozenset)):
            by_host = {ALL_HOSTS: by_host}
        if not isinstance(by_host, dict) or not all(isinstance(v, (set, frozenset)) and all(isinstance(c, int) for c in v) for v in by_host.values()):
            raise TypeError(f"PYTORCH_RELEASES_CODE_CC[{cuda!r}] is neither a set of ints nor host -> set: {by_host!r}")
        result[str(cuda)] = {str(host): frozenset(codes) for host, codes in by_host.items()}
    return result


def cudnn_version(pins: dict[str, str]) -> str | None:
    """'9.20.0' from nvidia-cudnn-cu13==9.20.0.48 (the first three parts of an exact pin)."""
    for name, spec in pins.items():
        if CUDNN_PIN.fullmatch(name):
            exact = [s.version for s in SpecifierSet(spec) if s.operator == "=="]
            if exact:
                return ".".join(exact[0].split(".")[:3])
    return None


def local_tag(version: str) -> str | None:
    """'cu130' of '2.13.0+cu130'; None without a local part."""
    return version.partition("+")[2] or None


# --- measuring ------------------------------------------------------------------------------


@dataclass
class WheelFacts:
    """What one wheel says about itself."""

    release: str
    platform: str
    filename: str
    size: int
    version: str | None = None  # torch/version.py __version__
    tag: str | None = None  # its local tag: cu130, cpu
    cuda: str | None = None
    pins: dict[str, str] = field(default_factory=dict)  # as written: cuda-toolkit[cublas,...] keeps its extras
    cudnn: str | None = None
    arch_list: str | None = None
    sass: frozenset[CC] | None = None
    ptx: frozenset[CC] | None = None
    code_cc: dict[str, dict[str, frozenset[int]]] | None = None
    bytes_read: int = 0
    requests: int = 0
    error: str | None = None


def python_of(filename: str) -> str:
    """'3.12' of a cp312 wheel name (the Python whose markers apply)."""
    match = re.search(r"-cp(\d)(\d+)-", filename)
    return f"{match.group(1)}.{match.group(2)}" if match else "3.12"


def facts_from_members(facts: WheelFacts, members: dict[str, bytes]) -> WheelFacts:
    """Fill `facts` from the wheel's members (METADATA, version.py, torch/cuda/__init__.py, the
    python library); a missing member leaves its facts None."""
    if "METADATA" in members:
        facts.pins = written_cuda_pins(members["METADATA"].decode(), facts.platform, python_of(facts.filename))
        facts.cudnn = cudnn_version(facts.pins)
    if "torch/version.py" in members:
        facts.version, facts.cuda = parse_version_py(members["torch/version.py"].decode())
        facts.tag = local_tag(facts.version)
    if "torch/cuda/__init__.py" in members:
        facts.code_cc = parse_code_cc(members["torch/cuda/__init__.py"].decode())
    library = members.get(PYTHON_LIBRARY["windows" if facts.platform.startswith("windows") else "linux"])
    if library is not None:
        facts.arch_list = find_arch_string(library)
        if facts.arch_list is not None:
            facts.sass, facts.ptx = split_arch_list(facts.arch_list)
    return facts


def read_members(zf: zipfile.ZipFile, platform: str) -> dict[str, bytes]:
    """The members read_wheels looks at ("METADATA" for the dist-info one); the python library only
    for CUDA builds, whose version.py names a CUDA version."""
    names = set(zf.namelist())
    members = {"METADATA": metadata_text(zf).encode()}
    for name in ("torch/version.py", "torch/cuda/__init__.py"):
        if name in names:
            members[name] = zf.read(name)
    if "torch/version.py" in members and parse_version_py(members["torch/version.py"].decode())[1] is not None:
        library = PYTHON_LIBRARY["windows" if platform.startswith("windows") else "linux"]
        if library in names:
            members[library] = zf.read(library)
    return members


def read_wheel(session: requests.Session, release: str, platform: str, wheel: dict, base: str = INDEX) -> WheelFacts:
    """Measure one wheel through range requests; a failure is recorded in `error`."""
    facts = WheelFacts(release, platform, wheel["filename"], wheel["size"])
    remote = RemoteFile(session, wheel_url(base, wheel), wheel["size"])
    try:
        with zipfile.ZipFile(remote) as zf:
            facts_from_members(facts, read_members(zf, platform))
    except (requests.RequestException, RangeNotSupported, zipfile.BadZipFile, StopIteration, KeyError, TypeError, ValueError, SyntaxError) as exc:
        facts.error = f"{type(exc).__name__}: {exc}"
    facts.bytes_read, facts.requests = remote.bytes_read, remote.requests
    return facts


def select_releases(releases: dict[str, list[dict]], since: str | None, only: Sequence[str]) -> list[str]:
    """Final releases with files, from `since` on (or exactly `only`), oldest first."""
    chosen = []
    for text, files in releases.items():
        try:
            version = Version(text)
        except InvalidVersion:
            continue
        if not files or version.is_prerelease or version.is_devrelease:
            continue
        if only and not any(version == Version(o) for o in only):
            continue
        if since and not only and version < Version(since):
            continue
        chosen.append(text)
    return sorted(chosen, key=Version)


def measure(
    session: requests.Session, releases: dict[str, list[dict]], versions: Sequence[str], platforms: Sequence[str], base: str = INDEX
) -> list[WheelFacts]:
    """One WheelFacts per release and platform with a wheel (a platform without one is left out)."""
    out = []
    for version in versions:
        for platform in platforms:
            wheel = pick_wheel(releases[version], platform)
            if wheel is not None:
                out.append(read_wheel(session, version, platform, wheel, base))
    return out


# --- comparing with the data (pure) ---------------------------------------------------------


def _variant(release: Any, tag: str, platform: str) -> Any:
    for variant in getattr(release, "builds", None) or ():
        if variant.tag == tag and platform in (variant.platforms or ()):
            return variant
    return None


def _pins_text(pins: dict[str, str]) -> str:
    return ", ".join(f"{name}{spec}" for name, spec in sorted(pins.items())) or "none"


def _ccs_text(ccs: Iterable[CC] | None) -> str:
    return "unknown" if ccs is None else (" ".join(cc_list(ccs)) or "none")


def _cudnn_matches(data: str, measured: str, pins: dict[str, str]) -> bool:
    """Data cuDNN '9.1.0' or '9.1.0.70' against the wheel's pin (9.1.0.70): the data's parts lead the pin's."""
    exact = [s.version for name, spec in pins.items() if CUDNN_PIN.fullmatch(name) for s in SpecifierSet(spec) if s.operator == "=="]
    full = (exact[0] if exact else measured).split(".")
    parts = data.split(".")
    return parts == full[: len(parts)]


def build_differences(facts: WheelFacts, variant: Any) -> list[str]:
    """How the data's variant differs from what its wheel measured (CUDA, SASS, PTX, cuDNN, pins)."""
    found = []
    if facts.cuda is not None:
        data_cuda = getattr(variant, "cuda", None)
        if data_cuda is None or Version(str(data_cuda)) != Version(facts.cuda):
            found.append(f"cuda: data {data_cuda or 'none'}, wheel {facts.cuda}")
        for name, data, measured in (("sass", variant.sass, facts.sass), ("ptx", variant.ptx, facts.ptx)):
            if measured is not None and (data is None or frozenset(data) != measured):
                found.append(f"{name}: data {_ccs_text(data)}, wheel {_ccs_text(measured)}")
        if facts.cudnn is not None and (variant.cudnn is None or not _cudnn_matches(str(variant.cudnn), facts.cudnn, facts.pins)):
            found.append(f"cudnn: data {variant.cudnn or 'unknown'}, wheel {facts.cudnn}")
    data_pins = pypi_wheel_pins(variant)
    if data_pins is None:
        if facts.pins:
            found.append(f"pins: data unknown, wheel {_pins_text(facts.pins)}")
    elif pin_differences(data_pins, facts.pins):
        found.append(f"pins: data {_pins_text(normal_pins(data_pins))}, wheel {_pins_text(facts.pins)}")
    return found


def table_differences(code_cc: dict[str, dict[str, frozenset[int]]], release: Any, platform: str) -> list[str]:
    """PYTORCH_RELEASES_CODE_CC against the data's variants on one Linux platform."""
    host = HOST_ARCH.get(platform)
    if host is None:
        return []
    found = []
    for cuda, by_host in sorted(code_cc.items(), key=lambda item: Version(item[0])):
        tag = "cu" + cuda.replace(".", "")
        if tag in getattr(release, "not_shipped", ()) or tag in getattr(release, "unconfirmed", ()):
            # the table follows the build scripts; the data records that this one was not published,
            # or that no reachable source says whether it was
            continue
        if ALL_HOSTS in by_host and platform == "linux-x86_64" and not _linux_variants(release, tag):
            found.append(f"PYTORCH_RELEASES_CODE_CC[{cuda!r}] = {_ccs_text(_ccs(by_host[ALL_HOSTS]))}: the data has no {tag} variant on Linux")
        if host not in by_host:
            continue
        table = _ccs(by_host[host])
        variant = _variant(release, tag, platform)
        if variant is None:
            found.append(f"PYTORCH_RELEASES_CODE_CC[{cuda!r}][{host!r}] = {_ccs_text(table)}: the data has no {tag} variant on {platform}")
        elif variant.sass is None or frozenset(variant.sass) != table:
            found.append(f"PYTORCH_RELEASES_CODE_CC[{cuda!r}][{host!r}] = {_ccs_text(table)}: data {tag} sass {_ccs_text(variant.sass)}")
    return found


def _ccs(codes: Iterable[int]) -> frozenset[CC]:
    return frozenset(cc_of_code(code) for code in codes)


def _linux_variants(release: Any, tag: str) -> list[Any]:
    return [v for p in HOST_ARCH if (v := _variant(release, tag, p)) is not None]


def flat_table_notes(code_cc: dict[str, dict[str, frozenset[int]]], release: Any) -> list[str]:
    """A flat table (2.11, 2.12) against the union of the data's Linux SASS lists per CUDA version:
    only notes, since such a list names no host and cannot be held against one build."""
    found = []
    for cuda, by_host in sorted(code_cc.items(), key=lambda item: Version(item[0])):
        variants = _linux_variants(release, "cu" + cuda.replace(".", ""))
        if ALL_HOSTS not in by_host or not variants:
            continue
        table = _ccs(by_host[ALL_HOSTS])
        lists = [v.sass for v in variants]
        data = "unknown" if any(s is None for s in lists) else _ccs_text(frozenset().union(*lists))
        if data != _ccs_text(table):
            found.append(
                f"PYTORCH_RELEASES_CODE_CC[{cuda!r}] (one list for all hosts) = {_ccs_text(table)}; "
                f"the data's cu{cuda.replace('.', '')} Linux SASS lists together: {data}"
            )
    return found


def differences(facts: WheelFacts, release: Any) -> list[str]:
    """Every way the data differs from one wheel's facts (the release record may be None: not in the data)."""
    if facts.error is not None or facts.tag is None and facts.version is None:
        return []
    if release is None:
        return [f"torch {facts.release} is on PyPI but not in the data"]
    tag = facts.tag or ("cu" + facts.cuda.replace(".", "") if facts.cuda else "cpu")
    found = []
    pypi_variant = (getattr(release, "pypi_variant", None) or {}).get(facts.platform)
    if pypi_variant is not None and pypi_variant != tag:
        found.append(f"pypi_variant: data {pypi_variant}, wheel {tag}")
    variant = _variant(release, tag, facts.platform)
    if variant is None:
        found.append(f"variant missing: no {tag} variant on {facts.platform} in the data")
    else:
        found += [f"{tag}: {text}" for text in build_differences(facts, variant)]
    if facts.code_cc is not None:
        found += table_differences(facts.code_cc, release, facts.platform)
    return found


def notes(facts: WheelFacts, release: Any = None) -> list[str]:
    """Oddities in the wheel itself, and what the data cannot be held to (not counted as differences)."""
    found = []
    if release is not None and facts.code_cc is not None and facts.platform == "linux-x86_64":
        found += flat_table_notes(facts.code_cc, release)
    if facts.cuda is not None and facts.arch_list is None and facts.error is None:
        found.append("CUDA build without an arch string in its python library")
    host = HOST_ARCH.get(facts.platform)
    by_host = (facts.code_cc or {}).get(facts.cuda or "", {})
    key = host if host in by_host else ALL_HOSTS
    if key in by_host and facts.sass is not None:
        table = _ccs(by_host[key])
        if table != facts.sass and (key == host or not table >= facts.sass):
            found.append(
                f"the wheel's own PYTORCH_RELEASES_CODE_CC[{facts.cuda!r}][{key!r}] ({_ccs_text(table)}) "
                f"{'differs from' if key == host else 'lacks part of'} its arch string "
                f"({_ccs_text(facts.sass)})"
            )
    return found


# --- reporting ------------------------------------------------------------------------------


def facts_json(facts: WheelFacts) -> dict[str, Any]:
    """Facts as JSON values, capabilities as "X.Y" (as matrices/ writes them)."""
    out = asdict(facts)
    out["sass"] = None if facts.sass is None else cc_list(facts.sass)
    out["ptx"] = None if facts.ptx is None else cc_list(facts.ptx)
    if facts.code_cc is not None:
        out["code_cc"] = {cuda: {host: cc_list(cc_of_code(c) for c in codes) for host, codes in by_host.items()} for cuda, by_host in facts.code_cc.items()}
    return out


def render(facts: WheelFacts, diffs: list[str], release: Any = None) -> list[str]:
    head = (
        f"torch {facts.release} {facts.platform}: {facts.filename} ({facts.size / 1e6:.0f} MB; "
        f"read {facts.bytes_read / 1e6:.1f} MB in {facts.requests} range requests)"
    )
    if facts.error is not None:
        return [head, f"  error: {facts.error}"]
    lines = [head, f"  version.py: {facts.version}, CUDA {facts.cuda or 'none'}"]
    if facts.cuda is not None:
        lines.append(f"  cuDNN (nvidia-cudnn pin): {facts.cudnn or 'no pin'}")
        lines.append(f"  arch list: {facts.arch_list or 'not found'} -> SASS {_ccs_text(facts.sass)}; PTX {_ccs_text(facts.ptx)}")
    lines.append(f"  pins: {_pins_text(facts.pins)}")
    host = HOST_ARCH.get(facts.platform)
    if facts.code_cc is not None:
        flat = all(ALL_HOSTS in by_host for by_host in facts.code_cc.values())
        key = ALL_HOSTS if flat else host
        table = "; ".join(f"{cuda}: {_ccs_text(_ccs(by_host.get(key, ())))}" if key else cuda for cuda, by_host in facts.code_cc.items())
        label = " (one list for all hosts)" if flat and key else f" ({key})" if key else ""
        lines.append(f"  PYTORCH_RELEASES_CODE_CC{label}: {table}")
    lines += [f"  note: {text}" for text in notes(facts, release)]
    lines += [f"  DIFFERENCE {text}" for text in diffs]
    return lines


def compare_all(measured: list[WheelFacts], torch_data: Sequence[Any], versions: Sequence[str], platforms: Sequence[str]) -> dict[tuple[str, str], list[str]]:
    """(release, platform) -> differences; also platforms the data serves from PyPI that have no wheel."""
    by_version = {str(r.version): r for r in torch_data}
    found: dict[tuple[str, str], list[str]] = {}
    for facts in measured:
        found[(facts.release, facts.platform)] = differences(facts, by_version.get(facts.release))
    for version in versions:
        release = by_version.get(version)
        for platform in platforms:
            if (version, platform) in found:
                continue
            served = (getattr(release, "pypi_variant", None) or {}).get(platform)
            found[(version, platform)] = [f"no CPython wheel on PyPI, the data's pypi_variant is {served}"] if served else []
    return found


def run(session: requests.Session, args: argparse.Namespace, torch_data: Sequence[Any] | None) -> int:
    reply = session.get(INDEX, timeout=60)
    reply.raise_for_status()
    releases = reply.json()["releases"]
    versions = select_releases(releases, args.since, args.release)
    if torch_data is None:
        torch_data = load(use_cache=False).torch
    measured = measure(session, releases, versions, args.platform)
    found = compare_all(measured, torch_data, versions, args.platform)
    count = sum(len(v) for v in found.values())
    errors = [f for f in measured if f.error is not None]
    if args.json:
        by_version = {str(r.version): r for r in torch_data}
        document = {
            "index": INDEX,
            "wheels": [{**facts_json(f), "notes": notes(f, by_version.get(f.release))} for f in measured],
            "differences": [{"release": r, "platform": p, "difference": d} for (r, p), diffs in found.items() for d in diffs],
        }
        print(json.dumps(document, indent=1, sort_keys=False))
    else:
        by_key = {(f.release, f.platform): f for f in measured}
        by_version = {str(r.version): r for r in torch_data}
        for version in versions:
            for platform in args.platform:
                facts = by_key.get((version, platform))
                lines = (
                    render(facts, found[(version, platform)], by_version.get(version))
                    if facts
                    else ([f"torch {version} {platform}: no CPython wheel on PyPI"] + [f"  DIFFERENCE {d}" for d in found[(version, platform)]])
                )
                print("\n".join(lines))
        print(f"{len(measured)} wheel(s) read, {count} difference(s), {len(errors)} error(s)")
    return 2 if errors else 1 if count else 0


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--since", default="2.6", help="first release to read (default 2.6)")
    parser.add_argument("--release", action="extend", nargs="+", default=[], metavar="X.Y.Z", help="only these releases")
    parser.add_argument("--platform", action="extend", nargs="+", choices=PLATFORMS, help="only these platforms")
    parser.add_argument("--json", action="store_true", help="print one JSON document with the measured facts")
    args = parser.parse_args(argv)
    args.platform = args.platform or list(PLATFORMS)
    return args


def main(argv: Sequence[str] | None = None, torch_data: Sequence[Any] | None = None) -> int:
    """Exit 0: the data agrees with the wheels; 1: differences; 2: a wheel or PyPI could not be read.
    `torch_data` (TorchRelease records) replaces cudafit's data, for tests."""
    args = parse_args(argv)
    try:
        return run(requests.Session(), args, torch_data)
    except requests.RequestException as exc:
        print(f"error: {INDEX}: {exc}", file=sys.stderr)
        return 2
    except DataError as exc:
        print(f"error: cudafit's data: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
