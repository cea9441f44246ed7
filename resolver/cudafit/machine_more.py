"""The parts of a machine beyond NVIDIA's driver: AMD and Intel GPUs (read from the kernel's files
on Linux, from WMI on Windows), a Jetson's JetPack line, and which GPU an answer is for where
several kinds are present."""

from __future__ import annotations

from typing import Optional

from packaging.version import InvalidVersion, Version

from cudafit.errors import InputError
from cudafit.records import GpuInfo, JetPack, Machine, Matrices


def amd_and_intel(os_name: str, matrices: Matrices, warnings: list[str], *, no_nvidia_driver: bool) -> list[GpuInfo]:
    """This machine's AMD and Intel GPUs: on Linux from the kernel's files, on Windows from WMI."""
    if os_name == "linux":
        from cudafit import sysfs_gpus

        found = sysfs_gpus.read(matrices)
        warnings.extend(found.warnings)
        if found.nvidia_pci and no_nvidia_driver:
            shown = ", ".join(f"10de:{d.device}" for d in found.nvidia_pci)
            warnings.append(f"an NVIDIA GPU is on the PCI bus ({shown}) but no NVIDIA driver answers: install the driver for CUDA builds")
        return list(found.gpus)
    if os_name == "windows":
        from cudafit import detection, windows_gpus

        if detection.detect_os() != "windows":  # --os windows described on another system: no WMI to ask
            return []
        gpus, said = windows_gpus.read(matrices, detection.run_command)
        warnings.extend(said)
        return list(gpus)
    return []


def host_rocm(text: str, matrices: Matrices) -> str:
    """--rocm 7.2.1: the ROCm installed on the host; 'none' for none ("")."""
    if text.strip().lower() == "none":
        return ""
    try:
        version = Version(text.strip())
    except InvalidVersion:
        raise InputError("expected a ROCm release like 7.2 or 6.4.3, or none", field="rocm", value=text) from None
    if version.local or version.pre or version.dev or version.epoch or not 2 <= len(version.release) <= 3:
        raise InputError("expected a ROCm release like 7.2 or 6.4.3 (major.minor at least), or none", field="rocm", value=text)
    newest = max(_rocm_releases(matrices), default=None)
    if newest is not None and version.release[:2] > newest.release[:2]:
        raise InputError(f"no ROCm release of cudafit's data is that new (the newest is {newest})", field="rocm", value=text)
    return version.public


def _rocm_releases(matrices: Matrices) -> set[Version]:
    """The ROCm releases the data names (torch's, AMD's builds, JAX's plugins)."""
    found = {b.rocm for r in matrices.torch for b in r.builds if b.rocm}
    found |= {b.rocm for b in matrices.amd_torch} | {b.rocm for b in matrices.amd_tensorflow}
    found |= {b.rocm for r in matrices.frameworks.get("jax", ()) for b in r.builds if b.rocm}
    return {Version(text) for text in found}


def read_host_rocm(os_name: str, gpus: list[GpuInfo]) -> Optional[str]:
    """The ROCm user space of this Linux host with an AMD GPU, from its version file; None elsewhere."""
    if os_name != "linux" or not any(g.vendor == "amd" for g in gpus):
        return None
    from cudafit import sysfs_gpus

    return sysfs_gpus.host_rocm()


def read_amdgpu(os_name: str, gpus: list[GpuInfo]) -> Optional[str]:
    """The DKMS amdgpu module's version on a Linux host with an AMD GPU ("" the kernel's own)."""
    if os_name != "linux" or not any(g.vendor == "amd" for g in gpus):
        return None
    from cudafit import sysfs_gpus

    return sysfs_gpus.amdgpu_version()


def jetpack(text: str, matrices: Matrices) -> str:
    """--jetpack 6.2.1: its JetPack line in the data ("6.2")."""
    from cudafit.frameworks.pytorch_jetson import jetpack_line

    try:
        line = jetpack_line(matrices, text.strip())
    except InvalidVersion:
        raise InputError("expected a JetPack release like 6.2 or 5.1.2", field="jetpack", value=text) from None
    if line is None:
        known = ", ".join(j.version for j in matrices.jetpacks)
        older = " (JetPack 4's torch wheels are Python 3.6 builds of torch 1.11 and older, not covered)" if Version(text.strip()).major == 4 else ""
        raise InputError(f"no JetPack line of cudafit's data holds it{older}; known: {known}", field="jetpack", value=text)
    return line.version


def check_board(line_version: str, gpus: list[GpuInfo], matrices: Matrices) -> None:
    """A JetPack line runs on its boards' GPUs only: JetPack 6 is Orin's (8.7), 7 Thor's (11.0)."""
    line = matrices.jetpack(line_version)
    if line is None:
        return
    for gpu in gpus:
        if gpu.compute_capability is not None and gpu.compute_capability not in line.compute_capabilities:
            boards = ", ".join(f"{a}.{b}" for a, b in sorted(line.compute_capabilities))
            raise InputError(
                f"JetPack {line.version} runs on boards of compute capability {boards}, not {gpu.compute_capability[0]}.{gpu.compute_capability[1]}",
                field="jetpack",
                value=line_version,
                others=((("gpus", gpu.name),) if gpu.name else (("compute_capability", f"{gpu.compute_capability[0]}.{gpu.compute_capability[1]}"),)),
            )


def assumed_jetpack(gpus: list[GpuInfo], matrices: Matrices, warnings: list[str]) -> Optional[str]:
    """The JetPack of a Jetson described without one: the newest line for its GPU, or for a board
    before Thor where no GPU is given (NVIDIA's Jetson builds are for those); said in a warning."""
    ccs = [g.compute_capability for g in gpus if g.compute_capability]
    lines = [j for j in matrices.jetpacks if all(cc in j.compute_capabilities for cc in ccs)] if ccs else [j for j in matrices.jetpacks if not j.server_builds]
    if not lines:
        return None
    line = lines[-1]
    board = "its GPU" if ccs else "a board before Thor (no GPU given; for Jetson Thor give --gpu 'NVIDIA Thor')"
    warnings.append(f"JetPack not given (--jetpack): assumed {line.version}, the newest line for {board}; --jetpack X.Y gives yours")
    return str(line.version)


def board_gpu(line: Optional[JetPack], gpus: list[GpuInfo]) -> Optional[GpuInfo]:
    """The GPU a JetPack line stands for where none is given and the line runs on one kind of
    board only (6.x: Orin, 7.x: Thor)."""
    if line is None or gpus or len(line.compute_capabilities) != 1:
        return None
    return GpuInfo(name="Jetson GPU", compute_capability=next(iter(line.compute_capabilities)))


def read_jetpack(matrices: Matrices, warnings: list[str]) -> Optional[str]:
    """The JetPack line of this Jetson, from the Jetson Linux release /etc/nv_tegra_release names."""
    from cudafit import detection
    from cudafit.frameworks.pytorch_jetson import jetpack_of_l4t

    l4t = detection.jetson_linux_release()
    if l4t is None:
        return None
    line = jetpack_of_l4t(matrices, l4t)
    if line is None:
        known = ", ".join(f"{j.jetson_linux} (JetPack {j.version})" for j in matrices.jetpacks)
        warnings.append(f"Jetson Linux {l4t} belongs to no JetPack line of cudafit's data (lines from: {known}); its Jetson builds are not known")
        return None
    return line.version


def left_out_note(gpus: list[GpuInfo], driver: Optional[str], driver_known: bool) -> list[str]:
    """A machine of several kinds of GPU: the answer is for its NVIDIA GPU, else its AMD one, else
    its discrete one; say which it leaves out."""
    if all(g.vendor == "nvidia" for g in gpus):
        return []  # one kind of GPU: nothing left out
    from cudafit.vendor_rules import answered_gpus, left_out

    probe = Machine(os="linux", arch=None, python=None, driver=driver, driver_known=driver_known, gpus=tuple(gpus))
    # an AMD iGPU beside an AMD card is said with the answer, with how to hide it (vendor_rules)
    same_kind = bool(answered_gpus(probe, "amd"))
    hidden = [g for g in left_out(probe) if not (same_kind and g.vendor == "amd")]
    if not hidden:
        return []
    shown = ", ".join(f"{g.name or g.vendor.upper() + ' GPU'} ({g.target or 'unknown target'})" for g in hidden)
    answered = answered_gpus(probe, "amd") + answered_gpus(probe, "intel")
    which = ", ".join(g.name or g.target or "" for g in answered) if answered else "the NVIDIA GPU"
    return [f"the answer is for {which}; {shown} is left out"]
