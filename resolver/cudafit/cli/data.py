"""`cudafit data ...`: check the data files and show how each fact is known."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Optional

import click

from cudafit.frameworks import families
from cudafit.records import SCHEMA_VERSION


@click.group()
def data() -> None:
    """The data cudafit reasons with: check it, see how each fact is known, update it without a new
    cudafit (update, rollback, status), and pack it as a bundle."""


@data.command("check")
@click.option(
    "--dir",
    "folder",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="A matrices folder (default: the embedded data and any installed update).",
)
def data_check(folder: Optional[Path]) -> int:
    """Load and validate every data file; exit 2 naming file, entry and field of each problem."""
    from cudafit import datahome
    from cudafit.loader import check, data_dir, data_files

    update = None if folder else datahome.current_root()
    folders = [folder] if folder else [data_dir(), *([update] if update else [])]
    failed = False
    for root in folders:
        m, problems = check(root)
        if root == update:  # the installed update holds the files its bundle had
            differs = datahome.unlike_manifest(root, data_files(root))
            problems = [differs, *problems] if differs else problems
        for problem in problems:
            click.echo(f"cudafit: error: {problem}", err=True)
        if problems or m is None:
            failed = True
            continue
        releases = ", ".join(f"{len(found)} {family}" for family, found in m.frameworks.items())
        wheels = f"; PyPI file lists of {len(m.wheel_files)} distributions ({sum(len(v) for v in m.wheel_files.values())} releases)" if m.wheel_files else ""
        click.echo(f"{root}: ok (data of {m.data_date}): {len(m.toolkits)} CUDA toolkits, {len(set(m.gpus.values()))} GPUs, releases: {releases}{wheels}")
    return 2 if failed else 0


@data.command("coverage")
@click.option("--dir", "folder", type=click.Path(file_okay=False, exists=True, path_type=Path), help="A matrices folder (default: the data in use).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option(
    "--framework",
    "frameworks",
    multiple=True,
    type=click.Choice(list(families())),
    help="Only this framework (repeatable).",
)
@click.option("--holes", is_flag=True, help="Only rows with a fact that is unknown or merely reported.")
def data_coverage(folder: Optional[Path], as_json: bool, frameworks: tuple[str, ...], holes: bool) -> int:
    """Which facts are known per framework, release, variant and platform, and their evidence grade."""
    from cudafit.coverage import coverage_json, coverage_rows, coverage_text
    from cudafit.loader import load

    rows = coverage_rows(load(folder, use_cache=folder is None), frameworks or None, holes_only=holes)
    if as_json:
        click.echo(json.dumps(coverage_json(rows), indent=2))
    else:
        click.echo(coverage_text(rows), nl=False)
    return 0


@data.command("bundle")
@click.option("--dir", "folder", type=click.Path(file_okay=False, exists=True, path_type=Path), help="A matrices folder (default: the embedded one).")
@click.option("-o", "--output", "output", required=True, help="The bundle file to write (a wheel of cudafit-matrices), or a folder to write it into.")
@click.option("--version", "version", help="The bundle's version (default: its data date, 2026-12-01 -> 2026.12.1).")
def data_bundle(folder: Optional[Path], output: str, version: Optional[str]) -> int:
    """Pack a matrices folder as a data bundle: the same data gives the same bytes."""
    from cudafit.fileio import check_output, write_output_bytes
    from cudafit.update import build_bundle

    if output == "-":
        raise click.BadParameter("a bundle is a wheel file: give a file or a folder to write it to, not standard output", param_hint="'-o'")
    target = Path(output)
    _refuse_missing_folder(output)
    if not output or not target.is_dir():
        check_output(output)  # '', a socket or a block device is refused before the bundle is built
    name, blob = build_bundle(folder, version)
    if target.is_dir():
        target = target / name
    write_output_bytes(target, blob)  # a FIFO or a character device is written into, as `>` would
    click.echo(f"{target}: {len(blob)} bytes, sha256 {_sha256(blob)}")
    return 0


def _refuse_missing_folder(output: str) -> None:
    """`-o` creates no folder, as `resolve -o` creates none: a mistyped `dsit/` is an error, not a
    new folder (issue 23, item 7). Refused before the bundle is built."""
    from cudafit.errors import InputError

    if output.endswith(("/", "\\")):
        if not Path(output).is_dir():
            raise InputError(f"cannot write into {output}: the folder does not exist (create it first)")
        return
    parent = os.path.dirname(output)
    if parent and not os.path.isdir(parent):
        what = f"{parent} is not a folder" if os.path.exists(parent) else f"the folder {parent} does not exist (create it first)"
        raise InputError(f"cannot write {output}: {what}")


def _sha256(blob: bytes) -> str:
    import hashlib

    return hashlib.sha256(blob).hexdigest()


@data.command("update")
@click.option("--from", "source", metavar="URL|PATH", help="A bundle file, a bundle URL, or a mirror of PyPI's JSON API (default: PyPI).")
@click.option("--sha256", "sha256", metavar="HEX", help="The bundle's expected sha256 (for a file or URL carried by hand).")
def data_update(source: Optional[str], sha256: Optional[str]) -> int:
    """Install the newest data bundle this cudafit reads (checked, atomic; the previous data stays for `data rollback`)."""
    from cudafit.update import update

    if sha256 is not None and (len(sha256) != 64 or any(c not in "0123456789abcdefABCDEF" for c in sha256)):
        raise click.BadParameter(f"{sha256!r}: expected 64 hexadecimal digits", param_hint="'--sha256'")
    done = update(source, sha256, say=lambda text: click.echo(f"cudafit: warning: {text}", err=True))
    if not done.changed:
        what = f"the bundle from {done.source} (data of {done.manifest.data_date}, version {done.manifest.version})"
        click.echo(f"already up to date: {what} is not newer than the data in use")
        return 0
    was = f"the update {done.previous}" if done.previous else "the data cudafit shipped with"
    click.echo(f"installed data of {done.manifest.data_date} (bundle {done.manifest.version}) from {done.source}; `cudafit data rollback` returns to {was}")
    return 0


@data.command("rollback")
def data_rollback() -> int:
    """Swap the data in use with the one before it: after an update, back to the previous data; run
    again, forward to the update."""
    from cudafit.loader import active
    from cudafit.update import rollback

    rollback()
    matrices, source = active()
    click.echo(f"now using the {source.kind} data of {matrices.data_date} ({source.path})")
    return 0


@data.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def data_status(as_json: bool) -> int:
    """Which data cudafit uses (embedded or updated), its date, where it lives, and the newest releases it knows."""
    from cudafit.update import status

    info = status()
    if as_json:
        click.echo(json.dumps({"schema_version": SCHEMA_VERSION, **info}, indent=2))
        return 0
    click.echo(f"data in use: {info['source']}, data of {info['data_date']} ({info['age_days']} day{'' if info['age_days'] == 1 else 's'} old)")
    click.echo(f"path: {info['path']}")
    click.echo("newest releases: " + ", ".join(f"{family} {version}" for family, version in info["newest"].items()))
    update = info["update"]
    if update["current"] or update["previous"]:
        target = update["previous"] or "the embedded data"
        click.echo(f"installed update: {update['current'] or 'none'} ({update['state']}); rollback target: {target}; in {update['home']}")
    return 0


@data.command("variants")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def data_variants(as_json: bool) -> int:
    """PyTorch's wheel-variant labels against the builds they repack: where a label promises kernels a platform's build does not carry."""
    from cudafit.cli.options import load_matrices
    from cudafit.variant_labels import as_dict, audit, words

    matrices = load_matrices()
    found = audit(matrices)
    if as_json:
        report = {"schema_version": SCHEMA_VERSION, "labels": len(matrices.torch_variant_labels), "mislabels": [as_dict(m) for m in found]}
        click.echo(json.dumps(report, indent=2))
        return 0
    click.echo(f"{len(matrices.torch_variant_labels)} variant labels of torch read (matrices/torch-variants.toml)")
    for m in found:
        click.echo(f"  - {words(m)}")
    if not found:
        click.echo("no label promises more than the builds of its tag carry")
    return 0
