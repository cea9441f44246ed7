"""Whose memory a GPU held: the run's processes (its tree, as /proc showed it) or other jobs'. Only
where the driver listed the run's own PIDs somewhere is the listing trusted (inside a container the
driver reports the host's PIDs, which match none of the run's there: then nothing is told apart).
Each process counts with its own peak; a sum of peaks may exceed what was held at one moment, so
a run's memory read here is never less than it was."""

from __future__ import annotations

from typing import NamedTuple, Optional

from cudafit.watch.model import Watched


class Held(NamedTuple):
    run_mib: Optional[float]  # the run's processes' peaks, summed; None: none of them listed here
    others_mib: float  # other processes' peaks, summed
    others: tuple[int, ...]  # their PIDs


def held(w: Watched) -> dict[int, Held]:
    """Per GPU with processes listed, where the listing names any of the run's processes."""
    mine = set(w.tree) | ({w.pid} if w.pid is not None else set())
    if not any(p.pid in mine for p in w.processes):
        return {}
    peaks: dict[tuple[int, int], float] = {}
    for p in w.processes:
        key = (p.gpu, p.pid)
        peaks[key] = max(peaks.get(key, 0.0), p.mib or 0.0)
    out: dict[int, Held] = {}
    for gpu in sorted({g for g, _pid in peaks}):
        run = [mib for (g, pid), mib in peaks.items() if g == gpu and pid in mine]
        others = sorted(pid for (g, pid) in peaks if g == gpu and pid not in mine)
        out[gpu] = Held(sum(run) if run else None, sum(peaks[(gpu, pid)] for pid in others), tuple(others))
    return out


def others_only(w: Watched) -> set[int]:
    """The GPUs where only other jobs' processes were listed: not the run's, however busy."""
    return {gpu for gpu, h in held(w).items() if h.run_mib is None and h.others}
