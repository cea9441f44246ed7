"""TensorFlow: the releases whose build runs here, best first.

Since 2.14 `tensorflow[and-cuda]` brings CUDA and cuDNN as pip wheels, so the driver and the GPU
decide. Before that the wheel expects CUDA and cuDNN installed on the system (or, on native
Windows up to 2.10, through conda); such a release is offered with that requirement stated. Native
Windows has no GPU build after 2.10: there the answer names the real alternatives (WSL2, an older
release with conda's CUDA, the CPU build) instead of returning a CPU build unasked.

Preference: builds that bring their own CUDA through pip first, then the newest release."""

from __future__ import annotations

from typing import NamedTuple, Optional, Union

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cudafit import evidence, rules
from cudafit.answers import CPU_BESIDE_GPU, Candidate, PackagePin, Rejection
from cudafit.frameworks.base import amd_answered, named, screen
from cudafit.records import Build, Constraint, Machine, Matrices, Policy, Shortfall, pythons_on

FAMILY = "tensorflow"
MEMBERS = ("tensorflow", "tensorflow-cpu")
REQUIRES: tuple[str, ...] = ()  # built against no other family
BRINGS: tuple[str, ...] = ()
COMPANIONS: tuple[str, ...] = ()


class TFRelease(NamedTuple):
    version: Version
    date: str
    python: frozenset[str]
    platforms: frozenset[str]
    extras: tuple[str, ...]
    builds: tuple[Build, ...]  # its CUDA build, where the `tensorflow` wheel can use an NVIDIA GPU
    cpu_package: Optional[str] = None
    python_by_platform: Optional[dict[str, frozenset[str]]] = None
    cpu_package_platforms: Optional[frozenset[str]] = None  # where cpu_package has wheels
    macos_min: dict[str, str] = {}  # as records.TorchRelease.macos_min (never mutated)
    macos_min_by_python: dict[str, str] = {}

    def pythons(self, platform: Optional[str]) -> frozenset[str]:
        return pythons_on(self.python, self.python_by_platform, platform)


EXTRAS = {"and-cuda"}


def known_extras(matrices: Matrices) -> set[str]:
    return set(EXTRAS)


def releases(matrices: Matrices) -> tuple[TFRelease, ...]:
    return matrices.frameworks.get(FAMILY, ())


def implied(member_specs: dict[str, SpecifierSet]) -> dict[str, SpecifierSet]:
    return member_specs


def check_extras(extras: frozenset[str]) -> Optional[str]:
    return None


def pairs(member: str, version: Version, matrices: Matrices) -> list[Version]:
    return [version]  # tensorflow-cpu shares tensorflow's version


def candidates(
    specs: dict[str, SpecifierSet],
    machine: Machine,
    matrices: Matrices,
    policy: Policy,
    extras: frozenset[str] = frozenset(),
) -> tuple[list[Candidate], list[Rejection]]:
    spec = specs.get("tensorflow", SpecifierSet()) & specs.get("tensorflow-cpu", SpecifierSet())
    cpu = policy.cpu or "tensorflow-cpu" in specs
    usable = rules.gpu_usable(machine)
    ranked: list[tuple[tuple, Candidate]] = []
    rejected: list[Rejection] = []
    driver_problem = rules.check_gpu_support_by_driver(matrices, machine)
    beside = None if cpu else amd_answered(machine, FAMILY)
    for age, release in enumerate(releases(matrices)):

        def reject(constraint: Constraint, reason: str, tag: Optional[str] = None, release: TFRelease = release, cause: str = "") -> None:
            rejected.append(Rejection(FAMILY, release.version, tag, constraint, reason, cause=cause))

        out = screen(FAMILY, release, spec, "tensorflow", "tensorflow", machine)
        if out is not None:
            rejected.append(out)
            continue
        if beside is not None:
            # an AMD GPU is answered: AMD's tensorflow-rocm builds first, the CPU build after them
            ranked.append(((4, age), _cpu(release, machine, False)._replace(warnings=(beside,))))
            continue
        if cpu or not usable:
            if usable and not cpu:
                reject("accelerator", "CPU build on a machine with an NVIDIA GPU", "cpu", cause=CPU_BESIDE_GPU)
                continue
            ranked.append(((0, age), _cpu(release, machine, "tensorflow-cpu" in specs)))
            continue
        result = _gpu(release, machine, matrices, policy, driver_problem, extras)
        if isinstance(result, Rejection):
            rejected.append(result)
            continue
        tier, candidate = result
        ranked.append(((tier, age), candidate))
    if beside is not None:
        from cudafit.frameworks import tensorflow_rocm

        ages = {r.version: age for age, r in enumerate(releases(matrices))}
        found, refused = tensorflow_rocm.candidates(spec, ages, machine, matrices)
        ranked.extend(found)
        rejected.extend(refused)
    ranked.sort(key=lambda item: item[0])
    return [c for _k, c in ranked], rejected


def _cpu(release: TFRelease, machine: Machine, cpu_package: bool) -> Candidate:
    available = release.cpu_package and machine.platform in (release.cpu_package_platforms or ())
    name = release.cpu_package if cpu_package and available and release.cpu_package else "tensorflow"
    why = "CPU build" + (" (Apple silicon: add tensorflow-metal for the GPU)" if machine.os == "macos" else "")
    if cpu_package and not available:
        # the plain wheel is the CPU build wherever tensorflow-cpu is not published
        why += f"; {release.cpu_package or 'tensorflow-cpu'} has no wheel for {machine.platform}, so plain tensorflow"
    return Candidate(
        family=FAMILY,
        version=release.version,
        tag="cpu",
        kind="cpu",
        packages=(PackagePin(name, str(release.version), None, "cpu", None),),
        cuda=None,
        cudnn=None,
        pins={},
        why=(why,),
    )


def _gpu(
    release: TFRelease, machine: Machine, matrices: Matrices, policy: Policy, driver_problem: Optional[str], extras: frozenset[str]
) -> Union[Rejection, tuple[int, Candidate]]:
    build = next((b for b in release.builds if machine.platform in b.platforms), None)
    if build is None:
        tag = release.builds[0].tag if release.builds else "cuda"
        if machine.os == "windows":
            return Rejection(
                FAMILY,
                release.version,
                tag,
                "os",
                "no GPU on native Windows after TensorFlow 2.10: use WSL2 (tensorflow[and-cuda]), "
                "tensorflow<2.11 with CUDA 11.2/cuDNN 8.1 from conda, or the CPU build (--cpu)",
            )
        return Rejection(FAMILY, release.version, tag, "platform", f"the tensorflow wheel for {machine.platform} has no CUDA support (its CPU build: --cpu)")
    label_tag = build.tag

    def reject(constraint: Constraint, reason: str, shortfall: Optional[Shortfall] = None) -> Rejection:
        return Rejection(FAMILY, release.version, label_tag, constraint, reason, shortfall=shortfall)

    if build.cuda is None:
        return reject("data", "the CUDA version of this release's build is unknown in cudafit's data")
    pip_cuda = "and-cuda" in build.extras and (machine.platform or "").startswith("linux")
    # Under --strict-driver the driver must serve the runtime pip installs, which for [and-cuda]
    # ranges (2.20 on) is the newest of the major, not the tested one.
    driver_cuda = rules.installed_runtime(matrices, build.cuda, build.pins) if (policy.strict_driver and pip_cuda) else build.cuda
    verdict = rules.judge_cuda_build(matrices, machine, driver_cuda, build.sass, build.ptx, policy.strict_driver, driver_problem, built_with=build.cuda)
    if verdict.rejection:
        return reject(*verdict.rejection)
    needs_jit = verdict.needs_jit
    warnings = named(f"{FAMILY} {release.version}+{build.tag}", verdict.warnings)
    extra: tuple[PackagePin, ...] = ()
    installed_cuda = build.cuda
    wheels_route = False
    if pip_cuda and build.pins_python is not None and machine.python not in build.pins_python:
        if not build.cuda_wheels:
            return reject(
                "python", f"tensorflow[and-cuda]=={release.version} cannot be installed on Python {machine.python}: some of its pins have no wheels there"
            )
        # The extra's CUDA wheels install on any Python; only its TensorRT pins do not, and
        # TensorFlow runs without TensorRT. Same libraries, named one by one.
        wheels_route = True
    if wheels_route:
        wheels = build.cuda_wheels or {}
        pin = PackagePin("tensorflow", str(release.version), None, label_tag, None)
        extra = tuple(PackagePin(name, spec.removeprefix("=="), None, label_tag, None, supports=FAMILY) for name, spec in sorted(wheels.items()))
        missing = sorted(set(build.pins or {}) - set(wheels))
        why = (
            f"CUDA {build.cuda} and cuDNN {build.cudnn or 'unknown'} from the CUDA wheels [and-cuda] pins, named one by one: "
            f"tensorflow[and-cuda]=={release.version} cannot install on Python {machine.python} "
            f"({', '.join(missing)} {'has' if len(missing) == 1 else 'have'} no wheel there); TensorRT is left out"
        )
        pins = dict(wheels)
        warnings.append(f"tensorflow {release.version} is installed without TensorRT (TF-TRT is not available)")
    elif pip_cuda:
        pin = PackagePin("tensorflow", str(release.version), None, label_tag, None, extras=("and-cuda",))
        why = f"CUDA {build.cuda} and cuDNN {build.cudnn or 'unknown'} as pip wheels ([and-cuda])"
        runtime = rules.installed_runtime(matrices, build.cuda, build.pins)
        if runtime != build.cuda:
            # The extra pins ranges: pip installs the newest runtime of the major, not the tested one.
            specs = build.pins or {}
            runtime_pin = next((f"{d}{s}" for d, s in specs.items() if d.startswith("nvidia-cuda-runtime")), "")
            cudnn_pin = next((f"{d}{s}" for d, s in specs.items() if d.startswith("nvidia-cudnn")), "cuDNN unknown")
            why = (
                f"pip installs the newest CUDA {build.cuda.major}.x runtime from [and-cuda] ({runtime_pin}: "
                f"{runtime} in cudafit's data) and {cudnn_pin}; "
                f"tested build: CUDA {build.cuda}, cuDNN {build.cudnn or 'unknown'}"
            )
            installed_cuda = runtime
        pins = dict(build.pins or {})
        if build.pins is None:
            warnings.append(f"the [and-cuda] requirements of tensorflow {release.version} are unknown in cudafit's data")
    else:
        pin = PackagePin("tensorflow", str(release.version), None, label_tag, None)
        pins = {}
        if build.conda and machine.os == "windows":
            why = (
                f"needs CUDA {build.cuda} and cuDNN {build.cudnn} from conda "
                f"(cudatoolkit={build.conda['cudatoolkit']} cudnn={build.conda['cudnn']} -c {build.conda['channel']})"
            )
        else:
            why = f"needs CUDA {build.cuda} and cuDNN {build.cudnn or 'unknown'} installed on the system (not brought by pip)"
        warnings.append(f"tensorflow {release.version}: {why}")
    unverified = build.sass is None and any(g.compute_capability for g in machine.gpus)
    tier = 3 if needs_jit else (1 if unverified else 0)
    if not pip_cuda:
        tier += 1  # a build that brings its own CUDA beats one that needs a system install
    candidate = Candidate(
        family=FAMILY,
        version=release.version,
        tag=label_tag,
        kind="cuda",
        packages=(pin, *extra),
        cuda=f"{installed_cuda}",
        cudnn=build.cudnn,
        pins=pins,
        pins_known=not pip_cuda or build.pins is not None,
        verified=not unverified,
        why=(f"{why}; {verdict.reason}; {evidence.describe(build.evidence)}",),
        warnings=tuple(warnings),
        conda=build.conda,
        evidence=dict(build.evidence),
    )
    return tier, candidate
