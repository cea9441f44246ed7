"""The GPUs a run can use, from the CUDA_VISIBLE_DEVICES it runs with: on a shared server the other
GPUs are other people's jobs, and their idle phases are no sign about this run.

CUDA numbers the devices it lists in its own order: fastest first, ties by PCI bus, unless
CUDA_DEVICE_ORDER=PCI_BUS_ID. nvidia-smi and NVML number them by PCI bus. The two agree where
every GPU is the same model, or where the order is PCI_BUS_ID; elsewhere an index names no GPU
here for sure, and every GPU stays in. CUDA reads the list up to its first entry that is not a
device (`0,2,-1,1` shows 0 and 2); UUIDs and MIG instances are not mapped to indexes here, and
leave every GPU in."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple, Optional

DEVICE_VARIABLES = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER")


class Visible(NamedTuple):
    gpus: Optional[frozenset[int]]  # None: every GPU may be the run's
    said: str  # the variable as the run had it, for the report ("" where unset)


def visible_gpus(environ: Mapping[str, str], names: Mapping[int, str]) -> Visible:
    if "CUDA_VISIBLE_DEVICES" not in environ:
        return Visible(None, "")
    value = environ["CUDA_VISIBLE_DEVICES"]
    said = f"CUDA_VISIBLE_DEVICES={value}"
    indexes: list[int] = []
    for entry in (e.strip() for e in value.split(",")):
        if not (entry.isascii() and entry.isdigit()):
            if entry.upper().startswith(("GPU-", "MIG-")):
                return Visible(None, said)  # a UUID: not mapped to an index here
            break  # CUDA stops at the first entry that is no device
        index = int(entry)
        if names and index not in names:
            break  # no such device: CUDA stops there too
        indexes.append(index)
    same_order = environ.get("CUDA_DEVICE_ORDER", "").strip().upper() == "PCI_BUS_ID" or len(set(names.values())) <= 1
    if indexes and not same_order:
        return Visible(None, said)  # CUDA's order is not nvidia-smi's here: an index names no GPU for sure
    return Visible(frozenset(indexes), said)


def run_environs(environs: Mapping[int, Mapping[str, str]]) -> list[dict[str, str]]:
    """The distinct device variables the run's processes had where they set CUDA_VISIBLE_DEVICES (a
    shell without it, the Python under it with it; one worker per GPU, each its own), `[{}]` where
    none did, `[]` where none could be read."""
    if not environs:
        return []
    said = sorted({tuple(sorted(e.items())) for e in environs.values() if "CUDA_VISIBLE_DEVICES" in e})
    return [dict(items) for items in said] or [{}]


def union(environs: list[dict[str, str]], names: Mapping[int, str]) -> Visible:
    """The GPUs any of the run's processes could use: None where one of them could use every GPU,
    or its list names no GPU here for sure."""
    found = [visible_gpus(e, names) for e in environs]
    said = "; ".join(v.said for v in found if v.said)
    if not found or any(v.gpus is None for v in found):
        return Visible(None, said)
    return Visible(frozenset().union(*(v.gpus for v in found if v.gpus is not None)), said)


def environ_of(pid: int, proc_root: Path = Path("/proc")) -> Optional[dict[str, str]]:
    """A running process's environment as it started (/proc/PID/environ), or None where it cannot
    be read (another user's process, no /proc)."""
    try:
        raw = (proc_root / str(pid) / "environ").read_bytes()
    except OSError:
        return None
    if not raw:
        return None  # a process that has ended (a zombie) shows none: not an empty environment
    out: dict[str, str] = {}
    for item in raw.split(b"\0"):
        name, sep, value = item.partition(b"=")
        if sep and name:
            out[name.decode(errors="replace")] = value.decode(errors="replace")
    return out
