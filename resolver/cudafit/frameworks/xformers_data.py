"""Reading matrices/xformers/xformers-X.Y.toml: xformers releases and their CUDA builds, each fact
graded (matrices/README.md). A build's `pins` name the torch it requires."""

from __future__ import annotations

from typing import Any

from cudafit.fields import Entry
from cudafit.frameworks.build_data import read_library
from cudafit.records import Build, LibraryRelease

DATA_PREFIX = "xformers/xformers-"


def read_file(file: str, doc: dict, toolkits: dict, dates: list[str]) -> list[LibraryRelease]:
    return read_library(file, doc, toolkits, dates, DATA_PREFIX, fields=frozenset(("index_url",)), more=_build)


def _build(e: Entry, build: Build, releases: list[dict[str, Any]]) -> dict[str, Any]:
    if build.kind != "cuda":
        raise e.fail("tag", "an xformers build is a CUDA build like cu128")
    if build.pins is not None and "torch" not in build.pins:
        raise e.fail("pins", 'name the torch this build requires (torch = "==2.10.0")')
    # Its extension is linked against one torch build, the one of its variant (cpp_lib.json of the
    # PyPI wheels names torch X+cuXYZ; each index folder holds the build for that folder's torch):
    # beside a torch of another CUDA version it fails to load, and xformers runs without its kernels.
    digits = build.tag.removeprefix("cu")
    if build.torch_cuda or not digits.isdigit() or len(digits) < 3:
        return {}
    return {"torch_cuda": f"=={digits[:-1]}.{digits[-1]}.*"}
