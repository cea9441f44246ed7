"""Fake installed environments for doctor's tests: a prefix with bin/python (this interpreter),
site-packages with .dist-info folders (METADATA, WHEEL) and the version files frameworks ship,
and ELF shared objects with chosen NEEDED and RUNPATH entries. The metadata shapes follow real
wheels (torch, tensorflow, jaxlib, onnxruntime-gpu) as read from PyPI; the values are the test's."""

from __future__ import annotations

import os
import struct
import sys
from pathlib import Path
from typing import Optional

PY = f"{sys.version_info[0]}.{sys.version_info[1]}"
CP = f"cp{sys.version_info[0]}{sys.version_info[1]}"


def elf(needed: list[str], runpath: Optional[list[str]] = None, rpath: Optional[list[str]] = None) -> bytes:
    """A minimal 64-bit little-endian ELF shared object: one PT_LOAD covering the file, one
    PT_DYNAMIC with DT_NEEDED/DT_RUNPATH/DT_RPATH, DT_STRTAB and DT_STRSZ."""
    strtab = b"\0"
    offsets = []
    for name in needed + [":".join(runpath or [])] + [":".join(rpath or [])]:
        offsets.append(len(strtab))
        strtab += name.encode() + b"\0"
    ehsize, phentsize = 64, 56
    phoff = ehsize
    strtab_off = phoff + 2 * phentsize
    dyn_off = strtab_off + len(strtab) + (-len(strtab)) % 8
    entries = [(1, offsets[i]) for i in range(len(needed))]
    if runpath:
        entries.append((29, offsets[len(needed)]))
    if rpath:
        entries.append((15, offsets[len(needed) + 1]))
    entries += [(5, strtab_off), (10, len(strtab)), (0, 0)]
    dynamic = b"".join(struct.pack("<qQ", tag, value) for tag, value in entries)
    size = dyn_off + len(dynamic)
    ident = b"\x7fELF" + bytes([2, 1, 1]) + b"\0" * 9
    header = ident + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, phoff, 0, 0, ehsize, phentsize, 2, 64, 0, 0)
    load = struct.pack("<IIQQQQQQ", 1, 5, 0, 0, 0, size, size, 0x1000)
    dyn = struct.pack("<IIQQQQQQ", 2, 6, dyn_off, dyn_off, dyn_off, len(dynamic), len(dynamic), 8)
    body = header + load + dyn + strtab
    return body + b"\0" * (dyn_off - len(body)) + dynamic


class FakeEnv:
    def __init__(self, root: Path) -> None:
        self.prefix = root
        self.site = root / "lib" / f"python{PY}" / "site-packages"
        self.site.mkdir(parents=True)
        (root / "bin").mkdir()
        os.symlink(sys.executable, root / "bin" / "python")
        # as `python -m venv` writes it: without the key, site.py adds the base Python's own packages
        (root / "pyvenv.cfg").write_text(f"home = {Path(sys.executable).parent}\ninclude-system-site-packages = false\nversion = {PY}.0\n")

    def dist(self, name: str, version: str, requires: tuple[str, ...] = (), extras: tuple[str, ...] = (), tag: Optional[str] = None) -> "FakeEnv":
        folder = self.site / f"{name.replace('-', '_')}-{version}.dist-info"
        folder.mkdir()
        lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
        lines += [f"Provides-Extra: {e}" for e in extras] + [f"Requires-Dist: {r}" for r in requires]
        (folder / "METADATA").write_text("\n".join(lines) + "\n")
        (folder / "WHEEL").write_text(f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: {tag or CP + '-' + CP + '-manylinux_2_28_x86_64'}\n")
        return self

    def file(self, relative: str, content: str | bytes) -> Path:
        path = self.site / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
        return path

    def torch(
        self, version: str, cuda: Optional[str], requires: tuple[str, ...] = (), arch: Optional[str] = None, needed: Optional[list[str]] = None, hip: Optional[str] = None
    ) -> "FakeEnv":
        self.dist("torch", version, requires)
        self.file("torch/version.py", f"__version__ = '{version}'\ndebug = False\ncuda: Optional[str] = {cuda!r}\nhip: Optional[str] = {hip!r}\n")
        if arch is not None:
            self.file("torch/lib/libtorch_python.so", b"\0junk\0" + arch.encode() + b"\0more\0")
        if needed is not None:
            self.file("torch/lib/libtorch_cuda.so", elf(needed, runpath=["$ORIGIN/../../nvidia/cudnn/lib", "$ORIGIN"]))
        return self

    def tensorflow(self, version: str, cuda: Optional[str], cudnn: Optional[str] = "9", arch: tuple[str, ...] = (), requires: tuple[str, ...] = (), extras: tuple[str, ...] = ()) -> "FakeEnv":
        self.dist("tensorflow", version, requires, extras)
        facts = [("cpu_compiler", "/usr/bin/clang"), ("cuda_compute_capabilities", list(arch)), ("cuda_version", cuda), ("cudnn_version", cudnn),
                 ("is_cuda_build", cuda is not None), ("is_rocm_build", False)]  # fmt: skip
        if cuda is None:
            facts = [("is_cuda_build", False), ("is_rocm_build", False)]
        self.file("tensorflow/python/platform/build_info.py", f"import collections\n\nbuild_info = collections.OrderedDict({facts!r})\n")
        return self

    def nvidia_lib(self, package: str, soname: str) -> Path:
        return self.file(f"nvidia/{package}/lib/{soname}", elf([]))
