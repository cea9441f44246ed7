"""The AMD and Intel facts the frameworks share: which of a machine's GPUs an answer is for, and
whether a ROCm or XPU build carries kernels for them. Pure functions over Matrices and Machine,
each answer with its reason (rules.py holds NVIDIA's)."""

from __future__ import annotations

from typing import NamedTuple, Optional, Union

from cudafit.gpu_tables import AmdTorchBuild
from cudafit.records import Build, GpuInfo, Machine, Matrices, Shortfall
from cudafit.rules import Refusal, gpu_usable


def answered_gpus(machine: Machine, vendor: str) -> tuple[GpuInfo, ...]:
    """The GPUs of `vendor` an answer is for: none where an NVIDIA GPU is usable (a discrete
    NVIDIA card outranks an AMD or Intel one beside it, and CUDA builds are the answer there);
    otherwise the discrete ones, and the integrated ones only where no discrete GPU is present."""
    if gpu_usable(machine) and any(g.vendor == "nvidia" for g in machine.gpus):
        return ()
    if vendor == "intel" and any(g.vendor == "amd" for g in machine.gpus):
        # an AMD GPU beside an Intel one: ROCm's answer (one process serves one of the two stacks)
        return ()
    ours = tuple(g for g in machine.gpus if g.vendor == vendor)
    if any(not g.integrated for g in machine.gpus if g.vendor != "nvidia"):
        return tuple(g for g in ours if not g.integrated)
    return ours


def left_out(machine: Machine) -> tuple[GpuInfo, ...]:
    """The non-NVIDIA GPUs no answer is for (an iGPU beside a discrete GPU, any beside NVIDIA)."""
    answered = answered_gpus(machine, "amd") + answered_gpus(machine, "intel")
    return tuple(g for g in machine.gpus if g.vendor != "nvidia" and g not in answered)


def gpu_label(gpu: GpuInfo) -> str:
    return f"{gpu.name} ({gpu.target})" if gpu.name else str(gpu.target)


def override_target(value: str) -> str:
    """HSA_OVERRIDE_GFX_VERSION's 10.3.0 is the target gfx1030 (major, minor, stepping in hex)."""
    major, minor, stepping = (int(part) for part in value.split("."))
    return f"gfx{major}{minor}{stepping:x}"


class Fit(NamedTuple):
    """A build that runs on the answered GPUs: how well (0 native kernels, 1 through a workaround,
    2 unknown list), why, its warnings and the environment variables it needs."""

    tier: int
    why: str
    warnings: tuple[str, ...] = ()
    environment: tuple[tuple[str, str], ...] = ()
    targets: tuple[str, ...] = ()  # the targets whose kernels run: the GPUs' own, or the override's


def judge_rocm(build: Build, machine: Machine, matrices: Matrices) -> Union[Fit, Refusal]:
    gpus = answered_gpus(machine, "amd")
    if not gpus:
        return Refusal("accelerator", "ROCm build, for AMD GPUs")
    warnings: list[str] = [note for g in gpus for note in _target_notes(g, matrices)]
    if machine.os == "wsl":
        what = "its bundled ROCm runs" if build.rocm_libraries == "bundled" else "its ROCm wheels run"
        warnings.append(f"ROCm under WSL2 runs through AMD's WSL runtime, not the PCI device: whether {what} there is unknown")
    if build.gfx is None:
        return _unknown_list(build, gpus, matrices, warnings)
    graded = f"gfx list {build.grade('gfx')}"
    native: list[GpuInfo] = []
    overridden: list[tuple[GpuInfo, str]] = []  # the GPU and the override value it runs with
    for gpu in gpus:
        target = gpu.target or ""
        if target in build.gfx:
            if target in build.gfx_no_blas:
                with_blas = ", ".join(_sorted(build.gfx - build.gfx_no_blas))
                return Refusal(
                    "compute-capability",
                    f"{gpu_label(gpu)} is in the build's targets, but its rocBLAS has no kernels for {target}: matrix products fail "
                    f"[{build.grade('gfx_no_blas')}]",
                    Shortfall("gfx", with_blas, target),
                )
            native.append(gpu)
            continue
        known = matrices.gfx_targets.get(target)
        # the override is an HSA runtime variable users report on Linux; Windows ROCm runs another runtime
        if known is not None and known.override and machine.os != "windows" and override_target(known.override) in build.gfx - build.gfx_no_blas:
            if build.tag in known.override_fails:
                via = override_target(known.override)
                return Refusal("compute-capability", f"{gpu_label(gpu)} has no kernels here, and the override to {via} is reported to crash with this build")
            overridden.append((gpu, known.override))
            continue
        kernels = _kernels(build)
        return Refusal("compute-capability", f"no kernels for {gpu_label(gpu)}: the build carries {kernels} [{graded}]", Shortfall("gfx", kernels, target))
    environment: tuple[tuple[str, str], ...] = ()
    tier = 0
    if overridden and native:
        # one HSA_OVERRIDE_GFX_VERSION applies to every GPU of the process: it would put the GPUs
        # that run their own kernels on another target's
        shown = ", ".join(gpu_label(g) for g, _v in overridden)
        warnings.append(
            f"{shown} would run only with HSA_OVERRIDE_GFX_VERSION, which applies to every GPU of a process: this answer is for "
            f"{', '.join(gpu_label(g) for g in native)}; hide {shown} from ROCm with HIP_VISIBLE_DEVICES set to the other GPUs' indexes"
        )
    elif overridden:
        values = {v for _g, v in overridden}
        if len(values) > 1:
            return Refusal("compute-capability", "the GPUs need different HSA_OVERRIDE_GFX_VERSION values, and one process takes one")
        value = values.pop()
        environment = (("HSA_OVERRIDE_GFX_VERSION", value),)
        known_override = matrices.gfx_targets[overridden[0][0].target or ""]
        warnings.append(
            f"no kernels for {', '.join(gpu_label(g) for g, _v in overridden)}: runs on {override_target(value)}'s kernels with "
            f"HSA_OVERRIDE_GFX_VERSION={value}, a workaround users report ({', '.join(known_override.override_sources)}), not AMD support"
        )
        tier = 1
    used = sorted({g.target or "" for g in native} if native else {override_target(v) for _g, v in overridden})
    how = "its ROCm libraries bundled in the wheel" if build.rocm_libraries == "bundled" else ""
    if machine.os == "wsl":
        how = ""  # the WSL warning says what is known there
    elif build.rocm_libraries == "wheels":
        how = (
            "the ROCm libraries come as the rocm[libraries,device-all] wheels from the same index (every GPU target's, many GB): "
            "the host needs only the amdgpu kernel driver"
        )
    elif build.rocm_libraries == "device-extras":
        extra = f"device-{used[0]} extra brings" if len(used) == 1 else "device extras bring"
        how = f"its {extra} the ROCm libraries of {', '.join(used)} alone: the host needs only the GPU driver"
    why = f"ROCm {build.rocm} build; kernels for {', '.join(used)} [{graded}]" + (f"; {how}" if how else "")
    return Fit(tier, why, tuple(warnings) + _hidden(machine), environment, tuple(used))


def _unknown_list(build: Build, gpus: tuple[GpuInfo, ...], matrices: Matrices, warnings: list[str]) -> Union[Fit, Refusal]:
    """A build whose target list is unknown runs a GPU only where some known list holds its
    target (or the one its override names): every list the data knows leaving gfx1010 out, an
    older build almost surely did too."""
    known = {t for r in matrices.torch for b in r.builds if b.kind == "rocm" and b.gfx is not None for t in b.gfx}
    for gpu in gpus:
        note = matrices.gfx_targets.get(gpu.target or "")
        via = override_target(note.override) if note is not None and note.override else None
        if gpu.target not in known and via not in known:
            return Refusal("compute-capability", f"its GPU targets are unknown, and no ROCm build whose list is known carries {gpu_label(gpu)}")
    shown = ", ".join(gpu_label(g) for g in gpus)
    warnings.append(f"which AMD GPU targets the {build.tag} build carries is unknown; {shown} not checked")
    return Fit(2, f"ROCm {build.rocm} build; GPU targets unknown", tuple(warnings))


def _target_notes(gpu: GpuInfo, matrices: Matrices) -> list[str]:
    note = matrices.gfx_targets.get(gpu.target or "")
    if note is None or not note.warn or not note.notes:
        return []
    return [f"{gpu_label(gpu)}: {note.notes} ({', '.join(note.override_sources)})"]


def _sorted(targets: frozenset[str]) -> list[str]:
    return sorted(targets, key=lambda t: (len(t), t))


def judge_xpu(build: Build, machine: Machine) -> Union[Fit, Refusal]:
    gpus = answered_gpus(machine, "intel")
    if not gpus:
        return Refusal("accelerator", "XPU build, for Intel GPUs")
    aot = None if build.xpu_aot is None else build.xpu_aot.get(machine.platform or "")
    shown = ", ".join(gpu_label(g) for g in gpus)
    # The wheels carry SPIR-V beside the precompiled kernels, so a GPU outside the list runs too,
    # compiling them at first use: a slower first start, no reason to take an older release.
    if aot is None:
        return Fit(0, f"XPU build for {shown}; which Intel GPUs its kernels are precompiled for is unknown (others compile them at first use)")
    missing = [g for g in gpus if g.target not in aot]
    if missing:
        jit = ", ".join(gpu_label(g) for g in missing)
        warning = f"no precompiled XPU kernels for {jit}: the driver compiles them at first use (a slow first start) [{build.grade('xpu_aot')}]"
        return Fit(0, f"XPU build; {shown} through kernels compiled at first use", (warning,))
    return Fit(0, f"XPU build; precompiled kernels for {shown} [device list {build.grade('xpu_aot')}]")


def cpu_beside(machine: Machine, amd_builds: tuple[AmdTorchBuild, ...] = (), family: str = "torch") -> Optional[str]:
    """Why a CPU build is the answer on a machine with an AMD or Intel GPU it is for (said only
    where it is chosen: then no build of that GPU's kind ran). `amd_builds`: AMD's own torch
    builds, which the words point to on Windows."""
    gpus = answered_gpus(machine, "amd") + answered_gpus(machine, "intel")
    if not gpus or machine.os == "macos":  # a Mac's build is the answer there, with MPS on its GPU
        return None
    shown = ", ".join(gpu_label(g) for g in gpus)
    amd = any(g.vendor == "amd" for g in gpus)
    if machine.os == "windows" and amd and family != "torch":
        return f"a CPU build: {family} has no ROCm build for Windows (JAX's ROCm plugin and tensorflow-rocm are for Linux)"
    if machine.os == "windows" and amd:
        newest = next((b for b in amd_builds if machine.platform in b.gfx), None)
        if newest is not None and machine.python is not None and machine.python not in newest.python:
            ordered = sorted(newest.python, key=lambda text: tuple(int(part) for part in text.split(".")))
            pythons = f"{ordered[0]}-{ordered[-1]}" if len(ordered) > 1 else ordered[0]
            return f"a CPU build: the PyTorch index has no ROCm builds for Windows, and AMD's own are for Python {pythons}, not {machine.python}"
        ask = f": `--why torch=={newest.torch}+{newest.local}` says why their newest does not" if newest else ""
        return f"a CPU build: the PyTorch index has no ROCm builds for Windows, and none of AMD's own Windows builds runs on {shown} here{ask}"
    kind = "ROCm" if amd else "XPU"
    return (
        f"a CPU build: none of the {kind} builds of {family} in cudafit's data runs on {shown} here "
        "(the spec, the Python, the host's ROCm or the other frameworks of the set rule them out: --why NAME==VERSION says why)"
    )


def _kernels(build: Build) -> str:
    return ", ".join(_sorted(build.gfx or frozenset())) or "none"


def _hidden(machine: Machine) -> tuple[str, ...]:
    hidden = [g for g in left_out(machine) if g.vendor == "amd"]
    if not hidden or not answered_gpus(machine, "amd"):
        return ()
    shown = ", ".join(gpu_label(g) for g in hidden)
    return (f"{shown} is left out of this answer: hide it from ROCm with HIP_VISIBLE_DEVICES set to the other GPUs' indexes",)
