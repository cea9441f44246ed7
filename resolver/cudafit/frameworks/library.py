"""What the providers of libraries built against torch share (xformers, torchao, vllm,
flash-attn): a release's builds judged for this machine, and the candidate a build becomes.

Such a library goes with one torch: its `pins` name the torch (and torchvision, torchaudio) it
requires or was built for, and become the candidate's `requires`, which the solver holds the
chosen torch build to. Its compiled code links the CUDA runtime of one major, which torch's CUDA
wheels bring, so its CUDA major must be torch's (the solver checks that too). Its other pins
(flashinfer for vllm) are shared pins like any framework's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional, Union

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cudafit import evidence, rules
from cudafit.answers import Candidate, PackagePin, Rejection
from cudafit.frameworks.base import rank_builds
from cudafit.frameworks.pytorch import MEMBERS as TORCH_MEMBERS
from cudafit.records import Build, Constraint, LibraryRelease, Machine, Matrices, Policy, Shortfall

# A verdict on one build: a Rejection, or (tier, why, warnings); tier 0 is best.
Verdict = Union[Rejection, tuple[int, tuple[str, ...], tuple[str, ...]]]
# How a chosen build is installed: (url or None, pip mode) for a release and build.
Route = Callable[[LibraryRelease, Build], tuple[Optional[str], str]]


def evidence_text(build: Build) -> str:
    return evidence.describe(build.evidence, cuda=build.kind == "cuda")


def build_cuda(build: Build) -> Optional[Version]:
    """The CUDA a library build goes with: its own, else its tag's major (cu12 -> 12.0); None
    for a build without CUDA."""
    if build.cuda is not None:
        return build.cuda
    return Version(f"{build.tag[2:]}.0") if build.kind == "cuda" else None


def build_label(build: Build) -> str:
    """What tells a library's builds apart: a release asset's own label (cu12torch2.8cxx11abiTRUE),
    source-cu12 for a build from source, else the tag."""
    # an asset label runs up to its file name's first dash (vllm: cu129-cp38-abi3-manylinux_2_28_x86_64)
    return build.asset.split("-")[0] if build.asset else (f"source-{build.tag}" if build.route == "source" else build.tag)


def no_gpu(machine: Machine, policy: Policy) -> bool:
    return policy.cpu or not rules.gpu_usable(machine)


def judge_cuda(
    family: str,
    release: LibraryRelease,
    build: Build,
    machine: Machine,
    matrices: Matrices,
    policy: Policy,
    driver_problem: Optional[str],
    *,
    kernels_optional: bool = False,
) -> Verdict:
    """A CUDA build: the driver loads its runtime and its kernels cover the GPUs. With
    kernels_optional (torchao, whose compiled kernels are extras beside its Python ones), missing
    kernels are a warning, not a refusal."""

    def reject(constraint: Constraint, reason: str, shortfall: Optional[Shortfall] = None) -> Rejection:
        return Rejection(family, release.version, build.tag, constraint, reason, evidence_text(build), shortfall=shortfall)

    too_old = below_gpu_min(family, release, machine)
    if too_old:
        return reject("compute-capability", too_old)
    cuda = build_cuda(build) or Version("0")  # a CUDA build always has one
    sass, ptx = (None, None) if kernels_optional else (build.sass, build.ptx)  # optional kernels: checked below, as a warning
    verdict = rules.judge_cuda_build(matrices, machine, cuda, sass, ptx, policy.strict_driver, driver_problem)
    if verdict.rejection:
        return reject(*verdict.rejection)
    tier = 2 if verdict.needs_jit else 0
    reason = verdict.reason
    warnings = [] if kernels_optional else list(verdict.warnings)  # optional kernels: worded below
    if kernels_optional:
        arch, _jit = rules.check_arch(matrices, machine, cuda, build.sass, build.ptx)
        if arch.ok and arch.warning and build.sass is None:
            warnings.append("which GPU architectures its compiled kernels cover is unknown; where they miss this GPU, only its Python and Triton code runs")
        if not arch.ok:
            tier = 1
            warnings.append(f"{family} {release.version} has no compiled kernels for this GPU ({arch.reason}); only its Python and Triton code runs here")
        reason = f"{verdict.driver.reason if verdict.driver else ''}; {arch.reason}"
    cuda_text = f"CUDA {build.cuda}" if build.cuda else f"CUDA {cuda.major}.x (minor unknown)"
    # Said beside torch's own warnings: name whose they are.
    named = tuple(w if w.startswith(family) else f"{family} {release.version}: {w}" for w in warnings)
    return tier, (f"{cuda_text} build; {reason}; {evidence_text(build)}",), named


def below_gpu_min(family: str, release: LibraryRelease, machine: Machine) -> Optional[str]:
    """Why a GPU here is older than the library supports, or None."""
    if release.gpu_min is None:
        return None
    for gpu in machine.gpus:
        if gpu.compute_capability is not None and gpu.compute_capability < release.gpu_min:
            how = f" ({release.gpu_min_evidence})" if release.gpu_min_evidence else ""
            return f"{family} supports GPUs of compute capability {release.gpu_min[0]}.{release.gpu_min[1]} and newer{how}; {rules.gpu_label(gpu)} is older"
    return None


def candidates(
    family: str,
    releases: tuple[LibraryRelease, ...],
    spec: SpecifierSet,
    machine: Machine,
    judge: Callable[[LibraryRelease, Build], Verdict],
    route: Route,
    prefer: Callable[[Build], tuple] = lambda build: (),
    *,
    kernels_optional: bool = False,
) -> tuple[list[Candidate], list[Rejection]]:
    """Best first by (tier, newest release, `prefer` among one release's builds, highest CUDA). With
    kernels_optional (torchao) the library also goes beside a CPU torch."""

    def ranked(release: LibraryRelease, build: Build) -> Any:
        verdict = judge(release, build)
        if isinstance(verdict, Rejection):
            return verdict
        tier, why, warnings = verdict
        url, mode = route(release, build)
        # within a release, after the provider's own preference: the highest CUDA, as for torch;
        # builds that stand for some minors of one major (bitsandbytes' cu12 and cu128) rank alike,
        # so torch's own preference picks among them, not the library's
        cuda = build_cuda(build)
        cuda_key = (-cuda.major,) if cuda and build.torch_cuda else tuple(-x for x in cuda.release) if cuda else ()
        return (tier, *prefer(build), cuda_key), candidate(family, release, build, why, warnings, url=url, mode=mode, needs_torch_cuda=not kernels_optional)

    return rank_builds(family, releases, spec, machine, ranked)


def candidate(
    family: str,
    release: LibraryRelease,
    build: Build,
    why: tuple[str, ...],
    warnings: tuple[str, ...],
    *,
    url: Optional[str] = None,
    mode: str = "",
    needs_torch_cuda: bool = True,
) -> Candidate:
    pins = dict(build.pins or {})
    requires = {dist: pins.pop(dist) for dist in list(pins) if dist in TORCH_MEMBERS}
    return Candidate(
        family=family,
        version=release.version,
        tag=build_label(build),
        kind=build.kind,
        packages=(
            PackagePin(
                build.package or family,
                str(release.version),
                build.local or None,  # a PyTorch-index build's local tag, where its file names carry one
                build_label(build),
                build.index_url or None,
                pypi_build=not build.index_url and not url,
                url=url,
                mode=mode,
            ),
        ),
        cuda=str(build_cuda(build)) if build.kind == "cuda" else None,
        cudnn=None,
        pins=pins,
        pins_known=build.pins is not None,
        verified=build.sass is not None or build.kind != "cuda",
        why=why,
        warnings=warnings,
        evidence=dict(build.evidence),
        requires=requires,
        loads_cudnn=False,
        needs_required_cuda=needs_torch_cuda and build.kind == "cuda",
        torch_cuda=build.torch_cuda,
    )
