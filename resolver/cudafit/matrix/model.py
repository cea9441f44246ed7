"""The matrix as values: cells per (release, build) for each group (a machine, a GPU, a node
class), the build resolve picks per group, and what the rows and columns are."""

from __future__ import annotations

from typing import NamedTuple, Optional

from cudafit.records import Machine

RUNS = "runs"
CPU_ONLY = "cpu"  # installs and runs, without the GPU (resolve takes it only with --cpu)
UNKNOWN = "unknown"  # may run: the build's kernel lists are not known
NO = "no"


class Cell(NamedTuple):
    status: str  # RUNS, CPU_ONLY, UNKNOWN or NO
    reason: str  # why not, or what it runs on ("CUDA 12.6"), worded
    constraint: str = ""  # the rule that ruled it out: driver, compute-capability, python, platform, accelerator, ...
    evidence: str = ""  # how the deciding facts are known ("SASS list measured")
    driver_floor: str = ""  # the oldest driver that loads it (a CUDA build that runs)
    index_url: Optional[str] = None  # where its packages come from (None: PyPI)
    requirement: str = ""  # torch==2.14.1+cu126
    graded: dict = {}  # resolve --json's evidence object for the build (runs and unknown cells)


class Group(NamedTuple):
    label: str  # "Tesla V100-SXM2-16GB, driver 535.104.05", a node class's key
    machine: Machine
    cells: dict[tuple[str, str], Cell]  # (release, build tag) -> cell; a build the platform lacks has none
    rows: dict[str, Cell]  # a whole release ruled out before its builds (Python, platform): its reason
    best: Optional[tuple[str, str]]  # the (release, tag) `cudafit resolve` picks here
    order: tuple[tuple[str, str], ...] = ()  # the builds that run, best first, as resolve ranks them
    nodes: int = 0  # a fleet class's node count
    last_lines: tuple[str, ...] = ()  # "torch 2.14.x is the last release line ..." (worded)


class Matrix(NamedTuple):
    family: str  # torch
    spec: str  # the spec that bounds the rows, "" for all
    releases: tuple[str, ...]  # newest first
    tags: tuple[str, ...]  # every build column, in display order
    shown: tuple[str, ...]  # the columns worth showing: not only another vendor's builds
    groups: tuple[Group, ...]
    data_date: str
    left_out: tuple[tuple[str, str], ...] = ()  # fleet classes with no machine: (key, why)

    def preferred(self, group: Group, release: str) -> Optional[str]:
        """The build of `release` resolve would take in `group`, or None where none runs."""
        return next((tag for r, tag in group.order if r == release), None)

    def common_runs(self, release: str, tag: str) -> bool:
        """The build runs (on its GPU) in every group."""
        return all((g.cells.get((release, tag)) or Cell(NO, "")).status == RUNS for g in self.groups)
