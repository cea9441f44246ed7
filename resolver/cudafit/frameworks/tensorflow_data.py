"""Reading matrices/tensorflow/tensorflow-X.Y.toml (matrices/README.md): releases, and the CUDA
build of the `tensorflow` wheel where it has one."""

from __future__ import annotations

from typing import Any

from packaging.version import Version

from cudafit.fields import (
    Entry,
    read_exact_pins,
    read_platforms,
    read_pythons,
    read_str,
    read_str_list,
)
from cudafit.frameworks.build_data import read_line
from cudafit.frameworks.tensorflow import TFRelease
from cudafit.records import Build

DATA_PREFIX = "tensorflow/tensorflow-"


def read_file(file: str, doc: dict, toolkits: dict, dates: list[str]) -> list[TFRelease]:
    return [
        TFRelease(version=version, builds=tuple(builds), **fields)
        for version, _e, fields, builds in read_line(
            file, doc, toolkits, dates, DATA_PREFIX, _release, fields=frozenset(("extras",)), more=_build, one_per_platform=True
        )
    ]


def _release(e: Entry, version: Version) -> dict[str, Any]:
    return dict(
        extras=tuple(e.get("extras", lambda v: v if v == [] else read_str_list(v))),
        cpu_package=e.get("cpu_package", read_str, required=False),
        cpu_package_platforms=e.get("cpu_package_platforms", lambda v: frozenset(v) if v == [] else read_platforms(v), required=False),
    )


def _build(e: Entry, build: Build, releases: list[dict[str, Any]]) -> dict[str, Any]:
    """TensorFlow's own facts of a build: where its [and-cuda] pins install, the CUDA wheels that
    still install where they do not, the conda route."""
    if build.kind != "cuda" or len(build.tag) != 4:
        raise e.fail("tag", "a TensorFlow build is a CUDA flavour like cu12")
    if build.extras not in ((), ("and-cuda",)):
        raise e.fail("extras", "a TensorFlow build is selected by [and-cuda] or by nothing")
    if build.extras and any("and-cuda" not in r["extras"] for r in releases):
        raise e.fail("extras", "and-cuda is not among the extras of every release it names")
    cuda_wheels = e.get("cuda_wheels", read_exact_pins, required=False)
    if cuda_wheels is not None:
        pins = build.pins or {}
        strays = sorted(set(cuda_wheels) - set(pins))
        if strays:
            raise e.fail("cuda_wheels", f"names {', '.join(strays)}, which the [and-cuda] extra does not pin")
        if any(cuda_wheels[d] != pins[d] for d in cuda_wheels):
            raise e.fail("cuda_wheels", "pins a version other than the [and-cuda] extra's")
    return dict(
        pins_python=e.get("pins_python", lambda v: frozenset(v) if v == [] else read_pythons(v), required=False),
        cuda_wheels=cuda_wheels,
        conda=e.get("conda", _conda_route, required=False),
    )


def _conda_route(value: Any) -> dict[str, str]:
    if not isinstance(value, dict) or set(value) - {"cudatoolkit", "cudnn", "channel", "notes", "source"}:
        raise ValueError("expected a table with cudatoolkit, cudnn and channel")
    for key in ("cudatoolkit", "cudnn", "channel"):
        read_str(value.get(key))
    return {k: value[k] for k in ("cudatoolkit", "cudnn", "channel")}
