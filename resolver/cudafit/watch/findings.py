"""The warning signs of a run, judged from what was measured; a healthy run gets none.

The bounds below are this module's design, not facts about frameworks: they say where a sign is
clear enough to name, and each finding carries the measured figures so a reader can judge it.
A GPU counts as the run's where it did work (utilisation at least BUSY) or its memory grew by
MEMORY_GROWTH over its first reading; a recording that starts mid-run has no growth to see, but
its utilisation shows. The steady phase starts at a GPU's first busy sample (model loading and
compilation before it are not judged) and ends at its last."""

from __future__ import annotations

import re
from statistics import median, pstdev
from typing import Optional

from cudafit.watch.model import Finding, GpuSample, HostSample, OutputEvent, Watched
from cudafit.watch.owners import Held, held, others_only

BUSY = 10.0  # % utilisation: the GPU did work in this sample
SETTLED = 3  # busy samples in a row that start the steady phase
MEMORY_GROWTH = 256.0  # MiB over the first reading: the run allocated on this GPU
MIN_SAMPLES = 10  # fewer steady samples say nothing about a pattern
IDLE_MEDIAN = 50.0  # % median utilisation below which a GPU mostly waits
CPU_BUSY = 0.9  # cores: the run's processes keep at least one core busy (Python's main thread)
RUNNABLE = 0.8  # share of samples with a process running or waiting for a CPU: busy on a shared machine too
IOWAIT_HIGH = 0.2  # share of the machine's CPU time waiting on I/O
VRAM_EMPTY = 0.10  # share of memory: a peak below this leaves the GPU nearly empty
SATURATED = 90.0  # % median: a GPU this busy is not starved, whatever its memory
STALL = 10.0  # % utilisation: a sample in a stall
STALLS_MIN = 3  # stalls needed to call them a pattern
STALLED_SHARE = 0.2  # share of the steady phase in stalls that is worth saying even when irregular
REGULAR = 0.5  # coefficient of variation of the gaps between stalls below which they are periodic
OTHERS_SHARE = 0.10  # share of a GPU's memory other processes held that is worth naming beside an out-of-memory


def judge(w: Watched, bf16_gpus: frozenset[int] = frozenset(), cause: Optional[str] = None) -> list[Finding]:
    """Every finding, errors first. `bf16_gpus`: the indexes of GPUs with bfloat16 in hardware
    (compute capability 8.0 and up), for the out-of-memory advice; `cause`: doctor's explanation
    of a GPU never used, where it has one."""
    # a GPU without readings (every field [N/A], as MIG slices report) says nothing either way
    by_gpu = {i: s for i, s in _series(w.gpus).items() if any(x.util is not None or x.mem_used is not None for x in s)}
    owners = held(w)
    if w.visible is not None:  # the others are other jobs' GPUs (CUDA_VISIBLE_DEVICES), unless the run's processes were on them
        shown = set(w.visible) | {i for i, h in owners.items() if h.mine}
        if by_gpu and not shown:
            return _failures(w.events, {}, {}, bf16_gpus) + [_hidden(w, sorted(by_gpu))]
        by_gpu = {i: s for i, s in by_gpu.items() if i in shown}
    others = others_only(owners)
    by_gpu = {i: s for i, s in by_gpu.items() if i not in others}  # other jobs' GPUs
    used = {i: s for i, s in by_gpu.items() if _used(s) or (i in owners and owners[i].mine)}
    out = _failures(w.events, by_gpu, used, bf16_gpus, owners)
    if not used:
        unused = _never_used(w, by_gpu, cause)
        return out + ([unused] if unused else [])
    for index, series in sorted(used.items()):
        steady = _steady(series)
        if len(steady) < MIN_SAMPLES:
            continue
        label = _label(w, index)
        out += _idle(label, index, steady, w.host, series)
        out += _empty_memory(label, index, series, steady, owners.get(index))
        out += _stalls(label, index, steady)
    order = {"error": 0, "warning": 1, "info": 2}
    return sorted(out, key=lambda f: order.get(f.severity, 3))


def used_gpus(w: Watched) -> list[int]:
    """The GPUs the run did work on, or allocated memory on."""
    return sorted(i for i, s in _series(w.gpus).items() if _used(s) and (w.visible is None or i in w.visible))


def _series(samples: tuple[GpuSample, ...]) -> dict[int, list[GpuSample]]:
    out: dict[int, list[GpuSample]] = {}
    for s in samples:
        out.setdefault(s.gpu, []).append(s)
    return out


def _used(series: list[GpuSample]) -> bool:
    if any((s.util or 0) >= BUSY for s in series):
        return True
    memory = [s.mem_used for s in series if s.mem_used is not None]
    return bool(memory) and max(memory) - memory[0] >= MEMORY_GROWTH


def _steady(series: list[GpuSample]) -> list[GpuSample]:
    """From the first of SETTLED busy samples in a row (a lone spike while a model loads is not the
    start) to the last busy one; on a GPU never busy whose memory grew (a run that holds memory and
    waits), from that growth to the end."""
    busy = [(s.util or 0) >= BUSY for s in series]
    if any(busy):
        first = next((i for i in range(len(busy)) if all(busy[i : i + SETTLED])), busy.index(True))
        last = len(busy) - 1 - busy[::-1].index(True)
        return series[first : last + 1]
    memory = [s.mem_used for s in series]
    base = next((m for m in memory if m is not None), None)
    grown = next((i for i, m in enumerate(memory) if m is not None and base is not None and m - base >= MEMORY_GROWTH), None)
    return series[grown:] if grown is not None else []


def _label(w: Watched, index: int) -> str:
    name = dict(w.gpu_names).get(index)
    return f"GPU {index}" + (f" ({name})" if name else "")


def _percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)

    return {"p10": at(0.10), "p50": round(median(ordered), 1), "p90": at(0.90)}


def _idle(label: str, index: int, steady: list[GpuSample], host: tuple[HostSample, ...], series: list[GpuSample]) -> list[Finding]:
    util = [s.util for s in steady if s.util is not None]
    if not util or median(util) >= IDLE_MEDIAN:
        return []
    evidence: dict[str, object] = {"gpu": index, "utilization": _percentiles(util), "samples": len(util)}
    whole = [s.util for s in series if s.util is not None]
    # the steady phase (from the first busy stretch to the last busy sample) is what is judged; a
    # run busy for a short stretch only says so, with the whole run's figure beside it
    phase = f" over its busy phase ({len(util)} of {len(whole)} samples; {median(whole):.0f}% over the whole run)" if len(whole) > len(util) else ""
    if phase:
        evidence["whole_run_utilization"] = _percentiles(whole)
    cores = [h.cpu_cores for h in host if h.cpu_cores is not None]
    waits = [h.iowait for h in host if h.iowait is not None]
    if cores:
        evidence["cpu_cores"] = _percentiles(cores)
    if waits:
        evidence["iowait"] = round(median(waits), 3)
    said = f"{label} was mostly idle: utilisation {median(util):.0f}% at the median (p90 {evidence['utilization']['p90']:.0f}%){phase}"  # type: ignore[index]
    advice = (
        "give the DataLoader worker processes (num_workers: a few per GPU, up to the CPU cores) with pin_memory=True and persistent_workers=True",
        "move the data to fast local storage, or cache decoded samples; prefetch the next batches",
        "profile one step (torch.profiler) to see where the time goes; many small kernels gain from larger batches, torch.compile or CUDA graphs",
    )
    runnable = sum(h.runnable > 0 for h in host) / len(host) if host else 0.0
    if cores:
        evidence["cpu_runnable_share"] = round(runnable, 3)
    if cores and (median(cores) >= CPU_BUSY or runnable >= RUNNABLE):
        said += f" while the run's processes kept the CPU busy ({median(cores):.1f} cores, runnable {runnable:.0%} of the time)"
        said += ": the CPU side starves it (the input pipeline, or Python launching many small kernels)"
    elif waits and median(waits) >= IOWAIT_HIGH:
        said += f" while the machine waited on I/O {median(waits):.0%} of the time: the data's storage starves it"
    elif cores:
        said += f", and the CPU was not busy either ({median(cores):.1f} cores): the run waits on something else"
        said += " (I/O, the network, synchronisation, many small kernels)"
    else:
        said += " (the CPU was not measured here)"
    return [Finding("WA001", "warning", said, evidence, advice)]


def _empty_memory(label: str, index: int, series: list[GpuSample], steady: list[GpuSample], owner: Optional[Held] = None) -> list[Finding]:
    totals = [s.mem_total for s in series if s.mem_total]
    used = [s.mem_used for s in series if s.mem_used is not None]
    util = [s.util for s in steady if s.util is not None]
    if not totals or not used or not util or median(util) >= SATURATED:
        return []
    own = owner is not None and owner.run_mib is not None and (owner.others_mib or 0) > 0  # others' memory would hide the run's
    peak, total = (owner.run_mib if own and owner is not None and owner.run_mib is not None else max(used)), max(totals)
    if peak >= VRAM_EMPTY * total:
        return []
    evidence: dict[str, object] = {"gpu": index, "memory_peak_mib": round(peak), "memory_total_mib": round(total), "utilization_p50": round(median(util), 1)}
    said = f"{label}'s memory stayed nearly empty: {peak / 1024:.1f} of {total / 1024:.1f} GiB at the peak ({peak / total:.0%})"
    if own and owner is not None:
        evidence["memory_of"] = "the run's processes"
        others_mib = owner.others_mib or 0.0
        evidence["others_memory_mib"] = round(others_mib)
        said = f"{label}'s memory stayed nearly empty of the run's: its processes held {peak / 1024:.1f} of {total / 1024:.1f} GiB at the peak"
        said += f" ({peak / total:.0%}; other processes {others_mib / 1024:.1f} GiB)"
    advice = (
        "raise the batch size (with the learning rate) until memory is well used",
        "check that the model and every batch are moved to the GPU (.to('cuda'))",
    )
    return [Finding("WA002", "warning", said, evidence, advice)]


def _stalls(label: str, index: int, steady: list[GpuSample]) -> list[Finding]:
    util = [s.util for s in steady if s.util is not None]
    if not util or median(util) < 60:
        return []
    low = [s.util is not None and s.util < STALL for s in steady]
    for i in range(1, len(low) - 1):  # one busy sample inside a stall does not end it
        low[i] = low[i] or (low[i - 1] and low[i + 1])
    runs: list[tuple[float, float]] = []  # (start, duration) of each stall
    start: Optional[float] = None
    for i in range(1, len(steady)):
        if low[i] and start is None:
            start = steady[i].t
        elif not low[i] and start is not None:
            runs.append((start, steady[i].t - start))
            start = None
    span = steady[-1].t - steady[0].t
    if len(runs) < STALLS_MIN or span <= 0:
        return []
    stalled = sum(d for _, d in runs)
    gaps = [b[0] - a[0] for a, b in zip(runs, runs[1:], strict=False)]
    regular = bool(gaps) and median(gaps) > 0 and pstdev(gaps) / (sum(gaps) / len(gaps)) <= REGULAR
    if not regular and stalled / span < STALLED_SHARE:
        return []
    evidence: dict[str, object] = {
        "gpu": index,
        "stalls": len(runs),
        "stall_seconds_p50": round(median(d for _, d in runs), 2),
        "stalled_share": round(stalled / span, 3),
        **({"period_seconds": round(median(gaps), 2)} if regular else {}),
    }
    said = f"{label} stalled {len(runs)} times, about {median(d for _, d in runs):.1f} s each ({stalled / span:.0%} of the run)"
    if regular:
        said += f", every {median(gaps):.0f} s or so: something periodic (a checkpoint, an evaluation, an epoch's new workers) stops the GPU"
    advice = (
        "save checkpoints asynchronously or less often; evaluate less often",
        "keep DataLoader workers across epochs (persistent_workers=True) and prefetch (prefetch_factor)",
        "look for host synchronisation in the step (.item(), .cpu(), printing tensors)",
    )
    return [Finding("WA003", "warning", said, evidence, advice)]


def _failures(
    events: tuple[OutputEvent, ...],
    by_gpu: dict[int, list[GpuSample]],
    used: dict[int, list[GpuSample]],
    bf16: frozenset[int],
    owners: Optional[dict[int, Held]] = None,
) -> list[Finding]:
    out = []
    oom = next((e for e in events if e.kind == "oom"), None)
    if oom is not None:
        evidence: dict[str, object] = {"line": oom.line}
        crowded = []  # where other processes held a share of the GPU the run ran out on
        for index, series in sorted((used or by_gpu).items()):
            peak = max((s.mem_used for s in series if s.mem_used is not None), default=None)
            total = max((s.mem_total for s in series if s.mem_total), default=None)
            if peak is not None:
                evidence[f"gpu{index}_memory_peak_mib"] = round(peak)
            if total:
                evidence[f"gpu{index}_memory_total_mib"] = round(total)
            owner = (owners or {}).get(index)
            if owner is not None and owner.others:
                evidence[f"gpu{index}_others_memory_mib"] = round(owner.others_mib) if owner.others_mib is not None else None
                evidence[f"gpu{index}_other_pids"] = list(owner.others)
                if total and owner.others_mib is not None and owner.others_mib >= OTHERS_SHARE * total:
                    pids = ", ".join(map(str, owner.others[:5])) + (" ..." if len(owner.others) > 5 else "")
                    share = f"{owner.others_mib / 1024:.1f} of GPU {index}'s {total / 1024:.1f} GiB"
                    crowded.append(f"other processes held {share} (PID {pids}): run where the GPU is free, or have them end")
        asked = _oom_figures(oom.line)
        evidence.update(asked)
        bf16_here = bool(by_gpu) and set(used or by_gpu) <= bf16
        advice = (*crowded, "halve the batch size, and keep the effective batch with gradient accumulation", *_oom_advice(oom.line, bf16_here))
        said = "the run ran out of GPU memory"
        if "asked_gib" in asked:
            said += f": it asked for {asked['asked_gib']} GiB more" + (
                f" with {asked['free_gib']} GiB of {asked['total_gib']} GiB free" if "free_gib" in asked and "total_gib" in asked else ""
            )
        peaks = [f"GPU {k[3:].split('_')[0]} {v / 1024:.1f} GiB" for k, v in evidence.items() if k.endswith("_memory_peak_mib") and isinstance(v, int)]
        if peaks:
            said += f" (sampled peak: {', '.join(peaks)})"
        out.append(Finding("WA004", "error", said, evidence, advice))
    words = {
        "no-kernel-image": "the framework build has no kernels for this GPU's architecture",
        "driver-too-old": "the NVIDIA driver is older than the framework build's CUDA needs",
        "nccl": "NCCL failed: a multi-GPU collective did not complete",
        "tf-gpu-libraries": "TensorFlow could not load CUDA libraries, and runs on the CPU",
    }
    for kind, said in words.items():
        event = next((e for e in events if e.kind == kind), None)
        if event is not None:
            hint: tuple[str, ...] = ("`cudafit doctor` names the build that runs here",) if kind != "nccl" else ("run with NCCL_DEBUG=INFO for the cause",)
            out.append(Finding("WA006", "error", said, {"line": event.line, "kind": kind}, hint))
    return out


# torch's message: "Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.11 GiB of which
# 1.20 GiB is free"; the unit is torch's own (MiB or GiB)
_TRIED = re.compile(r"Tried to allocate ([\d.]+) (MiB|GiB)")
_CAPACITY = re.compile(r"total capacity of ([\d.]+) (MiB|GiB) of which ([\d.]+) (MiB|GiB) is free")


def _oom_figures(line: str) -> dict[str, object]:
    """The memory the out-of-memory line itself states, in GiB: what was asked, what was free."""

    def gib(value: str, unit: str) -> float:
        return round(float(value) / (1024 if unit == "MiB" else 1), 2)

    out: dict[str, object] = {}
    tried = _TRIED.search(line)
    if tried:
        out["asked_gib"] = gib(*tried.groups())
    capacity = _CAPACITY.search(line)
    if capacity:
        out["total_gib"], out["free_gib"] = gib(capacity[1], capacity[2]), gib(capacity[3], capacity[4])
    return out


def _oom_advice(line: str, bf16: bool) -> tuple[str, ...]:
    """The remedies in the words of the framework that printed the line."""
    if "OOM when allocating tensor" in line:  # TensorFlow
        policy = "mixed_bfloat16" if bf16 else "mixed_float16"
        return (
            f"train in mixed precision: tf.keras.mixed_precision.set_global_policy('{policy}')",
            "let TensorFlow take memory as it needs it (tf.config.experimental.set_memory_growth) where other processes share the GPU",
        )
    if "RESOURCE_EXHAUSTED" in line:  # JAX (XLA)
        return (
            "train in mixed precision: " + ("bfloat16 parameters or activations" if bf16 else "float16 activations with loss scaling"),
            "rematerialise activations (jax.checkpoint) for deep models",
            "XLA takes 75 % of the GPU at start: XLA_PYTHON_CLIENT_MEM_FRACTION lowers it where other processes share the GPU",
        )
    precision = "bf16 autocast (torch.autocast('cuda', dtype=torch.bfloat16))" if bf16 else "fp16 autocast with a GradScaler"
    return (
        f"train in mixed precision: {precision}",
        "checkpoint activations (torch.utils.checkpoint) for deep models",
        "do not keep tensors that hold the graph (loss history: use loss.item()); free the cache between phases (torch.cuda.empty_cache())",
        "where the message shows much memory reserved but unallocated: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
    )


def _never_used(w: Watched, by_gpu: dict[int, list[GpuSample]], cause: Optional[str]) -> Optional[Finding]:
    """No GPU did work: said where the output tells why (a CPU-only build, no driver, JAX's CPU
    fallback: whatever the exit code and however short the run), or where GPUs were sampled long
    enough through a run that ended well."""
    told = [e for e in w.events if e.kind in ("cpu-only-build", "no-driver", "cuda-init", "jax-cpu-fallback", "tf-gpu-libraries", "driver-too-old", "no-gpu")]
    sampled = bool(by_gpu) and min(len(s) for s in by_gpu.values()) >= 3
    if not told and (not sampled or w.exit_code not in (0, None)):
        return None  # nothing to go on, too short a run, or a run that failed first (said above)
    evidence: dict[str, object] = {"gpus": sorted(by_gpu), "samples": len(w.gpus), "seconds": round(w.duration, 1)}
    said = "the run never used the GPU" + (": no GPU did work and no GPU's memory grew" if sampled else "")
    if told:
        evidence["line"] = told[0].line
        said += f"; the output says why: {told[0].line[:160]}"
    if cause:
        evidence["doctor"] = cause
        said += f"; doctor: {cause}"
    advice = ("`cudafit doctor` checks the environment's framework builds against this machine", "`cudafit resolve` names the builds that run here")
    return Finding("WA005", "warning", said, evidence, advice)


def _hidden(w: Watched, gpus: list[int]) -> Finding:
    """The machine has GPUs, and the run was started with CUDA_VISIBLE_DEVICES naming none of them."""
    evidence: dict[str, object] = {"gpus": gpus, "visible_gpus": []}
    said = "the run could use no GPU: its CUDA_VISIBLE_DEVICES names none of this machine's"
    advice = ("unset CUDA_VISIBLE_DEVICES, or list the GPUs to use (CUDA_VISIBLE_DEVICES=0)",)
    return Finding("WA005", "warning", said, evidence, advice)
