"""`cudafit check`: the pre-commit hook for requirements files, pyproject.toml, lockfiles and
environment.yml. Offline: it reads files and cudafit's data, nothing else; --resolve also asks uv."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import click

from cudafit.cli.options import load_matrices, machine_options
from cudafit.errors import CudafitError
from cudafit.machine import MachineOptions

if TYPE_CHECKING:
    from cudafit.check.runner import Settings


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(readable=False, path_type=Path))  # an unreadable file is that file's error, the others are still checked
@machine_options
@click.option("--output-format", "fmt", type=click.Choice(["text", "json", "github"]), default="text", show_default=True, help="How findings are printed.")
@click.option("--fix", is_flag=True, help="Rewrite what is unambiguous (a companion's version, an index URL), keeping comments and layout.")
@click.option("--diff", "show_diff", is_flag=True, help="Print the fixes as a unified diff; change nothing.")
@click.option("--config", type=click.Path(dir_okay=False, path_type=Path), help="The pyproject.toml with [tool.cudafit] (default: ./pyproject.toml).")
@click.option("--select", "select", metavar="CODES", help="Only these rules (comma-separated codes or prefixes, e.g. CF001,CF00).")
@click.option("--ignore", "ignore", metavar="CODES", help="Skip these rules.")
@click.option("--strict", is_flag=True, help="Fail on notes too: pins cudafit cannot check (a release its data does not know). Same as --fail-on note.")
@click.option(
    "--fail-on",
    type=click.Choice(["error", "warning", "note"]),
    help="The least severe finding that makes the exit code 1 (default: warning; the pre-commit hook: error, so advice never blocks a commit).",
)
@click.option(
    "--resolve",
    is_flag=True,
    help="Also ask uv (the network) to resolve each environment the file describes: CF016 where it finds no solution, with its reason.",
)
@click.option("--list-rules", is_flag=True, help="Print the rules, their codes and severities, and exit.")
def check(
    paths: tuple[Path, ...],
    described: MachineOptions,
    fmt: str,
    fix: bool,
    show_diff: bool,
    config: Optional[Path],
    select: Optional[str],
    ignore: Optional[str],
    strict: bool,
    fail_on: Optional[str],
    resolve: bool,
    list_rules: bool,
) -> int:
    """Check dependency files (default: this folder) for pins that cannot install or run: builds that
    do not exist, indexes that do not serve them, companions that do not pair, CUDA libraries that
    clash, and, with --driver/--gpu or [tool.cudafit] targets, sets that do not run on a machine.
    Exit 0 clean, 1 findings, 2 a file or option that cannot be read."""
    from cudafit.check import output
    from cudafit.check.rules import RULES, Target
    from cudafit.check.runner import Settings, check_paths, settings_from, targets_from

    if list_rules:
        for rule in RULES:
            click.echo(f"{rule.code}  {rule.severity:<7}  {rule.name:<26}  {rule.summary}")
        return 0
    if fix and show_diff:
        raise click.UsageError("--fix writes the fixes and --diff only shows them; give one of them")
    try:
        settings = _settings(config)
        config_error = ""
    except CudafitError as exc:
        if config is not None:
            raise
        # ./pyproject.toml is also a file to check: say what is wrong with it, check the others.
        settings, config_error = settings_from(None, ""), str(exc)
    if strict and fail_on not in (None, "note"):
        raise click.UsageError("--strict is --fail-on note; give one of them")
    settings = Settings(
        tuple(_codes(select, "--select")) or settings.select,
        settings.ignore + tuple(_codes(ignore, "--ignore")),
        settings.targets,
        settings.source,
        "note" if strict else fail_on or settings.fail_on,
        resolve or settings.resolve,
        platforms=settings.platforms,
    )
    if settings.resolve:
        from cudafit.check.resolve import find_uv

        settings = settings._replace(uv=find_uv())
    matrices = load_matrices()
    targets = targets_from(settings, matrices)
    if described.describes_gpus or described.os or described.arch or described.python:
        from cudafit.machine import build_machine

        name = (
            " ".join(x for x in (described.os, described.arch, described.driver and f"driver {described.driver}", *described.gpus) if x)
            or "the described machine"
        )
        targets = (*targets, Target(name, build_machine(described, matrices)))
    # uv takes seconds per file: on a terminal, say which file it is asked about
    asking = _asking if settings.resolve and sys.stderr.isatty() else None
    report = check_paths(list(paths) or [Path(".")], matrices, settings, targets, asking)
    findings = report.findings
    if fix or show_diff:
        from cudafit.check.fix import apply

        fixed, patch, write_errors = apply(findings, write=fix)
        if show_diff:
            click.echo(patch, nl=False)
        if fix and fixed:
            click.echo(f"fixed {len(fixed)} finding{'s' if len(fixed) != 1 else ''}", err=True)
            # What the fixes leave: the files as they are now, checked again (a fix to an index
            # also settles the pins that disagreed with it).
            report = check_paths(list(paths) or [Path(".")], matrices, settings, targets)
            report = report._replace(errors=report.errors + tuple(write_errors))
            findings = report.findings
        elif write_errors:
            report = report._replace(errors=report.errors + tuple(write_errors))
    if config_error and config_error not in report.errors:
        # not one of the files checked: say why it was read
        config_error += " (read for its [tool.cudafit] settings; --config names another file)"
    errors = tuple(dict.fromkeys((config_error, *report.errors) if config_error else report.errors))
    for error in errors:
        click.echo(f"cudafit: error: {error}", err=True)
    if not report.files and not errors and any(p.is_dir() for p in paths or (Path("."),)):
        # a mistyped folder in CI passes nothing through unnoticed: say so (it is no error: a
        # project may have no dependency files yet)
        known = "requirements*.txt, pyproject.toml, uv.lock, pylock.toml, environment*.yml, Dockerfile"
        click.echo(f"cudafit: warning: no dependency files found ({known})", err=True)
    if fmt == "json":
        click.echo(output.as_json(findings), nl=False)
    elif fmt == "github":
        click.echo(output.github(findings), nl=False)
    elif not show_diff:
        click.echo(output.text(findings, report.files, unreadable=len(errors)), nl=False)
    if errors:
        return 2
    return 1 if output.fails(findings, settings.fail_on) else 0


def _settings(config: Optional[Path]) -> Settings:
    from cudafit.check.pyproject import load_toml
    from cudafit.check.runner import settings_from
    from cudafit.check.source import read_text

    path = config if config is not None else Path("pyproject.toml")
    if config is None and not path.is_file():
        return settings_from(None, "")
    data = load_toml(path, read_text(path))
    tool = data.get("tool")
    table = tool.get("cudafit") if isinstance(tool, dict) else None
    if table is not None and not isinstance(table, dict):
        from cudafit.errors import InputError

        raise InputError(f"{path}: [tool.cudafit] must be a table")
    return settings_from(table, str(path))


def _codes(text: Optional[str], option: str) -> list[str]:
    from cudafit.check.rules import BY_CODE

    if not text:
        return []
    codes = [c.strip().upper() for c in text.split(",") if c.strip()]
    unknown = [c for c in codes if not any(code.startswith(c) for code in BY_CODE)]
    if unknown:
        raise click.BadParameter(f"unknown rule code {', '.join(unknown)} (see --list-rules)", param_hint=option)
    return codes


def _asking(path: Path) -> None:
    click.echo(f"cudafit: asking uv about {path}", err=True)
