#!/usr/bin/env python3
"""Maintainer tool: measure where each release of the GPU ecosystem's binary distributions installs,
from PyPI's own file lists, into matrices/wheels.toml (needs the network).

A distribution that ships compiled (GPU, accelerator or native math) code is often wheels only, and
its wheels cover some platforms and CPython minors: where a release has none and no sdist, pip and uv
find nothing to install ("has no wheels with a matching platform tag"). `cudafit check` (CF015)
reads these facts offline. For every release (final or post, with a file not yanked; a project with no
final release: its pre-releases) this records, from the release's files on PyPI:

- `sdist`: whether it has an sdist (then a build may succeed anywhere: CF015 does not judge it);
- per platform (linux-x86_64, linux-aarch64, windows-x86_64, windows-arm64, macos-arm64,
  macos-x86_64, or `any` for a pure wheel), the CPython minors 3.6-3.15 a wheel there installs on:
  a cpXY tag gives 3.X; an abi3 tag 3.X and every later minor; py3/none every minor; each bounded by
  the file's own Requires-Python. Free-threaded builds are left out. Consecutive releases with the
  same facts share one entry.

    pip install -e '.[maint]' && python scripts/wheel_inventory.py [--only NAME ...] [-o matrices/wheels.toml]
"""

from __future__ import annotations

import argparse
import datetime
import email.parser
import os
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import requests
import tomlkit
from pypi_wheels import metadata_text, open_wheel  # scripts/

from cudafit.wheel_tags import where

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]
from packaging.requirements import Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

REPO = Path(__file__).resolve().parent.parent
PYPI = "https://pypi.org/pypi/{}/json"
# The distributions a GPU install pins and PyPI serves compiled: the frameworks and their
# companions, the runtimes and kernels built for them, the CUDA libraries, and the native
# decoders and math runtimes they pull in. A distribution with an sdist for every release is
# still listed where it is commonly pinned: the record says so, and CF015 leaves it alone.
DISTRIBUTIONS = (
    # frameworks and companions
    "torch",
    "torchvision",
    "torchaudio",
    "tensorflow",
    "tensorflow-cpu",
    "tensorflow-io-gcs-filesystem",
    "jaxlib",
    "jax-cuda12-plugin",
    "jax-cuda12-pjrt",
    "jax-cuda13-plugin",
    "jax-cuda13-pjrt",
    "onnxruntime",
    "onnxruntime-gpu",
    "onnxruntime-directml",
    "mlx",
    "mlx-metal",
    "paddlepaddle",
    "paddlepaddle-gpu",
    # compilers, runtimes and kernels built against them
    "triton",
    "bitsandbytes",
    "xformers",
    "flash-attn",
    "vllm",
    "torchao",
    "sgl-kernel",
    "deepspeed-kernels",
    "fbgemm-gpu",
    "fbgemm-gpu-genai",
    "warp-lang",
    "cupy-cuda11x",
    "cupy-cuda12x",
    "cupy-cuda13x",
    "ctranslate2",
    "faiss-cpu",
    "dlinfer-ascend",
    "petit-kernel",
    "autoawq",
    "autoawq-kernels",
    "cuequivariance-ops-cu12",
    "cuequivariance-ops-cu13",
    "cuequivariance-ops-torch-cu12",
    "cuequivariance-ops-torch-cu13",
    # CUDA libraries (nvidia's wheels) that files pin beside a framework
    "nvidia-cudnn-cu11",
    "nvidia-cudnn-cu12",
    "nvidia-cudnn-cu13",
    "nvidia-nccl-cu12",
    "nvidia-cublas-cu12",
    "nvidia-cuda-runtime-cu12",
    # native decoders and math runtimes
    "decord",
    "eva-decord",
    "intel-openmp",
    "mkl",
    # geometry, simulation and sensor libraries that robotics and 3D projects pin beside them
    "open3d",
    "pymeshlab",
    "usd-core",
    "pyrealsense2",
    "mujoco",
    # pure-Python kernel libraries whose own requirements decide where they install
    "liger-kernel",
    # pure-Python libraries built on jax, whose jax floor decides which jax a jax[cudaXX] beside
    # them gets (pip and uv fall back to an old jax without the plugin where it has no wheel)
    "orbax-checkpoint",
    "flax",
    "optax",
)
# Distributions whose Requires-Dist is read too (one wheel's METADATA per release, through range
# requests): the lines that name another distribution above, which every install gets (no extra).
# liger-kernel requires triton, which PyPI has for Linux only, so it does not install on Windows.
# Lines naming a framework whose releases the data holds (jax) are kept too: orbax-checkpoint
# 0.11.22 requires jax>=0.5.0, so a jax[cuda12] beside it gets a plugin of 0.5.0 or newer.
REQUIRES_OF = ("liger-kernel", "orbax-checkpoint", "flax", "optax")
FRAMEWORKS_REQUIRED = ("jax",)


def release_facts(files: list[dict[str, Any]]) -> dict[str, Any]:
    """{"sdist": bool, platform: [minors]} of one release's (not yanked) files."""
    live = [f for f in files if not f.get("yanked")]
    sdist = any(f["filename"].endswith((".tar.gz", ".zip", ".tar.bz2")) for f in live)
    wheels = where((f["filename"], _requires(f)) for f in live if f["filename"].endswith(".whl"))
    return {"sdist": sdist, **{p: sorted(m, key=Version) for p, m in wheels.items()}}


def _requires(item: dict[str, Any]) -> SpecifierSet:
    try:
        return SpecifierSet(item.get("requires_python") or "")
    except InvalidSpecifier:
        return SpecifierSet()


def listed_requirements(session: requests.Session, base: str, files: list[dict[str, Any]]) -> list[str]:
    """The Requires-Dist lines of a release (its first wheel's METADATA) that every install gets and
    that name a distribution of DISTRIBUTIONS or FRAMEWORKS_REQUIRED, as written."""
    wheel = next((f for f in files if f["filename"].endswith(".whl")), None)
    if wheel is None:
        return []
    with open_wheel(session, base, wheel) as zf:
        message = email.parser.Parser().parsestr(metadata_text(zf))
    listed = {canonicalize_name(n) for n in (*DISTRIBUTIONS, *FRAMEWORKS_REQUIRED)}
    out = []
    for text in message.get_all("Requires-Dist") or []:
        wanted = Requirement(text)
        if canonicalize_name(wanted.name) in listed and not (wanted.marker and "extra" in str(wanted.marker)):
            out.append(str(wanted))
    return out


def releases_of(session: requests.Session, name: str) -> list[tuple[Version, dict[str, Any]]]:
    """(version, facts) of each final or post release, oldest first. Every release is recorded, so
    that a version range is judged against all the releases it admits."""
    reply = session.get(PYPI.format(name), timeout=60)
    reply.raise_for_status()
    found: list[tuple[Version, list[dict[str, Any]]]] = []
    for text, files in reply.json()["releases"].items():
        live = [f for f in files if not f.get("yanked")]
        try:
            version = Version(text)
        except InvalidVersion:
            continue
        if live and not version.local:
            found.append((version, live))
    # pip and uv take a pre-release only where the spec names one or the project has nothing else
    # (deepspeed-kernels): so pre-releases are recorded only for a project without a final release
    finals = [(v, f) for v, f in found if not v.is_prerelease]
    out = []
    for version, files in sorted(finals or found, key=lambda pair: pair[0]):
        facts = release_facts(files)
        if name in REQUIRES_OF:
            requires = listed_requirements(session, reply.url, files)
            if requires:
                facts["requires"] = requires
        out.append((version, facts))
    return out


def runs(releases: Iterable[tuple[Version, dict[str, Any]]]) -> list[tuple[list[str], dict[str, Any]]]:
    """Consecutive releases with the same facts, grouped."""
    grouped: list[tuple[list[str], dict[str, Any]]] = []
    for version, facts in releases:
        if grouped and grouped[-1][1] == facts:
            grouped[-1][0].append(str(version))
        else:
            grouped.append(([str(version)], facts))
    return grouped


def document(measured: dict[str, list[tuple[Version, dict[str, Any]]]], today: str) -> tomlkit.TOMLDocument:
    doc = tomlkit.document()
    doc.add(tomlkit.comment("Where each release installs, per PyPI's file lists: written by scripts/wheel_inventory.py; see matrices/README.md"))
    doc["schema"] = 2
    doc["data_date"] = today
    sources = tomlkit.table()
    sources["pypi-files"] = (
        f"PyPI's JSON file list of each distribution below (read {today}): every file of every final or post release, "
        "yanked files left out; platforms and CPython minors from the wheel file names' tags and each file's Requires-Python"
    )
    doc["sources"] = sources
    distributions = tomlkit.aot()
    for name, releases in measured.items():
        entry = tomlkit.table()
        entry["name"] = name
        entry["source"] = ["pypi-files"]
        entry["grade"] = "measured"
        files = tomlkit.aot()
        for versions, facts in runs(releases):
            row = tomlkit.table()
            row["versions"] = versions
            for key, value in facts.items():
                row[key] = value
            files.append(row)
        entry["files"] = files
        distributions.append(entry)
    doc["distribution"] = distributions
    return doc


def write_atomically(path: Path, text: str) -> None:
    handle, temp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.chmod(temp, 0o644)
        os.replace(temp, path)
    except BaseException:
        os.unlink(temp)
        raise


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", metavar="NAME", help="measure only these distributions (the others are kept from -o)")
    parser.add_argument("-o", "--output", type=Path, default=REPO / "matrices" / "wheels.toml")
    args = parser.parse_args(argv)
    names = [canonicalize_name(n) for n in (args.only or DISTRIBUTIONS)]
    session = requests.Session()
    measured: dict[str, list[tuple[Version, dict[str, Any]]]] = {}
    for name in names:
        try:
            measured[name] = releases_of(session, name)
        except requests.RequestException as exc:
            print(f"{name}: {exc}", file=sys.stderr)
            return 2
        print(f"{name}: {len(measured[name])} releases", file=sys.stderr)
    if args.only and args.output.exists():
        # keep the other distributions as recorded (their facts re-read from the file)
        old = tomllib.loads(args.output.read_text(encoding="utf-8"))
        kept = {
            d["name"]: [(Version(v), {k: x for k, x in row.items() if k != "versions"}) for row in d["files"] for v in row["versions"]]
            for d in old["distribution"]
        }
        measured = {**kept, **measured}
    today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    write_atomically(args.output, tomlkit.dumps(document(dict(sorted(measured.items())), today)))
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
