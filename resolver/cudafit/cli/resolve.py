"""`cudafit resolve`: the best consistent builds for a machine, as a summary, JSON or an install form."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Callable, Optional

import click

from cudafit.cli.options import load_matrices, machine_options, policy_options
from cudafit.emit import FORMATS
from cudafit.machine import MachineOptions

if TYPE_CHECKING:
    from cudafit.records import Machine, Matrices, Policy


@click.command()
@click.argument("specs", nargs=-1)
@machine_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (the CLI contract).")
@click.option("--format", "fmt", type=click.Choice(list(FORMATS)), help="Print this install form instead of the summary.")
@click.option("-o", "--output", type=click.Path(allow_dash=True), help="Write the --format or --json output to FILE ('-': standard output).")
@policy_options
@click.option("--why", "why_not", metavar="NAME==VERSION", help="Explain why a release (e.g. tensorflow==2.21.0) is not in the answer.")
@click.option("--name", "env_name", default="cudafit", show_default=True, help="Environment/project name for conda and uv-project output.")
@click.option(
    "--inside",
    metavar="IMAGE",
    help="Install into this image, keeping its torch: nvcr.io/nvidia/pytorch:25.05-py3, or torch=VERSION,cuda=X.Y,python=3.N.",
)
def resolve(
    specs: tuple[str, ...],
    described: MachineOptions,
    policy: Policy,
    as_json: bool,
    fmt: Optional[str],
    output: Optional[str],
    why_not: Optional[str],
    env_name: str,
    inside: Optional[str],
) -> int:
    """Pick the best consistent builds for SPEC... (default: torch), e.g. 'torch>=2.4' torchvision tensorflow 'jax[cuda12]'."""
    from cudafit import fileio, staleness
    from cudafit.errors import InputError
    from cudafit.machine import build_machine
    from cudafit.report import resolution_json, resolution_text
    from cudafit.resolution import for_the_machine
    from cudafit.resolution import resolve as solve

    if output == "-":  # standard output, as in most tools
        output = None
    if fmt is not None and as_json:
        raise click.UsageError("--format and --json are two different outputs; give one of them")
    if output is not None and fmt is None and not as_json:
        raise click.UsageError("-o/--output writes the --format or the --json output; give one of them")
    if output is not None:
        fileio.check_output(output)  # a directory, a socket, ... is refused before any work

    def put(text: str) -> None:
        if output is None:
            click.echo(text, nl=False)
        else:
            fileio.write_output(output, text)
            click.echo(f"wrote {output}", err=True)

    matrices = load_matrices()
    machine = build_machine(described, matrices)
    if inside is not None:
        if why_not:
            raise click.UsageError("--why explains the answer for a machine; it does not combine with --inside")
        return _inside(list(specs), inside, described.python, machine, matrices, policy, as_json, fmt, put)
    res = for_the_machine(staleness.with_note(solve(list(specs), machine, matrices, policy), matrices.data_date), matrices)
    if fmt == "dockerfile":
        from cudafit.containers.cuda_base import for_cuda_image

        res = for_cuda_image(specs, machine, matrices, policy, res)
    if why_not:
        from cudafit.resolution import why_not as explain_why_not

        if fmt is not None:
            raise click.UsageError("--why prints an explanation; it does not combine with --format")
        lines = explain_why_not(why_not, res, matrices)
        if as_json:
            put(json.dumps({**resolution_json(res), "why_not": {"release": why_not, "reasons": lines}}, indent=2) + "\n")
        else:
            chosen = all(" is part of the answer" in line for line in lines[:1]) and len(lines) == 1
            click.echo(f"{'why' if chosen else 'why not'} {why_not}:")
            for line in lines:
                click.echo(f"  - {line}")
        return 0 if res.ok else 1
    if as_json:
        put(json.dumps(resolution_json(res), indent=2) + "\n")
        return 0 if res.ok else 1
    if not res.ok or fmt is None:
        click.echo(resolution_text(res), nl=False, err=not res.ok and fmt is not None)
        return 0 if res.ok else 1
    from cudafit.emit import EmitOptions, render

    existing = fileio.read_existing(output) if output is not None and fmt == "uv-project" else None
    try:
        text = render(fmt, res, EmitOptions(env_name=env_name, existing=existing))
    except InputError as err:
        if err.field == "existing" and output is not None:  # the file -o names is the one to merge into
            raise InputError(err.reason, path=output) from None
        raise
    put(text)
    for warning in res.warnings:
        click.echo(f"cudafit: warning: {warning}", err=True)
    return 0


INSIDE_FORMATS = ("uv", "dockerfile")


def _inside(
    specs: list[str],
    text: str,
    python: Optional[str],
    machine: Machine,
    matrices: Matrices,
    policy: Policy,
    as_json: bool,
    fmt: Optional[str],
    put: Callable[[str], None],
) -> int:
    """resolve --inside: the libraries that fit the torch an image carries, installed beside it."""
    from cudafit.containers import image, inside_report
    from cudafit.containers.inside import install_steps, resolve_inside

    if fmt is not None and fmt not in INSIDE_FORMATS:
        raise click.UsageError(
            f"--inside installs with uv's overrides, which keep the image's torch; --format {fmt} cannot say that: use {' or '.join(INSIDE_FORMATS)}"
        )
    answer = resolve_inside(specs, image.read(text, matrices, python), machine, matrices, policy)
    if as_json:
        put(json.dumps(inside_report.as_json(answer), indent=2) + "\n")
    elif fmt is None or not answer.ok:
        click.echo(inside_report.text(answer), nl=False, err=fmt is not None)
    elif fmt == "dockerfile":
        if answer.image.container is None:
            raise click.UsageError("--format dockerfile starts FROM the image: name it (nvcr.io/nvidia/pytorch:YY.MM-py3), not a description")
        put(inside_report.dockerfile(answer))
    else:
        put("\n".join(["python -m pip install uv", *install_steps(answer)]) + "\n")
    return 0 if answer.ok else 1
