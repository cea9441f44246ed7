"""Reading what every framework's release-line file shares (schema 2, matrices/README.md): the
fields of a `[[release]]` that every release has, and `[[build]]`, one model of a build for every
framework. Each framework's reader adds its own fields through `more`."""

from __future__ import annotations

from typing import Any, Callable, Iterator, Optional

from packaging.version import Version

from cudafit.errors import DataError
from cudafit.fields import (
    CUDA_TAG_RE,
    UNKNOWN,
    Entry,
    entries,
    line_releases,
    read_arch_lists,
    read_cuda,
    read_date,
    read_evidence,
    read_macos_fields,
    read_pins_or_unknown,
    read_platforms,
    read_python_map,
    read_pythons,
    read_str,
    read_str_list,
)
from cudafit.records import Build


def release_fields(e: Entry) -> dict[str, Any]:
    """The fields of a [[release]] that every framework has (its version is read by line_releases)."""
    platforms = e.get("platforms", read_platforms)
    return dict(
        date=e.get("date", read_date),
        python=e.get("python", read_pythons),
        platforms=platforms,
        python_by_platform=e.get("python_by_platform", read_python_map, required=False),
        **read_macos_fields(e, platforms),
    )


def read_releases(file: str, doc: dict, sources: set[str], line: str,
                  more: Callable[[Entry, Version], dict[str, Any]]) -> Iterator[tuple[Version, Entry, dict[str, Any]]]:
    """(version, entry, fields) of each [[release]]: the shared fields and the framework's own."""
    seen: set[Version] = set()
    for _i, e, version in line_releases(file, doc, sources, line):
        if version in seen:
            raise e.fail("version", "is listed twice in this file")
        seen.add(version)
        fields = release_fields(e)
        fields.update(more(e, version))
        e.finish()
        yield version, e, fields
    if not seen:
        raise DataError(f"{file}: no [[release]] entries")


def read_builds(file: str, doc: dict, sources: set[str], releases: dict[Version, dict[str, Any]], toolkits: dict, *,
                more: Optional[Callable[[Entry, Build, list[dict[str, Any]]], dict[str, Any]]] = None,
                cuda_is_floor: bool = False) -> dict[Version, list[Build]]:
    """Each release's builds. `releases` maps a version to its fields (platforms at least); `more`
    reads the framework's own fields of a build, given the fields of the releases it belongs to;
    with cuda_is_floor (JAX) `cuda` is the oldest runtime the build accepts, so its SASS/PTX are
    checked against every toolkit of the major."""
    out: dict[Version, list[Build]] = {v: [] for v in releases}
    for i, raw in enumerate(entries(file, doc, "build", "build"), 1):
        tag = raw.get("tag", "?") if isinstance(raw, dict) else "?"
        e = Entry(file, f"[[build]] #{i} ({tag})", raw, sources)
        build = read_build(e, toolkits, cuda_is_floor=cuda_is_floor)
        applies = _releases(e, releases)
        if more is not None:
            build = build._replace(**more(e, build, [releases[v] for v in applies]))
        for version in applies:
            platforms = releases[version]["platforms"]
            if not build.platforms <= platforms:
                raise e.fail("platforms", f"names {', '.join(sorted(build.platforms - platforms))}, "
                                          f"not among the platforms of release {version}")
            for other in out[version]:
                if other.tag == build.tag and other.extras == build.extras and other.platforms & build.platforms:
                    raise e.fail("platforms", f"release {version} already has build {build.tag} on "
                                              f"{', '.join(sorted(other.platforms & build.platforms))}")
            out[version].append(build)
        e.finish()
    return out


def _releases(e: Entry, releases: dict[Version, Any]) -> list[Version]:
    named = e.get("releases", lambda v: [Version(x) for x in read_str_list(v)], required=False)
    if named is None:
        return list(releases)
    for version in named:
        if version not in releases:
            raise e.fail("releases", f"names {version}, which has no [[release]] in this file")
    return named


def read_build(e: Entry, toolkits: dict, *, cuda_is_floor: bool = False) -> Build:
    tag = e.get("tag", read_str)
    common = dict(
        tag=tag,
        platforms=e.get("platforms", read_platforms),
        python=e.get("python", read_pythons, required=False),
        index_url=e.get("index_url", read_str, required=False, default=""),
        package=e.get("package", read_str, required=False, default=""),
        extras=tuple(e.get("extras", lambda v: v if v == [] else read_str_list(v), required=False, default=())),
        notes=e.raw.get("notes", ""),
    )
    match = CUDA_TAG_RE.match(tag)
    if not match:
        kind = "cpu" if tag == "cpu" else "rocm" if tag.startswith("rocm") else "other"
        return Build(kind=kind, evidence=read_evidence(e, {"exists": True}, optional=set()), **common)
    cuda = read_cuda(e, "cuda", toolkits)
    # cu126 is a build of CUDA 12.6 (torch's local tags); cu12 a flavour of CUDA 12.x (the others')
    digits = match.group(1)
    if cuda is not None and digits not in (f"{cuda.major}{cuda.minor}", f"{cuda.major}"):
        raise e.fail("cuda", f"does not match the tag {tag!r}")
    sass, ptx = read_arch_lists(e, cuda, toolkits, any_minor=cuda_is_floor, required=True)
    cudnn = e.get("cudnn", read_str)
    pins = e.get("pins", read_pins_or_unknown)
    known = {"exists": True, "cuda": cuda is not None, "cudnn": cudnn != UNKNOWN, "sass": sass is not None,
             "ptx": ptx is not None, "pins": pins is not None}
    if "pypi_pins" in e.raw:  # torch's: a fact only where the PyPI wheel differs
        known["pypi_pins"] = True
    return Build(kind="cuda", cuda=cuda, cudnn=None if cudnn == UNKNOWN else cudnn, sass=sass, ptx=ptx, pins=pins,
                 evidence=read_evidence(e, known, optional={"cuda"}), **common)
