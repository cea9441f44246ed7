"""A watched run worded: the summary on stderr and the JSON object (the CLI contract)."""

from __future__ import annotations

from statistics import median
from typing import Optional

from cudafit.watch.model import Finding, GpuSample, Watched
from cudafit.watch.owners import held

SCHEMA_VERSION = 1


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def gpu_rows(w: Watched) -> list[dict]:
    by: dict[int, list[GpuSample]] = {}
    for s in w.gpus:
        if w.visible is None or s.gpu in w.visible:  # another job's GPU is not this run's (a note says so)
            by.setdefault(s.gpu, []).append(s)
    names = dict(w.gpu_names)
    owners = held(w)
    rows = []
    for index, series in sorted(by.items()):
        util = [s.util for s in series if s.util is not None]
        used = [s.mem_used for s in series if s.mem_used is not None]
        total = [s.mem_total for s in series if s.mem_total]
        power = [s.power for s in series if s.power is not None]
        rows.append(
            {
                "index": index,
                "name": names.get(index),
                "samples": len(series),
                "utilization": {"p10": _pct(util, 0.1), "p50": median(util), "p90": _pct(util, 0.9)} if util else None,
                "memory_peak_mib": round(max(used)) if used else None,
                "memory_total_mib": round(max(total)) if total else None,
                "power_w_p50": round(median(power), 1) if power else None,
                # whose memory, where the driver listed the run's processes (null: not told)
                "run_memory_peak_mib": _round(owners[index].run_mib) if index in owners else None,
                "other_pids": list(owners[index].others) if index in owners else None,
            }
        )
    return rows


def _round(value: Optional[float]) -> Optional[int]:
    return round(value) if value is not None else None


def host_summary(w: Watched) -> Optional[dict]:
    cores = [h.cpu_cores for h in w.host if h.cpu_cores is not None]
    waits = [h.iowait for h in w.host if h.iowait is not None]
    if not cores:
        return None
    return {
        "samples": len(cores),
        "cpu_cores": {"p50": round(median(cores), 2), "p90": round(_pct(cores, 0.9), 2)},
        "iowait_p50": round(median(waits), 3) if waits else None,
    }


def as_json(w: Watched, findings: list[Finding]) -> dict:
    return {
        "schema_version": SCHEMA_VERSION,
        "command": list(w.command),
        "pid": w.pid,
        "exit_code": w.exit_code,
        "duration_s": round(w.duration, 2),
        "interval_s": w.interval,
        "gpu_source": w.gpu_source,
        "gpus": gpu_rows(w),
        "visible_gpus": list(w.visible) if w.visible is not None else None,
        "host": host_summary(w),
        "events": [{"kind": e.kind, "line": e.line, "stream": e.stream, "t": round(e.t, 2)} for e in w.events],
        "findings": [{"code": f.code, "severity": f.severity, "message": f.message, "evidence": f.evidence, "advice": list(f.advice)} for f in findings],
        "notes": list(w.notes),
    }


def text(w: Watched, findings: list[Finding]) -> str:
    ended = f"exit {w.exit_code}" if w.exit_code is not None else f"process {w.pid} followed"
    lines = [f"cudafit watch: {w.duration:.1f} s, {ended}; GPUs sampled through {w.gpu_source}"]
    rows = gpu_rows(w)
    if rows:
        lines.append("  GPU  util p10/p50/p90   memory peak / total   power p50  name")
        for r in rows:
            u = r["utilization"]
            util = f"{u['p10']:>3.0f}/{u['p50']:>3.0f}/{u['p90']:>3.0f} %" if u else "      ?      "
            peak = f"{r['memory_peak_mib'] / 1024:.1f}" if r["memory_peak_mib"] is not None else "?"
            total = f"{r['memory_total_mib'] / 1024:.1f} GiB" if r["memory_total_mib"] else "? GiB"
            power = f"{r['power_w_p50']:.0f} W" if r["power_w_p50"] is not None else "?"
            lines.append(f"  {r['index']:>3}  {util:<17} {peak:>6} / {total:<12} {power:>9}  {r['name'] or ''}".rstrip())
    host = host_summary(w)
    if host:
        wait = f", I/O wait {host['iowait_p50']:.0%}" if host["iowait_p50"] is not None else ""
        lines.append(f"  CPU: {host['cpu_cores']['p50']:.1f} cores at the median (p90 {host['cpu_cores']['p90']:.1f}){wait}")
    for index, owner in sorted(held(w).items()):
        if owner.others and (w.visible is None or index in w.visible or owner.mine):
            pids = ", ".join(map(str, owner.others[:5])) + (" ..." if len(owner.others) > 5 else "")
            memory = f"{owner.others_mib / 1024:.1f} GiB at their peaks" if owner.others_mib is not None else "memory not given"
            whose, judged = ("other processes too", "") if owner.mine else ("only other processes", ", not judged")
            lines.append(f"  GPU {index}: {whose} (PID {pids}; {memory}){judged}")
    for note in w.notes:
        lines.append(f"  note: {note}")
    if not findings:
        # nothing sampled from a GPU: say what the verdict rests on
        lines.append("no warning signs" if w.gpu_source != "none" else "no warning signs in the output and the CPU (no GPU was sampled)")
    for f in findings:
        lines.append(f"{f.code} {f.severity}: {f.message}")
        lines += [f"  - {a}" for a in f.advice]
    return "\n".join(lines) + "\n"
