"""The last release line with kernels for a GPU: where a framework's newer releases carry no code
for the machine's NVIDIA GPU (torch 2.15 dropped Maxwell, Pascal and Volta with CUDA 12), the
answer says which line is its last and the bound that keeps an open spec on it (`torch<2.15`).
Claimed only where every newer release's architecture lists are known and none has the GPU's."""

from __future__ import annotations

from typing import Iterable, NamedTuple, Optional

from packaging.version import Version

from cudafit import rules
from cudafit.records import Build, GpuInfo, Machine, Matrices, Release


class LastLine(NamedTuple):
    family: str
    gpu: str  # "Tesla V100-SXM2-16GB (sm_70)"
    arch: str  # "sm_70"
    last: str  # the newest release with kernels for it: "2.14.1"
    dropped: str  # the oldest newer release without: "2.15.0"
    bound: str  # "<2.15": keeps an open spec on the last line (or "<2.14.2" within one line)
    evidence: str  # how the dropping releases' lists are known: "SASS list measured"

    @property
    def line(self) -> str:
        """'2.14.x' where the bound ends a release line, else the last release itself."""
        last = Version(self.last)
        return f"{last.major}.{last.minor}.x" if self.bound == f"<{Version(self.dropped).major}.{Version(self.dropped).minor}" else self.last


def last_lines(machine: Machine, matrices: Matrices, families: Iterable[tuple[str, tuple[Release, ...]]]) -> tuple[LastLine, ...]:
    """For each family and each NVIDIA GPU of the machine, its last release line, where newer
    releases exist that carry no kernels for it."""
    if machine.platform is None:
        return ()
    out = []
    for family, releases in families:
        for gpu in machine.gpus:
            if (gpu.vendor == "nvidia" and gpu.compute_capability is None) or (gpu.vendor == "amd" and not gpu.target) or gpu.vendor == "intel":
                continue
            found = _last(family, releases, gpu, machine._replace(gpus=(gpu,)), matrices)
            if found is not None:
                out.append(found)
    return tuple(out)


def _last(family: str, releases: tuple[Release, ...], gpu: GpuInfo, machine: Machine, matrices: Matrices) -> Optional[LastLine]:
    newer: list[tuple[Release, list[Build]]] = []  # newest first, each without kernels for the GPU
    kind = "cuda" if gpu.vendor == "nvidia" else "rocm"
    for release in releases:  # newest first
        builds = [b for b in release.builds if b.kind == kind and machine.platform in b.platforms and (kind == "rocm" or b.cuda is not None)]
        if not builds:
            continue  # no build of the GPU's kind on this platform: says nothing of the GPU
        status = _status(builds, machine, matrices) if kind == "cuda" else _rocm_status(builds, machine, matrices)
        if status == "unknown":
            return None  # a list not known: no claim about this release or the ones after it
        if status == "runs":
            if not newer:
                return None  # the newest release runs it: nothing dropped
            dropped, lists = newer[-1]
            return LastLine(
                family=family,
                gpu=gpu.name or rules.gpu_label(gpu),
                arch=f"sm_{gpu.compute_capability[0]}{gpu.compute_capability[1]}" if gpu.compute_capability else gpu.target or "",
                last=str(release.version),
                dropped=str(dropped.version),
                bound=_bound(release.version, dropped.version),
                evidence=_evidence(lists) if kind == "cuda" else _rocm_evidence(lists),
            )
        newer.append((release, builds))
    return None  # no release runs it at all: the answer says so in its own way


def _status(builds: list[Build], machine: Machine, matrices: Matrices) -> str:
    """runs: some build carries code for the GPU; none: every build's lists are known and none
    does; unknown otherwise."""
    any_unknown = False
    for build in builds:
        assert build.cuda is not None  # selected above
        verdict, _jit = rules.check_arch(matrices, machine, build.cuda, build.sass, build.ptx)
        if verdict.ok and build.sass is not None:
            return "runs"
        # a list not known that the toolkit could have filled with the GPU's code: may run
        any_unknown = any_unknown or (verdict.ok and build.sass is None)
    return "unknown" if any_unknown else "none"


def _rocm_status(builds: list[Build], machine: Machine, matrices: Matrices) -> str:
    """As _status, for an AMD GPU: a ROCm build whose list (and rocBLAS) carries its target runs."""
    from cudafit.vendor_rules import judge_rocm

    any_unknown = False
    for build in builds:
        fit = judge_rocm(build, machine, matrices)
        if isinstance(fit, rules.Refusal):
            continue
        if build.gfx is not None:
            return "runs"
        any_unknown = True  # a list not known, and some known list holds the target: may run
    return "unknown" if any_unknown else "none"


def _rocm_evidence(builds: list[Build]) -> str:
    lists = sorted({b.grade("gfx") for b in builds})
    blas = sorted({b.grade("gfx_no_blas") for b in builds if b.gfx_no_blas})
    return f"gfx list {'/'.join(lists)}" + (f", rocBLAS gaps {'/'.join(blas)}" if blas else "")


def _bound(last: Version, dropped: Version) -> str:
    if (last.major, last.minor) != (dropped.major, dropped.minor):
        return f"<{dropped.major}.{dropped.minor}"
    return f"<{dropped.public}"  # dropped within a line (a patch release): the release itself


def _evidence(builds: list[Build]) -> str:
    grades = sorted({b.grade("sass") for b in builds})
    return f"SASS list {'/'.join(grades)}"
