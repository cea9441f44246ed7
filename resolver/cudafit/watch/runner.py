"""Runs the command (or follows a process), samples while it lives, and returns what it measured.
The command's output passes through as it comes and its exit code is kept; Ctrl-C goes to the
command (it shares the terminal's process group), and watch waits for it to end to report;
signals sent to watch alone (SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, and SIGINT or SIGQUIT from outside
the terminal) are passed on to the command, which ends as it would alone. Following a process
(--pid), Ctrl-C, SIGTERM or SIGHUP end the following and it reports what was seen."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, Optional

from cudafit.watch.terminals import Terminals

if TYPE_CHECKING:  # imported where used, after the command has started: its start is not delayed
    from pathlib import Path

    from cudafit.watch.model import GpuSample, HostSample, OutputEvent, ProcessMemory, Watched
    from cudafit.watch.proc import HostSampler


def watch(command: list[str], interval: float, pid: Optional[int] = None, proc_root: Optional[Path] = None) -> Watched:
    start = time.monotonic()

    def clock() -> float:
        return time.monotonic() - start

    events: list[OutputEvent] = []
    ends: dict[str, bytes] = {}
    child: Optional[subprocess.Popen[bytes]] = None
    pumps: list[threading.Thread] = []
    terminals: Optional[Terminals] = None
    opened: list[Any] = []  # the pseudo-terminals' read ends, closed once their pumps end
    if pid is None:  # the command starts first: the samplers' set-up does not delay it
        terminals = Terminals({"stdout": sys.stdout.fileno(), "stderr": sys.stderr.fileno()} if _has_fds() else {})
        # a stream closed where watch started (`>&-`: Python has no sys.stdout) is the command's
        # nothing: it writes into the void, as it would with a closed descriptor
        closed = {name for name in ("stdout", "stderr") if getattr(sys, name) is None}
        try:
            child = subprocess.Popen(
                command,
                stdout=subprocess.DEVNULL if "stdout" in closed else _or_pipe(terminals.stream("stdout")),
                stderr=subprocess.DEVNULL if "stderr" in closed else _or_pipe(terminals.stream("stderr")),
            )
        except OSError as exc:
            terminals.close_slaves()
            _close(terminals.masters.values())
            terminals.restore()
            raise FileNotFoundError(f"{command[0]}: {exc.strerror or exc}") from None
        finally:
            terminals.close_slaves()
        pid = terminals.child = child.pid
        from cudafit.watch.output import pump

        sources: dict[str, Any] = {"stdout": child.stdout, "stderr": child.stderr}
        for name, master in terminals.masters.items():
            sources[name] = open(master, "rb", buffering=0)
            opened.append(sources[name])
        for name in ("stdout", "stderr"):
            if name in closed:
                continue
            sink = getattr(sys, name).buffer
            thread = threading.Thread(target=pump, args=(sources[name], sink, name, events, clock, ends), daemon=True)
            thread.start()
            pumps.append(thread)
    from pathlib import Path

    from cudafit.watch.model import Watched
    from cudafit.watch.proc import HostSampler

    gpu, notes = _gpu_sampler(interval, start)
    host = HostSampler(pid, proc_root or Path("/proc"))
    if not host.available:
        notes.append("CPU use and I/O wait are not measured here (no /proc)")
    samples: list[HostSample] = []
    previous = _pass_signals(child)
    ended = False
    try:
        exit_code, ended = _wait(child, pid, interval, host, samples, clock)
    except KeyboardInterrupt:  # following a process: Ctrl-C stops the following, not the process
        exit_code = None
    finally:
        duration = clock()  # the run's, before the samplers' own stopping
        for signum, handler in previous.items():
            # following a process, a second SIGTERM while the report is made would end watch without
            # it: the report is what was asked for, and it comes first
            signal.signal(signum, signal.SIG_IGN if child is None else handler)
        if gpu is not None:
            gpu.stop()
        # what the command wrote before it ended is copied within moments; a pump still reading
        # after that is a background grandchild's (`server &`), which holds the output open
        for thread in pumps:
            thread.join(timeout=2)
        if terminals is not None:
            terminals.restore()
            if not any(thread.is_alive() for thread in pumps):  # a pump still reading (a grandchild holds the terminal) keeps its end
                for source in opened:
                    source.close()
    if gpu is not None and gpu.failure:
        notes.append(gpu.failure)
    gpu_samples: tuple[GpuSample, ...] = tuple(gpu.samples) if gpu is not None else ()
    if gpu is not None and not gpu_samples and not gpu.failure:
        short = duration < 2 * interval + 1  # nvidia-smi takes a moment to start and answer
        if gpu.said:
            notes.append(f"{gpu.source} gave no reading cudafit could read: {gpu.said}")
        else:
            notes.append(f"the run ended before {gpu.source}'s first reading" if short else f"{gpu.source} gave no reading cudafit could read")
    names = tuple(sorted(gpu.names.items())) if gpu is not None else ()
    source = "none" if gpu is None else gpu.source
    if child is None:
        notes.append(f"followed process {pid}: " + ("it ended" if ended else "stopped following before it ended"))
    open_line = ends.get("stdout", b"\n") != b"\n"
    visible = _visible(child, host, dict(names), notes)
    processes = tuple(gpu.processes) if gpu is not None else ()
    return Watched(
        tuple(command),
        pid,
        exit_code,
        duration,
        gpu_samples,
        tuple(samples),
        tuple(events),
        source,
        names,
        interval,
        tuple(notes),
        open_line,
        visible,
        processes,
        tuple(sorted(host.seen)) if host.available else (),  # without /proc a worker's PID is not known to be the run's
    )


def _visible(child: Optional[subprocess.Popen[bytes]], host: HostSampler, names: dict[int, str], notes: list[str]) -> Optional[tuple[int, ...]]:
    """The GPUs the run can use, from the device variables its processes ran with (read while they
    ran); without /proc, a command's are watch's own, which it inherits."""
    from cudafit.visible_devices import DEVICE_VARIABLES, run_environs, union

    environs = run_environs(host.environs)
    if not environs:
        if child is None or host.available:
            return None
        environs = [{k: v for k, v in os.environ.items() if k in DEVICE_VARIABLES}]
    visible = union(environs, names)
    if visible.gpus is None:
        if visible.said:
            notes.append(f"{visible.said}: which GPUs it names is not told here (CUDA's device order may differ from nvidia-smi's), so every GPU was judged")
        return None
    others = sorted(set(names) - visible.gpus)
    if not visible.gpus:
        notes.append(f"{visible.said} hides every GPU from the run")
    elif others:
        notes.append(f"{visible.said}: GPU {', '.join(map(str, others))} not visible to the run, so not judged")
    return tuple(sorted(visible.gpus))


def _or_pipe(fd: Optional[int]) -> int:
    return subprocess.PIPE if fd is None else fd


def _has_fds() -> bool:
    try:
        sys.stdout.fileno(), sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # replaced streams (a test runner's): pipes then
        return False
    return True


def _close(fds: Any) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def _pass_signals(child: Optional[subprocess.Popen[bytes]]) -> dict[int, Any]:
    """Ctrl-C and Ctrl-\\ reach the command through the terminal's process group, so watch passes
    on SIGINT and SIGQUIT only where no terminal sent them (watch is not in the terminal's
    foreground group: an IDE, a supervisor, `kill -INT`); SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 (a
    job scheduler's notice, a closed terminal) are sent to watch alone: always passed on. Following
    a process (--pid), SIGTERM and SIGHUP end the following, as Ctrl-C does, and it reports."""
    previous: dict[int, Any] = {}
    if child is None:
        for name in ("SIGTERM", "SIGHUP"):
            signum = getattr(signal, name, None)
            if signum is not None:
                previous[signum] = signal.signal(signum, signal.default_int_handler)
        return previous

    def forward(signum: int, _frame: Any) -> None:
        if child.poll() is None:
            child.send_signal(signum)

    def forward_unless_terminal(signum: int, _frame: Any) -> None:
        if not _terminal_sent():
            forward(signum, _frame)

    for name in ("SIGINT", "SIGQUIT"):
        signum = getattr(signal, name, None)
        if signum is not None:
            previous[signum] = signal.signal(signum, forward_unless_terminal)
    for name in ("SIGTERM", "SIGHUP", "SIGUSR1", "SIGUSR2"):
        signum = getattr(signal, name, None)
        if signum is not None:
            previous[signum] = signal.signal(signum, forward)
    return previous


def _terminal_sent() -> bool:
    """Whether watch is in its terminal's foreground process group: a Ctrl-C there went to the
    command too (the same group), and passing it on would send it twice."""
    for stream in (sys.stdin, sys.stdout, sys.stderr):
        try:
            fd = stream.fileno()
            if os.isatty(fd):
                return os.tcgetpgrp(fd) == os.getpgrp()
        except (AttributeError, OSError, ValueError):
            continue
    return False


def _wait(
    child: Optional[subprocess.Popen[bytes]], pid: int, interval: float, host: HostSampler, samples: list[HostSample], clock: Any
) -> tuple[Optional[int], bool]:
    """(the command's exit code, None for a followed process; whether it ended)."""
    host.sample(clock())
    while True:
        if child is not None:
            try:
                code = child.wait(timeout=interval)
                return (code if code >= 0 else 128 - code), True  # killed by a signal: as a shell reports it
            except subprocess.TimeoutExpired:
                pass
        else:
            time.sleep(interval)
            if not alive(pid):
                return None, True
        sample = host.sample(clock())
        if sample is not None:
            samples.append(sample)


def alive(pid: int, proc_root: Optional[Path] = None) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # a number past any PID: no such process
        return False
    except PermissionError:  # another user's process: it exists
        pass
    try:  # an ended process its parent has not reaped yet (a zombie) still answers kill(0)
        with open(os.path.join(str(proc_root or "/proc"), str(pid), "stat")) as stat:
            state = stat.read().rpartition(")")[2].split()[:1]
    except OSError:
        return True  # no /proc: kill(0) is all there is
    return state not in (["Z"], ["X"])


class _Gpu:
    """Either sampler, behind one face."""

    def __init__(self, sampler: Any, source: str) -> None:
        self._sampler = sampler
        self.source = source

    @property
    def samples(self) -> list[GpuSample]:
        return list(self._sampler.samples)

    @property
    def names(self) -> dict[int, str]:
        return dict(self._sampler.names)

    @property
    def processes(self) -> list[ProcessMemory]:
        return list(self._sampler.processes.values())

    @property
    def failure(self) -> str:
        return str(self._sampler.failure)

    @property
    def said(self) -> str:
        """What the source printed that was no reading (nvidia-smi's own message), or ""."""
        return str(getattr(self._sampler, "said", ""))

    def stop(self) -> None:
        self._sampler.stop()


def _gpu_sampler(interval: float, start: float) -> tuple[Optional[_Gpu], list[str]]:
    """NVML where NVIDIA's bindings are installed and start, else nvidia-smi's stream, else none."""
    from cudafit.watch.nvml import NvmlSampler, open_nvml

    if os.environ.get("CUDAFIT_WATCH_NVML", "1") != "0":
        nvml = open_nvml()
        if nvml is not None:
            try:
                return _Gpu(NvmlSampler(nvml, interval, start=start), "nvml"), []
            except Exception:  # NVMLError_NoPermission on a GPU a job's cgroup hides, and kin: nvidia-smi then
                try:
                    nvml.nvmlShutdown()
                except Exception:  # already down: nothing to release
                    pass
    from cudafit.detection import detect_os, nvidia_smi_candidates
    from cudafit.watch.smi import SmiSampler

    for smi in nvidia_smi_candidates(detect_os()):
        try:
            return _Gpu(SmiSampler(smi, interval, start=start), "nvidia-smi"), []
        except OSError:
            continue
    return None, ["no GPU sampled: neither NVIDIA's NVML bindings (nvidia-ml-py) nor nvidia-smi were found"]
