"""bitsandbytes: the releases whose wheel carries a library for torch's CUDA here, best first.

One bitsandbytes wheel per platform ships a native library per CUDA version and, from 0.50,
loads the one of torch's CUDA version or the nearest of the same major: so it goes with any CUDA
torch of a major it carries (`tag` cu12, cu13; the solver holds torch to that major), and with a
CPU torch through its CPU library. Its wheels require a torch range (`pins`)."""

from __future__ import annotations

from packaging.specifiers import SpecifierSet

import cudafit.frameworks.library as library
from cudafit import rules
from cudafit.answers import Candidate, Rejection
from cudafit.frameworks.base import single_member_protocol
from cudafit.records import Build, LibraryRelease, Machine, Matrices, Policy

FAMILY = "bitsandbytes"
MEMBERS = ("bitsandbytes",)
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
            # It loads its CPU library beside a CPU torch, whatever GPU the machine has: the pairing
            # with torch decides (records.Build.torch_cuda "cpu"), ranked after the CUDA libraries.
            return (1 if gpu else 0), (f"its CPU library, beside a CPU torch; {library.evidence_text(build)}",), ()
        if not gpu:
            return Rejection(FAMILY, release.version, build.tag, "accelerator", "its CUDA libraries need an NVIDIA GPU; the CPU library serves here")
        return library.judge_cuda(FAMILY, release, build, machine, matrices, policy, driver_problem)

    return library.candidates(FAMILY, releases(matrices), specs.get(FAMILY, SpecifierSet()), machine, judge, lambda r, b: (None, ""))
