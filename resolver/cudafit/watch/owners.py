"""Whose memory a GPU held: the run's processes (its tree, as /proc showed it) or other jobs'. Only
where the driver listed the run's own PIDs somewhere is the listing trusted (inside a container the
driver reports the host's PIDs, which match none of the run's there: then nothing is told apart),
and only where /proc showed the run's tree (elsewhere a worker's PID is not known to be the run's).
Each process counts with its own peak; a sum of peaks may exceed what was held at one moment, so
a run's memory read here is never less than it was. A memory the driver does not give ("[N/A]" on
Windows) stays unknown."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple, Optional

from cudafit.watch.model import ProcessMemory, Watched


class Held(NamedTuple):
    mine: bool  # the run's processes were listed on this GPU
    run_mib: Optional[float]  # their peaks, summed; None: not listed, or memory not given
    others: tuple[int, ...]  # the other processes' PIDs
    others_mib: Optional[float]  # their peaks, summed; None: none listed, or memory not given


def keep_peak(peaks: dict[tuple[int, int], ProcessMemory], readings: Iterable[ProcessMemory]) -> None:
    """Each process's highest reading per GPU: what a run leaves is bounded by its processes, not
    by its length."""
    for reading in readings:
        key = (reading.gpu, reading.pid)
        before = peaks.get(key)
        if before is None or (reading.mib is not None and (before.mib is None or reading.mib > before.mib)):
            peaks[key] = reading


def held(w: Watched) -> dict[int, Held]:
    """Per GPU with processes listed, where the listing names any of the run's processes."""
    mine = set(w.tree)
    if not mine or not any(p.pid in mine for p in w.processes):
        return {}
    peaks: dict[tuple[int, int], Optional[float]] = {}
    for p in w.processes:
        key = (p.gpu, p.pid)
        before = peaks.get(key)
        peaks[key] = p.mib if before is None else before if p.mib is None else max(before, p.mib)
    out: dict[int, Held] = {}
    for gpu in sorted({g for g, _pid in peaks}):
        run = [mib for (g, pid), mib in peaks.items() if g == gpu and pid in mine]
        others = sorted(pid for (g, pid) in peaks if g == gpu and pid not in mine)
        other_mib = [peaks[(gpu, pid)] for pid in others]
        out[gpu] = Held(bool(run), _sum(run), tuple(others), _sum(other_mib))
    return out


def _sum(values: list[Optional[float]]) -> Optional[float]:
    return sum(v for v in values if v is not None) if values and any(v is not None for v in values) else None


def others_only(owners: dict[int, Held]) -> set[int]:
    """The GPUs where only other jobs' processes were listed: not the run's, however busy."""
    return {gpu for gpu, h in owners.items() if not h.mine and h.others}
