"""The records of the AMD and Intel GPU tables (amd.toml, intel.toml): a GPU's name and PCI ids
lead to the target its kernels are compiled for, which the builds' lists are checked against."""

from __future__ import annotations

import re
from typing import NamedTuple, Optional

# An LLVM target of an AMD GPU: gfx900, gfx90a, gfx1100, gfx1250 (patterns as text: re compiles
# and caches them on first use, so importing the records costs no compilation)
GFX_PATTERN = r"gfx[0-9]{2,4}[0-9a-f]"
_SEPARATORS = r"[\s\-_]+"
# The words a name carries that tell nothing about the chip: brands, trademark marks, "Graphics"
_NOISE = r"\((?:r|tm)\)|\bamd\b|\bati\b|\bintel\b|\bgraphics\b|\bradeon\b|\binstinct\b"


def is_gfx(text: str) -> bool:
    return re.fullmatch(GFX_PATTERN, text) is not None


def name_words(name: str) -> list[str]:
    """A name's words without the brand and trademark words: `AMD Radeon RX 7900 XTX` is
    ["rx", "7900", "xtx"], `Intel(R) Arc(TM) A770 Graphics` ["arc", "a770"]."""
    return re.sub(_SEPARATORS, " ", re.sub(_NOISE, " ", name.lower())).split()


def normalize_name(name: str) -> str:
    """One key however a name is spaced or branded: `AMD Radeon RX 7900 XTX`, `RX 7900XTX` and
    `Radeon RX 7900 XTX` are `rx7900xtx`; `Intel(R) Arc(TM) A770 Graphics` and `Arc A770` `arca770`."""
    return "".join(name_words(name))


def short_names(name: str) -> list[str]:
    """The keys a listed name is also found by: without its series word (`7900xtx` for RX 7900
    XTX, `a770` for Arc A770), as people write them."""
    words = name_words(name)
    return ["".join(words[1:])] if len(words) > 1 and words[0] in ("rx", "arc") else []


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


class AmdTfBuild(NamedTuple):
    """One of AMD's tensorflow-rocm builds (amd-tensorflow.toml): it loads the host's ROCm release."""

    tensorflow: str  # the TensorFlow release it is a build of: 2.14.0
    version: str  # tensorflow-rocm's own version: 2.14.0.600
    rocm: str  # the ROCm release it links, which the host must have: 6.0
    find_links: str  # "": PyPI
    python: frozenset[str]
    grade: str
    sources: tuple[str, ...]
    notes: str = ""


class AmdTorchBuild(NamedTuple):
    """One of AMD's own torch builds (amd-torch.toml): served from AMD's index, with one extra per
    GPU target that brings that target's ROCm libraries."""

    torch: str  # public version: 2.14.0
    local: str  # rocm10.1.0
    rocm: str
    index_url: str  # the data's `index`
    torchvision: str
    torchaudio: str
    python: frozenset[str]
    gfx: dict[str, frozenset[str]]  # platform -> the targets AMD gives a command for there (never mutated)
    grade: str
    sources: tuple[str, ...]
    notes: str = ""
