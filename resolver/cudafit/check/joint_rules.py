"""The rules that solve the pins of one environment together with the resolver: pins that cannot
share an environment (CF005, or CF013 where only a missing fact stops the solve), releases the data
lacks (CF013), a library build no named index serves (CF002), nvidia-*/cuda-* pins the chosen builds
do not accept (CF005), and a pinned set that does not run on a target machine (CF010). The targets
are solved in the same pass as the environment's own platform: both are one joint solve of the same
set, on another machine."""

from __future__ import annotations

from functools import lru_cache
from typing import Optional

from packaging.specifiers import SpecifierSet

from cudafit.answers import Resolution
from cudafit.check.environments import Environment
from cudafit.check.index_rules import never_released
from cudafit.check.indexes import effective_local, other_index, serving_urls
from cudafit.check.model import BUILD_SYSTEM, ONE_SET, Document, Finding, Pin
from cudafit.check.rules import Target, finding
from cudafit.check.solve_inputs import (
    brings_cuda,
    built_from_source,
    is_library,
    pin_families,
    pin_family,
    reachable_library_builds,
    reachable_torch_builds,
    solver_spec,
    unknown_release,
)
from cudafit.check.solved import solved
from cudafit.records import Machine, Matrices, Policy


def sets(doc: Document) -> dict[str, list[Pin]]:
    """The sets installed together: the main one, and each extra or group on top of it."""
    from cudafit.frameworks import BY_MEMBER

    members = [p for p in doc.pins if p.name in BY_MEMBER and not p.constraint]
    base = [p for p in members if not p.group or doc.kind in ONE_SET]
    out = {"": base} if base else {}
    for group in dict.fromkeys(p.group for p in members if p.group and p.group != BUILD_SYSTEM and doc.kind not in ONE_SET):
        out[group] = base + [p for p in members if p.group == group]
    return out


def _pypi_build(pin: Pin, spec: str) -> str:
    """What a plain pin gets from PyPI, in the file's own words: `torch==2.12.0 from PyPI is its
    cu130 build` (the file wrote no local version)."""
    build = spec.split(";")[0]
    public, _, local = build.partition("+")
    return f"{public} from PyPI is its {local} build" if local and pin.version and not pin.local else f"{build} from PyPI"


def joint_and_targets(doc: Document, matrices: Matrices, targets: list[Target], env: Environment, *, any_targets: bool = False) -> list:
    """The set of one environment (`doc` is its view) solved jointly: on its platform with every
    floor met (can the pins share one environment at all?), or on each target of that platform."""
    from cudafit.errors import InputError

    out = []
    here = env.machine()
    for group, members in sets(doc).items():
        wheels = [p for p in doc.pins if p.group in ("", group) and p.name.startswith(("nvidia-", "cuda-")) and p.version]
        if not targets and (any_targets or (len(pin_families(members)) < 2 and not wheels)):
            continue  # another platform's targets, or one framework with no CUDA wheel beside it: nothing to solve
        bringing = [p for p in members if brings_cuda(p, matrices)]
        # onnxruntime-gpu without its cuda extra still runs on CUDA libraries of its build's major
        # only, those the environment has: beside a framework that brings them (ORT loads torch's),
        # they must be of that major.
        members = bringing + [p for p in members if p not in bringing and p.name in _LOADS_OTHERS_CUDA] if bringing else []
        unknown = [p for p in members if unknown_release(p, matrices)]
        for pin in unknown:
            if never_released(pin, matrices):
                continue  # CF002 said it
            said, fix = _unknown_words(pin, matrices)
            out.append(finding("CF013", pin.span, said, fix))
        members = [p for p in members if p not in unknown]
        # A library by range may resolve to a release older than the data (bitsandbytes before
        # 0.50): it cannot be judged, so only an exact pin of one takes part.
        members = [p for p in members if not is_library(p) or p.version is not None]
        if not members:
            continue
        libraries, torch = reachable_library_builds(doc, members, matrices), reachable_torch_builds(doc, members, matrices, here)
        # one side alone keeps its identity, and with it its hash, which the solver's store asks for
        reachable = libraries | torch if libraries and torch else libraries or torch
        for pin in [p for p in members if is_library(p) and p.version and not any(key[:2] == (pin_family(p), p.version) for key in reachable)]:
            if other_index(doc, pin):
                # a mirror or a company index (TUNA's copy of PyPI): what it serves is not known here
                members = [p for p in members if p is not pin]
                continue
            where = ", ".join(sorted(set(serving_urls(doc, pin)))) or "PyPI"
            said = f"{pin.name} {pin.version} has no build on the index this file names ({where}): pip will not find it there"
            out.append(finding("CF002", pin.span, said, f"install {pin.name} from where it is published, in its own command (`cudafit resolve` gives them)"))
            members = [p for p in members if p is not pin]
        if not members:
            continue
        families = pin_families(members)
        specs = [solver_spec(doc, p, here, matrices) for p in members]
        policy = Policy(
            cpu=any(effective_local(doc, p) == "cpu" for p in members), only=reachable, only_reason="not reachable from the indexes this file names"
        )
        where = " (" + group + ")" if group else ""
        try:
            anywhere = solved(specs, here, matrices, policy)
        except InputError:
            anywhere = None
        if anywhere is not None and not anywhere.ok and not policy.cpu:
            # A CPU torch the file's indexes serve makes a set pip can install (PyPI's torch 2.5
            # to 2.10 on linux-aarch64, beside jax on the GPU): the pins can share one environment.
            try:
                on_cpu = solved(specs, here, matrices, policy._replace(cpu_also=True))
            except InputError:
                on_cpu = None
            anywhere = on_cpu if on_cpu is not None and on_cpu.ok else anywhere
        if anywhere is not None and not anywhere.ok and _pins_disagree(anywhere, families) and _built_elsewhere(doc, members, matrices, policy):
            # The pins name builds this platform has none of (+cu124 on macOS): the file is not
            # for it. Only a target of this platform says so (CF010).
            anywhere = None
            if not targets:
                continue
        elif anywhere is not None and not anywhere.ok and _pins_disagree(anywhere, families):
            # No release satisfies the pins at all: CF002/CF004 say which and why. The frameworks
            # themselves are still checked, without the companions that disagree.
            members = [p for p in members if p.name in _family_packages()]
            specs = [solver_spec(doc, p, here, matrices) for p in members]
            try:
                anywhere = solved(specs, here, matrices, policy) if members else None
            except InputError:
                anywhere = None
            if anywhere is None or (not anywhere.ok and _pins_disagree(anywhere, families)):
                continue
        checks: list[tuple[Optional[Target], Machine]] = [(t, t.machine) for t in targets]
        if not any_targets:
            checks.append((None, here))
        for target, machine in checks:
            try:
                res = anywhere if target is None else solved([solver_spec(doc, p, machine, matrices) for p in members], machine, matrices, policy)
            except InputError:
                continue  # every marker false on this machine: nothing to install there
            if res is None:
                continue
            if res.ok:
                out += _nvidia_pins(doc, res, group, members)
                if target is not None:
                    out += _past_last_line(members, res, target)
                continue
            # The solver's words, without the name of its joint step, and without what only
            # `resolve` offers (its --mixed-cuda, --cpu: the conflict's advice)
            first = res.causes[0] if res.causes else None
            parts = () if first is None else (first.constraint if first.constraint != "joint" else "", first.subject, first.reason)
            cause = ": ".join(p for p in parts if p) or "no consistent set"
            # The finding points at the framework that has no build left, not the set's first line.
            offered = {c.family for builds in res.offered for c in builds}
            anchor = next((p.span for p in members if pin_family(p) not in offered), members[0].span)
            if target is None:
                if any(r.constraint == "joint" for r in res.rejections) and _each_runs_alone(doc, members, here, matrices, policy):
                    code = "CF013" if _only_unknowns(res) or built_from_source(members, matrices) else "CF005"
                    fix = (
                        ""
                        if code == "CF013"
                        else "pin builds whose CUDA libraries can meet (one CUDA major, one cuDNN major, compatible nvidia-* pins, "
                        "the torch each library requires)"
                    )
                    verb = "cannot be shown to share" if code == "CF013" else "cannot share"
                    # A plain version from PyPI is PyPI's build: say so, it is often the telling fact.
                    pypi = [_pypi_build(p, s) for p in members if (s := solver_spec(doc, p, here, matrices)) != solver_spec(doc, p)]
                    said = f"these pins {verb} one environment{where}: {cause.replace(' that runs here', '')}"
                    out.append(finding(code, anchor, said + (f" ({'; '.join(pypi)}: no PyTorch index in the file)" if pypi else ""), fix))
            else:
                out.append(
                    finding(
                        "CF010",
                        anchor,
                        f"what the file asks for{where} does not run on target '{target.name}': {cause}",
                        "pin builds that run there (`cudafit resolve` with the target's --driver/--gpu)",
                    )
                )
    return out


# Linux x86_64, where every framework has builds, with every floor met: the pins' own facts only.
_LINUX = Environment("linux-x86_64", None, "").machine()


def _built_elsewhere(doc: Document, members: list[Pin], matrices: Matrices, policy: Policy) -> bool:
    """The pins, read as any build of their versions, have builds on Linux x86_64: what one
    platform lacks is that platform's, not a disagreement between the pins."""
    from cudafit.errors import InputError

    try:
        res = solved([solver_spec(doc, p) for p in members], _LINUX, matrices, policy)
    except InputError:
        return False
    return not _pins_disagree(res, pin_families(members))


def _each_runs_alone(doc: Document, members: list[Pin], machine: Machine, matrices: Matrices, policy: Policy) -> bool:
    """Every framework of the set has a build of its own on this platform: only then is a failure
    the set's (a clash), not the platform's (xformers has no aarch64 wheels)."""
    from cudafit.errors import InputError

    by_family: dict[str, list[Pin]] = {}
    for pin in members:
        by_family.setdefault(pin_family(pin), []).append(pin)
    for pins in by_family.values():
        try:
            if not solved([solver_spec(doc, p, machine, matrices) for p in pins], machine, matrices, policy).ok:
                return False
        except InputError:
            return False
    return True


def _only_unknowns(res: Resolution) -> bool:
    """The set fails only because the data lacks a fact (a cuDNN, a pin list), not because two facts clash."""
    kinds = {r.cause for r in res.rejections if r.constraint == "joint"} | {c.clash.kind for c in res.clashes}
    return bool(kinds) and kinds <= {"cudnn-unknown", "pins-unknown"}


# GPU-only distributions whose CUDA libraries may come from another package (their CPU twin is
# another name): without the extra that brings their own, they use what is installed beside them.
_LOADS_OTHERS_CUDA = frozenset({"onnxruntime-gpu"})


@lru_cache(maxsize=1)
def _family_packages() -> frozenset[str]:
    """The frameworks' own packages (torch, tensorflow, tensorflow-cpu, jax, jaxlib,
    onnxruntime-gpu), from the registry: what stays when companions disagree."""
    from cudafit.frameworks import BY_FAMILY, families

    providers = [BY_FAMILY[family] for family in families()]
    return frozenset(m for p in providers if not p.REQUIRES for m in p.MEMBERS if m not in p.COMPANIONS)


def _pins_disagree(res: Resolution, families: set[str]) -> bool:
    """Some family has no release left by its specifiers alone, wherever it runs."""
    offered = {c.family for builds in res.offered for c in builds}
    for family in families - offered:
        mine = [r for r in res.rejections if r.family == family]
        if mine and all(r.constraint == "spec" for r in mine):
            return True
    return False


def _past_last_line(members: list[Pin], res: Resolution, target: Target) -> list:
    """A framework spec that admits the releases which dropped the target's GPU (CF018): the
    resolver answers below them, but pip and uv take the newest the spec admits."""
    from packaging.version import Version

    out = []
    for last in res.last_lines:
        for pin in members:
            if pin.name != last.family or pin.constraint or not SpecifierSet(pin.specifier).contains(Version(last.dropped), prereleases=True):
                continue
            text = pin.span.text
            edit = (pin.span, f"{text}{',' if pin.specifier else ''}{last.bound}") if ";" not in text and "@" not in text and not pin.hashed else None
            out.append(
                finding(
                    "CF018",
                    pin.span,
                    f"{pin.name}{pin.specifier} admits {last.family} {last.dropped} and later, which "
                    f"{'need a newer driver than one for' if last.cause == 'driver' else 'carry no kernels for'} {last.arch} ({last.gpu}) "
                    f"on target '{target.name}': {last.family} {last.line} is its last release line [{last.evidence}]",
                    f"bound it: {last.family}{last.bound}",
                    edit,
                )
            )
    return out


def _unknown_words(pin: Pin, matrices: Matrices) -> tuple[str, str]:
    """Why a release is not judged, and what helps: older than the data on its family (vllm 0.8.2
    beside data from 0.19), newer (an update may know it), or between releases the data has."""
    from packaging.version import InvalidVersion, Version

    from cudafit.frameworks import BY_MEMBER

    known = sorted(r.version for r in BY_MEMBER[pin.name].releases(matrices)) if pin.name == BY_MEMBER[pin.name].FAMILY else []
    left = "it was left out of the checks"
    try:
        version = Version(Version(pin.version or "").public)
    except InvalidVersion:
        version = None
    if known and version is not None and version < known[0]:
        return f"{pin.name} {pin.version} is older than cudafit's data on {pin.name}, which starts at {known[0]}: {left}", ""
    if known and version is not None and version > known[-1]:
        said = f"{pin.name} {pin.version} is newer than cudafit's data on {pin.name} (newest {known[-1]}, data of {matrices.data_date}): {left}"
        return said, "run `cudafit data update`"
    said = f"{pin.name} {pin.version} is not in cudafit's data (data of {matrices.data_date}); {left}"
    return said, "run `cudafit data update`, or check that the release exists"


def _nvidia_pins(doc: Document, res: Resolution, group: str, members: list[Pin]) -> list:
    """The file's own nvidia-*/cuda-* pins against what the builds it pins exactly require: a build
    the solver chose where the file names no release (torch for a flash-attn that compiles against
    whichever torch is there) is no evidence, as pip would take another release that fits."""
    out: list[Finding] = []
    pinned = {pin_family(p) for p in members if p.version is not None}  # a companion's exact pin fixes its release too
    for pin in doc.pins:
        if pin.version is None or pin.group not in ("", group) or not pin.name.startswith(("nvidia-", "cuda-")):
            continue
        for candidate in res.candidates:
            if candidate.family not in pinned:
                continue
            wanted = candidate.pins.get(pin.name)
            if wanted and not SpecifierSet(wanted).contains(pin.version, prereleases=True):
                out.append(
                    finding(
                        "CF005",
                        pin.span,
                        f"{pin.name} {pin.version} does not satisfy {candidate.label}, which requires {pin.name}{wanted}",
                        f"pin a version in {wanted}, or drop the pin and let the framework bring it",
                    )
                )
    return out
