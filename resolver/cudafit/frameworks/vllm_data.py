"""Reading matrices/vllm/vllm-X.Y.toml: vllm releases and the CUDA build of each PyPI wheel, each
fact graded (matrices/README.md). A build's `pins` are its exact Requires-Dist on torch,
torchvision, torchaudio and flashinfer."""

from __future__ import annotations

from typing import Any

from cudafit.fields import Entry
from cudafit.frameworks.build_data import read_library
from cudafit.records import Build, LibraryRelease

DATA_PREFIX = "vllm/vllm-"


def read_file(file: str, doc: dict, toolkits: dict, dates: list[str]) -> list[LibraryRelease]:
    return read_library(file, doc, toolkits, dates, DATA_PREFIX, more=_build)


def _build(e: Entry, build: Build, releases: list[dict[str, Any]]) -> dict[str, Any]:
    if build.kind != "cuda":
        raise e.fail("tag", "a vllm build is a CUDA build like cu13")
    if build.pins is not None and "torch" not in build.pins:
        raise e.fail("pins", 'name the torch this build requires (torch = "==2.14.0")')
    return {}
