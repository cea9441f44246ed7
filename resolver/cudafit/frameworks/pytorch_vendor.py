"""torch on AMD and Intel GPUs: the PyTorch index's ROCm and XPU builds judged against the GPUs
(vendor_rules.py holds the rules), and AMD's own builds (amd-torch.toml), served from AMD's index:
the only ROCm builds for Windows, and the only ones whose ROCm libraries come for the GPU's own
target alone (one extra per target: torch[device-gfx1100]). Imported only where an AMD or Intel
GPU is described or detected."""

from __future__ import annotations

from typing import Optional, Union

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cudafit import evidence
from cudafit.answers import VERSION_SPEC, Candidate, PackagePin, Rejection
from cudafit.frameworks.base import python_range
from cudafit.gpu_tables import AmdTorchBuild
from cudafit.records import Build, Evidence, Machine, Matrices, Policy, Shortfall, TorchRelease
from cudafit.rules import Refusal
from cudafit.vendor_rules import Fit, judge_rocm, judge_xpu

FAMILY = "torch"
# AMD's per-target device wheels come in families too (aotriton kernels); PyPI holds placeholders
# of these names, so they must come from AMD's index (amd-torch.toml, pypi-placeholders)
_KERNEL_FAMILIES = {"gfx110": "gfx110x", "gfx115": "gfx115x"}


def judge_index_build(release: TorchRelease, variant: Build, machine: Machine, matrices: Matrices, policy: Policy) -> Union[Rejection, tuple]:
    """A ROCm or XPU build of the PyTorch index: a Rejection, or ((sort key), why, warnings, environment)."""
    fit = judge_rocm(variant, machine, matrices) if variant.kind == "rocm" else judge_xpu(variant, machine)
    if isinstance(fit, Refusal):
        shown = evidence.describe(variant.evidence, False) if fit.shortfall else ""
        return Rejection(FAMILY, release.version, variant.tag, fit.constraint, fit.reason, shown, shortfall=fit.shortfall)
    if policy.cpu:
        return Rejection(FAMILY, release.version, variant.tag, "accelerator", f"{variant.tag} build; --cpu asked for a CPU build")
    # the newer ROCm first within a release (its libraries know the newer GPUs)
    newer = -_rocm_rank(variant.rocm or "0")
    # a build only reported to exist (the 2.15 ROCm folders) yields to one the project declares:
    # an answer that 404s at install is worse than one release older
    hearsay = int(variant.grade("exists") == "reported")
    return ((fit.tier + hearsay, (0, newer)), (f"{fit.why}; {evidence.describe(variant.evidence, False)}",), fit.warnings, fit.environment)


def amd_candidates(
    specs: dict[str, SpecifierSet], tags: set[str], machine: Machine, matrices: Matrices, policy: Policy
) -> tuple[list[tuple[tuple, Candidate]], list[Rejection]]:
    """AMD's builds that run here, each with its sort key: a release's PyTorch index builds come
    first, AMD's after them (the PyTorch index is the project's own; AMD's is the only route on
    Windows and for a release the index has no ROCm build of that target for)."""
    if policy.cpu or not machine.platform:
        return [], []
    ages = {r.version: age for age, r in enumerate(matrices.torch)}
    found: list[tuple[tuple, Candidate]] = []
    rejected: list[Rejection] = []
    for build in matrices.amd_torch:
        version = Version(build.torch)
        targets = build.gfx.get(machine.platform)
        if targets is None or version not in ages:
            continue
        reason = _spec_problem(build, specs, tags, version)
        if reason is not None:
            rejected.append(Rejection(FAMILY, version, build.local, "spec", reason, cause=VERSION_SPEC))
            continue
        if machine.python is not None and machine.python not in build.python:
            has = python_range(build.python)
            shortfall = Shortfall("python", has, machine.python)
            rejected.append(Rejection(FAMILY, version, build.local, "python", f"no wheel for Python {machine.python} (has {has})", shortfall=shortfall))
            continue
        as_build = _as_build(build, targets, machine.platform)
        fit = judge_rocm(as_build, machine, matrices)
        if isinstance(fit, Refusal):
            rejected.append(Rejection(FAMILY, version, build.local, fit.constraint, fit.reason, shortfall=fit.shortfall))
            continue
        key = (fit.tier, ages[version], (1, -_rocm_rank(build.rocm)))
        found.append((key, _candidate(build, as_build, version, fit, specs, machine)))
    return found, rejected


def _spec_problem(build: AmdTorchBuild, specs: dict[str, SpecifierSet], tags: set[str], version: Version) -> Optional[str]:
    if tags and build.local not in tags:
        return f"the spec names the +{next(iter(tags))} build"
    for name in ("torch", "torchvision", "torchaudio"):
        spec = specs.get(name)
        paired = version if name == "torch" else Version(getattr(build, name))
        if spec is not None and not spec.contains(paired, prereleases=True):
            return f"AMD's build pairs with {name} {paired}, which does not satisfy {name}{spec}" if name != "torch" else f"does not satisfy torch{spec}"
    return None


def _as_build(build: AmdTorchBuild, targets: frozenset[str], platform: str) -> Build:
    known = Evidence(build.grade, build.sources)
    return Build(
        tag=build.local,
        kind="rocm",
        platforms=frozenset((platform,)),
        rocm=build.rocm,
        gfx=targets,
        rocm_libraries="device-extras",
        index_url=build.index_url,
        notes=build.notes,
        evidence={"exists": known, "gfx": known},
    )


def _candidate(build: AmdTorchBuild, as_build: Build, version: Version, fit: Fit, specs: dict[str, SpecifierSet], machine: Machine) -> Candidate:
    extras = tuple(f"device-{t}" for t in fit.targets)
    packages = [PackagePin("torch", build.torch, build.local, build.local, build.index_url, extras=extras)]
    if "torchvision" in specs:
        packages.append(PackagePin("torchvision", build.torchvision, build.local, build.local, build.index_url, extras=extras))
    if "torchaudio" in specs:
        packages.append(PackagePin("torchaudio", build.torchaudio, build.local, build.local, build.index_url))
    served = ["rocm", "rocm-sdk-core", "rocm-sdk-libraries"]
    for target in fit.targets:
        served += [f"rocm-sdk-device-{target}", f"amd-torch-device-{target}"]
        if "torchvision" in specs:
            served.append(f"amd-torchvision-device-{target}")
        family = _KERNEL_FAMILIES.get(target[:6])
        if family:
            served.append(f"amd-torch-device-{family}")
    why = f"AMD's build from its own index ({build.index_url}); {fit.why}; {evidence.describe(as_build.evidence, False)}"
    warnings = list(fit.warnings)
    if machine.os == "windows":
        warnings.append(
            f"torch {version}+{build.local} on Windows runs on the Adrenalin driver, with no ROCm installed: keep the driver current "
            "(third parties report 26.6.4 or newer for ROCm 7.14)"
        )
    return Candidate(
        family=FAMILY,
        version=version,
        tag=build.local,
        kind="rocm",
        packages=tuple(packages),
        cuda=None,
        cudnn=None,
        pins={},
        why=(why,),
        warnings=tuple(warnings),
        evidence=dict(as_build.evidence),
        environment=fit.environment,
        index_packages=tuple(dict.fromkeys(served)),
        rocm=build.rocm,
    )


def _rocm_rank(rocm: str) -> int:
    """7.14 above 7.2 above 6.4.3: each dotted part compared as a number."""
    parts = [int(p) for p in rocm.split(".") if p.isdigit()][:3]
    parts += [0] * (3 - len(parts))
    return parts[0] * 10_000 + parts[1] * 100 + parts[2]
