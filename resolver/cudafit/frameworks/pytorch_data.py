"""Reading matrices/pytorch/torch-X.Y.toml: releases, their builds per platform, and the evidence
grade of every fact of a build (matrices/README.md)."""

from __future__ import annotations

from typing import Any

from packaging.version import Version

from cudafit.fields import (
    Entry,
    read_companion,
    read_cuda_tags,
    read_pins,
    read_str,
    read_str_list,
)
from cudafit.frameworks.build_data import ACCELERATOR_FACTS, read_line
from cudafit.gpu_tables_data import AOT_ALIASES, INTEL_DEVICES, read_gfx_list
from cudafit.records import PLATFORMS, Build, Evidence, TorchRelease

DATA_PREFIX = "pytorch/torch-"
FIELDS = frozenset(("python", "pypi_pins", *ACCELERATOR_FACTS))


def read_file(file: str, doc: dict, toolkits: dict, dates: list[str]) -> list[TorchRelease]:
    out = []
    for version, e, r, own in read_line(file, doc, toolkits, dates, DATA_PREFIX, _release, fields=FIELDS, more=_build):
        pypi_only = []
        for platform, tag in r["pypi_variant"].items():
            if platform not in r["platforms"]:
                raise e.fail("pypi_variant", f"names platform {platform!r}, which is not in this release's platforms")
            if any(b.tag == tag and platform in b.platforms for b in own):
                continue
            if tag != "cpu":
                raise e.fail("pypi_variant", f"{platform} = {tag!r} names no [[build]] of torch {version} on that platform")
            # A CPU build that only PyPI serves (macOS, older aarch64): the entry itself is the fact.
            pypi_only.append(platform)
        for field in ("not_shipped", "unconfirmed"):
            for tag in r[field]:
                if any(b.tag == tag for b in own):
                    raise e.fail(field, f"names {tag!r}, which is a [[build]] of torch {version}")
        if set(r["not_shipped"]) & set(r["unconfirmed"]):
            raise e.fail("unconfirmed", "a build is either not shipped or unconfirmed, not both")
        if pypi_only:
            own.append(
                Build(tag="cpu", kind="cpu", platforms=frozenset(pypi_only), notes="served by PyPI", evidence={"exists": Evidence("measured", r["source"])})
            )
        out.append(TorchRelease(version=version, builds=tuple(own), **r))
    return out


def _release(e: Entry, version: Version) -> dict[str, Any]:
    return dict(
        torchvision=e.get("torchvision", read_companion, required=False),
        torchaudio=e.get("torchaudio", read_companion, required=False),
        conda_cuda=tuple(e.get("conda_cuda", read_str_list, required=False, default=[])),
        conda_cuda_package=e.get("conda_cuda_package", _conda_package, required=False, default="pytorch-cuda"),
        pypi_variant=e.get("pypi_variant", _variant_map, required=False, default={}),
        not_shipped=tuple(e.get("not_shipped", read_cuda_tags, required=False, default=[])),
        unconfirmed=tuple(e.get("unconfirmed", read_cuda_tags, required=False, default=[])),
        source=tuple(e.raw.get("source", ())),
    )


def _conda_package(value: Any) -> str:
    if value not in ("pytorch-cuda", "cudatoolkit"):
        raise TypeError("expected 'pytorch-cuda' or 'cudatoolkit'")
    return str(value)


def _variant_map(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        raise TypeError("expected a table of platform = build tag")
    for platform, tag in value.items():
        if platform not in PLATFORMS:
            raise ValueError(f"{platform!r} is not one of {', '.join(PLATFORMS)}")
        read_str(tag)
    return dict(value)


def _build(e: Entry, build: Build, releases: list[dict[str, Any]]) -> dict[str, Any]:
    """torch's own facts of a build: a ROCm build's release, the PyPI wheel's pins."""
    if build.kind == "cuda":
        if len(build.tag) != 5:
            raise e.fail("tag", "a torch CUDA build is tagged with its CUDA version, like cu126")
        return {"pypi_pins": e.get("pypi_pins", read_pins, required=False)}
    if build.kind == "rocm":
        rocm = e.get("rocm", read_str)
        if build.tag != f"rocm{rocm}":
            raise e.fail("rocm", f"does not match the tag {build.tag!r}")
        gfx = e.get("gfx", read_gfx_list, required=False)
        no_blas = frozenset(e.get("gfx_no_blas", read_gfx_list, required=False, default=[]))
        if no_blas and (gfx is None or not no_blas <= gfx):
            raise e.fail("gfx_no_blas", "names targets that are not in the build's gfx list")
        libraries = e.get("rocm_libraries", _rocm_libraries, required=False, default="")
        return {"rocm": rocm, "gfx": gfx, "gfx_no_blas": no_blas, "rocm_libraries": libraries, **_index_packages(e)}
    if build.tag == "xpu":
        return {"xpu_aot": e.get("xpu_aot", lambda v: _xpu_aot(v, build.platforms), required=False), **_index_packages(e)}
    return {}


def _index_packages(e: Entry) -> dict[str, Any]:
    return {"index_packages": tuple(e.get("index_packages", read_str_list, required=False, default=[]))}


def _rocm_libraries(value: Any) -> str:
    if value not in ("bundled", "wheels"):
        raise ValueError("expected 'bundled' (in the wheel) or 'wheels' (the rocm packages it requires)")
    return str(value)


def _xpu_aot(value: Any, platforms: frozenset[str]) -> dict[str, frozenset[str]]:
    if not isinstance(value, dict):
        raise TypeError("expected a table of platform = [device codes]")
    out = {}
    for platform, devices in value.items():
        if platform not in platforms:
            raise ValueError(f"{platform!r} is not a platform of this build")
        codes = read_str_list(devices)
        unknown = sorted(set(codes) - INTEL_DEVICES - set(AOT_ALIASES))
        if unknown:
            raise ValueError(f"{', '.join(unknown)}: not an Intel device code of intel.toml")
        # each code as the device codes of intel.toml it covers
        out[platform] = frozenset(d for code in codes for d in AOT_ALIASES.get(code, frozenset((code,))))
    return out
