"""The matrix computed: for each group (a machine), the family's provider judges every build of
every release, as `cudafit resolve` asks it to (one `candidates` call per group); its candidates
are the cells that run, best first (the first is the build resolve picks), and its rejections the
cells that do not, with their reasons. Nothing here decides compatibility itself."""

from __future__ import annotations

import re
from typing import Optional

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cudafit import rules
from cudafit.answers import CPU_BESIDE_GPU, Candidate, Rejection
from cudafit.matrix.model import CPU_ONLY, NO, RUNS, UNKNOWN, Cell, Group, Matrix
from cudafit.records import Machine, Matrices, Policy


def compute(
    family: str,
    specs: list[str],
    member_specs: dict[str, SpecifierSet],
    machines: list[tuple[str, Machine, int]],
    matrices: Matrices,
    policy: Policy,
    since: Optional[Version] = None,
    spec_text: str = "",
    left_out: tuple[tuple[str, str], ...] = (),
) -> Matrix:
    """The matrix of `family` for each (label, machine, nodes); rows bounded by the specs and `since`.
    The marked build is `cudafit resolve SPECS`'s own pick (with the driver not given, resolve
    answers for the driver floor it assumes, which the candidates alone do not know)."""
    from cudafit.frameworks import BY_FAMILY

    provider = BY_FAMILY[family]
    releases = [r for r in provider.releases(matrices) if since is None or r.version >= since]
    if since is not None:  # the marked build is resolve's pick within the rows shown
        specs = [*specs, f"{provider.MEMBERS[0]}>={since}"]
    groups = []
    excluded: set[str] = set()
    for label, machine, nodes in machines:
        accepted, rejected = provider.candidates(member_specs, machine, matrices, policy)
        excluded |= {r.version.public for r in rejected if r.constraint == "spec" and r.tag is None}
        groups.append(_group(label, machine, nodes, accepted, rejected, releases, family, matrices, policy, _pick(specs, family, machine, matrices, policy)))
    rows = [str(r.version) for r in releases if str(r.version) not in excluded]
    # builds of releases the family's list does not hold (NVIDIA's Jetson wheels: 2.5.0a0)
    listed = {r.version.public for r in provider.releases(matrices)}
    extra = {release for g in groups for (release, _tag) in g.cells if release not in listed and release not in excluded}
    rows = sorted([*rows, *extra], key=Version, reverse=True) if extra else rows
    tags = sorted({tag for g in groups for (release, tag) in g.cells if release in rows}, key=tag_order)
    shown = tuple(t for t in tags if any(_worth_showing(g.cells.get((r, t))) for g in groups for r in rows))
    return Matrix(family, spec_text, tuple(rows), tuple(tags), shown, tuple(groups), matrices.data_date, left_out)


def _group(
    label: str,
    machine: Machine,
    nodes: int,
    accepted: list[Candidate],
    rejected: list[Rejection],
    releases: list,
    family: str,
    matrices: Matrices,
    policy: Policy,
    best: Optional[tuple[str, str]],
) -> Group:
    from cudafit.explain import last_line_words
    from cudafit.last_line import last_lines

    cells: dict[tuple[str, str], Cell] = {}
    rows: dict[str, Cell] = {}
    for c in accepted:
        cells.setdefault((c.version.public, c.tag), _runs(c, machine, matrices, policy))
    for r in rejected:
        if r.constraint == "spec":
            continue
        if r.tag is None:
            rows.setdefault(r.version.public, _no(r))
        else:
            cells.setdefault((r.version.public, r.tag), _no(r))
    # a release ruled out whole: each of its builds for the platform says why
    for release in releases:
        whole = rows.get(str(release.version))
        if whole is not None:
            for build in release.builds:
                if machine.platform in build.platforms:
                    cells.setdefault((str(release.version), build.tag), whole)
    lasts = tuple(last_line_words(last) for last in last_lines(machine, matrices, [(family, tuple(releases))]))
    order = tuple(dict.fromkeys((c.version.public, c.tag) for c in accepted))
    return Group(label, machine, cells, rows, best, order, nodes, lasts)


def _pick(specs: list[str], family: str, machine: Machine, matrices: Matrices, policy: Policy) -> Optional[tuple[str, str]]:
    from cudafit.resolution import resolve

    res = resolve(specs, machine, matrices, policy)
    chosen = next((c for c in res.candidates if c.family == family), None) if res.ok else None
    return (chosen.version.public, chosen.tag) if chosen is not None else None


def _runs(c: Candidate, machine: Machine, matrices: Matrices, policy: Policy) -> Cell:
    from cudafit.evidence import describe
    from cudafit.report import evidence_json

    if c.cuda:
        what = f"CUDA {c.cuda}" + (f", cuDNN {c.cudnn}" if c.cudnn else "")
    elif c.kind == "rocm":
        what = f"ROCm {c.rocm or c.tag.removeprefix('rocm')}"
    else:
        what = "Intel XPU" if c.tag == "xpu" else "the CPU"
    floor = rules.driver_floor(matrices, machine, Version(c.cuda), policy.strict_driver)[0] or "" if c.cuda else ""
    floor = rules.floor_for_gpus(floor, machine, matrices)  # a B200 needs R570 whatever its build's CUDA 12 floor
    pin = c.packages[0]
    return Cell(
        status=RUNS if c.verified else UNKNOWN,
        reason=("runs on " if c.verified else "may run (its kernel lists are not known) on ") + what,
        evidence=describe(c.evidence, c.kind == "cuda") if c.evidence else "",
        driver_floor=floor,
        index_url=pin.index_url,
        requirement=pin.requirement,
        graded=evidence_json(c, c.family).get("evidence", {}),
    )


def _no(r: Rejection) -> Cell:
    if r.cause == CPU_BESIDE_GPU:
        return Cell(CPU_ONLY, "runs on the CPU only, beside the GPU (resolve takes it with --cpu)", r.constraint, r.evidence)
    return Cell(NO, r.reason, r.constraint, r.evidence)


# rules that rule out a whole release (its wheels), not the build in this column
_ROW_RULES = frozenset(("accelerator", "python", "platform", "os", "spec"))


def _worth_showing(cell: Optional[Cell]) -> bool:
    """A column says something where one of its cells runs or is ruled out for what the build is
    (its driver, its kernels): not a column of another vendor's builds (ROCm on an NVIDIA machine),
    nor of builds only of releases without a wheel for the Python."""
    return cell is not None and not (cell.status == NO and cell.constraint in _ROW_RULES)


_TAG = re.compile(r"(?P<kind>cu|rocm)(?P<version>[0-9.]+)$")


def tag_order(tag: str) -> tuple:
    """Newest CUDA first, then ROCm newest first, then XPU, then the CPU, then anything else."""
    match = _TAG.match(tag)
    if match:
        digits = match["version"]
        # cu126 is 12.6, cu118 11.8, cu92 9.2, cu12 (a TensorFlow/JAX flavour) 12
        version = Version(digits if "." in digits or len(digits) <= 2 else f"{digits[:-1]}.{digits[-1]}")
        return (0 if match["kind"] == "cu" else 1, tuple(-p for p in version.release), tag)
    return ({"xpu": 2, "cpu": 3}.get(tag, 4), (), tag)
