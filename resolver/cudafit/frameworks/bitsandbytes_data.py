"""Reading matrices/bitsandbytes/bitsandbytes-X.Y.toml: bitsandbytes releases and the CUDA majors
(and CPU library) each platform's wheel carries, each fact graded (matrices/README.md). One wheel
ships a library per CUDA version; a build here is one CUDA major of it, `cuda` its oldest."""

from __future__ import annotations

from typing import Any

from cudafit.fields import Entry
from cudafit.frameworks.build_data import read_library
from cudafit.records import Build, LibraryRelease

DATA_PREFIX = "bitsandbytes/bitsandbytes-"


def read_file(file: str, doc: dict, toolkits: dict, dates: list[str]) -> list[LibraryRelease]:
    return read_library(file, doc, toolkits, dates, DATA_PREFIX, fields=frozenset(("pins",)), more=_build)


def _build(e: Entry, build: Build, releases: list[dict[str, Any]]) -> dict[str, Any]:
    if build.kind not in ("cuda", "cpu") or (build.kind == "cuda" and len(build.tag) not in (4, 5)):
        raise e.fail("tag", "a bitsandbytes build is CUDA libraries its wheel carries (cu12; cu128 where a major's differ) or its CPU library (cpu)")
    if not build.pins or "torch" not in build.pins:
        raise e.fail("pins", 'name the torch it requires (torch = ">=2.4,<3")')
    torch_cuda = e.get("torch_cuda", _read_cuda_range, required=False, default="")
    if torch_cuda and build.cuda is not None and f"{build.cuda.major}." not in torch_cuda:
        raise e.fail("torch_cuda", f"the CUDA versions it serves lie in its own major ({build.cuda.major})")
    # The CPU library is what bitsandbytes loads beside a CPU torch, whatever GPU is there.
    return {"torch_cuda": torch_cuda or ("cpu" if build.kind == "cpu" else "")}


def _read_cuda_range(value: Any) -> str:
    """'>=12.1,<12.8': the CUDA versions of torch whose library the build stands for."""
    from packaging.specifiers import SpecifierSet

    if not isinstance(value, str) or not value.strip():
        raise ValueError("expected a version range like '>=12.1,<12.8'")
    return str(SpecifierSet(value))
