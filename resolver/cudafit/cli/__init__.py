"""The command line: click lives in this package and only here. One module per command; each turns
options into plain values, calls the core, prints, and returns an exit code (0 ok, 1 negative
answer, 2 bad input). This module holds the group and the one error handler.

Commands load lazily: a run builds only the command it runs, so `resolve` does not pay for the
options and help texts of every other command (click looks up each help text's translation as it
builds an option), and a new command costs the others nothing at start-up."""

from __future__ import annotations

import importlib
import sys
from typing import Any, Optional

import click

from cudafit.errors import CudafitError, InputError
from cudafit.version import __version__

# command name -> (module, attribute); `cudafit --help` lists them in this order.
COMMANDS = {
    "resolve": ("cudafit.cli.resolve", "resolve"),
    "install": ("cudafit.cli.install", "install"),
    "check": ("cudafit.cli.check", "check"),
    "doctor": ("cudafit.cli.doctor", "doctor"),
    "detect": ("cudafit.cli.detect", "detect"),
    "toolkits": ("cudafit.cli.toolkits", "toolkits"),
    "env-script": ("cudafit.cli.toolkits", "env_script"),
    "gpus": ("cudafit.cli.gpus", "gpus_command"),
    "data": ("cudafit.cli.data", "data"),
    "fleet": ("cudafit.cli.fleet", "fleet"),
    "matrix": ("cudafit.cli.matrix", "matrix"),
    "containers": ("cudafit.cli.containers", "containers"),
    "watch": ("cudafit.cli.watch", "watch"),
}


# An input error's field (its name in the Python API) -> how the command line takes it.
_FLAGS = {"gpus": "--gpu", "spec": "spec"}


def flag(field: str) -> str:
    """'compute_capability' -> '--compute-capability': the option a field is given with here."""
    return _FLAGS.get(field, "--" + field.replace("_", "-"))


def _usage_line(exc: click.ClickException) -> str:
    """click's message as the contract's one line: "Invalid value for '--format': ... (see 'cudafit resolve --help')"."""
    message = " ".join(exc.format_message().split()).rstrip(".")
    ctx = getattr(exc, "ctx", None)
    if isinstance(exc, click.UsageError) and ctx is not None:
        message += f" (see '{ctx.command_path} --help')"
    return message


def run(argv: Optional[list[str]] = None) -> int:
    """The command line as a function: arguments in, exit code out. The one place that turns every
    failure into the contract's form: a user error (bad input, or click's usage errors, which click
    itself prints on four lines) is one line on stderr and its code; Ctrl-C is 130, as a shell
    reports SIGINT, with no traceback. A bug is not caught: it keeps its traceback."""
    try:
        result = main.main(args=argv, prog_name="cudafit", standalone_mode=False)
    except getattr(click.exceptions, "NoArgsIsHelpError", ()) as exc:
        exc.show()  # `cudafit` alone: the help, as click prints it
        return exc.exit_code
    except click.ClickException as exc:
        click.echo(f"cudafit: error: {_usage_line(exc)}", err=True)
        return 2
    except InputError as exc:
        click.echo(f"cudafit: error: {exc.worded(flag)}", err=True)
        return exc.exit_code
    except CudafitError as exc:
        click.echo(f"cudafit: error: {exc}", err=True)
        return exc.exit_code
    except (click.Abort, KeyboardInterrupt):
        return 130
    return result if isinstance(result, int) else 0


class _Cli(click.Group):
    """Called in click's standalone mode (click's test runner, a caller's script), the group exits
    with `run`'s code; `run` itself calls it in non-standalone mode. The program is cudafit.__main__."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> Optional[click.Command]:
        if cmd_name not in COMMANDS:
            return None
        module, attribute = COMMANDS[cmd_name]
        command: click.Command = getattr(importlib.import_module(module), attribute)
        return command

    def main(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        if not kwargs.get("standalone_mode", True):
            return super().main(*args, **kwargs)
        sys.exit(run(kwargs.get("args", args[0] if args else None)))


@click.group(name="cudafit", cls=_Cli, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="cudafit", message="%(prog)s %(version)s")
def main() -> None:
    """The PyTorch (torch, torchvision, torchaudio), TensorFlow and JAX builds that will actually
    run on an NVIDIA machine and can share one environment, with the reason for every choice.

    `detect` shows the machine; `resolve` picks the builds and prints how to install them (--json,
    --format pip|uv|uv-project|requirements|conda|environment.yml); `install` installs them; `check`
    checks requirements files, pyproject.toml, lockfiles and environment.yml (a pre-commit hook);
    `doctor` diagnoses an environment; the `data` commands check, update and show cudafit's data;
    `fleet` answers for a cluster's inventory. Options such as --driver, --gpu, --os, --arch and
    --python describe another machine instead of this one.

    Exit codes: 0 an answer, 1 no consistent set exists, 2 bad input.
    """
