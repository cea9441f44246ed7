"""The CUDA toolkits installed on a machine (/usr/local/cuda-*, CUDA_HOME/CUDA_PATH, nvcc on PATH,
a conda environment's nvcc), their versions, and the one a CUDA extension build would use: read
by `detect`, `toolkits`, `doctor` and `install` alike."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple, Optional

from cudafit import detection as detect

_NVCC_RELEASE = re.compile(r"release (\d+\.\d+), V(\d+\.\d+\.\d+)")


class ToolkitInstall(NamedTuple):
    version: Optional[str]  # "12.4.131"; None when no version file or nvcc said
    root: Path
    found_by: tuple[str, ...]  # /usr/local, CUDA_HOME, CUDA_PATH, PATH, conda
    default: bool = False  # /usr/local/cuda points here

    @property
    def short(self) -> str:
        return ".".join((self.version or "unknown").split(".")[:2])

    def as_json(self) -> dict:
        return {"version": self.version, "path": str(self.root), "found_by": list(self.found_by), "default": self.default}


def nvcc_version(text: str) -> Optional[str]:
    """The version in `nvcc --version` output ('Cuda compilation tools, release 12.4, V12.4.131')."""
    match = _NVCC_RELEASE.search(text)
    return match.group(2) if match else None


def _version(root: Path, run: detect.Runner) -> Optional[str]:
    found = detect.toolkit_version(root)
    if found:
        return found
    nvcc = root / "bin" / "nvcc"
    if nvcc.is_file():
        result = run([str(nvcc), "--version"], detect.TIMEOUT_S)
        if result.returncode == 0:
            return nvcc_version(result.stdout)
    return None


def _is_toolkit(root: Path) -> bool:
    return (root / "include" / "cuda_runtime.h").is_file() or (root / "version.json").is_file() or (root / "version.txt").is_file()


USR_LOCAL = Path("/usr/local")


def find_toolkits(environ: Mapping[str, str], *, run: detect.Runner = detect.run_command, usr_local: Optional[Path] = None) -> list[ToolkitInstall]:
    import shutil

    usr_local = USR_LOCAL if usr_local is None else usr_local
    roots: dict[Path, list[str]] = {}

    def add(root: Path, how: str) -> None:
        try:
            key = root.resolve()
        except OSError:
            return
        if key.is_dir():
            roots.setdefault(key, [])
            if how not in roots[key]:
                roots[key].append(how)

    try:
        for entry in sorted(usr_local.iterdir()):
            if entry.name.startswith("cuda") and not entry.is_symlink():
                add(entry, "/usr/local")
    except OSError:
        pass
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if environ.get(var):
            add(Path(environ[var]), var)
    conda = environ.get("CONDA_PREFIX")
    if conda and (Path(conda) / "bin" / "nvcc").is_file():
        add(Path(conda), "conda")
    versions = {root: _version(root, run) for root in roots}
    nvcc = shutil.which("nvcc", path=environ.get("PATH", ""))
    if nvcc:
        root = Path(nvcc).resolve().parent.parent
        if _is_toolkit(root):
            add(root, "PATH")
            versions.setdefault(root.resolve(), _version(root, run))
        else:
            # A wrapper script (/usr/local/bin/nvcc running a toolkit's nvcc): its version says which.
            result = run([nvcc, "--version"], detect.TIMEOUT_S)
            said = nvcc_version(result.stdout) if result.returncode == 0 else None
            same = [r for r, v in versions.items() if said and v == said]
            if same:
                roots[same[0]].append("PATH")
            else:
                # The folder above nvcc's bin/, as torch.utils.cpp_extension takes CUDA_HOME from it.
                home = Path(nvcc).resolve().parent.parent
                roots[home] = ["PATH"]
                versions[home] = said
    default = usr_local / "cuda"
    default_root = default.resolve() if default.is_symlink() or default.is_dir() else None
    out = [ToolkitInstall(versions.get(root), root, tuple(how), root == default_root) for root, how in roots.items()]
    return sorted(out, key=lambda t: (t.version is None, tuple(int(p) for p in (t.version or "0").split(".") if p.isdigit()), str(t.root)))


def extension_toolkit(environ: Mapping[str, str], toolkits: list[ToolkitInstall]) -> Optional[ToolkitInstall]:
    """The toolkit torch.utils.cpp_extension (and the builds of flash-attn and friends) would use:
    CUDA_HOME or CUDA_PATH, else the nvcc on PATH, else /usr/local/cuda."""
    for how in ("CUDA_HOME", "CUDA_PATH", "PATH"):
        found = next((t for t in toolkits if how in t.found_by), None)
        if found is not None and (how != "CUDA_PATH" or "CUDA_HOME" not in environ):
            return found
    return next((t for t in toolkits if t.default), None)


def pick(toolkits: list[ToolkitInstall], wanted: str) -> Optional[ToolkitInstall]:
    """The newest toolkit whose version is `wanted` or starts with it (12.6 -> 12.6.85)."""
    matching = [t for t in toolkits if t.version and (t.version == wanted or t.version.startswith(wanted + "."))]
    return matching[-1] if matching else None
