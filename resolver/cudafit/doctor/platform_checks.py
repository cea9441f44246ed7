"""Checks for platform dead ends, where no install of the environment can use the GPU: TensorFlow
or JAX on native Windows, WSL without the driver library Windows shares, server builds on a Jetson
board, and a driver older than the GPU."""

from __future__ import annotations

import re
import shlex

from packaging.version import Version

from cudafit import rules
from cudafit.doctor.context import Context, cuda_builds, finding, last_windows_cuda_tensorflow
from cudafit.doctor.fixes import machine_args
from cudafit.doctor.model import Finding


def dead_ends(ctx: Context) -> list[Finding]:
    m = ctx.machine
    out = []
    tf = next((b for b in ctx.env.builds if b.family == "tensorflow"), None)
    last = last_windows_cuda_tensorflow(ctx)
    if m.os == "windows" and m.gpus and tf is not None and last is not None and Version(Version(tf.version).public) > last:
        from cudafit.frameworks import release_of
        from cudafit.frameworks.base import python_range

        pythons = release_of("tensorflow", last, ctx.matrices).pythons("windows-x86_64")
        python_note = f" (it has wheels for Python {python_range(pythons)} only)" if pythons and ctx.env.python not in pythons else ""
        out.append(
            finding(
                "DR060",
                f"{tf.label} on native Windows has no GPU support: the last TensorFlow with CUDA on native Windows is {last}.",
                f"Use TensorFlow under WSL2 (pip install 'tensorflow[and-cuda]' there), or TensorFlow {last} with its conda CUDA runtime{python_note}:",
                (shlex.join(["cudafit", "resolve", f"tensorflow<={last}", *machine_args(m)]),),
            )
        )
    jax = next((b for b in ctx.env.builds if b.family == "jax"), None)
    if m.os == "windows" and m.gpus and jax is not None:
        out.append(
            finding(
                "DR061",
                f"{jax.label} on native Windows runs on the CPU only: JAX publishes no CUDA builds for Windows.",
                "Use JAX under WSL2 (pip install 'jax[cuda12]' there).",
                severity="warning",
            )
        )
    if m.os == "wsl" and m.detected and not ctx.wsl_driver:
        out.append(
            finding(
                "DR062",
                "This WSL2 system has no /usr/lib/wsl/lib/libcuda.so.1, the driver library Windows shares with WSL: CUDA cannot start.",
                "Install or update the NVIDIA driver on Windows (not inside WSL), then run wsl --shutdown and reopen the shell.",
            )
        )
    problem = rules.jetson_problem(ctx.matrices, m)
    if problem is not None:
        # NVIDIA's Jetson wheels carry an "nv" release in their local version (2.5.0a0+872d972e41.nv24.08).
        server = [b for b in cuda_builds(ctx) if not re.search(r"nv\d", b.version)]
        if server:
            out.append(
                finding(
                    "DR063",
                    f"{', '.join(b.label for b in server)}: {problem}.",
                    "Install NVIDIA's Jetson builds for your JetPack (NVIDIA's Jetson wheel index), not the PyPI or PyTorch-index aarch64 ones.",
                )
            )
    too_old = rules.check_gpu_support_by_driver(ctx.matrices, m)
    if too_old is not None:
        out.append(finding("DR064", f"The {too_old}: no CUDA program can use that GPU.", "Install a newer NVIDIA driver."))
    return out
