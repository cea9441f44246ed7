"""`cudafit install`: resolve, then run the install (uv, pip or conda) and verify what landed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import click

from cudafit.cli.options import load_matrices, machine_options, policy_options
from cudafit.machine import MachineOptions

if TYPE_CHECKING:
    from cudafit.records import Policy


@click.command()
@click.argument("specs", nargs=-1)
@machine_options
@click.option("--env", "env", metavar="PATH", help="Environment folder or its Python (default: the active one).")
@click.option("--dry-run", is_flag=True, help="Print the commands; run nothing.")
@click.option(
    "--constrain",
    is_flag=True,
    help="After the install, write the set's constraints file into the environment (cudafit-constraints.txt) to hold it in place.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["pip", "uv", "conda"]),
    help="The installer: pip, uv (must be on PATH), or conda (into a conda environment). Default: uv if present, else pip.",
)
@policy_options
def install(specs: tuple[str, ...], described: MachineOptions, policy: Policy, env: Optional[str], dry_run: bool, constrain: bool, fmt: Optional[str]) -> int:
    """Resolve as `resolve` does, then install the result (uv if present, else pip)."""
    import platform

    from cudafit import installer, staleness
    from cudafit.detection import detect_os, interpreter_version
    from cudafit.machine import build_machine
    from cudafit.machine_input import check_arch, check_os, normalize_arch
    from cudafit.report import resolution_text
    from cudafit.resolution import resolve as solve

    matrices = load_matrices()
    target = installer.find_target(env)
    python = installer.check_description(
        target,
        interpreter_version(target.python),
        described.python,
        check_os(described.os) if described.os else None,
        check_arch(described.arch) if described.arch else None,
        detect_os(),
        normalize_arch(platform.machine()),
    )
    machine = build_machine(described._replace(python=python), matrices)
    res = solve(list(specs), machine, matrices, policy)
    if not res.ok:
        click.echo(resolution_text(res), nl=False, err=True)
        return 1
    commands = installer.plan(res, target, conda=fmt == "conda", dry_run=dry_run, installer=fmt if fmt in ("pip", "uv") else None)
    # What the answer assumed (an unknown driver) and what pip cannot bring (a system CUDA) must
    # reach the person installing, as resolve shows it.
    if res.by_driver_floor:
        click.echo(f"cudafit: note: {res.notes[0]}", err=True)
    for warning in res.warnings:
        click.echo(f"cudafit: warning: {warning}", err=True)
    stale = staleness.note(matrices.data_date)
    if stale:
        click.echo(f"cudafit: note: {stale}", err=True)
    import os

    problem = installer.compiler_problem(res, os.environ)
    if dry_run:
        import shlex

        if problem:
            click.echo(f"cudafit: warning: the install would stop here: {problem}", err=True)
        for argv in commands:
            click.echo(shlex.join(argv))
        if constrain:
            from cudafit.held import path_in

            click.echo(f"# then write {path_in(target.prefix)} (the set's constraints)")
        return 1 if problem else 0  # the install itself would exit 1 there: a dry run used as a pre-check says so
    if problem:
        click.echo(f"cudafit: {problem}", err=True)
        return 1
    try:
        installer.run(commands, lambda line: click.echo(line, err=True))
    except installer.InstallFailed as failed:
        click.echo(f"cudafit: the install command failed (exit {failed.code})", err=True)
        return 1
    bad = 0
    for name, wanted, got in installer.verify(res, target):
        ok = installer.matches(wanted, got)
        bad += not ok
        click.echo(f"{'installed' if ok else 'MISMATCH '} {name} {got or 'missing'}" + ("" if ok else f" (wanted {wanted})"))
    if bad:
        return 1
    if constrain:
        path = installer.hold(res, target)
        click.echo(f"held: {path}; keep the set in place with: export PIP_CONSTRAINT={path} UV_CONSTRAINT={path}")
    return 0
