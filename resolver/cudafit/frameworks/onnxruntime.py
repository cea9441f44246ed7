"""ONNX Runtime GPU (onnxruntime-gpu): the releases whose CUDA build runs here, best first.

Each release publishes a CUDA build per flavour (cu12 on PyPI, cu11 or cu13 where the data says
where they live); its `cuda`/`cudnn` extras bring the nvidia-* wheels, whose pins the joint solve
intersects with the other frameworks' (the cuDNN major is where ONNX Runtime beside torch breaks).
Preference: builds whose architecture list is known, then the newest release, then the highest
CUDA the driver runs. onnxruntime-gpu has no CPU-only answer: without an NVIDIA GPU the answer is
the `onnxruntime` package, which this provider does not resolve."""

from __future__ import annotations

from typing import Optional, Union

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cudafit import evidence, rules
from cudafit.answers import Candidate, PackagePin, Rejection
from cudafit.frameworks.base import extras_always_fit, implied_none, named, pairs_itself, rank_builds
from cudafit.records import Build, Constraint, Machine, Matrices, OrtRelease, Policy, Shortfall

FAMILY = "onnxruntime-gpu"
MEMBERS = ("onnxruntime-gpu",)
REQUIRES: tuple[str, ...] = ()  # built against no other family
BRINGS: tuple[str, ...] = ()
COMPANIONS: tuple[str, ...] = ()


def known_extras(matrices: Matrices) -> set[str]:
    return {extra for r in releases(matrices) for b in r.builds for extra in b.extras}


def releases(matrices: Matrices) -> tuple[OrtRelease, ...]:
    return matrices.frameworks.get(FAMILY, ())


implied = implied_none
check_extras = extras_always_fit
pairs = pairs_itself


def candidates(
    specs: dict[str, SpecifierSet], machine: Machine, matrices: Matrices, policy: Policy, extras: frozenset[str] = frozenset()
) -> tuple[list[Candidate], list[Rejection]]:
    driver_problem = rules.check_gpu_support_by_driver(matrices, machine)

    def judge(release: OrtRelease, build: Build) -> Union[Rejection, tuple[tuple[int, int], Candidate]]:
        verdict = _judge(release, build, machine, matrices, policy, driver_problem)
        if isinstance(verdict, Rejection):
            return verdict
        tier, why, warnings = verdict
        preference = -(build.cuda.minor if build.cuda else 0) - build.major * 1000
        return (tier, preference), _candidate(release, build, extras, why, warnings, machine)

    return rank_builds(FAMILY, releases(matrices), specs.get(FAMILY, SpecifierSet()), machine, judge)


def _judge(
    release: OrtRelease, build: Build, machine: Machine, matrices: Matrices, policy: Policy, driver_problem: Optional[str]
) -> Union[Rejection, tuple[int, tuple[str, ...], tuple[str, ...]]]:
    def reject(constraint: Constraint, reason: str, shortfall: Optional[Shortfall] = None) -> Rejection:
        return Rejection(FAMILY, release.version, build.tag, constraint, reason, shortfall=shortfall)

    if policy.cpu or not rules.gpu_usable(machine):
        return reject("accelerator", f"{FAMILY} is the CUDA build of ONNX Runtime; without an NVIDIA GPU use onnxruntime")
    # With the build's CUDA unknown, its major decides the driver floor (minor-version compatibility).
    cuda = build.cuda or Version(f"{build.major}.0")
    verdict = rules.judge_cuda_build(matrices, machine, cuda, build.sass, build.ptx, policy.strict_driver, driver_problem)
    if verdict.rejection:
        return reject(*verdict.rejection)
    warnings = named(f"{FAMILY} {release.version}+{build.tag}", verdict.warnings)
    if build.cudnn is None:
        warnings.append(f"cuDNN of {FAMILY} {release.version}+{build.tag} is unknown in cudafit's data")
    unverified = build.sass is None and any(g.compute_capability for g in machine.gpus)
    tier = 2 if verdict.needs_jit else (1 if unverified else 0)
    if not build.extras:
        # Before the cuda/cudnn extras (1.21) the wheel brings no CUDA libraries: the machine must
        # have them, so a build that brings its own ranks first.
        tier += 1
        warnings.append(
            f"{FAMILY} {release.version} brings no CUDA libraries: CUDA {build.major}.x and cuDNN {build.cudnn or 'unknown'} must be installed on the system"
        )
    facts = evidence.describe(build.evidence)
    why = (f"CUDA {build.cuda or f'{build.major}.x'} build; {verdict.reason}; {facts}",)
    return tier, why, tuple(warnings)


def _candidate(release: OrtRelease, build: Build, extras: frozenset[str], why: tuple[str, ...], warnings: tuple[str, ...], machine: Machine) -> Candidate:
    # The extras that bring the CUDA libraries as wheels, unless the spec chose its own.
    chosen = tuple(sorted(extras)) if extras else build.extras
    pin = PackagePin(build.package, str(release.version), None, build.tag, build.index_url or None, extras=chosen)
    return Candidate(
        family=FAMILY,
        version=release.version,
        tag=build.tag,
        kind="cuda",
        packages=(pin,),
        cuda=str(build.cuda) if build.cuda else f"{build.major}",
        cudnn=build.cudnn,
        pins=dict(build.pins or {}) if chosen else {},
        pins_known=build.pins is not None or not chosen,
        verified=build.sass is not None or not any(g.compute_capability for g in machine.gpus),
        why=why,
        warnings=warnings,
        evidence=dict(build.evidence),
    )
