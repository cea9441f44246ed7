"""The process tree's CPU use and the machine's I/O wait, from Linux's /proc (where there is none,
as on macOS and Windows, they are not measured and findings say so)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

from cudafit.visible_devices import DEVICE_VARIABLES, environ_of
from cudafit.watch.model import HostSample


def tree(pid: int, root: Path) -> list[int]:
    """`pid` and its descendants: from each thread's children list where the kernel keeps one
    (/proc/PID/task/TID/children, Linux 3.5 and later with CONFIG_PROC_CHILDREN; the cost is the
    tree's, not the machine's), else from every process's parent field (one pass over /proc)."""
    found = _tree_by_children(pid, root)
    return found if found is not None else _tree_by_parents(pid, root)


def _tree_by_children(pid: int, root: Path) -> Optional[list[int]]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            tasks = os.listdir(root / str(p) / "task")
        except OSError:
            if p == pid:
                return None  # no task lists here (or the process is gone): the parents' pass says
            continue  # a descendant that ended since its parent listed it
        if p == pid and not (root / str(p) / "task" / str(p) / "children").exists():
            return None  # no children lists in this kernel
        out.append(p)
        for task in tasks:
            try:
                todo.extend(int(c) for c in (root / str(p) / "task" / task / "children").read_text().split())
            except (OSError, ValueError):
                continue
    return out


def _tree_by_parents(pid: int, root: Path) -> list[int]:
    children: dict[int, list[int]] = {}
    try:
        entries = [e for e in os.listdir(root) if e.isdigit()]
    except OSError:
        return []
    for entry in entries:
        stat = _stat_fields(root / entry / "stat")
        if stat is not None:
            children.setdefault(int(stat[1]), []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, ()))
    return out


def _stat_fields(path: Path) -> Optional[list[str]]:
    """The fields after the command name of /proc/PID/stat (state first; its name may hold spaces
    and parentheses, so the split is at the last ')')."""
    try:
        text = path.read_text()
    except OSError:  # the process ended between listing and reading
        return None
    _, sep, rest = text.rpartition(")")
    return rest.split() if sep else None


def cpu_ticks(pids: list[int], root: Path) -> tuple[int, int]:
    """User and system time of the processes and of their children they have waited for, in clock
    ticks (stat's fields 14-17: short-lived workers count once reaped), and how many of them are
    running or runnable now (state R)."""
    total = runnable = 0
    for pid in pids:
        fields = _stat_fields(root / str(pid) / "stat")
        if fields is not None and len(fields) > 14:
            total += sum(int(v) for v in fields[11:15])
            runnable += fields[0] == "R"
    return total, runnable


def machine_ticks(root: Path) -> Optional[tuple[int, int]]:
    """(all CPU time, I/O wait) of the machine, in ticks, from /proc/stat's first line."""
    try:
        with open(root / "stat") as f:
            first = f.readline().split()
    except OSError:
        return None
    if len(first) < 6 or first[0] != "cpu":
        return None
    values = [int(v) for v in first[1:]]
    return sum(values[:8]), values[4]  # user nice system idle iowait irq softirq steal (guest is inside user)


class HostSampler:
    def __init__(self, pid: int, root: Path = Path("/proc")) -> None:
        self.pid = pid
        self.root = root
        self.available = (root / "stat").is_file()
        self._hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        self._last: Optional[tuple[float, int, Optional[tuple[int, int]]]] = None
        self.seen: set[int] = {pid}  # every PID of the tree at any sample: the run's processes on the GPUs
        # each tree process's CUDA device variables, as last read while it ran: `env CUDA_VISIBLE_DEVICES=1
        # python ...` execs in the same process, and a shell that sets it shows them in its child
        self.environs: dict[int, dict[str, str]] = {}

    def sample(self, t: float) -> Optional[HostSample]:
        """CPU use and I/O wait since the previous call; None on the first call (nothing to compare)."""
        if not self.available:
            return None
        pids = tree(self.pid, self.root)
        self.seen.update(pids)
        for pid in pids:
            environ = environ_of(pid, self.root)
            if environ is not None:
                self.environs[pid] = {k: v for k, v in environ.items() if k in DEVICE_VARIABLES}
        ticks, runnable = cpu_ticks(pids, self.root)
        now = (t, ticks, machine_ticks(self.root))
        last, self._last = self._last, now
        if last is None or now[0] <= last[0]:
            return None
        cores = (now[1] - last[1]) / self._hz / (now[0] - last[0])
        iowait = None
        if now[2] is not None and last[2] is not None and now[2][0] > last[2][0]:
            iowait = (now[2][1] - last[2][1]) / (now[2][0] - last[2][0])
        return HostSample(t, max(cores, 0.0), iowait, len(pids), runnable)
