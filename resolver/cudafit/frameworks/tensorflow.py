"""TensorFlow: the releases whose build runs here, best first.

Since 2.14 `tensorflow[and-cuda]` brings CUDA and cuDNN as pip wheels, so the driver and the GPU
decide. Before that the wheel expects CUDA and cuDNN installed on the system (or, on native
Windows up to 2.10, through conda); such a release is offered with that requirement stated. Native
Windows has no GPU build after 2.10: there the answer names the real alternatives (WSL2, an older
release with conda's CUDA, the CPU build) instead of returning a CPU build unasked.

Preference: builds that bring their own CUDA through pip first, then the newest release."""

from __future__ import annotations

from typing import Optional

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cudafit import rules
from cudafit.frameworks.base import screen
from cudafit.frameworks.tensorflow_data import DATA_PREFIX, read_file  # noqa: F401 (the provider reads its own files)
from cudafit.records import CPU_BESIDE_GPU, Candidate, Machine, Matrices, PackagePin, Rejection, TFRelease

FAMILY = "tensorflow"
MEMBERS = ("tensorflow", "tensorflow-cpu")
EXTRAS = {"and-cuda"}


def known_extras(matrices: Matrices) -> set[str]:
    return set(EXTRAS)


def releases(matrices: Matrices) -> tuple[TFRelease, ...]:
    return matrices.tensorflow


def implied(member_specs: dict[str, SpecifierSet]) -> dict[str, SpecifierSet]:
    return member_specs


def check_extras(extras: frozenset[str]) -> Optional[str]:
    return None


def pairs(member: str, version: Version, matrices: Matrices) -> list[Version]:
    return [version]  # tensorflow-cpu shares tensorflow's version


def candidates(specs: dict[str, SpecifierSet], machine: Machine, matrices: Matrices, policy, extras=frozenset()):
    spec = specs.get("tensorflow", SpecifierSet()) & specs.get("tensorflow-cpu", SpecifierSet())
    cpu = policy.cpu or "tensorflow-cpu" in specs
    gpu_here = machine.driver is not None or not machine.driver_known
    ranked: list[tuple[tuple, Candidate]] = []
    rejected: list[Rejection] = []
    driver_problem = rules.check_gpu_support_by_driver(matrices, machine)
    for age, release in enumerate(matrices.tensorflow):
        def reject(constraint: str, reason: str, tag=None, release=release, cause: str = "") -> None:
            rejected.append(Rejection(FAMILY, release.version, tag, constraint, reason, cause=cause))

        out = screen(FAMILY, release, spec, "tensorflow", "tensorflow", machine)
        if out is not None:
            rejected.append(out)
            continue
        if cpu or not gpu_here or machine.os == "macos":
            if gpu_here and not cpu and machine.os != "macos":
                reject("accelerator", "CPU build on a machine with an NVIDIA GPU (ask for it with --cpu)", "cpu", cause=CPU_BESIDE_GPU)
                continue
            ranked.append(((0, age), _cpu(release, machine, "tensorflow-cpu" in specs)))
            continue
        result = _gpu(release, machine, matrices, policy, driver_problem, extras)
        if isinstance(result, Rejection):
            rejected.append(result)
            continue
        tier, candidate = result
        ranked.append(((tier, age), candidate))
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
        family=FAMILY, version=release.version, tag="cpu", kind="cpu",
        packages=(PackagePin(name, str(release.version), None, "cpu", None),),
        cuda=None, cudnn=None, pins={}, why=(why,),
    )


def _gpu(release: TFRelease, machine: Machine, matrices: Matrices, policy, driver_problem, extras):
    label_tag = f"cu{release.cuda.major}" if release.cuda else "cuda"

    def reject(constraint: str, reason: str) -> Rejection:
        return Rejection(FAMILY, release.version, label_tag, constraint, reason)

    if machine.platform not in release.gpu_platforms:
        if machine.os == "windows":
            return reject("os", "no GPU on native Windows after TensorFlow 2.10: use WSL2 (tensorflow[and-cuda]), "
                                "tensorflow<2.11 with CUDA 11.2/cuDNN 8.1 from conda, or the CPU build (--cpu)")
        return reject("platform", f"the tensorflow wheel for {machine.platform} has no CUDA support "
                                  "(its CPU build: --cpu)")
    if release.cuda is None:
        return reject("data", "the CUDA version of this release's build is unknown in cudafit's data")
    pip_cuda = "and-cuda" in release.extras and machine.platform.startswith("linux")
    # Under --strict-driver the driver must serve the runtime pip installs, which for [and-cuda]
    # ranges (2.20 on) is the newest of the major, not the tested one.
    driver_cuda = rules.installed_runtime(matrices, release.cuda, release.and_cuda) if (
        policy.strict_driver and pip_cuda) else release.cuda
    verdict = rules.judge_cuda_build(matrices, machine, driver_cuda, release.sass, release.ptx,
                                     policy.strict_driver, driver_problem, built_with=release.cuda)
    if verdict.rejection:
        return reject(*verdict.rejection)
    needs_jit = verdict.needs_jit
    warnings = list(verdict.warnings)
    extra: tuple[PackagePin, ...] = ()
    installed_cuda = release.cuda
    wheels_route = False
    if pip_cuda and release.and_cuda_python is not None and machine.python not in release.and_cuda_python:
        if not release.cuda_wheels:
            return reject("python", f"tensorflow[and-cuda]=={release.version} cannot be installed on Python {machine.python}: "
                                    "some of its pins have no wheels there")
        # The extra's CUDA wheels install on any Python; only its TensorRT pins do not, and
        # TensorFlow runs without TensorRT. Same libraries, named one by one.
        wheels_route = True
    if wheels_route:
        wheels = release.cuda_wheels or {}
        pin = PackagePin("tensorflow", str(release.version), None, label_tag, None)
        extra = tuple(PackagePin(name, spec.removeprefix("=="), None, label_tag, None, supports=FAMILY)
                      for name, spec in sorted(wheels.items()))
        missing = sorted(set(release.and_cuda or {}) - set(wheels))
        why = (f"CUDA {release.cuda} and cuDNN {release.cudnn or 'unknown'} from the CUDA wheels [and-cuda] pins, named one by one: "
               f"tensorflow[and-cuda]=={release.version} cannot install on Python {machine.python} "
               f"({', '.join(missing)} {'has' if len(missing) == 1 else 'have'} no wheel there); TensorRT is left out")
        pins = dict(wheels)
        warnings.append(f"tensorflow {release.version} is installed without TensorRT (TF-TRT is not available)")
    elif pip_cuda:
        pin = PackagePin("tensorflow", str(release.version), None, label_tag, None, extras=("and-cuda",))
        why = f"CUDA {release.cuda} and cuDNN {release.cudnn or 'unknown'} as pip wheels ([and-cuda])"
        runtime = rules.installed_runtime(matrices, release.cuda, release.and_cuda)
        if runtime != release.cuda:
            # The extra pins ranges: pip installs the newest runtime of the major, not the tested one.
            specs = release.and_cuda or {}
            runtime_pin = next((f"{d}{s}" for d, s in specs.items() if d.startswith("nvidia-cuda-runtime")), "")
            cudnn_pin = next((f"{d}{s}" for d, s in specs.items() if d.startswith("nvidia-cudnn")), "cuDNN unknown")
            why = (f"pip installs the newest CUDA {release.cuda.major}.x runtime from [and-cuda] ({runtime_pin}: "
                   f"{runtime} in cudafit's data) and {cudnn_pin}; "
                   f"tested build: CUDA {release.cuda}, cuDNN {release.cudnn or 'unknown'}")
            installed_cuda = runtime
        pins = dict(release.and_cuda or {})
        if release.and_cuda is None:
            warnings.append(f"the [and-cuda] requirements of tensorflow {release.version} are unknown in cudafit's data")
    else:
        pin = PackagePin("tensorflow", str(release.version), None, label_tag, None)
        pins = {}
        if release.conda and machine.os == "windows":
            why = (f"needs CUDA {release.cuda} and cuDNN {release.cudnn} from conda "
                   f"(cudatoolkit={release.conda['cudatoolkit']} cudnn={release.conda['cudnn']} -c {release.conda['channel']})")
        else:
            why = f"needs CUDA {release.cuda} and cuDNN {release.cudnn or 'unknown'} installed on the system (not brought by pip)"
        warnings.append(f"tensorflow {release.version}: {why}")
    unverified = release.sass is None and any(g.compute_capability for g in machine.gpus)
    tier = 3 if needs_jit else (1 if unverified else 0)
    if not pip_cuda:
        tier += 1  # a build that brings its own CUDA beats one that needs a system install
    candidate = Candidate(
        family=FAMILY, version=release.version, tag=label_tag, kind="cuda", packages=(pin, *extra),
        cuda=f"{installed_cuda}", cudnn=release.cudnn, pins=pins, pins_known=not pip_cuda or release.and_cuda is not None,
        verified=not unverified,
        why=(f"{why}; {verdict.reason}",), warnings=tuple(warnings), conda=release.conda,
    )
    return tier, candidate
