"""`cudafit toolkits` and `cudafit env-script`: the CUDA toolkits on this machine, and a script
that selects one for a shell."""

from __future__ import annotations

import json
from typing import Optional

import click

from cudafit.records import SCHEMA_VERSION


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def toolkits(as_json: bool) -> int:
    """List the CUDA toolkits installed here (/usr/local/cuda-*, CUDA_HOME, nvcc on PATH, conda)."""
    import os

    from cudafit.toolkits import extension_toolkit, find_toolkits

    found = find_toolkits(os.environ)
    used = extension_toolkit(os.environ, found)
    if as_json:
        click.echo(
            json.dumps(
                {"schema_version": SCHEMA_VERSION, "toolkits": [t.as_json() for t in found], "extensions_use": str(used.root) if used else None},
                indent=2,
            )
        )
        return 0
    if not found:
        click.echo("No CUDA toolkit found (pip-installed frameworks bring their own CUDA libraries; a toolkit is only needed to build extensions).")
        return 0
    for t in found:
        marks = ", ".join(t.found_by) + (", /usr/local/cuda" if t.default else "")
        star = "  <- builds extensions" if used is not None and used.root == t.root else ""
        click.echo(f"CUDA {t.version or 'unknown'}  {t.root}  ({marks}){star}")
    return 0


@click.command("env-script")
@click.option(
    "--toolkit", "wanted", required=True, metavar="X.Y", help="The toolkit version to select (12.6, or 12.6.85; a major alone, 13, takes its newest)."
)
@click.option("-o", "--output", metavar="FILE", help="Write the script here (default: standard output).")
def env_script(wanted: str, output: Optional[str]) -> int:
    """Write a shell script that selects one CUDA toolkit (source it: . ./env.sh)."""
    import os

    from cudafit.doctor.toolkits import env_script as script
    from cudafit.errors import InputError
    from cudafit.toolkits import find_toolkits, pick

    found = find_toolkits(os.environ)
    chosen = pick(found, wanted)
    if chosen is None:
        have = ", ".join(f"{t.version} ({t.root})" for t in found if t.version) or "none"
        raise InputError(f"--toolkit {wanted}: no such CUDA toolkit installed here (found: {have}); `cudafit toolkits` lists them")
    text = script(chosen, found)
    if output and output != "-":
        from cudafit.fileio import write_output

        write_output(output, text)
    else:
        click.echo(text, nl=False)
    return 0
