"""Checks on the driver and the GPUs, and on whether each installed build can use them: a driver
that answers and lists a GPU, CPU builds beside a GPU, a build's CUDA against the driver's floor,
and its kernels against the GPU's architecture."""

from __future__ import annotations

from cudafit import detection as detect
from cudafit import rules
from cudafit.doctor.context import Context, cuda_builds, cuda_of, data_build, finding, gpu_names, last_windows_cuda_tensorflow
from cudafit.doctor.fixes import ORT_GPU, gpu_here
from cudafit.doctor.model import Finding
from cudafit.records import Machine
from cudafit.vendor_rules import answered_gpus
from cudafit.visible_devices import visible_gpus

# --- the driver and the GPUs ----------------------------------------------------------------------


def lists_no_gpu(m: Machine) -> bool:
    """nvidia-smi answered, and named no GPU ("No devices were found")."""
    return any("reports no NVIDIA GPU" in w for w in m.warnings)


def driver_and_gpus(ctx: Context) -> list[Finding]:
    m = ctx.machine
    if m.os == "macos":
        return []
    out = []
    cuda = cuda_builds(ctx)
    names = ", ".join(b.label for b in cuda)
    no_gpu = lists_no_gpu(m)
    unreadable = next((w for w in m.warnings if w.startswith(detect.UNREADABLE)), None)
    if unreadable is not None:
        # Garbage where the driver's answer belongs is a fact about the driver (exit 1), the one
        # story doctor tells about it; detect and resolve refuse to answer from it (exit 2).
        out.append(
            finding(
                "DR002",
                f"The NVIDIA driver gives no usable answer: {unreadable.removesuffix('; GPUs unknown')}. "
                "Which GPU this is, and whether any framework can use it, is unknown until nvidia-smi reads cleanly.",
                "Run nvidia-smi yourself: errors in its fields (such as [Unknown Error]) mean a driver in a bad state, "
                "or an nvidia-smi of another driver install; reboot, and if that does not help, reinstall the NVIDIA driver.",
            )
        )
    elif no_gpu or (m.driver is not None and m.gpus_known and not m.gpus):
        out.append(
            finding(
                "DR003",
                f"The NVIDIA driver{' ' + m.driver if m.driver else ''} is loaded but nvidia-smi lists no GPU, so no framework can use one.",
                "Check that the GPU is seated and powered (lspci | grep -i nvidia), and, in a container, that it was started with GPUs (--gpus all).",
            )
        )
    elif m.detected and not m.driver_known or (m.detected and m.driver is not None and not m.gpus_known):
        said = "; ".join(w for w in m.warnings if "nvidia-smi" in w or "answer" in w) or "nvidia-smi did not answer"
        out.append(
            finding(
                "DR002",
                f"The NVIDIA driver does not answer ({said}), so no framework can use the GPU.",
                "Run nvidia-smi yourself; if it hangs or fails, reload the driver (a reboot does it) or reinstall it.",
            )
        )
    elif m.driver is None and m.driver_known and not answered_gpus(m, "amd") + answered_gpus(m, "intel") and not m.jetpack:  # vendor_checks; a JetPack: its own
        if cuda:
            out.append(
                finding(
                    "DR001",
                    f"No NVIDIA driver is installed, so {names} cannot use a GPU.",
                    "Install the NVIDIA driver for your GPU (nvidia-smi must then list it), or use CPU builds.",
                )
            )
        elif any(g.vendor == "nvidia" for g in m.gpus):
            out.append(finding("DR001", "No NVIDIA driver is installed.", "Install the NVIDIA driver for your GPU.", severity="warning"))
    hidden = ctx.environ.get("CUDA_VISIBLE_DEVICES")
    nvidia = {i: g.name or "" for i, g in enumerate(g for g in m.gpus if g.vendor == "nvidia")}
    if hidden is not None and m.driver is not None and visible_gpus(ctx.environ, nvidia).gpus == frozenset():
        out.append(
            finding(
                "DR004",
                f"CUDA_VISIBLE_DEVICES={hidden!r} hides every GPU from CUDA programs" + _first_entry(hidden, nvidia),
                "Unset it (unset CUDA_VISIBLE_DEVICES) or list the GPUs to use (CUDA_VISIBLE_DEVICES=0).",
                severity="warning",
            )
        )
    return out


def _first_entry(hidden: str, nvidia: dict[int, str]) -> str:
    """Why a list that names devices hides them all: CUDA stops at its first entry that is none."""
    if not nvidia or hidden.strip() in ("", "-1"):
        return "."
    return f" (CUDA reads the list up to its first entry that is no device here; nvidia-smi lists GPU {', '.join(map(str, nvidia))})."


# --- CPU builds beside a GPU ----------------------------------------------------------------------


def cpu_builds(ctx: Context) -> list[Finding]:
    m = ctx.machine
    if not gpu_here(m):
        return []
    out = []
    for build in ctx.env.builds:
        if build.kind != "cpu" or (build.family == "tensorflow" and last_windows_cuda_tensorflow(ctx) is not None and m.os == "windows"):
            continue
        if not ctx.repair.replaces(build):
            continue  # a CPU onnxruntime where no onnxruntime-gpu runs: the right package here
        same = ctx.repair.keeps(build.family)
        if build.family == ORT_GPU:
            message = f"{build.label} is ONNX Runtime's CPU-only package, so it will not use {gpu_names(ctx)}."
            fix = "Remove it (onnxruntime-gpu, the CUDA build, installs the same onnxruntime module) and install " + (
                "onnxruntime-gpu of the same release:" if same else "the onnxruntime-gpu build that runs here:"
            )
        else:
            message = f"{build.label} is a CPU-only build, so it will not use {gpu_names(ctx)}."
            fix = "Install the CUDA build of the same release:" if same else "Install a CUDA build that runs here:"
        out.append(finding("DR010", message, fix, ctx.repair.commands()))
    tf = next((b for b in ctx.env.builds if b.family == "tensorflow" and b.kind == "cuda"), None)
    if tf is not None and m.os in ("linux", "wsl"):
        known = data_build(ctx, tf)
        if known is not None and "and-cuda" in known.extras and "and-cuda" not in tf.extras_installed:
            out.append(
                finding(
                    "DR011",
                    f"{tf.label} is installed without its CUDA libraries (the [and-cuda] extra), so it lists no GPU.",
                    "Install them with TensorFlow:",
                    ctx.repair.commands(),
                )
            )
    return out


# --- driver floor and kernels ---------------------------------------------------------------------


def driver_floor(ctx: Context) -> list[Finding]:
    m = ctx.machine
    if m.driver is None or not m.driver_known:
        return []
    out = []
    for build in cuda_builds(ctx):
        cuda = cuda_of(ctx, build)
        if cuda is None:
            continue
        verdict = rules.check_driver(ctx.matrices, m, cuda, strict=False)
        if verdict.ok:
            continue
        floor, _rule = rules.driver_floor(ctx.matrices, m, cuda, strict=False)
        out.append(
            finding(
                "DR020",
                f"{build.label} is built with CUDA {cuda}, which needs NVIDIA driver {floor or 'unknown'} or newer; this machine has {m.driver}. "
                "CUDA reports 'driver version is insufficient' and the GPU is not used.",
                f"Upgrade the driver to {floor} or newer, or install the newest build that driver {m.driver} runs:",
                ctx.repair.commands(),
            )
        )
    return out


def kernels(ctx: Context) -> list[Finding]:
    m = ctx.machine
    if not any(g.compute_capability for g in m.gpus):
        return []
    out = []
    for build in cuda_builds(ctx):
        cuda = cuda_of(ctx, build)
        known = data_build(ctx, build)
        sass, ptx = (build.sass, build.ptx) if build.sass is not None else ((known.sass, known.ptx) if known is not None else (None, None))
        if cuda is None:
            continue
        # An arch list nobody recorded is still bounded by what its CUDA toolkit can compile.
        verdict, _jit = rules.check_arch(ctx.matrices, m, cuda, sass, ptx)
        if verdict.ok:
            if verdict.warning and sass is None:
                out.append(
                    finding(
                        "DR022",
                        f"Which GPU architectures {build.label} carries is not known to cudafit, "
                        f"so whether it has kernels for {gpu_names(ctx)} was not checked.",
                        "Run `cudafit doctor --import` to try it, or install a build whose architectures are known:",
                        ctx.repair.commands(),
                        severity="warning",
                    )
                )
            continue
        where = "its own library" if build.sass is not None else "cudafit's data" if sass is not None else "the limits of its CUDA toolkit"
        out.append(
            finding(
                "DR021",
                f"{build.label} has no kernels for this GPU ({verdict.reason}; read from {where}): "
                "CUDA fails with 'no kernel image is available for execution on the device'.",
                "Install a build compiled for this GPU:",
                ctx.repair.commands(),
            )
        )
    return out
