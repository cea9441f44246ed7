"""`cudafit fleet resolve`: one answer for a cluster's inventory."""

from __future__ import annotations

import json
import sys
from types import ModuleType
from typing import IO, TYPE_CHECKING, Optional

import click

from cudafit.cli.options import InventoryFlags, inventory_options, load_matrices, policy_options
from cudafit.emit import FORMATS
from cudafit.records import SCHEMA_VERSION

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from cudafit.fleet.classes import NodeClass
    from cudafit.fleet.node import Node, Options
    from cudafit.records import Matrices, Policy


@click.group()
def fleet() -> None:
    """One answer for a cluster: the set that runs on every node class, and what holds it back."""


@fleet.command("resolve")
@click.argument("specs", nargs=-1)
@click.option(
    "--inventory",
    "inventory",
    required=True,
    metavar="FILE|-",
    help="cudafit JSON, `kubectl get nodes -o json`, NDJSON, or Slurm `scontrol show nodes` output (its default form, -o or --json).",
)
@click.option("--python", "python", metavar="X.Y", help="The Python of the environment the nodes run (default: this one).")
@inventory_options
@click.option("--allow-partial", is_flag=True, help="Exit 0 with an answer that leaves out GPU nodes it could not place (they are still listed).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option(
    "--format", "fmt", type=click.Choice(list(FORMATS)), help="Print the fleet's answer in this install form (uv-project: one pyproject for every platform)."
)
@click.option("-o", "--output", type=click.Path(allow_dash=True), help="Write the --format output to FILE (uv-project merges into an existing pyproject.toml).")
@click.option("--name", "env_name", default="cudafit", show_default=True, help="Environment/project name for conda and uv-project output.")
@policy_options
def fleet_resolve(
    specs: tuple[str, ...],
    inventory: str,
    python: Optional[str],
    inventory_flags: InventoryFlags,
    allow_partial: bool,
    as_json: bool,
    fmt: Optional[str],
    output: Optional[str],
    env_name: str,
    policy: Policy,
) -> int:
    """The best set for SPEC... (default: torch) that runs on every node class of the inventory."""
    from cudafit.fleet import inventory as inv
    from cudafit.fleet.classes import group
    from cudafit.fleet.report import accepted, fleet_json, fleet_text
    from cudafit.fleet.solve import solve_fleet
    from cudafit.machine_input import check_python

    matrices = load_matrices()
    options = reading_options(inventory_flags, matrices)
    checked: Optional[str] = check_python(python, matrices) if python else None
    classes = _classes(inventory, options, inv, group, matrices)
    if not classes:
        raise click.BadParameter(f"{inventory}: no nodes", param_hint="'--inventory'")
    answer = solve_fleet(list(specs) or ["torch"], classes, matrices, policy, checked)
    if fmt is not None:
        from cudafit import fileio
        from cudafit.fleet.project import write

        if as_json:
            raise click.UsageError("--format and --json are two different outputs; give one of them")
        if answer.ok and not accepted(answer, allow_partial):
            # A file that installs on some nodes only is written when asked for, never by default.
            left = sum(a.cls.nodes for a in answer.left_out)
            click.echo(f"cudafit: error: {left} GPU node(s) could not be placed (--json says why); --allow-partial writes the answer for the others", err=True)
            return 1
        from cudafit.errors import InputError
        from cudafit.fleet.project import answers_to_write

        try:
            answers_to_write(answer)
        except InputError as none:  # no set runs: the answer is "none" (exit 1), not bad input
            click.echo(f"cudafit: error: {none.reason}", err=True)
            return 1
        target = None if output in (None, "-") else output
        if target is not None:
            fileio.check_output(target)
        try:
            text = write(fmt, answer, fileio.read_existing(target) if target and fmt == "uv-project" else None, env_name)
        except InputError as err:
            if err.field == "existing" and target is not None:  # the file -o names is the one to merge into
                raise InputError(err.reason, path=target) from None
            raise
        if target is None:
            click.echo(text, nl=False)
        else:
            fileio.write_output(target, text)
            click.echo(f"wrote {target}", err=True)
        return 0
    if output is not None:
        raise click.UsageError("-o/--output writes the --format output; give --format")
    if as_json:
        click.echo(json.dumps(fleet_json(answer, allow_partial), indent=2))
    else:
        click.echo(fleet_text(answer, allow_partial), nl=False)
    return 0 if accepted(answer, allow_partial) else 1


def reading_options(flags: InventoryFlags, matrices: Matrices) -> Options:
    """The inventory reader's options from the flags, each checked as the flag it came from."""
    from cudafit.fleet.node import Options, driver_problem
    from cudafit.gpus import lookup_gpu

    mapping = {}
    for item in flags.gres_map:
        kind, sep, name = item.partition("=")
        if not sep or not kind or not name:
            raise click.BadParameter(f"{item!r}: expected TYPE=GPU NAME", param_hint="'--gres-map'")
        mapping[kind] = name
    if flags.driver_feature is not None:
        import re

        try:
            groups = re.compile(flags.driver_feature).groups
        except re.error as exc:
            raise click.BadParameter(f"{flags.driver_feature!r}: not a regular expression ({exc})", param_hint="'--driver-feature'") from None
        if groups != 1:
            problem = f"{flags.driver_feature!r}: needs exactly one group around the driver, like 'nvdriver_(.+)'"
            raise click.BadParameter(problem, param_hint="'--driver-feature'")
    for kind, name in mapping.items():
        # A name the user gave is checked as --gpu checks it: an unknown one is bad input, not a
        # node left out (the answer would be partial for a typo).
        if lookup_gpu(matrices.gpus, name)[0] is None:
            from cudafit.machine_input import unknown_gpu

            raise click.BadParameter(f"{kind}={name!r}: " + unknown_gpu(name, matrices).reason, param_hint="'--gres-map'")
    if flags.default_driver is not None:
        from cudafit.errors import InputError
        from cudafit.machine_input import check_driver, parse_driver

        if driver_problem(flags.default_driver, "value"):
            raise click.BadParameter(str(driver_problem(flags.default_driver, "value")), param_hint="'--default-driver'")
        try:
            check_driver(parse_driver(flags.default_driver) or "", "linux", matrices)
        except InputError as exc:
            raise click.BadParameter(exc.reason, param_hint="'--default-driver'") from None
    return Options(
        pool_label=flags.pool_label, gres_map=mapping, driver_feature=flags.driver_feature, default_driver=flags.default_driver, gpu_table=matrices.gpus
    )


def _classes(path: str, options: Options, inv: ModuleType, group: Callable[[Iterable[Node]], list[NodeClass]], matrices: Matrices) -> list[NodeClass]:
    """The node classes of the inventory; nodes are grouped as they are read (an NDJSON stream
    never sits in memory whole). A pyproject's targets are checked as `cudafit check` reads them."""
    from cudafit.errors import InputError
    from cudafit.fleet import targets

    def classes(stream: IO[bytes], label: str) -> list[NodeClass]:
        head = stream.peek(256)[:256] if hasattr(stream, "peek") else b""
        if targets.looks_like_toml(head, label):
            return group(targets.nodes(stream.read(), label, matrices))
        return group(inv.read(stream, label, options))

    if path == "-":
        return classes(sys.stdin.buffer, "<stdin>")
    try:
        with open(path, "rb") as fh:
            return classes(fh, path)
    except IsADirectoryError:
        raise InputError(f"--inventory {path}: a folder; give the inventory file") from None
    except OSError as exc:
        raise InputError(f"--inventory {path}: {exc.strerror}") from None


@fleet.command("doctor")
@click.option("--slurm", "partition", metavar="PARTITION", help="Run the doctor on every node of this Slurm partition (one srun).")
@click.option("--kubernetes", "selector", metavar="SELECTOR", help="Run the doctor on one node of each class among the nodes this label selector picks.")
@click.option("--image", metavar="IMAGE", help="With --kubernetes: a container image with cudafit and the environment to check.")
@click.option("--import", "probe", is_flag=True, help="Also import each framework on the nodes (cudafit doctor --import).")
@click.option("--timeout", default=600, show_default=True, type=click.IntRange(1, 86400), help="Seconds to wait for the cluster.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def fleet_doctor(partition: Optional[str], selector: Optional[str], image: Optional[str], probe: bool, timeout: int, as_json: bool) -> int:
    """Diagnose a cluster: `cudafit doctor --json` on its nodes, findings gathered per node class."""
    from cudafit.fleet import doctor

    if bool(partition) == bool(selector):
        raise click.UsageError("give one of --slurm PARTITION or --kubernetes SELECTOR")
    if selector and not image:
        raise click.UsageError("--kubernetes needs --image: the image the doctor runs in on each node")
    if partition and image:
        raise click.UsageError("--image is for --kubernetes; on Slurm the doctor runs as installed on the nodes")
    args = ["--import"] if probe else []
    if partition:
        reports = doctor.slurm(partition, args, timeout=timeout)
    else:
        assert selector is not None and image is not None  # --kubernetes SELECTOR with its --image, checked above
        reports = doctor.kubernetes(selector, image, _samples(selector, timeout), args, timeout=timeout)
    classes, missing = doctor.aggregate(reports)
    ok = not missing and all(c.ok for c in classes)
    if as_json:
        out = {
            "schema_version": SCHEMA_VERSION,
            "ok": ok,
            "classes": [{"key": c.key, "count": c.size, "sample_nodes": c.nodes[:3], "ok": c.ok, "findings": c.findings} for c in classes],
            "unreachable": [{"node": r.node, "error": r.error} for r in missing],
        }
        click.echo(json.dumps(out, indent=2))
        return 0 if ok else 1
    shown = f", {len(missing)} did not" if missing else ""
    click.echo(f"fleet doctor: {sum(c.size for c in classes)} node(s) reported in {len(classes)} class(es){shown}")
    for c in classes:
        click.echo(f"{c.key}: {c.size} node(s), e.g. {', '.join(c.nodes[:3])}: {'ok' if c.ok else 'problems'}")
        for f in c.findings:
            names = ", ".join(f["node_names"]) + (" ..." if f["nodes"] > len(f["node_names"]) else "")
            click.echo(f"  {f['code']} {f['severity']} ({f['nodes']} node(s): {names}): {f['message']}")
            if f.get("fix"):
                click.echo(f"      fix: {f['fix']}")
            for command in f.get("commands") or []:
                click.echo(f"        {command}")
    for r in missing:
        click.echo(f"no report from {r.node}: {r.error}")
    return 0 if ok else 1


def _samples(selector: str, timeout: int) -> dict[str, tuple[str, int]]:
    """A node of each class among the nodes `selector` picks, from their GFD labels."""
    import io

    from cudafit.errors import InputError
    from cudafit.fleet import doctor, inventory
    from cudafit.fleet.classes import group

    code, out, err = doctor.run(["kubectl", "get", "nodes", "-l", selector, "-o", "json"], timeout)
    if code != 0:
        raise InputError(f"kubectl get nodes -l {selector}: {(err or out).strip().splitlines()[-1] if (err or out).strip() else f'exit {code}'}")
    classes = group(inventory.read(io.BytesIO(out.encode()), f"kubectl get nodes -l {selector}"))
    samples = {c.key: (c.samples[0], c.nodes) for c in classes if c.samples and not c.problem}
    if not samples:
        raise InputError(f"no GPU node matches the selector {selector!r}")
    return samples
