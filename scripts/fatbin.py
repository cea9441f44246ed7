#!/usr/bin/env python3
"""Maintainer tool: list the GPU code compiled into a wheel's libraries (needs the network).

nvcc embeds a library's device code as CUDA fatbinaries: containers (magic 0xBA55ED50) of entries,
each with a header that names its kind (1 = PTX, 2 = an ELF cubin, i.e. SASS) and its sm
architecture. They sit in their own section: `.nv_fatbin` in an ELF shared object, the same name cut
to eight characters (`.nv_fatb`) in a PE image (.dll, .pyd). This script reads a wheel on PyPI
through HTTP range requests (scripts/pypi_wheels.py), opens every .so/.dll/.pyd in it (or those
--only names), finds that section through the section table (ELF or PE, parsed with struct) and
walks the fatbinaries in it; it prints the SASS and PTX architectures per library, the grade of
such a fact being `measured` (matrices/README.md).

A library built with relocatable device code (nvcc -rdc, bitsandbytes) has two: `.nv_fatbin` holds
the device-linked image, the code the CUDA runtime registers and picks from by architecture, and
`__nv_relfatbin` (`__nv_rel` in PE) keeps each object's fatbinary from before the device link,
often with PTX that the linked image lacks. The lists of the first are the library's; those of the
second are printed apart ("relocatable"), never merged into them.

A member stored uncompressed is read by range: the headers, the section table, then the section
alone. A deflated member is decompressed from its start up to the end of what the parse needs (a PE
section table comes first, an ELF one last: an ELF library is then read whole).

    python scripts/fatbin.py URL [URL ...] [--only GLOB] [--json]
    python scripts/fatbin.py --project onnxruntime-gpu --release 1.31.1 \\
        [--platform windows-x86_64 ...] [--only '*providers_cuda*'] [--json]
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import re
import struct
import sys
import zipfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import requests
from packaging.utils import parse_wheel_filename
from pypi_wheels import RemoteFile, open_wheel, pick_wheel, wheel_url  # scripts/

from cudafit.binaries import cc_of_code
from cudafit.wheel_tags import platforms_of_tag

CC = tuple[int, int]

FATBIN_MAGIC = 0xBA55ED50
_MAGIC_BYTES = struct.pack("<I", FATBIN_MAGIC)
_CONTAINER = struct.Struct("<IHHQ")  # magic, version, header size, size of the entries that follow
# An entry header: kind, version, header size, payload size (padded); the sm architecture sits at
# byte 28 (after the compressed size, a field of its own and the code version's minor and major).
_ENTRY = struct.Struct("<HHIQ")
_ENTRY_ARCH = 28
_ENTRY_MIN = 32
KIND_PTX = 1
KIND_SASS = 2

LIBRARY = re.compile(r"\.(?:so(?:\.\d+)*|dll|pyd)$", re.IGNORECASE)
PLATFORMS = ("linux-x86_64", "linux-aarch64", "windows-x86_64")
CHUNK = 32 * 1024 * 1024  # a deflated member is fetched and decompressed in pieces this large


class FatbinError(ValueError):
    """A library or fatbinary whose structure is not what its headers promise."""


class Reader(Protocol):
    """Random access to one file: `read(offset, size)` returns at most `size` bytes from `offset`."""

    size: int

    def read(self, offset: int, size: int) -> bytes: ...


# --- parsing (pure) -------------------------------------------------------------------------


@dataclass(frozen=True)
class FatbinEntry:
    kind: int  # 1 = PTX, 2 = SASS (ELF cubin); other kinds are counted, not interpreted
    arch: CC


@dataclass(frozen=True)
class Section:
    name: str
    offset: int
    size: int


@dataclass(frozen=True)
class LibraryCode:
    """What one library carries: its fatbin sections and the entries in them."""

    name: str
    format: str  # "elf", "pe" or "other"
    sections: tuple[Section, ...] = ()
    entries: tuple[FatbinEntry, ...] = ()
    relocatable: tuple[FatbinEntry, ...] = ()  # the objects' fatbinaries from before the device link

    @property
    def sass(self) -> frozenset[CC]:
        return frozenset(e.arch for e in self.entries if e.kind == KIND_SASS)

    @property
    def ptx(self) -> frozenset[CC]:
        return frozenset(e.arch for e in self.entries if e.kind == KIND_PTX)

    @property
    def other_kinds(self) -> frozenset[int]:
        return frozenset(e.kind for e in self.entries if e.kind not in (KIND_PTX, KIND_SASS))


class BytesReader:
    """A Reader over bytes already in memory."""

    def __init__(self, data: bytes):
        self.data, self.size = data, len(data)

    def read(self, offset: int, size: int) -> bytes:
        return self.data[offset : offset + size]


def _exact(reader: Reader, offset: int, size: int, what: str) -> bytes:
    data = reader.read(offset, size)
    if len(data) != size:
        raise FatbinError(f"{what}: {size} bytes at {offset} run past the end of the file ({reader.size} bytes)")
    return data


def parse_fatbin(data: bytes) -> list[FatbinEntry]:
    """The entries of every fatbin container in `data` (a section's bytes; padding between
    containers is skipped by looking for the next magic)."""
    entries: list[FatbinEntry] = []
    pos = 0
    while (start := data.find(_MAGIC_BYTES, pos)) >= 0:
        if start + _CONTAINER.size > len(data):
            raise FatbinError(f"fatbin header at {start} is cut off")
        _, _, header_size, body_size = _CONTAINER.unpack_from(data, start)
        body, end = start + header_size, start + header_size + body_size
        if header_size < _CONTAINER.size or end > len(data):
            raise FatbinError(f"fatbin at {start}: header of {header_size} bytes and body of {body_size} bytes; it runs past the section ({len(data)} bytes)")
        pos = body
        while pos < end:
            if pos + _ENTRY_MIN > end:
                raise FatbinError(f"fatbin at {start}: entry header at {pos} is cut off")
            kind, _, entry_header, payload = _ENTRY.unpack_from(data, pos)
            (arch,) = struct.unpack_from("<I", data, pos + _ENTRY_ARCH)
            if entry_header < _ENTRY_MIN or pos + entry_header + payload > end:
                raise FatbinError(f"fatbin at {start}: entry at {pos} (header {entry_header}, payload {payload}) runs past its container")
            if arch < 10:
                raise FatbinError(f"fatbin at {start}: entry at {pos} names architecture {arch}")
            entries.append(FatbinEntry(kind, cc_of_code(arch)))
            pos += entry_header + payload
        pos = end
    return entries


def elf_sections(reader: Reader) -> list[Section]:
    """Every section of an ELF file (32/64-bit, either byte order) with its file offset and size."""
    ident = _exact(reader, 0, 64, "ELF header")
    wide, order = ident[4] == 2, "<" if ident[5] == 1 else ">"
    if ident[4] not in (1, 2) or ident[5] not in (1, 2):
        raise FatbinError(f"ELF class {ident[4]} / data encoding {ident[5]} not understood")
    if wide:
        (shoff,) = struct.unpack_from(order + "Q", ident, 0x28)
        entsize, shnum, shstrndx = struct.unpack_from(order + "HHH", ident, 0x3A)
        layout = struct.Struct(order + "IIQQQQ")  # name, type, flags, addr, offset, size
    else:
        (shoff,) = struct.unpack_from(order + "I", ident, 0x20)
        entsize, shnum, shstrndx = struct.unpack_from(order + "HHH", ident, 0x2E)
        layout = struct.Struct(order + "IIIIII")
    if shoff == 0:
        return []
    if entsize < layout.size:
        raise FatbinError(f"ELF section header size {entsize} is below {layout.size}")
    first = _exact(reader, shoff, entsize, "ELF section header 0")
    if shnum == 0:  # extended numbering: the count sits in section 0's size, the names' index in its link
        shnum = layout.unpack_from(first)[5]
    if shstrndx == 0xFFFF:
        shstrndx = struct.unpack_from(order + "I", first, 40 if wide else 24)[0]
    table = _exact(reader, shoff, entsize * shnum, "ELF section header table")
    raw = [layout.unpack_from(table, i * entsize) for i in range(shnum)]
    if not 0 < shstrndx < shnum:
        raise FatbinError(f"ELF section-name table index {shstrndx} of {shnum} sections")
    names = _exact(reader, raw[shstrndx][4], raw[shstrndx][5], "ELF section-name table")
    sections = []
    for name_at, kind, _, _, offset, size in raw:
        name = names[name_at : names.index(b"\0", name_at)].decode("latin-1") if name_at < len(names) else ""
        sections.append(Section(name, offset, 0 if kind == 8 else size))  # SHT_NOBITS holds no bytes
    return sections


def pe_sections(reader: Reader) -> list[Section]:
    """Every section of a PE image with its file offset and size on disk; long names ("/123", as
    MinGW writes them) are looked up in the COFF string table."""
    dos = _exact(reader, 0, 64, "DOS header")
    (pe_at,) = struct.unpack_from("<I", dos, 0x3C)
    coff = _exact(reader, pe_at, 24, "PE header")
    if coff[:4] != b"PE\0\0":
        raise FatbinError(f"no PE signature at {pe_at}")
    _, count, _, symbols_at, symbol_count, optional_size, _ = struct.unpack_from("<HHIIIHH", coff, 4)
    table = _exact(reader, pe_at + 24 + optional_size, 40 * count, "PE section table")
    sections = []
    for i in range(count):
        name_bytes, virtual_size, _, raw_size, raw_at = struct.unpack_from("<8sIIII", table, 40 * i)
        name = name_bytes.rstrip(b"\0").decode("latin-1")
        if name.startswith("/") and name[1:].isdigit() and symbols_at:
            strings_at = symbols_at + 18 * symbol_count + int(name[1:])
            long_name = reader.read(strings_at, 256)
            name = long_name.split(b"\0", 1)[0].decode("latin-1")
        size = min(virtual_size, raw_size) if virtual_size else raw_size
        sections.append(Section(name, raw_at, size))
    return sections


def file_format(head: bytes) -> str:
    if head[:4] == b"\x7fELF":
        return "elf"
    if head[:2] == b"MZ":
        return "pe"
    return "other"


def is_fatbin_section(name: str) -> bool:
    """`.nv_fatbin` (ELF), `.nv_fatb` (PE, names cut to 8 characters)."""
    return name.startswith(".nv_fatb")


def is_relocatable_section(name: str) -> bool:
    """`__nv_relfatbin` (ELF), `__nv_rel` (PE)."""
    return name.startswith("__nv_rel")


def read_library(name: str, reader: Reader) -> LibraryCode:
    """The fatbin sections of a library and the entries in them."""
    kind = file_format(reader.read(0, 4))
    if kind == "other":
        return LibraryCode(name, kind)
    every = elf_sections(reader) if kind == "elf" else pe_sections(reader)
    sections = [s for s in every if s.size and (is_fatbin_section(s.name) or is_relocatable_section(s.name))]
    entries: list[FatbinEntry] = []
    relocatable: list[FatbinEntry] = []
    for section in sections:
        data = _exact(reader, section.offset, section.size, f"section {section.name}")
        (relocatable if is_relocatable_section(section.name) else entries).extend(parse_fatbin(data))
    return LibraryCode(name, kind, tuple(sections), tuple(entries), tuple(relocatable))


def cc_list(ccs: Iterable[CC]) -> list[str]:
    return [f"{a}.{b}" for a, b in sorted(ccs)]


# --- reading wheels (network) ---------------------------------------------------------------


class RangeReader:
    """A stored (uncompressed) zip member, read by range requests on the wheel."""

    def __init__(self, remote: RemoteFile, start: int, size: int):
        self.remote, self.start, self.size = remote, start, size

    def read(self, offset: int, size: int) -> bytes:
        size = max(0, min(size, self.size - offset))
        self.remote.seek(self.start + offset)
        return self.remote.read(size)


class StreamReader:
    """A deflated zip member: decompressed from its start, as far as the reads so far need."""

    def __init__(self, stream: Any, size: int):
        self.stream, self.size, self.data = stream, size, bytearray()

    def read(self, offset: int, size: int) -> bytes:
        end = min(self.size, offset + size)
        while len(self.data) < end:
            piece = self.stream.read(max(CHUNK, end - len(self.data)))
            if not piece:
                break
            self.data += piece
        return bytes(self.data[offset:end])


def member_reader(zf: zipfile.ZipFile, remote: RemoteFile, info: zipfile.ZipInfo) -> tuple[Reader, Callable[[], None]]:
    """A Reader over one member and the call that releases it."""
    if info.compress_type == zipfile.ZIP_STORED:
        remote.seek(info.header_offset)
        local = remote.read(30)
        name_length, extra_length = struct.unpack_from("<HH", local, 26)
        return RangeReader(remote, info.header_offset + 30 + name_length + extra_length, info.file_size), lambda: None
    stream = zf.open(info)
    return StreamReader(stream, info.file_size), stream.close


def wheel_libraries(session: requests.Session, url: str, size: int, only: Sequence[str] = ()) -> list[LibraryCode]:
    """The GPU code of every library in the wheel at `url` (or those whose path matches a glob of `only`)."""
    found: list[LibraryCode] = []
    with open_wheel(session, url, {"url": url, "size": size}) as zf:
        remote = zf.fp
        assert isinstance(remote, RemoteFile)
        for info in zf.infolist():
            if not LIBRARY.search(info.filename) or (only and not any(fnmatch.fnmatch(info.filename, g) for g in only)):
                continue
            reader, close = member_reader(zf, remote, info)
            try:
                found.append(read_library(info.filename, reader))
            except FatbinError as exc:
                raise FatbinError(f"{info.filename}: {exc}") from exc
            finally:
                close()
    return found


def project_wheels(session: requests.Session, project: str, release: str, platforms: Sequence[str]) -> list[tuple[str, str, dict]]:
    """(platform, url, file entry) of the wheel to read per platform: cp312 (else the newest CPython),
    else a py3-none wheel (bitsandbytes) whose tag covers the platform."""
    index = f"https://pypi.org/pypi/{project}/json"
    reply = session.get(index, timeout=60)
    reply.raise_for_status()
    files = reply.json()["releases"].get(release)
    if not files:
        raise LookupError(f"{project} {release}: no such release on PyPI")
    chosen = []
    for platform in platforms:
        wheel = pick_wheel(files, platform) or _any_wheel(files, platform)
        if wheel is not None:
            chosen.append((platform, wheel_url(index, wheel), wheel))
    return chosen


def _any_wheel(files: list[dict], platform: str) -> dict | None:
    for item in files:
        name = item["filename"]
        if name.endswith(".whl") and not item.get("yanked"):
            if any(platform in platforms_of_tag(tag.platform) for tag in parse_wheel_filename(name)[3]):
                return item
    return None


def url_size(session: requests.Session, url: str) -> int:
    reply = session.head(url, timeout=60, allow_redirects=True)
    reply.raise_for_status()
    return int(reply.headers["Content-Length"])


@dataclass
class Report:
    wheel: str
    platform: str
    libraries: list[LibraryCode] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "wheel": self.wheel,
            "platform": self.platform,
            "libraries": [
                {
                    "name": lib.name,
                    "format": lib.format,
                    "sections": [s.name for s in lib.sections],
                    "sass": cc_list(lib.sass),
                    "ptx": cc_list(lib.ptx),
                    "other_kinds": sorted(lib.other_kinds),
                    "entries": len(lib.entries),
                    "relocatable": {
                        "sass": cc_list({e.arch for e in lib.relocatable if e.kind == KIND_SASS}),
                        "ptx": cc_list({e.arch for e in lib.relocatable if e.kind == KIND_PTX}),
                        "entries": len(lib.relocatable),
                    },
                }
                for lib in self.libraries
            ],
        }


def render(reports: Sequence[Report]) -> str:
    lines = []
    for report in reports:
        lines.append(f"{report.wheel} ({report.platform})")
        for lib in report.libraries:
            if not lib.entries and not lib.relocatable:
                lines.append(f"  {lib.name}: no CUDA fatbinary")
                continue
            other = f"; other kinds {sorted(lib.other_kinds)}" if lib.other_kinds else ""
            lines.append(f"  {lib.name}: SASS {', '.join(cc_list(lib.sass)) or 'none'}; PTX {', '.join(cc_list(lib.ptx)) or 'none'}{other}")
            if lib.relocatable:
                sass = cc_list({e.arch for e in lib.relocatable if e.kind == KIND_SASS})
                ptx = cc_list({e.arch for e in lib.relocatable if e.kind == KIND_PTX})
                lines.append(f"    relocatable objects ({len(lib.relocatable)} entries): SASS {', '.join(sass) or 'none'}; PTX {', '.join(ptx) or 'none'}")
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("urls", nargs="*", metavar="URL", help="wheel URLs (files.pythonhosted.org serves range requests)")
    parser.add_argument("--project", help="read the wheels of this PyPI project (with --release)")
    parser.add_argument("--release", help="the release of --project")
    parser.add_argument("--platform", action="append", choices=PLATFORMS, help="with --project: the platforms to read (default all three)")
    parser.add_argument("--only", action="append", default=[], metavar="GLOB", help="read only the libraries whose path in the wheel matches")
    parser.add_argument("--json", action="store_true", help="one JSON document instead of text")
    args = parser.parse_args(argv)
    if bool(args.project) != bool(args.release) or (not args.project and not args.urls):
        parser.error("give wheel URLs, or --project with --release")
    return args


def run(session: requests.Session, args: argparse.Namespace) -> list[Report]:
    targets: list[tuple[str, str, int]] = [(url.rsplit("/", 1)[-1], url, url_size(session, url)) for url in args.urls]
    if args.project:
        for platform, url, wheel in project_wheels(session, args.project, args.release, args.platform or PLATFORMS):
            targets.append((f"{wheel['filename']}|{platform}", url, wheel["size"]))
    reports = []
    for label, url, size in targets:
        name, _, platform = label.partition("|")
        reports.append(Report(name, platform or "-", wheel_libraries(session, url, size, args.only)))
    return reports


def main(argv: Sequence[str] | None = None) -> int:
    """Exit 0: read; 2: PyPI, a wheel or a library could not be read."""
    args = parse_args(argv)
    try:
        reports = run(requests.Session(), args)
    except (requests.RequestException, LookupError, FatbinError, zipfile.BadZipFile) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps([r.as_json() for r in reports], indent=1) if args.json else render(reports))
    return 0


if __name__ == "__main__":
    sys.exit(main())
