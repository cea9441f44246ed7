"""JAX on AMD GPUs: the ROCm plugin builds (jax[rocm7-local]) that run here, and the CPU build
after them. The plugin brings no ROCm: it loads the ROCm release it was built against, from the
host (/opt/rocm) or, for TheRock-era plugins, from AMD's rocm wheels in the same environment,
which the answer then installs. Imported only where an AMD GPU is answered."""

from __future__ import annotations

from typing import Union

from packaging.version import Version

from cudafit import evidence
from cudafit.answers import Candidate, PackagePin, Rejection
from cudafit.frameworks.base import python_range
from cudafit.records import Build, Constraint, Machine, Matrices, Release, Shortfall
from cudafit.rules import Refusal
from cudafit.vendor_rules import Fit, judge_rocm

FAMILY = "jax"


def candidates(
    release: Release, wanted: frozenset[str], age: int, machine: Machine, matrices: Matrices
) -> tuple[list[tuple[tuple, Candidate]], list[Rejection]]:
    """The release's ROCm builds that run here (each with its sort key), and why the others do not."""
    from packaging.utils import canonicalize_name

    found: list[tuple[tuple, Candidate]] = []
    rejected: list[Rejection] = []
    for build in release.builds:
        if build.kind != "rocm" or (wanted and str(canonicalize_name(build.extra)) not in wanted):
            continue
        result = _judge(release, build, machine, matrices)
        if isinstance(result, Rejection):
            rejected.append(result)
            continue
        tier, candidate = result
        found.append(((tier, age, 0), candidate))
    return found, rejected


def _judge(release: Release, build: Build, machine: Machine, matrices: Matrices) -> Union[Rejection, tuple[int, Candidate]]:
    def reject(constraint: Constraint, reason: str, shortfall: Union[Shortfall, None] = None) -> Rejection:
        return Rejection(FAMILY, release.version, build.tag, constraint, reason, shortfall=shortfall)

    if machine.platform not in build.platforms:
        return reject("platform", f"jax[{build.extra}] has wheels for {', '.join(sorted(build.platforms))} only")
    pythons = build.python if build.python is not None else release.python
    if machine.python is not None and machine.python not in pythons:
        has = python_range(pythons)
        return reject("python", f"jax[{build.extra}] has no plugin wheel for Python {machine.python} (has {has})", Shortfall("python", has, machine.python))
    fit = judge_rocm(build, machine, matrices)
    if isinstance(fit, Refusal):
        return reject(fit.constraint, fit.reason, fit.shortfall)
    host = _host(build, machine)
    if isinstance(host, Rejection):
        return host._replace(version=release.version)
    tier, why, warnings, wheels = host
    packages = [PackagePin("jax", str(release.version), None, build.tag, None, extras=(build.extra,))]
    served: tuple[str, ...] = ()
    if wheels:
        extras = ("libraries", *(f"device-{t}" for t in fit.targets))
        packages.append(PackagePin("rocm", build.rocm_wheels, None, build.tag, build.rocm_index, extras=extras, supports=FAMILY))
        served = ("rocm", "rocm-sdk-core", "rocm-sdk-libraries", *(f"rocm-sdk-device-{t}" for t in fit.targets))
    candidate = Candidate(
        family=FAMILY,
        version=release.version,
        tag=build.tag,
        kind="rocm",
        packages=tuple(packages),
        cuda=None,
        cudnn=None,
        pins={},
        # where AMD's rocm wheels come with it, saying so is the last reason (solve drops it where
        # another chosen build brings them)
        why=(f"jax[{build.extra}]: {_kernels(fit, build)}; {evidence.describe(build.evidence, False)}", why),
        warnings=tuple(fit.warnings) + warnings,
        evidence=dict(build.evidence),
        environment=fit.environment,
        index_packages=served,
        rocm=build.rocm,
    )
    return fit.tier + tier, candidate


def _kernels(fit: Fit, build: Build) -> str:
    return f"kernels for {', '.join(fit.targets)} [gfx list {build.grade('gfx')}]"


def _host(build: Build, machine: Machine) -> Union[Rejection, tuple[int, str, tuple[str, ...], bool]]:
    """Where the plugin finds its ROCm here: (tier, why, warnings, whether AMD's rocm wheels are
    installed with it), or why it cannot."""
    need = build.rocm or ""
    have = machine.rocm
    same = bool(have) and Version(have or "0").release[:2] == Version(need).release[:2]
    if same:
        return 0, f"loads the host's ROCm {have}, the release it was built against", (), False
    if build.rocm_libraries == "host-or-wheels":
        why = f"AMD's rocm {build.rocm_wheels} wheels (for the GPU's target) bring the ROCm {need} it was built against into the environment"
        said = (
            ()
            if not have
            else (f"the host's ROCm {have} is not the {need} jax[{build.extra}] was built against: the environment's rocm wheels are loaded first",)
        )
        return 0, why, said, True
    label = f"jax[{build.extra}]"
    if have is not None:
        reason = f"{label} loads ROCm {need} from the host, and the host has " + (f"ROCm {have}" if have else "no ROCm")
        return Rejection(FAMILY, Version("0"), build.tag, "driver", reason, shortfall=Shortfall("rocm", need, have or "none"))
    unchecked = f"{label} loads ROCm {need} from the host (/opt/rocm); the host's ROCm was not given (--rocm): not checked"
    return 1, f"needs ROCm {need} on the host", (unchecked,), False
