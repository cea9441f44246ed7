"""The last release line with kernels for a GPU: where a framework's newer releases carry no code
for the machine's NVIDIA GPU (torch 2.15 dropped Maxwell, Pascal and Volta with CUDA 12), the
answer says which line is its last and the bound that keeps an open spec on it (`torch<2.15`).
Claimed only where every newer release's architecture lists are known and none has the GPU's, or
where a newer release's builds need a driver past the last branch NVIDIA made for the GPU (R470
for Kepler): no driver the machine can have loads them."""

from __future__ import annotations

from typing import Iterable, NamedTuple, Optional

from packaging.version import Version

from cudafit import rules
from cudafit.records import Build, GpuInfo, Machine, Matrices, Release, driver_key


class LastLine(NamedTuple):
    family: str
    gpu: str  # "Tesla V100-SXM2-16GB (sm_70)"
    arch: str  # "sm_70"
    last: str  # the newest release with kernels for it: "2.14.1"
    dropped: str  # the oldest newer release without: "2.15.0"
    bound: str  # "<2.15": keeps an open spec on the last line (or "<2.14.2" within one line)
    evidence: str  # how the dropping releases' lists are known: "SASS list measured"
    cause: str = "kernels"  # or "driver": the dropping release's builds all need a driver past the GPU's last branch

    @property
    def reach(self) -> str:
        """What the last line is the last of: 'with kernels for sm_70 (Tesla V100...)'."""
        if self.cause == "driver":
            return f"that a driver for {self.arch} ({self.gpu}) loads"
        return f"with kernels for {self.arch} ({self.gpu})"

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
                evidence=_evidence(lists, machine, matrices) if kind == "cuda" else _rocm_evidence(lists),
                cause="driver" if kind == "cuda" and any(_driver_blocks(b, machine, matrices) for b in lists) else "kernels",
            )
        newer.append((release, builds))
    return None  # no release runs it at all: the answer says so in its own way


def _status(builds: list[Build], machine: Machine, matrices: Matrices) -> str:
    """runs: some build carries code for the GPU and loads on a driver it can have; none: every
    build's lists are known and none does, or the ones that do need a driver past its last
    branch; unknown otherwise."""
    any_unknown = False
    for build in builds:
        assert build.cuda is not None  # selected above
        if _driver_blocks(build, machine, matrices):
            continue
        verdict, _jit = rules.check_arch(matrices, machine, build.cuda, build.sass, build.ptx)
        if verdict.ok and build.sass is not None:
            return "runs"
        # a list not known that the toolkit could have filled with the GPU's code: may run
        any_unknown = any_unknown or (verdict.ok and build.sass is None)
    return "unknown" if any_unknown else "none"


def _driver_blocks(build: Build, machine: Machine, matrices: Matrices) -> Optional[str]:
    """Why a build whose kernels may suit the GPU still never loads on it (its driver floor is
    past the GPU's last branch), or None; a build without its kernels is refused by those."""
    assert build.cuda is not None  # CUDA builds only
    past = _past_last_driver(build, machine, matrices)
    if past is None:
        return None
    verdict, _jit = rules.check_arch(matrices, machine, build.cuda, build.sass, build.ptx)
    return past if verdict.ok else None


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


def _past_last_driver(build: Build, machine: Machine, matrices: Matrices) -> Optional[str]:
    """'needs driver 525.60.13+, past Kepler's last branch R470' where the build's driver floor is
    on a branch after the last one for the machine's GPU; Linux only, where driver numbers name
    their branch (Windows builds of a branch run past it)."""
    if build.cuda is None or machine.os in ("windows", "wsl"):
        return None
    floor, _rule = rules.driver_floor(matrices, machine, build.cuda, False)
    for gpu in machine.gpus:
        arch = matrices.architecture(gpu.compute_capability) if gpu.compute_capability else None
        if floor and arch is not None and arch.last_driver and driver_key(floor)[0] > driver_key(arch.last_driver)[0]:
            return f"needs driver {floor}+, past {arch.name}'s last branch R{arch.last_driver}"
    return None


def _evidence(builds: list[Build], machine: Machine, matrices: Matrices) -> str:
    past = sorted({why for b in builds if (why := _driver_blocks(b, machine, matrices))})
    listed = [b for b in builds if not _driver_blocks(b, machine, matrices)]
    grades = sorted({b.grade("sass") for b in listed})
    return "; ".join(([f"SASS list {'/'.join(grades)}"] if grades else []) + past)
