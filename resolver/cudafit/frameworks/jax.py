"""JAX: the releases and CUDA flavours that run here, best first.

A JAX release offers one CUDA flavour per extra: jax[cuda12] (the jax-cuda12-plugin wheels from
PyPI), jax[cuda13], and in older releases jax[cuda11_pip]/jax[cuda12_pip], whose CUDA jaxlib wheels
come from JAX's own find-links page. `jax[cuda12]` in a spec picks the flavour; without one, the
highest CUDA the driver runs wins. Preference: the newest release, then the highest CUDA."""

from __future__ import annotations

from typing import NamedTuple, Optional, Union

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cudafit import evidence, rules
from cudafit.answers import CPU_BESIDE_GPU, VERSION_SPEC, Candidate, PackagePin, Rejection
from cudafit.frameworks.base import amd_answered, named, screen
from cudafit.records import Build, Constraint, Machine, Matrices, Policy, Shortfall, pythons_on

FAMILY = "jax"
MEMBERS = ("jax", "jaxlib")
REQUIRES: tuple[str, ...] = ()  # built against no other family
BRINGS: tuple[str, ...] = ()
COMPANIONS: tuple[str, ...] = ()


class JaxRelease(NamedTuple):
    version: Version
    date: str
    jaxlib: Optional[str]
    python: frozenset[str]
    platforms: frozenset[str]
    extras: tuple[str, ...]
    builds: tuple[Build, ...]  # one per CUDA extra cudafit models
    python_by_platform: Optional[dict[str, frozenset[str]]] = None
    macos_min: dict[str, str] = {}  # of the jaxlib wheels, as records.TorchRelease.macos_min (never mutated)
    macos_min_by_python: dict[str, str] = {}
    # extra -> the extra whose requirements it repeats, as the release's METADATA lists them: jax[cuda]
    # is jax[cuda12] from 0.4.30, a find-links jaxlib for a local CUDA before (never mutated)
    aliases: dict[str, str] = {}
    # Requires-Dist lines of the jax wheel that other pins of a file must meet (numpy's), as written
    requires: tuple[str, ...] = ()

    def pythons(self, platform: Optional[str]) -> frozenset[str]:
        return pythons_on(self.python, self.python_by_platform, platform)


def known_extras(matrices: Matrices) -> set[str]:
    return {extra for r in releases(matrices) for extra in r.extras}


def releases(matrices: Matrices) -> tuple[JaxRelease, ...]:
    return matrices.frameworks.get(FAMILY, ())


def implied(member_specs: dict[str, SpecifierSet]) -> dict[str, SpecifierSet]:
    return member_specs


def check_extras(extras: frozenset[str]) -> Optional[str]:
    """Each CUDA extra is one flavour (cu12, cu13); one environment holds one. `cuda` is jax's own
    alias of one of them (cuda12 from 0.4.30): beside exactly one other, the releases decide."""
    flavours = extras - {"cuda"} if len(extras) == 2 else extras
    if len(flavours) > 1:
        return f"one CUDA flavour per environment; asked for {', '.join(sorted(extras))}"
    return None


def pairs(member: str, version: Version, matrices: Matrices) -> list[Version]:
    if member == "jaxlib":
        return [r.version for r in releases(matrices) if r.jaxlib == str(version)]
    return [version]


def candidates(
    specs: dict[str, SpecifierSet],
    machine: Machine,
    matrices: Matrices,
    policy: Policy,
    extras: frozenset[str] = frozenset(),
) -> tuple[list[Candidate], list[Rejection]]:
    spec = specs.get("jax", SpecifierSet())
    jaxlib_spec = specs.get("jaxlib", SpecifierSet())
    usable = rules.gpu_usable(machine)
    want_cpu = policy.cpu or not usable or machine.os == "windows"
    ranked: list[tuple[tuple, Candidate]] = []
    rejected: list[Rejection] = []
    driver_problem = rules.check_gpu_support_by_driver(matrices, machine)
    beside = amd_answered(machine, FAMILY) if not policy.cpu else None
    for age, release in enumerate(releases(matrices)):

        def reject(constraint: Constraint, reason: str, tag: Optional[str] = None, release: JaxRelease = release, cause: str = "") -> None:
            rejected.append(Rejection(FAMILY, release.version, tag, constraint, reason, cause=cause))

        if release.jaxlib and not jaxlib_spec.contains(release.jaxlib, prereleases=True):
            reject("spec", f"pairs with jaxlib {release.jaxlib}, which does not satisfy jaxlib{jaxlib_spec}", cause=VERSION_SPEC)
            continue
        out = screen(FAMILY, release, spec, "jax", "jaxlib", machine)  # jax is pure Python: jaxlib's wheels decide
        if out is not None:
            rejected.append(out)
            continue
        missing = set(extras) - {_normal(e) for e in release.extras} if extras else set()
        if missing:
            reject("extra", f"has no extra {', '.join(sorted(missing))} (has {', '.join(release.extras) or 'none'})")
            continue
        wanted = _unaliased(release, extras)
        said = _alias_note(release, extras)
        if len(wanted) > 1:
            # jax[cuda,cuda13] where cuda is cuda12: two flavours in one environment
            reject("extra", f"asks for {', '.join(sorted(wanted))} there: one CUDA flavour per environment" + (f"; {said}" if said else ""))
            continue
        rocm_extras = {_normal(b.extra) for b in release.builds if b.kind == "rocm"}
        if beside is not None and (not wanted or wanted <= rocm_extras):
            # an AMD GPU is answered: the ROCm plugin builds, and the CPU build only after them
            from cudafit.frameworks import jax_rocm

            found, refused = jax_rocm.candidates(release, wanted, age, machine, matrices)
            builds = {b.tag: b for b in release.builds}
            ranked.extend((key, c._replace(held=held(release, builds[c.tag]))) for key, c in found)
            rejected.extend(refused)
            if not wanted:
                ranked.append(((3, age, 0), _candidate(release, None, "cpu", ("CPU build",), (beside,), {}, True)))
            continue
        if want_cpu and not wanted:
            if usable and not policy.cpu and machine.os == "windows":
                reject("os", "JAX has no CUDA build for native Windows: use WSL2 (jax[cuda12] or jax[cuda13] there) or the CPU build (--cpu)", "cpu")
            elif usable and not policy.cpu:
                reject("accelerator", "CPU build on a machine with an NVIDIA GPU", "cpu", cause=CPU_BESIDE_GPU)
            else:
                ranked.append(((0, age, 0), _candidate(release, None, "cpu", ("CPU build",), (), {}, True)))
            continue
        unmodelled = set(wanted) - {_normal(b.extra) for b in release.builds} if wanted else set()
        if unmodelled:
            local = any(e.endswith("-local") for e in unmodelled)
            reject(
                "extra",
                # No version in the words: the releases that share them are said on one line.
                f"cudafit has no build data for jax[{', '.join(sorted(unmodelled))}]"
                + (" (the -local extras use a CUDA or ROCm installed on the system)" if local else "")
                + (f"; {said}" if said else ""),
            )
            continue
        for build in release.builds:
            if wanted and _normal(build.extra) not in wanted:
                continue
            if build.kind == "rocm":
                # an extra asked for is the reason: said, where "a ROCm build" alone (an
                # accelerator rejection) is left out of a failure
                reject("extra" if wanted else "accelerator", f"jax[{build.extra}] is a ROCm build, for AMD GPUs", build.tag)
                continue
            if machine.platform not in build.platforms and any(b.extra == build.extra and machine.platform in b.platforms for b in release.builds):
                continue  # the extra's build for this platform is another entry
            result = _judge(release, build, machine, matrices, policy, driver_problem)
            if isinstance(result, Rejection):
                rejected.append(result)
                continue
            tier, why, warnings, verified = result
            why = (*why, said) if said else why
            ranked.append(((tier, age, -build.major), _candidate(release, build, build.tag, why, warnings, build.pins or {}, verified)))
        if not release.builds and not want_cpu:
            reject("platform", "no CUDA build of this release in cudafit's data")
    ranked.sort(key=lambda item: item[0])
    return [c for _k, c in ranked], rejected


def extra_brings(release: JaxRelease, extra: str) -> tuple[tuple[str, str], ...]:
    """The distributions jax[extra]==release installs beside jaxlib, each at the version it fixes
    (jax[cuda12]: jax-cuda12-plugin and jax-cuda12-pjrt of jaxlib's release); () where the data
    has no build that extra selects."""
    wanted = _unaliased(release, frozenset({_normal(extra)}))
    build = next((b for b in release.builds if wanted & {_normal(e) for e in b.extras}), None)
    return tuple(p for p in held(release, build) if p[0] != "jaxlib") if build is not None else ()


def _unaliased(release: JaxRelease, extras: frozenset[str]) -> frozenset[str]:
    """The extras asked for, each alias read as the extra it repeats in this release."""
    if not extras or not release.aliases:
        return extras
    aliases = {_normal(a): _normal(t) for a, t in release.aliases.items()}
    return frozenset(aliases.get(e, e) for e in extras)


def _alias_note(release: JaxRelease, extras: frozenset[str]) -> str:
    aliases = {_normal(a): t for a, t in release.aliases.items()}
    named = sorted(e for e in extras if e in aliases)
    return "; ".join(f"there jax[{e}] requires what jax[{aliases[e]}] does (its METADATA)" for e in named)


def _normal(extra: str) -> str:
    # Only runs that name a jax extra reach here: packaging.utils pulls in the wheel-tag machinery.
    from packaging.utils import canonicalize_name

    return str(canonicalize_name(extra))


def _judge(
    release: JaxRelease, build: Build, machine: Machine, matrices: Matrices, policy: Policy, driver_problem: Optional[str]
) -> Union[Rejection, tuple[int, tuple[str, ...], tuple[str, ...], bool]]:
    def reject(constraint: Constraint, reason: str, shortfall: Optional[Shortfall] = None) -> Rejection:
        return Rejection(FAMILY, release.version, build.tag, constraint, reason, shortfall=shortfall)

    if machine.platform not in build.platforms:
        return reject("platform", f"jax[{build.extra}] has no wheels for {machine.platform}")
    if policy.cpu:
        return reject("accelerator", "CUDA build; --cpu asked for a CPU build")
    if build.cuda is None:
        return reject("data", f"the CUDA version of jax[{build.extra}] is unknown in cudafit's data")
    # pip brings the newest CUDA runtime of the major that the plugin allows, so the major's
    # minor-version floor is what the driver must meet (JAX's install guide states the same floor).
    # The plugin was compiled with a newer toolkit of the major than the runtime it accepts; the
    # newest one cudafit knows bounds what it can carry.
    built_with = rules.newest_toolkit(matrices, build.major) or build.cuda
    driver_cuda = rules.installed_runtime(matrices, build.cuda, build.pins) if policy.strict_driver else build.cuda
    verdict = rules.judge_cuda_build(matrices, machine, driver_cuda, build.sass, build.ptx, policy.strict_driver, driver_problem, built_with)
    if verdict.rejection:
        return reject(*verdict.rejection)
    needs_jit = verdict.needs_jit
    unverified = build.sass is None and any(g.compute_capability for g in machine.gpus)
    arch_warning = (
        f"which GPU architectures jax[{build.extra}] {release.version} carries is unknown; not checked"
        if unverified or verdict.arch is None
        else verdict.arch.warning
    )
    warnings = tuple(named(f"jax[{build.extra}] {release.version}", [w for w in (verdict.driver.warning if verdict.driver else None, arch_warning) if w]))
    if build.find_links:
        warnings += (f"jax[{build.extra}] {release.version} installs CUDA jaxlib wheels from JAX's find-links page",)
    tier = 2 if needs_jit else (1 if unverified else 0)
    why = (f"jax[{build.extra}]: CUDA {build.cuda}+, cuDNN {build.cudnn or 'unknown'}+; {verdict.reason}; {evidence.describe(build.evidence)}",)
    return tier, why, warnings, not unverified


def _candidate(
    release: JaxRelease,
    build: Optional[Build],
    tag: str,
    why: tuple[str, ...],
    warnings: tuple[str, ...],
    pins: dict[str, str],
    verified: bool,
) -> Candidate:
    extras = (build.extra,) if build else ()
    pin = PackagePin("jax", str(release.version), None, tag, None, extras=extras, find_links=(build.find_links or None) if build else None)
    return Candidate(
        family=FAMILY,
        version=release.version,
        tag=tag,
        kind="cuda" if build else "cpu",
        packages=(pin,),
        cuda=f"{build.cuda}" if build and build.cuda else None,
        cudnn=build.cudnn if build else None,
        pins=dict(pins),
        pins_known=build is None or build.pins is not None,
        verified=verified,
        evidence=dict(build.evidence) if build else {},
        why=tuple(why),
        warnings=tuple(warnings),
        held=held(release, build),
    )


def held(release: JaxRelease, build: Optional[Build]) -> tuple[tuple[str, str], ...]:
    """What jax[extra]==X installs at versions it fixes: jaxlib (a find-links one with its local
    tag) and the extra's plugins at jaxlib's version (ROCm's: any post-release of jax's)."""
    jaxlib = (("jaxlib", f"=={release.jaxlib}" + (f"+{build.local}" if build and build.local else "")),) if release.jaxlib else ()
    if build is None:
        return jaxlib
    if build.kind == "rocm":
        return jaxlib + tuple((name, f"=={release.version}.*") for name in build.packages)
    # the find-links era's extra brings jaxlib itself (its CUDA build): held above, with its tag
    return jaxlib + tuple((name, f"=={release.jaxlib}") for name in build.packages if release.jaxlib and name != "jaxlib")
