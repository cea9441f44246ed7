#!/usr/bin/env python3
"""Maintainer tool: what upstream released that matrices/ lacks, with draft entries to fill.

For torch, torchvision, torchaudio, tensorflow, jax, jaxlib, the JAX CUDA plugins,
onnxruntime-gpu and the libraries built against torch (xformers, flash-attn, vllm, torchao,
bitsandbytes; listed, not drafted), compare PyPI's releases (final, not yanked, no older than the
oldest release the data knows) with the data: every one it lacks, between known releases too
(torchao 0.14.0 went unnoticed beside 0.14.1), except for the distributions recorded on another's
releases (torchvision, torchaudio, jaxlib), where only releases past the newest known count: an
older one that no recorded release pairs with (jaxlib 0.4.35) is no gap. For each missing framework release, draft a `[[release]]` entry from
what PyPI states (upload date, the CPython minors and platforms that have wheels, the minimum
macOS per wheel tag) and, where a Linux x86_64 wheel exists, the nvidia-*/cuda-* pins of its
METADATA read through HTTP range requests, as written (cuda-toolkit's extras kept): those facts
are `measured`. Everything else (the index
builds, architecture lists, cuDNN, companions) is written "unknown" for a person to fill from the
sources in docs/sources.md and matrices/README.md. Exit 1 when upstream has releases the data
lacks, 0 when it has none, 2 on a network error.

    pip install -e '.[maint]' && python scripts/refresh.py [--drafts DIR]
"""

from __future__ import annotations

import argparse
import datetime
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import requests
from packaging.version import Version
from pypi_wheels import macos_minimums, missing, pick_wheel, wheel_matrix, written_cuda_requirements  # scripts/, next to this file

from cudafit.frameworks import BY_FAMILY, families
from cudafit.loader import load

PYPI = "https://pypi.org/pypi/{}/json"
# distribution -> (data folder, file stem, how the data's releases name its versions)
FAMILIES: dict[str, tuple[str, str, Callable[[Any], Iterable[Any]]]] = {
    "torch": ("pytorch", "torch", lambda m: (r.version for r in m.torch)),
    "torchvision": ("pytorch", "torch", lambda m: (Version(r.torchvision) for r in m.torch if r.torchvision)),
    "torchaudio": ("pytorch", "torch", lambda m: (Version(r.torchaudio) for r in m.torch if r.torchaudio)),
    "tensorflow": ("tensorflow", "tensorflow", lambda m: (r.version for r in m.frameworks["tensorflow"])),
    "jax": ("jax", "jax", lambda m: (r.version for r in m.frameworks["jax"])),
    "jaxlib": ("jax", "jax", lambda m: (Version(r.jaxlib) for r in m.frameworks["jax"] if r.jaxlib)),
    "onnxruntime-gpu": ("onnxruntime", "onnxruntime", lambda m: (r.version for r in m.frameworks.get("onnxruntime-gpu", ()))),
}
# The libraries built against torch: a new release is listed (its facts are read from its wheels
# by hand: the torch it pins or was built for, the CUDA its code links, its kernels).
for _library in (family for family in families() if BY_FAMILY[family].REQUIRES):
    FAMILIES[_library] = (_library, _library, lambda m, name=_library: (r.version for r in m.frameworks.get(name, ())))
# Distributions drafted as releases of their own framework (companions and jaxlib are recorded on them).
DRAFTED = ("torch", "tensorflow", "jax", "onnxruntime-gpu")
# Recorded on another distribution's releases (torch's companions, jax's jaxlib): a release between
# known ones may pair with none, so only releases past the newest known are gaps.
PAIRED = ("torchvision", "torchaudio", "jaxlib")


def pypi_releases(session: requests.Session, name: str) -> dict[str, list[dict]]:
    response = session.get(PYPI.format(name), timeout=60)
    response.raise_for_status()
    releases = response.json()["releases"]
    assert isinstance(releases, dict)
    return releases


def upload_date(files: Sequence[dict]) -> str:
    times = sorted(f["upload_time_iso_8601"][:10] for f in files if f.get("upload_time_iso_8601"))
    return times[0] if times else "unknown"


def _toml_list(items: Iterable[str]) -> str:
    return "[" + ", ".join(f'"{i}"' for i in items) + "]"


def _toml_key(name: str) -> str:
    """A pin's key in TOML: bare where it can be, quoted where it names extras (cuda-toolkit[cublas])."""
    return name if name.replace("-", "").replace("_", "").isalnum() else f'"{name}"'


def _python_key(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split("."))


def draft(name: str, version: Version, files: list[dict], pins: dict[str, str] | None, today: str) -> str:
    """A [[release]] entry (and the PyPI build's pins where read) as TOML text to paste and fill."""
    matrix = wheel_matrix(files)
    pythons = sorted(set().union(*matrix.values()), key=_python_key) if matrix else []
    platforms = sorted(matrix)
    key = f"pypi-{name}-{version}"
    lines = [
        f'# Drafted by scripts/refresh.py on {today} from PyPI: check every fact, fill each "unknown".',
        "[sources]",
        f'"{key}" = "PyPI metadata of {name} {version}: file list (wheel tags, upload times) and the Linux x86_64 wheel\'s Requires-Dist"',
        "",
        "[[release]]",
        f'version = "{version}"',
        f'date = "{upload_date(files)}"',
        f"python = {_toml_list(pythons)}",
        f"platforms = {_toml_list(platforms)}",
    ]
    by_platform = {p: sorted(v, key=_python_key) for p, v in matrix.items() if set(v) != set(pythons)}
    if by_platform:
        lines.append("python_by_platform = { " + ", ".join(f"{p} = {_toml_list(v)}" for p, v in sorted(by_platform.items())) + " }")
    macos = {p: min(v.values(), key=_python_key) for p, v in macos_minimums(files).items()}
    if macos:
        lines.append("macos_min = { " + ", ".join(f'{p} = "{v}"' for p, v in sorted(macos.items())) + " }")
    lines += [f'source = ["{key}"]', 'notes = "Drafted from PyPI; builds, architecture lists, cuDNN and companions still to fill."', ""]
    if pins is not None:
        lines += [
            "# The Linux x86_64 wheel's CUDA requirements (measured). Which build it is (its local",
            "# version in torch/version.py: scripts/read_wheels.py reads it), its CUDA, cuDNN and",
            "# architecture lists are still to fill.",
            "[[build]]",
            'tag = "unknown"',
            f'releases = ["{version}"]',
            'platforms = ["linux-x86_64"]',
            "pins = { " + ", ".join(f'{_toml_key(dist)} = "{spec}"' for dist, spec in sorted(pins.items())) + " }",
            f'source = ["{key}"]',
            "",
            "[build.evidence]",
            f'pins = {{ grade = "measured", source = ["{key}"] }}',
            "",
        ]
    return "\n".join(lines)


def refresh(session: requests.Session, matrices: Any, drafts: Path | None, today: str, out=print) -> int:
    """Print what is missing (and write drafts); return how many releases the data lacks."""
    lacking = 0
    for name, (folder, stem, known) in FAMILIES.items():
        releases = pypi_releases(session, name)
        for version in missing(known(matrices), releases, newer_only=name in PAIRED):
            lacking += 1
            out(f"{name} {version}: on PyPI ({upload_date(releases[str(version)])}) but not in matrices/{folder}/")
            if name not in DRAFTED:
                continue
            files = [f for f in releases[str(version)] if not f.get("yanked")]
            wheel = pick_wheel(files, "linux-x86_64")
            pins = written_cuda_requirements(session, PYPI.format(name), wheel) if wheel is not None else None
            text = draft(name, version, files, pins, today)
            if drafts is None:
                out(text)
            else:
                drafts.mkdir(parents=True, exist_ok=True)
                target = drafts / f"{stem}-{version}.draft.toml"
                target.write_text(text + "\n")
                out(f"  draft: {target}")
    return lacking


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--drafts", type=Path, help="write one draft TOML per missing release here (default: print them)")
    args = parser.parse_args(argv)
    matrices = load(use_cache=False)
    session = requests.Session()
    session.headers["User-Agent"] = "cudafit-refresh"
    try:
        lacking = refresh(session, matrices, args.drafts, datetime.date.today().isoformat())
    except requests.RequestException as exc:
        print(f"refresh: cannot read PyPI: {exc}", file=sys.stderr)
        return 2
    print(f"{lacking} release(s) on PyPI that the data lacks" if lacking else f"the data (of {matrices.data_date}) knows every release on PyPI")
    return 1 if lacking else 0


if __name__ == "__main__":
    sys.exit(main())
