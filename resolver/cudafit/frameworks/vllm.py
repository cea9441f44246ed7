"""vllm: the releases whose CUDA wheel runs here, with the torch it pins, best first.

Every vllm wheel pins torch, torchvision and torchaudio exactly (`pins`), so vllm decides torch:
the solver holds the torch build to that version and to the CUDA major vllm's libraries link
(CUDA 13 from 0.20, whatever its docs say). Its CUDA 12.9 builds are wheels attached to the
GitHub release (`route = "asset"`), for drivers that do not load CUDA 13. Its kernels must cover the
GPU, and its project states a floor of its own (`gpu_min`)."""

from __future__ import annotations

from typing import Optional

from packaging.specifiers import SpecifierSet

import cudafit.frameworks.library as library
from cudafit import rules
from cudafit.answers import Candidate, Rejection
from cudafit.frameworks.base import single_member_protocol
from cudafit.records import Build, LibraryRelease, Machine, Matrices, Policy

FAMILY = "vllm"
MEMBERS = ("vllm",)
REQUIRES = ("torch",)
BRINGS = ("torchvision",)  # pinned exactly too, and served by torch's index beside torch's build
COMPANIONS: tuple[str, ...] = ()


known_extras, releases, implied, check_extras, pairs = single_member_protocol(FAMILY)


def candidates(
    specs: dict[str, SpecifierSet], machine: Machine, matrices: Matrices, policy: Policy, extras: frozenset[str] = frozenset()
) -> tuple[list[Candidate], list[Rejection]]:
    driver_problem = rules.check_gpu_support_by_driver(matrices, machine)

    def judge(release: LibraryRelease, build: Build) -> library.Verdict:
        if library.no_gpu(machine, policy):
            reason = "vllm's PyPI wheels are CUDA builds; without an NVIDIA GPU use its CPU build from source (see vllm's docs)"
            return Rejection(FAMILY, release.version, build.tag, "accelerator", reason, library.evidence_text(build))
        verdict = library.judge_cuda(FAMILY, release, build, machine, matrices, policy, driver_problem)
        if isinstance(verdict, Rejection):
            return verdict
        tier, why, warnings = verdict
        return tier, why, warnings + _torchaudio_from_pypi(release, build, machine, matrices)

    def route(release: LibraryRelease, build: Build) -> tuple[Optional[str], str]:
        return (release.asset.format(build=build.asset), "") if build.route == "asset" else (None, "")

    def prefer(build: Build) -> tuple:
        return (build.route == "asset",)  # within a release, PyPI's wheel first

    return library.candidates(FAMILY, releases(matrices), specs.get(FAMILY, SpecifierSet()), machine, judge, route, prefer)


def _torchaudio_from_pypi(release: LibraryRelease, build: Build, machine: Machine, matrices: Matrices) -> tuple[str, ...]:
    """vllm pins torchaudio, which nothing but pip installs: from PyPI, whose compiled torchaudio
    wheels are built for the CUDA of PyPI's torch of that version. Said where that is not the
    major this build runs on."""
    spec = (build.pins or {}).get("torchaudio", "")
    version = spec.removeprefix("==")
    torch = next((r for r in matrices.torch if str(r.version) == version), None)
    variant = torch.pypi_variant.get(machine.platform or "", "") if torch is not None else ""
    if not variant.startswith("cu") or not build.cuda or variant[2:-1] == str(build.cuda.major):
        return ()
    return (
        f"vllm {release.version} pins torchaudio{spec}, which pip takes from PyPI, built there for CUDA {variant[2:-1]} "
        f"({variant}): its compiled parts may not load beside this CUDA {build.cuda.major} torch; "
        f"install torchaudio{spec} from torch's index if you use it",
    )
