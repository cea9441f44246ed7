"""`cudafit gpus`: the GPUs cudafit knows, by name pattern."""

from __future__ import annotations

import json
from typing import Optional, Union

import click

from cudafit.cli.options import load_matrices
from cudafit.gpu_tables import AmdModel, IntelModel


@click.command("gpus")
@click.argument("pattern", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
def gpus_command(pattern: Optional[str], as_json: bool) -> int:
    """List the GPUs cudafit knows (name as nvidia-smi prints it, compute capability, architecture,
    memory; AMD and Intel GPUs with the target their kernels are built for); PATTERN: a
    case-insensitive substring or a glob ('*RTX 30*'). Exit 1 when none match."""
    import fnmatch

    from cudafit.gpus import gpu_row, match_gpus

    matrices = load_matrices()
    rows = []
    for model in match_gpus(matrices.gpus, pattern):
        arch = matrices.architecture(model.compute_capability)
        rows.append(gpu_row(model, arch.name if arch else None))
    others: list[tuple[str, Union[AmdModel, IntelModel]]] = [("amd", m) for m in dict.fromkeys(matrices.amd_gpus.values())]
    others += [("intel", m) for m in dict.fromkeys(matrices.intel_gpus.values())]
    for vendor, other in others:
        name = other.name
        if name.startswith("Intel GPU ("):  # an id-only entry of intel.toml, no product name
            continue
        if pattern and not (fnmatch.fnmatch(name.lower(), pattern.lower()) if any(c in pattern for c in "*?[") else pattern.lower() in name.lower()):
            continue
        target = other.gfx if isinstance(other, AmdModel) else other.device
        size = other.memory_gb if isinstance(other, AmdModel) else None
        row = {"name": name, "compute_capability": None, "architecture": None, "memory_gb": size, "segment": other.segment}
        rows.append({**row, "vendor": vendor, "target": target})
    if as_json:
        click.echo(json.dumps(rows, indent=2))
    elif rows:
        # Widths of the whole table, not of the rows shown: every query lines up the same way.
        width = max(len(model.name) for model in matrices.gpus.values())
        arch_width = max(len("unknown"), *(len(a.name) for a in matrices.architectures))
        for r in rows:
            memory = f"{r['memory_gb']:g} GB" if r["memory_gb"] else ""
            if r.get("vendor"):  # AMD and Intel: the target in the compute capability's place
                click.echo(f"{r['name']:<{width - 2}}  {r['target']:>7}  {str(r['vendor']).upper():<{arch_width}}  {memory}".rstrip())
                continue
            click.echo(f"{r['name']:<{width}}  {r['compute_capability']:>5}  {r['architecture'] or 'unknown':<{arch_width}}  {memory}".rstrip())
    if not rows:
        click.echo(f"cudafit: no known GPU matches {pattern!r}; `cudafit gpus` lists them all", err=True)
        return 1
    return 0
