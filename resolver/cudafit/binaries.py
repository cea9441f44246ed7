"""Facts read from shipped files without running them: the GPU architecture string compiled into a
framework's library, literals assigned in a generated Python file, and an ELF library's dynamic
section (the sonames it needs and where it asks the loader to look). Used by `doctor` on an
installed environment and by the maintainer scripts on wheels read over HTTP."""

from __future__ import annotations

import ast
import mmap
import re
import struct
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple, Optional

CC = tuple[int, int]

# torch.cuda.get_arch_list() splits the CUDA_ARCH_FLAGS string compiled into torch._C: "sm_75 sm_80 compute_90".
ARCH_STRING = re.compile(rb"(?:sm|compute)_\d+[af]?(?: (?:sm|compute)_\d+[af]?)+")
ARCH_CODE = re.compile(r"(sm|compute)_(\d+)([af]?)")


def cc_of_code(digits: str | int) -> CC:
    """'86' or 86 -> (8, 6); '120' -> (12, 0): the last digit is the minor."""
    text = str(digits)
    return int(text[:-1]), int(text[-1])


def find_arch_string(blob: bytes) -> Optional[str]:
    """The longest space-separated run of sm_XY/compute_XY in a binary (None if there is none)."""
    found = [m.group() for m in ARCH_STRING.finditer(blob)]
    return max(found, key=len).decode("ascii") if found else None


def split_arch_list(text: str) -> tuple[frozenset[CC], frozenset[CC]]:
    """'sm_75 sm_90a compute_90' -> SASS {(7, 5), (9, 0)}, PTX {(9, 0)} (an a/f suffix keeps its CC)."""
    sass: set[CC] = set()
    ptx: set[CC] = set()
    for kind, digits, _ in ARCH_CODE.findall(text):
        (sass if kind == "sm" else ptx).add(cc_of_code(digits))
    return frozenset(sass), frozenset(ptx)


def parse_arch_string(blob: bytes) -> Optional[tuple[frozenset[CC], frozenset[CC]]]:
    """(SASS, PTX) compute capabilities of the arch string in a binary; None if it has none."""
    text = find_arch_string(blob)
    return None if text is None else split_arch_list(text)


def arch_string_of_file(path: Path) -> Optional[tuple[frozenset[CC], frozenset[CC]]]:
    """parse_arch_string over a library on disk, mapped rather than read (tens of MB)."""
    with open(path, "rb") as handle:
        if path.stat().st_size == 0:
            return None
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as blob:
            found = _arch_runs(blob)
    return split_arch_list(max(found, key=len).decode("ascii")) if found else None


def _arch_runs(blob: "mmap.mmap") -> list[bytes]:
    """Every arch-string run in a mapped file. The regex is tried only where `sm_` or `compute_`
    starts (found at memchr speed), not at every byte of a library of tens of MB."""
    runs: list[bytes] = []
    for prefix in (b"sm_", b"compute_"):
        at = blob.find(prefix)
        while at >= 0:
            match = ARCH_STRING.match(blob, at)  # type: ignore[call-overload]
            if match:
                runs.append(match.group())
                at = match.end()
            at = blob.find(prefix, at + 1)
    return runs


def assigned_literal(source: str, name: str) -> Any:
    """The literal value assigned to the module-level `name` (plain or annotated); KeyError if none.
    The source is parsed, never executed; a call such as collections.OrderedDict([...]) gives its
    first argument's literal."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            if isinstance(value, ast.Call) and len(value.args) == 1:
                value = value.args[0]
            return ast.literal_eval(value)
    raise KeyError(name)


# --- ELF ------------------------------------------------------------------------------------

_PT_LOAD, _PT_DYNAMIC = 1, 2
_DT_NEEDED, _DT_STRTAB, _DT_STRSZ, _DT_RPATH, _DT_RUNPATH = 1, 5, 10, 15, 29


class ElfDynamic(NamedTuple):
    needed: tuple[str, ...]
    rpath: tuple[str, ...]  # DT_RPATH entries, $ORIGIN not expanded
    runpath: tuple[str, ...]


class NotElf(ValueError):
    pass


def read_dynamic(path: Path) -> ElfDynamic:
    """The dynamic section of an ELF shared object, reading only the headers and the string table
    (a CUDA library is up to a GB). Raises NotElf for anything that is not a well-formed ELF file,
    OSError when it cannot be read."""
    with open(path, "rb") as handle:
        return _read_dynamic(handle)


def _read_dynamic(handle: BinaryIO) -> ElfDynamic:
    ident = handle.read(16)
    if len(ident) < 16 or ident[:4] != b"\x7fELF" or ident[4] not in (1, 2) or ident[5] not in (1, 2):
        raise NotElf("not an ELF file")
    wide = ident[4] == 2
    end = "<" if ident[5] == 1 else ">"
    header = handle.read(48 if wide else 36)
    try:
        # After e_ident: e_phoff at 16 (ELF64) or 12 (ELF32); e_phentsize, e_phnum at 38 or 26.
        (phoff,) = struct.unpack_from(end + ("Q" if wide else "I"), header, 16 if wide else 12)
        phentsize, phnum = struct.unpack_from(end + "HH", header, 38 if wide else 26)
    except struct.error:
        raise NotElf("truncated ELF header") from None
    entry = (end + "IIQQQQQQ") if wide else (end + "IIIIIIII")
    loads: list[tuple[int, int, int]] = []  # (vaddr, offset, filesz)
    dynamic: Optional[tuple[int, int]] = None
    for i in range(min(phnum, 512)):
        handle.seek(phoff + i * phentsize)
        raw = handle.read(struct.calcsize(entry))
        if len(raw) < struct.calcsize(entry):
            raise NotElf("truncated program header")
        fields = struct.unpack(entry, raw)
        if wide:
            p_type, _flags, offset, vaddr, _paddr, filesz = fields[:6]
        else:
            p_type, offset, vaddr, _paddr, filesz = fields[:5]
        if p_type == _PT_LOAD:
            loads.append((vaddr, offset, filesz))
        elif p_type == _PT_DYNAMIC:
            dynamic = (offset, filesz)
    if dynamic is None:
        return ElfDynamic((), (), ())
    handle.seek(dynamic[0])
    raw = handle.read(min(dynamic[1], 1 << 20))
    size = 16 if wide else 8
    tags: list[tuple[int, int]] = []
    for pos in range(0, len(raw) - size + 1, size):
        tag, value = struct.unpack(end + ("qQ" if wide else "iI"), raw[pos : pos + size])
        if tag == 0:
            break
        tags.append((tag, value))
    strtab = next((v for t, v in tags if t == _DT_STRTAB), None)
    strsz = next((v for t, v in tags if t == _DT_STRSZ), 0)
    if strtab is None:
        return ElfDynamic((), (), ())
    # DT_STRTAB is a virtual address: the PT_LOAD segment that holds it gives the file offset.
    offset = next((off + strtab - va for va, off, size_ in loads if va <= strtab < va + size_), None)
    if offset is None:
        raise NotElf("string table outside every loaded segment")
    handle.seek(offset)
    table = handle.read(min(strsz, 1 << 22))

    def text(at: int) -> str:
        stop = table.find(b"\0", at)
        return table[at : stop if stop >= 0 else len(table)].decode("utf-8", "replace")

    def paths(tag: int) -> tuple[str, ...]:
        return tuple(p for t, v in tags if t == tag for p in text(v).split(":") if p)

    return ElfDynamic(tuple(text(v) for t, v in tags if t == _DT_NEEDED), paths(_DT_RPATH), paths(_DT_RUNPATH))
