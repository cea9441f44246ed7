"""The Node record every inventory reader returns, the options the readers share, and the checks
they make alike (a driver version read as `--driver` is, the arch names they all accept)."""

from __future__ import annotations

from typing import NamedTuple, Optional

from cudafit.errors import InputError
from cudafit.records import GpuModel, Machine

ARCH = {"amd64": "x86_64", "x86_64": "x86_64", "arm64": "aarch64", "aarch64": "aarch64"}
NO_GPU = "no NVIDIA GPU on the node"


def driver_problem(text: str, what: str) -> Optional[str]:
    """Why `text` (from `what`) is no NVIDIA driver version, or None: read as `--driver` is."""
    from cudafit.machine_input import parse_driver

    try:
        if parse_driver(text) is not None:
            return None
    except InputError:
        pass
    return f"{what} {text!r} is not an NVIDIA driver version (like 535.104.05)"


class Node(NamedTuple):
    name: str
    pool: str = "default"
    nodes: int = 1  # how many nodes this entry stands for
    os: str = "linux"
    arch: str = "x86_64"
    driver: Optional[str] = None  # None: no NVIDIA driver on the node
    gpus: tuple[str, ...] = ()  # GPU names as nvidia-smi (or GFD, dashes for spaces) prints them
    compute_capabilities: tuple[str, ...] = ()  # where no name is known
    problem: Optional[str] = None  # why the node cannot be read as a machine
    machine: Optional[Machine] = None  # already described and checked (a pyproject target)
    readings: tuple[str, ...] = ()  # how GRES types no --gres-map names were read ("GRES type 'h100' read as ...")


class Options(NamedTuple):
    pool_label: Optional[str] = None
    gres_map: dict[str, str] = {}
    driver_feature: Optional[str] = None
    default_driver: Optional[str] = None
    gpu_table: dict[str, GpuModel] = {}  # reads GRES types that name a GPU family; empty: only gres_map


DEFAULTS = Options()
