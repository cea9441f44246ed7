"""TensorFlow on AMD GPUs: AMD's tensorflow-rocm builds (amd-tensorflow.toml), each linked against
one ROCm release that the host must have installed (it brings none). Which GPU targets a build
carries is not recorded, so a GPU is accepted only where some known ROCm build's list holds its
target (vendor_rules). Imported only where an AMD GPU is answered."""

from __future__ import annotations

from typing import Union

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cudafit.answers import VERSION_SPEC, Candidate, PackagePin, Rejection
from cudafit.frameworks.base import python_range
from cudafit.gpu_tables import AmdTfBuild
from cudafit.records import Build, Evidence, Machine, Matrices, Shortfall
from cudafit.rules import Refusal
from cudafit.vendor_rules import judge_rocm

FAMILY = "tensorflow"
PACKAGE = "tensorflow-rocm"


def candidates(spec: SpecifierSet, ages: dict[Version, int], machine: Machine, matrices: Matrices) -> tuple[list[tuple[tuple, Candidate]], list[Rejection]]:
    """AMD's builds that run here, each with its sort key, and why the others do not."""
    found: list[tuple[tuple, Candidate]] = []
    rejected: list[Rejection] = []
    for build in matrices.amd_tensorflow:
        version = Version(build.version)
        result = _judge(build, version, spec, ages, machine, matrices)
        if isinstance(result, Rejection):
            rejected.append(result)
        else:
            found.append(result)
    return found, rejected


def _judge(
    build: AmdTfBuild, version: Version, spec: SpecifierSet, ages: dict[Version, int], machine: Machine, matrices: Matrices
) -> Union[Rejection, tuple[tuple, Candidate]]:
    tag = f"rocm{build.rocm}"
    upstream = Version(build.tensorflow)
    if not spec.contains(upstream, prereleases=True):
        return Rejection(FAMILY, version, tag, "spec", f"is a build of TensorFlow {upstream}, which does not satisfy tensorflow{spec}", cause=VERSION_SPEC)
    if machine.platform != "linux-x86_64":
        return Rejection(FAMILY, version, tag, "platform", f"{PACKAGE} has wheels for linux-x86_64 only")
    if machine.python is not None and machine.python not in build.python:
        has = python_range(build.python)
        shortfall = Shortfall("python", has, machine.python)
        return Rejection(FAMILY, version, tag, "python", f"no {PACKAGE} wheel for Python {machine.python} (has {has})", shortfall=shortfall)
    known = Evidence(build.grade, build.sources)
    as_build = Build(tag=tag, kind="rocm", platforms=frozenset(("linux-x86_64",)), rocm=build.rocm, evidence={"exists": known})
    fit = judge_rocm(as_build, machine, matrices)
    if isinstance(fit, Refusal):
        return Rejection(FAMILY, version, tag, fit.constraint, fit.reason, shortfall=fit.shortfall)
    have = machine.rocm
    if have is not None and Version(have or "0").release[:2] != Version(build.rocm).release[:2]:
        reason = f"{PACKAGE} {version} links ROCm {build.rocm} from the host, and the host has " + (f"ROCm {have}" if have else "no ROCm")
        return Rejection(FAMILY, version, tag, "driver", reason, shortfall=Shortfall("rocm", build.rocm, have or "none"))
    warnings = list(fit.warnings)
    if have is None:
        warnings.append(f"{PACKAGE} {version} links ROCm {build.rocm} from the host (/opt/rocm); the host's ROCm was not given (--rocm): not checked")
    where = f"from {build.find_links} (pip -f)" if build.find_links else "from PyPI"
    why = f"AMD's {PACKAGE} {version} {where}, a build of TensorFlow {upstream} for ROCm {build.rocm} on the host; {fit.why}; facts: build {known}"
    pin = PackagePin(PACKAGE, build.version, None, tag, None, find_links=build.find_links or None)
    candidate = Candidate(
        family=FAMILY,
        version=version,
        tag=tag,
        kind="rocm",
        packages=(pin,),
        cuda=None,
        cudnn=None,
        pins={},
        why=(why,),
        warnings=tuple(warnings) + ((build.notes,) if build.notes else ()),
        evidence={"exists": known},
        environment=fit.environment,
        rocm=build.rocm,
    )
    # a build whose host ROCm is unchecked ranks after one whose host ROCm is known to match, and
    # one only reported to exist after one AMD declares
    return (fit.tier + int(have is None) + int(build.grade == "reported"), ages.get(upstream, len(ages))), candidate
