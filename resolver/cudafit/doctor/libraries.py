"""Will a framework's CUDA library load? The dynamic loader's search, done on paper: for each soname
the library needs, the folders ld.so would try in its order (DT_RPATH, LD_LIBRARY_PATH, DT_RUNPATH,
the ld.so cache, the default folders), and the pip-installed nvidia-* folders that the frameworks
load ahead of time. What `ldd` would print as "not found", without loading anything."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable, NamedTuple, Optional

from cudafit import binaries

DEFAULT_DIRS = (
    "/lib",
    "/usr/lib",
    "/lib64",
    "/usr/lib64",
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/lib/aarch64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
)
DRIVER_LIBRARY = "libcuda.so.1"  # the driver's own library: from the system, never from a wheel
_CACHE_LINE = re.compile(r"^\s*(\S+)\s+\(([^)]*)\)\s+=>\s+(\S+)\s*$")


class Found(NamedTuple):
    path: Path
    by: str  # "DT_RPATH", "LD_LIBRARY_PATH", "DT_RUNPATH", "ld.so cache", "default folder", "nvidia-* wheel"


class LoadReport(NamedTuple):
    library: Path
    missing: tuple[str, ...]
    # (soname, the copy LD_LIBRARY_PATH makes the loader take, the copy the library ships with)
    shadowed: tuple[tuple[str, Path, Path], ...]
    unreadable: Optional[str] = None


def ld_cache(text: str, machine: str) -> dict[str, Path]:
    """soname -> path from `ldconfig -p` output, for this machine's word size and ISA."""
    want = "x86-64" if machine == "x86_64" else "AArch64" if machine == "aarch64" else ""
    found: dict[str, Path] = {}
    for line in text.splitlines():
        match = _CACHE_LINE.match(line)
        if match and (not want or want in match.group(2)):
            found.setdefault(match.group(1), Path(match.group(3)))
    return found


def wheel_library_dirs(sites: tuple[Path, ...]) -> list[Path]:
    """The lib folders of pip's nvidia-* wheels (nvidia/cudnn/lib; CUDA 13's nvidia/cu13/lib)."""
    out: list[Path] = []
    for site in sites:
        out += sorted(p for p in site.glob("nvidia/*/lib") if p.is_dir())
    return out


def _expand(entry: str, origin: Path) -> Path:
    return Path(entry.replace("${ORIGIN}", str(origin)).replace("$ORIGIN", str(origin)))


def check_loading(
    library: Path,
    *,
    ld_library_path: str,
    cache: dict[str, Path],
    wheel_dirs: list[Path],
    exists: Callable[[Path], bool] = Path.is_file,
    default_dirs: Optional[tuple[str, ...]] = None,
) -> LoadReport:
    default_dirs = DEFAULT_DIRS if default_dirs is None else default_dirs
    try:
        dynamic = binaries.read_dynamic(library)
    except (binaries.NotElf, OSError) as exc:
        return LoadReport(library, (), (), unreadable=str(exc))
    origin = library.parent
    env_dirs = [Path(p) for p in ld_library_path.split(":") if p]
    rpath = [_expand(p, origin) for p in dynamic.rpath] if not dynamic.runpath else []
    runpath = [_expand(p, origin) for p in dynamic.runpath]
    order: list[tuple[str, list[Path]]] = [
        ("DT_RPATH", rpath),
        ("LD_LIBRARY_PATH", env_dirs),
        ("DT_RUNPATH", runpath),
    ]
    missing = []
    shadowed = []
    for soname in dynamic.needed:
        found = _search(soname, order, cache, default_dirs, exists)
        if found is None:
            # torch and the other frameworks load the nvidia-* wheels' libraries before their own.
            in_wheel = next((d / soname for d in wheel_dirs if exists(d / soname)), None)
            if in_wheel is None:
                missing.append(soname)
            continue
        if found.by == "LD_LIBRARY_PATH":
            own = _search(soname, [("DT_RUNPATH", runpath)], {}, (), exists)
            in_wheel = next((d / soname for d in wheel_dirs if exists(d / soname)), None)
            shipped = own.path if own is not None else in_wheel
            if shipped is not None and shipped.resolve() != found.path.resolve():
                shadowed.append((soname, found.path, shipped))
    return LoadReport(library, tuple(missing), tuple(shadowed))


def _search(
    soname: str, order: list[tuple[str, list[Path]]], cache: dict[str, Path], default_dirs: tuple[str, ...], exists: Callable[[Path], bool]
) -> Optional[Found]:
    for by, dirs in order:
        for folder in dirs:
            if exists(folder / soname):
                return Found(folder / soname, by)
    if soname in cache:
        return Found(cache[soname], "ld.so cache")
    for default in default_dirs:
        if exists(Path(default) / soname):
            return Found(Path(default) / soname, "default folder")
    return None
