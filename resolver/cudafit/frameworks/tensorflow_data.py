"""Reading matrices/tensorflow/tensorflow-X.Y.toml (matrices/README.md)."""

from __future__ import annotations

from typing import Any

from cudafit.errors import DataError
from cudafit.fields import (
    UNKNOWN,
    line_header,
    line_releases,
    read_arch_lists,
    read_cuda,
    read_date,
    read_exact_pins,
    read_macos_fields,
    read_pins,
    read_platforms,
    read_python_map,
    read_pythons,
    read_str,
    read_str_list,
)
from cudafit.records import TFRelease

DATA_PREFIX = "tensorflow/tensorflow-"


def read_file(file: str, doc: dict, toolkits: dict, dates: list[str]) -> list[TFRelease]:
    sources, line = line_header(file, doc, "tensorflow/tensorflow-", {"release"}, dates)
    out = []
    for _i, e, version in line_releases(file, doc, sources, line):
        platforms = e.get("platforms", read_platforms)
        gpu_platforms = e.get("gpu_platforms", read_platforms)
        if not gpu_platforms <= platforms:
            raise e.fail("gpu_platforms", "names a platform missing from platforms")
        cuda = read_cuda(e, "cuda", toolkits)
        sass, ptx = read_arch_lists(e, cuda, toolkits)
        cudnn = e.get("cudnn", read_str)
        extras = tuple(e.get("extras", read_str_list))
        and_cuda = e.get("and_cuda", read_pins, required=False)
        if and_cuda is not None and "and-cuda" not in extras:
            raise e.fail("and_cuda", "given, but 'and-cuda' is not in extras")
        conda = e.get("conda", _conda_route, required=False)
        cuda_wheels = e.get("cuda_wheels", read_exact_pins, required=False)
        if cuda_wheels is not None:
            strays = sorted(set(cuda_wheels) - set(and_cuda or {}))
            if strays:
                raise e.fail("cuda_wheels", f"names {', '.join(strays)}, which the [and-cuda] extra does not pin")
            if any(cuda_wheels[d] != (and_cuda or {})[d] for d in cuda_wheels):
                raise e.fail("cuda_wheels", "pins a version other than the [and-cuda] extra's")
        out.append(TFRelease(
            version=version, date=e.get("date", read_date), python=e.get("python", read_pythons), platforms=platforms,
            gpu_platforms=gpu_platforms, cuda=cuda, cudnn=None if cudnn == UNKNOWN else cudnn, extras=extras,
            sass=sass, ptx=ptx, and_cuda=and_cuda, conda=conda,
            cpu_package=e.get("cpu_package", read_str, required=False),
            cpu_package_platforms=e.get("cpu_package_platforms", lambda v: frozenset(v) if v == [] else read_platforms(v),
                                        required=False),
            python_by_platform=e.get("python_by_platform", read_python_map, required=False),
            and_cuda_python=e.get("and_cuda_python", lambda v: frozenset(v) if v == [] else read_pythons(v), required=False),
            cuda_wheels=cuda_wheels,
            **read_macos_fields(e, platforms),
        ))
        e.finish()
    if not out:
        raise DataError(f"{file}: no [[release]] entries")
    return out


def _conda_route(value: Any) -> dict[str, str]:
    if not isinstance(value, dict) or set(value) - {"cudatoolkit", "cudnn", "channel", "notes", "source"}:
        raise ValueError("expected a table with cudatoolkit, cudnn and channel")
    for key in ("cudatoolkit", "cudnn", "channel"):
        read_str(value.get(key))
    return {k: value[k] for k in ("cudatoolkit", "cudnn", "channel")}
