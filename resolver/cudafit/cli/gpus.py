"""`cudafit gpus`: the GPUs cudafit knows, by name pattern."""

from __future__ import annotations

import json
from typing import Optional

import click

from cudafit.cli.options import load_matrices


@click.command("gpus")
@click.argument("pattern", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
def gpus_command(pattern: Optional[str], as_json: bool) -> int:
    """List the GPUs cudafit knows (name as nvidia-smi prints it, compute capability, architecture,
    memory); PATTERN: a case-insensitive substring or a glob ('*RTX 30*'). Exit 1 when none match."""
    from cudafit.gpus import gpu_row, match_gpus

    matrices = load_matrices()
    rows = []
    for model in match_gpus(matrices.gpus, pattern):
        arch = matrices.architecture(model.compute_capability)
        rows.append(gpu_row(model, arch.name if arch else None))
    if as_json:
        click.echo(json.dumps(rows, indent=2))
    elif rows:
        # Widths of the whole table, not of the rows shown: every query lines up the same way.
        width = max(len(model.name) for model in matrices.gpus.values())
        arch_width = max(len("unknown"), *(len(a.name) for a in matrices.architectures))
        for r in rows:
            memory = f"{r['memory_gb']:g} GB" if r["memory_gb"] else ""
            click.echo(f"{r['name']:<{width}}  {r['compute_capability']:>5}  {r['architecture'] or 'unknown':<{arch_width}}  {memory}".rstrip())
    if not rows:
        click.echo(f"cudafit: no known GPU matches {pattern!r}; `cudafit gpus` lists them all", err=True)
        return 1
    return 0
