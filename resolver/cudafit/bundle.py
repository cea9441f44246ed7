"""Data bundles: a matrices tree packed as a wheel of the distribution `cudafit-matrices`.

A bundle is a wheel so that it can be published on PyPI beside cudafit (versioned by its data
date) and fetched over TLS against PyPI's own sha256; a file carried into an air-gapped site is the
same wheel. Inside, `cudafit_matrices/manifest.json` names the data schema, the data date, the
cudafit versions that read it and the sha256 of every data file; the files sit under
`cudafit_matrices/matrices/`.

Building is reproducible: members in a fixed order, fixed timestamps and modes, no absolute paths,
so the same tree gives the same bytes. Opening checks everything before a byte is written: member
names, sizes, the manifest, each file's hash, the schema and the readers.
"""

from __future__ import annotations

import base64
import hashlib
import json
import zipfile
from pathlib import Path, PurePosixPath
from typing import NamedTuple, Optional

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from cudafit.errors import DataError, InputError
from cudafit.version import __version__

DISTRIBUTION = "cudafit-matrices"
PACKAGE = "cudafit_matrices"
MANIFEST = f"{PACKAGE}/manifest.json"
DATA_PREFIX = f"{PACKAGE}/matrices/"
SCHEMA = 2  # the data schema this cudafit reads (matrices/README.md)
READERS = ">=0.1.0"  # the cudafit releases that read schema 2: every one so far
# 1980-01-01, the earliest time a zip member can carry: a build's bytes never depend on the clock.
_EPOCH = (1980, 1, 1, 0, 0, 0)
# Far above today's data (about 2 MB) and far below what could fill a disk: a zip bomb stops here.
MAX_FILE_BYTES = 16 * 1024 * 1024
MAX_TOTAL_BYTES = 128 * 1024 * 1024


class NotForThisCudafit(DataError):
    """A sound bundle of a data schema, or for cudafit versions, that this cudafit does not read."""


class Manifest(NamedTuple):
    schema: int
    data_date: str
    version: str  # the bundle's own version, the data date as PEP 440 (2026.12.1)
    readers: str  # a specifier on cudafit's version
    files: dict[str, str]  # path under matrices/ -> sha256 hex


def data_files(root: Path) -> list[Path]:
    """The data files a bundle carries: those the loader reads."""
    from cudafit import loader

    try:
        return [root / rel for rel in loader.data_files(root)]
    except DataError as exc:
        raise InputError(str(exc)) from None


def version_of(data_date: str) -> str:
    """'2026-12-01' -> '2026.12.1', the bundle's version on PyPI."""
    year, month, day = (int(part) for part in data_date.split("-"))
    return str(Version(f"{year}.{month}.{day}"))


def build(root: Path, data_date: str, version: Optional[str] = None) -> tuple[str, bytes]:
    """(the wheel's file name, its bytes) for the data files under `root`."""
    version = version or version_of(data_date)
    try:
        version = str(Version(version))
    except InvalidVersion:
        raise InputError(f"--version {version!r}: not a PEP 440 version") from None
    files = {}
    for path in data_files(root):
        rel = path.relative_to(root).as_posix()
        files[rel] = path.read_bytes()
    manifest = {
        "schema": SCHEMA,
        "data_date": data_date,
        "version": version,
        "readers": READERS,
        "files": {rel: hashlib.sha256(blob).hexdigest() for rel, blob in files.items()},
    }
    members: list[tuple[str, bytes]] = [
        (f"{PACKAGE}/__init__.py", b'"""cudafit\'s data, as `cudafit data update` installs it."""\n'),
        (MANIFEST, (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()),
    ]
    members += [(DATA_PREFIX + rel, blob) for rel, blob in files.items()]
    dist_info = f"{PACKAGE}-{version}.dist-info"
    metadata = (
        f"Metadata-Version: 2.1\nName: {DISTRIBUTION}\nVersion: {version}\nSummary: cudafit's compatibility data of {data_date} (read by cudafit {READERS})\n"
    )
    wheel = f"Wheel-Version: 1.0\nGenerator: cudafit {__version__}\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    members += [(f"{dist_info}/METADATA", metadata.encode()), (f"{dist_info}/WHEEL", wheel.encode())]
    record = "".join(f"{name},sha256={_b64_sha256(blob)},{len(blob)}\n" for name, blob in members) + f"{dist_info}/RECORD,,\n"
    members.append((f"{dist_info}/RECORD", record.encode()))
    return f"{PACKAGE}-{version}-py3-none-any.whl", _zip(members)


def _b64_sha256(blob: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(blob).digest()).rstrip(b"=").decode()


def _zip(members: list[tuple[str, bytes]]) -> bytes:
    import io

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, blob in members:
            info = zipfile.ZipInfo(name, date_time=_EPOCH)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, blob, compress_type=zipfile.ZIP_DEFLATED, compresslevel=9)
    return out.getvalue()


def open_bundle(path: Path, label: Optional[str] = None) -> tuple[Manifest, dict[str, bytes]]:
    """The manifest and the data files of a bundle, every check passed; else DataError naming the
    bundle (`label`: where it came from, a URL or a path) and what is wrong with it."""
    where = label or str(path)
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise DataError(f"{where}: not a cudafit data bundle (not a readable zip archive: {exc}); a truncated download looks like this") from None
    with archive:
        infos = archive.infolist()
        total = 0
        for info in infos:
            _check_member(where, info)
            total += info.file_size
        if total > MAX_TOTAL_BYTES:
            raise DataError(f"{where}: the bundle unpacks to {total} bytes, more than the {MAX_TOTAL_BYTES} a data bundle may hold")
        names = {info.filename for info in infos}
        if MANIFEST not in names:
            raise DataError(f"{where}: not a cudafit data bundle (no {MANIFEST})")
        manifest = _manifest(where, _read(archive, where, MANIFEST))
        blobs = {}
        for rel, digest in manifest.files.items():
            member = DATA_PREFIX + rel
            if member not in names:
                raise DataError(f"{where}: manifest lists {rel}, which the bundle does not hold")
            blob = _read(archive, where, member)
            if hashlib.sha256(blob).hexdigest() != digest:
                raise DataError(f"{where}: {rel}: sha256 does not match the manifest (a damaged or altered bundle)")
            blobs[rel] = blob
        extra = sorted(
            n[len(DATA_PREFIX) :] for n in names if n.startswith(DATA_PREFIX) and n[len(DATA_PREFIX) :] not in manifest.files and not n.endswith("/")
        )
        if extra:
            raise DataError(f"{where}: data file(s) not in the manifest: {', '.join(extra)}")
    return manifest, blobs


def _check_member(where: str, info: zipfile.ZipInfo) -> None:
    name = info.filename
    parts = PurePosixPath(name).parts
    if name.startswith("/") or "\\" in name or ".." in parts or (parts and parts[0].endswith(":")):
        raise DataError(f"{where}: member {name!r} points outside the bundle")
    if info.file_size > MAX_FILE_BYTES:
        raise DataError(f"{where}: member {name!r} unpacks to {info.file_size} bytes, more than a data file may hold")


def _read(archive: zipfile.ZipFile, where: str, name: str) -> bytes:
    try:
        return archive.read(name)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise DataError(f"{where}: {name}: cannot be read ({exc}); the bundle is damaged or truncated") from None


def _manifest(where: str, blob: bytes) -> Manifest:
    try:
        doc = json.loads(blob)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{where}: {MANIFEST}: not valid JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise DataError(f"{where}: {MANIFEST}: expected a JSON object")
    schema = doc.get("schema")
    if not isinstance(schema, int) or isinstance(schema, bool):
        raise DataError(f"{where}: {MANIFEST}: field 'schema': expected an integer, got {schema!r}")
    if schema != SCHEMA:
        newer = "a newer" if schema > SCHEMA else "an older"
        advice = "upgrade cudafit" if schema > SCHEMA else "use a newer bundle"
        raise NotForThisCudafit(f"{where}: data schema {schema} is {newer} schema than this cudafit {__version__} reads ({SCHEMA}); {advice}")
    readers = doc.get("readers")
    try:
        spec = SpecifierSet(readers if isinstance(readers, str) else "!")
    except InvalidSpecifier:
        raise DataError(f"{where}: {MANIFEST}: field 'readers': expected a version specifier like '>=0.1', got {readers!r}") from None
    if not spec.contains(Version(__version__), prereleases=True):
        raise NotForThisCudafit(f"{where}: this bundle is read by cudafit {readers}, not by this cudafit {__version__}; upgrade cudafit")
    data_date = doc.get("data_date")
    if not isinstance(data_date, str) or not _is_date(data_date):
        raise DataError(f"{where}: {MANIFEST}: field 'data_date': expected YYYY-MM-DD, got {data_date!r}")
    version = doc.get("version")
    if not isinstance(version, str):
        raise DataError(f"{where}: {MANIFEST}: field 'version': expected a string, got {version!r}")
    files = doc.get("files")
    if not isinstance(files, dict) or not files or not all(isinstance(k, str) and isinstance(v, str) and len(v) == 64 for k, v in files.items()):
        raise DataError(f"{where}: {MANIFEST}: field 'files': expected a table of data file -> sha256")
    for rel in files:
        parts = PurePosixPath(rel).parts
        if rel.startswith("/") or ".." in parts or "\\" in rel or not rel.endswith(".toml") or len(parts) > 2:
            raise DataError(f"{where}: {MANIFEST}: field 'files': {rel!r} is not a data file path (NAME.toml or FOLDER/NAME.toml)")
    return Manifest(schema, data_date, version, readers, dict(files))  # type: ignore[arg-type]


def _is_date(text: str) -> bool:
    import datetime

    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return len(text) == 10
