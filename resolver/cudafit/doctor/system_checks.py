"""Checks on the system around the environment: CUDA toolkits that CUDA_HOME, nvcc and
LD_LIBRARY_PATH select at once, the toolkit that would build extensions against torch's CUDA, and
the framework libraries the dynamic loader cannot find (libraries.py does the loader's search)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from cudafit.doctor.context import Context, cuda_builds, finding
from cudafit.doctor.libraries import DRIVER_LIBRARY
from cudafit.doctor.model import Finding
from cudafit.toolkits import ToolkitInstall, extension_toolkit

# --- system CUDA ----------------------------------------------------------------------------------


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
        torch_cuda = next((b.cuda for b in cuda_builds(ctx) if b.family == "torch" and b.cuda), None)
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
    torch = next((b for b in cuda_builds(ctx) if b.family == "torch" and b.cuda), None)
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


# --- libraries that will not load -----------------------------------------------------------------


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
                    (ctx.repair.pip("install", "--no-deps", *owners, reinstall=tuple(owners)),),
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
