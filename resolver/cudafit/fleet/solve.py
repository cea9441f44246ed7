"""The best set that runs on every node class, the classes that hold the fleet back, and per-pool
answers. The solver runs once per class (never per node): each class's runnable builds are
intersected, and the solver is asked again with only the builds every class runs (Policy.only),
so the answer keeps every rule a single machine's answer has (pins, companions, tiers)."""

from __future__ import annotations

from typing import NamedTuple, Optional

from packaging.version import Version

from cudafit import rules
from cudafit.errors import InputError
from cudafit.fleet.classes import NodeClass
from cudafit.gpus import lookup_gpu
from cudafit.machine import MachineOptions, build_machine
from cudafit.records import Candidate, Machine, Matrices, Policy, Resolution
from cudafit.solve import resolve

Key = tuple[str, str, str]  # (family, version, tag)
BLOCKING_SHARE = 0.25  # at most this share of the nodes may be asked to change for a better answer
PIN_TRIES = 8  # builds of the first framework tried in turn when the classes rank the rest apart


class ClassAnswer(NamedTuple):
    cls: NodeClass
    machine: Optional[Machine]
    res: Optional[Resolution]  # the class's own best answer
    problem: Optional[str]  # unreadable nodes, an unknown GPU, or a driver that cannot drive the GPU


class Blocking(NamedTuple):
    cls: NodeClass
    reason: str
    gain: str  # what every node would get without this class's limit ("torch 2.14.1+cu126")


class FleetAnswer(NamedTuple):
    classes: list[ClassAnswer]
    fleet: Optional[Resolution]
    why_none: Optional[str]
    pools: dict[str, Optional[Resolution]]
    blocking: list[Blocking]
    notes: list[str]


class _Named(NamedTuple):
    name: str


def key(c: Candidate) -> Key:
    return (c.family, str(c.version), c.tag)


def label(k: Key) -> str:
    return f"{k[0]} {k[1]}+{k[2]}"


def answer_classes(specs: list[str], classes: list[NodeClass], matrices: Matrices, policy: Policy, python: Optional[str]) -> list[ClassAnswer]:
    answers = []
    for cls in classes:
        if cls.problem:
            answers.append(ClassAnswer(cls, None, None, cls.problem))
            continue
        # GPU Feature Discovery spells "NVIDIA A100-SXM4-80GB" with dashes; answers use the table's name.
        gpus = tuple((lookup_gpu(matrices.gpus, g)[0] or _Named(g)).name for g in cls.gpus)
        options = MachineOptions(driver=cls.driver or "none", gpus=gpus, compute_capabilities=cls.compute_capabilities, os=cls.os, arch=cls.arch, python=python)
        try:
            machine = build_machine(options, matrices)
        except InputError as exc:
            answers.append(ClassAnswer(cls, None, None, str(exc)))
            continue
        broken = rules.check_gpu_support_by_driver(matrices, machine)
        if broken:
            answers.append(ClassAnswer(cls, machine, None, f"broken: {broken}"))
            continue
        answers.append(ClassAnswer(cls, machine, resolve(specs, machine, matrices, policy), None))
    return answers


def solve_fleet(specs: list[str], classes: list[NodeClass], matrices: Matrices, policy: Policy, python: Optional[str]) -> FleetAnswer:
    answers = answer_classes(specs, classes, matrices, policy, python)
    usable = [a for a in answers if a.res is not None]
    notes = [f"{a.cls.nodes} node(s) of class {a.cls.key} left out: {a.problem}" for a in answers if a.problem]
    fleet, why_none = common_answer(specs, usable, matrices, policy)
    pools: dict[str, Optional[Resolution]] = {}
    names = sorted({p for a in usable for p in a.cls.pools})
    if len(names) > 1:
        seen: dict[frozenset[int], Optional[Resolution]] = {frozenset(range(len(usable))): fleet}
        for name in names:
            members = frozenset(i for i, a in enumerate(usable) if name in a.cls.pools)
            if members not in seen:  # pools of the same classes share one answer
                seen[members] = common_answer(specs, [usable[i] for i in sorted(members)], matrices, policy)[0]
            pools[name] = seen[members]
    blocking = holding_back(usable, fleet, matrices, policy)
    if blocking:
        # What the rest would run together: for several frameworks, more than the first one's build.
        held = {b.cls.key for b in blocking}
        gain, _ = common_answer(specs, [a for a in usable if a.cls.key not in held], matrices, policy)
        if gain is not None:
            text = ", ".join(p.requirement for c in gain.candidates for p in c.packages)
            blocking = [b._replace(gain=text) for b in blocking]
    if blocking:
        nodes = sum(b.cls.nodes for b in blocking)
        notes.append(f"upgrade {nodes} node(s) in {len(blocking)} class(es) ({', '.join(b.cls.key for b in blocking)}) to get {blocking[0].gain} everywhere")
    return FleetAnswer(answers, fleet, why_none, pools, blocking, notes)


def _offered(res: Resolution) -> list[list[Key]]:
    return [[key(c) for c in family] for family in res.offered]


def common_answer(specs: list[str], usable: list[ClassAnswer], matrices: Matrices, policy: Policy) -> tuple[Optional[Resolution], Optional[str]]:
    """The best set every class runs, as the largest class's Resolution; or None and why."""
    if not usable:
        return None, "no node class can be solved for"
    reference = max(usable, key=lambda a: a.cls.nodes)
    assert reference.res is not None
    lists = {id(a): _offered(a.res) for a in usable if a.res is not None}
    common: list[list[Key]] = []
    for i, ordered in enumerate(lists[id(reference)]):
        shared = set(ordered)
        for a in usable:
            shared &= set(lists[id(a)][i]) if i < len(lists[id(a)]) else set()
        if not shared:
            family = ordered[0][0] if ordered else (reference.res.offered and "a framework") or "a framework"
            return None, f"no {family} build runs on every node class" if ordered else "a requested framework runs on no node class"
        common.append([k for k in ordered if k in shared])
    attempts = [frozenset(k for family in common for k in family)]
    attempts += [frozenset({first, *(k for family in common[1:] for k in family)}) for first in common[0][:PIN_TRIES]]
    for only in attempts:
        results = [_within(a, specs, only, matrices, policy) for a in usable]
        chosen = {tuple(key(c) for c in r.candidates) for r in results if r.ok}
        if all(r.ok for r in results) and len(chosen) == 1:
            return results[usable.index(reference)], None
    return None, "the node classes run no one set of builds together"


def _within(a: ClassAnswer, specs: list[str], only: frozenset[Key], matrices: Matrices, policy: Policy) -> Resolution:
    """The class's answer among `only`. Its own answer stands where every build of it is allowed:
    the best of a set is still the best of any subset that holds it."""
    assert a.res is not None and a.machine is not None
    if a.res.ok and all(key(c) in only for c in a.res.candidates):
        return a.res
    return resolve(specs, a.machine, matrices, policy._replace(only=only))


def holding_back(usable: list[ClassAnswer], fleet: Optional[Resolution], matrices: Matrices, policy: Policy) -> list[Blocking]:
    """The classes to change (at most BLOCKING_SHARE of the nodes) for the best better build of the
    first framework, each with the reason it cannot run that build."""
    if len(usable) < 2:
        return []
    total = sum(a.cls.nodes for a in usable)
    runs: dict[Key, set[int]] = {}
    found: dict[Key, Candidate] = {}
    for i, a in enumerate(usable):
        if a.res is None or not a.res.offered:
            continue
        for c in a.res.offered[0]:
            runs.setdefault(key(c), set()).add(i)
            found.setdefault(key(c), c)
    current = key(fleet.candidates[0]) if fleet is not None and fleet.candidates else None
    ranked = sorted(found, key=lambda k: (found[k].version, _cuda(found[k])), reverse=True)
    for k in ranked:
        if current is not None and (found[k].version, _cuda(found[k])) <= (found[current].version, _cuda(found[current])):
            break
        blockers = [a for i, a in enumerate(usable) if i not in runs[k]]
        if blockers and sum(a.cls.nodes for a in blockers) <= BLOCKING_SHARE * total:
            return [Blocking(a.cls, _why_not(a, found[k], matrices, policy), label(k)) for a in blockers]
    return []


def _cuda(c: Candidate) -> tuple[int, ...]:
    return tuple(int(x) for x in c.cuda.split(".")) if c.cuda else ()


def _why_not(a: ClassAnswer, c: Candidate, matrices: Matrices, policy: Policy) -> str:
    assert a.res is not None and a.machine is not None
    for r in a.res.rejections:
        if r.family == c.family and r.version == c.version and r.tag in (c.tag, None):
            if r.constraint == "driver" and c.cuda:
                floor, _rule = rules.driver_floor(matrices, a.machine, Version(c.cuda), policy.strict_driver)
                if floor and floor not in r.reason:
                    return f"{r.reason}; needs driver >= {floor}"
            return r.reason
    return f"{label(key(c))} is not among the builds that run on it"
