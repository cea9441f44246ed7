"""`cudafit matrix`: a framework's releases by builds for a machine, a driver, several GPUs or a
fleet's node classes, as a table, an HTML page, a CI matrix or JSON."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Optional

import click

from cudafit.cli.options import InventoryFlags, inventory_options, load_matrices, machine_options, policy_options
from cudafit.machine import MachineOptions

if TYPE_CHECKING:
    from cudafit.records import Machine, Matrices, Policy

FORMATS = ("text", "html", "github", "gitlab")


@click.command()
@click.argument("specs", nargs=-1)
@machine_options
@click.option(
    "--framework", metavar="NAME", help="The framework whose matrix to show (torch, tensorflow, jax, onnxruntime-gpu, xformers, ...); the same as SPEC NAME."
)
@click.option("--since", metavar="VERSION", help="Only releases from this one on (2.4).")
@click.option("--inventory", metavar="FILE|-", help="A fleet inventory (as `fleet resolve` reads it): one column group per node class.")
@inventory_options
@click.option(
    "--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True, help="A table, an HTML page, or a GitHub Actions / GitLab CI matrix."
)
@click.option("--json", "as_json", is_flag=True, help="Print the whole matrix as one JSON object.")
@click.option("-o", "--output", type=click.Path(allow_dash=True), help="Write the output to FILE ('-': standard output).")
@policy_options
def matrix(
    specs: tuple[str, ...],
    described: MachineOptions,
    framework: Optional[str],
    since: Optional[str],
    inventory: Optional[str],
    inventory_flags: InventoryFlags,
    fmt: str,
    as_json: bool,
    output: Optional[str],
    policy: Policy,
) -> int:
    """The compatibility matrix of SPEC (default: torch): every release by every build, each cell
    runs / does not run / unknown with its reason, and the build `cudafit resolve` picks marked."""
    from packaging.version import InvalidVersion, Version

    from cudafit import fileio
    from cudafit.matrix.build import compute
    from cudafit.specs import parse_specs

    if output == "-":
        output = None
    if as_json and fmt != "text":
        raise click.UsageError("--format and --json are two different outputs; give one of them")
    if output is not None:
        fileio.check_output(output)
    wanted = [*specs, *([framework] if framework else [])] or ["torch"]
    start = None
    if since is not None:
        try:
            start = Version(since)
        except InvalidVersion:
            raise click.BadParameter(f"{since!r} is not a version", param_hint="'--since'") from None
    matrices = load_matrices()
    machines, left_out = _machines(described, inventory, inventory_flags, wanted, matrices, policy)
    families, _extras = parse_specs(wanted, machines[0][1], matrices)
    from cudafit.frameworks import BY_FAMILY

    family = next(iter(families))  # the first named: xformers, not the torch it is built against
    others = [f for f in families if f != family and f not in BY_FAMILY[family].REQUIRES]
    if others:
        raise click.UsageError(f"a matrix shows one framework: give {family} or {others[0]}, one per run")
    spec_text = " ".join(s for s in specs if any(op in s for op in "<>=!~"))
    result = compute(family, wanted, families[family], machines, matrices, policy, start, spec_text, left_out)
    if fmt in ("github", "gitlab"):
        from cudafit.matrix.ci import entries, no_common_build

        if not entries(result):
            # GitHub Actions and GitLab both reject an empty matrix: nothing is written, the reason is said
            click.echo(f"cudafit: error: {no_common_build(result)}", err=True)
            return 1
    text = _render(result, fmt, as_json)
    if output is None:
        click.echo(text, nl=False)
    else:
        fileio.write_output(output, click.unstyle(text))
        click.echo(f"wrote {output}", err=True)
    return 0 if any(g.best for g in result.groups) else 1


def _render(result: object, fmt: str, as_json: bool) -> str:
    from cudafit.matrix.model import Matrix

    assert isinstance(result, Matrix)
    if as_json:
        from cudafit.matrix.report import matrix_json

        return json.dumps(matrix_json(result), indent=2) + "\n"
    if fmt == "html":
        from cudafit.matrix.page import render as page

        return page(result)
    if fmt in ("github", "gitlab"):
        from cudafit.matrix.ci import render as ci

        return ci(result, fmt)
    from cudafit.matrix.text import render as table

    return table(result)


def _machines(
    described: MachineOptions, inventory: Optional[str], flags: InventoryFlags, specs: list[str], matrices: Matrices, policy: Policy
) -> tuple[list[tuple[str, Machine, int]], tuple[tuple[str, str], ...]]:
    """(label, machine, nodes) per group, and the fleet classes left out with why."""
    from cudafit.machine import build_machine
    from cudafit.report import describe

    if inventory is not None:
        return _classes(described, inventory, flags, specs, matrices, policy)
    if flags != InventoryFlags():
        raise click.UsageError("--pool-label, --gres-map, --driver-feature and --default-driver are for --inventory; describe a machine with --driver, --gpu")
    bare = described._replace(gpus=(), compute_capabilities=(), gfx=())
    each = (
        [bare._replace(gpus=(g,)) for g in described.gpus]
        + [bare._replace(compute_capabilities=(c,)) for c in described.compute_capabilities]
        + [bare._replace(gfx=(g,)) for g in described.gfx]
    )
    if len(each) <= 1:
        machine = build_machine(described, matrices)
        label = describe(machine) + (", any GPU (its kernels not judged)" if machine.driver and not machine.gpus else "")
        return [(label, machine, 0)], ()
    out = []
    for one in each:  # several GPUs described: a group for each, on the one driver
        machine = build_machine(one, matrices)
        out.append((describe(machine), machine, 0))
    return out, ()


def _classes(
    described: MachineOptions, inventory: str, flags: InventoryFlags, specs: list[str], matrices: Matrices, policy: Policy
) -> tuple[list[tuple[str, Machine, int]], tuple[tuple[str, str], ...]]:
    from cudafit.cli.fleet import _classes as read_classes
    from cudafit.cli.fleet import reading_options
    from cudafit.fleet import inventory as inv
    from cudafit.fleet.classes import group
    from cudafit.fleet.solve import answer_classes
    from cudafit.machine_input import check_python

    if described != MachineOptions(python=described.python):
        raise click.UsageError("--inventory describes the machines; of the machine options only --python goes with it")
    python = check_python(described.python, matrices) if described.python else None
    classes = read_classes(inventory, reading_options(flags, matrices), inv, group, matrices)
    if not classes:
        raise click.BadParameter(f"{inventory}: no nodes", param_hint="'--inventory'")
    machines = []
    left = []
    for answer in answer_classes(specs, classes, matrices, policy, python):
        if answer.machine is None:
            left.append((answer.cls.key, answer.problem or "no machine"))
        else:
            machines.append((answer.cls.key, answer.machine, answer.cls.nodes))
    if not machines:
        raise click.BadParameter(
            f"{inventory}: no node class could be read as a machine ({'; '.join(f'{k}: {w}' for k, w in left)})", param_hint="'--inventory'"
        )
    return machines, tuple(left)
