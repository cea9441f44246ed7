"""Parse and validate matrices/*.toml into the Matrices record: the slow path, taken on a data
cache miss and by `cudafit data check`. Each framework's files are read by its provider's reader
(cudafit.frameworks.readers); this module reads the shared files and puts the record together."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple, Optional

from packaging.version import Version

from cudafit import cuda_images, gpu_tables_data, kernel_data, numpy_abi, variant_labels, wheels_data
from cudafit.errors import DataError
from cudafit.fields import (
    Entry,
    entries,
    fail_type,
    only_keys,
    read_cc_set,
    read_cc_set_or_unknown,
    read_driver_or_unknown,
    read_header,
    read_pins,
    read_positive_number,
    read_str,
    read_str_list,
    read_version,
)
from cudafit.frameworks import readers
from cudafit.gpu_tables_data import AMD_FILE, AMD_TF_FILE, AMD_TORCH_FILE, INTEL_FILE, JETSON_FILE
from cudafit.gpus import normalize_gpu_name
from cudafit.records import CC, GRADES, Architecture, CompatFloor, GpuModel, JetPack, Matrices, Toolkit, parse_cc

SHARED = ("nvidia.toml", "gpus.toml", "pytorch/index.toml")  # what every release-line file is checked against
SEGMENTS = {"datacenter", "workstation", "geforce", "geforce-laptop", "jetson"}


def read_all(files: list[Path], problems: Optional[list[str]] = None) -> list[Optional[bytes]]:
    """Each file's bytes. With `problems` given, a file that cannot be read is recorded there and
    stands as None, so that a check names every such file."""
    blobs: list[Optional[bytes]] = []
    for path in files:
        try:
            blobs.append(path.read_bytes())
        except OSError as exc:
            message = f"{path}: cannot read data file: {exc.strerror}"
            if problems is None:
                raise DataError(message) from None
            problems.append(message)
            blobs.append(None)
    return blobs


def _parse(path: Path, root: Path, blob: bytes) -> tuple[str, dict]:
    # Parsing is the slow path (a cache miss), so the TOML reader is imported only here.
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib
    rel = str(path.relative_to(root))
    try:
        return rel, tomllib.loads(blob.decode("utf-8"))
    except UnicodeDecodeError:
        raise DataError(f"{path}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise DataError(f"{path}: not valid TOML: {exc}") from None


def build(root: Path, files: list[Path], blobs: Sequence[Optional[bytes]], problems: Optional[list[str]] = None) -> Matrices:
    """The Matrices record of the data files. With `problems` given, a broken release-line file is
    recorded there and skipped, so that one check reports every file's first problem."""
    docs = {}
    broken = set()
    for path, blob in zip(files, blobs, strict=True):
        if blob is None:  # unreadable: read_all recorded it
            broken.add(str(path.relative_to(root)))
            continue
        try:
            rel, doc = _parse(path, root, blob)
        except DataError as exc:
            if problems is None:
                raise
            problems.append(str(exc))
            broken.add(str(path.relative_to(root)))
            continue
        docs[rel] = doc
    unreadable = [name for name in SHARED if name in broken]
    if unreadable:
        raise DataError(f"{root}: the release-line files were not checked: they need {', '.join(unreadable)}, which did not load")
    for required in SHARED:
        if required not in docs:
            raise DataError(f"{root}: missing data file {required}")
    dates: list[str] = []
    compat, toolkits, archs, jetpacks, unknown_driver_major, toolkit_wheels = _nvidia("nvidia.toml", docs["nvidia.toml"], dates)
    gpus = _gpus("gpus.toml", docs["gpus.toml"], archs, dates)
    index = _torch_index("pytorch/index.toml", docs["pytorch/index.toml"], dates)
    # Each framework reads its own files (its reader's DATA_PREFIX): a new framework is its
    # modules and its folder, not a change here.
    every = readers()
    frameworks = {
        family: _releases(
            docs, r.DATA_PREFIX, lambda rel, doc, r=r: _with_toolkit_wheels(rel, r.read_file(rel, doc, toolkits, dates), toolkit_wheels), problems
        )
        for family, r in every.items()
    }
    prefixes = tuple(r.DATA_PREFIX for r in every.values())
    wheel_files = wheels_data.read(wheels_data.FILE, docs[wheels_data.FILE], dates) if wheels_data.FILE in docs else {}
    amd_gpus, gfx_targets = gpu_tables_data.read_amd(docs[AMD_FILE], dates) if AMD_FILE in docs else ({}, {})
    intel_gpus = gpu_tables_data.read_intel(docs[INTEL_FILE], dates) if INTEL_FILE in docs else {}
    jetson = gpu_tables_data.read_jetson(docs[JETSON_FILE], dates, {j.version for j in jetpacks}) if JETSON_FILE in docs else ()
    torch_platforms = frozenset(p for r in frameworks.get("torch", ()) for p in r.platforms)
    amd_torch = gpu_tables_data.read_amd_torch(docs[AMD_TORCH_FILE], dates, torch_platforms) if AMD_TORCH_FILE in docs else ()
    amd_tf = gpu_tables_data.read_amd_tensorflow(docs[AMD_TF_FILE], dates) if AMD_TF_FILE in docs else ()
    labels = variant_labels.read(docs[variant_labels.FILE], dates) if variant_labels.FILE in docs else ()
    images = cuda_images.read(docs[cuda_images.FILE], dates) if cuda_images.FILE in docs else ()
    ubuntus = cuda_images.read_ubuntu(docs[cuda_images.FILE]) if cuda_images.FILE in docs else ()
    repositories = cuda_images.read_repositories(docs[cuda_images.FILE]) if cuda_images.FILE in docs else ()
    from cudafit.containers import data as ngc

    containers = ngc.read(docs[ngc.FILE], dates) if ngc.FILE in docs else ()
    kernels = kernel_data.read(docs[kernel_data.FILE], dates) if kernel_data.FILE in docs else ()
    numpy1 = numpy_abi.read(docs[numpy_abi.FILE], dates) if numpy_abi.FILE in docs else ()
    known = {
        wheels_data.FILE,
        AMD_FILE,
        AMD_TORCH_FILE,
        AMD_TF_FILE,
        INTEL_FILE,
        JETSON_FILE,
        variant_labels.FILE,
        cuda_images.FILE,
        ngc.FILE,
        kernel_data.FILE,
        numpy_abi.FILE,
    }
    unexpected = set(docs) - set(SHARED) - known - {r for r in docs if r.startswith(prefixes)}
    if unexpected:
        raise DataError(f"{root}: unexpected data file(s): {', '.join(sorted(unexpected))}")
    return Matrices(
        data_date=max(dates),
        compat=compat,
        toolkits=toolkits,
        architectures=archs,
        gpus=gpus,
        torch_index=index,
        frameworks=frameworks,
        jetpacks=jetpacks,
        unknown_driver_major=unknown_driver_major,
        pythons=_pythons(frameworks),
        wheel_files=wheel_files,
        amd_gpus=amd_gpus,
        gfx_targets=gfx_targets,
        intel_gpus=intel_gpus,
        jetson_wheels=jetson,
        amd_torch=amd_torch,
        amd_tensorflow=amd_tf,
        torch_variant_labels=labels,
        cuda_images=images,
        ubuntu_pythons=ubuntus,
        image_repositories=repositories,
        ngc_containers=containers,
        kernels=kernels,
        numpy1=numpy1,
    )


def _pythons(frameworks: dict[str, tuple]) -> tuple[tuple[int, int], ...]:
    # Kept on the record so that checking --python does not unpickle every framework's releases.
    texts = {text for releases in frameworks.values() for release in releases for text in release.python}
    return tuple(sorted((int(major), int(minor)) for major, _, minor in (t.partition(".") for t in texts)))


def _releases(docs: dict, prefix: str, parse: Callable[..., tuple], problems: Optional[list[str]] = None) -> tuple:
    """Every release from the files under `prefix`, newest first; a version in two files is an error."""
    seen: dict = {}
    out = []
    for rel in sorted(docs):
        if rel.startswith(prefix):
            try:
                parsed = parse(rel, docs[rel])
            except DataError as exc:
                if problems is None:
                    raise
                problems.append(str(exc))
                continue
            for release in parsed:
                if release.version in seen:
                    raise DataError(f"{rel}: {release.version} is also defined in {seen[release.version]}")
                seen[release.version] = rel
                out.append(release)
    out.sort(key=lambda r: r.version, reverse=True)
    return tuple(out)


def _nvidia(
    file: str, doc: dict, dates: list[str]
) -> tuple[dict[int, CompatFloor], dict[tuple[int, int], Toolkit], tuple[Architecture, ...], tuple[JetPack, ...], int, ToolkitWheels]:
    only_keys(file, doc, {"compat", "toolkit", "architecture", "jetpack", "unknown_driver", "toolkit_wheel", "toolkit_wheel_extras"})
    sources = read_header(file, doc)
    dates.append(doc["data_date"])
    toolkits: dict[tuple[int, int], Toolkit] = {}
    for i, raw in enumerate(entries(file, doc, "toolkit", "toolkit"), 1):
        e = Entry(file, f"[[toolkit]] #{i} ({raw.get('version', '?') if isinstance(raw, dict) else '?'})", raw, sources)
        version = e.get("version", read_version)
        if len(version.release) != 2:
            raise e.fail("version", "expected MAJOR.MINOR")
        key = (version.major, version.minor)
        if key in toolkits:
            raise e.fail("version", "defined twice")
        toolkits[key] = Toolkit(
            version=version,
            linux_driver_min=e.get("linux_driver_min", read_driver_or_unknown),
            windows_driver_min=e.get("windows_driver_min", read_driver_or_unknown),
            targets=e.get("targets", read_cc_set_or_unknown),
        )
        e.finish()
    if not toolkits:
        raise DataError(f"{file}: no [[toolkit]] entries")
    compat: dict[int, CompatFloor] = {}
    raw_compat = doc.get("compat", {})
    if not isinstance(raw_compat, dict):
        raise DataError(f"{file}: 'compat' must be a table of [compat.MAJOR] tables")
    for major_text, raw in raw_compat.items():
        e = Entry(file, f"[compat.{major_text}]", raw, sources)
        if not major_text.isdigit():
            raise DataError(f"{file}: [compat.{major_text}]: the key must be a CUDA major version")
        major = int(major_text)
        if not any(k[0] == major for k in toolkits):
            raise DataError(f"{file}: [compat.{major_text}]: no [[toolkit]] of CUDA {major}.x")
        compat[major] = CompatFloor(
            major=major,
            linux_driver_min=e.get("linux_driver_min", read_driver_or_unknown),
            windows_driver_min=e.get("windows_driver_min", read_driver_or_unknown),
        )
        e.finish()
    archs: list[Architecture] = []
    owner: dict[CC, str] = {}
    for i, raw in enumerate(entries(file, doc, "architecture", "architecture"), 1):
        e = Entry(file, f"[[architecture]] #{i} ({raw.get('name', '?') if isinstance(raw, dict) else '?'})", raw, sources)
        arch = Architecture(
            name=e.get("name", read_str),
            compute_capabilities=e.get("compute_capabilities", read_cc_set),
            first_driver=e.get("first_driver", read_driver_or_unknown),
            last_driver=e.get("last_driver", read_driver_or_unknown, required=False),
        )
        for cc in arch.compute_capabilities:
            if cc in owner:
                raise e.fail("compute_capabilities", f"{cc[0]}.{cc[1]} is already in {owner[cc]}")
            owner[cc] = arch.name
        e.finish()
        archs.append(arch)
    unknown = Entry(file, "[unknown_driver]", doc.get("unknown_driver", {}), sources)
    major = unknown.get("cuda_major", lambda v: v if isinstance(v, int) and not isinstance(v, bool) else fail_type("a CUDA major like 12"))
    if major not in compat:
        raise unknown.fail("cuda_major", "has no [compat.N] floor in this file")
    unknown.finish()
    return compat, toolkits, tuple(archs), _jetpacks(file, doc, sources, owner), major, _toolkit_wheels(file, doc, sources)


class ToolkitWheels(NamedTuple):
    pins: dict[str, dict[str, str]]  # cuda-toolkit version -> the NVIDIA library wheel each extra pins
    extras: dict[str, str]  # extra -> the name of its wheel, less the -cu12 suffix of CUDA 12's


def _toolkit_wheels(file: str, doc: dict, sources: set[str]) -> ToolkitWheels:
    """cuda-toolkit metapackage version -> the NVIDIA library wheels its extras pin, and which wheel
    each extra names (a build may ask for some extras only)."""
    raw_extras = doc.get("toolkit_wheel_extras", {})
    e = Entry(file, "[toolkit_wheel_extras]", raw_extras if isinstance(raw_extras, dict) else {}, sources)
    if not isinstance(raw_extras, dict):
        raise DataError(f"{file}: [toolkit_wheel_extras] must be a table of extra = wheel name")
    e.get("grade", lambda v: v if v in GRADES else fail_type(f"one of {', '.join(GRADES)}"))
    extras = {name: e.get(name, read_str) for name in raw_extras if name not in ("source", "grade")}
    e.finish()
    wheels: dict[str, dict[str, str]] = {}
    for i, raw in enumerate(entries(file, doc, "toolkit_wheel", "toolkit_wheel"), 1):
        e = Entry(file, f"[[toolkit_wheel]] #{i} ({raw.get('version', '?') if isinstance(raw, dict) else '?'})", raw, sources)
        version = str(e.get("version", read_version))
        e.get("grade", lambda v: v if v in GRADES else fail_type(f"one of {', '.join(GRADES)}"))
        if version in wheels:
            raise e.fail("version", "defined twice")
        wheels[version] = e.get("pins", read_pins)
        e.finish()
    return ToolkitWheels(wheels, extras)


def _with_toolkit_wheels(file: str, releases: Any, wheels: ToolkitWheels) -> tuple:
    """Each build of `file` that requires cuda-toolkit[EXTRA,...]==X also pins the library wheels
    X brings for exactly those extras, so that the solver compares them with other frameworks'
    nvidia-* pins (an explicit pin on the same wheel stays, and both must hold: torch 2.12's cuBLAS
    range). The pins as written stay in `raw_pins`. A plain cuda-toolkit pin is refused: installed,
    it brings no library wheel, and no torch wheel writes one (each names the extras it wants:
    2.15's leave out curand, 2.12's cublas), so in the data it can only be a list left out."""
    from packaging.requirements import InvalidRequirement, Requirement

    def expand(release: Any, build: Any) -> Any:
        key = next((k for k in build.pins or {} if k == "cuda-toolkit" or k.startswith("cuda-toolkit[")), None)
        if key is None:
            return build
        spec = build.pins[key]
        where = f"{file}: [[build]] {build.tag} of {release.version}: field 'pins'"
        try:
            asked = Requirement(f"{key}{spec}")
        except InvalidRequirement:
            raise DataError(f"{where}: {key} {spec!r} is not a requirement") from None
        if not asked.extras:
            raise DataError(
                f"{where}: cuda-toolkit {spec} names no extra; write the extras the wheel's Requires-Dist asks for, "
                f'"cuda-toolkit[cublas,cudart,...]" = "{spec}" (a plain pin installs no library wheel)'
            )
        version = spec[2:] if spec.startswith("==") and "," not in spec else None
        if version is None or version not in wheels.pins:
            raise DataError(f"{where}: cuda-toolkit {spec} has no [[toolkit_wheel]] in nvidia.toml")
        unknown = sorted(asked.extras - set(wheels.extras))
        if unknown:
            raise DataError(f"{where}: cuda-toolkit extra(s) {', '.join(unknown)} not in [toolkit_wheel_extras] of nvidia.toml")
        names = {wheels.extras[x] for x in asked.extras}
        brought = {dist: s for dist, s in wheels.pins[version].items() if re.sub(r"-cu\d+$", "", dist) in names}
        pins = {k: v for k, v in build.pins.items() if k != key}
        pins["cuda-toolkit"] = spec
        for dist, wheel_spec in brought.items():
            pins[dist] = f"{pins[dist]},{wheel_spec}" if dist in pins else wheel_spec
        return build._replace(pins=pins, raw_pins=dict(build.pins))

    return tuple(r._replace(builds=tuple(expand(r, b) for b in r.builds)) for r in releases)


def _jetpacks(file: str, doc: dict, sources: set[str], owner: dict[CC, str]) -> tuple[JetPack, ...]:
    out = []
    for i, raw in enumerate(entries(file, doc, "jetpack", "jetpack"), 1):
        e = Entry(file, f"[[jetpack]] #{i} ({raw.get('version', '?') if isinstance(raw, dict) else '?'})", raw, sources)
        ccs = e.get("compute_capabilities", read_cc_set)
        strays = sorted(cc for cc in ccs if cc not in owner)
        if strays:
            raise e.fail("compute_capabilities", f"{', '.join(f'{a}.{b}' for a, b in strays)} belong to no [[architecture]]")
        server = e.get("server_builds", lambda v: v if isinstance(v, bool) else fail_type("true or false"))
        out.append(
            JetPack(
                version=str(e.get("version", read_version)),
                jetson_linux=str(e.get("jetson_linux", read_version)),
                compute_capabilities=ccs,
                server_builds=server,
            )
        )
        e.finish()
    return tuple(sorted(out, key=lambda j: Version(j.version)))


def _gpus(file: str, doc: dict, archs: tuple[Architecture, ...], dates: list[str]) -> dict[str, GpuModel]:
    only_keys(file, doc, {"gpu"})
    sources = read_header(file, doc)
    dates.append(doc["data_date"])
    known_ccs = {cc for a in archs for cc in a.compute_capabilities}
    table: dict[str, GpuModel] = {}
    for i, raw in enumerate(entries(file, doc, "gpu", "gpu"), 1):
        e = Entry(file, f"[[gpu]] #{i} ({raw.get('name', '?') if isinstance(raw, dict) else '?'})", raw, sources)
        cc = e.get("compute_capability", lambda v: parse_cc(read_str(v)))
        if cc not in known_ccs:
            raise e.fail("compute_capability", "belongs to no [[architecture]] in nvidia.toml")
        segment = e.get("segment", read_str)
        if segment not in SEGMENTS:
            raise e.fail("segment", f"expected one of {', '.join(sorted(SEGMENTS))}")
        memory = e.get("memory_gb", read_positive_number, required=False)
        arch = e.get("arch", read_str, required=False)
        if arch is not None and arch not in ("aarch64", "x86_64"):
            raise e.fail("arch", "expected aarch64 or x86_64: the one machine the GPU sits in")
        model = GpuModel(name=e.get("name", read_str), compute_capability=cc, memory_gb=memory, segment=segment, arch=arch)
        for spelling in [model.name, *e.get("aliases", read_str_list, required=False, default=[])]:
            key = normalize_gpu_name(spelling)
            if key in table:
                raise e.fail("name", f"{spelling!r} is already listed as {table[key].name!r}")
            table[key] = model
        e.finish()
    return table


def _torch_index(file: str, doc: dict, dates: list[str]) -> str:
    sources = read_header(file, doc)
    dates.append(doc["data_date"])
    e = Entry(file, "top level", {k: v for k, v in doc.items() if k not in ("schema", "data_date", "sources")}, sources)
    url = e.get("url", read_str)
    if "{variant}" not in url or not url.startswith("https://"):
        raise e.fail("url", "expected an https URL template containing {variant}")
    e.finish()
    return url
