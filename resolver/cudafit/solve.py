"""The solver: a pure function of (data, machine, request) that returns an answer or a failure as
values: the chosen builds, every rejection and clash, and the request they answer. No I/O, no
printing, no words: explain.py words the result (resolution.py does both, for every command).

Each framework family (a provider in cudafit.frameworks; this module names none) offers its runnable
builds best first, with a rejection for every build it ruled out. The joint step (search.py) keeps
the builds that can share one environment and takes, family by family in the order the user named
them, the best build consistent with those already chosen. The answer is the best set in that order:
the newest of the first-named framework, then the best of the next that fits. With the driver
unknown, floors.py answers once per CUDA major's driver floor."""

from __future__ import annotations

from functools import lru_cache
from typing import Optional

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from cudafit import pins, rules
from cudafit.answers import CPU_BESIDE_GPU, DRIVER_NOT_GIVEN, GPU_NOT_GIVEN, BuildClash, Candidate, Rejection, Request, Resolution
from cudafit.frameworks import BY_FAMILY, release_of
from cudafit.last_line import last_lines
from cudafit.records import Machine, Matrices, Policy
from cudafit.search import arc_consistent, conflict, search_in_order
from cudafit.specs import parse_specs


def solve(specs: list[str], machine: Machine, matrices: Matrices, policy: Policy) -> Resolution:
    """The answer as values, for a machine whose driver is known or known absent (floors.py asks
    once per driver floor otherwise): the chosen builds, the rejections, the clashes, and the
    request they answer; explain.worded words it (resolution.resolve does both)."""
    families, extras = parse_specs(specs, machine, matrices)
    offered: list[tuple[str, list[Candidate]]] = []
    rejections: list[Rejection] = []
    for family, member_specs in families.items():
        accepted, rejected = _candidates(family, member_specs, machine, matrices, policy, extras.get(family, frozenset()))
        accepted = _only(family, accepted, policy, rejected)
        offered.append((family, accepted))
        rejections.extend(rejected)

    # A CPU build asks nothing of the driver or the GPU: their being unknown is no warning then.
    machine_problems = [w for w in machine.warnings if not (policy.cpu and w in (DRIVER_NOT_GIVEN, GPU_NOT_GIVEN))]
    if not machine.driver_known and not policy.cpu:
        machine_problems.extend(rules.gpu_driver_needs(matrices, machine))
    pruned, joint = arc_consistent(offered, policy)
    chosen = search_in_order(pruned, policy)
    rejections.extend(joint)
    if chosen is None:
        versions = {family: [str(r.version) for r in BY_FAMILY[family].releases(matrices)] for family in families}
        # "ask for it with --cpu" only where --cpu answers: a library with CUDA builds only would not.
        cpu_helps = any(r.cause == CPU_BESIDE_GPU for r in rejections) and not policy.cpu and solve(specs, machine, matrices, policy._replace(cpu=True)).ok
        return Resolution(
            ok=False,
            machine=machine,
            warnings=tuple(machine_problems),
            rejections=tuple(rejections),
            offered=tuple(tuple(c) for _f, c in offered),
            request=Request(families, versions, policy.cpu or not cpu_helps),
        )
    chosen = _one_rocm_install(chosen)
    # Every runnable build that cannot join the chosen set, and why: kept as values, so notes and
    # --why word them without solving again.
    clashes = []
    for _family, candidates in offered:
        for c in candidates:
            found = next((x for x in (conflict(c, o, policy) for o in chosen if o.family != c.family) if x), None)
            if found is not None:
                clashes.append(BuildClash(c.family, c.version, c.tag, found))
    warnings: list[str] = list(machine_problems)
    for candidate in chosen:
        warnings.extend(candidate.warnings)
    shared = pins.combined([c.pins for c in chosen])
    shared.update(_required_builds(chosen))
    return Resolution(
        ok=True,
        machine=machine,
        candidates=tuple(chosen),
        warnings=tuple(dict.fromkeys(warnings)),
        rejections=tuple(rejections),
        shared_pins=shared,
        offered=tuple(tuple(c) for _f, c in offered),
        clashes=tuple(clashes),
        pythons=_pythons(chosen, machine, matrices),
        request=Request(families, {}, policy.cpu),
        last_lines=last_lines(machine, matrices, ((c.family, BY_FAMILY[c.family].releases(matrices)) for c in chosen if c.kind in ("cuda", "rocm"))),
        driver_min=_driver_min(chosen, machine, matrices, policy),
    )


def _driver_min(chosen: list[Candidate], machine: Machine, matrices: Matrices, policy: Policy) -> str:
    """The oldest driver every chosen CUDA build loads on (the highest of their floors), for the
    files that must say it without the machine (a Dockerfile's host)."""
    floors = []
    for c in chosen:
        if c.kind == "cuda" and c.cuda:
            try:
                floor = rules.driver_floor(matrices, machine, Version(c.cuda), policy.strict_driver)[0]
            except InvalidVersion:
                continue
            if floor:
                floors.append(floor)
    return max(floors, key=lambda f: tuple(int(p) for p in f.split("."))) if floors else ""


def _one_rocm_install(chosen: list[Candidate]) -> list[Candidate]:
    """A build that requires the rocm wheels from its own index brings the ROCm that another
    chosen build would install them for: they are installed once, with the first."""
    bringer = next((c for c in chosen if "rocm" in c.index_packages and not any(p.name == "rocm" for p in c.packages)), None)
    if bringer is None:
        return chosen
    out = []
    for c in chosen:
        if any(p.name == "rocm" and p.supports for p in c.packages):
            c = c._replace(
                packages=tuple(p for p in c.packages if p.name != "rocm"),
                index_packages=(),
                why=(*c.why[:-1], f"the ROCm {c.rocm} it was built against comes with {bringer.shown}"),
            )
        out.append(c)
    return out


def _required_builds(chosen: list[Candidate]) -> dict[str, str]:
    """The exact build a library was solved against, pinned in the library's install command too,
    so that pip never swaps it for another build of the same version."""
    out: dict[str, str] = {}
    for c in chosen:
        for dist in c.requires:
            for other in chosen:
                for p in other.packages:
                    if other is not c and p.name == dist:
                        out[dist] = f"=={p.version}+{p.local}" if p.local else f"=={p.version}"
    return out


class _Memo:
    """A family's candidates for the same specs, machine, policy and data, asked again and again by
    `cudafit check` (each extra of a file beside the same framework pin: unsloth's 429 asks are 5) and
    by fleet: computed once. The data itself is the key's first part, so a run with other data
    starts afresh; the entries are few (one file's or one fleet's questions) and bounded."""

    LIMIT = 512

    def __init__(self) -> None:
        self.matrices: Optional[Matrices] = None
        self.answers: dict[tuple, tuple[tuple[Candidate, ...], tuple[Rejection, ...]]] = {}


_MEMO = _Memo()


def _candidates(
    family: str, specs: dict[str, SpecifierSet], machine: Machine, matrices: Matrices, policy: Policy, extras: frozenset[str]
) -> tuple[list[Candidate], list[Rejection]]:
    if _MEMO.matrices is not matrices or len(_MEMO.answers) >= _MEMO.LIMIT:
        _MEMO.matrices, _MEMO.answers = matrices, {}
    # A family offers its builds whatever set they may be chosen from (`only` narrows them after,
    # in _only): the builds asked for one file's indexes serve every other file's too.
    offering = Policy(strict_driver=policy.strict_driver, cpu=policy.cpu, mixed_cuda=policy.mixed_cuda, cpu_also=policy.cpu_also)
    key = (family, tuple(sorted((name, str(spec)) for name, spec in specs.items())), machine, offering, extras)
    if key not in _MEMO.answers:
        accepted, rejected = BY_FAMILY[family].candidates(specs, machine, matrices, offering, extras)
        _MEMO.answers[key] = (tuple(accepted), tuple(rejected))
    accepted_t, rejected_t = _MEMO.answers[key]
    return list(accepted_t), list(rejected_t)  # the caller extends them: each gets its own lists


def _only(family: str, accepted: list[Candidate], policy: Policy, rejected: list[Rejection]) -> list[Candidate]:
    allowed = _allowed(policy.only, family)
    if not allowed:
        return accepted
    kept = []
    for c in accepted:
        if (c.version, c.tag) in allowed:
            kept.append(c)
        else:
            rejected.append(Rejection(family, c.version, c.tag, policy.only_constraint, policy.only_reason))
    return kept


@lru_cache(maxsize=64)  # one policy meets every family of many asks (check: each environment)
def _allowed(only: frozenset[tuple[str, str, str]], family: str) -> frozenset[tuple[Version, str]]:
    """The (version, tag) builds of `family` a policy allows: versions compared as versions, not
    written out once per build."""
    out = set()
    for fam, version, tag in only:
        if fam == family:
            try:
                out.add((Version(version), tag))
            except InvalidVersion:
                continue
    return frozenset(out)


def _pythons(chosen: list[Candidate], machine: Machine, matrices: Matrices) -> frozenset[str]:
    """The Pythons every chosen release has wheels for on this platform (a lockfile spans them all)."""
    common: Optional[frozenset[str]] = None
    for c in chosen:
        release = release_of(c.family, c.version, matrices)
        if release is not None:
            mine = release.pythons(machine.platform)
            common = mine if common is None else common & mine
    return common or frozenset()
