"""Words for everything the solver finds: the notes of an answer, the conflicts of a failure, a
clash between two builds, and `--why`. Every sentence is made here from the values the solver
kept in the Resolution (rejections, clashes, evidence); nothing here solves again."""

from __future__ import annotations

import re
from typing import Optional

from packaging.version import Version

from cudafit import evidence
from cudafit.answers import CPU_BESIDE_GPU, VERSION_SPEC, Candidate, Clash, Conflict, Rejection, Resolution
from cudafit.last_line import LastLine

MIXED_CUDA = "allow it with --mixed-cuda"
CPU = "ask for it with --cpu"


def word_clash(clash: Clash, *, name_a: bool = True, advice: bool = True) -> str:
    """The clash as one sentence. With name_a False it names only the second build, so that the
    reasons of many builds against one chosen build read (and group) alike; with advice False it
    leaves out the command-line option that would allow it."""
    la = f" ({clash.a})" if name_a else ""
    if clash.kind == "cuda-major" and clash.dist and "cpu" in (clash.a_value, clash.b_value):
        side = {"cpu": "a CPU build"}
        return (
            f"{side.get(clash.a_value, f'CUDA {clash.a_value}')}{la} and {side.get(clash.b_value, f'CUDA {clash.b_value}')} ({clash.b}): "
            f"a build made against {clash.dist} loads that build's CUDA runtime"
        )
    if clash.kind == "cuda-major" and clash.dist:
        return f"CUDA {clash.a_value}{la} and CUDA {clash.b_value} ({clash.b}): a build made against {clash.dist} runs on its CUDA major only"
    if clash.kind == "cuda-major":
        return f"CUDA {clash.a_value}{la} and CUDA {clash.b_value} ({clash.b}) in one environment" + (f" ({MIXED_CUDA})" if advice else "")
    if clash.kind == "cuda-range":
        # unknown_is_a: a is the library made against b's distribution
        library, other = (clash.a if name_a else "this build", clash.b) if clash.unknown_is_a else (clash.b, clash.a if name_a else "this build")
        if clash.a_value == "cpu":
            return f"{library} is the CPU library, which loads beside a CPU {clash.dist} only, not CUDA {clash.b_value} ({other})"
        one = re.fullmatch(r"==(\d+\.\d+)\.\*", clash.a_value)
        if one and library.startswith("this"):
            return (
                f"this build (its library for CUDA {one[1]}) loads beside a {clash.dist} of CUDA {one[1]} only, not CUDA {clash.b_value} ({other}): "
                f"it loads the library of {clash.dist}'s CUDA version"
            )
        if one and "+" in library:
            # `bitsandbytes 0.46.0+cu120` is the data's name of one library of the wheel, not a version
            release, cuda = library.split("+")[0], one[1]
            return (
                f"{release}'s library for CUDA {cuda} loads beside a {clash.dist} of CUDA {cuda} only, not CUDA {clash.b_value} ({other}): "
                f"it loads the library of {clash.dist}'s CUDA version"
            )
        return f"{library} loads its library for {clash.dist}'s CUDA version and stands for CUDA {clash.a_value} only, not CUDA {clash.b_value} ({other})"
    if clash.kind == "rocm-release":
        # the HSA runtime is libhsa-runtime64.so.1 in every release: the first one loaded serves both
        return f"ROCm {clash.a_value}{la} and ROCm {clash.b_value} ({clash.b}): one process loads one ROCm runtime"
    if clash.kind == "cudnn-major":
        return f"cuDNN {clash.a_value}{la} and cuDNN {clash.b_value} ({clash.b}) are different majors"
    if clash.kind == "requires":
        # unknown_is_a: a is the build made against b's distribution
        library = clash.a if clash.unknown_is_a else clash.b
        library_text = "this build" if clash.unknown_is_a and not name_a else library
        other_text = "this build" if not clash.unknown_is_a and not name_a else f"{clash.dist} {clash.b_value}"
        return f"{library_text} needs {clash.dist}{clash.a_value}, not {other_text}"
    who = (clash.a if name_a else "this build") if clash.unknown_is_a else clash.b
    if clash.kind == "cudnn-unknown":
        return f"the cuDNN of {who} is unknown in cudafit's data; cannot confirm one cuDNN major"
    if clash.kind == "pins-unknown":
        other = clash.b if clash.unknown_is_a else (clash.a if name_a else "this build")
        return f"the nvidia-* pins of {who} are unknown in cudafit's data; cannot confirm it installs beside {other}"
    return f"{clash.dist}: {clash.a_value}{la} vs {clash.b_value} ({clash.b})"


def notes(
    candidate: Candidate, chosen: list[Candidate], offered_here: list[Candidate], spec_text: str, rejections: list[Rejection], clashes: dict[tuple, Clash]
) -> list[str]:
    """Why this build: what it was chosen for, and why each build ranked above it was not taken."""
    earlier = [c.shown for c in chosen[: chosen.index(candidate)]]
    fit = f" that fits {', '.join(earlier)}" if earlier else ""
    lines = [f"chose {candidate.shown}: the newest release matching '{spec_text}' with a build that runs here{fit}; " + "; ".join(candidate.why)]
    lines += ruled_out(candidate, rejections)
    removed = {(r.version, r.tag) for r in rejections if r.family == candidate.family and r.constraint == "joint"}
    grouped_clashes: dict[str, list[str]] = {}
    unverified, lower, hearsay = [], [], []
    for c in offered_here:
        # Newer releases, and builds of the chosen release whose list is unknown (a higher CUDA
        # passed over for that reason is worth saying), were preferred by version; say why not.
        same_release = (
            c.version == candidate.version
            and c.tag != candidate.tag
            and not c.verified
            and c.cuda is not None
            and candidate.cuda is not None
            and Version(c.cuda) > Version(candidate.cuda)
        )
        if (c.version <= candidate.version and not same_release) or (c.version, c.tag) in removed:
            continue
        clash = clashes.get((c.family, c.version, c.tag))
        if clash:
            grouped_clashes.setdefault(word_clash(clash, name_a=False), []).append(f"{c.version}+{c.tag}")
        elif not c.verified:
            unverified.append(f"{c.version}+{c.tag}")
        elif c.kind not in ("cuda", "cpu") and c.evidence.get("exists") is not None and c.evidence["exists"].grade == "reported":
            hearsay.append(f"{c.version}+{c.tag}")
        else:
            lower.append(f"{c.version}+{c.tag}")
    lines += [f"ruled out {candidate.family} {compact(b)}: {r}" for r, b in grouped_clashes.items()]
    if unverified:
        lines.append(
            f"passed over {candidate.family} {compact(unverified)}: may run, but which GPU architectures those builds carry is unknown in cudafit's data"
        )
    cpu = [b for b in lower if b.endswith("+cpu")] if candidate.kind != "cpu" else []
    lower = [b for b in lower if b not in cpu]
    if lower:
        why = "PTX JIT only, or needs a system CUDA" if candidate.kind == "cuda" else "kernels through a workaround, or GPU targets unknown"
        lines.append(f"passed over {candidate.family} {compact(lower)}: ranked lower ({why})")
    if hearsay:
        lines.append(f"passed over {candidate.family} {compact(hearsay)}: only reported to exist (nothing the project publishes confirms these builds)")
    if cpu:
        lines.append(f"passed over {candidate.family} {compact(cpu)}: CPU builds, and a GPU build runs here")
    return lines


def why_not(family: str, version: Version, res: Resolution, tag: Optional[str] = None) -> list[str]:
    """Why a release (or, with a tag, one build) of `family` is not in the answer: its own
    rejections, its clash with the chosen set, or the preference that put another build first."""
    clash_of = {(c.family, c.version, c.tag): c.clash for c in res.clashes}

    def named(build_tag: Optional[str]) -> bool:
        # NVIDIA's Jetson wheels carry their own local version ("+872d972e41.nv24.08..."): asked by it or by the public one
        return tag is None or build_tag is None or build_tag == tag or build_tag == "jetson"

    def same(v: Version) -> bool:
        return v == version or (v.local is not None and Version(v.public) == Version(version.public))

    chosen = [c for c in res.candidates if c.family == family and same(c.version) and named(c.tag)]
    if chosen:
        return [f"{chosen[0].shown} is part of the answer" + facts(chosen[0])]
    lines = [
        f"{r.subject}: {said(r)}" + (f"; {r.evidence}" if r.evidence else "") for r in res.rejections if r.family == family and same(r.version) and named(r.tag)
    ]
    joint = {(r.version, r.tag): r.reason for r in res.rejections if r.family == family and r.constraint == "joint"}
    for build in (c for cs in res.offered for c in cs if c.family == family and c.version == version and named(c.tag)):
        clash = clash_of.get((build.family, build.version, build.tag))
        rejected_for = joint.get((build.version, build.tag))
        if clash and not (rejected_for and word_clash(clash, name_a=False, advice=False) in rejected_for):
            lines.append(f"{build.label}: {word_clash(clash)}")
        elif rejected_for is not None:
            continue  # its joint rejection, listed above, says why
        elif res.ok:
            winner = next((c for c in res.candidates if c.family == family), None)
            lines.append(
                f"{build.label} would fit, but {winner.label if winner else 'another build'} ranks first "
                "(verified GPU code first, then the newest release, then measured or declared architecture lists before reported ones, then the highest CUDA)"
                + facts(build)
            )
            if winner is not None and winner.evidence and not any(line.startswith(f"{winner.label}: facts") for line in lines):
                lines.append(f"{winner.label}: {facts(winner).removeprefix('; ')}")
        else:
            lines.append(f"{build.label} runs here, but no set of the other frameworks' builds fits with it")
    if not lines:
        lines.append(
            f"{family} {version}{'+' + tag if tag else ''} is not in cudafit's data"
            + (" for this platform" if tag and any(r.family == family and r.version == version for r in res.rejections) else "")
        )
    return lines


def facts(candidate: Candidate) -> str:
    if not candidate.evidence:
        return ""
    return "; " + evidence.describe(candidate.evidence, candidate.kind == "cuda")


def ruled_out(winner: Candidate, rejections: list[Rejection]) -> list[str]:
    """Why each build preferred over the winner (a newer release, or a better build of the same
    release) was not taken, grouped by reason."""
    grouped: dict[str, list[str]] = {}
    for r in rejections:
        # Requested-away releases, and builds for other accelerators, were never in the running.
        if r.family != winner.family or r.constraint in ("spec", "accelerator") or r.version < winner.version:
            continue
        grouped.setdefault(said(r), []).append(r.build)
    return [f"ruled out {winner.family} {compact(builds)}: {reason}" for reason, builds in grouped.items()]


def compact(subjects: list[str], most: int = 6) -> str:
    # one label for two builds of a tag (xformers 0.0.35+cu128 from PyPI and from the index) is said once
    subjects = list(dict.fromkeys(subjects))
    if len(subjects) <= most:
        return ", ".join(subjects)
    return ", ".join(subjects[:most]) + f" and {len(subjects) - most} more"


_CAUSE_ORDER = {"driver": 0, "os": 1, "platform": 1, "compute-capability": 2, "joint": 3, "data": 4, "accelerator": 5}


def conflicts(
    families: dict[str, dict],
    offered: list[tuple[str, list[Candidate]]],
    rejections: list[Rejection],
    versions: dict[str, list[str]],
    cpu_asked: bool,
    python_version: Optional[str] = None,
) -> list[Conflict]:
    """Why no consistent set exists, cause first, per family. `versions` lists each family's
    releases in the data, newest first."""
    out: list[Conflict] = []
    for family, candidates in offered:
        specs = families[family]
        mine = [r for r in rejections if r.family == family]
        if candidates and not any(r.constraint == "joint" for r in mine):
            continue
        known = versions.get(family, [])
        if not known:
            out.append(Conflict("data", "", f"cudafit's data has no {family} releases"))
            continue
        if not candidates and mine and all(r.cause == VERSION_SPEC for r in mine):
            shown = " ".join(f"{n}{s}" for n, s in specs.items() if str(s))
            out.append(Conflict("spec", "", f"no {family} release in cudafit's data ({known[-1]} to {known[0]}) satisfies {shown}"))
            continue
        named_away = [r for r in mine if r.constraint == "spec" and r.tag is not None]
        if not candidates and named_away and all(r.constraint == "spec" for r in mine):
            # Every build of the matching releases was a different one than the local label named.
            builds = sorted({r.build for r in named_away})
            out.append(Conflict("spec", "", f"the spec names a build cudafit's data does not have for this platform; it has {compact(builds)}"))
            continue
        # Requested-away releases and builds for other accelerators explain nothing here, unless
        # nothing else does (a CUDA extra asked for on a machine without a driver, say).
        telling = [r for r in mine if r.constraint not in ("spec", "accelerator")]
        # ... or unless the newest releases are ruled out by it (jax[cuda] without a driver: that,
        # not the older releases' extras, is why nothing runs).
        newest = max((r.version for r in mine if r.constraint != "spec"), default=None)
        if not telling or all(r.constraint == "accelerator" for r in mine if r.version == newest and r.constraint != "spec"):
            telling = [r for r in mine if r.constraint == "accelerator"] + telling
        # The cause first: what rules out the newest builds on this machine (driver, platform, GPU
        # code, a pin shared with another framework); Python gaps of older releases are noise
        # next to it, so they come last, folded into one line.
        grouped: dict[tuple[str, str, str], list[str]] = {}
        for r in telling:
            if r.constraint != "python":
                grouped.setdefault((r.constraint, r.reason, r.advice), []).append(r.build)
        # A library build that stands for other CUDA versions of its framework (bitsandbytes'
        # per-version libraries) says least: the one that pairs, and why it fails, comes first.
        pairing = {(r.constraint, r.reason, r.advice) for r in telling if r.cause == "cuda-range"}
        ordered = sorted(grouped.items(), key=lambda item: (_CAUSE_ORDER.get(item[0][0], len(_CAUSE_ORDER)), item[0] in pairing))
        for (constraint, reason, advice), subjects in ordered:
            out.append(Conflict(constraint, f"{family} {compact(subjects)}", reason, advice))
        python = [r for r in telling if r.constraint == "python"]
        if python and not ordered:
            # Python is the cause itself: say which Pythons each release has.
            by_reason: dict[str, list[str]] = {}
            for r in python:
                by_reason.setdefault(r.reason, []).append(r.build)
            out += [Conflict("python", f"{family} {compact(builds)}", reason) for reason, builds in by_reason.items()]
        elif python:
            releases_hit = sorted({r.version for r in python})
            span = str(releases_hit[0]) if len(releases_hit) == 1 else f"{releases_hit[0]} to {releases_hit[-1]}"
            target = f"Python {python_version}" if python_version else "this Python"
            out.append(Conflict("python", f"{family} {span} ({len(python)} builds)", f"no wheel for {target}"))
        if not cpu_asked and any(r.cause == CPU_BESIDE_GPU for r in mine):
            out.append(Conflict("hint", "", f"a CPU-only {family} build exists for this machine: ask for it with --cpu"))
    if not out:
        out.append(Conflict("", "", "no combination of the frameworks' builds can share one environment"))
    return out


_JOINT_FACTS = {"pins": "nvidia-* pins", "cudnn": "cuDNN"}


def joint_evidence(chosen: list[Candidate]) -> list[str]:
    """Where frameworks share CUDA libraries, the answer rests on each one's pins and cuDNN: a
    build whose are only reported says so (alone, those facts decide nothing)."""
    # Only builds that bring CUDA libraries of their own (nvidia-* wheels, a cuDNN) share them: a
    # library that loads its framework's (xformers: no pins, no cuDNN) makes no joint answer.
    sharing = [c for c in chosen if c.kind == "cuda" and (c.pins or not c.pins_known or c.loads_cudnn)]
    if len(sharing) < 2:
        return []
    out = []
    for c in chosen:
        reported = [(fact, c.evidence[fact]) for fact in _JOINT_FACTS if fact in c.evidence and c.evidence[fact].grade == "reported"]
        if reported:
            sources = sorted({key for _f, ev in reported for key in ev.source})
            what = " and ".join(_JOINT_FACTS[f] for f, _ev in reported)
            out.append(f"{c.label}: its {what} only reported ({', '.join(sources)}); the joint answer rests on them")
        if c.kind == "cuda" and c.cudnn is None and c.loads_cudnn:
            out.append(f"{c.label}: its cuDNN is unknown in cudafit's data, so the joint answer could not compare it with the others'")
    return out


def worded(res: Resolution) -> Resolution:
    """The solver's answer (solve.solve) with its words: each joint rejection's reason, a failure's
    conflicts, an answer's notes (why each build, what was ruled out, the shared pins) and the
    warnings where the joint answer rests on reported facts."""
    request = res.request
    if request is None:
        return res
    rejections = [_advised(_joint_reason(r) if r.constraint == "joint" and not r.reason else r) for r in res.rejections]
    order = list(request.families)
    if not res.ok:
        offered = [(family, list(res.offered[i])) for i, family in enumerate(order)]
        causes = conflicts(request.families, offered, rejections, request.versions, request.cpu_asked, res.machine.python)
        return res._replace(rejections=tuple(rejections), causes=tuple(causes), conflicts=tuple(c.worded for c in causes))
    chosen = list(res.candidates)
    clash_of = {(b.family, b.version, b.tag): b.clash for b in res.clashes}
    lines: list[str] = []
    for candidate in chosen:
        offered_here = list(res.offered[order.index(candidate.family)])
        members = sorted(request.families[candidate.family].items(), key=lambda item: item[0] != candidate.family)
        spec_text = ", ".join(f"{n}{s}" if str(s) else n for n, s in members)
        lines += notes(candidate, chosen, offered_here, spec_text, rejections, clash_of)
    if res.shared_pins:
        lines.append("pins shared between frameworks, emitted so pip keeps one version: " + ", ".join(f"{d}{s}" for d, s in sorted(res.shared_pins.items())))
    lines += [last_line_words(last) for last in res.last_lines]
    warnings = tuple(dict.fromkeys((*res.warnings, *joint_evidence(chosen))))
    return res._replace(rejections=tuple(rejections), notes=(*res.notes, *lines), warnings=warnings)


def last_line_words(last: LastLine) -> str:
    later = "need a newer driver than it gets" if last.cause == "driver" else "carry none"
    return (
        f"{last.family} {last.line} is the last release line {last.reach}: {last.family} {last.dropped} "
        f"and later {later} [{last.evidence}]; pin {last.family}{last.bound} to stay on it"
    )


def _joint_reason(r: Rejection) -> Rejection:
    example = word_clash(r.clash, name_a=False, advice=False) if r.clash is not None else "no fit"
    allows = r.clash is not None and r.clash.kind == "cuda-major" and not r.clash.dist
    return r._replace(reason=f"fits no {r.against} build that runs here, e.g. {example}", advice=MIXED_CUDA if allows else "")


def _advised(r: Rejection) -> Rejection:
    """A CPU build passed over beside a GPU: --cpu would take it."""
    return r._replace(advice=CPU) if r.cause == CPU_BESIDE_GPU and not r.advice else r


def said(r: Rejection) -> str:
    """A rejection's reason as a command prints it: with the option that would take it anyway."""
    return r.reason + (f" ({r.advice})" if r.advice else "")


def floor_note(res: Resolution, default_major: int) -> Resolution:
    """With the driver unknown (floors.py), the note that says which floor the answer is for and why."""
    picked = next((a for a in res.by_driver_floor if a.chosen), None)
    if picked is None:
        return res
    major = picked.cuda_major
    why = "the widest installed base" if major == default_major else f"CUDA {default_major}, the widest installed base, has no set for this machine and spec"
    note = (
        f"the driver is unknown, and it decides which CUDA major loads: this answer assumes a driver >= "
        f"{picked.driver_min} (CUDA {major}, {why}); give --driver to answer for yours "
        "(the newest set per driver floor is listed with the answer)"
    )
    return res._replace(notes=(note, *res.notes))
