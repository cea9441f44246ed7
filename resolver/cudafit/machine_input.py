"""Checking each input that describes a machine (--driver, --os, --arch, --python, --gpu,
--macos) on its own, against cudafit's data where it must: each check returns the normalized value
or raises InputError naming the field and the value at fault."""

from __future__ import annotations

import re
from typing import Optional, Union

from cudafit.errors import InputError
from cudafit.gpu_tables import AmdModel, IntelModel
from cudafit.gpus import normalize_gpu_name, suggest_gpus
from cudafit.records import Matrices, driver_key

OS_NAMES = ("linux", "windows", "macos", "wsl")
ARCH_NAMES = ("x86_64", "aarch64")
DRIVER_VERSION = re.compile(r"^\d{3,}\.\d+(\.\d+)?$", re.ASCII)  # ASCII: \d alone takes every script's digits
_PYTHON = re.compile(r"^(\d+)\.(\d+)(?:\.\d+)?$", re.ASCII)  # 3.12, or 3.12.1 as `python --version` prints it
# How far past the data's newest driver branch a version is still taken as a real driver (NVIDIA
# has numbered roughly 50-60 branches a year), and below its oldest one.
_BRANCH_MARGIN = 100
# Python 2 ended at 2.7; Python 3 may be one minor past the newest the data knows (a prerelease).
_PYTHON2_LAST = 7


def parse_driver(text: str) -> Optional[str]:
    """'535.104.05' -> '535.104.05'; 'none' -> None."""
    if text.strip().lower() == "none":
        return None
    if not DRIVER_VERSION.match(text.strip()):
        raise InputError("expected an NVIDIA driver version like 535.104.05 or 566.36, or 'none'", field="driver", value=text)
    return text.strip()


def check_os(text: str) -> str:
    if text not in OS_NAMES:
        raise InputError(f"expected one of {', '.join(OS_NAMES)}", field="os", value=text)
    return text


def normalize_arch(machine: str) -> str:
    machine = machine.lower()
    if machine in ("amd64", "x86_64", "x64"):
        return "x86_64"
    if machine in ("arm64", "aarch64", "armv8", "arm64e"):
        return "aarch64"
    return machine


def check_arch(text: str) -> str:
    arch = normalize_arch(text)
    if arch not in ARCH_NAMES:
        raise InputError("expected x86_64 or aarch64 (arm64)", field="arch", value=text)
    return arch


def known_pythons(matrices: Matrices) -> list[tuple[int, int]]:
    """Every CPython minor some release in the data has wheels for, oldest first."""
    return list(matrices.pythons)


def check_python(text: str, matrices: Optional[Matrices] = None) -> str:
    """'3.12' -> '3.12'. A Python that never existed (4.0, 3.99) is bad input; a real one that no
    release supports (3.8 today) is a valid description whose answer may be negative."""
    match = _PYTHON.match(text.strip())
    if not match:
        raise InputError("expected a Python version like 3.12", field="python", value=text)
    major, minor = int(match.group(1)), int(match.group(2))
    if matrices is None:
        return f"{major}.{minor}"
    known = known_pythons(matrices)
    newest = max((m for m in known if m[0] == 3), default=(3, 13))
    oldest = known[0] if known else (3, 8)
    real = (major == 2 and minor <= _PYTHON2_LAST) or (major == 3 and minor <= newest[1] + 1)
    if not real:
        raise InputError(
            f"no such Python; Python versions run 2.0-2.{_PYTHON2_LAST} and 3.0-3.{newest[1] + 1} "
            f"(cudafit's data has wheels for {oldest[0]}.{oldest[1]}-{newest[0]}.{newest[1]})",
            field="python",
            value=text,
        )
    return f"{major}.{minor}"


def known_drivers(matrices: Matrices) -> tuple[str, str]:
    """The oldest and the newest driver version the data names (toolkit drivers, compatibility
    floors, architecture branches)."""
    versions: list[str] = []
    for tk in matrices.toolkits.values():
        versions += [v for v in (tk.linux_driver_min, tk.windows_driver_min) if v]
    for floor in matrices.compat.values():
        versions += [v for v in (floor.linux_driver_min, floor.windows_driver_min) if v]
    for arch in matrices.architectures:
        versions += [v for v in (arch.first_driver, arch.last_driver) if v]
    versions = [v for v in versions if re.fullmatch(r"\d+(\.\d+)*", v)]
    if not versions:
        return "0", "0"
    versions.sort(key=driver_key)
    return versions[0], versions[-1]


def _linux_branch_step(matrices: Matrices) -> Optional[tuple[int, int]]:
    """(5, oldest) when every Linux toolkit driver in the data sits on a branch numbered in steps
    of 5 (R440, R450, ..., R610), as NVIDIA's Linux branches do from the data's oldest toolkit
    (`oldest`) on; None if the data says otherwise. Older Linux branches were not numbered so
    (R367, R384 in the architecture floors, R418 for CUDA 10.1, issue 24), so the rule holds
    only from `oldest` up."""
    majors = [
        int(tk.linux_driver_min.split(".")[0]) for tk in matrices.toolkits.values() if tk.linux_driver_min and tk.linux_driver_min.split(".")[0].isdigit()
    ]
    return (5, min(majors)) if majors and all(m % 5 == 0 for m in majors) else None


def check_driver(driver: str, os_name: Optional[str], matrices: Matrices) -> list[str]:
    """Raise InputError for a driver version no NVIDIA branch has, or one whose form cannot occur
    on the OS; return warnings for a version that is unlikely there."""
    oldest, newest = known_drivers(matrices)
    branch = int(driver.split(".")[0])
    low, high = driver_key(oldest)[0] - _BRANCH_MARGIN, driver_key(newest)[0] + _BRANCH_MARGIN
    if not low <= branch <= high:
        raise InputError(
            f"no NVIDIA driver branch R{branch}; cudafit's data knows drivers from R{driver_key(oldest)[0]} to {newest} "
            f"and takes branches R{max(low, 0)} to R{high} as real",
            field="driver",
            value=driver,
        )
    parts = driver.split(".")
    if os_name in ("wsl", "windows") and len(parts) == 3:
        where = "under WSL2 nvidia-smi shows the Windows driver's version" if os_name == "wsl" else "Windows drivers are numbered"
        raise InputError(
            f"{driver} is a Linux driver version; {where} as NNN.NN (e.g. 566.36): give the version nvidia-smi prints there",
            field="driver",
            value=driver,
            others=(("os", os_name),),
        )
    warnings: list[str] = []
    rule = _linux_branch_step(matrices)
    if os_name == "linux" and len(parts) == 2 and rule and branch >= rule[1] and branch % rule[0]:
        step, since = rule
        warnings.append(
            f"driver {driver} looks like a Windows driver version: NVIDIA's Linux drivers from R{since} on come in branches "
            f"numbered in steps of {step} (R550, R555, R560, ...); on WSL2 describe the machine with --os wsl"
        )
    return warnings


def unknown_gpu(name: str, matrices: Matrices) -> InputError:
    # NVIDIA's, AMD's and Intel's names, each under the key the NVIDIA lookup spells names with
    others: list[Union[AmdModel, IntelModel]] = [*matrices.amd_gpus.values(), *matrices.intel_gpus.values()]
    every = {**matrices.gpus, **{normalize_gpu_name(m.name): m for m in others}}
    close = suggest_gpus(every, name)  # type: ignore[arg-type]  # it reads .name alone
    hint = ""
    if close:
        quoted = [repr(c) for c in close]
        hint = f"did you mean {quoted[0]}?" if len(quoted) == 1 else f"did you mean {', '.join(quoted[:-1])} or {quoted[-1]}?"
        hint += " "
    return InputError(
        f"not in cudafit's GPU table; {hint}give the name as nvidia-smi, rocminfo or the Intel driver prints it "
        "(`cudafit gpus PATTERN` lists the GPUs it knows), a compute capability (--compute-capability), or an AMD target (--gfx gfx1100)",
        field="gpus",
        value=name,
    )


_MACOS = re.compile(r"^(\d{2})(?:\.(\d{1,2}))?(?:\.\d+)?$", re.ASCII)


def check_macos(text: str) -> str:
    """'13.6' (or '13', '13.6.1') -> '13.6'. macOS counted 10.x, then 11 to 15, then took the
    number of the year after its release (26 came out in 2025): no other major exists."""
    import datetime

    match = _MACOS.match(text.strip())
    if not match:
        raise InputError("expected a macOS version like 14.5", field="macos", value=text)
    major = int(match.group(1))
    newest = datetime.date.today().year - 2000 + 1  # this year's release at the latest
    if not (10 <= major <= 15 or 26 <= major <= newest):
        raise InputError(f"no such macOS version (10.x to 15, then 26 to {newest})", field="macos", value=text)
    return f"{major}.{int(match.group(2) or 0)}"
