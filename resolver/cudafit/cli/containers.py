"""`cudafit containers`: NVIDIA's NGC framework containers (PyTorch, TensorFlow, JAX) that run on
the described or detected host, and why."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, NamedTuple, Optional

import click

from cudafit.cli.options import load_matrices, machine_options
from cudafit.errors import InputError
from cudafit.machine import MachineOptions

if TYPE_CHECKING:
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    from cudafit.containers.data import Container
    from cudafit.records import Machine, Matrices

# a spec's framework family -> NGC's name for its containers (data.FRAMEWORKS)
FRAMEWORKS = {"torch": "pytorch", "tensorflow": "tensorflow", "jax": "jax"}
# NGC's release tags: a two-digit year and a month (25.01)
_SINCE = re.compile(r"(\d\d)\.(0[1-9]|1[0-2])")


class Selection(NamedTuple):
    framework: str  # pytorch | tensorflow | jax
    containers: tuple[Container, ...]  # newest first
    notes: tuple[str, ...]  # what was left out, and why


@click.command()
@click.argument("specs", nargs=-1)
@machine_options
@click.option("--since", metavar="YY.MM", help="Only releases from this one on (25.01).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (the CLI contract).")
def containers(specs: tuple[str, ...], described: MachineOptions, since: Optional[str], as_json: bool) -> int:
    """NVIDIA's NGC framework containers (nvcr.io/nvidia/pytorch:YY.MM-py3; a tensorflow or jax SPEC
    for theirs) and whether each runs on this host: its CUDA against the host's driver and GPUs,
    forward compatibility on data-center GPUs, and why. A SPEC (torch==2.4.0) keeps the releases
    whose framework version, as released (2.4.0 of NVIDIA's 2.4.0a0+07cecf4168), satisfies it."""
    from cudafit.containers.judge import judge
    from cudafit.containers.report import as_json as to_json
    from cudafit.containers.report import text
    from cudafit.machine import build_machine
    from cudafit.report import describe

    start = parse_since(since)
    matrices = load_matrices()
    machine = build_machine(described, matrices)
    chosen = select(list(specs), start, machine, matrices)
    verdicts = [judge(c, machine, matrices) for c in chosen.containers]
    if as_json:
        click.echo(json.dumps(to_json(verdicts, machine, chosen.framework, chosen.notes), indent=2))
    else:
        click.echo(text(verdicts, describe(machine), matrices.data_date, chosen.framework, chosen.notes), nl=False)
    return 0 if any(v.runs for v in verdicts) else 1


def parse_since(since: Optional[str]) -> Optional[tuple[int, int]]:
    """--since YY.MM as (year, month); a usage error for anything else (2025.01, 25.13, 2.4)."""
    if since is None:
        return None
    match = _SINCE.fullmatch(since.strip())
    if match is None:
        raise click.BadParameter(f"{since!r}: expected a release like 25.01 (YY.MM: a two-digit year and a month 01-12)", param_hint="'--since'")
    return int(match[1]), int(match[2])


def select(specs: list[str], start: Optional[tuple[int, int]], machine: Machine, matrices: Matrices) -> Selection:
    """The releases the specs and --since ask for, newest first, with notes on what is left out."""
    from cudafit.containers.report import MEMBERS, TITLES

    family, wanted = wanted_framework(specs, machine, matrices)
    framework = FRAMEWORKS[family]
    records = [c for c in matrices.ngc_containers if c.framework == framework]
    if not records:
        raise InputError(f"cudafit's data holds no NGC {TITLES[framework]} containers yet", field="spec", value=" ".join(specs) or family)
    notes = []
    newest = records[0].tag  # data.read sorts each framework's releases newest first
    chosen = [c for c in records if start is None or _tag_key(c.tag) >= start]
    if start is not None and not chosen:
        notes.append(f"cudafit's data has no NGC {TITLES[framework]} release from {start[0]:02d}.{start[1]:02d} on: its newest is {newest}")
    if wanted:  # a version asked for; a bare framework name keeps every release
        member = MEMBERS[framework]
        unknown = [c.tag for c in chosen if _released(c) is None]
        matching = [c for c in chosen if (release := _released(c)) is not None and wanted.contains(release)]
        if unknown:
            # a release whose version is not in the data may or may not match: left out, and said
            notes.append(f"left out, their {member} version not in cudafit's data: {', '.join(unknown)}")
        if chosen and not matching:
            notes.append(f"no NGC {TITLES[framework]} release in cudafit's data{' from --since on' if start else ''} has {member}{wanted}")
        chosen = matching
    return Selection(framework, tuple(chosen), tuple(notes))


def wanted_framework(specs: list[str], machine: Machine, matrices: Matrices) -> tuple[str, Optional[SpecifierSet]]:
    """(the framework family the specs name, their combined specifier; None without a spec)."""
    if not specs:
        return "torch", None
    from cudafit.specs import parse_specs

    families, extras = parse_specs([_alias(s) for s in specs], machine, matrices)
    given = " ".join(specs)
    others = [f for f in families if f not in FRAMEWORKS]
    if others:
        raise InputError(f"NGC's framework containers are torch (pytorch), tensorflow and jax; {', '.join(others)} is none of them", field="spec", value=given)
    if len(families) > 1:
        raise InputError(f"one framework at a time: {', '.join(families)} are different NGC containers", field="spec", value=given)
    family, members = next(iter(families.items()))
    stray = sorted(set(members) - {family})
    if stray:
        raise InputError(f"an NGC container is matched by its {family} version; name {family}, not {', '.join(stray)}", field="spec", value=given)
    if extras:
        raise InputError("an NGC container brings its own CUDA libraries: it has no extras to choose", field="spec", value=given)
    return family, members[family]


def _alias(spec: str) -> str:
    """NGC names its PyTorch containers `pytorch`: the spec `pytorch>=2.4` is torch's."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    try:
        req = Requirement(spec)
    except InvalidRequirement:
        return spec  # parse_specs words what is wrong with it
    if canonicalize_name(req.name) != "pytorch":
        return spec
    req.name = "torch"
    return str(req)


def _released(c: Container) -> Optional[Version]:
    """The release a container's framework build is a snapshot of: 2.4.0 for NVIDIA's pre-release
    2.4.0a0+07cecf4168, which a spec for torch 2.4.0 means; None where the data lacks it."""
    from packaging.version import InvalidVersion, Version

    if c.version is None:
        return None
    try:
        return Version(Version(c.version.value).base_version)
    except InvalidVersion:
        return None


def _tag_key(tag: str) -> tuple[int, ...]:
    return tuple(int(p) for p in tag.split("."))
