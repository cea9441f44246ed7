"""Checks for machines whose GPU is AMD's or Intel's: a CPU or CUDA torch where a ROCm or XPU one
would run, a ROCm build without kernels for the GPU, the override a GPU needs left unset, and a
/dev/kfd that ROCm cannot open."""

from __future__ import annotations

from cudafit.doctor.context import Context, data_build, finding
from cudafit.doctor.model import Finding, InstalledBuild
from cudafit.rules import Refusal
from cudafit.vendor_rules import answered_gpus, gpu_label, judge_rocm, judge_xpu, override_target

_KFD_WORDS = ("/dev/kfd", "KFD topology")


def amd_and_intel(ctx: Context) -> list[Finding]:
    m = ctx.machine
    amd, intel = answered_gpus(m, "amd"), answered_gpus(m, "intel")
    gpus = ", ".join(gpu_label(g) for g in (*amd, *intel))
    out: list[Finding] = []
    for build in ctx.env.builds:
        if build.family != "torch":
            continue
        xpu = build.version.partition("+")[2] == "xpu"
        problem = None
        if build.kind == "rocm" and not amd:
            problem = ("DR012", f"{build.label} is a ROCm build, for AMD GPUs, and this machine has none it can use.")
        elif xpu and not intel:
            problem = ("DR012", f"{build.label} is an XPU build, for Intel GPUs, and this machine has none it can use.")
        elif gpus and build.kind == "cuda":
            problem = ("DR012", f"{build.label} is a CUDA build, for NVIDIA GPUs; this machine's GPU is {gpus}.")
        elif gpus and build.kind == "cpu" and not xpu and _gpu_answer(ctx):
            problem = ("DR010", f"{build.label} is a CPU-only build, so it will not use {gpus}.")
        elif gpus and build.kind == "rocm":
            out += _rocm_fit(ctx, build)
        elif gpus and xpu:
            known = data_build(ctx, build._replace(kind="other"))  # the data's XPU builds are of kind "other"
            fit = judge_xpu(known, m) if known is not None else None
            if isinstance(fit, Refusal):
                problem = ("DR021", f"{build.label}: {fit.reason}.")
        if problem is not None:
            out.append(finding(problem[0], problem[1], _INSTALL, ctx.repair.commands()))
    if amd and any(b.kind == "rocm" for b in ctx.env.builds):
        said = [w for w in m.warnings if any(word in w for word in _KFD_WORDS)]
        if said:
            out.append(finding("DR005", f"ROCm cannot use the GPU: {'; '.join(said)}.", _KFD_FIX))
    return out


_INSTALL = "Install the build that runs here:"
_KFD_FIX = "Load amdgpu with compute support and give this user /dev/kfd and /dev/dri/renderD* (the render and video groups), then log in again."


def _gpu_answer(ctx: Context) -> bool:
    """Whether the repair is a ROCm or XPU build (else the CPU build is the answer here)."""
    res, _ = ctx.repair.solve()
    return res is not None and any(c.kind == "rocm" or c.tag == "xpu" for c in res.candidates)


def _rocm_fit(ctx: Context, build: InstalledBuild) -> list[Finding]:
    known = data_build(ctx, build)
    if known is None:
        return []
    fit = judge_rocm(known, ctx.machine, ctx.matrices)
    if isinstance(fit, Refusal):
        return [finding("DR021", f"{build.label}: {fit.reason}.", _INSTALL, ctx.repair.commands())]
    needed = dict(fit.environment).get(_OVERRIDE)
    given = ctx.environ.get(_OVERRIDE)
    if given is not None and given != needed:
        # the variable puts every GPU of the process on another target's kernels
        try:
            onto = f" onto {override_target(given)}'s kernels"
        except ValueError:
            onto = ""
        gpus = ", ".join(gpu_label(g) for g in answered_gpus(ctx.machine, "amd"))
        right = f"set it to {needed}" if needed else "unset it (unset HSA_OVERRIDE_GFX_VERSION)"
        message = f"{_OVERRIDE}={given} puts {gpus}{onto}, not the kernels {build.label} runs it on; its programs fail or compute wrongly."
        return [finding("DR024", message, f"{right[0].upper()}{right[1:]} where the program runs.", severity="error")]
    if needed and given is None:
        return [
            finding(
                "DR024",
                f"{build.label} has no kernels for this GPU's own target; it runs on another target's kernels only with {_OVERRIDE}={needed} "
                f"(a workaround users report, not AMD support), and {_OVERRIDE} is not set.",
                f"export {_OVERRIDE}={needed} where the program runs.",
                severity="warning",
            )
        ]
    return []


_OVERRIDE = "HSA_OVERRIDE_GFX_VERSION"
