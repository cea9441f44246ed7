"""`cudafit watch`: run a command and report the warning signs of a misconfigured run."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import click

if TYPE_CHECKING:
    from cudafit.watch.model import Watched


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--interval", default=1.0, show_default=True, type=click.FloatRange(min=0.01, max=60), metavar="SECONDS", help="Time between samples.")
@click.option("--pid", type=click.IntRange(min=1), help="Follow this running process instead of starting a command.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout at the end (the CLI contract).")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write the JSON object to FILE instead.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def watch(interval: float, pid: Optional[int], as_json: bool, output: Optional[str], command: tuple[str, ...]) -> int:
    """Run COMMAND (after --), pass its output through, sample the GPUs and its processes, and
    report the warning signs on stderr at the end; exits with the command's exit code."""
    import math
    import os
    import sys

    # only what starting the command needs: the judging and the report are imported after it ends,
    # so the command starts that much sooner
    from cudafit.watch.runner import alive
    from cudafit.watch.runner import watch as run_watch

    if not math.isfinite(interval):
        raise click.BadParameter(f"{interval}: expected a number of seconds", param_hint="'--interval'")
    if pid is None and not command:
        raise click.UsageError("give a command after --, or --pid PID")
    if pid is not None and command:
        raise click.UsageError("--pid follows a running process; give no command with it")
    if command and command[0].startswith("-") and not _after_dashes(command):
        raise click.UsageError(f"no such option: {command[0]} (the command goes after --)")
    if command and not command[0]:
        raise click.UsageError("the command after -- is empty")
    if pid is not None and not alive(pid):
        raise click.BadParameter(f"{pid}: no such process", param_hint="'--pid'")
    if output == "-":  # standard output, as -o - is everywhere in cudafit
        output, as_json = None, True
    if output is not None:
        from pathlib import Path

        from cudafit import fileio

        fileio.check_output(output)  # before the run: a report that cannot be written would lose it
        folder = Path(output).resolve().parent
        if not folder.is_dir():
            raise click.BadParameter(f"{output}: its folder does not exist", param_hint="'-o'")
        if not Path(output).exists() and not os.access(folder, os.W_OK | os.X_OK):
            raise click.BadParameter(f"{output}: its folder {folder} cannot be written", param_hint="'-o'")
    try:
        watched = run_watch(list(command), interval, pid)
    except FileNotFoundError as exc:
        builtin = " (a shell builtin: run it in a shell, `-- sh -c '...'`)" if command[0] in _BUILTINS else ""
        click.echo(f"cudafit: error: cannot start {exc}{builtin}", err=True)
        return 127  # as a shell says of a command it cannot find or run

    import json

    from cudafit import fileio
    from cudafit.errors import CudafitError
    from cudafit.watch.findings import judge
    from cudafit.watch.report import as_json as to_json
    from cudafit.watch.report import text

    findings = judge(watched, _bf16_gpus(watched), _cause(watched))
    code = watched.exit_code if watched.exit_code is not None else 0
    try:
        # on a line of its own where the command's output ended without one (a progress bar)
        click.echo(("\n" if watched.open_line else "") + text(watched, findings), err=True, nl=False)
        if as_json or output:
            body = json.dumps(to_json(watched, findings), indent=2) + "\n"
            if output:
                fileio.write_output(output, body)
            elif sys.stdout is None:  # closed where watch started (`>&-`)
                raise OSError("standard output is closed")
            else:
                click.echo(("\n" if watched.open_line else "") + body, nl=False)
    except (OSError, CudafitError) as exc:
        # the run is over: its exit code is the answer; the report's failure is said where it can be
        try:
            click.echo(f"cudafit: error: the report was not written: {exc}", err=True)
        except OSError:
            pass
    return code


# commands a shell runs itself, which no program on PATH is
_BUILTINS = frozenset({"cd", "export", "source", ".", "alias", "set", "unset", "ulimit", "umask", "exec", "eval", "pushd", "popd"})


def _after_dashes(command: tuple[str, ...]) -> bool:
    """Whether the command's first word came after the `--` (a leading dash is then the
    command's own, `-- -x`), not before it (`--jsn -- python x.py`: a misspelt option)."""
    import sys

    argv = sys.argv[1:]
    return "--" in argv and command[0] not in argv[: argv.index("--")]


def _bf16_gpus(watched: Watched) -> frozenset[int]:
    """The GPUs with bfloat16 in hardware (compute capability 8.0 and up), by their names."""
    from cudafit.gpus import lookup_gpu
    from cudafit.loader import load

    names = dict(watched.gpu_names)
    if not names:
        return frozenset()
    table = load().gpus
    out = set()
    for index, name in names.items():
        model = lookup_gpu(table, name)[0]
        if model is not None and model.compute_capability >= (8, 0):
            out.add(index)
    return frozenset(out)


def _cause(watched: Watched) -> Optional[str]:
    """doctor's explanation, asked only where a GPU was sampled and none did work."""
    from cudafit.watch.findings import used_gpus

    if not watched.gpus or used_gpus(watched):
        return None
    import os

    from cudafit.watch.cause import doctor_cause, environment_of, interpreter_of

    return doctor_cause(environment_of(interpreter_of(watched.command, os.environ)) if watched.exit_code is not None else None)
