"""Reading matrices/onnxruntime/onnxruntime-X.Y.toml: onnxruntime-gpu releases and their CUDA
builds, each fact graded (matrices/README.md)."""

from __future__ import annotations

from typing import Any

from packaging.version import Version

from cudafit.fields import Entry
from cudafit.frameworks.build_data import read_line
from cudafit.records import Build, OrtRelease

DATA_PREFIX = "onnxruntime/onnxruntime-"


def read_file(file: str, doc: dict, toolkits: dict, dates: list[str]) -> list[OrtRelease]:
    return [
        OrtRelease(version=version, builds=tuple(builds), **fields)
        for version, _e, fields, builds in read_line(
            file, doc, toolkits, dates, DATA_PREFIX, _release, fields=frozenset(("index_url", "package", "extras")), more=_build
        )
    ]


def _release(e: Entry, version: Version) -> dict[str, Any]:
    return {}


def _build(e: Entry, build: Build, releases: list[dict[str, Any]]) -> dict[str, Any]:
    if build.kind != "cuda" or len(build.tag) != 4:
        raise e.fail("tag", "an onnxruntime-gpu build is a CUDA flavour like cu12")
    if not build.package:
        raise e.fail("package", "missing: the distribution that serves this build (onnxruntime-gpu)")
    return {}
