"""Reading matrices/flash-attn/flash-attn-X.Y.toml: flash-attn releases (an sdist each), the
wheels attached to their GitHub release (`route = "asset"`, one per torch minor and CUDA major)
and the build from source (`route = "source"`), each fact graded (matrices/README.md)."""

from __future__ import annotations

import re
from typing import Any

from packaging.version import Version

from cudafit.fields import Entry, read_str
from cudafit.frameworks.build_data import read_library
from cudafit.records import Build, LibraryRelease

DATA_PREFIX = "flash-attn/flash-attn-"


def read_file(file: str, doc: dict, toolkits: dict, dates: list[str]) -> list[LibraryRelease]:
    return read_library(file, doc, toolkits, dates, DATA_PREFIX, _release, fields=frozenset(("python", "route")), more=_build)


def _release(e: Entry, version: Version) -> dict[str, Any]:
    asset = e.get("asset", read_str)
    if "{build}" not in asset or "{py}" not in asset or not asset.startswith("https://"):
        raise e.fail("asset", "expected the https URL of a release asset with {build} and {py} in it")
    return {"asset": asset}


def _build(e: Entry, build: Build, releases: list[dict[str, Any]]) -> dict[str, Any]:
    if build.kind != "cuda" or not build.route:
        raise e.fail("route", 'a flash-attn build is a CUDA build with route = "asset" or "source" (PyPI has no wheel)')
    if not build.pins or "torch" not in build.pins:
        raise e.fail("pins", 'name the torch it goes with (torch = "==2.8.*")')
    if build.route == "asset":
        if not re.fullmatch(r"==\d+\.\d+\.\*", build.pins["torch"]):
            raise e.fail("pins", 'a release asset is built for one torch minor: torch = "==2.8.*"')
        return {"asset": e.get("asset", read_str)}
    return {}
