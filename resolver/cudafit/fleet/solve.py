"""The best set that runs on every node class, the classes that hold the fleet back, and per-pool
answers. The solver runs once per class (never per node): each class's runnable builds are
intersected, and the solver is asked again with only the builds every class runs (Policy.only),
so the answer keeps every rule a single machine's answer has (pins, companions, tiers)."""

from __future__ import annotations

from typing import NamedTuple, Optional

from packaging.version import Version

from cudafit import rules
from cudafit.answers import Candidate, Resolution
from cudafit.errors import InputError
from cudafit.fleet.classes import NodeClass
from cudafit.fleet.node import NO_GPU
from cudafit.gpus import lookup_gpu
from cudafit.machine import MachineOptions, build_machine
from cudafit.records import GpuInfo, Machine, Matrices, Policy, cc_str
from cudafit.resolution import resolve

Key = tuple[str, str, str]  # (family, version, tag)
BLOCKING_SHARE = 0.25  # at most this share of the nodes may be asked to change for a better answer
PIN_TRIES = 8  # builds of the first framework tried in turn when the classes rank the rest apart


class ClassAnswer(NamedTuple):
    cls: NodeClass
    machine: Optional[Machine]
    res: Optional[Resolution]  # the class's own answer (None: it could not be asked)
    problem: Optional[str]  # why it is left out, or why it has no answer of its own


class Blocking(NamedTuple):
    cls: NodeClass
    reason: str  # why it cannot run the better set, and the driver that would
    gain: str  # the set every usable class would run after the change


class FleetAnswer(NamedTuple):
    classes: list[ClassAnswer]
    fleet: Optional[Resolution]
    why_none: Optional[str]
    pools: dict[str, Optional[Resolution]]
    blocking: list[Blocking]
    notes: list[str]
    platforms: dict[str, Optional[Resolution]] = {}  # per operating system, where the fleet spans several

    @property
    def ok(self) -> bool:
        """An answer for the whole fleet: one set, or one per operating system."""
        return self.fleet is not None or (bool(self.platforms) and all(r is not None for r in self.platforms.values()))

    @property
    def left_out(self) -> list[ClassAnswer]:
        """The classes the answer could not place: GPU nodes it could not read or ask about. Nodes
        without a GPU beside GPU nodes are not among them: they need no GPU answer."""
        return [a for a in self.classes if a.res is None and a.problem != NO_GPU]

    @property
    def partial(self) -> bool:
        return bool(self.left_out)


def system(os_name: str) -> str:
    """The operating system as a wheel sees it (sys_platform): WSL is Linux."""
    return "linux" if os_name == "wsl" else os_name


def key(c: Candidate) -> Key:
    return (c.family, str(c.version), c.tag)


def requirements(res: Resolution) -> str:
    return ", ".join(p.requirement for c in res.candidates for p in c.packages)


def _machine(cls: NodeClass, matrices: Matrices, python: Optional[str], driver: Optional[str] = None) -> Machine:
    if cls.machine is not None:  # a pyproject target, checked as `cudafit check` reads it
        machine = cls.machine if cls.machine.python or not python else cls.machine._replace(python=python)
        return machine._replace(driver=driver) if driver else machine
    gpus: list[str] = []
    ccs: list[str] = []
    targets: list[str] = []
    for name in cls.gpus:
        model, _warning = lookup_gpu(matrices.gpus, name)
        other = _amd_or_intel(name, matrices) if model is None else None
        if other is not None:  # AMD's node labeller: a product name, or a PCI id read as its LLVM target
            (gpus if other.name else targets).append(other.name or other.target or "")
            continue
        if model is None:
            if cls.compute_capabilities:  # an unlisted product: its compute labels still say what it runs
                continue
            raise InputError(f"GPU {name!r} is not in cudafit's GPU table and the node has no gpu.compute labels")
        label = cls.compute_capabilities[0] if cls.compute_capabilities else None
        if label is not None and label != cc_str(model.compute_capability):
            raise InputError(f"labels disagree: gpu.product {name!r} is compute capability {cc_str(model.compute_capability)}, gpu.compute says {label}")
        gpus.append(model.name)  # GPU Feature Discovery writes "NVIDIA-A100-SXM4-80GB"; answers use the table's name
    if not gpus and not targets:
        ccs = list(cls.compute_capabilities)
    options = MachineOptions(
        driver=driver or cls.driver or "none", gpus=tuple(gpus), compute_capabilities=tuple(ccs), os=cls.os, arch=cls.arch, python=python, gfx=tuple(targets)
    )
    return build_machine(options, matrices)


def _amd_or_intel(name: str, matrices: Matrices) -> Optional[GpuInfo]:
    from cudafit import vendor_gpus

    if name.startswith("PCI "):
        vendor, _, device = name[4:].partition(":")
        found = vendor_gpus.by_pci(vendor, device, matrices)
        return found._replace(name=None) if found is not None else None
    found, _warning = vendor_gpus.by_name(name, matrices)
    return found._replace(name=name) if found is not None else None


def has_gpu(cls: NodeClass) -> bool:
    """Its nodes have an NVIDIA GPU, read or not: a node set aside for an unmapped GRES type or a
    missing driver still has one, so it still makes its platform a GPU platform."""
    if cls.machine is not None:
        return bool(cls.machine.gpus)
    return bool(cls.gpus or cls.compute_capabilities) or (cls.problem is not None and cls.problem != NO_GPU)


def answer_classes(specs: list[str], classes: list[NodeClass], matrices: Matrices, policy: Policy, python: Optional[str]) -> list[ClassAnswer]:
    # Where an operating system has GPU nodes (even ones that cannot be read), its nodes without a
    # GPU are left out: a login node must never decide a GPU cluster's answer (issue 23). An
    # operating system of CPU nodes only (macOS laptops beside Linux GPU servers) is solved as such.
    gpu_systems = {system(c.os) for c in classes if has_gpu(c)}
    answers = []
    for cls in classes:
        gpu_fleet = system(cls.os) in gpu_systems
        described = cls.machine is not None and bool(cls.machine.gpus or cls.machine.driver)
        cpu_node = not described and not cls.gpus and not cls.compute_capabilities and (cls.problem in (None, NO_GPU))
        if cls.problem and not (cpu_node and not gpu_fleet):
            answers.append(ClassAnswer(cls, None, None, cls.problem))
            continue
        if cpu_node and gpu_fleet:
            answers.append(ClassAnswer(cls, None, None, NO_GPU))
            continue
        try:
            machine = _machine(cls._replace(problem=None), matrices, python)
        except InputError as exc:
            answers.append(ClassAnswer(cls, None, None, str(exc)))
            continue
        broken = rules.check_gpu_support_by_driver(matrices, machine)
        if broken:
            answers.append(ClassAnswer(cls, machine, None, f"broken: {broken}"))
            continue
        res = resolve(specs, machine, matrices, policy)
        answers.append(ClassAnswer(cls, machine, res, None if res.ok else f"no answer of its own: {_deciding(res)}"))
    return answers


def _deciding(res: Resolution) -> str:
    """The one line that says why a class has no set: a cause about a framework none of whose
    builds runs there (TensorFlow on a 470 driver), before causes about builds of a framework
    that has others that run (torch's CUDA 13 builds, where its CUDA 11 ones run)."""
    runnable = {c.family for builds in res.offered for c in builds}
    for cause in res.causes:
        family = cause.subject.split(" ")[0] if cause.subject else ""
        if family and family not in runnable and cause.constraint not in ("hint",):
            return cause.worded
    joint = next((c for c in res.causes if c.constraint == "joint"), None)
    if joint is not None:
        return joint.worded
    return res.conflicts[0] if res.conflicts else "no set runs"


def solve_fleet(specs: list[str], classes: list[NodeClass], matrices: Matrices, policy: Policy, python: Optional[str]) -> FleetAnswer:
    answers = answer_classes(specs, classes, matrices, policy, python)
    usable = [a for a in answers if a.res is not None]
    readings = dict.fromkeys(r for a in answers for r in a.cls.readings)
    notes = list(readings) + [f"{a.cls.nodes} node(s) of class {a.cls.key} left out: {a.problem}" for a in answers if a.res is None and a.problem]
    fleet, why_none = common_answer(specs, usable, matrices, policy)
    unplaced = [a for a in answers if a.res is None and a.problem != NO_GPU]
    if not usable and unplaced:
        problems = "; ".join(dict.fromkeys(a.problem or "" for a in unplaced))
        why_none = f"no GPU node could be placed ({sum(a.cls.nodes for a in unplaced)} GPU node(s) left out: {problems})"
    pools: dict[str, Optional[Resolution]] = {}
    names = sorted({p for a in usable for p in a.cls.pools})
    if len(names) > 1:
        seen: dict[frozenset[int], Optional[Resolution]] = {frozenset(range(len(usable))): fleet}
        for name in names:
            members = frozenset(i for i, a in enumerate(usable) if name in a.cls.pools)
            if members not in seen:  # pools of the same classes share one answer
                seen[members] = common_answer(specs, [usable[i] for i in sorted(members)], matrices, policy)[0]
            pools[name] = seen[members]
    platforms: dict[str, Optional[Resolution]] = {}
    systems = sorted({system(a.cls.os) for a in usable})
    if len(systems) > 1:
        platforms = {name: common_answer(specs, [a for a in usable if system(a.cls.os) == name], matrices, policy)[0] for name in systems}
        if fleet is None:
            why_none = (
                f"the fleet spans {', '.join(systems)}, whose builds differ: one answer per operating system "
                "(--format uv-project writes them into one pyproject)"
            )
    from cudafit.emit import environment

    if fleet is not None:
        # what a class's GPU needs set where it runs (an AMD GPU on another target's kernels): the
        # fleet's set may need it on some classes only
        for a in usable:
            within = _within(a, specs, frozenset(key(c) for c in fleet.candidates), matrices, policy) if a.res is not None else None
            for name, value in environment(within).items() if within is not None and within.ok else ():
                notes.append(f"class {a.cls.key}: set {name}={value} where it runs ({a.cls.nodes} node(s); users' workaround, not the vendor's support)")
    blocking = holding_back(specs, usable, fleet, matrices, policy, python)
    if blocking:
        nodes = sum(b.cls.nodes for b in blocking)
        which = ", ".join(b.cls.key for b in blocking)
        notes.append(f"upgrade the driver of {nodes} node(s) in {len(blocking)} class(es) ({which}) to get {blocking[0].gain} everywhere")
    return FleetAnswer(answers, fleet, why_none, pools, blocking, notes, platforms)


def _offered(res: Resolution) -> list[list[Key]]:
    """Each family's builds that run on the class. On an AMD or Intel GPU class a CPU build is no
    such build where a ROCm or XPU one runs (as a CPU build is none on an NVIDIA class)."""
    from cudafit.vendor_rules import cpu_beside

    out = []
    for family in res.offered:
        gpu = [c for c in family if c.kind != "cpu"]
        kept = gpu if gpu and cpu_beside(res.machine) else family
        out.append([key(c) for c in kept])
    return out


def common_answer(specs: list[str], usable: list[ClassAnswer], matrices: Matrices, policy: Policy) -> tuple[Optional[Resolution], Optional[str]]:
    """The best set every class runs, as the largest class's Resolution; or None and why."""
    if not usable:
        return None, "no node class can be solved for"
    reference = max(usable, key=lambda a: a.cls.nodes)
    lists = [_offered(a.res) for a in usable if a.res is not None]
    common: list[list[Key]] = []
    for i, ordered in enumerate(lists[usable.index(reference)]):
        per_class = [set(found[i]) if i < len(found) else set() for found in lists]
        shared = set.intersection(*per_class)
        if not shared:
            family = next((k[0] for found in lists if i < len(found) for k in found[i]), None)
            if family is None:
                return None, "a requested framework runs on no node class"
            lacking = [a.cls.key for a, mine in zip(usable, per_class, strict=True) if not mine]
            if lacking:
                return None, f"no {family} build runs on class(es) {', '.join(lacking)}"
            return None, f"no {family} build runs on every node class"
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


def holding_back(
    specs: list[str], usable: list[ClassAnswer], fleet: Optional[Resolution], matrices: Matrices, policy: Policy, python: Optional[str]
) -> list[Blocking]:
    """The classes whose driver alone keeps the fleet from a better set (at most BLOCKING_SHARE of
    the nodes), each with the driver it needs; checked by solving again as if they had it. A limit
    no driver lifts (a GPU the build has no kernels for, a platform without wheels) is no advice."""
    if len(usable) < 2:
        return []
    total = sum(a.cls.nodes for a in usable)
    runs: dict[Key, set[int]] = {}
    found: dict[Key, Candidate] = {}
    for i, a in enumerate(usable):
        for c in a.res.offered[0] if a.res is not None and a.res.offered else ():
            runs.setdefault(key(c), set()).add(i)
            found.setdefault(key(c), c)
    current = fleet.candidates[0] if fleet is not None and fleet.candidates else None
    ranked = sorted(found, key=lambda k: (found[k].version, _cuda(found[k])), reverse=True)
    for k in ranked:
        if current is not None and (found[k].version, _cuda(found[k])) <= (current.version, _cuda(current)):
            break
        blockers = [a for i, a in enumerate(usable) if i not in runs[k]]
        if not blockers or sum(a.cls.nodes for a in blockers) > BLOCKING_SHARE * total:
            continue
        upgraded = [_upgraded(specs, a, found[k], matrices, policy, python) for a in blockers]
        if any(u is None for u in upgraded):
            continue  # some class cannot run it whatever its driver
        kept = [a for i, a in enumerate(usable) if i in runs[k]]
        after = kept + [u for u in upgraded if u is not None]
        gain, _why = common_answer(specs, after, matrices, policy)
        if gain is None or key(gain.candidates[0])[1] == (key(current)[1] if current is not None else None):
            continue
        return [Blocking(a.cls, _why_not(a, found[k], u), requirements(gain)) for a, u in zip(blockers, upgraded, strict=True) if u is not None]
    return []


def _cuda(c: Candidate) -> tuple[int, ...]:
    return tuple(int(x) for x in c.cuda.split(".")) if c.cuda else ()


def _upgraded(specs: list[str], a: ClassAnswer, c: Candidate, matrices: Matrices, policy: Policy, python: Optional[str]) -> Optional[ClassAnswer]:
    """The class as it would be on the driver build `c` needs, if that makes `c` run there."""
    assert a.res is not None and a.machine is not None
    if not c.cuda or a.machine.driver is None:
        return None
    floor, _rule = rules.driver_floor(matrices, a.machine, Version(c.cuda), policy.strict_driver)
    if floor is None:
        return None
    try:
        machine = _machine(a.cls, matrices, python, driver=floor)
    except InputError:
        return None
    if rules.check_gpu_support_by_driver(matrices, machine):
        return None  # that driver cannot drive this GPU
    res = resolve(specs, machine, matrices, policy)
    if not res.offered or not any(key(x) == key(c) for x in res.offered[0]):
        return None
    return ClassAnswer(a.cls._replace(driver=floor), machine, res, None)


def _why_not(a: ClassAnswer, c: Candidate, upgraded: ClassAnswer) -> str:
    """The rejection that keeps `c` off this class, and the driver that lifts it."""
    assert a.res is not None and upgraded.machine is not None
    reason = next((r.reason for r in a.res.rejections if (r.family, r.version, r.tag) == (c.family, c.version, c.tag) and r.constraint == "driver"), None)
    driver = upgraded.machine.driver or ""
    needs = f"needs driver >= {driver}"
    return f"{reason}; {needs}" if reason and driver not in reason else (reason or needs)
