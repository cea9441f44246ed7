"""The solver: a pure function of (data, machine, request) that returns an answer with reasons or a
failure with causes. No I/O, no printing.

Each framework family (a provider in cudafit.frameworks; this module names none) offers its runnable
builds best first, with a rejection for every build it ruled out. The joint step is a small
constraint problem: builds of two families conflict when they need different CUDA majors (unless
mixing is allowed), different cuDNN majors, or pins on a shared nvidia-* wheel that no version
satisfies. Those constraints are pairwise, and for version ranges pairwise overlap means a common
version, so arc consistency first removes every build with no partner in some other family (cost
grows with the product of two families' sizes, not of all of them), and a depth-first search then
takes, family by family in the order the user named them, the best build consistent with those
already chosen. The answer is the best set in that order: the newest of the first-named framework,
then the best of the next that fits."""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Optional

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from cudafit import explain, pins, rules
from cudafit.errors import InputError
from cudafit.frameworks import BY_FAMILY, BY_MEMBER, DEFAULT_SPEC, KNOWN, release_of
from cudafit.records import (
    CPU_BESIDE_GPU,
    DRIVER_NOT_GIVEN,
    GPU_NOT_GIVEN,
    BuildClash,
    Candidate,
    Clash,
    FloorAnswer,
    Machine,
    Matrices,
    Policy,
    Rejection,
    Resolution,
    driver_key,
)


def parse_specs(
    texts: list[str], machine: Machine, matrices: Optional[Matrices] = None
) -> tuple[dict[str, dict[str, SpecifierSet]], dict[str, frozenset[str]]]:
    """(family -> {distribution: combined specifier}, family -> extras asked for), families in the
    order first named. Markers are evaluated for the target machine."""
    families: dict[str, dict[str, SpecifierSet]] = {}
    extras: dict[str, frozenset[str]] = {}
    for text in texts or [DEFAULT_SPEC]:
        if text in BY_MEMBER:
            # A bare framework name (the common `resolve torch`) has nothing to parse; PEP 508's
            # parser and its marker machinery cost a tenth of the whole run to import.
            provider = BY_MEMBER[text]
            members = families.setdefault(provider.FAMILY, {})
            members[text] = members.get(text, SpecifierSet())
            families[provider.FAMILY] = provider.implied(members)
            continue
        from packaging.requirements import InvalidRequirement, Requirement
        from packaging.utils import canonicalize_name

        try:
            req = Requirement(text)
        except InvalidRequirement as exc:
            raise InputError(f"not a PEP 508 requirement{_column(str(exc))} ({str(exc).splitlines()[0]})", field="spec", value=text) from None
        name = canonicalize_name(req.name)
        if name not in BY_MEMBER:
            raise InputError(f"unknown framework {req.name!r}; expected one of {KNOWN}", field="spec", value=text)
        if req.url:
            raise InputError("a URL requirement names one file; cudafit picks among releases", field="spec", value=text)
        wanted = {canonicalize_name(e) for e in req.extras}
        provider = BY_MEMBER[name]
        known = {canonicalize_name(e) for e in (provider.known_extras(matrices) if matrices is not None else ())}
        unknown = wanted - known
        if unknown:
            raise InputError(
                f"unknown extra {', '.join(sorted(unknown))} for {name}"
                + (f" (known: {', '.join(sorted(known))})" if known else " (it has none cudafit knows)"),
                field="spec",
                value=text,
            )
        if req.marker is not None and not req.marker.evaluate(marker_env(machine)):
            continue
        family = provider.FAMILY
        members = families.setdefault(family, {})
        members[name] = members.get(name, SpecifierSet()) & req.specifier
        families[family] = provider.implied(members)
        if wanted:
            extras[family] = extras.get(family, frozenset()) | frozenset(wanted)  # PEP 685 normalised
            problem = provider.check_extras(extras[family])
            if problem:
                raise InputError(problem, field="spec", value=text)
    if not families:
        raise InputError(f"no spec applies to this machine (every environment marker is false): {' '.join(texts)}")
    # A library built against a framework brings that framework along.
    for family in list(families):
        for needed in BY_FAMILY[family].REQUIRES:
            families.setdefault(needed, {BY_FAMILY[needed].MEMBERS[0]: SpecifierSet()})
        # and the companions it pins (torchvision), so that they come from that framework's index
        for dist in BY_FAMILY[family].BRINGS:
            owner = BY_MEMBER[dist]
            members = families.setdefault(owner.FAMILY, {})
            members.setdefault(dist, SpecifierSet())
            families[owner.FAMILY] = owner.implied(members)
    return families, extras


def _column(message: str) -> str:
    """packaging prints the spec indented by 4 with a caret line under it; keep the caret's
    column (1-based), so the message stays on one line."""
    for line in message.splitlines()[2:]:
        if "^" in line and set(line.strip()) <= {"^", "~"}:
            return f" at column {line.index('^') - 3}"
    return ""


def marker_env(machine: Machine) -> dict[str, str]:
    from packaging.markers import default_environment

    env: dict[str, str] = {k: str(v) for k, v in default_environment().items()}
    if machine.python:
        env["python_version"] = machine.python
        env["python_full_version"] = machine.python + ".0"
    if machine.os:
        env["sys_platform"] = {"linux": "linux", "wsl": "linux", "windows": "win32", "macos": "darwin"}.get(machine.os, machine.os)
        env["platform_system"] = {"linux": "Linux", "wsl": "Linux", "windows": "Windows", "macos": "Darwin"}.get(machine.os, machine.os)
        env["os_name"] = "nt" if machine.os == "windows" else "posix"
    if machine.arch:
        env["platform_machine"] = {
            "x86_64": "AMD64" if machine.os == "windows" else "x86_64",
            "aarch64": "arm64" if machine.os in ("macos", "windows") else "aarch64",
        }.get(machine.arch, machine.arch)
    return env


def conflict(a: Candidate, b: Candidate, policy: Policy) -> Optional[Clash]:
    """Why builds a and b cannot share one environment, or None."""
    # A library built against another chosen build uses that build's CUDA runtime: one major
    # always, whatever --mixed-cuda allows between frameworks.
    a_on_b, b_on_a = _built_against(a, b), _built_against(b, a)
    bound = a_on_b or b_on_a
    # The version a library requires first: no other build of it changes that.
    found_requires = _requires_clash(a, b)
    if found_requires is not None:
        return found_requires
    for x, y, dist in ((a, b, a_on_b), (b, a, b_on_a)):
        # A library that loads the native library of the CUDA version of the build it is made
        # against (bitsandbytes) stands for those versions only.
        if dist and x.torch_cuda == "cpu" and y.cuda:
            return Clash("cuda-range", a.label, b.label, "cpu", y.cuda, dist=dist, unknown_is_a=x is a)
        if dist and x.torch_cuda and x.torch_cuda != "cpu" and y.cuda and not _admits(x.torch_cuda, y.cuda):
            return Clash("cuda-range", a.label, b.label, x.torch_cuda, y.cuda, dist=dist, unknown_is_a=x is a)
        if dist and x.needs_required_cuda and x.cuda and not y.cuda:
            return Clash("cuda-major", a.label, b.label, (a.cuda or "cpu").split(".")[0], (b.cuda or "cpu").split(".")[0], dist=dist)
    if a.cuda and b.cuda and (bound or not policy.mixed_cuda) and a.cuda.split(".")[0] != b.cuda.split(".")[0]:
        return Clash("cuda-major", a.label, b.label, a.cuda.split(".")[0], b.cuda.split(".")[0], dist=bound)
    if a.cudnn and b.cudnn and a.cudnn.split(".")[0] != b.cudnn.split(".")[0]:
        # A cuDNN build for 9.x runs on 9.y (y >= x) but never across majors, and one process loads one.
        return Clash("cudnn-major", a.label, b.label, a.cudnn, b.cudnn)
    if a.cuda and b.cuda and a.cuda.split(".")[0] == b.cuda.split(".")[0] and a.loads_cudnn and b.loads_cudnn:
        # One process loads one cuDNN: with a build's cuDNN unknown, and no shared pin to settle
        # it, nothing says the two agree on its major.
        shared_cudnn = any(d.startswith("nvidia-cudnn") for d in set(a.pins) & set(b.pins))
        for x in (a, b):
            if x.cudnn is None and not shared_cudnn:
                return Clash("cudnn-unknown", a.label, b.label, unknown_is_a=x is a)
        # Conservative with unknowns: builds of one CUDA major share nvidia-* wheels, and without
        # the versions a build pins, nothing says the two can be installed together.
        for x, y in ((a, b), (b, a)):
            if not x.pins_known and (y.pins or not y.pins_known):
                return Clash("pins-unknown", a.label, b.label, unknown_is_a=x is a)
    found = pins.clash(a.pins, b.pins)
    if found:
        dist, spec_a, spec_b = found
        return Clash("pin", a.label, b.label, spec_a, spec_b, dist)
    return None


def _built_against(x: Candidate, y: Candidate) -> str:
    """The distribution of y's that x is built against, or ""."""
    return next((p.name for p in y.packages if p.name in x.requires), "")


def _requires_clash(a: Candidate, b: Candidate) -> Optional[Clash]:
    """One of a, b is built against a distribution the other ships, and the other's build is not
    one it takes (unknown_is_a: a is the one built against b)."""
    for x, y in ((a, b), (b, a)):
        for p in y.packages:
            spec = x.requires.get(p.name)
            if spec is not None:
                version = f"{p.version}+{p.local}" if p.local else p.version
                if not _admits(spec, version):
                    return Clash("requires", a.label, b.label, spec, str(Version(version)), p.name, unknown_is_a=x is a)
    return None


@lru_cache(maxsize=4096)  # arc consistency asks the same library's pin of the same builds again and again
def _admits(spec: str, version: str) -> bool:
    return SpecifierSet(spec).contains(Version(version), prereleases=True)


def resolve(specs: list[str], machine: Machine, matrices: Matrices, policy: Policy) -> Resolution:
    if not machine.driver_known and machine.os != "macos" and not policy.cpu:
        return _per_driver_floor(specs, machine, matrices, policy)
    return _resolve(specs, machine, matrices, policy)


def _per_driver_floor(specs: list[str], machine: Machine, matrices: Matrices, policy: Policy) -> Resolution:
    """The driver decides which CUDA major loads, and it is unknown: answer for each major's
    minor-version floor (raised to what the GPUs' architecture needs), and choose the one the
    data names as the default (the widest installed base), saying so and how to change it."""
    answers: list[FloorAnswer] = []
    results: dict[int, Resolution] = {}
    default = matrices.unknown_driver_major
    need = rules.gpus_first_driver(matrices, machine)
    if need and "." not in need:
        # A branch ("570") stands for its drivers, the oldest of which the toolkits name (CUDA 12.8:
        # 570.26); taken as "570.00" it would fail that toolkit's own-driver checks (PTX JIT).
        windows = machine.os in ("windows", "wsl")
        named = [t.windows_driver_min if windows else t.linux_driver_min for t in matrices.toolkits.values()]
        in_branch = [d for d in named if d and d != "unknown" and d.split(".")[0] == need]
        if in_branch:
            need = min(in_branch, key=driver_key)
    floors = {}
    for major in sorted(matrices.compat, reverse=True):
        floor, _rule = rules.driver_floor(matrices, machine, Version(f"{major}.0"), False)
        if floor is not None:
            floors[major] = floor
    for major, floor in floors.items():
        driver = max(floor, need, key=driver_key) if need else floor
        above = floors.get(major + 1)
        if above is not None and driver_key(driver) >= driver_key(above):
            # The GPUs need a driver that already loads the next major: no driver runs this row.
            answers.append(FloorAnswer(major, floor, False, (), f"the GPUs need a driver >= {need}, which is past the CUDA {major} range (< {above})"))
            continue
        res = _resolve(specs, machine._replace(driver=driver, driver_known=True), matrices, policy)
        answers.append(
            FloorAnswer(major, driver, res.ok, tuple(p.requirement for p in res.packages), "" if res.ok else (res.conflicts[0] if res.conflicts else ""))
        )
        results[major] = res
    if not results:
        return _resolve(specs, machine, matrices, policy)
    wanted = default
    if default not in results or not results[default].ok:
        # Nothing runs on the default major's drivers (a GPU or a spec that needs CUDA 13, say):
        # the nearest major that has an answer, newer ones first.
        order = sorted(results, key=lambda m: (m < default, abs(m - default)))
        default = next((m for m in order if results[m].ok), default if default in results else order[0])
    chosen = results[default]
    answers = [a._replace(chosen=a.cuda_major == default) for a in answers]
    picked = next(a for a in answers if a.chosen)
    why = "the widest installed base" if default == wanted else f"CUDA {wanted}, the widest installed base, has no set for this machine and spec"
    note = (
        f"the driver is unknown, and it decides which CUDA major loads: this answer assumes a driver >= "
        f"{picked.driver_min} (CUDA {default}, {why}); give --driver to answer for yours "
        "(the newest set per driver floor is listed with the answer)"
    )
    needs = rules.gpu_driver_needs(matrices, machine)
    return chosen._replace(
        machine=machine,
        notes=(note, *chosen.notes),
        by_driver_floor=tuple(answers),
        warnings=tuple(dict.fromkeys((*machine.warnings, *needs, *chosen.warnings))),
    )


def _resolve(specs: list[str], machine: Machine, matrices: Matrices, policy: Policy) -> Resolution:
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
    pruned, joint = _arc_consistent(offered, policy)
    chosen = _search_in_order(pruned, policy)
    rejections.extend(joint)
    if chosen is None:
        versions = {family: [str(r.version) for r in BY_FAMILY[family].releases(matrices)] for family in families}
        # "ask for it with --cpu" only where --cpu answers: a library with CUDA builds only would not.
        cpu_helps = any(r.cause == CPU_BESIDE_GPU for r in rejections) and not policy.cpu and _resolve(specs, machine, matrices, policy._replace(cpu=True)).ok
        return Resolution(
            ok=False,
            machine=machine,
            warnings=tuple(machine_problems),
            conflicts=tuple(explain.conflicts(families, offered, rejections, versions, policy.cpu or not cpu_helps, machine.python)),
            rejections=tuple(rejections),
            offered=tuple(tuple(c) for _f, c in offered),
        )
    # Every runnable build that cannot join the chosen set, and why: kept as values, so notes and
    # --why word them without solving again.
    clashes = []
    for _family, candidates in offered:
        for c in candidates:
            found = next((x for x in (conflict(c, o, policy) for o in chosen if o.family != c.family) if x), None)
            if found is not None:
                clashes.append(BuildClash(c.family, c.version, c.tag, found))
    clash_of = {(b.family, b.version, b.tag): b.clash for b in clashes}
    notes: list[str] = []
    warnings: list[str] = list(machine_problems)
    for candidate in chosen:
        offered_here = next(c for f, c in offered if f == candidate.family)
        members = sorted(families[candidate.family].items(), key=lambda item: item[0] != candidate.family)
        spec_text = ", ".join(f"{n}{s}" if str(s) else n for n, s in members)
        notes += explain.notes(candidate, chosen, offered_here, spec_text, rejections, clash_of)
        warnings.extend(candidate.warnings)
    warnings.extend(explain.joint_evidence(chosen))
    shared = pins.combined([c.pins for c in chosen])
    shared.update(_required_builds(chosen))
    if shared:
        notes.append("pins shared between frameworks, emitted so pip keeps one version: " + ", ".join(f"{d}{s}" for d, s in sorted(shared.items())))
    return Resolution(
        ok=True,
        machine=machine,
        candidates=tuple(chosen),
        notes=tuple(notes),
        warnings=tuple(dict.fromkeys(warnings)),
        rejections=tuple(rejections),
        shared_pins=shared,
        offered=tuple(tuple(c) for _f, c in offered),
        clashes=tuple(clashes),
        pythons=_pythons(chosen, machine, matrices),
    )


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
    key = (family, tuple(sorted((name, str(spec)) for name, spec in specs.items())), machine, policy, extras)
    if key not in _MEMO.answers:
        accepted, rejected = BY_FAMILY[family].candidates(specs, machine, matrices, policy, extras)
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
            rejected.append(Rejection(family, c.version, c.tag, "fleet", policy.only_reason))
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


def _arc_consistent(offered: list[tuple[str, list[Candidate]]], policy: Policy) -> tuple[list[list[Candidate]], list[Rejection]]:
    """Drop every build that conflicts with all builds of some other family (AC-3 over pairs of
    families), remembering why. Pair checks are memoised on what they depend on."""
    domains = [list(c) for _f, c in offered]
    if len(domains) < 2:
        return domains, []

    # A library built against one version of a framework tells builds of the same CUDA and pins
    # apart by their versions; without one, versions do not matter here.
    versions_matter = any(c.requires for d in domains for c in d)
    # ... and a library that stands for some CUDA versions of its framework (bitsandbytes) tells
    # them apart by their minor too.
    minors_matter = any(c.torch_cuda for d in domains for c in d)

    def signature(c: Candidate) -> tuple:
        # All that `conflict` looks at; builds of many releases share one (same CUDA, same pins).
        built = tuple((p.name, p.version, p.local) for p in c.packages) if versions_matter else ()
        return (
            c.cuda if minors_matter else c.cuda and c.cuda.split(".")[0],
            c.torch_cuda,
            c.cudnn and c.cudnn.split(".")[0],
            c.pins_known,
            tuple(sorted(c.pins.items())),
            c.loads_cudnn,
            c.needs_required_cuda,
            tuple(sorted(c.requires.items())),
            built,
        )

    sigs = [{id(c): signature(c) for c in d} for d in domains]
    fits: dict[tuple, bool] = {}

    def supported(a: Candidate, i: int, others: dict[tuple, Candidate]) -> bool:
        sa = sigs[i][id(a)]
        for sb, b in others.items():
            key = (sa, sb)
            if key not in fits:
                fits[key] = conflict(a, b, policy) is None
            if fits[key]:
                return True
        return False

    removed: list[Rejection] = []
    changed = True
    while changed:
        changed = False
        for i in range(len(domains)):
            for j in range(len(domains)):
                if i == j or not domains[j]:
                    continue
                # One representative build per signature of family j: compatibility is decided
                # between signatures, so the cost is not the product of the two families' sizes.
                others: dict[tuple, Candidate] = {}
                for b in domains[j]:
                    others.setdefault(sigs[j][id(b)], b)
                keep = []
                for a in domains[i]:
                    if supported(a, i, others):
                        keep.append(a)
                    else:
                        example = _telling(a, others.values(), policy)
                        removed.append(
                            Rejection(
                                a.family,
                                a.version,
                                a.tag,
                                "joint",
                                "fits no "
                                + domains[j][0].family
                                + " build that runs here, e.g. "
                                + (explain.word_clash(example, name_a=False) if example else "no fit"),
                                cause=example.kind if example else "",
                            )
                        )
                        changed = True
                domains[i] = keep
    return domains, removed


def _telling(a: Candidate, others: Iterable[Candidate], policy: Policy) -> Optional[Clash]:
    """The clash that explains a build's refusal, against the best builds of the other family
    first: a CUDA major says least when another build of that family shares a's major, so the
    first clash of another kind wins over it."""

    def major(c: Candidate) -> str:
        return c.cuda.split(".")[0] if c.cuda else ""

    # the builds of a's CUDA major first: theirs is the clash that keeps a out for another reason
    ordered = sorted(others, key=lambda b: major(b) != major(a))
    found = [c for c in (conflict(a, b, policy) for b in ordered) if c is not None]
    return next((c for c in found if c.kind != "cuda-major"), found[0] if found else None)


def _search_in_order(domains: list[list[Candidate]], policy: Policy) -> Optional[list[Candidate]]:
    """The first consistent set, families in the order asked, except that a library whose builds
    stand for some CUDA versions of the framework it is made against (per-version native libraries,
    which rank alike) is chosen after that framework: the framework's preference then picks the
    CUDA version, not the library's first-listed build. The set comes back in the order asked."""
    paired = [i for i, d in enumerate(domains) if any(c.torch_cuda for c in d)]
    if not paired:
        return _search(domains, [], policy)
    order = [i for i in range(len(domains)) if i not in paired] + paired
    found = _search([domains[i] for i in order], [], policy)
    if found is None:
        return None
    by_index = dict(zip(order, found, strict=True))
    return [by_index[i] for i in range(len(domains))]


def _search(domains: list[list[Candidate]], chosen: list[Candidate], policy: Policy) -> Optional[list[Candidate]]:
    if len(chosen) == len(domains):
        return chosen
    for candidate in domains[len(chosen)]:
        if all(conflict(other, candidate, policy) is None for other in chosen):
            found = _search(domains, chosen + [candidate], policy)
            if found is not None:
                return found
    return None


def why_not(name_version: str, res: Resolution, matrices: Matrices) -> list[str]:
    """Why `name==version` is not part of the answer: its own rejections, its conflicts with the
    chosen builds, or the preference that put another build first."""
    from packaging.utils import canonicalize_name

    name, sep, text = name_version.partition("==")
    name = canonicalize_name(name.strip())
    if not sep or name not in BY_MEMBER:
        raise InputError(f"expected NAME==VERSION with NAME one of {KNOWN}", field="why", value=name_version)
    try:
        version = Version(text.strip())
    except InvalidVersion:
        raise InputError(f"{text!r} is not a version", field="why", value=name_version) from None
    family = BY_MEMBER[name].FAMILY
    # A local label names one build (NAME==2.14.1+cu126); the release is its public version.
    tag = version.local
    version = Version(version.public)
    if not any(c.family == family for cs in res.offered for c in cs) and not any(r.family == family for r in res.rejections):
        raise InputError(f"{family} is not among the specs resolved", field="why", value=name_version)
    # A member's version (a companion package's) names the family release(s) it pairs with.
    versions = BY_MEMBER[name].pairs(name, version, matrices)
    if not versions:
        return [f"{name} {version} pairs with no {family} release in cudafit's data"]
    lines = []
    for v in versions:
        lines += explain.why_not(family, v, res, tag)
    return lines
