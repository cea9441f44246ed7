"""The records of the AMD and Intel GPU tables (amd.toml, intel.toml): a GPU's name and PCI ids
lead to the target its kernels are compiled for, which the builds' lists are checked against."""

from __future__ import annotations

from typing import NamedTuple, Optional


class AmdModel(NamedTuple):
    """An AMD GPU of amd.toml: its LLVM target (gfx1100) decides which builds carry its kernels."""

    name: str
    gfx: str
    pci_ids: tuple[str, ...]  # lower-case hex device ids (vendor 0x1002)
    segment: str  # radeon | radeon-pro | instinct | apu
    memory_gb: Optional[float] = None


class GfxTarget(NamedTuple):
    """What the data knows of an AMD GPU target beyond the builds' lists."""

    target: str  # gfx1031
    override: Optional[str] = None  # HSA_OVERRIDE_GFX_VERSION value reported to run it on another target's kernels
    override_grade: str = ""  # reported: a workaround users run, never AMD's support
    override_sources: tuple[str, ...] = ()  # amd.toml [sources] keys (of the whole entry)
    notes: str = ""
    warn: bool = False  # the notes are said as a warning wherever the target's GPU is answered
    override_fails: tuple[str, ...] = ()  # builds (tags) the override is reported to crash with


class IntelModel(NamedTuple):
    """An Intel GPU of intel.toml: its device code (dg2, bmg, pvc, mtl-h, ...) names the builds'
    precompiled kernels it uses."""

    name: str
    device: str
    pci_ids: tuple[str, ...]  # lower-case hex device ids (vendor 0x8086)
    segment: str  # arc | datacenter | igpu
    xpu: bool = True  # False: no torch XPU build supports this family


class JetsonWheel(NamedTuple):
    """One of NVIDIA's torch wheels for Jetson boards before Thor (jetson.toml)."""

    jetpacks: tuple[str, ...]  # the JetPack lines it is built for ("6.1", "6.2")
    torch: str  # its version as pip reads it: 2.5.0a0+872d972e41.nv24.08.17622132
    python: str  # "3.10"
    cuda: str
    url: str
    grade: str
    sources: tuple[str, ...]
    notes: str = ""
