"""GPU samples through NVML, with NVIDIA's official Python bindings (nvidia-ml-py, module pynvml)
where they are installed: read in-process, no nvidia-smi needed. Units as NVML gives them: bytes
for memory, milliwatts for power, MHz for clocks, percent for utilisation."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Optional

from cudafit.watch.model import GpuSample, ProcessMemory
from cudafit.watch.owners import keep_peak

MIB = 1024 * 1024


def open_nvml() -> Optional[Any]:
    """The initialised bindings, or None where they are missing or NVML does not start."""
    try:
        import pynvml  # type: ignore[import-not-found]
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # NVMLError and its subclasses: no driver, no library
        return None
    return pynvml


def read(nvml: Any, handles: list[Any], t: float) -> list[GpuSample]:
    return [_sample(nvml, handle, index, t) for index, handle in enumerate(handles)]


def processes(nvml: Any, handles: list[Any], t: float) -> list[ProcessMemory]:
    """The compute processes on each GPU and their memory (None where NVML does not say)."""
    out = []
    for index, handle in enumerate(handles):
        try:
            listed = nvml.nvmlDeviceGetComputeRunningProcesses(handle)
        except Exception:  # NVMLError_NoPermission and kin, or bindings without it: not listed
            continue
        for process in listed or ():
            used = getattr(process, "usedGpuMemory", None)
            out.append(ProcessMemory(t, index, int(process.pid), used / MIB if isinstance(used, int) else None))
    return out


def _sample(nvml: Any, handle: Any, index: int, t: float) -> GpuSample:
    memory = _or_none(lambda: nvml.nvmlDeviceGetMemoryInfo(handle))
    return GpuSample(
        t,
        index,
        _or_none(lambda: float(nvml.nvmlDeviceGetUtilizationRates(handle).gpu)),
        memory.used / MIB if memory is not None else None,
        memory.total / MIB if memory is not None else None,
        _or_none(lambda: nvml.nvmlDeviceGetPowerUsage(handle) / 1000.0),
        _or_none(lambda: float(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM))),
    )


def _or_none(read_one: Callable[[], Any]) -> Any:
    try:
        return read_one()
    except Exception:  # NVMLError_NotSupported and kin: the reading does not exist on this GPU
        return None


class NvmlSampler:
    def __init__(self, nvml: Any, interval: float, clock: Callable[[], float] = time.monotonic, start: Optional[float] = None) -> None:
        self.samples: list[GpuSample] = []
        self.processes: dict[tuple[int, int], ProcessMemory] = {}  # each process's peak per GPU
        self.failure = ""
        self._nvml = nvml
        self._clock = clock
        self._start = clock() if start is None else start
        self._interval = interval
        count = nvml.nvmlDeviceGetCount()
        self._handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        self.names = {i: _name(nvml, h) for i, h in enumerate(self._handles)}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="cudafit-watch-nvml", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            t = self._clock() - self._start
            self.samples.extend(read(self._nvml, self._handles, t))
            keep_peak(self.processes, processes(self._nvml, self._handles, t))
            self._stop.wait(self._interval)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        try:
            self._nvml.nvmlShutdown()
        except Exception:  # shutting down twice or after a lost GPU: nothing left to do
            pass


def _name(nvml: Any, handle: Any) -> str:
    name = nvml.nvmlDeviceGetName(handle)
    return name.decode() if isinstance(name, bytes) else str(name)
