"""GPU samples from `nvidia-smi --query-gpu ... -lms N`: one process that prints a line per GPU per
interval, read as it prints (no process started per sample)."""

from __future__ import annotations

import csv
import subprocess
import threading
import time
from typing import Callable, Optional

from cudafit.watch.model import GpuSample

FIELDS = ("index", "name", "utilization.gpu", "memory.used", "memory.total", "power.draw", "clocks.sm")


def command(smi: str, interval: float) -> list[str]:
    return [smi, f"--query-gpu={','.join(FIELDS)}", "--format=csv,noheader,nounits", f"-lms={max(1, round(interval * 1000))}"]


def parse_line(line: str, t: float) -> Optional[tuple[GpuSample, str]]:
    """One line of the query (a sample and the GPU's name), or None for a line that is not one
    (a blank line, a message). nvidia-smi writes "[N/A]" or "[Not Supported]" where a GPU has no
    such reading (power on some boards): those are None."""
    row = next(csv.reader([line], skipinitialspace=True), [])
    if len(row) != len(FIELDS):
        return None
    try:
        index = int(row[0])
    except ValueError:
        return None
    util, used, total, power, clock = (_number(v) for v in row[2:])
    return GpuSample(t, index, util, used, total, power, clock), row[1].strip()


def _number(text: str) -> Optional[float]:
    try:
        return float(text.strip())
    except ValueError:
        return None


class SmiSampler:
    """Reads the stream in a thread until stopped; samples and names are kept in order."""

    def __init__(self, smi: str, interval: float, clock: Callable[[], float] = time.monotonic, start: Optional[float] = None) -> None:
        self.samples: list[GpuSample] = []
        self.names: dict[int, str] = {}
        self.failure = ""
        self._clock = clock
        self._start = clock() if start is None else start
        self._proc = subprocess.Popen(command(smi, interval), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
        self._thread = threading.Thread(target=self._read, name="cudafit-watch-smi", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            parsed = parse_line(line, self._clock() - self._start)
            if parsed is not None:
                sample, name = parsed
                self.samples.append(sample)
                self.names.setdefault(sample.gpu, name)

    def stop(self) -> None:
        if self._proc.poll() is None:
            self._proc.terminate()
        try:
            _out, err = self._proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            _out, err = self._proc.communicate()
        self._thread.join(timeout=5)
        if not self.samples and self._proc.returncode not in (0, None, -15):
            first = (err or "").strip().splitlines()
            self.failure = f"nvidia-smi exited {self._proc.returncode}" + (f": {first[0]}" if first else "")
