"""flash-attn: the prebuilt wheel or the source build that goes with a torch build here, best first.

PyPI has only flash-attn's sdist. Its setup.py downloads a wheel attached to the GitHub release,
named by torch's CUDA major, torch's minor, torch's C++ ABI and the CPython, and compiles for
about an hour when there is none. cudafit names that asset directly (`route = "asset"`), so
nothing is downloaded behind pip's back, and offers the source build (`route = "source"`, built
with --no-build-isolation against the installed torch and an nvcc of torch's CUDA major) only
after every prebuilt wheel. FlashAttention 2 supports Ampere and newer (`gpu_min`)."""

from __future__ import annotations

from typing import Optional

from packaging.specifiers import SpecifierSet

import cudafit.frameworks.library as library
from cudafit import rules
from cudafit.answers import Candidate, Rejection
from cudafit.frameworks.base import single_member_protocol
from cudafit.records import Build, Constraint, LibraryRelease, Machine, Matrices, Policy

FAMILY = "flash-attn"
MEMBERS = ("flash-attn",)
REQUIRES = ("torch",)
BRINGS: tuple[str, ...] = ()
COMPANIONS: tuple[str, ...] = ()
SOURCE_TIER = 3  # after every prebuilt wheel, JIT ones included


known_extras, releases, implied, check_extras, pairs = single_member_protocol(FAMILY)


def candidates(
    specs: dict[str, SpecifierSet], machine: Machine, matrices: Matrices, policy: Policy, extras: frozenset[str] = frozenset()
) -> tuple[list[Candidate], list[Rejection]]:
    driver_problem = rules.check_gpu_support_by_driver(matrices, machine)
    newest = _newest_prebuilt_torch(releases(matrices), machine.platform)

    def judge(release: LibraryRelease, build: Build) -> library.Verdict:
        def reject(constraint: Constraint, reason: str) -> Rejection:
            return Rejection(FAMILY, release.version, library.build_label(build), constraint, reason, library.evidence_text(build))

        if library.no_gpu(machine, policy):
            return reject("accelerator", "flash-attn is CUDA kernels only; without an NVIDIA GPU it has nothing to run")
        if build.route == "asset" and machine.python and build.python is not None and machine.python not in build.python:
            return reject("python", f"no prebuilt wheel for Python {machine.python} (its CI built {', '.join(sorted(build.python, key=_py))})")
        verdict = library.judge_cuda(FAMILY, release, build, machine, matrices, policy, driver_problem)
        if isinstance(verdict, Rejection):
            return verdict._replace(tag=library.build_label(build))
        tier, why, warnings = verdict
        if build.route == "source":
            major = build.tag[2:]  # a source build's tag is its CUDA major (cu12, cu13)
            prebuilt = (
                f"no prebuilt wheel for this torch in cudafit's data, whose newest for {machine.platform or 'this platform'} is for torch {newest}; "
                "setup.py downloads one where the release has it by now"
                if newest
                else f"flash-attn has no prebuilt wheels for {machine.platform or 'this platform'}"
            )
            warnings += (
                f"flash-attn {release.version} compiles from source here ({prebuilt}): it needs a CUDA {major} nvcc "
                f"({build.cuda} or newer for every GPU architecture) on PATH, ninja, and about an hour; set MAX_JOBS if memory is short",
            )
            return SOURCE_TIER, (f"built from its sdist; {why[0]}",), warnings
        return tier, (f"prebuilt release asset {build.asset}; {why[0]}",), warnings

    def route(release: LibraryRelease, build: Build) -> tuple[Optional[str], str]:
        if build.route == "asset" and machine.python:
            return release.asset.format(build=build.asset, py=machine.python.replace(".", "")), ""
        # From the sdist: setup.py fetches the same asset, or compiles, against the torch already installed.
        return None, "no-build-isolation"

    def prefer(build: Build) -> tuple:
        # Among one release's builds, the one for the newest torch.
        return tuple(-x for x in _py(_torch_minor(build)))  # then the highest CUDA, as every library

    return library.candidates(FAMILY, releases(matrices), specs.get(FAMILY, SpecifierSet()), machine, judge, route, prefer)


def _py(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split("."))


def _torch_minor(build: Build) -> str:
    """The torch minor an asset was built for ("2.8" of "==2.8.*"); "0" for a source build."""
    spec = (build.pins or {}).get("torch", "")
    return spec.removeprefix("==").removesuffix(".*") if build.route == "asset" else "0"


def _newest_prebuilt_torch(all_releases: tuple[LibraryRelease, ...], platform: str | None) -> str:
    minors = [_torch_minor(b) for r in all_releases for b in r.builds if b.route == "asset" and platform in b.platforms]
    return max(minors, key=_py, default="")
