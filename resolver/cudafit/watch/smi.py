"""GPU samples from `nvidia-smi --query-gpu ... -lms N`: one process that prints a line per GPU per
interval, read as it prints (no process started per sample). A second stream,
`--query-compute-apps ... -lms N`, lists the processes on the GPUs with their memory, named by the
GPU's UUID: one `--query-gpu=index,uuid` first maps those to indexes."""

from __future__ import annotations

import csv
import math
import os
import subprocess
import threading
import time
from typing import Callable, Optional

from cudafit.watch.model import GpuSample, ProcessMemory
from cudafit.watch.owners import keep_peak

FIELDS = ("index", "name", "utilization.gpu", "memory.used", "memory.total", "power.draw", "clocks.sm")


def command(smi: str, interval: float) -> list[str]:
    return [smi, f"--query-gpu={','.join(FIELDS)}", "--format=csv,noheader,nounits", f"-lms={max(1, round(interval * 1000))}"]


APP_FIELDS = ("gpu_uuid", "pid", "used_memory")
# nvidia-smi in a session of its own: the Ctrl-C meant for the command does not stop the sampling of its end
_OWN_SESSION = os.name == "posix"


def apps_command(smi: str, interval: float) -> list[str]:
    return [smi, f"--query-compute-apps={','.join(APP_FIELDS)}", "--format=csv,noheader,nounits", f"-lms={max(1, round(interval * 1000))}"]


def parse_uuids(text: str) -> dict[str, int]:
    """`index, uuid` lines: each GPU's UUID to its index."""
    out = {}
    for row in csv.reader(text.splitlines(), skipinitialspace=True):
        if len(row) == 2 and row[0].strip().isdigit() and row[1].strip().startswith("GPU-"):
            out[row[1].strip()] = int(row[0])
    return out


def parse_app_line(line: str, t: float, uuids: dict[str, int]) -> Optional[ProcessMemory]:
    """One process line (`GPU-..., 4242, 10240`), or None for one that is not (a message, "No
    running processes found", a GPU not mapped)."""
    row = next(csv.reader([line], skipinitialspace=True), [])
    if len(row) != len(APP_FIELDS) or row[0].strip() not in uuids or not row[1].strip().isdigit():
        return None
    return ProcessMemory(t, uuids[row[0].strip()], int(row[1]), _number(row[2]))


def parse_line(line: str, t: float) -> Optional[tuple[GpuSample, str]]:
    """One line of the query (a sample and the GPU's name), or None for a line that is not one
    (a blank line, a message). nvidia-smi writes "[N/A]" or "[Not Supported]" where a GPU has no
    such reading (power on some boards): those are None."""
    row = next(csv.reader([line], skipinitialspace=True), [])
    if len(row) != len(FIELDS):
        return None
    if not (row[0].strip().isascii() and row[0].strip().isdigit()) or len(row[0].strip()) > 4:
        return None  # a GPU index is a small number; anything else is not nvidia-smi's line
    util, used, total, power, clock = (_number(v) for v in row[2:])
    if util is not None and util > 100:
        util = None  # a percentage
    used, total = (m if m is not None and m < _MEMORY_LIMIT_MIB else None for m in (used, total))
    return GpuSample(t, int(row[0]), util, used, total, power, clock), row[1].strip()


_MEMORY_LIMIT_MIB = 2**24  # 16 TiB: no GPU's memory; a larger figure is not a reading


def _number(text: str) -> Optional[float]:
    """A reading: a finite, non-negative number; None for "[N/A]" and anything that is not one."""
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


class SmiSampler:
    """Reads the stream in a thread until stopped; samples and names are kept in order."""

    def __init__(self, smi: str, interval: float, clock: Callable[[], float] = time.monotonic, start: Optional[float] = None) -> None:
        self.samples: list[GpuSample] = []
        self.processes: dict[tuple[int, int], ProcessMemory] = {}  # each process's peak per GPU
        self.names: dict[int, str] = {}
        self.failure = ""
        self.said = ""  # the first line of the stream that is no sample
        self._clock = clock
        self._start = clock() if start is None else start
        self._smi, self._interval = smi, interval
        self._proc = subprocess.Popen(
            command(smi, interval), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace", bufsize=1, start_new_session=_OWN_SESSION
        )
        self._apps: Optional[subprocess.Popen[str]] = None
        self._query: Optional[subprocess.Popen[str]] = None
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._read, name="cudafit-watch-smi", daemon=True)
        self._thread.start()
        self._apps_thread = threading.Thread(target=self._read_apps, name="cudafit-watch-smi-apps", daemon=True)
        self._apps_thread.start()

    def _read_apps(self) -> None:
        """The processes on the GPUs, where nvidia-smi lists them (in a thread: the command and the
        GPU stream are not held up by the UUID query)."""
        try:
            self._query = subprocess.Popen(
                [self._smi, "--query-gpu=index,uuid", "--format=csv,noheader"],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                errors="replace",
                start_new_session=_OWN_SESSION,
            )
            mapped, _err = self._query.communicate(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return
        uuids = parse_uuids(mapped or "")
        if not uuids or self._stopping.is_set():
            return
        try:
            self._apps = subprocess.Popen(
                apps_command(self._smi, self._interval),
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
                errors="replace",
                bufsize=1,
                start_new_session=_OWN_SESSION,
            )
        except OSError:
            return
        if self._stopping.is_set():  # stopped while it started
            self._apps.terminate()
        assert self._apps.stdout is not None
        for line in self._apps.stdout:
            process = parse_app_line(line, self._clock() - self._start, uuids)
            if process is not None:
                keep_peak(self.processes, (process,))

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            parsed = parse_line(line, self._clock() - self._start)
            if parsed is not None:
                sample, name = parsed
                self.samples.append(sample)
                self.names.setdefault(sample.gpu, name)
            elif not self.said and line.strip():
                self.said = line.strip()[:200]  # nvidia-smi's own words, where it fails (exit 9: no driver)

    def stop(self) -> None:
        self._stopping.set()
        for helper in (self._query, self._apps):  # ended first: the thread reading them then ends too
            if helper is not None and helper.poll() is None:
                helper.terminate()
                try:
                    helper.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    helper.kill()
        self._apps_thread.join(timeout=1)
        ended = self._proc.poll()  # before the run did: the samples stop where it stopped
        if ended is None:
            self._proc.terminate()
        try:
            _out, err = self._proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            _out, err = self._proc.communicate()
        self._thread.join(timeout=5)
        # nvidia-smi says why on stdout (exit 9: it cannot talk to the driver), or on stderr
        first = (err or "").strip().splitlines() or ([self.said] if self.said else [])
        why = f": {first[0]}" if first else ""
        if not self.samples and self._proc.returncode not in (0, None, -15):
            self.failure = f"nvidia-smi exited {self._proc.returncode}{why}"
        elif ended is not None and self.samples:
            last = max(s.t for s in self.samples)
            self.failure = f"nvidia-smi stopped {last:.1f} s into the run (exit {ended}{why}): the rest of the run was not sampled"
