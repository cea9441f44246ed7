"""scripts/fatbin.py on ELF and PE libraries built here byte by byte, and on a wheel served through
range requests (no network)."""

from __future__ import annotations

import io
import re
import struct
import zipfile

import pytest
import responses
from maint_scripts import script

_script = script


fatbin = _script("fatbin")

PTX, SASS = 1, 2


# --- building blobs -------------------------------------------------------------------------


def entry(kind: int, arch: int, payload: bytes = b"\xaa" * 24, header: int = 64) -> bytes:
    """One fatbin entry: its header (kind, version, header size, payload size, arch at byte 28) and payload."""
    head = bytearray(header)
    struct.pack_into("<HHIQ", head, 0, kind, 0x0101, header, len(payload))
    struct.pack_into("<I", head, 28, arch)
    return bytes(head) + payload


def container(*entries: bytes) -> bytes:
    body = b"".join(entries)
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + body


def elf(sections: dict[str, bytes], *, wide: bool = True, big: bool = False) -> bytes:
    """An ELF file whose section table (at the end, as linkers write it) holds `sections`, a null
    section first and the section-name table last."""
    order = ">" if big else "<"
    names = b"\0" + b"".join(n.encode() + b"\0" for n in [*sections, ".shstrtab"])
    header_size = 64 if wide else 52
    body, placed, name_at = b"", [], 1
    for name, data in [*sections.items(), (".shstrtab", names)]:
        placed.append((name_at, header_size + len(body), len(data)))
        name_at += len(name) + 1
        body += data
    shoff = header_size + len(body)
    entsize = 64 if wide else 40
    layout = order + ("IIQQQQIIQQ" if wide else "IIIIIIIIII")
    table = struct.pack(layout, *([0] * 10))
    for name_at, offset, size in placed:
        table += struct.pack(layout, name_at, 1, 0, 0, offset, size, 0, 0, 1, 0)
    ident = b"\x7fELF" + bytes([2 if wide else 1, 2 if big else 1, 1]) + b"\0" * 9
    if wide:
        head = ident + struct.pack(order + "HHIQQQIHHHHHH", 3, 62, 1, 0, 0, shoff, 0, 64, 0, 0, entsize, len(placed) + 1, len(placed))
    else:
        head = ident + struct.pack(order + "HHIIIIIHHHHHH", 3, 3, 1, 0, 0, shoff, 0, 52, 0, 0, entsize, len(placed) + 1, len(placed))
    assert len(head) == header_size
    return head + body + table


def pe(sections: dict[str, bytes], *, pad: int = 0) -> bytes:
    """A PE image with `sections` (raw data padded by `pad` bytes each, as file alignment does);
    a name longer than 8 characters goes to the COFF string table as "/offset", as MinGW writes it."""
    count, optional = len(sections), 240
    table_at = 0x80 + 24 + optional
    data_at = table_at + 40 * count
    strings, table, data = b"", b"", b""
    for name, raw in sections.items():
        if len(name) > 8:
            field_name = f"/{4 + len(strings)}".encode()
            strings += name.encode() + b"\0"
        else:
            field_name = name.encode()
        table += struct.pack("<8sIIIIIIHHI", field_name, len(raw), 0x1000, len(raw) + pad, data_at + len(data), 0, 0, 0, 0, 0)
        data += raw + b"\0" * pad
    symbols_at = data_at + len(data) if strings else 0
    coff = struct.pack("<4sHHIIIHH", b"PE\0\0", 0x8664, count, 0, symbols_at, 0, optional, 0x2022)
    dos = b"MZ" + b"\0" * 0x3A + struct.pack("<I", 0x80) + b"\0" * (0x80 - 0x40)
    tail = struct.pack("<I", 4 + len(strings)) + strings if strings else b""
    return dos + coff + b"\0" * optional + table + data + tail


def lists(code) -> tuple[list[str], list[str]]:
    return fatbin.cc_list(code.sass), fatbin.cc_list(code.ptx)


# --- the fatbin walker ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("blob", "sass", "ptx"),
    [
        (container(entry(SASS, 75), entry(SASS, 80), entry(PTX, 90)), ["7.5", "8.0"], ["9.0"]),
        # containers one after another, with alignment padding between them
        (container(entry(SASS, 86)) + b"\0" * 8 + container(entry(SASS, 120), entry(PTX, 120)), ["8.6", "12.0"], ["12.0"]),
        # a larger entry header (as newer toolkits write), sm_100 and sm_121
        (container(entry(SASS, 100, header=72), entry(SASS, 121, header=72)), ["10.0", "12.1"], []),
        (container(entry(PTX, 52), entry(PTX, 61)), [], ["5.2", "6.1"]),
        (b"\0" * 64, [], []),
    ],
    ids=["one", "two-containers", "long-headers", "ptx-only", "none"],
)
def test_parse_fatbin(blob, sass, ptx):
    code = fatbin.LibraryCode("x", "elf", (), tuple(fatbin.parse_fatbin(blob)))
    assert lists(code) == (sass, ptx)


def test_other_kinds_are_kept_apart():
    code = fatbin.LibraryCode("x", "elf", (), tuple(fatbin.parse_fatbin(container(entry(SASS, 90), entry(8, 90)))))
    assert lists(code) == (["9.0"], [])
    assert code.other_kinds == {8}


@pytest.mark.parametrize(
    ("blob", "message"),
    [
        (container(entry(SASS, 75))[:-4], "runs past"),  # the section ends inside the container
        (struct.pack("<IHHQ", 0xBA55ED50, 1, 16, 16) + b"\0" * 16, "cut off|architecture"),
        (container(entry(SASS, 75)[:40] + b"\0" * 8), "runs past"),  # an entry's payload overruns
        (container(entry(SASS, 7)), "architecture 7"),
        (struct.pack("<IHH", 0xBA55ED50, 1, 16), "cut off"),
    ],
    ids=["section-ends-early", "entry-header-cut", "payload-overruns", "bad-arch", "container-header-cut"],
)
def test_parse_fatbin_rejects_broken_containers(blob, message):
    with pytest.raises(fatbin.FatbinError, match=message):
        fatbin.parse_fatbin(blob)


# --- section tables ---------------------------------------------------------------------------

FAT = container(entry(SASS, 75), entry(SASS, 90), entry(PTX, 90))


@pytest.mark.parametrize(
    ("blob", "fmt", "sections", "sass", "ptx"),
    [
        (elf({".text": b"\x90" * 40, ".nv_fatbin": FAT, ".data": b"\1" * 8}), "elf", [".nv_fatbin"], ["7.5", "9.0"], ["9.0"]),
        (elf({".nv_fatbin": FAT}, wide=False), "elf", [".nv_fatbin"], ["7.5", "9.0"], ["9.0"]),
        (elf({".nv_fatbin": FAT}, big=True), "elf", [".nv_fatbin"], ["7.5", "9.0"], ["9.0"]),
        # the magic outside the fatbin section is not read: only the section counts
        (elf({".rodata": FAT, ".text": b"\x90" * 8}), "elf", [], [], []),
        (pe({".text": b"\xcc" * 32, ".nv_fatb": FAT, ".rdata": b"\2" * 16}, pad=48), "pe", [".nv_fatb"], ["7.5", "9.0"], ["9.0"]),
        (pe({".text": b"\xcc" * 32, ".nv_fatbin": FAT}), "pe", [".nv_fatbin"], ["7.5", "9.0"], ["9.0"]),
        (pe({".text": b"\xcc" * 32}), "pe", [], [], []),
        (b"#!/bin/sh\n", "other", [], [], []),
    ],
    ids=["elf64", "elf32", "elf64-big-endian", "elf-no-section", "pe", "pe-long-name", "pe-no-section", "not-a-library"],
)
def test_read_library(blob, fmt, sections, sass, ptx):
    code = fatbin.read_library("lib", fatbin.BytesReader(blob))
    assert code.format == fmt
    assert [s.name for s in code.sections] == sections
    assert lists(code) == (sass, ptx)


# Relocatable device code (nvcc -rdc): the device-linked image in .nv_fatbin, and each object's own
# fatbinary, here with PTX the image lacks, in __nv_relfatbin (`__nv_rel` in a PE image).
OBJECT = container(entry(SASS, 75), entry(SASS, 90), entry(PTX, 90))
LINKED = container(entry(SASS, 75), entry(SASS, 90))


@pytest.mark.parametrize(
    "blob",
    [elf({"__nv_relfatbin": OBJECT + OBJECT, ".nv_fatbin": LINKED}), pe({"__nv_rel": OBJECT + OBJECT, ".nv_fatb": LINKED})],
    ids=["elf", "pe"],
)
def test_relocatable_objects_are_kept_apart(blob):
    code = fatbin.read_library("lib", fatbin.BytesReader(blob))
    assert lists(code) == (["7.5", "9.0"], [])
    assert len(code.relocatable) == 6
    assert {e.arch for e in code.relocatable if e.kind == PTX} == {(9, 0)}


def test_text_report_names_relocatable_ptx():
    code = fatbin.read_library("lib.so", fatbin.BytesReader(elf({"__nv_relfatbin": OBJECT, ".nv_fatbin": LINKED})))
    text = fatbin.render([fatbin.Report("w.whl", "linux-x86_64", [code])])
    assert text.splitlines()[1:] == [
        "  lib.so: SASS 7.5, 9.0; PTX none",
        "    relocatable objects (3 entries): SASS 7.5, 9.0; PTX 9.0",
    ]


def test_elf_section_table_past_the_end_is_an_error():
    blob = elf({".nv_fatbin": FAT})
    with pytest.raises(fatbin.FatbinError, match="past the end"):
        fatbin.read_library("lib", fatbin.BytesReader(blob[:-100]))


def test_pe_without_signature_is_an_error():
    blob = bytearray(pe({".nv_fatb": FAT}))
    blob[0x80:0x84] = b"XX\0\0"
    with pytest.raises(fatbin.FatbinError, match="no PE signature"):
        fatbin.read_library("lib", fatbin.BytesReader(bytes(blob)))


# --- a wheel read through range requests ------------------------------------------------------

URL = "https://files.pythonhosted.org/packages/ab/cd/demo-1.0-py3-none-manylinux_2_28_x86_64.whl"


def wheel() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("demo/__init__.py", "")
        # stored: read by range (headers, section table, section); deflated: decompressed in order
        zf.writestr("demo/libstored_cuda126.so", elf({".text": b"\x90" * 4000, ".nv_fatbin": FAT}), zipfile.ZIP_STORED)
        zf.writestr("demo/libdeflated_cuda128.so", elf({".nv_fatbin": container(entry(SASS, 120), entry(PTX, 120))}), zipfile.ZIP_DEFLATED)
        zf.writestr("demo/kernels.dll", pe({".nv_fatb": container(entry(SASS, 86))}), zipfile.ZIP_DEFLATED)
        zf.writestr("demo/libcpu.so", elf({".text": b"\x90" * 8}), zipfile.ZIP_DEFLATED)
        zf.writestr("demo-1.0.dist-info/METADATA", "Name: demo\n")
    return buffer.getvalue()


@pytest.fixture
def served():
    blob, seen = wheel(), []

    def callback(request):
        match = re.fullmatch(r"bytes=(\d+)-(\d+)", request.headers.get("Range", ""))
        assert match, "every read is a range request"
        start, end = int(match.group(1)), min(int(match.group(2)), len(blob) - 1)
        seen.append(end + 1 - start)
        return 206, {"Content-Range": f"bytes {start}-{end}/{len(blob)}"}, blob[start : end + 1]

    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        mock.add_callback(responses.GET, URL, callback=callback)
        mock.add(responses.HEAD, URL, headers={"Content-Length": str(len(blob))})
        yield blob, seen


def test_wheel_libraries(served):
    import requests

    blob, _ = served
    found = {lib.name: lists(lib) for lib in fatbin.wheel_libraries(requests.Session(), URL, len(blob))}
    assert found == {
        "demo/libstored_cuda126.so": (["7.5", "9.0"], ["9.0"]),
        "demo/libdeflated_cuda128.so": (["12.0"], ["12.0"]),
        "demo/kernels.dll": (["8.6"], []),
        "demo/libcpu.so": ([], []),
    }


def test_only_reads_the_named_libraries(served):
    import requests

    blob, _ = served
    found = fatbin.wheel_libraries(requests.Session(), URL, len(blob), only=["*cuda128*"])
    assert [lib.name for lib in found] == ["demo/libdeflated_cuda128.so"]


def test_main_prints_json(served, capsys):
    import json

    assert fatbin.main([URL, "--json", "--only", "*.dll"]) == 0
    (report,) = json.loads(capsys.readouterr().out)
    assert report["wheel"] == URL.rsplit("/", 1)[-1]
    assert report["libraries"] == [
        {
            "name": "demo/kernels.dll",
            "format": "pe",
            "sections": [".nv_fatb"],
            "sass": ["8.6"],
            "ptx": [],
            "other_kinds": [],
            "entries": 1,
            "relocatable": {"sass": [], "ptx": [], "entries": 0},
        }
    ]


def test_main_text_and_errors(served, capsys):
    assert fatbin.main([URL, "--only", "*cpu*"]) == 0
    assert "demo/libcpu.so: no CUDA fatbinary" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        fatbin.main(["--project", "demo"])  # --project needs --release
