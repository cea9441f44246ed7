"""Reading matrices/torchao/torchao-X.Y.toml: torchao releases, the CUDA build of its Linux x86_64
wheel, its pure-Python wheel elsewhere (`cpu`) and builds on the PyTorch index, each fact graded
(matrices/README.md). torchao's wheels declare no torch: a build's `pins.torch` is the torch its
version gate pairs it with."""

from __future__ import annotations

from typing import Any

from cudafit.fields import Entry, read_bool
from cudafit.frameworks.build_data import read_library
from cudafit.records import Build, LibraryRelease

DATA_PREFIX = "torchao/torchao-"


def read_file(file: str, doc: dict, toolkits: dict, dates: list[str]) -> list[LibraryRelease]:
    return read_library(file, doc, toolkits, dates, DATA_PREFIX, fields=frozenset(("index_url", "pins", "local")), more=_build)


def _build(e: Entry, build: Build, releases: list[dict[str, Any]]) -> dict[str, Any]:
    if build.kind not in ("cuda", "cpu"):
        raise e.fail("tag", "a torchao build is a CUDA build (cu12, cu126) or its pure-Python wheel (cpu)")
    if not build.pins or "torch" not in build.pins:
        raise e.fail("pins", 'name the torch this build goes with (torch = "==2.10.0")')
    loads = e.get("loads", read_bool, required=False, default=True)
    return {} if loads else {"loads": False}
