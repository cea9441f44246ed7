"""Reading matrices/vllm/vllm-X.Y.toml: vllm releases and the CUDA build of each PyPI wheel, each
fact graded (matrices/README.md). A build's `pins` are its exact Requires-Dist on torch,
torchvision, torchaudio and flashinfer."""

from __future__ import annotations

from typing import Any

from packaging.version import Version

from cudafit.fields import Entry, read_str
from cudafit.frameworks.build_data import read_library
from cudafit.records import Build, LibraryRelease

DATA_PREFIX = "vllm/vllm-"


def read_file(file: str, doc: dict, toolkits: dict, dates: list[str]) -> list[LibraryRelease]:
    return read_library(file, doc, toolkits, dates, DATA_PREFIX, _release, fields=frozenset(("route",)), more=_build)


def _release(e: Entry, version: Version) -> dict[str, Any]:
    # The GitHub release's wheels (the CUDA 12.9 builds PyPI does not carry): their URL, with {build}.
    asset = e.get("asset", read_str, required=False, default="")
    if asset and ("{build}" not in asset or not asset.startswith("https://")):
        raise e.fail("asset", "expected the https URL of the release's wheels with {build} in it")
    return {"asset": asset}


def _build(e: Entry, build: Build, releases: list[dict[str, Any]]) -> dict[str, Any]:
    if build.kind != "cuda":
        raise e.fail("tag", "a vllm build is a CUDA build like cu13")
    if build.pins is not None and "torch" not in build.pins:
        raise e.fail("pins", 'name the torch this build requires (torch = "==2.14.0")')
    if build.route == "source":
        raise e.fail("route", 'a vllm build is a wheel: on PyPI, or route = "asset" on the GitHub release')
    if build.route == "asset":
        if not all(r.get("asset") for r in releases):
            raise e.fail("route", "an asset build needs its release's asset URL")
        return {"asset": e.get("asset", read_str)}
    return {}
