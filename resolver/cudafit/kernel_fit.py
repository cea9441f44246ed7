"""Which precisions and fast kernels each GPU gets with the chosen (or installed) framework
versions, from matrices/kernels.toml: "why is my T4 slow with bf16" answered before the run.

Per GPU and per (feature, framework), the fact that applies is the one whose version range holds
the framework's version (the data holds one per version; where two would, a declared one before a
reported one, then the latest `since`). Hardware facts (no framework) are the GPU's own and stay
apart from the frameworks': the GPU has FP8, torch's _scaled_mm runs it, TensorFlow says nothing."""

from __future__ import annotations

from typing import NamedTuple, Optional

from packaging.version import Version

from cudafit.records import CC, GRADES, GpuInfo


class KernelFact(NamedTuple):
    id: str
    name: str  # bf16, fp8, sdpa-flash, flash-attention-2, ...
    min_cc: CC
    max_cc: Optional[CC]  # inclusive
    only_cc: tuple[CC, ...]  # where it is a list, not a range
    below: str  # what a GPU outside sees: BELOW
    frameworks: tuple[str, ...]  # () for a hardware fact
    since: dict[str, Version]  # framework -> the first version it holds for
    until: dict[str, Version]  # framework -> the last release line it holds for ("2.2": every 2.2.x)
    grade: str
    sources: tuple[str, ...]
    note: str = ""
    above: str = ""  # what a GPU above max_cc sees, where it differs from `below`
    # where the framework leaves it off until asked (a switch, an environment variable, a backend
    # chosen by hand): every GPU it covers (True), or those listed; () and False: no such claim
    opt_in: bool = False
    opt_in_cc: tuple[CC, ...] = ()

    def covers(self, cc: CC) -> bool:
        if self.only_cc:
            return cc in self.only_cc
        return cc >= self.min_cc and (self.max_cc is None or cc <= self.max_cc)

    def opt_in_on(self, cc: CC) -> bool:
        """Whether a GPU it covers gets it only when asked for."""
        return self.covers(cc) and (self.opt_in or cc in self.opt_in_cc)


# the features worth a word in the text, in the order a reader meets them; the rest stay in the JSON
SHOWN = (
    "fp16-tensor-cores",
    "bf16",
    "tf32",
    "tf32-matmul",
    "tf32-cudnn",
    "fp8",
    "fp4",
    "mxfp4",
    "nvfp4",
    "sdpa-flash",
    "sdpa-mem-efficient",
    "sdpa-cudnn",
    "flash-attention-2",
    "flash-attention-3",
    "xformers-memory-efficient-attention",
    "bnb-llm-int8",
)
# a framework's feature -> the GPU's own feature it runs on, where the names differ
HARDWARE_OF = {"tf32-matmul": "tf32", "tf32-cudnn": "tf32", "mxfp4": "fp4", "nvfp4": "fp4"}
# the feature of a framework's one Fit on a GPU its installed build has no kernels for (doctor):
# its facts there are not judged, and `note` says why
DOES_NOT_RUN = "does-not-run"


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
    opt_in: bool = False  # available, but the framework leaves it off until asked (the data's opt_in)


class Part(NamedTuple):
    """One owner's share of a GPU's line: the GPU itself (framework "") or a framework version."""

    framework: str
    version: str
    fits: tuple[Fit, ...]


def fit(gpus: tuple[GpuInfo, ...], versions: dict[str, Version], facts: tuple[KernelFact, ...]) -> list[Fit]:
    """For each NVIDIA GPU of known compute capability (once per model), each feature the facts
    hold for it and the frameworks in `versions` (a family or distribution name -> its version)."""
    out = []
    seen = set()
    for gpu in gpus:
        if gpu.vendor != "nvidia" or gpu.compute_capability is None or (gpu.name, gpu.compute_capability) in seen:
            continue
        seen.add((gpu.name, gpu.compute_capability))
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
                    *_label(gpu),
                    name,
                    framework,
                    version,
                    available,
                    "" if available else outside,
                    fact.grade,
                    fact.sources,
                    fact.note,
                    opt_in=fact.opt_in_on(cc),
                )
            )
    return out


def _label(gpu: GpuInfo) -> tuple[str, str]:
    cc = gpu.compute_capability or (0, 0)
    return gpu.name or "GPU", f"sm_{cc[0]}{cc[1]}"


def cannot_run(fits: list[Fit], gpu: GpuInfo, framework: str, version: str, why: str) -> list[Fit]:
    """The fits with none of `framework`'s facts on `gpu`, where its build does not run: one
    DOES_NOT_RUN Fit in their place, whose note says why."""
    name, arch = _label(gpu)
    kept = [f for f in fits if not (f.gpu == name and f.arch == arch and f.framework == framework)]
    return kept + [Fit(name, arch, DOES_NOT_RUN, framework, version, False, "error", "", (), why)]


def _applies(fact: KernelFact, versions: dict[str, Version]) -> tuple[Optional[str], str]:
    """(the framework it is judged for, its version): ("", "") for a hardware fact; (None, "")
    where it concerns no framework in the set or not this version."""
    if not fact.frameworks:
        return "", ""
    for framework in fact.frameworks:
        version = versions.get(framework)
        if version is not None and holds(fact, framework, version):
            return framework, str(version)
    return None, ""


def holds(fact: KernelFact, framework: str, version: Version) -> bool:
    """Whether the fact's version range (since, until: a release line) holds the version."""
    since, until = fact.since.get(framework), fact.until.get(framework)
    if since is not None and _release(version) < _release(since):
        return False
    return until is None or _release(version)[: len(until.release)] <= until.release


def _release(v: Version) -> tuple[int, ...]:
    return v.release + (0,) * (4 - len(v.release))


def _rank(fact: KernelFact, framework: str) -> tuple:
    since = fact.since.get(framework)
    trust = len(GRADES) - GRADES.index(fact.grade) if fact.grade in GRADES else 0
    return (trust, _release(since) if since is not None else ())


def shown(fits: list[Fit]) -> dict[str, list[Part]]:
    """Per GPU label, what its line says: the GPU's own features first, then each framework's
    (in the order the facts name them), each the very Fit the JSON reports. A framework's fact
    about a format the GPU lacks is left to the JSON unless it says more than that lack: the
    format runs anyway, slowly (bf16 on a T4), or the framework's own operator for it fails."""
    grouped: dict[str, list[Fit]] = {}
    for f in fits:
        grouped.setdefault(f"{f.gpu} ({f.arch})", []).append(f)
    out: dict[str, list[Part]] = {}
    for label, mine in grouped.items():
        hardware = {f.feature: f for f in mine if not f.framework}
        owners: dict[tuple[str, str], list[Fit]] = {("", ""): []}
        for f in mine:
            owners.setdefault((f.framework, f.version), []).append(f)
        parts = []
        for (framework, version), group in owners.items():
            said = [f for name in SHOWN for f in group if f.feature == name and (not framework or _adds(f, hardware))]
            said += [f for f in group if f.feature == DOES_NOT_RUN]
            if said:
                parts.append(Part(framework, version, tuple(said)))
        out[label] = parts
    return out


def _adds(f: Fit, hardware: dict[str, Fit]) -> bool:
    gpu = hardware.get(HARDWARE_OF.get(f.feature, f.feature))
    if f.available or gpu is None or gpu.available:
        return True
    return f.outside == "slow" or (f.outside == "error" and f.feature == gpu.feature)
