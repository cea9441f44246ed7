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

from typing import Optional

from packaging.markers import default_environment
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from cudafit import evidence, pins, rules
from cudafit.errors import InputError
from cudafit.frameworks import BY_FAMILY, BY_MEMBER, DEFAULT_SPEC, KNOWN
from cudafit.records import CPU_BESIDE_GPU, VERSION_SPEC, Candidate, FloorAnswer, Machine, Matrices, Policy, Rejection, Resolution, driver_key


def parse_specs(texts: list[str], machine: Machine, matrices: Optional[Matrices] = None
                ) -> tuple[dict[str, dict[str, SpecifierSet]], dict[str, frozenset[str]]]:
    """(family -> {distribution: combined specifier}, family -> extras asked for), families in the
    order first named. Markers are evaluated for the target machine."""
    env = _marker_env(machine)
    families: dict[str, dict[str, SpecifierSet]] = {}
    extras: dict[str, frozenset[str]] = {}
    for text in texts or [DEFAULT_SPEC]:
        try:
            req = Requirement(text)
        except InvalidRequirement as exc:
            raise InputError(f"spec {text!r}{_column(str(exc))}: not a PEP 508 requirement ({str(exc).splitlines()[0]})") from None
        name = canonicalize_name(req.name)
        if name not in BY_MEMBER:
            raise InputError(f"spec {text!r}: unknown framework {req.name!r}; expected one of {KNOWN}")
        if req.url:
            raise InputError(f"spec {text!r}: a URL requirement names one file; cudafit picks among releases")
        wanted = {canonicalize_name(e) for e in req.extras}
        provider = BY_MEMBER[name]
        known = {canonicalize_name(e) for e in (provider.known_extras(matrices) if matrices is not None else ())}
        unknown = wanted - known
        if unknown:
            raise InputError(f"spec {text!r}: unknown extra {', '.join(sorted(unknown))} for {name}"
                             + (f" (known: {', '.join(sorted(known))})" if known else " (it has none cudafit knows)"))
        if req.marker is not None and not req.marker.evaluate(env):
            continue
        family = provider.FAMILY
        members = families.setdefault(family, {})
        members[name] = members.get(name, SpecifierSet()) & req.specifier
        families[family] = provider.implied(members)
        if wanted:
            extras[family] = extras.get(family, frozenset()) | frozenset(wanted)  # PEP 685 normalised
            problem = provider.check_extras(extras[family])
            if problem:
                raise InputError(f"spec {text!r}: {problem}")
    if not families:
        raise InputError(f"no spec applies to this machine (every environment marker is false): {' '.join(texts)}")
    return families, extras


def _column(message: str) -> str:
    """packaging prints the spec indented by 4 with a caret line under it; keep the caret's
    column (1-based), so the message stays on one line."""
    for line in message.splitlines()[2:]:
        if "^" in line and set(line.strip()) <= {"^", "~"}:
            return f", column {line.index('^') - 3}"
    return ""


def _marker_env(machine: Machine) -> dict[str, str]:
    env: dict[str, str] = {k: str(v) for k, v in default_environment().items()}
    if machine.python:
        env["python_version"] = machine.python
        env["python_full_version"] = machine.python + ".0"
    if machine.os:
        env["sys_platform"] = {"linux": "linux", "wsl": "linux", "windows": "win32", "macos": "darwin"}.get(machine.os, machine.os)
        env["platform_system"] = {"linux": "Linux", "wsl": "Linux", "windows": "Windows", "macos": "Darwin"}.get(machine.os, machine.os)
        env["os_name"] = "nt" if machine.os == "windows" else "posix"
    if machine.arch:
        env["platform_machine"] = {"x86_64": "AMD64" if machine.os == "windows" else "x86_64",
                                   "aarch64": "arm64" if machine.os in ("macos", "windows") else "aarch64"
                                   }.get(machine.arch, machine.arch)
    return env


def conflict(a: Candidate, b: Candidate, policy: Policy, *, name_a: bool = True) -> Optional[str]:
    """Why builds a and b cannot share one environment, or None. With name_a False the message
    names only b, so that the reasons of many a's against one b read (and group) alike."""
    la = f" ({a.label})" if name_a else ""
    if a.cuda and b.cuda and not policy.mixed_cuda and a.cuda.split(".")[0] != b.cuda.split(".")[0]:
        return (f"CUDA {a.cuda.split('.')[0]}{la} and CUDA {b.cuda.split('.')[0]} ({b.label}) in one environment "
                "(allow it with --mixed-cuda)")
    if a.cudnn and b.cudnn and a.cudnn.split(".")[0] != b.cudnn.split(".")[0]:
        # A cuDNN build for 9.x runs on 9.y (y >= x) but never across majors, and one process loads one.
        return f"cuDNN {a.cudnn}{la} and cuDNN {b.cudnn} ({b.label}) are different majors"
    if a.cuda and b.cuda and a.cuda.split(".")[0] == b.cuda.split(".")[0]:
        # One process loads one cuDNN: with a build's cuDNN unknown, and no shared pin to settle
        # it, nothing says the two agree on its major.
        shared_cudnn = any(d.startswith("nvidia-cudnn") for d in set(a.pins) & set(b.pins))
        for x in (a, b):
            if x.cudnn is None and not shared_cudnn:
                who = x.label if (x is b or name_a) else "this build"
                return f"the cuDNN of {who} is unknown in cudafit's data; cannot confirm one cuDNN major"
        # Conservative with unknowns: builds of one CUDA major share nvidia-* wheels, and without
        # the versions a build pins, nothing says the two can be installed together.
        for x, y in ((a, b), (b, a)):
            if not x.pins_known and (y.pins or not y.pins_known):
                who = x.label if (x is b or name_a) else "this build"
                other = y.label if y is b or name_a else "this build"
                return f"the nvidia-* pins of {who} are unknown in cudafit's data; cannot confirm it installs beside {other}"
    clash = pins.clash(a.pins, b.pins)
    if clash:
        dist, spec_a, spec_b = clash
        return f"{dist}: {spec_a}{la} vs {spec_b} ({b.label})"
    return None


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
            answers.append(FloorAnswer(major, floor, False, (), f"the GPUs need a driver >= {need}, which is past "
                                                                 f"the CUDA {major} range (< {above})"))
            continue
        res = _resolve(specs, machine._replace(driver=driver, driver_known=True), matrices, policy)
        answers.append(FloorAnswer(major, driver, res.ok, tuple(p.requirement for p in res.packages),
                                   "" if res.ok else (res.conflicts[0] if res.conflicts else "")))
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
    why = ("the widest installed base" if default == wanted
           else f"CUDA {wanted}, the widest installed base, has no set for this machine and spec")
    note = (f"the driver is unknown, and it decides which CUDA major loads: this answer assumes a driver >= "
            f"{picked.driver_min} (CUDA {default}, {why}); give --driver to answer for yours "
            "(the newest set per driver floor is listed with the answer)")
    needs = rules.gpu_driver_needs(matrices, machine)
    return chosen._replace(machine=machine, notes=(note, *chosen.notes), by_driver_floor=tuple(answers),
                           warnings=tuple(dict.fromkeys((*machine.warnings, *needs, *chosen.warnings))))


def _resolve(specs: list[str], machine: Machine, matrices: Matrices, policy: Policy) -> Resolution:
    families, extras = parse_specs(specs, machine, matrices)
    offered: list[tuple[str, list[Candidate]]] = []
    rejections: list[Rejection] = []
    for family, member_specs in families.items():
        accepted, rejected = BY_FAMILY[family].candidates(member_specs, machine, matrices, policy, extras.get(family, frozenset()))
        offered.append((family, accepted))
        rejections.extend(rejected)

    machine_problems = list(machine.warnings)
    if not machine.driver_known:
        machine_problems.extend(rules.gpu_driver_needs(matrices, machine))
    pruned, joint = _arc_consistent(offered, policy)
    chosen = _search(pruned, [], policy)
    rejections.extend(joint)
    if chosen is None:
        return Resolution(
            ok=False, machine=machine, warnings=tuple(machine_problems),
            conflicts=tuple(_conflicts(families, offered, rejections, matrices, policy, machine.python)),
            rejections=tuple(rejections),
            offered=tuple(tuple(c) for _f, c in offered),
        )
    notes: list[str] = []
    warnings: list[str] = list(machine_problems)
    for candidate in chosen:
        offered_here = next(c for f, c in offered if f == candidate.family)
        notes += _notes(candidate, chosen, offered_here, families[candidate.family], rejections, policy)
        warnings.extend(candidate.warnings)
    shared = pins.combined([c.pins for c in chosen])
    if shared:
        notes.append("pins shared between frameworks, emitted so pip keeps one version: "
                     + ", ".join(f"{d}{s}" for d, s in sorted(shared.items())))
    return Resolution(ok=True, machine=machine, candidates=tuple(chosen), notes=tuple(notes),
                      warnings=tuple(dict.fromkeys(warnings)), rejections=tuple(rejections), shared_pins=shared,
                      offered=tuple(tuple(c) for _f, c in offered))


def _notes(candidate: Candidate, chosen: list[Candidate], offered_here: list[Candidate],
           member_specs: dict[str, SpecifierSet], rejections: list[Rejection], policy: Policy) -> list[str]:
    """Why this build: what it was chosen for, and why each build ranked above it was not taken."""
    members = sorted(member_specs.items(), key=lambda item: item[0] != candidate.family)
    spec_text = ", ".join(f"{n}{s}" if str(s) else n for n, s in members)
    earlier = [c.label for c in chosen[:chosen.index(candidate)]]
    fit = f" that fits {', '.join(earlier)}" if earlier else ""
    notes = [f"chose {candidate.label}: the newest release matching '{spec_text}' with a build that runs here{fit}; "
             + "; ".join(candidate.why)]
    notes += _ruled_out(candidate, rejections)
    removed = {(r.version, r.tag) for r in rejections if r.family == candidate.family and r.constraint == "joint"}
    clashes: dict[str, list[str]] = {}
    unverified, lower = [], []
    for c in offered_here:
        # Newer releases, and builds of the chosen release whose list is unknown (a higher CUDA
        # passed over for that reason is worth saying), were preferred by version; say why not.
        same_release = (c.version == candidate.version and c.tag != candidate.tag and not c.verified
                        and c.cuda is not None and candidate.cuda is not None and Version(c.cuda) > Version(candidate.cuda))
        if (c.version <= candidate.version and not same_release) or (c.version, c.tag) in removed:
            continue
        reason = next((r for r in (conflict(c, o, policy, name_a=False) for o in chosen if o.family != c.family) if r), None)
        if reason:
            clashes.setdefault(reason, []).append(f"{c.version}+{c.tag}")
        elif not c.verified:
            unverified.append(f"{c.version}+{c.tag}")
        else:
            lower.append(f"{c.version}+{c.tag}")
    notes += [f"ruled out {candidate.family} {_compact(b)}: {r}" for r, b in clashes.items()]
    if unverified:
        notes.append(f"passed over {candidate.family} {_compact(unverified)}: may run, but which GPU "
                     "architectures those builds carry is unknown in cudafit's data")
    if lower:
        notes.append(f"passed over {candidate.family} {_compact(lower)}: ranked lower (PTX JIT only, or needs a system CUDA)")
    return notes


def _arc_consistent(offered: list[tuple[str, list[Candidate]]], policy: Policy
                    ) -> tuple[list[list[Candidate]], list[Rejection]]:
    """Drop every build that conflicts with all builds of some other family (AC-3 over pairs of
    families), remembering why. Pair checks are memoised on what they depend on."""
    domains = [list(c) for _f, c in offered]
    if len(domains) < 2:
        return domains, []
    def signature(c: Candidate) -> tuple:
        # All that `conflict` looks at; builds of many releases share one (same CUDA, same pins).
        return (c.cuda and c.cuda.split(".")[0], c.cudnn and c.cudnn.split(".")[0], c.pins_known,
                tuple(sorted(c.pins.items())))

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
                        removed.append(Rejection(a.family, a.version, a.tag, "joint",
                                                 "fits no " + domains[j][0].family + " build that runs here, e.g. "
                                                 + str(conflict(a, domains[j][0], policy, name_a=False))))
                        changed = True
                domains[i] = keep
    return domains, removed


def _search(domains: list[list[Candidate]], chosen: list[Candidate], policy: Policy) -> Optional[list[Candidate]]:
    if len(chosen) == len(domains):
        return chosen
    for candidate in domains[len(chosen)]:
        if all(conflict(other, candidate, policy) is None for other in chosen):
            found = _search(domains, chosen + [candidate], policy)
            if found is not None:
                return found
    return None


def explain(name_version: str, res: Resolution, policy: Policy, matrices: Matrices) -> list[str]:
    """Why `name==version` is not part of the answer: its own rejections, its conflicts with the
    chosen builds, or the preference that put another build first."""
    name, sep, text = name_version.partition("==")
    name = canonicalize_name(name.strip())
    if not sep or name not in BY_MEMBER:
        raise InputError(f"--why {name_version!r}: expected NAME==VERSION with NAME one of {KNOWN}")
    try:
        version = Version(text.strip())
    except InvalidVersion:
        raise InputError(f"--why {name_version!r}: {text!r} is not a version") from None
    family = BY_MEMBER[name].FAMILY
    # A local label names one build (NAME==2.14.1+cu126); the release is its public version.
    tag = version.local
    version = Version(version.public)
    if not any(c.family == family for cs in res.offered for c in cs) and not any(r.family == family for r in res.rejections):
        raise InputError(f"--why {name_version!r}: {family} is not among the specs resolved")
    # A member's version (a companion package's) names the family release(s) it pairs with.
    versions = BY_MEMBER[name].pairs(name, version, matrices)
    if not versions:
        return [f"{name} {version} pairs with no {family} release in cudafit's data"]
    lines = []
    for v in versions:
        lines += _explain_release(family, v, res, policy, tag)
    return lines


def _explain_release(family: str, version: Version, res: Resolution, policy: Policy, tag: Optional[str] = None) -> list[str]:
    def named(build_tag: Optional[str]) -> bool:
        return tag is None or build_tag is None or build_tag == tag

    chosen = [c for c in res.candidates if c.family == family and c.version == version and named(c.tag)]
    if chosen:
        return [f"{chosen[0].label} is part of the answer" + _facts(chosen[0])]
    lines = [f"{r.subject}: {r.reason}" + (f"; {r.evidence}" if r.evidence else "")
             for r in res.rejections if r.family == family and r.version == version and named(r.tag)]
    joint = {(r.version, r.tag) for r in res.rejections if r.family == family and r.constraint == "joint"}
    for build in (c for cs in res.offered for c in cs if c.family == family and c.version == version and named(c.tag)):
        clashes = [c for c in (conflict(build, other, policy) for other in res.candidates if other.family != family) if c]
        if clashes:
            lines += [f"{build.label}: {c}" for c in clashes]
        elif (build.version, build.tag) in joint:
            continue  # its joint rejection, listed above, says why
        elif res.ok:
            winner = next((c for c in res.candidates if c.family == family), None)
            lines.append(f"{build.label} would fit, but {winner.label if winner else 'another build'} ranks first "
                         "(verified GPU code first, then the newest release, then the highest CUDA)" + _facts(build))
            if winner is not None and winner.evidence and not any(line.startswith(f"{winner.label}: facts") for line in lines):
                lines.append(f"{winner.label}: {_facts(winner).removeprefix('; ')}")
        else:
            lines.append(f"{build.label} runs here, but no set of the other frameworks' builds fits with it")
    if not lines:
        lines.append(f"{family} {version}{'+' + tag if tag else ''} is not in cudafit's data"
                     + (" for this platform" if tag and any(r.family == family and r.version == version for r in res.rejections) else ""))
    return lines


def _facts(candidate: Candidate) -> str:
    if not candidate.evidence:
        return ""
    return "; " + evidence.describe(candidate.evidence, candidate.kind == "cuda")


def _ruled_out(winner: Candidate, rejections: list[Rejection]) -> list[str]:
    """Why each build preferred over the winner (a newer release, or a better build of the same
    release) was not taken, grouped by reason."""
    grouped: dict[str, list[str]] = {}
    for r in rejections:
        # Requested-away releases, and builds for other accelerators, were never in the running.
        if r.family != winner.family or r.constraint in ("spec", "accelerator") or r.version < winner.version:
            continue
        grouped.setdefault(r.reason, []).append(r.build)
    return [f"ruled out {winner.family} {_compact(builds)}: {reason}" for reason, builds in grouped.items()]


def _compact(subjects: list[str], most: int = 6) -> str:
    if len(subjects) <= most:
        return ", ".join(subjects)
    return ", ".join(subjects[:most]) + f" and {len(subjects) - most} more"


_CAUSE_ORDER = {"driver": 0, "os": 1, "platform": 1, "compute-capability": 2, "joint": 3, "data": 4, "accelerator": 5}


def _conflicts(families, offered, rejections: list[Rejection], matrices: Matrices, policy: Policy,
               python_version: Optional[str] = None) -> list[str]:
    out = []
    for family, candidates in offered:
        specs = families[family]
        mine = [r for r in rejections if r.family == family]
        if candidates and not any(r.constraint == "joint" for r in mine):
            continue
        releases = BY_FAMILY[family].releases(matrices)
        versions = [str(r.version) for r in releases]
        if not versions:
            out.append(f"data: cudafit's data has no {family} releases")
            continue
        if not candidates and mine and all(r.cause == VERSION_SPEC for r in mine):
            shown = " ".join(f"{n}{s}" for n, s in specs.items() if str(s))
            out.append(f"spec: no {family} release in cudafit's data ({versions[-1]} to {versions[0]}) satisfies {shown}")
            continue
        named_away = [r for r in mine if r.constraint == "spec" and r.tag is not None]
        if not candidates and named_away and all(r.constraint == "spec" for r in mine):
            # Every build of the matching releases was a different one than the local label named.
            builds = sorted({r.build for r in named_away})
            out.append(f"spec: the spec names a build cudafit's data does not have for this platform; "
                       f"it has {_compact(builds)}")
            continue
        # Requested-away releases and builds for other accelerators explain nothing here, unless
        # nothing else does (a CUDA extra asked for on a machine without a driver, say).
        telling = [r for r in mine if r.constraint not in ("spec", "accelerator")]
        if not telling:
            telling = [r for r in mine if r.constraint == "accelerator"]
        # The cause first: what rules out the newest builds on this machine (driver, platform, GPU
        # code, a pin shared with another framework); Python gaps of older releases are noise
        # next to it, so they come last, folded into one line.
        grouped: dict[tuple[str, str], list[str]] = {}
        for r in telling:
            if r.constraint != "python":
                grouped.setdefault((r.constraint, r.reason), []).append(r.build)
        ordered = sorted(grouped.items(), key=lambda item: _CAUSE_ORDER.get(item[0][0], len(_CAUSE_ORDER)))
        for (constraint, reason), subjects in ordered:
            out.append(f"{constraint}: {family} {_compact(subjects)}: {reason}")
        python = [r for r in telling if r.constraint == "python"]
        if python and not ordered:
            # Python is the cause itself: say which Pythons each release has.
            by_reason: dict[str, list[str]] = {}
            for r in python:
                by_reason.setdefault(r.reason, []).append(r.build)
            out += [f"python: {family} {_compact(builds)}: {reason}" for reason, builds in by_reason.items()]
        elif python:
            releases_hit = sorted({r.version for r in python})
            span = str(releases_hit[0]) if len(releases_hit) == 1 else f"{releases_hit[0]} to {releases_hit[-1]}"
            target = f"Python {python_version}" if python_version else "this Python"
            out.append(f"python: {family} {span} ({len(python)} builds): no wheel for {target}")
        if not policy.cpu and any(r.cause == CPU_BESIDE_GPU for r in mine):
            out.append(f"hint: a CPU-only {family} build exists for this machine: ask for it with --cpu")
    if not out:
        out.append("no combination of the frameworks' builds can share one environment")
    return out
