"""Read matrices/*.toml, validate every fact, and build the typed Matrices record.

Parsing and validating the TOML takes tens of milliseconds, which would dominate a pre-commit run,
so the built record is cached (pickled) under a key made of the data bytes and this package's
code; any change to either rebuilds it. A cache that cannot be read or written is skipped.
The key is a CRC-32 of the files' names, sizes and modification times, like Python's bytecode
cache: reading and hashing every data file on each run would cost more than the cached load.
"""

from __future__ import annotations

import functools
import os
import pickle
import re
import sys
import zlib
from pathlib import Path
from typing import Any, Callable, Optional

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from cudafit import __version__
from cudafit.errors import DataError
from cudafit.gpus import normalize_gpu_name
from cudafit.records import (
    CC,
    GRADES,
    PLATFORMS,
    Architecture,
    CompatFloor,
    Evidence,
    GpuModel,
    JaxCuda,
    JaxRelease,
    JetPack,
    Matrices,
    TFRelease,
    Toolkit,
    TorchRelease,
    TorchVariant,
    parse_cc,
)

SCHEMA = 1
UNKNOWN = "unknown"
SHARED = ("nvidia.toml", "gpus.toml", "pytorch/index.toml")  # what every release-line file is checked against
SEGMENTS = {"datacenter", "workstation", "geforce", "geforce-laptop", "jetson"}
_PYTHON = re.compile(r"^3\.\d{1,2}$")
_CUDA_TAG = re.compile(r"^cu(\d+)$")


def data_dir() -> Path:
    """Where the data lives: $CUDAFIT_DATA_DIR, else the cudafit.matrices package (the wheel and
    editable installs map matrices/ there), else the source checkout."""
    override = os.environ.get("CUDAFIT_DATA_DIR")
    if override:
        return Path(override)
    import importlib.util

    spec = importlib.util.find_spec("cudafit.matrices")
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    return Path(__file__).resolve().parents[2] / "matrices"


def _data_files(root: Path) -> list[Path]:
    files = sorted(root.glob("*.toml")) + sorted(root.glob("*/*.toml"))
    if not files:
        raise DataError(f"{root}: no data files (*.toml) found")
    return files


def _cache_dir() -> Optional[Path]:
    if os.environ.get("CUDAFIT_NO_CACHE"):
        return None
    override = os.environ.get("CUDAFIT_CACHE_DIR")
    if override:
        return Path(override)
    import platformdirs

    return Path(platformdirs.user_cache_dir("cudafit", appauthor=False))


def load(root: Optional[Path] = None, *, use_cache: bool = True) -> Matrices:
    root = data_dir() if root is None else root
    files = _data_files(root)
    cache = _cache_dir() if use_cache else None
    cache_file = None
    if cache is not None:
        cache_file = cache / f"matrices-{_cache_key(root, files)}.pickle"
        try:
            with open(cache_file, "rb") as fh:
                cached = pickle.load(fh)
            if isinstance(cached, Matrices):
                return cached
        except Exception:
            pass  # missing, stale or unreadable cache: rebuild below
    matrices = build(root, files, _read_all(files))
    if cache_file is not None:
        _write_cache(cache_file, matrices)
    return matrices


def _read_all(files: list[Path]) -> list[bytes]:
    blobs = []
    for path in files:
        try:
            blobs.append(path.read_bytes())
        except OSError as exc:
            raise DataError(f"{path}: cannot read data file: {exc.strerror}") from None
    return blobs


def _cache_key(root: Path, files: list[Path]) -> str:
    """What the built record depends on, as Python's own bytecode cache does it: each file's name,
    size and modification time (no file is read), cudafit's version and the interpreter's. The
    code that shapes the record counts too: the loader, the record types, the GPU-name keys."""
    here = Path(__file__)
    parts = [__version__, sys.version]
    for path in [*files, *(here.with_name(n) for n in ("loader.py", "records.py", "gpus.py"))]:
        try:
            st = path.stat()
        except OSError as exc:
            raise DataError(f"{path}: cannot read data file: {exc.strerror}") from None
        parts.append(f"{path.name}:{st.st_size}:{st.st_mtime_ns}")
    text = "\0".join(parts).encode()
    return f"{zlib.crc32(text):08x}-{len(files)}"


def _write_cache(cache_file: Path, matrices: Matrices) -> None:
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        for old in cache_file.parent.glob("matrices-*.pickle"):
            old.unlink(missing_ok=True)
        tmp = cache_file.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(pickle.dumps(matrices, protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(tmp, cache_file)
    except OSError:
        pass  # a read-only home costs speed, not correctness


# --- validation helpers ---------------------------------------------------------------------


class _Entry:
    """One table of a data file, with the context needed for a precise error message."""

    def __init__(self, file: str, where: str, raw: Any, sources: Optional[set[str]] = None):
        if not isinstance(raw, dict):
            raise DataError(f"{file}: {where}: expected a table, got {raw!r}")
        self.file, self.where, self.raw, self.sources = file, where, raw, sources
        self.used: set[str] = set()

    def fail(self, key: str, problem: str) -> DataError:
        value = self.raw.get(key, None)
        shown = f" (got {value!r})" if key in self.raw else ""
        return DataError(f"{self.file}: {self.where}: field '{key}': {problem}{shown}")

    def get(self, key: str, check: Callable[[Any], Any], *, required: bool = True, default: Any = None) -> Any:
        self.used.add(key)
        if key not in self.raw:
            if required:
                raise self.fail(key, "missing")
            return default
        try:
            return check(self.raw[key])
        except (ValueError, TypeError, InvalidVersion, InvalidSpecifier) as exc:
            raise self.fail(key, str(exc)) from None

    def finish(self) -> None:
        self.used.update(("notes", "source"))
        unknown = sorted(set(self.raw) - self.used)
        if unknown:
            raise DataError(f"{self.file}: {self.where}: unknown field(s) {', '.join(unknown)}")
        if self.sources is not None:
            src = self.raw.get("source")
            if src is None:
                raise self.fail("source", "missing: every fact names its source")
            if not isinstance(src, list) or not src or not all(isinstance(s, str) for s in src):
                raise self.fail("source", "expected a non-empty list of keys of [sources]")
            for key in src:
                if key not in self.sources:
                    raise self.fail("source", f"names {key!r}, which is not in this file's [sources]")
        notes = self.raw.get("notes")
        if notes is not None and not isinstance(notes, str):
            raise self.fail("notes", "expected a string")


def _str(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise TypeError("expected a non-empty string")
    return value


def _version(value: Any) -> Version:
    return Version(_str(value))


_DRIVER = re.compile(r"^\d{3,}(\.\d+){0,2}$")


def _driver_or_unknown(value: Any) -> Optional[str]:
    if value == UNKNOWN:
        return None
    if not isinstance(value, str) or not _DRIVER.match(value):
        raise ValueError('expected a driver version like "525.60.13", a branch like "570", or "unknown"')
    return value


def _str_list(value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise TypeError("expected a list of strings")
    return value


def _cc_set(value: Any) -> frozenset[CC]:
    return frozenset(parse_cc(v) for v in _str_list(value))


def _cc_set_or_unknown(value: Any) -> Optional[frozenset[CC]]:
    return None if value == UNKNOWN else _cc_set(value)


def _pythons(value: Any) -> frozenset[str]:
    items = _str_list(value)
    for item in items:
        if not _PYTHON.match(item):
            raise ValueError(f"{item!r} is not a Python version like 3.12")
    if not items:
        raise ValueError("expected at least one Python version")
    return frozenset(items)


def _platforms(value: Any) -> frozenset[str]:
    items = _str_list(value)
    for item in items:
        if item not in PLATFORMS:
            raise ValueError(f"{item!r} is not one of {', '.join(PLATFORMS)}")
    return frozenset(items)


def _date(value: Any) -> str:
    import datetime

    text = _str(value)
    datetime.date.fromisoformat(text)
    return text


def _pins(value: Any) -> dict[str, str]:
    from packaging.utils import canonicalize_name

    if not isinstance(value, dict):
        raise TypeError("expected a table of distribution = specifier")
    pins: dict[str, str] = {}
    for name, spec in value.items():
        if not isinstance(spec, str):
            raise TypeError(f"{name}: expected a specifier string (\"\" for any version)")
        SpecifierSet(spec)
        pins[str(canonicalize_name(name))] = spec
    return pins


def _header(file: str, doc: dict) -> set[str]:
    top = _Entry(file, "top level", {k: v for k, v in doc.items() if not isinstance(v, (dict, list)) or k == "sources"})
    schema = top.get("schema", lambda v: v)
    if schema != SCHEMA:
        raise top.fail("schema", f"this cudafit reads schema {SCHEMA}")
    top.get("data_date", _date)
    sources = doc.get("sources")
    if not isinstance(sources, dict) or not sources:
        raise DataError(f"{file}: top level: a [sources] table naming every source is required")
    for key, text in sources.items():
        if not isinstance(text, str) or not text.strip():
            raise DataError(f"{file}: [sources]: '{key}' needs a description of the source")
    return set(sources)


def _entries(file: str, doc: dict, key: str, label: str) -> list[dict]:
    items = doc.get(key, [])
    if not isinstance(items, list):
        raise DataError(f"{file}: '{key}' must be an array of tables ([[{key}]])")
    return items


# --- the files ------------------------------------------------------------------------------


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


def build(root: Path, files: list[Path], blobs: list[bytes], problems: Optional[list[str]] = None) -> Matrices:
    """The Matrices record of the data files. With `problems` given, a broken release-line file is
    recorded there and skipped, so that one check reports every file's first problem."""
    docs = {}
    broken = set()
    for path, blob in zip(files, blobs, strict=True):
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
    compat, toolkits, archs, jetpacks, unknown_driver_major = _nvidia("nvidia.toml", docs["nvidia.toml"], dates)
    gpus = _gpus("gpus.toml", docs["gpus.toml"], archs, dates)
    index = _torch_index("pytorch/index.toml", docs["pytorch/index.toml"], dates)
    torch = _releases(docs, "pytorch/torch-", lambda rel, doc: _torch_file(rel, doc, toolkits, dates), problems)
    tensorflow = _releases(docs, "tensorflow/tensorflow-", lambda rel, doc: _tensorflow_file(rel, doc, toolkits, dates), problems)
    jax = _releases(docs, "jax/jax-", lambda rel, doc: _jax_file(rel, doc, toolkits, dates), problems)
    unexpected = set(docs) - set(SHARED) - {
        r for r in docs if r.startswith(("pytorch/torch-", "tensorflow/tensorflow-", "jax/jax-"))
    }
    if unexpected:
        raise DataError(f"{root}: unexpected data file(s): {', '.join(sorted(unexpected))}")
    return Matrices(
        data_date=max(dates),
        compat=compat,
        toolkits=toolkits,
        architectures=archs,
        gpus=gpus,
        torch=torch,
        torch_index=index,
        tensorflow=tensorflow,
        jax=jax,
        jetpacks=jetpacks,
        unknown_driver_major=unknown_driver_major,
    )


def check(root: Optional[Path] = None) -> tuple[Optional[Matrices], list[str]]:
    """Validate every data file: (the record, or None when a shared file is broken; every problem)."""
    root = data_dir() if root is None else root
    files = _data_files(root)
    problems: list[str] = []
    try:
        matrices = build(root, files, _read_all(files), problems)
    except DataError as exc:
        problems.append(str(exc))
        if not str(exc).startswith(f"{root}: the release-line files were not checked"):
            problems.append(f"{root}: the release-line files were not checked: they need the shared files above to load first")
        return None, problems
    return matrices, problems


def _releases(docs: dict, prefix: str, parse, problems: Optional[list[str]] = None) -> tuple:
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


def _only_keys(file: str, doc: dict, allowed: set[str]) -> None:
    unknown = sorted(set(doc) - allowed - {"schema", "data_date", "sources", "notes"})
    if unknown:
        raise DataError(f"{file}: top level: unknown field(s) {', '.join(unknown)}")


def _nvidia(file: str, doc: dict, dates: list[str]):
    _only_keys(file, doc, {"compat", "toolkit", "architecture", "jetpack", "unknown_driver"})
    sources = _header(file, doc)
    dates.append(doc["data_date"])
    toolkits: dict[tuple[int, int], Toolkit] = {}
    for i, raw in enumerate(_entries(file, doc, "toolkit", "toolkit"), 1):
        e = _Entry(file, f"[[toolkit]] #{i} ({raw.get('version', '?') if isinstance(raw, dict) else '?'})", raw, sources)
        version = e.get("version", _version)
        if len(version.release) != 2:
            raise e.fail("version", "expected MAJOR.MINOR")
        key = (version.major, version.minor)
        if key in toolkits:
            raise e.fail("version", "defined twice")
        toolkits[key] = Toolkit(
            version=version,
            linux_driver_min=e.get("linux_driver_min", _driver_or_unknown),
            windows_driver_min=e.get("windows_driver_min", _driver_or_unknown),
            targets=e.get("targets", _cc_set_or_unknown),
        )
        e.finish()
    if not toolkits:
        raise DataError(f"{file}: no [[toolkit]] entries")
    compat: dict[int, CompatFloor] = {}
    raw_compat = doc.get("compat", {})
    if not isinstance(raw_compat, dict):
        raise DataError(f"{file}: 'compat' must be a table of [compat.MAJOR] tables")
    for major_text, raw in raw_compat.items():
        e = _Entry(file, f"[compat.{major_text}]", raw, sources)
        if not major_text.isdigit():
            raise DataError(f"{file}: [compat.{major_text}]: the key must be a CUDA major version")
        major = int(major_text)
        if not any(k[0] == major for k in toolkits):
            raise DataError(f"{file}: [compat.{major_text}]: no [[toolkit]] of CUDA {major}.x")
        compat[major] = CompatFloor(
            major=major,
            linux_driver_min=e.get("linux_driver_min", _driver_or_unknown),
            windows_driver_min=e.get("windows_driver_min", _driver_or_unknown),
        )
        e.finish()
    archs: list[Architecture] = []
    owner: dict[CC, str] = {}
    for i, raw in enumerate(_entries(file, doc, "architecture", "architecture"), 1):
        e = _Entry(file, f"[[architecture]] #{i} ({raw.get('name', '?') if isinstance(raw, dict) else '?'})", raw, sources)
        arch = Architecture(
            name=e.get("name", _str),
            compute_capabilities=e.get("compute_capabilities", _cc_set),
            first_driver=e.get("first_driver", _driver_or_unknown),
            last_driver=e.get("last_driver", _driver_or_unknown, required=False),
        )
        for cc in arch.compute_capabilities:
            if cc in owner:
                raise e.fail("compute_capabilities", f"{cc[0]}.{cc[1]} is already in {owner[cc]}")
            owner[cc] = arch.name
        e.finish()
        archs.append(arch)
    unknown = _Entry(file, "[unknown_driver]", doc.get("unknown_driver", {}), sources)
    major = unknown.get("cuda_major", lambda v: v if isinstance(v, int) and not isinstance(v, bool) else _fail_type("a CUDA major like 12"))
    if major not in compat:
        raise unknown.fail("cuda_major", "has no [compat.N] floor in this file")
    unknown.finish()
    return compat, toolkits, tuple(archs), _jetpacks(file, doc, sources, owner), major


def _jetpacks(file: str, doc: dict, sources: set[str], owner: dict[CC, str]) -> tuple[JetPack, ...]:
    out = []
    for i, raw in enumerate(_entries(file, doc, "jetpack", "jetpack"), 1):
        e = _Entry(file, f"[[jetpack]] #{i} ({raw.get('version', '?') if isinstance(raw, dict) else '?'})", raw, sources)
        ccs = e.get("compute_capabilities", _cc_set)
        strays = sorted(cc for cc in ccs if cc not in owner)
        if strays:
            raise e.fail("compute_capabilities", f"{', '.join(f'{a}.{b}' for a, b in strays)} belong to no [[architecture]]")
        server = e.get("server_builds", lambda v: v if isinstance(v, bool) else _fail_type("true or false"))
        out.append(JetPack(version=str(e.get("version", _version)), jetson_linux=str(e.get("jetson_linux", _version)),
                           compute_capabilities=ccs, server_builds=server))
        e.finish()
    return tuple(sorted(out, key=lambda j: Version(j.version)))


def _gpus(file: str, doc: dict, archs: tuple[Architecture, ...], dates: list[str]) -> dict[str, GpuModel]:
    _only_keys(file, doc, {"gpu"})
    sources = _header(file, doc)
    dates.append(doc["data_date"])
    known_ccs = {cc for a in archs for cc in a.compute_capabilities}
    table: dict[str, GpuModel] = {}
    for i, raw in enumerate(_entries(file, doc, "gpu", "gpu"), 1):
        e = _Entry(file, f"[[gpu]] #{i} ({raw.get('name', '?') if isinstance(raw, dict) else '?'})", raw, sources)
        cc = e.get("compute_capability", lambda v: parse_cc(_str(v)))
        if cc not in known_ccs:
            raise e.fail("compute_capability", "belongs to no [[architecture]] in nvidia.toml")
        segment = e.get("segment", _str)
        if segment not in SEGMENTS:
            raise e.fail("segment", f"expected one of {', '.join(sorted(SEGMENTS))}")
        memory = e.get("memory_gb", _positive_number, required=False)
        model = GpuModel(name=e.get("name", _str), compute_capability=cc, memory_gb=memory, segment=segment)
        for spelling in [model.name, *e.get("aliases", _str_list, required=False, default=[])]:
            key = normalize_gpu_name(spelling)
            if key in table:
                raise e.fail("name", f"{spelling!r} is already listed as {table[key].name!r}")
            table[key] = model
        e.finish()
    return table


def _positive_number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ValueError("expected a positive number")
    return value


def _torch_index(file: str, doc: dict, dates: list[str]) -> str:
    sources = _header(file, doc)
    dates.append(doc["data_date"])
    e = _Entry(file, "top level", {k: v for k, v in doc.items() if k not in ("schema", "data_date", "sources")}, sources)
    url = e.get("url", _str)
    if "{variant}" not in url or not url.startswith("https://"):
        raise e.fail("url", "expected an https URL template containing {variant}")
    e.finish()
    return url


def _torch_file(file: str, doc: dict, toolkits: dict, dates: list[str]) -> list[TorchRelease]:
    sources = _header(file, doc)
    dates.append(doc["data_date"])
    line = doc.get("line")
    expected_line = file.removeprefix("pytorch/torch-").removesuffix(".toml")
    if line != expected_line:
        raise DataError(f"{file}: top level: field 'line': expected {expected_line!r} to match the file name (got {line!r})")
    _only_keys(file, doc, {"line", "release", "variant"})

    releases: list[dict[str, Any]] = []
    for i, raw in enumerate(_entries(file, doc, "release", "release"), 1):
        e = _Entry(file, f"[[release]] #{i} ({raw.get('version', '?') if isinstance(raw, dict) else '?'})", raw, sources)
        version = e.get("version", _version)
        if f"{version.major}.{version.minor}" != line:
            raise e.fail("version", f"does not belong to release line {line}")
        platforms = e.get("platforms", _platforms)
        pypi_variant = e.get("pypi_variant", _variant_map, required=False, default={})
        for platform in pypi_variant:
            if platform not in platforms:
                raise e.fail("pypi_variant", f"names platform {platform!r}, which is not in this release's platforms")
        releases.append(
            dict(
                entry=e,
                version=version,
                date=e.get("date", _date),
                python=e.get("python", _pythons),
                platforms=platforms,
                torchvision=e.get("torchvision", _companion, required=False),
                torchaudio=e.get("torchaudio", _companion, required=False),
                conda_cuda=tuple(e.get("conda_cuda", _str_list, required=False, default=[])),
                python_by_platform=e.get("python_by_platform", _python_map, required=False, default={}),
                **_macos_fields(e, platforms),
                pypi_variant=pypi_variant,
                not_shipped=tuple(e.get("not_shipped", _cuda_tags, required=False, default=[])),
                source=tuple(raw.get("source", ())),
            )
        )
        e.finish()
    if not releases:
        raise DataError(f"{file}: no [[release]] entries")
    by_version = {r["version"]: r for r in releases}
    if len(by_version) != len(releases):
        raise DataError(f"{file}: a torch release is listed twice")

    variants: dict[Version, list[TorchVariant]] = {v: [] for v in by_version}
    for i, raw in enumerate(_entries(file, doc, "variant", "variant"), 1):
        e = _Entry(file, f"[[variant]] #{i} ({raw.get('tag', '?') if isinstance(raw, dict) else '?'})", raw, sources)
        variant, applies = _variant(e, by_version, toolkits)
        e.finish()
        for version in applies:
            for other in variants[version]:
                if other.tag == variant.tag and other.platforms & variant.platforms:
                    raise e.fail("platforms", f"torch {version}+{variant.tag} is already defined for {sorted(other.platforms & variant.platforms)}")
            variants[version].append(variant)

    out = []
    for version, r in by_version.items():
        e = r["entry"]
        pypi_only = []
        for platform, tag in r["pypi_variant"].items():
            if any(v.tag == tag and platform in v.platforms for v in variants[version]):
                continue
            if tag != "cpu":
                raise e.fail("pypi_variant", f"{platform} = {tag!r} names no [[variant]] of torch {version} on that platform")
            # A CPU build that only PyPI serves (macOS, older aarch64): the entry itself is the fact.
            pypi_only.append(platform)
        for tag in r["not_shipped"]:
            if any(v.tag == tag for v in variants[version]):
                raise e.fail("not_shipped", f"names {tag!r}, which is a [[variant]] of torch {version}")
        if pypi_only:
            variants[version].append(TorchVariant(tag="cpu", kind="cpu", platforms=frozenset(pypi_only), notes="served by PyPI",
                                                  evidence={"exists": Evidence("measured", r["source"])}))
        out.append(
            TorchRelease(
                version=version,
                date=r["date"],
                python=r["python"],
                platforms=r["platforms"],
                torchvision=r["torchvision"],
                torchaudio=r["torchaudio"],
                conda_cuda=r["conda_cuda"],
                pypi_variant=r["pypi_variant"],
                python_by_platform=r["python_by_platform"],
                macos_min=r["macos_min"],
                macos_min_by_python=r["macos_min_by_python"],
                variants=tuple(variants[version]),
                source=r["source"],
                not_shipped=r["not_shipped"],
            )
        )
    return out


def _macos_fields(e: _Entry, platforms: frozenset[str]) -> dict[str, dict[str, str]]:
    return {"macos_min": e.get("macos_min", functools.partial(_macos_map, platforms=platforms), required=False, default={}),
            "macos_min_by_python": e.get("macos_min_by_python", _macos_by_python, required=False, default={})}


def _macos_version(value: Any) -> str:
    text = _str(value)
    if not re.fullmatch(r"\d{2}\.\d{1,2}", text):
        raise ValueError(f"{text!r} is not a macOS version like 14.0")
    return text


def _macos_map(value: Any, platforms: frozenset[str]) -> dict[str, str]:
    if not isinstance(value, dict):
        raise TypeError("expected a table of macOS platform = minimum macOS")
    for platform, version in value.items():
        if platform not in platforms or not platform.startswith("macos"):
            raise ValueError(f"{platform!r} is not a macOS platform of this release")
        _macos_version(version)
    return dict(value)


def _macos_by_python(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        raise TypeError("expected a table of Python = minimum macOS")
    _pythons(list(value))
    return {python: _macos_version(version) for python, version in value.items()}


def _cuda_tags(value: Any) -> list[str]:
    tags = _str_list(value)
    for tag in tags:
        if not _CUDA_TAG.match(tag):
            raise ValueError(f"{tag!r} is not a CUDA build tag like cu134")
    return tags


def _companion(value: Any) -> str:
    return str(_version(value))


def _python_map(value: Any) -> dict[str, frozenset[str]]:
    if not isinstance(value, dict):
        raise TypeError("expected a table of platform = [Python versions]")
    out = {}
    for platform, pythons in value.items():
        if platform not in PLATFORMS:
            raise ValueError(f"{platform!r} is not one of {', '.join(PLATFORMS)}")
        out[platform] = _pythons(pythons)
    return out


def _variant_map(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        raise TypeError("expected a table of platform = variant tag")
    for platform, tag in value.items():
        if platform not in PLATFORMS:
            raise ValueError(f"{platform!r} is not one of {', '.join(PLATFORMS)}")
        _str(tag)
    return dict(value)


def _variant(e: _Entry, by_version: dict[Version, Any], toolkits: dict) -> tuple[TorchVariant, list[Version]]:
    tag = e.get("tag", _str)
    releases = e.get("releases", lambda v: [Version(x) for x in _str_list(v)], required=False)
    if releases is None:
        applies = list(by_version)
    else:
        applies = []
        for version in releases:
            if version not in by_version:
                raise e.fail("releases", f"names torch {version}, which has no [[release]] in this file")
            applies.append(version)
    platforms = e.get("platforms", _platforms)
    python = e.get("python", _pythons, required=False)
    notes = e.raw.get("notes", "")
    match = _CUDA_TAG.match(tag)
    if match:
        cuda = e.get("cuda", _version)
        if len(cuda.release) != 2:
            raise e.fail("cuda", "expected MAJOR.MINOR")
        if match.group(1) != f"{cuda.major}{cuda.minor}":
            raise e.fail("cuda", f"does not match the tag {tag!r}")
        toolkit = toolkits.get((cuda.major, cuda.minor))
        if toolkit is None:
            raise e.fail("cuda", "names a CUDA version with no [[toolkit]] in nvidia.toml")
        cudnn = e.get("cudnn", _str)
        sass = e.get("sass", _cc_set_or_unknown)
        ptx = e.get("ptx", _cc_set_or_unknown)
        for field, ccs in (("sass", sass), ("ptx", ptx)):
            if ccs and toolkit.targets is not None:
                impossible = sorted(ccs - toolkit.targets)
                if impossible:
                    shown = ", ".join(f"{a}.{b}" for a, b in impossible)
                    raise e.fail(field, f"CUDA {cuda} cannot target {shown} (nvidia.toml [[toolkit]] {cuda} targets)")
        pins = e.get("pins", _pins_or_unknown)
        pypi_pins = e.get("pypi_pins", _pins, required=False)
        known = {"exists": True, "cuda": True, "cudnn": cudnn != UNKNOWN, "sass": sass is not None,
                 "ptx": ptx is not None, "pins": pins is not None, "pypi_pins": pypi_pins is not None}
        evidence = _evidence(e, known, optional={"cuda"})
        variant = TorchVariant(
            tag=tag, kind="cuda", platforms=platforms, cuda=cuda,
            cudnn=None if cudnn == UNKNOWN else cudnn, sass=sass, ptx=ptx, python=python, pins=pins, notes=notes,
            pypi_pins=pypi_pins, evidence=evidence,
        )
    else:
        evidence = _evidence(e, {"exists": True}, optional=set())
        if tag == "cpu":
            variant = TorchVariant(tag=tag, kind="cpu", platforms=platforms, python=python, notes=notes, evidence=evidence)
        elif tag.startswith("rocm"):
            rocm = e.get("rocm", _str)
            if tag != f"rocm{rocm}":
                raise e.fail("rocm", f"does not match the tag {tag!r}")
            variant = TorchVariant(tag=tag, kind="rocm", platforms=platforms, rocm=rocm, python=python, notes=notes,
                                   evidence=evidence)
        else:
            variant = TorchVariant(tag=tag, kind="other", platforms=platforms, python=python, notes=notes, evidence=evidence)
    return variant, applies


def _pins_or_unknown(value: Any) -> Optional[dict[str, str]]:
    return None if value == UNKNOWN else _pins(value)


def _evidence(e: _Entry, known: dict[str, bool], optional: set[str]) -> dict[str, Evidence]:
    """The grade and sources of each known fact. A fact is unknown in one way only: its value is
    "unknown" and it has no evidence; a known fact without evidence, or evidence for an unknown
    fact, is an error. `optional` facts take the grade of `exists` when they have none."""
    raw = e.get("evidence", lambda v: v if isinstance(v, dict) else _fail_type("a table of fact = { grade, source }"))
    out: dict[str, Evidence] = {}
    for fact, item in raw.items():
        where = f"evidence.{fact}"
        if fact not in known:
            raise e.fail("evidence", f"names {fact!r}, which is not a fact of this build (expected one of {', '.join(known)})")
        if not known[fact]:
            raise e.fail(where, f"{fact} is \"unknown\"; an unknown fact has no evidence (remove it, or give the value)")
        if not isinstance(item, dict) or set(item) - {"grade", "source"}:
            raise e.fail(where, "expected { grade = \"measured\"|\"declared\"|\"reported\", source = [keys] }")
        grade = item.get("grade")
        if grade not in GRADES:
            raise e.fail(where, f"grade must be one of {', '.join(GRADES)} (got {grade!r}); an unknown fact is written \"unknown\"")
        source = item.get("source")
        if not isinstance(source, list) or not source or not all(isinstance(k, str) for k in source):
            raise e.fail(where, "source: expected a non-empty list of keys of [sources]")
        for key in source:
            if e.sources is not None and key not in e.sources:
                raise e.fail(where, f"source names {key!r}, which is not in this file's [sources]")
        out[fact] = Evidence(grade, tuple(source))
    for fact, is_known in known.items():
        if is_known and fact not in out:
            if fact in optional and "exists" in out:
                out[fact] = out["exists"]
            else:
                raise e.fail("evidence", f"{fact} is known but has no grade: add evidence.{fact} = {{ grade, source }}")
    return out


def _fail_type(expected: str) -> Any:
    raise TypeError(f"expected {expected}")


# --- TensorFlow and JAX ---------------------------------------------------------------------


def _line_header(file: str, doc: dict, prefix: str, allowed: set[str], dates: list[str]) -> tuple[set[str], str]:
    _only_keys(file, doc, {"line", *allowed})
    sources = _header(file, doc)
    dates.append(doc["data_date"])
    line = doc.get("line")
    expected = file.removeprefix(prefix).removesuffix(".toml")
    if line != expected:
        raise DataError(f"{file}: top level: field 'line': expected {expected!r} to match the file name (got {line!r})")
    return sources, line


def _line_releases(file: str, doc: dict, sources: set[str], line: str):
    """(index, entry, version) of each [[release]] of a release-line file, its version checked."""
    for i, raw in enumerate(_entries(file, doc, "release", "release"), 1):
        e = _Entry(file, f"[[release]] #{i} ({raw.get('version', '?') if isinstance(raw, dict) else '?'})", raw, sources)
        version = e.get("version", _version)
        if f"{version.major}.{version.minor}" != line:
            raise e.fail("version", f"does not belong to release line {line}")
        yield i, e, version


def _cuda_of(e: _Entry, key: str, toolkits: dict, *, required: bool = True) -> Optional[Version]:
    cuda = e.get(key, lambda v: None if v == UNKNOWN else _version(v), required=required)
    if cuda is not None:
        if len(cuda.release) != 2:
            raise e.fail(key, "expected MAJOR.MINOR")
        if (cuda.major, cuda.minor) not in toolkits:
            raise e.fail(key, "names a CUDA version with no [[toolkit]] in nvidia.toml")
    return cuda


def _arch_lists(e: _Entry, cuda: Optional[Version], toolkits: dict, *, any_minor: bool = False) -> tuple:
    """sass/ptx, checked against what the toolkit can target. With any_minor (JAX: cuda is the
    oldest runtime it accepts, the build itself used a newer one) any toolkit of the major counts."""
    sass = e.get("sass", _cc_set_or_unknown, required=False)
    ptx = e.get("ptx", _cc_set_or_unknown, required=False)
    if cuda is None:
        return sass, ptx
    if any_minor:
        chosen = [t for k, t in toolkits.items() if k[0] == cuda.major and t.targets is not None]
        targets = frozenset().union(*(t.targets for t in chosen)) if chosen else None
        where = f"any CUDA {cuda.major}.x"
    else:
        toolkit = toolkits.get((cuda.major, cuda.minor))
        targets = toolkit.targets if toolkit is not None else None
        where = f"CUDA {cuda}"
    for field, ccs in (("sass", sass), ("ptx", ptx)):
        if ccs and targets is not None:
            impossible = sorted(ccs - targets)
            if impossible:
                shown = ", ".join(f"{a}.{b}" for a, b in impossible)
                raise e.fail(field, f"{where} cannot target {shown} (nvidia.toml [[toolkit]] targets)")
    return sass, ptx


def _tensorflow_file(file: str, doc: dict, toolkits: dict, dates: list[str]) -> list[TFRelease]:
    sources, line = _line_header(file, doc, "tensorflow/tensorflow-", {"release"}, dates)
    out = []
    for _i, e, version in _line_releases(file, doc, sources, line):
        platforms = e.get("platforms", _platforms)
        gpu_platforms = e.get("gpu_platforms", _platforms)
        if not gpu_platforms <= platforms:
            raise e.fail("gpu_platforms", "names a platform missing from platforms")
        cuda = _cuda_of(e, "cuda", toolkits)
        sass, ptx = _arch_lists(e, cuda, toolkits)
        cudnn = e.get("cudnn", _str)
        extras = tuple(e.get("extras", _str_list))
        and_cuda = e.get("and_cuda", _pins, required=False)
        if and_cuda is not None and "and-cuda" not in extras:
            raise e.fail("and_cuda", "given, but 'and-cuda' is not in extras")
        conda = e.get("conda", _conda_route, required=False)
        cuda_wheels = e.get("cuda_wheels", _exact_pins, required=False)
        if cuda_wheels is not None:
            strays = sorted(set(cuda_wheels) - set(and_cuda or {}))
            if strays:
                raise e.fail("cuda_wheels", f"names {', '.join(strays)}, which the [and-cuda] extra does not pin")
            if any(cuda_wheels[d] != (and_cuda or {})[d] for d in cuda_wheels):
                raise e.fail("cuda_wheels", "pins a version other than the [and-cuda] extra's")
        out.append(TFRelease(
            version=version, date=e.get("date", _date), python=e.get("python", _pythons), platforms=platforms,
            gpu_platforms=gpu_platforms, cuda=cuda, cudnn=None if cudnn == UNKNOWN else cudnn, extras=extras,
            sass=sass, ptx=ptx, and_cuda=and_cuda, conda=conda,
            cpu_package=e.get("cpu_package", _str, required=False),
            cpu_package_platforms=e.get("cpu_package_platforms", lambda v: frozenset(v) if v == [] else _platforms(v),
                                        required=False),
            python_by_platform=e.get("python_by_platform", _python_map, required=False),
            and_cuda_python=e.get("and_cuda_python", lambda v: frozenset(v) if v == [] else _pythons(v), required=False),
            cuda_wheels=cuda_wheels,
            **_macos_fields(e, platforms),
        ))
        e.finish()
    if not out:
        raise DataError(f"{file}: no [[release]] entries")
    return out


def _exact_pins(value: Any) -> dict[str, str]:
    pins = _pins(value)
    for name, spec in pins.items():
        if not spec.startswith("==") or "," in spec or "*" in spec:
            raise ValueError(f"{name}: expected an exact pin ==VERSION (got {spec!r})")
    return pins


def _conda_route(value: Any) -> dict[str, str]:
    if not isinstance(value, dict) or set(value) - {"cudatoolkit", "cudnn", "channel", "notes", "source"}:
        raise ValueError("expected a table with cudatoolkit, cudnn and channel")
    for key in ("cudatoolkit", "cudnn", "channel"):
        _str(value.get(key))
    return {k: value[k] for k in ("cudatoolkit", "cudnn", "channel")}


_FLAVOURS = {"cu11": 11, "cu12": 12, "cu13": 13}


def _jax_file(file: str, doc: dict, toolkits: dict, dates: list[str]) -> list[JaxRelease]:
    from packaging.requirements import InvalidRequirement, Requirement

    sources, line = _line_header(file, doc, "jax/jax-", {"release"}, dates)
    out = []
    for i, e, version in _line_releases(file, doc, sources, line):
        platforms = e.get("platforms", _platforms)
        extras = tuple(e.get("extras", _str_list))
        flavours = []
        raw_cuda = e.get("cuda", lambda v: v if isinstance(v, list) else _str_list(v), required=False, default=[])
        for j, item in enumerate(raw_cuda, 1):
            c = _Entry(file, f"[[release]] #{i} ({version}) [[release.cuda]] #{j}", item, sources)
            extra = c.get("extra", _str)
            if extra not in extras:
                raise c.fail("extra", f"is not among the release's extras {list(extras)}")
            flavour = c.get("flavour", _str)
            if flavour not in _FLAVOURS:
                raise c.fail("flavour", f"expected one of {', '.join(_FLAVOURS)}")
            cuda_min = _cuda_of(c, "cuda_min", toolkits, required=False)
            if cuda_min is not None and cuda_min.major != _FLAVOURS[flavour]:
                raise c.fail("cuda_min", f"is not a CUDA {_FLAVOURS[flavour]}.x version")
            sass, ptx = _arch_lists(c, cuda_min, toolkits, any_minor=True)
            packages = tuple(c.get("packages", _str_list))
            for text in packages:
                try:
                    Requirement(text)
                except InvalidRequirement:
                    raise c.fail("packages", f"{text!r} is not a PEP 508 requirement") from None
            cuda_platforms = c.get("platforms", _platforms)
            if not cuda_platforms <= platforms:
                raise c.fail("platforms", "names a platform missing from the release's platforms")
            cudnn_min = c.get("cudnn_min", _str, required=False)
            flavours.append(JaxCuda(
                extra=extra, flavour=flavour, cuda_min=cuda_min,
                cudnn_min=None if cudnn_min in (None, UNKNOWN) else cudnn_min, packages=packages,
                find_links=c.get("find_links", lambda v: v if isinstance(v, str) else _str(v), required=False, default=""),
                platforms=cuda_platforms, sass=sass, ptx=ptx, pins=c.get("pins", _pins, required=False),
            ))
            c.finish()
        out.append(JaxRelease(
            version=version, date=e.get("date", _date), jaxlib=e.get("jaxlib", _str, required=False),
            python=e.get("python", _pythons), platforms=platforms, extras=extras, cuda=tuple(flavours),
            python_by_platform=e.get("python_by_platform", _python_map, required=False),
            **_macos_fields(e, platforms),
        ))
        e.finish()
    if not out:
        raise DataError(f"{file}: no [[release]] entries")
    return out
