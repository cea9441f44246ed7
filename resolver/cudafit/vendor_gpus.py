"""AMD and Intel GPUs by name, LLVM target or PCI id (matrices/amd.toml, intel.toml), as the
machine's GpuInfo records."""

from __future__ import annotations

from typing import Optional, Union

from cudafit.errors import InputError
from cudafit.gpu_tables import AmdModel, IntelModel, is_gfx, name_words, normalize_name
from cudafit.records import GpuInfo, Matrices

AMD_VENDOR = "1002"
INTEL_VENDOR = "8086"
NVIDIA_VENDOR = "10de"


def _lookup(table: dict, name: str) -> tuple[Optional[Union[AmdModel, IntelModel]], bool]:
    """(model, exact): the name itself, else the longest listed name of two or more words that
    begins it (`AMD Radeon RX 7900 XTX Phantom Gaming` is an RX 7900 XTX)."""
    key = normalize_name(name)
    if key in table:
        return table[key], True
    words = name_words(name)
    for n in range(len(words) - 1, 0, -1):
        prefix = "".join(words[:n])
        # a one-word prefix only where it names a model (mi300x), never a series (arc)
        model = table.get(prefix) if n > 1 or any(ch.isdigit() for ch in prefix) else None
        if model is not None:
            return model, False
    return None, False


def by_name(name: str, matrices: Matrices) -> tuple[Optional[GpuInfo], Optional[str]]:
    """An AMD or Intel GPU by its marketing name: (the GPU, a warning where the name only began
    with a listed one), or (None, None)."""
    for table in (matrices.amd_gpus, matrices.intel_gpus):
        model, exact = _lookup(dict(table), name)
        if model is None:
            continue
        info = _info(model, model.name)  # the name the driver prints, however it was typed
        warning = None if exact else f"GPU {name!r} is not in the GPU table; taking {info.target} from {model.name!r}"
        return info, warning
    return None, None


def by_gfx(text: str, matrices: Matrices) -> GpuInfo:
    """--gfx gfx1100: an AMD GPU by its LLVM target, one the data knows (a GPU, a build's list or
    a target note): an unknown one is most likely a typo."""
    # rocminfo's ISA form names the same target: amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-
    target = text.strip().lower().removeprefix("amdgcn-amd-amdhsa--").split(":", 1)[0]
    if not is_gfx(target):
        raise InputError("expected an AMD LLVM target like gfx1100 or gfx90a (rocminfo's Name, amd-smi's TARGET_GRAPHICS_VERSION)", field="gfx", value=text)
    known = {m.gfx for m in matrices.amd_gpus.values()} | set(matrices.gfx_targets)
    known |= {t for r in matrices.torch for b in r.builds for t in (b.gfx or ())}
    if target not in known:
        raise InputError(f"no AMD GPU of cudafit's data has it; known: {', '.join(sorted(known, key=lambda t: (len(t), t)))}", field="gfx", value=text)
    apu = all(m.segment == "apu" for m in matrices.amd_gpus.values() if m.gfx == target) and any(m.gfx == target for m in matrices.amd_gpus.values())
    return GpuInfo(name=None, compute_capability=None, vendor="amd", target=target, integrated=apu)


def by_pci(vendor: str, device: str, matrices: Matrices) -> Optional[GpuInfo]:
    """An AMD or Intel GPU by its PCI vendor and device id (lower-case hex), where the data lists it."""
    models: list[Union[AmdModel, IntelModel]] = list(
        dict.fromkeys(matrices.amd_gpus.values() if vendor == AMD_VENDOR else matrices.intel_gpus.values() if vendor == INTEL_VENDOR else ())
    )
    found = [m for m in models if device in m.pci_ids]
    if not found:
        return None
    targets = {m.gfx if isinstance(m, AmdModel) else m.device for m in found}
    if len(targets) > 1:
        return None  # one id, several targets: only the driver can tell (KFD on Linux)
    model = found[0]
    # one id, several products (RX 7900 XTX, XT and GRE share 744c; only the PCI revision tells
    # them apart): no name then, the target says what matters
    return _info(model, model.name if len(found) == 1 else None)


def gfx_of_kfd(value: int) -> str:
    """The KFD topology's gfx_target_version (major*10000 + minor*100 + stepping) as its LLVM
    target: 110000 is gfx1100, 90010 gfx90a, 90402 gfx942."""
    major, minor, stepping = value // 10000, value // 100 % 100, value % 100
    return f"gfx{major}{minor}{stepping:x}"


def _info(model: Union[AmdModel, IntelModel], name: Optional[str]) -> GpuInfo:
    if isinstance(model, AmdModel):
        return GpuInfo(name=name, compute_capability=None, vendor="amd", target=model.gfx, integrated=model.segment == "apu")
    return GpuInfo(name=name, compute_capability=None, vendor="intel", target=model.device, integrated=model.segment == "igpu")
