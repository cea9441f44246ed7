"""Reading matrices/onnxruntime/onnxruntime-X.Y.toml: onnxruntime-gpu releases and their CUDA
builds, each fact graded (matrices/README.md)."""

from __future__ import annotations

from packaging.version import Version

from cudafit.errors import DataError
from cudafit.fields import (
    UNKNOWN,
    Entry,
    fail_type,
    line_header,
    line_releases,
    read_arch_lists,
    read_cuda,
    read_date,
    read_evidence,
    read_pins_or_unknown,
    read_platforms,
    read_python_map,
    read_pythons,
    read_str,
    read_str_list,
)
from cudafit.records import OrtBuild, OrtRelease

DATA_PREFIX = "onnxruntime/onnxruntime-"
_FLAVOURS = {"cu11": 11, "cu12": 12, "cu13": 13}


def read_file(file: str, doc: dict, toolkits: dict, dates: list[str]) -> list[OrtRelease]:
    sources, line = line_header(file, doc, DATA_PREFIX, {"release"}, dates)
    out = []
    for i, e, version in line_releases(file, doc, sources, line):
        platforms = e.get("platforms", read_platforms)
        raw_builds = e.get("build", lambda v: v if isinstance(v, list) else fail_type("[[release.build]] tables"), required=False, default=[])
        builds = tuple(_build(Entry(file, f"[[release]] #{i} ({version}) [[release.build]] #{j}", raw, sources),
                              version, platforms, toolkits)
                       for j, raw in enumerate(raw_builds, 1))
        out.append(OrtRelease(version=version, date=e.get("date", read_date), python=e.get("python", read_pythons),
                              platforms=platforms, builds=builds,
                              python_by_platform=e.get("python_by_platform", read_python_map, required=False)))
        e.finish()
    if not out:
        raise DataError(f"{file}: no [[release]] entries")
    return out


def _build(c: Entry, version: Version, platforms: frozenset[str], toolkits: dict) -> OrtBuild:
    flavour = c.get("flavour", read_str)
    if flavour not in _FLAVOURS:
        raise c.fail("flavour", f"expected one of {', '.join(_FLAVOURS)}")
    cuda = read_cuda(c, "cuda", toolkits)
    if cuda is not None and cuda.major != _FLAVOURS[flavour]:
        raise c.fail("cuda", f"is not a CUDA {_FLAVOURS[flavour]}.x version")
    sass, ptx = read_arch_lists(c, cuda, toolkits)
    build_platforms = c.get("platforms", read_platforms)
    if not build_platforms <= platforms:
        raise c.fail("platforms", "names a platform missing from the release's platforms")
    cudnn = c.get("cudnn", read_str)
    pins = c.get("pins", read_pins_or_unknown)
    index_url = c.get("index_url", lambda v: v if isinstance(v, str) else read_str(v))
    known = {"exists": True, "cuda": cuda is not None, "cudnn": cudnn != UNKNOWN, "pins": pins is not None,
             "sass": sass is not None, "ptx": ptx is not None}
    build = OrtBuild(
        package=c.get("package", read_str), index_url=index_url or None, flavour=flavour, cuda=cuda,
        cudnn=None if cudnn == UNKNOWN else cudnn, extras=tuple(c.get("extras", read_str_list)), pins=pins,
        platforms=build_platforms, sass=sass, ptx=ptx, evidence=read_evidence(c, known, optional=set()),
    )
    c.finish()
    return build
