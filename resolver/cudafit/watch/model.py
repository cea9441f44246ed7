"""The records a watched run leaves: samples, output events, findings."""

from __future__ import annotations

from typing import NamedTuple, Optional


class GpuSample(NamedTuple):
    t: float  # seconds since the watch began (the sampler's clock)
    gpu: int  # its index, as nvidia-smi and NVML number them
    util: Optional[float]  # GPU utilisation, %
    mem_used: Optional[float]  # MiB
    mem_total: Optional[float]  # MiB
    power: Optional[float] = None  # W
    sm_clock: Optional[float] = None  # MHz


class ProcessMemory(NamedTuple):
    """A process's memory on a GPU at one reading (NVML's compute processes, nvidia-smi's
    --query-compute-apps): with the run's process tree it tells the run's GPUs and memory from other
    jobs' on a shared GPU."""

    t: float
    gpu: int
    pid: int  # as the driver sees it: the host's PID (inside a container it matches no PID there)
    mib: Optional[float]  # None: the driver does not say (Windows WDDM, a process without rights)


class HostSample(NamedTuple):
    t: float
    cpu_cores: Optional[float]  # the process tree's CPU use since the last sample, in cores (1.0: one core busy)
    iowait: Optional[float]  # the share of the machine's CPU time spent waiting on I/O since the last sample
    processes: int = 0  # processes in the tree
    runnable: int = 0  # of them, running or waiting for a CPU (state R): busy even where the CPU is shared


class OutputEvent(NamedTuple):
    kind: str  # output.KINDS
    line: str  # the line as printed (cut at output.LINE_LIMIT characters)
    stream: str  # stdout | stderr
    t: float


class Finding(NamedTuple):
    code: str  # WA001 ...
    severity: str  # error | warning | info
    message: str
    evidence: dict[str, object]  # the measured figures it rests on
    advice: tuple[str, ...] = ()


class Watched(NamedTuple):
    """What one watch measured."""

    command: tuple[str, ...]
    pid: Optional[int]
    exit_code: Optional[int]  # None: attached to a process that is not ours
    duration: float  # seconds
    gpus: tuple[GpuSample, ...]
    host: tuple[HostSample, ...]
    events: tuple[OutputEvent, ...]
    gpu_source: str  # nvml | nvidia-smi | none
    gpu_names: tuple[tuple[int, str], ...] = ()
    interval: float = 1.0
    notes: tuple[str, ...] = ()  # what could not be sampled, and why
    open_line: bool = False  # the command's stdout ended without a newline: a report after it starts one
    visible: Optional[tuple[int, ...]] = None  # the GPUs the run can use (CUDA_VISIBLE_DEVICES); None: every one
    processes: tuple[ProcessMemory, ...] = ()  # every process on the GPUs, at each reading that listed them
    tree: tuple[int, ...] = ()  # every PID seen in the run's process tree
