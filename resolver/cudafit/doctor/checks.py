"""What is wrong with an environment on a machine: one function per kind of problem, each reading
the Context and returning findings. Compatibility is never re-derived here: the driver floors and
kernel checks are cudafit.rules', the facts are the data's, and every fix that installs something
comes from the resolver (fixes.py)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping, NamedTuple, Optional

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from cudafit import detection as detect
from cudafit import rules
from cudafit.doctor.environment import requirements_for
from cudafit.doctor.fixes import ORT_GPU, Repair, gpu_here, machine_args
from cudafit.doctor.libraries import DRIVER_LIBRARY, LoadReport
from cudafit.doctor.model import Environment, Finding, InstalledBuild
from cudafit.records import Build, LibraryRelease, Machine, Matrices
from cudafit.toolkits import ToolkitInstall, extension_toolkit

if TYPE_CHECKING:
    from packaging.specifiers import SpecifierSet

CODES = {
    "DR001": "no NVIDIA driver",
    "DR002": "the driver does not answer",
    "DR003": "no GPU visible",
    "DR004": "CUDA_VISIBLE_DEVICES hides every GPU",
    "DR010": "a CPU-only build on a machine with an NVIDIA GPU",
    "DR011": "TensorFlow without its CUDA libraries",
    "DR020": "a build whose CUDA needs a newer driver",
    "DR021": "a build without kernels for the GPU",
    "DR022": "a build whose GPU architectures are unknown",
    "DR030": "frameworks on different CUDA or cuDNN majors",
    "DR031": "nvidia-* wheels that do not satisfy a framework",
    "DR032": "onnxruntime and onnxruntime-gpu in one environment",
    "DR033": "a library built against another torch or CUDA than the one installed",
    "DR040": "CUDA_HOME, nvcc and LD_LIBRARY_PATH name different toolkits",
    "DR041": "LD_LIBRARY_PATH shadows a framework's CUDA libraries",
    "DR042": "the toolkit that builds extensions does not match torch's CUDA",
    "DR050": "a CUDA library that will not load",
    "DR060": "TensorFlow GPU on native Windows after 2.10",
    "DR061": "JAX GPU on native Windows",
    "DR062": "WSL without the WSL driver library",
    "DR063": "server (SBSA) builds on a Jetson board",
    "DR064": "a driver older than the GPU",
    "DR070": "a framework installed for another Python",
    "DR071": "a Python the framework release has no build for",
    "DR080": "--import saw something else than doctor predicted",
    "DR081": "--import could not run",
    "DR082": "a framework that fails to import",
    "DR090": "part of the environment could not be read",
}


class Context(NamedTuple):
    machine: Machine
    env: Environment
    matrices: Matrices
    environ: Mapping[str, str]
    toolkits: tuple[ToolkitInstall, ...]
    loads: tuple[tuple[InstalledBuild, LoadReport], ...]
    repair: Repair
    wsl_driver: bool = True  # /usr/lib/wsl/lib/libcuda.so.1 is there (WSL only)


def finding(code: str, message: str, fix: str = "", commands: tuple[str, ...] = (), severity: str = "error") -> Finding:
    assert code in CODES, code  # every code is listed (and documented in the README table)
    return Finding(code, severity, message, fix, commands)


def _gpus(ctx: Context) -> str:
    return ", ".join(rules.gpu_label(g) for g in ctx.machine.gpus) or "this machine's GPU"


def _cuda_builds(ctx: Context) -> list[InstalledBuild]:
    return [b for b in ctx.env.builds if b.kind == "cuda"]


def data_build(ctx: Context, build: InstalledBuild) -> Optional[Build]:
    """The data's record of an installed build: its release, then the build of that kind (and tag,
    or CUDA major) on this platform."""
    from cudafit.frameworks import release_of

    try:
        version = Version(build.version)
    except InvalidVersion:
        return None
    release = release_of(build.family, Version(version.public), ctx.matrices)
    if release is None:
        return None
    platform = ctx.machine.platform
    builds = [b for b in release.builds if b.kind == build.kind and (platform is None or platform in b.platforms)]
    if build.family == "torch":
        tag = version.local or (f"cu{build.cuda.replace('.', '')}" if build.cuda else None)
        return next((b for b in builds if b.tag == tag), None)
    if build.cuda:
        major = build.cuda.split(".")[0]
        builds = [b for b in builds if b.cuda is not None and str(b.cuda.major) == major]
    # PyPI's own build first: that is what pip installed.
    return next((b for b in builds if not b.index_url), builds[0] if builds else None)


def cuda_of(ctx: Context, build: InstalledBuild) -> Optional[Version]:
    """The CUDA a build was made with: its own files' word, else the data's for that build."""
    if build.cuda and "." in build.cuda:
        return Version(build.cuda)
    known = data_build(ctx, build)
    return known.cuda if known is not None else None


def cuda_major(ctx: Context, build: InstalledBuild) -> Optional[str]:
    """The CUDA major of a build: its files', else the data's CUDA, else the data's flavour (cu12)."""
    if build.cuda:
        return build.cuda.split(".")[0]
    known = data_build(ctx, build)
    if known is None:
        return None
    if known.cuda is not None:
        return str(known.cuda.major)
    match = re.fullmatch(r"cu(\d+)", known.tag)
    return match.group(1) if match and len(match.group(1)) <= 2 else None


# --- 1. the driver and the GPUs ---------------------------------------------------------------


def lists_no_gpu(m: Machine) -> bool:
    """nvidia-smi answered, and named no GPU ("No devices were found")."""
    return any("reports no NVIDIA GPU" in w for w in m.warnings)


def driver_and_gpus(ctx: Context) -> list[Finding]:
    m = ctx.machine
    if m.os == "macos":
        return []
    out = []
    cuda = _cuda_builds(ctx)
    names = ", ".join(b.label for b in cuda)
    no_gpu = lists_no_gpu(m)
    unreadable = next((w for w in m.warnings if w.startswith(detect.UNREADABLE)), None)
    if unreadable is not None:
        # Garbage where the driver's answer belongs is a fact about the driver (exit 1), the one
        # story doctor tells about it; detect and resolve refuse to answer from it (exit 2).
        out.append(
            finding(
                "DR002",
                f"The NVIDIA driver gives no usable answer: {unreadable.removesuffix('; GPUs unknown')}. "
                "Which GPU this is, and whether any framework can use it, is unknown until nvidia-smi reads cleanly.",
                "Run nvidia-smi yourself: errors in its fields (such as [Unknown Error]) mean a driver in a bad state, "
                "or an nvidia-smi of another driver install; reboot, and if that does not help, reinstall the NVIDIA driver.",
            )
        )
    elif no_gpu or (m.driver is not None and m.gpus_known and not m.gpus):
        out.append(
            finding(
                "DR003",
                f"The NVIDIA driver{' ' + m.driver if m.driver else ''} is loaded but nvidia-smi lists no GPU, so no framework can use one.",
                "Check that the GPU is seated and powered (lspci | grep -i nvidia), and, in a container, that it was started with GPUs (--gpus all).",
            )
        )
    elif m.detected and not m.driver_known or (m.detected and m.driver is not None and not m.gpus_known):
        said = "; ".join(w for w in m.warnings if "nvidia-smi" in w or "answer" in w) or "nvidia-smi did not answer"
        out.append(
            finding(
                "DR002",
                f"The NVIDIA driver does not answer ({said}), so no framework can use the GPU.",
                "Run nvidia-smi yourself; if it hangs or fails, reload the driver (a reboot does it) or reinstall it.",
            )
        )
    elif m.driver is None:
        if cuda:
            out.append(
                finding(
                    "DR001",
                    f"No NVIDIA driver is installed, so {names} cannot use a GPU.",
                    "Install the NVIDIA driver for your GPU (nvidia-smi must then list it), or use CPU builds.",
                )
            )
        elif m.gpus:
            out.append(finding("DR001", "No NVIDIA driver is installed.", "Install the NVIDIA driver for your GPU.", severity="warning"))
    hidden = ctx.environ.get("CUDA_VISIBLE_DEVICES")
    if hidden is not None and hidden.strip() in ("", "-1", "none", "NoDevFiles") and m.driver is not None:
        out.append(
            finding(
                "DR004",
                f"CUDA_VISIBLE_DEVICES={hidden!r} hides every GPU from CUDA programs.",
                "Unset it (unset CUDA_VISIBLE_DEVICES) or list the GPUs to use (CUDA_VISIBLE_DEVICES=0).",
                severity="warning",
            )
        )
    return out


# --- 2. CPU builds beside a GPU ---------------------------------------------------------------


def cpu_builds(ctx: Context) -> list[Finding]:
    m = ctx.machine
    if not gpu_here(m):
        return []
    out = []
    for build in ctx.env.builds:
        if build.kind != "cpu" or (build.family == "tensorflow" and _tf_windows_end(ctx) is not None and m.os == "windows"):
            continue
        if not ctx.repair.replaces(build):
            continue  # a CPU onnxruntime where no onnxruntime-gpu runs: the right package here
        same = ctx.repair.keeps(build.family)
        if build.family == ORT_GPU:
            message = f"{build.label} is ONNX Runtime's CPU-only package, so it will not use {_gpus(ctx)}."
            fix = "Remove it (onnxruntime-gpu, the CUDA build, installs the same onnxruntime module) and install " + (
                "onnxruntime-gpu of the same release:" if same else "the onnxruntime-gpu build that runs here:"
            )
        else:
            message = f"{build.label} is a CPU-only build, so it will not use {_gpus(ctx)}."
            fix = "Install the CUDA build of the same release:" if same else "Install a CUDA build that runs here:"
        out.append(finding("DR010", message, fix, ctx.repair.commands()))
    tf = next((b for b in ctx.env.builds if b.family == "tensorflow" and b.kind == "cuda"), None)
    if tf is not None and m.os in ("linux", "wsl"):
        known = data_build(ctx, tf)
        if known is not None and "and-cuda" in known.extras and "and-cuda" not in tf.extras_installed:
            out.append(
                finding(
                    "DR011",
                    f"{tf.label} is installed without its CUDA libraries (the [and-cuda] extra), so it lists no GPU.",
                    "Install them with TensorFlow:",
                    ctx.repair.commands(),
                )
            )
    return out


# --- 3, 4. driver floor and kernels ----------------------------------------------------------


def driver_floor(ctx: Context) -> list[Finding]:
    m = ctx.machine
    if m.driver is None or not m.driver_known:
        return []
    out = []
    for build in _cuda_builds(ctx):
        cuda = cuda_of(ctx, build)
        if cuda is None:
            continue
        verdict = rules.check_driver(ctx.matrices, m, cuda, strict=False)
        if verdict.ok:
            continue
        floor, _rule = rules.driver_floor(ctx.matrices, m, cuda, strict=False)
        out.append(
            finding(
                "DR020",
                f"{build.label} is built with CUDA {cuda}, which needs NVIDIA driver {floor or 'unknown'} or newer; this machine has {m.driver}. "
                "CUDA reports 'driver version is insufficient' and the GPU is not used.",
                f"Upgrade the driver to {floor} or newer, or install the newest build that driver {m.driver} runs:",
                ctx.repair.commands(),
            )
        )
    return out


def kernels(ctx: Context) -> list[Finding]:
    m = ctx.machine
    if not any(g.compute_capability for g in m.gpus):
        return []
    out = []
    for build in _cuda_builds(ctx):
        cuda = cuda_of(ctx, build)
        known = data_build(ctx, build)
        sass, ptx = (build.sass, build.ptx) if build.sass is not None else ((known.sass, known.ptx) if known is not None else (None, None))
        if cuda is None:
            continue
        # An arch list nobody recorded is still bounded by what its CUDA toolkit can compile.
        verdict, _jit = rules.check_arch(ctx.matrices, m, cuda, sass, ptx)
        if verdict.ok:
            if verdict.warning and sass is None:
                out.append(
                    finding(
                        "DR022",
                        f"Which GPU architectures {build.label} carries is not known to cudafit, so whether it has kernels for {_gpus(ctx)} was not checked.",
                        "Run `cudafit doctor --import` to try it, or install a build whose architectures are known:",
                        ctx.repair.commands(),
                        severity="warning",
                    )
                )
            continue
        where = "its own library" if build.sass is not None else "cudafit's data" if sass is not None else "the limits of its CUDA toolkit"
        out.append(
            finding(
                "DR021",
                f"{build.label} has no kernels for this GPU ({verdict.reason}; read from {where}): "
                "CUDA fails with 'no kernel image is available for execution on the device'.",
                "Install a build compiled for this GPU:",
                ctx.repair.commands(),
            )
        )
    return out


# --- 5. CUDA libraries that disagree ----------------------------------------------------------

_CUDA_WHEEL = re.compile(r"nvidia-[a-z0-9-]+|cuda-[a-z0-9-]+")
_SUFFIX = re.compile(r"-cu(\d+)$")


def cuda_stacks(ctx: Context) -> list[Finding]:
    out = []
    majors = {b.label: major for b in _cuda_builds(ctx) for major in [cuda_major(ctx, b)] if major is not None}
    if len(set(majors.values())) > 1:
        said = ", ".join(f"{label} (CUDA {major})" for label, major in majors.items())
        out.append(
            finding(
                "DR030",
                f"These frameworks are built for different CUDA majors: {said}; loaded in one process, one of them fails to find its libraries.",
                "Install builds of one CUDA major:",
                ctx.repair.commands(),
            )
        )
    cudnn = sorted({_SUFFIX.search(d).group(1) for d in ctx.env.distributions if d.startswith("nvidia-cudnn-cu") and _SUFFIX.search(d)})  # type: ignore[union-attr]
    if len(cudnn) > 1:
        out.append(
            finding(
                "DR030",
                f"Two cuDNN stacks are installed ({', '.join('nvidia-cudnn-cu' + c for c in cudnn)}): the frameworks that use them cannot share a process.",
                "Install builds that share one cuDNN:",
                ctx.repair.commands(),
                severity="warning",
            )
        )
    wrong: list[str] = []
    missing: list[str] = []
    for dist in ctx.env.distributions.values():
        if not dist.requires:
            continue
        asked = [""] + [e for e in dist.extras if _extra_in_use(ctx, dist.name, e)]
        for extra in asked:
            for req in requirements_for(dist, extra, ctx.env.python):
                name = canonicalize_name(req.name)
                if not _CUDA_WHEEL.fullmatch(name) or not str(req.specifier):
                    continue
                have = ctx.env.distributions.get(name)
                if have is None:
                    missing.append(f"{dist.name} {dist.version} needs {name}{req.specifier}, which is not installed")
                elif not req.specifier.contains(have.version, prereleases=True):
                    wrong.append(f"{dist.name} {dist.version} needs {name}{req.specifier}, but {have.version} is installed")
    for problems, what in ((wrong, "wrong version"), (missing, "missing")):
        if problems:
            shown = "; ".join(sorted(set(problems))[:4]) + (f"; and {len(set(problems)) - 4} more" if len(set(problems)) > 4 else "")
            out.append(
                finding("DR031", f"CUDA wheels {what}: {shown}.", "Reinstall the set the resolver picks, which pins every CUDA wheel:", ctx.repair.commands())
            )
    if "onnxruntime" in ctx.env.distributions and "onnxruntime-gpu" in ctx.env.distributions:
        out.append(
            finding(
                "DR032",
                "onnxruntime and onnxruntime-gpu are both installed; they share one package folder, "
                "so whichever was installed last wins and the CUDA provider may be gone.",
                # The resolver's set, never the installed version as such: another finding may say it
                # cannot run here (a driver too old for its CUDA, no kernels for the GPU).
                "Remove both and install only the onnxruntime-gpu build the resolver picks for this machine:"
                if ctx.repair.solved
                else f"Remove both ({ctx.repair.python} -m pip uninstall -y onnxruntime onnxruntime-gpu); "
                "no set with onnxruntime-gpu runs here, and this says why:",
                ctx.repair.commands(),
            )
        )
    return out


def built_against(ctx: Context) -> list[Finding]:
    """Libraries built against torch (xformers, vllm, flash-attn, torchao) beside the torch that
    is installed: its CUDA major must be theirs, and its version the one they require (their
    metadata, or for torchao the version gate the data records)."""
    torch = next((b for b in ctx.env.builds if b.family == "torch"), None)
    out = []
    for lib in ctx.env.libraries:
        problems = _library_problems(ctx, lib, torch)
        if problems:
            out.append(
                finding(
                    "DR033",
                    f"{lib.label} {'; '.join(problems)}: "
                    + (
                        "its compiled kernels will not load (or will crash)."
                        if lib.kind == "cuda"
                        else "it is made for another torch and may fail to import or run."
                    ),
                    "Remove the library (pip keeps an installed version, whatever its build) and install it with torch as one set:",
                    (f"{ctx.repair.python} -m pip uninstall -y {lib.dist}", *ctx.repair.commands()),
                    severity="warning" if lib.family == "torchao" else "error",  # torchao falls back to its Python code
                )
            )
    return out


def _library_problems(ctx: Context, lib: InstalledBuild, torch: Optional[InstalledBuild]) -> list[str]:
    from cudafit.frameworks import release_of

    if torch is None:
        return ["is installed without torch"]
    problems = []
    torch_major = cuda_major(ctx, torch)
    if lib.kind == "cuda" and torch.kind in ("cpu", "rocm"):
        problems.append(f"links the CUDA {lib.cuda} runtime, which only a CUDA build of torch brings, but {torch.label} is a {torch.kind.upper()} build")
    elif lib.kind == "cuda" and lib.cuda and torch_major and lib.cuda.split(".")[0] != torch_major:
        problems.append(f"links CUDA {lib.cuda.split('.')[0]}, but {torch.label} brings CUDA {torch_major}")
    try:
        torch_version = Version(Version(torch.version).public)
        release = release_of(lib.family, Version(Version(lib.version).public), ctx.matrices)
    except InvalidVersion:
        return problems
    if lib.built_for:
        try:
            built = Version(Version(lib.built_for).public)
        except InvalidVersion:
            built = None
        if built is not None and built.release[:2] != torch_version.release[:2] and (release is None or _requirement(release, lib, ctx) is None):
            problems.append(f"was built against torch {lib.built_for}, but {torch.label} is installed")
    if release is not None:
        spec = _requirement(release, lib, ctx)
        if spec is not None and not spec.contains(torch_version, prereleases=True):
            problems.append(f"goes with torch{spec}, but {torch.label} is installed")
    return problems


def _requirement(release: LibraryRelease, lib: InstalledBuild, ctx: Context) -> Optional[SpecifierSet]:
    """The torch a library release requires (the data's, for the build of its CUDA major here)."""
    from packaging.specifiers import SpecifierSet

    platform = ctx.machine.platform
    for build in release.builds:
        if platform is not None and platform not in build.platforms:
            continue
        if lib.cuda and build.kind == "cuda" and build.cuda is not None and str(build.cuda.major) != lib.cuda.split(".")[0]:
            continue
        spec = (build.pins or {}).get("torch")
        if spec:
            return SpecifierSet(spec)
    return None


def _extra_in_use(ctx: Context, dist: str, extra: str) -> bool:
    """An extra counts as asked for when any CUDA wheel only it brings is installed."""
    d = ctx.env.distributions[dist]
    base = {canonicalize_name(r.name) for r in requirements_for(d, "", ctx.env.python)}
    own = {canonicalize_name(r.name) for r in requirements_for(d, extra, ctx.env.python)} - base
    return any(_CUDA_WHEEL.fullmatch(n) and n in ctx.env.distributions for n in own)


# --- 6. system CUDA ---------------------------------------------------------------------------


def _toolkit_of(ctx: Context, path: Path) -> Optional[ToolkitInstall]:
    for tk in ctx.toolkits:
        try:
            if path == tk.root or tk.root in path.resolve().parents or tk.root in path.parents:
                return tk
        except OSError:
            continue
    return None


def system_cuda(ctx: Context) -> list[Finding]:
    if ctx.machine.os in ("macos", "windows"):
        return []
    out = []
    named: dict[str, ToolkitInstall] = {}
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if ctx.environ.get(var):
            tk = _toolkit_of(ctx, Path(ctx.environ[var]))
            if tk is not None:
                named[var] = tk
    on_path = next((t for t in ctx.toolkits if "PATH" in t.found_by), None)
    if on_path is not None:
        named["nvcc on PATH"] = on_path
    for entry in ctx.environ.get("LD_LIBRARY_PATH", "").split(":"):
        tk = _toolkit_of(ctx, Path(entry)) if entry else None
        if tk is not None:
            named.setdefault(f"LD_LIBRARY_PATH ({entry})", tk)
    if len({t.root for t in named.values()}) > 1:
        said = "; ".join(f"{k}: CUDA {t.version or 'unknown'} at {t.root}" for k, t in named.items())
        torch_cuda = next((b.cuda for b in _cuda_builds(ctx) if b.family == "torch" and b.cuda), None)
        # The installed toolkit nearest torch's CUDA: its own version, else the newest of its major.
        fits = [t for t in ctx.toolkits if t.version and torch_cuda and t.version.split(".")[0] == torch_cuda.split(".")[0]]
        exact = [t for t in fits if torch_cuda and t.short == torch_cuda]
        pick = (exact or fits or list(named.values()))[-1].short
        out.append(
            finding(
                "DR040",
                f"Different CUDA toolkits are selected at once ({said}): builds and programs mix their headers and libraries.",
                "Select one toolkit for this shell:",
                (f"cudafit env-script --toolkit {pick} -o env.sh && . ./env.sh",),
                severity="warning",
            )
        )
    for build, report in ctx.loads:
        for soname, taken, shipped in report.shadowed:
            out.append(
                finding(
                    "DR041",
                    f"LD_LIBRARY_PATH makes {build.label} load {taken} instead of the {soname} it ships with ({shipped}).",
                    "Take that folder out of LD_LIBRARY_PATH (or unset it) before starting Python.",
                    severity="warning",
                )
            )
    torch = next((b for b in _cuda_builds(ctx) if b.family == "torch" and b.cuda), None)
    used = extension_toolkit(ctx.environ, list(ctx.toolkits))
    if torch is not None and torch.cuda is not None and used is not None and used.version and used.version.split(".")[0] != torch.cuda.split(".")[0]:
        matching = [t for t in ctx.toolkits if t.version and t.version.split(".")[0] == torch.cuda.split(".")[0]]
        commands: tuple[str, ...] = ()
        if matching:
            fix, commands = "Build extensions with a matching toolkit:", (f"cudafit env-script --toolkit {matching[-1].short} -o env.sh && . ./env.sh",)
        else:
            fix = f"Install a CUDA {torch.cuda} toolkit (conda: cuda-nvcc={torch.cuda}) before building extensions."
        out.append(
            finding(
                "DR042",
                f"CUDA extensions (flash-attn, xformers, your own) would build with CUDA {used.version} at {used.root}, "
                f"but {torch.label} uses CUDA {torch.cuda}: the build stops with a CUDA version mismatch.",
                fix,
                commands,
                severity="warning",
            )
        )
    elif torch is not None and torch.cuda is not None and used is not None and used.version and _older_minor(used.version, torch.cuda):
        newer = [t for t in ctx.toolkits if t.version and not _older_minor(t.version, torch.cuda) and t.version.split(".")[0] == torch.cuda.split(".")[0]]
        out.append(
            finding(
                "DR042",
                f"CUDA extensions would build with CUDA {used.version} at {used.root}, older than the CUDA {torch.cuda} of {torch.label}: "
                "torch warns, and code that needs the newer toolkit's features or GPU architectures fails to build.",
                "Build extensions with a toolkit at least as new:" if newer else f"Install a CUDA {torch.cuda} toolkit before building extensions.",
                (f"cudafit env-script --toolkit {newer[-1].short} -o env.sh && . ./env.sh",) if newer else (),
                severity="warning",
            )
        )
    return out


def _older_minor(toolkit: str, cuda: str) -> bool:
    """Same CUDA major, older minor (12.1 under a torch built with 12.8)."""
    have, want = toolkit.split("."), cuda.split(".")
    return have[0] == want[0] and len(have) > 1 and len(want) > 1 and int(have[1]) < int(want[1])


# --- 7. libraries that will not load ------------------------------------------------------------


def loading(ctx: Context) -> list[Finding]:
    out = []
    for build, report in ctx.loads:
        if report.unreadable:
            out.append(finding("DR090", f"{report.library} could not be read ({report.unreadable}); whether it loads was not checked.", severity="warning"))
            continue
        libs = [s for s in report.missing if s != DRIVER_LIBRARY]
        if DRIVER_LIBRARY in report.missing and ctx.machine.driver is not None:
            hint = " Under WSL it lives in /usr/lib/wsl/lib." if ctx.machine.os == "wsl" else ""
            out.append(
                finding(
                    "DR050",
                    f"{build.label} needs the driver's {DRIVER_LIBRARY}, which the loader cannot find.{hint}",
                    "Reinstall the NVIDIA driver's user-space libraries, or add their folder to the loader's path (ldconfig).",
                )
            )
        owners = _owning_wheels(ctx, libs)
        if libs and owners:
            out.append(
                finding(
                    "DR050",
                    f"{report.library.name} of {build.label} needs {', '.join(libs)}, which the loader cannot find (ldd would say 'not found'), "
                    f"though {', '.join(owners)} is installed: its files are missing.",
                    "Reinstall those wheels:",
                    (f"{ctx.repair.python} -m pip install --force-reinstall --no-deps {' '.join(shlex.quote(o) for o in owners)}",),
                )
            )
        elif libs:
            out.append(
                finding(
                    "DR050",
                    f"{report.library.name} of {build.label} needs {', '.join(libs)}, which the loader cannot find (ldd would say 'not found').",
                    "Reinstall the framework with its CUDA wheels:",
                    ctx.repair.commands(),
                )
            )
    return out


# The library each nvidia-* wheel ships (libcublas.so.12 comes with nvidia-cublas-cu12, or with
# nvidia-cublas for CUDA 13).
_LIBRARY_WHEEL = {
    "libcublas": "nvidia-cublas", "libcublasLt": "nvidia-cublas", "libcudnn": "nvidia-cudnn", "libcudart": "nvidia-cuda-runtime",
    "libcufft": "nvidia-cufft", "libcurand": "nvidia-curand", "libcusparse": "nvidia-cusparse", "libcusolver": "nvidia-cusolver",
    "libnccl": "nvidia-nccl", "libnvrtc": "nvidia-cuda-nvrtc", "libnvJitLink": "nvidia-nvjitlink", "libcupti": "nvidia-cuda-cupti",
    "libcusparseLt": "nvidia-cusparselt", "libcufile": "nvidia-cufile", "libnvshmem_host": "nvidia-nvshmem",
}  # fmt: skip


def _owning_wheels(ctx: Context, sonames: list[str]) -> list[str]:
    """name==version of the installed nvidia-* wheels that should hold these libraries."""
    out = []
    for soname in sonames:
        base = _LIBRARY_WHEEL.get(soname.split(".so")[0])
        if base is None:
            continue
        for name, dist in ctx.env.distributions.items():
            if name == base or (name.startswith(base + "-cu") and name[len(base) + 3 :].isdigit()):
                pinned = f"{name}=={dist.version}"
                if pinned not in out:
                    out.append(pinned)
    return out


# --- 8. platform dead ends -----------------------------------------------------------------------


def _tf_windows_end(ctx: Context) -> Optional[Version]:
    """The last TensorFlow release with a native Windows CUDA build, from the data."""
    from cudafit.frameworks import BY_FAMILY

    gpu = [r.version for r in BY_FAMILY["tensorflow"].releases(ctx.matrices) if any(b.kind == "cuda" and "windows-x86_64" in b.platforms for b in r.builds)]
    return max(gpu) if gpu else None


def dead_ends(ctx: Context) -> list[Finding]:
    m = ctx.machine
    out = []
    tf = next((b for b in ctx.env.builds if b.family == "tensorflow"), None)
    last = _tf_windows_end(ctx)
    if m.os == "windows" and m.gpus and tf is not None and last is not None and Version(Version(tf.version).public) > last:
        from cudafit.frameworks import release_of
        from cudafit.frameworks.base import python_range

        pythons = release_of("tensorflow", last, ctx.matrices).pythons("windows-x86_64")
        python_note = f" (it has wheels for Python {python_range(pythons)} only)" if pythons and ctx.env.python not in pythons else ""
        out.append(
            finding(
                "DR060",
                f"{tf.label} on native Windows has no GPU support: the last TensorFlow with CUDA on native Windows is {last}.",
                f"Use TensorFlow under WSL2 (pip install 'tensorflow[and-cuda]' there), or TensorFlow {last} with its conda CUDA runtime{python_note}:",
                (shlex.join(["cudafit", "resolve", f"tensorflow<={last}", *machine_args(m)]),),
            )
        )
    jax = next((b for b in ctx.env.builds if b.family == "jax"), None)
    if m.os == "windows" and m.gpus and jax is not None:
        out.append(
            finding(
                "DR061",
                f"{jax.label} on native Windows runs on the CPU only: JAX publishes no CUDA builds for Windows.",
                "Use JAX under WSL2 (pip install 'jax[cuda12]' there).",
                severity="warning",
            )
        )
    if m.os == "wsl" and m.detected and not ctx.wsl_driver:
        out.append(
            finding(
                "DR062",
                "This WSL2 system has no /usr/lib/wsl/lib/libcuda.so.1, the driver library Windows shares with WSL: CUDA cannot start.",
                "Install or update the NVIDIA driver on Windows (not inside WSL), then run wsl --shutdown and reopen the shell.",
            )
        )
    problem = rules.jetson_problem(ctx.matrices, m)
    if problem is not None:
        # NVIDIA's Jetson wheels carry an "nv" release in their local version (2.5.0a0+872d972e41.nv24.08).
        server = [b for b in _cuda_builds(ctx) if not re.search(r"nv\d", b.version)]
        if server:
            out.append(
                finding(
                    "DR063",
                    f"{', '.join(b.label for b in server)}: {problem}.",
                    "Install NVIDIA's Jetson builds for your JetPack (NVIDIA's Jetson wheel index), not the PyPI or PyTorch-index aarch64 ones.",
                )
            )
    too_old = rules.check_gpu_support_by_driver(ctx.matrices, m)
    if too_old is not None:
        out.append(finding("DR064", f"The {too_old}: no CUDA program can use that GPU.", "Install a newer NVIDIA driver."))
    return out


# --- 9. Python -------------------------------------------------------------------------------------


def python(ctx: Context) -> list[Finding]:
    py = ctx.env.python
    if not py:
        return []
    out = []
    want = "cp" + py.replace(".", "")
    for build in ctx.env.builds:
        dist = ctx.env.distributions.get(canonicalize_name(build.dist))
        if dist is None or not dist.tags:
            continue
        interpreters = {tag.interpreter for text in dist.tags for tag in _tags(text)}
        if all(i.startswith("cp3") for i in interpreters) and want not in interpreters:
            out.append(
                finding(
                    "DR070",
                    f"{build.label} was installed for {', '.join(sorted(interpreters))}, but this environment runs Python {py}: it will not import.",
                    "Reinstall it with this environment's Python:",
                    ctx.repair.commands(),
                )
            )
    return out


def _tags(text: str) -> frozenset:
    from packaging.tags import parse_tag

    try:
        return parse_tag(text)
    except ValueError:
        return frozenset()


def python_support(ctx: Context) -> list[Finding]:
    """The environment's Python against the Pythons the installed release has wheels for (data)."""
    from cudafit.frameworks import release_of
    from cudafit.frameworks.base import python_key

    py = ctx.env.python
    if not py or ctx.machine.platform is None:
        return []
    out = []
    for build in ctx.env.builds:
        try:
            public = Version(Version(build.version).public)
        except InvalidVersion:
            continue
        release = release_of(build.family, public, ctx.matrices)
        if release is None:
            continue
        pythons = release.pythons(ctx.machine.platform)
        if pythons and py not in pythons:
            have = ", ".join(sorted(pythons, key=python_key))
            out.append(
                finding(
                    "DR071",
                    f"{build.label} has no wheels for Python {py} on {ctx.machine.platform} (it has {have}): "
                    "it was built from source or forced in, and is untested there.",
                    "Use a Python its wheels cover, or a release that has wheels for this one:",
                    ctx.repair.commands(),
                    severity="warning",
                )
            )
    return out


def unreadable(ctx: Context) -> list[Finding]:
    return [finding("DR090", problem, severity="warning") for problem in ctx.env.problems]


CHECKS: tuple[Callable[[Context], list[Finding]], ...] = (
    driver_and_gpus,
    cpu_builds,
    driver_floor,
    kernels,
    cuda_stacks,
    built_against,
    system_cuda,
    loading,
    dead_ends,
    python,
    python_support,
    unreadable,
)
