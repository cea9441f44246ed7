"""PyTorch (torch, torchvision, torchaudio): the candidates that run on a machine, best first.

Preference, documented for users in README "How cudafit chooses":
1. builds verified to carry SASS for every GPU; then builds whose architecture list is unknown but
   whose CUDA toolkit can compile for every GPU; builds that need PTX JIT last;
2. within a tier, the newest torch release that satisfies the specs;
3. within a release, builds whose existence and architecture lists are measured or declared before
   those only reported by third parties;
4. then the highest CUDA version the driver runs (the newest kernels and libraries); when the
   driver is unknown, the build with the lowest driver requirement, since that is the safe bet.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Optional, Union

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cudafit import evidence, rules
from cudafit.answers import CPU_BESIDE_GPU, VERSION_SPEC, Candidate, PackagePin, Rejection
from cudafit.frameworks import pytorch_jetson
from cudafit.frameworks.base import python_range, split_locals
from cudafit.records import Build, Constraint, Machine, Matrices, Policy, Shortfall, TorchRelease, driver_key

FAMILY = "torch"
MEMBERS = ("torch", "torchvision", "torchaudio")
REQUIRES: tuple[str, ...] = ()  # built against no other family
BRINGS: tuple[str, ...] = ()
COMPANIONS = ("torchvision", "torchaudio")  # members that are projects of their own, paired by version


def known_extras(matrices: Matrices) -> set[str]:
    return set()


def releases(matrices: Matrices) -> tuple[TorchRelease, ...]:
    return matrices.torch


def implied(member_specs: dict[str, SpecifierSet]) -> dict[str, SpecifierSet]:
    """torchvision and torchaudio are built against one torch: asking for them asks for it."""
    return {"torch": SpecifierSet(), **member_specs}


def check_extras(extras: frozenset[str]) -> Optional[str]:
    return None


def pairs(member: str, version: Version, matrices: Matrices) -> list[Version]:
    if member in ("torchvision", "torchaudio"):
        return [r.version for r in matrices.torch if getattr(r, member) == str(version)]
    return [version]


def package_source(release: TorchRelease, variant: Build, platform: str, template: str) -> tuple[Optional[str], Optional[str]]:
    """(index_url, local tag) for a build: None index means PyPI.

    On Linux the PyTorch index is used even when PyPI serves the same build, so that the variant is
    pinned by its local tag and never swapped by a resolver. Elsewhere PyPI serves the default build
    (CPU on Windows, MPS on macOS) without a local tag. PyTorch's aarch64 CPU wheels carry no +cpu."""
    if not platform.startswith("linux") and release.pypi_variant.get(platform) == variant.tag:
        return None, None
    if platform.startswith("macos"):
        return None, None
    if platform == "linux-aarch64" and variant.kind == "cpu":
        if release.pypi_variant.get(platform) == "cpu":
            return None, None
        return template.format(variant=variant.tag), None
    return template.format(variant=variant.tag), variant.tag


def candidates(
    specs: dict[str, SpecifierSet],
    machine: Machine,
    matrices: Matrices,
    policy: Policy,
    extras: frozenset[str] = frozenset(),
) -> tuple[list[Candidate], list[Rejection]]:
    rejected: list[Rejection] = []
    platform = machine.platform
    torch_spec = specs.get("torch", SpecifierSet())
    driver_problem = rules.check_gpu_support_by_driver(matrices, machine)

    ranked: list[tuple[tuple, Candidate]] = []
    siblings: dict[str, tuple[str, list[tuple[Version, Build]]]] = {}
    verdicts: dict[tuple, rules.BuildVerdict] = {}
    # A local version names one build (torch==2.10.0+cu128, cudafit's own output pasted back):
    # releases are matched on the public version, builds on the tag, as pip matches local versions.
    public, tags = split_locals(specs)
    if len(tags) > 1:
        rejected.append(
            Rejection(
                FAMILY,
                matrices.torch[0].version if matrices.torch else Version("0"),
                None,
                "spec",
                f"the specs name different builds ({', '.join(sorted(tags))}); one environment holds one",
            )
        )
        return [], rejected
    for age, release in enumerate(matrices.torch):  # newest first
        if not public.get("torch", SpecifierSet()).contains(release.version, prereleases=True):
            rejected.append(Rejection(FAMILY, release.version, None, "spec", f"does not satisfy torch{torch_spec}", cause=VERSION_SPEC))
            continue
        companion_problem = _companions(release, public)
        if companion_problem:
            rejected.append(Rejection(FAMILY, release.version, None, "spec", companion_problem, cause=VERSION_SPEC))
            continue
        if platform not in release.platforms:
            rejected.append(Rejection(FAMILY, release.version, None, "platform", f"no torch wheels for {platform}"))
            continue
        too_old = rules.macos_too_old(release.macos_min, release.macos_min_by_python, machine)
        if too_old:
            rejected.append(Rejection(FAMILY, release.version, None, "platform", too_old))
            continue
        options = []
        for variant in release.builds:
            if platform not in variant.platforms:
                continue
            if tags and variant.tag not in tags:
                rejected.append(Rejection(FAMILY, release.version, variant.tag, "spec", f"the spec names the +{next(iter(tags))} build"))
                continue
            pythons = release.pythons(platform)
            if variant.python is not None:
                pythons = pythons & variant.python
            if machine.python is not None and machine.python not in pythons:
                rejected.append(
                    Rejection(
                        FAMILY,
                        release.version,
                        variant.tag,
                        "python",
                        f"no wheel for Python {machine.python} (has {python_range(pythons)})",
                        shortfall=Shortfall("python", python_range(pythons), machine.python),
                    )
                )
                continue
            verdict = _judge(release, variant, machine, matrices, policy, driver_problem, siblings, verdicts)
            if isinstance(verdict, Rejection):
                rejected.append(verdict)
                continue
            options.append((verdict, variant))
        for ((tier, preference), why, warnings, *environment), variant in options:
            candidate = _candidate(release, variant, specs, machine, matrices, why, warnings)
            if environment:
                candidate = candidate._replace(environment=environment[0])
            ranked.append(((tier, age, preference), candidate))
    if machine.jetson and not policy.cpu and driver_problem is None and rules.jetson_problem(matrices, machine):
        # a board before Thor: NVIDIA's own wheels for its JetPack, where the data has them
        mine, out = pytorch_jetson.candidates(specs, machine, matrices)
        ranked += [((0, -1, 0), c) for c in mine]
        rejected += out
    if _others(machine) and matrices.amd_torch and any(g.vendor == "amd" for g in machine.gpus):
        from cudafit.frameworks.pytorch_vendor import amd_candidates

        theirs, out = amd_candidates(public, tags, machine, matrices, policy)
        ranked += theirs
        rejected += out
    ranked.sort(key=lambda item: item[0])
    return [candidate for _key, candidate in ranked], rejected


def _companions(release: TorchRelease, specs: dict[str, SpecifierSet]) -> Optional[str]:
    for name in ("torchvision", "torchaudio"):
        if name not in specs:
            continue
        paired = getattr(release, name)
        if paired is None:
            return f"no {name} release pairs with torch {release.version} in cudafit's data"
        if not specs[name].contains(Version(paired), prereleases=True):
            return f"pairs with {name} {paired}, which does not satisfy {name}{specs[name]}"
    return None


def _known_siblings(
    matrices: Matrices, variant: Build, platform: Optional[str], memo: dict[str, tuple[str, list[tuple[Version, Build]]]]
) -> tuple[str, list[tuple[Version, Build]]]:
    """The builds of the same variant on the same platform, in any release, whose lists are known;
    failing those, the known builds of the same CUDA major there. Returns (what they are, builds)."""
    if variant.tag not in memo:

        def known(same: Callable[[Build], bool]) -> list[tuple[Version, Build]]:
            return [(r.version, v) for r in matrices.torch for v in r.builds if v.kind == "cuda" and same(v) and platform in v.platforms and v.sass is not None]

        found = known(lambda v: v.tag == variant.tag)
        what = f"{variant.tag} build"
        if not found and variant.cuda is not None:
            major = variant.cuda.major
            found = known(lambda v: v.cuda is not None and v.cuda.major == major)
            what = f"CUDA {major} build"
        memo[variant.tag] = (what, found)
    return memo[variant.tag]


def _judge(
    release: TorchRelease,
    variant: Build,
    machine: Machine,
    matrices: Matrices,
    policy: Policy,
    driver_problem: Optional[str],
    siblings: dict[str, tuple[str, list[tuple[Version, Build]]]],
    verdicts: dict[tuple, rules.BuildVerdict],
) -> Union[Rejection, tuple]:
    """Either a Rejection or ((sort key), why, warnings[, environment])."""

    def reject(constraint: Constraint, reason: str, evidence: str = "", cause: str = "", shortfall: Optional[Shortfall] = None) -> Rejection:
        return Rejection(FAMILY, release.version, variant.tag, constraint, reason, evidence, cause, shortfall=shortfall)

    on_mac = machine.os == "macos"
    if variant.kind == "cpu":
        # A known absence of the driver means CPU, even beside a GPU (nothing CUDA can load).
        if rules.gpu_usable(machine) and not policy.cpu:
            if policy.cpu_also:
                return ((9, (0, 0)), (f"CPU build, which the index serves; {evidence_text(variant)}",), ())
            return reject("accelerator", "CPU-only build on a machine with an NVIDIA GPU", cause=CPU_BESIDE_GPU)
        beside = None
        if not policy.cpu and _others(machine):
            from cudafit.vendor_rules import cpu_beside  # only where an AMD or Intel GPU is here

            beside = cpu_beside(machine, matrices.amd_torch)
        if beside:
            # An AMD or Intel GPU is here: any build of its kind ranks first; this one only where none runs
            return ((3, (0, 0)), (f"CPU build; {evidence_text(variant)}",), (beside,))
        if on_mac:
            cpu_why = (
                "CPU build (Metal/MPS on Apple silicon with macOS 12.3 or later)"
                if machine.arch == "aarch64"
                else "CPU build (Metal/MPS on the Mac's AMD GPU with macOS 12.3 or later)"
                if _others(machine)
                else "CPU build (an Intel Mac has no CUDA; torch runs on its CPU)"
            )
        else:
            cpu_why = "CPU build, as asked (--cpu)" if policy.cpu else "CPU build: no NVIDIA driver"
        notes = _reported(release, variant, machine)
        need = release.macos_min.get(machine.platform or "")
        if on_mac and not machine.macos and need:
            notes += (f"the macOS version was not given (--macos): torch {release.version}'s wheels need macOS >= {need}",)
        return ((0, (0, 0)), (f"{cpu_why}; {evidence_text(variant)}",), notes)
    if (variant.kind == "rocm" or variant.tag == "xpu") and not _others(machine):
        # an NVIDIA machine (the common case) answers without the AMD and Intel rules
        return reject("accelerator", "ROCm build, for AMD GPUs" if variant.kind == "rocm" else "XPU build, for Intel GPUs")
    if variant.kind == "rocm" or variant.tag == "xpu":
        from cudafit.frameworks.pytorch_vendor import judge_index_build

        return judge_index_build(release, variant, machine, matrices, policy)
    if variant.kind != "cuda":
        return reject("accelerator", f"{variant.tag} build, not for NVIDIA GPUs")
    if policy.cpu:
        return reject("accelerator", "CUDA build; --cpu asked for a CPU build")
    assert variant.cuda is not None  # a torch CUDA build is tagged cuXYZ, so the loader always reads its CUDA
    # Builds of many releases share a CUDA version and architecture lists: each is judged once.
    key = (variant.cuda, variant.sass, variant.ptx)
    verdict = verdicts.get(key)
    if verdict is None:
        verdict = verdicts[key] = rules.judge_cuda_build(matrices, machine, variant.cuda, variant.sass, variant.ptx, policy.strict_driver, driver_problem)
    if verdict.rejection:
        constraint, reason, shortfall = verdict.rejection
        if constraint == "compute-capability":
            # Which list decided, and how well it is known: the user weighs a measured list
            # differently from one a third party reported.
            reason += f" [{_arch_evidence(variant)}]"
            return reject(constraint, reason, evidence_text(variant), shortfall=shortfall)
        return reject(constraint, reason, shortfall=shortfall)
    driver, arch, needs_jit = verdict.driver, verdict.arch, verdict.needs_jit
    assert driver is not None and arch is not None  # both are set when there is no rejection
    # An unknown cuDNN is no warning here: alone, torch brings its own; beside another framework
    # explain.joint_evidence says so.
    warnings = verdict.warnings
    if needs_jit and not machine.driver_known:
        own = rules.own_driver(matrices, machine, variant.cuda)
        warnings += (f"PTX JIT needs the CUDA {variant.cuda} toolkit's own driver (>= {own or 'unknown'})",)
    # Conservative with unknowns: verified native code first; then builds whose list is unknown
    # but whose toolkit can compile for every GPU; a PTX-JIT fallback last.
    unverified = variant.sass is None and any(g.compute_capability for g in machine.gpus)
    if unverified:
        # The toolkit could target the GPU, but if every known list of this variant on this
        # platform (earlier or later releases) leaves it out, this one almost surely does too.
        what, known = _known_siblings(matrices, variant, machine.platform, siblings)
        if known and not any(v.cuda is not None and rules.check_arch(matrices, machine, v.cuda, v.sass, v.ptx)[0].ok for _ver, v in known):
            versions = list(dict.fromkeys(str(ver) for ver, _v in known))
            shown = ", ".join(versions[:4]) + (" and more" if len(versions) > 4 else "")
            gpus = ", ".join(rules.gpu_label(g) for g in machine.gpus if g.compute_capability)
            return reject(
                "compute-capability",
                f"its GPU architectures are unknown, and no {what} for {machine.platform} whose list is known ({shown}) carries code for {gpus}",
                evidence_text(variant),
            )
    tier = 2 if needs_jit else (1 if unverified else 0)
    warnings += _reported(release, variant, machine)
    if machine.driver_known:
        preference = -(variant.cuda.major * 1000 + variant.cuda.minor)
    else:
        floor, _ = rules.driver_floor(matrices, machine, variant.cuda, policy.strict_driver)
        preference = driver_key(floor or "999999")[0] * 1000 + variant.cuda.minor
    # Within one release, a build whose existence or architecture lists are only reported yields
    # to one that is measured or declared: the newer CUDA is worth less than the surer kernels.
    hearsay = int(any(variant.grade(fact) == "reported" for fact in ("exists", "sass", "ptx")))
    why = (f"CUDA {variant.cuda}: {driver.reason}; {arch.reason}; {evidence_text(variant)}",)
    return ((tier, (hearsay, preference)), why, warnings)


def _others(machine: Machine) -> bool:
    """An AMD or Intel GPU is described or detected."""
    return any(g.vendor != "nvidia" for g in machine.gpus)


_FACT_WORDS = {
    "exists": "that the index serves it",
    "sass": "its GPU architectures (SASS)",
    "ptx": "its PTX",
    "cudnn": "its cuDNN",
    "pins": "its nvidia-* pins",
}


def _reported(release: TorchRelease, variant: Build, machine: Machine) -> tuple[str, ...]:
    """Reported facts are used like measured ones; a warning says so only where the weaker grade
    changes the risk of the answer: this GPU's kernels resting on a reported architecture list.
    (Reported pins and cuDNN matter beside another framework: explain.joint_evidence says so
    there; every grade stays in --why and JSON.)"""
    if variant.kind != "cuda" or not any(g.compute_capability for g in machine.gpus):
        return ()
    facts = [(fact, variant.evidence[fact]) for fact in ("sass", "ptx") if variant.grade(fact) == "reported"]
    if not facts:
        return ()
    sources = sorted({key for _f, ev in facts for key in ev.source})
    what = ", ".join(_FACT_WORDS[f] for f, _ev in facts)
    return (
        f"torch {release.version}+{variant.tag}: {what} only reported ({', '.join(sources)}), not read from "
        "the wheel nor stated by PyTorch's build configuration for this release",
    )


def _arch_evidence(variant: Build) -> str:
    parts = [f"{label} list {variant.grade(fact)}" for fact, label in (("sass", "SASS"), ("ptx", "PTX"))]
    return ", ".join(parts)


def evidence_text(variant: Build) -> str:
    return evidence.describe(variant.evidence, variant.kind == "cuda")


def _candidate(
    release: TorchRelease,
    variant: Build,
    specs: dict[str, SpecifierSet],
    machine: Machine,
    matrices: Matrices,
    why: tuple[str, ...],
    warnings: tuple[str, ...],
) -> Candidate:
    platform = machine.platform
    assert platform is not None  # candidates() judges only releases with wheels for it
    index_url, local = package_source(release, variant, platform, matrices.torch_index)
    # PyPI serves this very build only where its wheel is the index build renamed (pypi_pins
    # recorded apart means PyPI's wheel was built differently).
    on_pypi = release.pypi_variant.get(platform) == variant.tag and variant.pypi_pins is None
    # `pins` are those of the index build, which is what cudafit installs CUDA builds from (PyPI's
    # own wheel of a version, `pypi_pins`, has differed: 2.1's named nvidia-* wheels, the index's bundled them).
    pins = variant.pins
    packages = [PackagePin("torch", str(release.version), local, variant.tag, index_url, pypi_build=on_pypi)]
    extra_warnings = list(warnings)
    for name in ("torchvision", "torchaudio"):
        if name not in specs:
            continue
        version = getattr(release, name)
        line = ".".join(version.split(".")[:2])
        if name == "torchaudio" and line != f"{release.version.major}.{release.version.minor}":
            # torchaudio's last line (2.11) is pure Python and declares torch>=2.11; no build of it per
            # torch variant is known, so it comes from PyPI, where its wheel is known to exist.
            packages.append(PackagePin(name, version, None, variant.tag, None))
            # a fact of the answer, no risk: said with the reasons, not as a warning
            why = (*why, f"torchaudio {version} (its last release line, pure Python, from PyPI) declares support for torch {release.version}")
            continue
        packages.append(PackagePin(name, version, local, variant.tag, index_url, pypi_build=on_pypi))
    cuda = f"{variant.cuda}" if variant.kind == "cuda" else None
    return Candidate(
        family=FAMILY,
        version=release.version,
        tag=variant.tag,
        kind=variant.kind,
        packages=tuple(packages),
        verified=variant.kind != "cuda" or variant.sass is not None or not any(g.compute_capability for g in machine.gpus),
        cuda=cuda,
        cudnn=variant.cudnn if variant.kind == "cuda" else None,
        pins=dict(pins or {}),
        pins_known=variant.kind != "cuda" or pins is not None,
        why=tuple(why),
        evidence=dict(variant.evidence),
        warnings=tuple(extra_warnings),
        conda_channel_cuda=release.conda_cuda,
        index_packages=variant.index_packages,
        rocm=variant.rocm if variant.kind == "rocm" else None,
    )
