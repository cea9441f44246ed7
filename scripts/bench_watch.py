"""`cudafit watch`'s costs, whole processes (scripts/bench.py --watch runs it):

- start: how much later a command starts under `cudafit watch` than on its own: each run's child
  prints the moment it starts (time.time()), taken against the moment the parent launched the
  process; medians over alternating runs, so both meet the same machine state.
- sampling: the watch process's own CPU time (user + system, from wait4, less the child's) over
  a sleeping command, as a share of one core, at the default interval."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

STARTED = "import time, sys; sys.stdout.write(repr(time.time()))"


def _start_delay(cmd: list[str], env: dict) -> float:
    launched = time.time()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stdout
    return float(out.strip().splitlines()[0]) - launched


def bench_start(cudafit: list[str], runs: int, env: dict) -> tuple[float, float]:
    """(median ms before a bare `python -c` starts, the same under cudafit watch)."""
    bare, watched = [], []
    plain = [sys.executable, "-c", STARTED]
    for _ in range(runs):
        bare.append(_start_delay(plain, env))
        watched.append(_start_delay([*cudafit, "watch", "--", *plain], env))
    return statistics.median(bare) * 1000, statistics.median(watched) * 1000


def bench_sampling(cudafit: list[str], seconds: float, env: dict) -> float:
    """The watch process's CPU share of one core while it samples a sleeping command (the
    sleeper's own time, near nothing, is in the figure: an upper bound)."""
    proc = subprocess.Popen(
        [*cudafit, "watch", "--", sys.executable, "-c", f"import time; time.sleep({seconds})"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    start = time.perf_counter()
    _pid, _status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    return (usage.ru_utime + usage.ru_stime) / elapsed


def print_watch(cudafit: list[str], runs: int, env: dict) -> None:
    bare, watched = bench_start(cudafit, runs, env)
    print(f"  a command's start on its own                 {bare:8.1f} ms")
    print(f"  the same under cudafit watch                 {watched:8.1f} ms (+{watched - bare:.1f} ms; target < 50 ms)")
    for seconds in (10.0, 30.0):
        share = bench_sampling(cudafit, seconds, env)
        print(f"  watch's CPU over a {seconds:.0f} s run, all of it   {share:8.2%} of one core (start-up included; target < 1 %)")
