"""The records doctor works on: what an environment holds, and what is wrong with it."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple, Optional

from cudafit.records import CC


class Distribution(NamedTuple):
    name: str  # canonical
    version: str
    path: Path  # its .dist-info folder
    requires: tuple[str, ...] = ()  # Requires-Dist, as written
    tags: tuple[str, ...] = ()  # the WHEEL file's Tag lines (cp312-cp312-manylinux_2_17_x86_64)
    extras: tuple[str, ...] = ()  # Provides-Extra


class InstalledBuild(NamedTuple):
    """A framework build as installed, read from its own files."""

    family: str  # torch | tensorflow | jax | onnxruntime-gpu
    dist: str  # the distribution that carries it (torch, tensorflow, jaxlib, onnxruntime-gpu)
    version: str  # as installed, local tag included (2.5.1+cu124)
    kind: str  # cuda | cpu | rocm | unknown
    cuda: Optional[str] = None  # "12.4"; a major alone ("12") where only that is known
    cudnn: Optional[str] = None
    sass: Optional[frozenset[CC]] = None  # None: not read from the installed files
    ptx: Optional[frozenset[CC]] = None
    read_from: str = ""  # the file that says which build it is
    libraries: tuple[Path, ...] = ()  # its CUDA libraries, for the loader check
    extras_installed: tuple[str, ...] = ()  # extras whose requirements are all present (and-cuda)
    built_for: str = ""  # a library built against torch: the torch its own build record names

    @property
    def label(self) -> str:
        return f"{self.dist} {self.version}"


class Environment(NamedTuple):
    prefix: Path
    python: Optional[str]  # "3.12"
    interpreter: Optional[str]
    site_packages: tuple[Path, ...]
    distributions: dict[str, Distribution]
    builds: tuple[InstalledBuild, ...]
    problems: tuple[str, ...] = ()  # what could not be read, one sentence each
    libraries: tuple[InstalledBuild, ...] = ()  # libraries built against torch (xformers, vllm, flash-attn, torchao)


class Finding(NamedTuple):
    code: str
    severity: str  # error | warning
    message: str
    fix: str = ""
    commands: tuple[str, ...] = ()
