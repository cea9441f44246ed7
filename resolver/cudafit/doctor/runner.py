"""Run every check over an environment on a machine, and say the result as text or JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping, NamedTuple, Optional

from cudafit import detection as detect
from cudafit.doctor import libraries
from cudafit.doctor.checks import CHECKS
from cudafit.doctor.context import Context
from cudafit.doctor.fixes import Repair
from cudafit.doctor.gpu_checks import lists_no_gpu
from cudafit.doctor.model import Environment, Finding, InstalledBuild
from cudafit.kernel_words import kernels_json, kernels_text
from cudafit.records import SCHEMA_VERSION, Machine, Matrices
from cudafit.toolkits import ToolkitInstall

WSL_DRIVER = Path("/usr/lib/wsl/lib/libcuda.so.1")


class Report(NamedTuple):
    machine: Machine
    env: Environment
    findings: tuple[Finding, ...]
    repair: Optional[Repair] = None  # the set that fixes the environment, solved when a finding asks for it
    observed: tuple = ()  # probe.Observed, with --import
    kernels: tuple = ()  # kernel_fit.Fit per GPU and feature for the installed versions

    @property
    def ok(self) -> bool:
        return not any(f.severity == "error" for f in self.findings)


def diagnose(
    env: Environment,
    machine: Machine,
    matrices: Matrices,
    *,
    environ: Mapping[str, str],
    toolkits: list[ToolkitInstall],
    run: Optional[detect.Runner] = None,
    exists: Callable[[Path], bool] = Path.is_file,
) -> Report:
    run = run or detect.run_command
    loads = []
    if machine.os in ("linux", "wsl") and any(b.libraries for b in env.builds):
        cache_text = run(["ldconfig", "-p"], detect.TIMEOUT_S)
        if cache_text.returncode != 0:
            cache_text = run(["/sbin/ldconfig", "-p"], detect.TIMEOUT_S)
        cache = libraries.ld_cache(cache_text.stdout if cache_text.returncode == 0 else "", machine.arch or "")
        wheel_dirs = libraries.wheel_library_dirs(env.site_packages)
        for build in env.builds:
            for lib in build.libraries:
                report = libraries.check_loading(lib, ld_library_path=environ.get("LD_LIBRARY_PATH", ""), cache=cache, wheel_dirs=wheel_dirs, exists=exists)
                loads.append((build, report))
    ctx = Context(
        machine=machine,
        env=env,
        matrices=matrices,
        environ=environ,
        toolkits=tuple(toolkits),
        loads=tuple(loads),
        repair=Repair(env, machine, matrices),
        wsl_driver=machine.os != "wsl" or exists(Path(WSL_DRIVER)),
    )
    found: list[Finding] = []
    for check in CHECKS:
        for item in check(ctx):
            if item not in found:
                found.append(item)
    return Report(machine, env, tuple(found), repair=ctx.repair, kernels=_kernels(env, machine, matrices))


def _kernels(env: Environment, machine: Machine, matrices: Matrices) -> tuple:
    """What each GPU gets with the installed GPU builds' versions (their public part). On a GPU
    an installed CUDA build has no kernels for (DR021's rule, judged per GPU: the build's own SASS
    and PTX where read, else the data's, against the GPU's compute capability) none of its features
    are said, nor those of the libraries built against it where it is torch: only that it does not
    run there."""
    from packaging.version import InvalidVersion, Version

    from cudafit import rules
    from cudafit.doctor.context import cuda_of, data_build
    from cudafit.kernel_fit import cannot_run, fit

    versions = {}
    for b in (*env.builds, *env.libraries):
        if b.kind in ("cuda", "unknown"):
            try:
                versions[b.family] = Version(Version(b.version).public)
            except InvalidVersion:
                continue
    if not versions:
        return ()
    fits = fit(machine.gpus, versions, matrices.kernels)
    ctx = Context(machine=machine, env=env, matrices=matrices, environ={}, toolkits=(), loads=(), repair=Repair(env, machine, matrices))
    for build in env.builds:
        cuda = cuda_of(ctx, build) if build.kind == "cuda" and build.family in versions else None
        if cuda is None:
            continue
        known = data_build(ctx, build)
        sass, ptx = (build.sass, build.ptx) if build.sass is not None else ((known.sass, known.ptx) if known is not None else (None, None))
        for gpu in machine.gpus:
            cc = gpu.compute_capability
            if gpu.vendor != "nvidia" or cc is None or rules.check_arch(matrices, machine._replace(gpus=(gpu,)), cuda, sass, ptx)[0].ok:
                continue
            fits = cannot_run(fits, gpu, build.family, str(versions[build.family]), f"{build.label} has no kernels for sm_{cc[0]}{cc[1]}")
            # the libraries built against torch run on its kernels
            for lib in env.libraries if build.family == "torch" else ():
                if lib.family in versions:
                    fits = cannot_run(fits, gpu, lib.family, str(versions[lib.family]), f"it runs on {build.label}, which does not")
    return tuple(fits)


def confirm(report: Report, timeout: float, run: Optional[detect.Runner] = None) -> Report:
    """Import the frameworks (--import) and set what they showed beside the prediction."""
    from cudafit.doctor import probe

    observed, error = probe.run_probe(report.env, timeout, run)
    if error:
        return report._replace(findings=report.findings + (Finding("DR081", "warning", error),))
    observed, disagreements = probe.compare(observed, report.findings, report.env)
    return report._replace(findings=report.findings + tuple(disagreements), observed=tuple(observed))


def build_line(build: InstalledBuild) -> str:
    what = {"cuda": f"CUDA {build.cuda or 'unknown'} build", "cpu": "CPU-only build", "rocm": "ROCm build", "python": "no compiled code"}.get(
        build.kind, "build not identified"
    )
    return (
        f"{build.label}: {what}" + (f", cuDNN {build.cudnn}" if build.cudnn else "") + (f", built against torch {build.built_for}" if build.built_for else "")
    )


def read_driver(os_name: str, **options: Any) -> detect.DriverReading:
    """nvidia-smi as doctor reads it: output that does not parse is a fact about the driver (DR002),
    where detect and resolve take it as an input error (exit 2)."""
    return detect.read_driver(os_name, strict=False, **options)


def machine_line(machine: Machine) -> str:
    from cudafit.report import describe

    said = describe(machine)
    if lists_no_gpu(machine):
        # "No devices were found" is the driver's own answer (NVML started), without its version:
        # not a driver that did not answer, as a version left unknown reads elsewhere.
        said = said.replace("driver did not answer", "driver loaded (version not reported)") + ", no GPU"
    return said


def report_text(report: Report) -> str:
    env = report.env
    lines = [f"machine: {machine_line(report.machine)}", f"environment: {env.prefix} (Python {env.python or 'unknown'})"]
    lines += [f"  {build_line(b)}" for b in (*env.builds, *env.libraries)] or ["  no PyTorch, TensorFlow, JAX or ONNX Runtime installed"]
    # what reading the machine showed (an NVIDIA GPU on the bus with no driver, no /dev/kfd) is said
    # even where no installed build makes it a finding
    said = {f.message for f in report.findings}
    lines += [f"note: {w}" for w in report.machine.warnings if w not in said]
    lines += kernels_text(report.kernels)
    for f in report.findings:
        lines.append("")
        lines.append(f"{f.code} {f.severity}: {f.message}")
        if f.fix:
            lines.append(f"  fix: {f.fix}")
        lines += [f"    {c}" for c in f.commands]
    if report.observed:
        lines.append("")
        for seen in report.observed:
            predicted = "uses the GPU" if seen.predicted else "does not use the GPU"
            lines.append(f"imported {seen.family}: {seen.said} (predicted: {predicted})")
    errors = sum(f.severity == "error" for f in report.findings)
    warnings = len(report.findings) - errors
    lines.append("")
    if not report.findings:
        lines.append("No problems found.")
    else:
        lines.append(f"Found {errors} error{'s' * (errors != 1)} and {warnings} warning{'s' * (warnings != 1)}.")
    return "\n".join(lines)


def report_json(report: Report, machine_json: Optional[dict] = None) -> dict:
    env = report.env
    return {
        "schema_version": SCHEMA_VERSION,
        "ok": report.ok,
        "machine": machine_json or {},
        "environment": {
            "prefix": str(env.prefix),
            "python": env.python,
            "frameworks": [
                {"name": b.dist, "version": b.version, "kind": b.kind, "cuda": b.cuda, "cudnn": b.cudnn, "read_from": b.read_from} for b in env.builds
            ],
            "libraries": [
                {"name": b.dist, "version": b.version, "kind": b.kind, "cuda": b.cuda, "built_for": b.built_for or None, "read_from": b.read_from}
                for b in env.libraries
            ],
        },
        "findings": [{"code": f.code, "severity": f.severity, "message": f.message, "fix": f.fix, "commands": list(f.commands)} for f in report.findings],
        **({"kernels": kernels_json(report.kernels)} if report.kernels else {}),
        **(
            {"imported": [{"framework": o.family, "gpu": o.gpu, "predicted_gpu": o.predicted, "seen": o.raw} for o in report.observed]}
            if report.observed
            else {}
        ),
    }
