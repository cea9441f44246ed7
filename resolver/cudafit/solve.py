"""The solver: a pure function of (data, machine, request) that returns an answer with reasons or a
failure with causes. No I/O, no printing.

Each framework family (torch with torchvision/torchaudio today) offers its candidates best first,
with a rejection for every build it ruled out. The joint step picks, family by family in the order
the user named them, the first candidate consistent with those already chosen, backtracking when a
later family has nothing consistent. Consistency between families (shared nvidia-* pins, one CUDA
major) is checked by `consistent`, so adding a family does not change the search."""

from __future__ import annotations

from typing import Callable, Optional

from packaging.markers import default_environment
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from cudafit import pytorch, rules
from cudafit.errors import InputError
from cudafit.records import Candidate, Machine, Matrices, Rejection, Resolution

FAMILIES: dict[str, tuple[str, Callable]] = {name: (pytorch.FAMILY, pytorch.candidates) for name in pytorch.MEMBERS}
_NOT_YET = {"tensorflow", "tensorflow-cpu", "jax", "jaxlib"}


def parse_specs(texts: list[str], machine: Machine) -> dict[str, dict[str, SpecifierSet]]:
    """family -> {distribution: combined specifier}. Markers are evaluated for the target machine."""
    env = _marker_env(machine)
    families: dict[str, dict[str, SpecifierSet]] = {}
    for text in texts or ["torch"]:
        try:
            req = Requirement(text)
        except InvalidRequirement as exc:
            raise InputError(f"spec {text!r}{_column(str(exc))}: not a PEP 508 requirement ({str(exc).splitlines()[0]})") from None
        name = canonicalize_name(req.name)
        if name in _NOT_YET:
            raise InputError(f"spec {text!r}: {name} is not in this cudafit's data yet; it knows torch, torchvision and torchaudio")
        if name not in FAMILIES:
            raise InputError(f"spec {text!r}: unknown framework {req.name!r}; expected torch, torchvision or torchaudio")
        if req.extras:
            raise InputError(f"spec {text!r}: {name} has no extras cudafit knows ({', '.join(sorted(req.extras))})")
        if req.url:
            raise InputError(f"spec {text!r}: a URL requirement names one file; cudafit picks among releases")
        if req.marker is not None and not req.marker.evaluate(env):
            continue
        family, _ = FAMILIES[name]
        members = families.setdefault(family, {})
        members[name] = members.get(name, SpecifierSet()) & req.specifier
        if name != "torch":
            members.setdefault("torch", SpecifierSet())
    if not families:
        raise InputError(f"no spec applies to this machine (every environment marker is false): {' '.join(texts)}")
    return families


def _column(message: str) -> str:
    """packaging prints the spec indented by 4 with a caret line under it; keep the caret's
    column (1-based), so the message stays on one line."""
    for line in message.splitlines()[2:]:
        if "^" in line and set(line.strip()) <= {"^", "~"}:
            return f", column {line.index('^') - 3}"
    return ""


def _marker_env(machine: Machine) -> dict[str, str]:
    env = dict(default_environment())
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


def consistent(chosen: list[Candidate], candidate: Candidate) -> Optional[str]:
    """Why `candidate` cannot join `chosen` in one environment, or None."""
    for other in chosen:
        if other.cuda and candidate.cuda and other.cuda.split(".")[0] != candidate.cuda.split(".")[0]:
            return f"CUDA {other.cuda} ({other.label}) and CUDA {candidate.cuda} ({candidate.label}) in one environment"
    return None


def resolve(specs: list[str], machine: Machine, matrices: Matrices, policy: pytorch.Policy) -> Resolution:
    families = parse_specs(specs, machine)
    offered: list[tuple[str, list[Candidate]]] = []
    rejections: list[Rejection] = []
    for family, member_specs in families.items():
        produce = FAMILIES[family][1]
        accepted, rejected = produce(member_specs, machine, matrices, policy)
        offered.append((family, accepted))
        rejections.extend(rejected)

    machine_problems = list(machine.warnings)
    if not machine.driver_known:
        machine_problems.extend(rules.gpu_driver_needs(matrices, machine))
    chosen = _search(offered, [])
    if chosen is None:
        return Resolution(
            ok=False, machine=machine, warnings=tuple(machine_problems),
            conflicts=tuple(_conflicts(families, offered, rejections, matrices)), rejections=tuple(rejections),
        )
    notes: list[str] = []
    warnings: list[str] = list(machine_problems)
    for candidate in chosen:
        members = sorted(families[candidate.family].items(), key=lambda item: item[0] != candidate.family)
        spec_text = ", ".join(f"{n}{s}" if str(s) else n for n, s in members)
        notes.append(f"chose {candidate.label}: the newest release matching '{spec_text}' with a build that runs here; "
                     + "; ".join(candidate.why))
        warnings.extend(candidate.warnings)
        notes.extend(_ruled_out(candidate, rejections))
        offered_here = next(c for f, c in offered if f == candidate.family)
        newer = [c for c in offered_here if c.version > candidate.version]
        unverified = [f"{c.version}+{c.variant.tag}" for c in newer if c.variant.sass is None]
        jit_only = [f"{c.version}+{c.variant.tag}" for c in newer if c.variant.sass is not None]
        if unverified:
            notes.append(f"passed over {candidate.family} {_compact(unverified)}: may run, but which GPU "
                         "architectures those builds carry is unknown in cudafit's data")
        if jit_only:
            notes.append(f"passed over {candidate.family} {_compact(jit_only)}: they run only through PTX JIT")
    return Resolution(ok=True, machine=machine, candidates=tuple(chosen), notes=tuple(notes),
                      warnings=tuple(dict.fromkeys(warnings)), rejections=tuple(rejections))


def _search(offered: list[tuple[str, list[Candidate]]], chosen: list[Candidate]) -> Optional[list[Candidate]]:
    if len(chosen) == len(offered):
        return chosen
    _family, candidates = offered[len(chosen)]
    for candidate in candidates:
        if consistent(chosen, candidate) is None:
            found = _search(offered, chosen + [candidate])
            if found is not None:
                return found
    return None


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


def _conflicts(families, offered, rejections: list[Rejection], matrices: Matrices) -> list[str]:
    out = []
    for family, candidates in offered:
        if candidates:
            continue  # this family had options; the joint step failed (reported below)
        specs = families[family]
        mine = [r for r in rejections if r.family == family]
        if mine and all(r.constraint == "spec" for r in mine) and all("does not satisfy" in r.reason for r in mine):
            versions = [str(r.version) for r in matrices.torch]
            shown = " ".join(f"{n}{s}" for n, s in specs.items() if str(s))
            out.append(f"spec: no {family} release in cudafit's data ({versions[-1]} to {versions[0]}) satisfies {shown}")
            continue
        grouped: dict[tuple[str, str], list[str]] = {}
        for r in mine:
            # Requested-away releases and builds for other accelerators explain nothing here.
            if r.constraint in ("spec", "accelerator"):
                continue
            grouped.setdefault((r.constraint, r.reason), []).append(r.build)
        for (constraint, reason), subjects in grouped.items():
            out.append(f"{constraint}: {family} {_compact(subjects)}: {reason}")
        if any(r.constraint == "accelerator" and "--cpu" in r.reason for r in mine):
            out.append(f"hint: a CPU-only {family} build exists for this machine: ask for it with --cpu")
    if not out:
        out.append("no combination of the frameworks' builds can share one environment")
    return out
