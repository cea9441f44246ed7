"""AMD and Intel GPUs of a Linux machine, read from the kernel's own files: no vendor tool needed
(the ROCm user space, rocminfo or amd-smi are often absent; the torch ROCm wheels bring their own).

- PCI devices (/sys/bus/pci/devices/*): vendor, device id and class. Display controllers (class
  0x03) and processing accelerators (0x12: Instinct MI300 and later) both count.
- The KFD topology (/sys/class/kfd/kfd/topology/nodes/*/properties), present where the amdgpu
  driver runs with compute support: each GPU node's gfx_target_version is its LLVM target, the
  fact ROCm builds are checked against. It outranks the PCI id, which some ids share.
- /sys/module/amdgpu/version (AMD's DKMS driver only; the kernel's own amdgpu has none) and
  /dev/kfd, which a ROCm process must open read-write.

`CUDAFIT_SYSFS_ROOT` names a folder that stands for `/` (tests copy real machines' trees there)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple, Optional

from cudafit.records import GpuInfo, Matrices
from cudafit.vendor_gpus import AMD_VENDOR, INTEL_VENDOR, NVIDIA_VENDOR, by_pci, gfx_of_kfd

ROOT_VARIABLE = "CUDAFIT_SYSFS_ROOT"
_GPU_CLASSES = ("03", "12")  # display controller, processing accelerator


class PciDevice(NamedTuple):
    slot: str  # 0000:03:00.0
    vendor: str  # 4 lower-case hex digits
    device: str
    pci_class: str  # 6 hex digits


class SysfsReading(NamedTuple):
    gpus: tuple[GpuInfo, ...]  # AMD and Intel GPUs (NVIDIA's come from nvidia-smi)
    nvidia_pci: tuple[PciDevice, ...]  # NVIDIA GPUs seen on the bus, whatever the driver says
    amdgpu_version: Optional[str]  # the DKMS driver's version; None: the kernel's own amdgpu, or none
    warnings: tuple[str, ...]


def root() -> Path:
    return Path(os.environ.get(ROOT_VARIABLE) or "/")


def _read(path: Path) -> Optional[str]:
    try:
        return path.read_text(errors="replace").strip()
    except OSError:
        return None


def pci_gpus(base: Path) -> list[PciDevice]:
    """The GPUs on the PCI bus (AMD, Intel, NVIDIA), in slot order."""
    found = []
    try:
        slots = sorted(os.scandir(base / "sys" / "bus" / "pci" / "devices"), key=lambda e: e.name)
    except OSError:
        return []
    for slot in slots:
        folder = Path(slot.path)
        pci_class = (_read(folder / "class") or "").lower().removeprefix("0x")
        if pci_class[:2] not in _GPU_CLASSES:  # most devices: one read each
            continue
        vendor, device = ((_read(folder / name) or "").lower().removeprefix("0x") for name in ("vendor", "device"))
        if vendor in (AMD_VENDOR, INTEL_VENDOR, NVIDIA_VENDOR) and device:
            found.append(PciDevice(slot.name, vendor, device, pci_class))
    return found


def kfd_nodes(base: Path) -> list[dict[str, int]]:
    """Each GPU node's properties (CPU nodes left out), in node order."""
    nodes = base / "sys" / "class" / "kfd" / "kfd" / "topology" / "nodes"
    out = []
    try:
        names = sorted((e.name for e in os.scandir(nodes) if e.name.isdigit()), key=int)
    except OSError:
        return []
    for name in names:
        text = _read(nodes / name / "properties")
        if text is None:  # a node a cgroup hides reads as EPERM: not ours to use
            continue
        props: dict[str, int] = {}
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if value.strip().isdigit():
                props[key] = int(value.strip())
        if props.get("gfx_target_version", 0) > 0:  # a CPU node reports 0
            out.append(props)
    return out


def read(matrices: Matrices, base: Optional[Path] = None) -> SysfsReading:
    base = root() if base is None else base
    pci = pci_gpus(base)
    warnings: list[str] = []
    gpus: list[GpuInfo] = []
    amd_pci = [d for d in pci if d.vendor == AMD_VENDOR]
    nodes = kfd_nodes(base)
    # A node that names no device id is matched to the AMD PCI devices in order, where they are as many
    by_order = [d.device for d in amd_pci] if len(amd_pci) == len(nodes) else []
    for i, props in enumerate(nodes):
        value = props["gfx_target_version"]
        if value // 100 % 100 > 15 or value % 100 > 15 or value >= 200000:
            warnings.append(f"KFD node reports gfx_target_version {value}, which names no LLVM target; that GPU is left out")
            continue
        target = gfx_of_kfd(value)
        device = f"{props['device_id']:04x}" if "device_id" in props else (by_order[i] if by_order else "")
        known = by_pci(AMD_VENDOR, device, matrices) if device else None
        # the node's own target decides; the table adds the name and whether it is an APU
        name = known.name if known is not None and known.target == target else None
        integrated = known.integrated if known is not None and known.target == target else False
        gpus.append(GpuInfo(name=name, compute_capability=None, vendor="amd", target=target, integrated=integrated))
    if amd_pci and not nodes:
        # amdgpu without compute (not loaded, or KFD off): say what the PCI ids tell
        for d in amd_pci:
            known = by_pci(AMD_VENDOR, d.device, matrices)
            if known is not None:
                gpus.append(known)
        shown = ", ".join(f"1002:{d.device}" for d in amd_pci)
        warnings.append(
            f"AMD GPU on the PCI bus ({shown}) but no KFD topology: the amdgpu driver is not loaded with compute support, so no ROCm build can run yet"
        )
    if gpus and any(g.vendor == "amd" for g in gpus):
        warnings += _kfd_access(base)
    for d in pci:
        if d.vendor == INTEL_VENDOR:
            known = by_pci(INTEL_VENDOR, d.device, matrices)
            if known is not None:  # an Intel GPU no XPU build serves (UHD 630, ...) is left out
                gpus.append(known)
    version = _read(base / "sys" / "module" / "amdgpu" / "version") or None
    return SysfsReading(tuple(gpus), tuple(d for d in pci if d.vendor == NVIDIA_VENDOR), version, tuple(warnings))


def amdgpu_version(base: Optional[Path] = None) -> str:
    """/sys/module/amdgpu/version: AMD's DKMS driver's; "" with the kernel's own amdgpu (none)."""
    return _read((root() if base is None else base) / "sys" / "module" / "amdgpu" / "version") or ""


def host_rocm(base: Optional[Path] = None) -> str:
    """The ROCm user space installed on the host: $ROCM_PATH's, else /opt/rocm's .info/version
    ("7.2.1-82" is 7.2.1); "" where there is none."""
    base = root() if base is None else base
    rocm_path = os.environ.get("ROCM_PATH", "").lstrip("/")
    for folder in ([rocm_path] if rocm_path else []) + ["opt/rocm"]:
        text = _read(base / folder / ".info" / "version")
        if text:
            release = text.split("-")[0].strip()
            if all(part.isdigit() for part in release.split(".")):
                return release
    return ""


def _kfd_access(base: Path) -> list[str]:
    kfd = base / "dev" / "kfd"
    if not kfd.exists():
        return ["no /dev/kfd: the amdgpu driver exposes no compute device, so no ROCm build can run"]
    if not os.access(kfd, os.R_OK | os.W_OK):
        return ["/dev/kfd is not readable and writable by this user: ROCm needs it (and /dev/dri/renderD*); add the user to the render and video groups"]
    return []
