"""What every doctor check reads, and what they share: the Context (machine, environment, data,
loader reports, the repair), finding() with the list of codes, and the helpers that look an
installed build up in the data. Compatibility is never re-derived by the checks: the driver floors
and kernel checks are cudafit.rules', the facts are the data's, and every fix that installs
something comes from the resolver (fixes.py). checks.py lists the checks in the order they run."""

from __future__ import annotations

import re
from typing import Mapping, NamedTuple, Optional

from packaging.version import InvalidVersion, Version

from cudafit import rules
from cudafit.doctor.fixes import Repair
from cudafit.doctor.libraries import LoadReport
from cudafit.doctor.model import Environment, Finding, InstalledBuild
from cudafit.records import Build, Machine, Matrices
from cudafit.toolkits import ToolkitInstall

CODES = {
    "DR001": "no NVIDIA driver",
    "DR002": "the driver does not answer",
    "DR003": "no GPU visible",
    "DR004": "CUDA_VISIBLE_DEVICES hides every GPU",
    "DR005": "ROCm cannot open the AMD GPU (/dev/kfd)",
    "DR010": "a CPU-only build on a machine with a GPU it could use",
    "DR012": "a build for another maker's GPU (CUDA on AMD, ROCm or XPU without that GPU)",
    "DR011": "TensorFlow without its CUDA libraries",
    "DR020": "a build whose CUDA needs a newer driver",
    "DR021": "a build without kernels for the GPU",
    "DR022": "a build whose GPU architectures are unknown",
    "DR024": "HSA_OVERRIDE_GFX_VERSION unset where the ROCm build needs it, or set where it puts the GPU on the wrong kernels",
    "DR030": "frameworks on different CUDA or cuDNN majors",
    "DR031": "nvidia-* wheels that do not satisfy a framework",
    "DR032": "onnxruntime and onnxruntime-gpu in one environment",
    "DR033": "a library built against another torch or CUDA than the one installed",
    "DR034": "a package moved off the constraints cudafit install --constrain held it to",
    "DR035": "torchvision or torchaudio made for another torch",
    "DR036": "a JAX CUDA plugin of another version than jaxlib (JAX runs on the CPU)",
    "DR037": "NumPy 2 beside a framework built against NumPy 1.x",
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


def gpu_names(ctx: Context) -> str:
    return ", ".join(rules.gpu_label(g) for g in ctx.machine.gpus) or "this machine's GPU"


def cuda_builds(ctx: Context) -> list[InstalledBuild]:
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


def last_windows_cuda_tensorflow(ctx: Context) -> Optional[Version]:
    """The last TensorFlow release with a native Windows CUDA build, from the data."""
    from cudafit.frameworks import BY_FAMILY

    gpu = [r.version for r in BY_FAMILY["tensorflow"].releases(ctx.matrices) if any(b.kind == "cuda" and "windows-x86_64" in b.platforms for b in r.builds)]
    return max(gpu) if gpu else None
