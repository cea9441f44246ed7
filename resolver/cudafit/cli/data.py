"""`cudafit data ...`: check the data files and show how each fact is known."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import click


@click.group()
def data() -> None:
    """Inspect and check the embedded data (matrices/)."""


@data.command("check")
@click.option("--dir", "folder", type=click.Path(file_okay=False, exists=True, path_type=Path), help="A matrices folder (default: the embedded one).")
def data_check(folder: Optional[Path]):
    """Load and validate every data file; exit 2 naming file, entry and field of each problem."""
    from cudafit.loader import check, data_dir

    m, problems = check(folder)
    for problem in problems:
        click.echo(f"cudafit: error: {problem}", err=True)
    if problems or m is None:
        return 2
    releases = ", ".join(f"{len(found)} {family}" for family, found in m.frameworks.items())
    click.echo(f"{folder or data_dir()}: ok (data of {m.data_date}): {len(m.toolkits)} CUDA toolkits, {len(set(m.gpus.values()))} GPUs, releases: {releases}")
    return 0


@data.command("coverage")
@click.option("--dir", "folder", type=click.Path(file_okay=False, exists=True, path_type=Path), help="A matrices folder (default: the embedded one).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option(
    "--framework", "frameworks", multiple=True, type=click.Choice(["torch", "tensorflow", "jax", "onnxruntime-gpu"]), help="Only this framework (repeatable)."
)
@click.option("--holes", is_flag=True, help="Only rows with a fact that is unknown or merely reported.")
def data_coverage(folder: Optional[Path], as_json: bool, frameworks: tuple[str, ...], holes: bool):
    """Which facts are known per framework, release, variant and platform, and their evidence grade."""
    from cudafit.coverage import coverage_json, coverage_rows, coverage_text
    from cudafit.loader import load

    rows = coverage_rows(load(folder, use_cache=folder is None), frameworks or None, holes_only=holes)
    if as_json:
        click.echo(json.dumps(coverage_json(rows), indent=2))
    else:
        click.echo(coverage_text(rows), nl=False)
    return 0
