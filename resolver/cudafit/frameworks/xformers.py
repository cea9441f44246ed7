"""xformers: the releases whose CUDA build runs beside a torch build here, best first.

xformers is built against one torch and one CUDA: its wheel requires a torch version (`pins.torch`,
from its metadata), and its compiled extension links the CUDA runtime of one major, which torch's
CUDA wheels bring. So it goes with a torch build of that version and that CUDA major (the solver
checks both, as a requirement and as the CUDA major every chosen build shares), and its kernels
must cover the GPU. It loads no cuDNN."""

from __future__ import annotations

from packaging.specifiers import SpecifierSet

import cudafit.frameworks.library as library
from cudafit import rules
from cudafit.answers import Candidate, Rejection
from cudafit.frameworks.base import single_member_protocol
from cudafit.records import Build, LibraryRelease, Machine, Matrices, Policy

FAMILY = "xformers"
MEMBERS = ("xformers",)
REQUIRES = ("torch",)  # the framework it is built against: a solve with xformers solves torch too
BRINGS: tuple[str, ...] = ()
COMPANIONS: tuple[str, ...] = ()


known_extras, releases, implied, check_extras, pairs = single_member_protocol(FAMILY)


def candidates(
    specs: dict[str, SpecifierSet], machine: Machine, matrices: Matrices, policy: Policy, extras: frozenset[str] = frozenset()
) -> tuple[list[Candidate], list[Rejection]]:
    driver_problem = rules.check_gpu_support_by_driver(matrices, machine)

    def judge(release: LibraryRelease, build: Build) -> library.Verdict:
        if library.no_gpu(machine, policy):
            reason = "xformers' PyPI wheels are CUDA builds; without an NVIDIA GPU they have no kernels to run"
            return Rejection(FAMILY, release.version, build.tag, "accelerator", reason, library.evidence_text(build))
        return library.judge_cuda(FAMILY, release, build, machine, matrices, policy, driver_problem)

    return library.candidates(FAMILY, releases(matrices), specs.get(FAMILY, SpecifierSet()), machine, judge, lambda r, b: (None, ""))
