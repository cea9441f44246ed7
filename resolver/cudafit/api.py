"""cudafit as a library: the same answers as the command line, as values.

Nothing here imports click, reaches the network, changes os.environ or prints. Inputs that cannot
be a machine or a spec raise InputError (its `field` names the argument); a request that no build
satisfies raises NoSolution (its `causes` say why, as values). The records are in api_records."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional, Union, cast

from cudafit import answers, records
from cudafit.api_records import Environment, Finding, InstalledBuild, Installer, Machine, NoSolution, Plan, Report, Severity
from cudafit.errors import InputError

__all__ = ["NoSolution", "Plan", "check_paths", "describe", "detect", "diagnose", "inspect", "install", "resolve"]


_LOADED: dict[tuple[Optional[str], Optional[Path]], records.Matrices] = {}


def _matrices() -> records.Matrices:
    """The data, read once per process and data source: a launcher asks many times, and the
    loader's own checks (its on-disk cache's key) cost more than a solve. An installed update, a
    rollback or CUDAFIT_DATA_DIR names another source, and that is read anew."""
    from cudafit import datahome
    from cudafit.loader import load

    key = (os.environ.get("CUDAFIT_DATA_DIR"), datahome.current_root())
    if key not in _LOADED:
        _LOADED.clear()
        _LOADED[key] = load()
    return _LOADED[key]


def describe(
    *,
    os: Optional[str] = None,
    arch: Optional[str] = None,
    python: Optional[str] = None,
    driver: Optional[str] = None,
    gpus: Sequence[str] = (),
    compute_capability: Union[str, Sequence[str], None] = None,
    jetson: bool = False,
    macos: Optional[str] = None,
    wsl: bool = False,
    gfx: Union[str, Sequence[str], None] = None,
    jetpack: Optional[str] = None,
    rocm: Optional[str] = None,
) -> Machine:
    """A machine described, as the CLI's --os/--arch/--python/--driver/--gpu/--compute-capability/
    --jetson/--jetpack/--macos/--gfx/--rocm describe one (`gpus` takes AMD and Intel names too; `gfx` AMD LLVM
    targets). The GPU side is never read from this machine: a driver left out is unknown (answers
    go per driver floor), `driver="none"` means no NVIDIA driver; only AMD or Intel GPUs described
    mean no NVIDIA driver. os, arch and python left out are this machine's, as on the command line."""
    from cudafit import detection
    from cudafit.machine import MachineOptions, build_machine

    for name, value in (("os", os), ("arch", arch), ("python", python), ("driver", driver), ("macos", macos), ("jetpack", jetpack), ("rocm", rocm)):
        _text_or_none(name, value)
    gpus = _texts("gpus", gpus)
    ccs = _texts("compute_capability", compute_capability)
    targets = _texts("gfx", gfx)
    if wsl:
        if os not in (None, "linux", "wsl"):
            raise InputError("WSL runs Linux under Windows", field="wsl", value=True, others=(("os", os),))
        os = "wsl"
    opts = MachineOptions(
        driver=driver,
        gpus=tuple(gpus),
        compute_capabilities=ccs,
        os=os,
        arch=arch,
        python=python,
        jetson=jetson,
        macos=macos,
        gfx=targets,
        jetpack=jetpack,
        rocm=rocm,
    )

    def unknown(*_args: object, **_kwargs: object) -> detection.DriverReading:
        return detection.DriverReading(None, False, (), False, None, (answers.DRIVER_NOT_GIVEN, answers.GPU_NOT_GIVEN))

    machine = build_machine(opts, _matrices(), reader=unknown)
    if not opts.describes_gpus and machine.os != "macos":
        machine = machine._replace(detected=False, jetson=jetson)
    return Machine.from_record(machine)


def _text_or_none(field: str, value: object) -> None:
    # a version given as a number is ambiguous (3.10 is the float 3.1): the API takes text
    if value is not None and not isinstance(value, str):
        raise InputError(f"expected text (a str) or None, got {type(value).__name__}", field=field, value=value)


def _texts(field: str, value: object) -> tuple[str, ...]:
    """One text or a sequence of them (None: none)."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise InputError("expected a str or a list of str", field=field, value=value)
    return tuple(value)


def detect() -> Machine:
    """This machine, as `cudafit detect` reads it (nvidia-smi and the driver's own files; no
    framework imported)."""
    from cudafit.machine import MachineOptions, build_machine

    return Machine.from_record(build_machine(MachineOptions(), _matrices()))


def _solve(specs: Sequence[str], machine: Optional[Machine], policy: records.Policy) -> answers.Resolution:
    from cudafit import staleness
    from cudafit.resolution import for_the_machine
    from cudafit.resolution import resolve as solve

    texts = _texts("spec", specs)
    if machine is not None and not isinstance(machine, Machine):
        raise InputError("expected a cudafit.Machine (from describe() or detect()) or None", field="machine", value=machine)
    matrices = _matrices()
    record = (machine or detect()).to_record()
    return for_the_machine(staleness.with_note(solve(list(texts), record, matrices, policy), matrices.data_date), matrices)


def resolve(
    specs: Sequence[str] = ("torch",), machine: Optional[Machine] = None, *, cpu: bool = False, strict_driver: bool = False, mixed_cuda: bool = False
) -> Plan:
    """The newest consistent set of builds for `specs` (PEP 508 requirements on frameworks:
    "torch>=2.4", "torchvision", "jax[cuda12]") that runs on `machine` (default: this one, detected)."""
    policy = records.Policy(strict_driver=strict_driver, cpu=cpu, mixed_cuda=mixed_cuda)
    res = _solve(specs, machine, policy)
    if not res.ok:
        raise NoSolution(res)
    return Plan.from_resolution(res, (tuple(_texts("spec", specs)), policy))


def _installed(b: Any) -> InstalledBuild:
    return InstalledBuild(family=b.family, dist=b.dist, version=b.version, kind=b.kind, cuda=b.cuda, cudnn=b.cudnn)


def _read_environment(env: Union[str, Path, None]) -> Any:
    from cudafit.doctor.environment import read_target
    from cudafit.installer import find_target

    target = find_target(None if env is None else str(env))
    return read_target(target.python, target.prefix)


def inspect(env: Union[str, Path, None] = None) -> Environment:
    """What an environment holds (`env`: its folder or its Python; default: the active one): the
    framework builds and libraries, read from their files without importing them."""
    e = _read_environment(env)
    return Environment(
        prefix=str(e.prefix),
        python=e.python,
        builds=tuple(_installed(b) for b in e.builds),
        libraries=tuple(_installed(b) for b in e.libraries),
        distributions={name: d.version for name, d in sorted(e.distributions.items())},
        problems=e.problems,
    )


def diagnose(env: Union[str, Path, None] = None, machine: Optional[Machine] = None) -> Report:
    """`cudafit doctor`'s findings for an environment on a machine (default: this one, detected;
    the environment's own Python is the one judged)."""
    from cudafit.doctor.runner import diagnose as run_doctor
    from cudafit.doctor.runner import read_driver
    from cudafit.machine import MachineOptions, build_machine
    from cudafit.toolkits import find_toolkits

    if machine is not None and not isinstance(machine, Machine):
        raise InputError("expected a cudafit.Machine (from describe() or detect()) or None", field="machine", value=machine)
    matrices = _matrices()
    environment = _read_environment(env)
    if machine is None:
        record = build_machine(MachineOptions(python=environment.python), matrices, reader=read_driver)
    else:
        record = machine.to_record()._replace(python=environment.python or machine.python)
    report = run_doctor(environment, record, matrices, environ=dict(os.environ), toolkits=find_toolkits(os.environ))
    findings = tuple(Finding(code=f.code, severity=cast(Severity, f.severity), message=f.message, fix=f.fix, commands=f.commands) for f in report.findings)
    repaired = report.repair.solve()[0] if report.repair is not None and any(f.commands for f in report.findings) else None
    fix = Plan.from_resolution(repaired) if repaired is not None else None
    return Report(ok=report.ok, findings=findings, machine=Machine.from_record(report.machine), fix=fix)


def check_paths(
    paths: Union[str, Path, Sequence[Union[str, Path]]],
    *,
    targets: Sequence[Machine] = (),
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    strict: bool = False,
) -> Report:
    """`cudafit check`'s findings for dependency files or folders, offline (`targets`: machines
    the files must run on, as [tool.cudafit] targets; `strict`: what cudafit cannot check fails too)."""
    from cudafit.check import output
    from cudafit.check.rules import BY_CODE, Target
    from cudafit.check.runner import Settings
    from cudafit.check.runner import check_paths as run_check

    for field, codes in (("select", select), ("ignore", ignore)):
        unknown = [c for c in _texts(field, codes) if not any(code.startswith(c.upper()) for code in BY_CODE)]
        if unknown:
            raise InputError(f"unknown rule code {', '.join(unknown)} (the codes are in cudafit check --list-rules)", field=field, value=unknown)
    if any(not isinstance(m, Machine) for m in targets):
        raise InputError("expected cudafit.Machine records (from describe())", field="targets", value=targets)
    chosen: list[Union[str, Path]] = [paths] if isinstance(paths, (str, Path)) else list(paths)  # one path, not its characters
    selected, ignored = (tuple(c.upper() for c in _texts(f, v)) for f, v in (("select", select), ("ignore", ignore)))
    settings = Settings(select=selected, ignore=ignored, fail_on="note" if strict else "warning")
    described = tuple(Target(f"target {i}", m.to_record()) for i, m in enumerate(targets, 1))
    report = run_check([Path(p) for p in chosen], _matrices(), settings, described)
    findings = tuple(
        Finding(
            code=f.code,
            severity=cast(Severity, f.severity),
            message=f.message,
            fix=f.fix,
            path=f.path,
            line=f.line,
            col=f.col,
            environments=f.environments,
        )
        for f in report.findings
    )
    return Report(ok=not output.fails(report.findings, settings.fail_on) and not report.errors, findings=findings, errors=report.errors, files=report.files)


def install(
    plan: Plan, env: Union[str, Path, None] = None, *, dry_run: bool = False, installer: Optional[Installer] = None, constrain: bool = False
) -> list[list[str]]:
    """Install a plan into an environment (its folder or its Python; default: the active one) with
    uv where present, else pip (`installer` to choose; conda: the set's conda route, then pip).
    Returns the commands, run in order (with `dry_run`, only returned). Raises InstallFailed
    (`.argv`, `.code`) when a command fails; the installers' own output goes to this process's
    stdout and stderr. With `constrain`, the set's constraints file is written into the
    environment afterwards (cudafit-constraints.txt; `plan.render("constraints")` is its text)."""
    from cudafit.installer import find_target, hold, run
    from cudafit.installer import plan as install_plan

    if not isinstance(plan, Plan):
        raise InputError("expected a cudafit.Plan (from resolve())", field="plan", value=plan)
    if installer not in (None, "pip", "uv", "conda"):
        raise InputError("expected pip, uv, conda or None", field="installer", value=installer)
    target = find_target(None if env is None else str(env))
    try:
        argvs = install_plan(plan._resolution, target, conda=installer == "conda", dry_run=dry_run, installer=installer if installer in ("pip", "uv") else None)
    except InputError as exc:
        if exc.field != "format":
            raise
        # the command line chooses the installer with --format; here it is `installer`
        raise InputError(exc.reason, field="installer", value=exc.value) from None
    if not dry_run:
        run(argvs)
        if constrain:
            hold(plan._resolution, target)
    return argvs
