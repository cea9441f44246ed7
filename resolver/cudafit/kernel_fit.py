"""Which precisions and fast kernels each GPU gets with the chosen (or installed) framework
versions, from matrices/kernels.toml: "why is my T4 slow with bf16" answered before the run.

Per GPU and per (feature, framework), the fact that applies is the one whose version range holds
the framework's version, the most specific first (the latest `since`), a declared one before a
reported one; hardware facts (no framework) stand for the GPU itself."""

from __future__ import annotations

from typing import NamedTuple, Optional

from packaging.version import Version

from cudafit.kernel_data import KernelFact
from cudafit.records import GRADES, GpuInfo

# the features worth a line, in the order a reader meets them; the rest stay in the JSON
SHOWN = (
    "fp16-tensor-cores",
    "bf16",
    "tf32",
    "fp8",
    "fp4",
    "sdpa-flash",
    "sdpa-mem-efficient",
    "sdpa-cudnn",
    "flash-attention-2",
    "flash-attention-3",
    "xformers-memory-efficient-attention",
    "bnb-llm-int8",
)


class Fit(NamedTuple):
    gpu: str
    arch: str  # sm_75
    feature: str
    framework: str  # "" for the hardware
    version: str  # the framework version it was judged for ("" for the hardware)
    available: bool
    outside: str  # what the GPU sees where it is not available: error | slow | unavailable | falls-back
    grade: str
    sources: tuple[str, ...]
    note: str


def fit(gpus: tuple[GpuInfo, ...], versions: dict[str, Version], facts: tuple[KernelFact, ...]) -> list[Fit]:
    """For each NVIDIA GPU of known compute capability, each feature the facts hold for it and the
    frameworks in `versions` (a family or distribution name -> its version)."""
    out = []
    for gpu in gpus:
        if gpu.vendor != "nvidia" or gpu.compute_capability is None:
            continue
        cc = gpu.compute_capability
        chosen: dict[tuple[str, str], tuple[KernelFact, str]] = {}
        for fact in facts:
            framework, version = _applies(fact, versions)
            if framework is None:
                continue
            key = (fact.name, framework)
            if key not in chosen or _rank(fact, framework) > _rank(chosen[key][0], framework):
                chosen[key] = (fact, version)
        for (name, framework), (fact, version) in chosen.items():
            available = fact.covers(cc)
            outside = fact.above if not available and fact.above and fact.max_cc is not None and cc > fact.max_cc else fact.below
            out.append(
                Fit(
                    gpu.name or "GPU",
                    f"sm_{cc[0]}{cc[1]}",
                    name,
                    framework,
                    version,
                    available,
                    "" if available else outside,
                    fact.grade,
                    fact.sources,
                    fact.note,
                )
            )
    return out


def _applies(fact: KernelFact, versions: dict[str, Version]) -> tuple[Optional[str], str]:
    """(the framework it is judged for, its version): ("", "") for a hardware fact; (None, "")
    where it concerns no framework in the set or not this version."""
    if not fact.frameworks:
        return "", ""
    for framework in fact.frameworks:
        version = versions.get(framework)
        if version is None:
            continue
        since, until = fact.since.get(framework), fact.until.get(framework)
        if since is not None and _release(version) < _release(since):
            continue
        if until is not None and _release(version)[: len(until.release)] > until.release:
            continue
        return framework, str(version)
    return None, ""


def _release(v: Version) -> tuple[int, ...]:
    return v.release + (0,) * (4 - len(v.release))


def _rank(fact: KernelFact, framework: str) -> tuple:
    since = fact.since.get(framework)
    trust = len(GRADES) - GRADES.index(fact.grade) if fact.grade in GRADES else 0
    return (trust, _release(since) if since is not None else ())


# what the GPU has in hardware says these best; a framework's fact names one operator of many
# (torch's MXFP4 matmul is for sm_100 alone, while NVFP4 runs on sm_120 too)
HARDWARE_FIRST = frozenset(("fp16-tensor-cores", "fp8", "fp4"))


def shown(fits: list[Fit]) -> dict[str, list[Fit]]:
    """Per GPU label, the features worth a line: for behaviour (bf16, TF32, attention kernels) a
    framework's own fact over the hardware's, for the number formats the hardware's."""
    out: dict[str, list[Fit]] = {}
    for name in SHOWN:
        for f in fits:
            if f.feature != name:
                continue
            label = f"{f.gpu} ({f.arch})"
            same = [g for g in out.get(label, []) if g.feature == name]
            prefer_framework = name not in HARDWARE_FIRST
            if same and (bool(same[0].framework) == prefer_framework or bool(f.framework) != prefer_framework):
                continue  # one line a feature
            out[label] = [g for g in out.get(label, []) if g.feature != name] + [f]
    return out
