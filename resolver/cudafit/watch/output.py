"""The command's output, passed through untouched as it arrives, and scanned for the lines that
frameworks print when a run fails or falls back to the CPU (wordings from real logs:
tests/fixtures/watch/log-*.txt)."""

from __future__ import annotations

import os
import re
from typing import BinaryIO, Callable

from cudafit.watch.model import OutputEvent

LINE_LIMIT = 300  # characters of a line kept as evidence
_BUFFER = 16384  # a longer line (a progress bar without newlines) is scanned in pieces
_PER_KIND = 5  # events kept per kind: the first ones say it; the rest would only grow memory

# kind -> the pattern of its line; checked only on lines holding the cheap `_HINTS` words
PATTERNS = {
    "oom": re.compile(
        r"CUDA out of memory|OutOfMemoryError|OOM when allocating tensor|RESOURCE_EXHAUSTED: Out of memory"
        r"|cudaMalloc failed: out of memory|cudaSuccess \(2 vs\. 0\)\s+out of memory"  # MXNet's and Caffe's
    ),
    "no-kernel-image": re.compile(r"no kernel image is available for execution on the device"),
    "driver-too-old": re.compile(r"driver version is insufficient for CUDA runtime version|The NVIDIA driver on your system is too old"),
    "cpu-only-build": re.compile(r"Torch not compiled with CUDA enabled"),
    "no-driver": re.compile(r"Found no NVIDIA driver on your system"),
    "cuda-init": re.compile(r"CUDA initialization: "),
    "jax-cpu-fallback": re.compile(r"CUDA-enabled jaxlib is not installed"),
    "tf-gpu-libraries": re.compile(r"Cannot dlopen some GPU libraries|Could not load dynamic library 'lib(cud|cublas|cufft|curand|cusolver|cusparse)"),
    "nccl": re.compile(r"NCCL error|ncclUnhandledCudaError|ncclSystemError|ncclInternalError"),
}
_HINTS = re.compile(r"CUDA|OOM|OutOfMemory|RESOURCE_EXHAUSTED|kernel image|driver|jaxlib|dlopen|dynamic library|nccl", re.IGNORECASE)


def scan(line: str) -> list[str]:
    if not _HINTS.search(line):
        return []
    return [kind for kind, pattern in PATTERNS.items() if pattern.search(line)]


def pump(source: BinaryIO, sink: BinaryIO, stream: str, events: list[OutputEvent], clock: Callable[[], float]) -> None:
    """Copy `source` to `sink` chunk by chunk as it arrives (a progress bar stays live) and record
    the failure lines; returns at end of file."""
    counts: dict[str, int] = {}
    pending = b""
    fd = source.fileno()
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        try:
            sink.write(chunk)
            sink.flush()
        except (BrokenPipeError, ValueError):  # our own output closed: keep draining the command's
            pass
        pending += chunk
        *lines, pending = re.split(rb"[\r\n]", pending)
        if len(pending) > _BUFFER:
            lines.append(pending)
            pending = b""
        for raw in lines:
            if raw:
                _note(raw.decode("utf-8", "replace"), stream, events, counts, clock)
    if pending:
        _note(pending.decode("utf-8", "replace"), stream, events, counts, clock)


def _note(line: str, stream: str, events: list[OutputEvent], counts: dict[str, int], clock: Callable[[], float]) -> None:
    for kind in scan(line):
        if counts.get(kind, 0) < _PER_KIND:
            counts[kind] = counts.get(kind, 0) + 1
            events.append(OutputEvent(kind, line.strip()[:LINE_LIMIT], stream, clock()))
