"""`cudafit containers`: the NGC PyTorch containers that run on the described or detected host."""

from __future__ import annotations

import json
from typing import Optional

import click

from cudafit.cli.options import load_matrices, machine_options
from cudafit.machine import MachineOptions


@click.command()
@click.argument("specs", nargs=-1)
@machine_options
@click.option("--since", metavar="YY.MM", help="Only releases from this one on (25.01).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (the CLI contract).")
def containers(specs: tuple[str, ...], described: MachineOptions, since: Optional[str], as_json: bool) -> int:
    """NVIDIA's NGC PyTorch containers (nvcr.io/nvidia/pytorch:YY.MM-py3) and whether each runs on this
    host: its CUDA against the host's driver, forward compatibility on data-center GPUs, and why."""
    from cudafit.containers.judge import judge_all
    from cudafit.containers.report import as_json as to_json
    from cudafit.containers.report import text
    from cudafit.machine import build_machine
    from cudafit.report import describe

    for spec in specs:
        if spec.split("=")[0].split("<")[0].split(">")[0].strip().lower() not in ("torch", "pytorch"):
            raise click.UsageError(f"{spec!r}: cudafit's data holds NGC's PyTorch containers only (TensorFlow's ended with 25.02; JAX's are not in it yet)")
    start = None
    if since is not None:
        try:
            start = tuple(int(p) for p in since.split("."))
        except ValueError:
            start = None
        if start is None or len(start) != 2:
            raise click.BadParameter(f"{since!r}: expected a release like 25.01", param_hint="'--since'")
    matrices = load_matrices()
    machine = build_machine(described, matrices)
    verdicts = [v for v in judge_all(machine, matrices) if start is None or tuple(int(p) for p in v.container.tag.split(".")) >= start]
    if as_json:
        click.echo(json.dumps(to_json(verdicts, machine), indent=2))
    else:
        click.echo(text(verdicts, describe(machine), matrices.data_date), nl=False)
    return 0 if any(v.runs for v in verdicts) else 1
