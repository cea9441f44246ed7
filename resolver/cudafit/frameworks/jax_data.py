"""Reading matrices/jax/jax-X.Y.toml (matrices/README.md)."""

from __future__ import annotations

from cudafit.errors import DataError
from cudafit.fields import (
    UNKNOWN,
    Entry,
    line_header,
    line_releases,
    read_arch_lists,
    read_cuda,
    read_date,
    read_macos_fields,
    read_pins,
    read_platforms,
    read_python_map,
    read_pythons,
    read_str,
    read_str_list,
)
from cudafit.records import JaxCuda, JaxRelease

DATA_PREFIX = "jax/jax-"


_FLAVOURS = {"cu11": 11, "cu12": 12, "cu13": 13}


def read_file(file: str, doc: dict, toolkits: dict, dates: list[str]) -> list[JaxRelease]:
    from packaging.requirements import InvalidRequirement, Requirement

    sources, line = line_header(file, doc, "jax/jax-", {"release"}, dates)
    out = []
    for i, e, version in line_releases(file, doc, sources, line):
        platforms = e.get("platforms", read_platforms)
        extras = tuple(e.get("extras", read_str_list))
        flavours = []
        raw_cuda = e.get("cuda", lambda v: v if isinstance(v, list) else read_str_list(v), required=False, default=[])
        for j, item in enumerate(raw_cuda, 1):
            c = Entry(file, f"[[release]] #{i} ({version}) [[release.cuda]] #{j}", item, sources)
            extra = c.get("extra", read_str)
            if extra not in extras:
                raise c.fail("extra", f"is not among the release's extras {list(extras)}")
            flavour = c.get("flavour", read_str)
            if flavour not in _FLAVOURS:
                raise c.fail("flavour", f"expected one of {', '.join(_FLAVOURS)}")
            cuda_min = read_cuda(c, "cuda_min", toolkits, required=False)
            if cuda_min is not None and cuda_min.major != _FLAVOURS[flavour]:
                raise c.fail("cuda_min", f"is not a CUDA {_FLAVOURS[flavour]}.x version")
            sass, ptx = read_arch_lists(c, cuda_min, toolkits, any_minor=True)
            packages = tuple(c.get("packages", read_str_list))
            for text in packages:
                try:
                    Requirement(text)
                except InvalidRequirement:
                    raise c.fail("packages", f"{text!r} is not a PEP 508 requirement") from None
            cuda_platforms = c.get("platforms", read_platforms)
            if not cuda_platforms <= platforms:
                raise c.fail("platforms", "names a platform missing from the release's platforms")
            cudnn_min = c.get("cudnn_min", read_str, required=False)
            flavours.append(JaxCuda(
                extra=extra, flavour=flavour, cuda_min=cuda_min,
                cudnn_min=None if cudnn_min in (None, UNKNOWN) else cudnn_min, packages=packages,
                find_links=c.get("find_links", lambda v: v if isinstance(v, str) else read_str(v), required=False, default=""),
                platforms=cuda_platforms, sass=sass, ptx=ptx, pins=c.get("pins", read_pins, required=False),
            ))
            c.finish()
        out.append(JaxRelease(
            version=version, date=e.get("date", read_date), jaxlib=e.get("jaxlib", read_str, required=False),
            python=e.get("python", read_pythons), platforms=platforms, extras=extras, cuda=tuple(flavours),
            python_by_platform=e.get("python_by_platform", read_python_map, required=False),
            **read_macos_fields(e, platforms),
        ))
        e.finish()
    if not out:
        raise DataError(f"{file}: no [[release]] entries")
    return out
