"""`cudafit doctor`: what is wrong with this machine and a Python environment, and how to fix it."""

from __future__ import annotations

import json
from typing import Optional

import click

from cudafit.cli.options import load_matrices, machine_options
from cudafit.machine import MachineOptions


@click.command()
@machine_options
@click.option("--env", "env", metavar="PATH", help="Environment folder or its Python (default: the active one).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--import", "confirm", is_flag=True, help="Also import the frameworks (in a child process) to confirm what was predicted.")
@click.option("--timeout", default=120.0, show_default=True, type=click.FloatRange(min=1), metavar="SECONDS", help="How long --import may take.")
def doctor(described: MachineOptions, env: Optional[str], as_json: bool, confirm: bool, timeout: float) -> int:
    """Diagnose the GPU setup of an environment, without importing any framework; exit 1 on errors."""
    import os

    from cudafit.doctor.environment import read_target
    from cudafit.doctor.runner import diagnose, read_driver, report_json, report_text
    from cudafit.errors import InputError
    from cudafit.installer import find_target
    from cudafit.machine import build_machine, machine_json
    from cudafit.toolkits import find_toolkits

    matrices = load_matrices()
    target = find_target(env)
    environment = read_target(target.python, target.prefix, python=described.python)
    if described.python and environment.python and described.python != environment.python:
        raise InputError(
            f"--python {described.python}: the environment ({environment.prefix}) runs Python {environment.python}; doctor reads the environment as it is"
        )
    machine = build_machine(described._replace(python=environment.python), matrices, reader=read_driver)
    report = diagnose(environment, machine, matrices, environ=os.environ, toolkits=find_toolkits(os.environ))
    if confirm:
        from cudafit.doctor.runner import confirm as import_and_compare

        report = import_and_compare(report, timeout)
    if as_json:
        described_json = {k: v for k, v in machine_json(machine, full=True).items() if k not in ("toolkits", "frameworks")}  # the environment's, below
        click.echo(json.dumps(report_json(report, described_json), indent=2))
    else:
        click.echo(report_text(report))
    return 0 if report.ok else 1
