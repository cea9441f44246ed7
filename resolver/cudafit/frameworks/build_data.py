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
    fail_type,
    line_header,
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
from cudafit.records import GRADES, Build, BuildKind, Evidence, LibraryRelease, parse_cc


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


def library_release_fields(e: Entry) -> dict[str, Any]:
    """A library's own release fields: `gpu_min = { cc = "7.5", grade, source }`, the oldest GPU
    its project supports, graded like a build's facts."""
    raw = e.get("gpu_min", lambda v: v if isinstance(v, dict) else fail_type('a table { cc = "7.5", grade, source }'), required=False)
    if raw is None:
        return {}
    if set(raw) != {"cc", "grade", "source"}:
        raise e.fail("gpu_min", 'expected { cc = "7.5", grade = "measured"|"declared"|"reported", source = [keys] }')
    try:
        cc = parse_cc(str(raw["cc"]))
    except ValueError as exc:
        raise e.fail("gpu_min", str(exc)) from None
    if raw["grade"] not in GRADES:
        raise e.fail("gpu_min", f"grade must be one of {', '.join(GRADES)} (got {raw['grade']!r})")
    source = raw["source"]
    if not isinstance(source, list) or not source or any(e.sources is not None and k not in e.sources for k in source):
        raise e.fail("gpu_min", "source: expected a non-empty list of keys of [sources]")
    return {"gpu_min": cc, "gpu_min_evidence": Evidence(raw["grade"], tuple(source))}


def read_releases(
    file: str, doc: dict, sources: set[str], line: str, more: Callable[[Entry, Version], dict[str, Any]]
) -> Iterator[tuple[Version, Entry, dict[str, Any]]]:
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


def read_line(
    file: str, doc: dict, toolkits: dict, dates: list[str], prefix: str, release: Callable[[Entry, Version], dict[str, Any]], **build_options: Any
) -> list[tuple[Version, Entry, dict[str, Any], list[Build]]]:
    """A framework's release-line file: (version, entry, fields, builds) per release, in file order.
    `release` reads the framework's own release fields; `build_options` go to read_builds."""
    sources, line = line_header(file, doc, prefix, {"release", "build"}, dates)
    releases = {version: (e, fields) for version, e, fields in read_releases(file, doc, sources, line, release)}
    builds = read_builds(file, doc, sources, {v: f for v, (_e, f) in releases.items()}, toolkits, **build_options)
    return [(version, e, fields, builds[version]) for version, (e, fields) in releases.items()]


def read_library(
    file: str,
    doc: dict,
    toolkits: dict,
    dates: list[str],
    prefix: str,
    release_more: Optional[Callable[[Entry, Version], dict[str, Any]]] = None,
    **build_options: Any,
) -> list[LibraryRelease]:
    """The release-line file of a library built against torch (xformers, torchao, vllm, flash-attn);
    `release_more` reads the library's own release fields."""

    def release(e: Entry, version: Version) -> dict[str, Any]:
        return {**library_release_fields(e), **(release_more(e, version) if release_more else {})}

    return [
        LibraryRelease(version=version, builds=tuple(builds), **fields)
        for version, _e, fields, builds in read_line(file, doc, toolkits, dates, prefix, release, **build_options)
    ]


# The shared fields of a build that only some frameworks have; each framework names those it reads,
# so a field it would ignore is an error, not a silently dropped fact.
# Facts of a non-CUDA build that a framework may record (torch's ROCm and XPU builds): each graded
# in the build's evidence where it is given, read by the framework's own reader
ACCELERATOR_FACTS = ("gfx", "gfx_no_blas", "rocm_libraries", "xpu_aot", "index_packages")
OPTIONAL_FIELDS = frozenset(("python", "index_url", "package", "extras", "pypi_pins", "route", "pins", "local", *ACCELERATOR_FACTS))
ROUTES = ("asset", "source")  # besides a wheel on its index (records.Build.route)


def read_builds(
    file: str,
    doc: dict,
    sources: set[str],
    releases: dict[Version, dict[str, Any]],
    toolkits: dict,
    *,
    fields: frozenset[str] = frozenset(),
    more: Optional[Callable[[Entry, Build, list[dict[str, Any]]], dict[str, Any]]] = None,
    cuda_is_floor: bool = False,
    one_per_platform: bool = False,
) -> dict[Version, list[Build]]:
    """Each release's builds. `releases` maps a version to its fields (platforms and Pythons at
    least); `fields` are the OPTIONAL_FIELDS the framework reads; `more` reads its own fields of a
    build, given the fields of the releases it belongs to; with cuda_is_floor (JAX) `cuda` is the
    oldest runtime the build accepts, so its SASS/PTX are checked against every toolkit of the
    major; with one_per_platform (a TensorFlow wheel is one build) no two builds of a release share
    a platform."""
    out: dict[Version, list[Build]] = {v: [] for v in releases}
    for i, raw in enumerate(entries(file, doc, "build", "build"), 1):
        tag = raw.get("tag", "?") if isinstance(raw, dict) else "?"
        e = Entry(file, f"[[build]] #{i} ({tag})", raw, sources)
        build = read_build(e, toolkits, fields=fields, cuda_is_floor=cuda_is_floor)
        applies = _releases(e, releases)
        if more is not None:
            build = build._replace(**more(e, build, [releases[v] for v in applies]))
        for version in applies:
            release = releases[version]
            if not build.platforms <= release["platforms"]:
                raise e.fail("platforms", f"names {', '.join(sorted(build.platforms - release['platforms']))}, not among the platforms of release {version}")
            if build.python is not None and not build.python <= release["python"]:
                raise e.fail("python", f"names {', '.join(sorted(build.python - release['python']))}, not among the Pythons of release {version}")
            for other in out[version]:
                same = one_per_platform or (other.tag, other.extras, other.route, other.asset, other.index_url) == (
                    build.tag,
                    build.extras,
                    build.route,
                    build.asset,
                    build.index_url,
                )
                if same and other.platforms & build.platforms:
                    raise e.fail("platforms", f"release {version} already has build {other.tag} on {', '.join(sorted(other.platforms & build.platforms))}")
            out[version].append(build)
        e.finish()
    return out


def _releases(e: Entry, releases: dict[Version, Any]) -> list[Version]:
    named = e.get("releases", lambda v: [Version(x) for x in read_str_list(v)], required=False)
    if named is None:
        return list(releases)
    if not named:
        raise e.fail("releases", "is empty: name the releases this build belongs to, or leave the field out for all")
    for version in named:
        if version not in releases:
            raise e.fail("releases", f"names {version}, which has no [[release]] in this file")
    if len(set(named)) != len(named):
        raise e.fail("releases", "names a release twice")
    return named


def _extras(value: Any) -> tuple[str, ...]:
    extras = tuple(value if value == [] else read_str_list(value))
    if len(set(extras)) != len(extras):
        raise ValueError("names an extra twice")
    return extras


def _route(value: Any) -> str:
    text = read_str(value)
    if text not in ROUTES:
        raise ValueError(f"expected one of {', '.join(ROUTES)} (leave it out for a wheel on the index)")
    return text


def read_build(e: Entry, toolkits: dict, *, fields: frozenset[str] = frozenset(), cuda_is_floor: bool = False) -> Build:
    def optional(key: str, check: Callable[[Any], Any], default: Any = None) -> Any:
        # a field this framework does not read stays unread, so Entry.finish names it as unknown
        return e.get(key, check, required=False, default=default) if key in fields else default

    tag = e.get("tag", read_str)
    common = dict(
        tag=tag,
        platforms=e.get("platforms", read_platforms),
        python=optional("python", read_pythons),
        index_url=optional("index_url", read_str, ""),
        package=optional("package", read_str, ""),
        extras=optional("extras", _extras, ()),
        route=optional("route", _route, ""),
        local=optional("local", read_str, ""),
        notes=e.raw.get("notes", ""),
    )
    match = CUDA_TAG_RE.match(tag)
    if not match:
        kind: BuildKind = "cpu" if tag == "cpu" else "rocm" if tag.startswith("rocm") else "other"
        # A library's pure-Python wheel still goes with one torch (torchao's): it may name it.
        pins = optional("pins", read_pins_or_unknown)
        known = {"exists": True, **({"pins": True} if pins is not None else {})}
        known.update({fact: True for fact in ACCELERATOR_FACTS if fact in fields and fact in e.raw})
        return Build(kind=kind, pins=pins, evidence=read_evidence(e, known, optional=set()), **common)
    # cu126 is a build of CUDA 12.6 (torch's local tags); cu12 a flavour of CUDA 12.x (the others')
    digits = match.group(1)
    cuda = read_cuda(e, "cuda", toolkits)
    if len(digits) == 2:
        if not any(major == int(digits) for major, _minor in toolkits):
            raise e.fail("tag", "names a CUDA major with no [[toolkit]] in nvidia.toml")
        if cuda is not None and cuda.major != int(digits):
            raise e.fail("cuda", f"is not a CUDA {digits}.x version, as the tag {tag!r} says")
    elif cuda is None:
        raise e.fail("cuda", f"a build tagged with its CUDA version ({tag}) knows it: give it")
    elif digits != f"{cuda.major}{cuda.minor}":
        raise e.fail("cuda", f"does not match the tag {tag!r}")
    sass, ptx = read_arch_lists(e, cuda, toolkits, any_minor=cuda_is_floor, required=True)
    cudnn = e.get("cudnn", read_str)
    pins = e.get("pins", read_pins_or_unknown)
    known = {"exists": True, "cuda": cuda is not None, "cudnn": cudnn != UNKNOWN, "sass": sass is not None, "ptx": ptx is not None, "pins": pins is not None}
    if "pypi_pins" in fields and "pypi_pins" in e.raw:  # torch's: a fact only where the PyPI wheel differs
        known["pypi_pins"] = True
    return Build(
        kind="cuda",
        cuda=cuda,
        cudnn=None if cudnn == UNKNOWN else cudnn,
        sass=sass,
        ptx=ptx,
        pins=pins,
        evidence=read_evidence(e, known, optional={"cuda"}),
        **common,
    )
