"""`cudafit detect`: what cudafit sees on this machine."""

from __future__ import annotations

import json
from typing import Optional

import click

from cudafit.cli.options import load_matrices, machine_options
from cudafit.machine import MachineOptions
from cudafit.records import SCHEMA_VERSION


@click.command()
@machine_options
@click.option("--env", "env", metavar="PATH", help="Environment folder or its Python (default: the active one): its Python and frameworks.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def detect(described: MachineOptions, env: Optional[str], as_json: bool) -> int:
    """Show what cudafit sees: driver, GPUs, OS, Python, CUDA toolkits, frameworks."""
    from cudafit.machine import build_machine, machine_json

    matrices = load_matrices()
    if env is not None:
        from cudafit.detection import interpreter_version, python_of_prefix
        from cudafit.installer import find_target

        target = find_target(env)
        python = python_of_prefix(target.prefix) if target.prefix.joinpath("pyvenv.cfg").is_file() else interpreter_version(target.python)
        described = described._replace(env_prefix=str(target.prefix), python=described.python or python)
    machine = build_machine(described._replace(detect_extras=True), matrices)
    data = machine_json(machine, full=True)
    if as_json:
        click.echo(json.dumps({"schema_version": SCHEMA_VERSION, **data}, indent=2))
        return 0
    click.echo(f"os:      {data['os']} ({data['arch']}){' Jetson' if machine.jetson else ''}")
    click.echo(f"python:  {data['python'] or 'unknown'}")
    if not machine.driver_known:
        click.echo("driver:  unknown")
    else:
        click.echo(f"driver:  {data['driver'] or 'none'}" + (f" (CUDA {data['cuda_driver_max']} max)" if data["cuda_driver_max"] else ""))
    for gpu in data["gpus"]:
        mem = f", {gpu['memory_mib']} MiB" if gpu.get("memory_mib") else ""
        if "vendor" in gpu:  # AMD, Intel: the target their kernels are built for
            click.echo(f"gpu:     {gpu['name'] or gpu['vendor'].upper() + ' GPU'} ({gpu['target'] or 'target unknown'}{mem})")
        else:
            click.echo(f"gpu:     {gpu['name'] or 'unnamed'} (compute capability {gpu['compute_capability'] or 'unknown'}{mem})")
    if machine.rocm is not None:
        click.echo(f"rocm:    {machine.rocm or 'none'} (on the host)")
    if machine.amdgpu is not None:
        shown = f"{machine.amdgpu} (AMD's DKMS driver)" if machine.amdgpu else "the kernel's own driver"
        click.echo(f"amdgpu:  {shown}")
    for tk in data["toolkits"]:
        click.echo(f"toolkit: CUDA {tk['version']} at {tk['path']}")
    for fw in data["frameworks"]:
        click.echo(f"package: {fw['name']} {fw['version']}")
    for warning in data["warnings"]:
        click.echo(f"warning: {warning}")
    return 0
