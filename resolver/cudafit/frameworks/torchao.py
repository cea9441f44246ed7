"""torchao: the releases whose build runs beside a torch build here, best first.

torchao's wheels declare no dependency, yet its compiled kernels load only beside the torch its
version gate names (`pins.torch`) and link one CUDA major, which that torch must bring. Its
kernels are extras: where they do not cover the GPU, or the platform gets the pure-Python wheel,
torchao still runs its Python and Triton code, so that is a warning, not a refusal. It is
installed with --no-deps, so that nothing moves torch."""

from __future__ import annotations

from packaging.specifiers import SpecifierSet

import cudafit.frameworks.library as library
from cudafit import rules
from cudafit.answers import Candidate, Rejection
from cudafit.frameworks.base import single_member_protocol
from cudafit.records import Build, LibraryRelease, Machine, Matrices, Policy

FAMILY = "torchao"
MEMBERS = ("torchao",)
REQUIRES = ("torch",)
BRINGS: tuple[str, ...] = ()
COMPANIONS: tuple[str, ...] = ()


known_extras, releases, implied, check_extras, pairs = single_member_protocol(FAMILY)


def candidates(
    specs: dict[str, SpecifierSet], machine: Machine, matrices: Matrices, policy: Policy, extras: frozenset[str] = frozenset()
) -> tuple[list[Candidate], list[Rejection]]:
    driver_problem = rules.check_gpu_support_by_driver(matrices, machine)
    gpu = not library.no_gpu(machine, policy)

    def judge(release: LibraryRelease, build: Build) -> library.Verdict:
        if build.kind == "cpu":
            warnings = ("torchao has no compiled kernels for this platform; its Python and Triton code runs",) if gpu else ()
            return 1 if gpu else 0, (f"pure-Python wheel; {library.evidence_text(build)}",), warnings
        if not gpu:
            # pip takes this wheel on Linux x86_64 whatever the torch: its kernels stay unloaded.
            said = (
                f"torchao {release.version}: pip takes its CUDA {build.cuda} wheel on Linux x86_64; "
                "without a GPU its kernels stay unloaded and its Python code runs"
            )
            return 0, (f"CUDA {build.cuda} wheel; {library.evidence_text(build)}",), (said,)
        verdict = library.judge_cuda(FAMILY, release, build, machine, matrices, policy, driver_problem, kernels_optional=True)
        if not isinstance(verdict, Rejection) and not build.loads:
            # its kernels never load (a load gate no torch passes): as a build without kernels here
            said = f"torchao {release.version}'s compiled kernels never load (its load gate admits no torch release): only its Python and Triton code runs"
            tier, why, warned = verdict
            return max(tier, 1), why, (*warned, said)
        return verdict

    spec = specs.get(FAMILY, SpecifierSet())
    return library.candidates(FAMILY, releases(matrices), spec, machine, judge, lambda r, b: (None, "no-deps"), kernels_optional=True)
