"""xformers: the releases whose CUDA build runs beside a torch build here, best first.

xformers is built against one torch and one CUDA: its wheel requires a torch version (`pins.torch`,
from its metadata), and its compiled extension links the CUDA runtime of one major, which torch's
CUDA wheels bring. So it goes with a torch build of that version and that CUDA major (the solver
checks both, as a requirement and as the CUDA major every chosen build shares), and its kernels
must cover the GPU. It loads no cuDNN."""

from __future__ import annotations

from typing import Optional

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cudafit import evidence, rules
from cudafit.frameworks.base import extras_always_fit, implied_none, pairs_itself, rank_builds
from cudafit.frameworks.xformers_data import DATA_PREFIX, read_file  # noqa: F401 (the provider reads its own files)
from cudafit.records import Build, Candidate, LibraryRelease, Machine, Matrices, PackagePin, Policy, Rejection

FAMILY = "xformers"
MEMBERS = ("xformers",)
REQUIRES = ("torch",)  # the framework it is built against: a solve with xformers solves torch too


def known_extras(matrices: Matrices) -> set[str]:
    return set()


def releases(matrices: Matrices) -> tuple[LibraryRelease, ...]:
    return matrices.frameworks.get(FAMILY, ())


implied = implied_none
check_extras = extras_always_fit
pairs = pairs_itself


def candidates(
    specs: dict[str, SpecifierSet], machine: Machine, matrices: Matrices, policy: Policy, extras: frozenset[str] = frozenset()
) -> tuple[list[Candidate], list[Rejection]]:
    driver_problem = rules.check_gpu_support_by_driver(matrices, machine)

    def judge(release: LibraryRelease, build: Build):
        verdict = _judge(release, build, machine, matrices, policy, driver_problem)
        if isinstance(verdict, Rejection):
            return verdict
        tier, why, warnings = verdict
        return (tier,), _candidate(release, build, why, warnings)

    return rank_builds(FAMILY, releases(matrices), specs.get(FAMILY, SpecifierSet()), machine, judge)


def _judge(release: LibraryRelease, build: Build, machine: Machine, matrices: Matrices, policy: Policy, driver_problem: Optional[str]):
    def reject(constraint: str, reason: str) -> Rejection:
        return Rejection(FAMILY, release.version, build.tag, constraint, reason, evidence.describe(build.evidence))

    if policy.cpu or machine.os == "macos" or (machine.driver_known and machine.driver is None):
        return reject("accelerator", "xformers' PyPI wheels are CUDA builds; without an NVIDIA GPU they have no kernels to run")
    cuda = build.cuda or Version(f"{build.major}.0")
    verdict = rules.judge_cuda_build(matrices, machine, cuda, build.sass, build.ptx, policy.strict_driver, driver_problem)
    if verdict.rejection:
        return reject(*verdict.rejection)
    tier = 2 if verdict.needs_jit else 0
    why = (f"CUDA {build.cuda} build; {verdict.reason}; {evidence.describe(build.evidence)}",)
    return tier, why, tuple(verdict.warnings)


def _candidate(release: LibraryRelease, build: Build, why: tuple[str, ...], warnings: tuple[str, ...]) -> Candidate:
    pins = dict(build.pins or {})
    requires = {"torch": pins.pop("torch")} if "torch" in pins else {}
    return Candidate(
        family=FAMILY,
        version=release.version,
        tag=build.tag,
        kind="cuda",
        packages=(PackagePin("xformers", str(release.version), None, build.tag, build.index_url or None, pypi_build=True),),
        cuda=str(build.cuda) if build.cuda else None,
        cudnn=None,
        pins=pins,
        pins_known=build.pins is not None,
        verified=build.sass is not None,
        why=why,
        warnings=warnings,
        evidence=dict(build.evidence),
        requires=requires,
        loads_cudnn=False,
    )
