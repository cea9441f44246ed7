"""The command line: click lives here and only here. Each command turns options into plain values,
calls the core, prints, and returns an exit code (0 ok, 1 negative answer, 2 bad input)."""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Optional

import click

from cudafit import __version__
from cudafit.emit import FORMATS
from cudafit.errors import CudafitError
from cudafit.machine import MachineOptions


def _machine_options(func):
    options = [
        click.option("--driver", metavar="VERSION", help="NVIDIA driver version as nvidia-smi prints it; 'none' for no driver."),
        click.option("--gpu", "gpus", metavar="NAME", multiple=True, help="A GPU by its nvidia-smi name (repeatable)."),
        click.option("--compute-capability", "ccs", metavar="X.Y", multiple=True, help="A GPU by compute capability (repeatable)."),
        click.option("--os", "os_name", metavar="linux|windows|macos|wsl", help="The operating system."),
        click.option("--arch", metavar="x86_64|aarch64", help="The CPU architecture (arm64 = aarch64)."),
        click.option("--python", metavar="X.Y", help="The target Python."),
        click.option("--jetson", is_flag=True, help="An NVIDIA Jetson (L4T) board."),
        click.option("--macos", "macos_version", metavar="X.Y", help="The macOS version (wheels carry a minimum macOS)."),
    ]

    @functools.wraps(func)
    def collect(*args, driver, gpus, ccs, os_name, arch, python, jetson, macos_version, **kwargs):
        # The description becomes one plain object, so a command takes the machine as one value.
        described = MachineOptions(driver=driver, gpus=tuple(gpus), compute_capabilities=tuple(ccs), os=os_name,
                                   arch=arch, python=python, jetson=jetson, macos=macos_version)
        return func(*args, described=described, **kwargs)

    for option in reversed(options):
        collect = option(collect)
    return collect


def _policy_options(func):
    """--strict-driver, --cpu and --mixed-cuda, collected into one Policy (records.Policy)."""
    options = [
        click.option("--strict-driver", is_flag=True, help="Demand each CUDA toolkit's own driver (no minor-version compatibility)."),
        click.option("--cpu", is_flag=True, help="A CPU-only build even where a GPU is present."),
        click.option("--mixed-cuda", is_flag=True, help="Allow frameworks on different CUDA majors in one environment."),
    ]

    @functools.wraps(func)
    def collect(*args, strict_driver, cpu, mixed_cuda, **kwargs):
        from cudafit.records import Policy

        return func(*args, policy=Policy(strict_driver=strict_driver, cpu=cpu, mixed_cuda=mixed_cuda), **kwargs)

    for option in reversed(options):
        collect = option(collect)
    return collect


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
    except CudafitError as exc:
        click.echo(f"cudafit: error: {exc}", err=True)
        return exc.exit_code
    except (click.Abort, KeyboardInterrupt):
        return 130
    return result if isinstance(result, int) else 0


class _Cli(click.Group):
    """Called as a program (the console script, `python -m cudafit`, a test runner), the group
    exits with `run`'s code; `run` itself calls it in click's non-standalone mode."""

    def main(self, *args, **kwargs):  # type: ignore[override]
        if not kwargs.get("standalone_mode", True):
            return super().main(*args, **kwargs)
        sys.exit(run(kwargs.get("args", args[0] if args else None)))


@click.group(name="cudafit", cls=_Cli, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="cudafit", message="%(prog)s %(version)s")
def main() -> None:
    """The PyTorch (torch, torchvision, torchaudio), TensorFlow and JAX builds that will actually
    run on an NVIDIA machine and can share one environment, with the reason for every choice.

    `detect` shows the machine; `resolve` picks the builds and prints how to install them (--json,
    --format pip|uv|uv-project|requirements|conda|environment.yml); `install` installs them; the
    `data` commands check cudafit's data and show how each fact is known. Options such as
    --driver, --gpu, --os, --arch and --python describe another machine instead of this one.

    Exit codes: 0 an answer, 1 no consistent set exists, 2 bad input.
    """


def _load():
    from cudafit.loader import load

    return load()


@main.command()
@click.argument("specs", nargs=-1)
@_machine_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (the CLI contract).")
@click.option("--format", "fmt", type=click.Choice(list(FORMATS)), help="Print this install form instead of the summary.")
@click.option("-o", "--output", type=click.Path(allow_dash=True), help="Write the --format or --json output to FILE ('-': standard output).")
@_policy_options
@click.option("--why", "why_not", metavar="NAME==VERSION", help="Explain why a release (e.g. tensorflow==2.21.0) is not in the answer.")
@click.option("--name", "env_name", default="cudafit", show_default=True, help="Environment/project name for conda and uv-project output.")
def resolve(specs, described: MachineOptions, policy, as_json, fmt, output, why_not, env_name):
    """Pick the best consistent builds for SPEC... (default: torch), e.g. 'torch>=2.4' torchvision tensorflow 'jax[cuda12]'."""
    from cudafit import fileio
    from cudafit.machine import build_machine
    from cudafit.report import resolution_json, resolution_text
    from cudafit.solve import resolve as solve

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

    matrices = _load()
    machine = build_machine(described, matrices)
    res = solve(list(specs), machine, matrices, policy)
    if why_not:
        from cudafit.solve import why_not as explain_why_not

        if fmt is not None:
            raise click.UsageError("--why prints an explanation; it does not combine with --format")
        lines = explain_why_not(why_not, res, matrices)
        if as_json:
            put(json.dumps({**resolution_json(res), "why_not": {"release": why_not, "reasons": lines}}, indent=2) + "\n")
        else:
            click.echo(f"why not {why_not}:")
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
    put(render(fmt, res, EmitOptions(env_name=env_name, existing=existing)))
    for warning in res.warnings:
        click.echo(f"cudafit: warning: {warning}", err=True)
    return 0


@main.command()
@_machine_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def detect(described: MachineOptions, as_json):
    """Show what cudafit sees: driver, GPUs, OS, Python, CUDA toolkits, frameworks."""
    from cudafit.machine import build_machine, machine_json

    matrices = _load()
    machine = build_machine(described._replace(detect_extras=True), matrices)
    data = machine_json(machine, full=True)
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return 0
    click.echo(f"os:      {data['os']} ({data['arch']}){' Jetson' if machine.jetson else ''}")
    click.echo(f"python:  {data['python'] or 'unknown'}")
    if not machine.driver_known:
        click.echo("driver:  unknown")
    else:
        click.echo(f"driver:  {data['driver'] or 'none'}" + (f" (CUDA {data['cuda_driver_max']} max)" if data["cuda_driver_max"] else ""))
    for gpu in data["gpus"]:
        mem = f", {gpu['memory_mib']} MiB" if gpu.get("memory_mib") else ""
        click.echo(f"gpu:     {gpu['name'] or 'unnamed'} (compute capability {gpu['compute_capability'] or 'unknown'}{mem})")
    for tk in data["toolkits"]:
        click.echo(f"toolkit: CUDA {tk['version']} at {tk['path']}")
    for fw in data["frameworks"]:
        click.echo(f"package: {fw['name']} {fw['version']}")
    for warning in data["warnings"]:
        click.echo(f"warning: {warning}")
    return 0


@main.command()
@click.argument("specs", nargs=-1)
@_machine_options
@click.option("--env", "env", metavar="PATH", help="Environment folder or its Python (default: the active one).")
@click.option("--dry-run", is_flag=True, help="Print the commands; run nothing.")
@click.option("--format", "fmt", type=click.Choice(["pip", "uv", "conda"]),
              help="The installer: pip, uv (must be on PATH), or conda (into a conda environment). Default: uv if present, else pip.")
@_policy_options
def install(specs, described: MachineOptions, policy, env, dry_run, fmt):
    """Resolve as `resolve` does, then install the result (uv if present, else pip)."""
    import platform

    from cudafit import install as installer
    from cudafit.detect import detect_os, interpreter_version, normalize_arch
    from cudafit.machine import build_machine, check_arch, check_os
    from cudafit.report import resolution_text
    from cudafit.solve import resolve as solve

    matrices = _load()
    target = installer.find_target(env)
    python = installer.check_description(target, interpreter_version(target.python), described.python,
                                         check_os(described.os) if described.os else None,
                                         check_arch(described.arch) if described.arch else None,
                                         detect_os(), normalize_arch(platform.machine()))
    machine = build_machine(described._replace(python=python), matrices)
    res = solve(list(specs), machine, matrices, policy)
    if not res.ok:
        click.echo(resolution_text(res), nl=False, err=True)
        return 1
    commands = installer.plan(res, target, conda=fmt == "conda", dry_run=dry_run,
                              installer=fmt if fmt in ("pip", "uv") else None)
    # What the answer assumed (an unknown driver) and what pip cannot bring (a system CUDA) must
    # reach the person installing, as resolve shows it.
    if res.by_driver_floor:
        click.echo(f"cudafit: note: {res.notes[0]}", err=True)
    for warning in res.warnings:
        click.echo(f"cudafit: warning: {warning}", err=True)
    if dry_run:
        import shlex

        for argv in commands:
            click.echo(shlex.join(argv))
        return 0
    code = installer.run(commands, lambda line: click.echo(line, err=True))
    if code:
        return code
    bad = 0
    for name, wanted, got in installer.verify(res, target):
        ok = installer.matches(wanted, got)
        bad += not ok
        click.echo(f"{'installed' if ok else 'MISMATCH '} {name} {got or 'missing'}" + ("" if ok else f" (wanted {wanted})"))
    return 1 if bad else 0


@main.command("gpus")
@click.argument("pattern", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list.")
def gpus_command(pattern: Optional[str], as_json: bool):
    """List the GPUs cudafit knows (name as nvidia-smi prints it, compute capability, architecture,
    memory); PATTERN: a case-insensitive substring or a glob ('*RTX 30*'). Exit 1 when none match."""
    from cudafit.gpus import gpu_row, match_gpus

    matrices = _load()
    rows = []
    for model in match_gpus(matrices.gpus, pattern):
        arch = matrices.architecture(model.compute_capability)
        rows.append(gpu_row(model, arch.name if arch else None))
    if as_json:
        click.echo(json.dumps(rows, indent=2))
    elif rows:
        width = max(len(str(r["name"])) for r in rows)
        for r in rows:
            memory = f"{r['memory_gb']:g} GB" if r["memory_gb"] else ""
            click.echo(f"{r['name']:<{width}}  {r['compute_capability']:>5}  {r['architecture'] or 'unknown':<12}  {memory}".rstrip())
    if not rows:
        click.echo(f"cudafit: no known GPU matches {pattern!r}; `cudafit gpus` lists them all", err=True)
        return 1
    return 0


@main.group()
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
    click.echo(f"{folder or data_dir()}: ok (data of {m.data_date}): {len(m.toolkits)} CUDA toolkits, "
               f"{len(set(m.gpus.values()))} GPUs, releases: {releases}")
    return 0


@data.command("coverage")
@click.option("--dir", "folder", type=click.Path(file_okay=False, exists=True, path_type=Path), help="A matrices folder (default: the embedded one).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--framework", "frameworks", multiple=True, type=click.Choice(["torch", "tensorflow", "jax", "onnxruntime-gpu"]),
              help="Only this framework (repeatable).")
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


if __name__ == "__main__":  # pragma: no cover
    main()
