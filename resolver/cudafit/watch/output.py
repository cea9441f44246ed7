"""The command's output, passed through untouched as it arrives, and scanned for the lines that
frameworks print when a run fails or falls back to the CPU (wordings from real logs:
tests/fixtures/watch/log-*.txt)."""

from __future__ import annotations

import errno
import os
import re
from typing import BinaryIO, Callable, Optional

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
    # torch's RuntimeError where CUDA finds no device (CUDA_VISIBLE_DEVICES, a container without GPUs);
    # the CUDA runtime's own wording of cudaErrorNoDevice
    "no-gpu": re.compile(r"No CUDA GPUs are available|no CUDA-capable device is detected"),
}
# all of them as one pattern on bytes: each chunk is searched once, whole, in C, and only a
# matching line is decoded (a group per kind: its name says which)
_GROUPS = {f"k{i}": kind for i, kind in enumerate(PATTERNS)}
_ANY = re.compile(b"|".join(f"(?P<{group}>{PATTERNS[kind].pattern})".encode() for group, kind in _GROUPS.items()))


def scan(line: str) -> list[str]:
    return [kind for kind, pattern in PATTERNS.items() if pattern.search(line)]


def pump(source: BinaryIO, sink: BinaryIO, stream: str, events: list[OutputEvent], clock: Callable[[], float], ends: Optional[dict[str, bytes]] = None) -> None:
    """Copy `source` to `sink` chunk by chunk as it arrives (a progress bar stays live) and record
    the failure lines; returns at end of file. Where `sink` is closed (`watch -- yes | head -1`),
    `source` is closed too, so the command meets the closed pipe as it would without watch.
    `ends[stream]`: the last byte passed through."""
    counts: dict[str, int] = {}
    pending = b""
    fd = source.fileno()
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError as exc:  # a pseudo-terminal whose command side is closed: its end of file
            if exc.errno != errno.EIO:
                raise
            chunk = b""
        if not chunk:
            break
        try:
            sink.write(chunk)
            sink.flush()
        except (OSError, ValueError):  # a closed pipe, a hung-up terminal: the command meets it as without watch
            source.close()
            return
        if ends is not None:
            ends[stream] = chunk[-1:]
        data = pending + chunk
        cut = max(data.rfind(b"\n"), data.rfind(b"\r")) + 1  # whole lines now; the unfinished one waits
        if len(data) - cut > _BUFFER:
            cut = len(data)  # a line without end (a progress bar): searched in pieces
        _search(data[:cut], stream, events, counts, clock)
        pending = data[cut:]
    _search(pending, stream, events, counts, clock)


def _search(data: bytes, stream: str, events: list[OutputEvent], counts: dict[str, int], clock: Callable[[], float]) -> None:
    for match in _ANY.finditer(data):  # in the order the lines were printed
        kind = _GROUPS[str(match.lastgroup)]
        if counts.get(kind, 0) >= _PER_KIND:
            continue
        at, end = match.start(), match.end()
        start = max(data.rfind(b"\n", 0, at), data.rfind(b"\r", 0, at)) + 1
        stops = [i for i in (data.find(b"\n", end), data.find(b"\r", end)) if i >= 0]
        _note(data[start : min(stops) if stops else len(data)].decode("utf-8", "replace"), stream, events, counts, clock, kind)


def _note(line: str, stream: str, events: list[OutputEvent], counts: dict[str, int], clock: Callable[[], float], kind: str) -> None:
    counts[kind] = counts.get(kind, 0) + 1
    events.append(OutputEvent(kind, line.strip()[:LINE_LIMIT], stream, clock()))
