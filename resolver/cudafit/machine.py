"""The machine a command reasons about: detected, described by options, or a mix of both.

The GPU-side options (--driver, --gpu, --compute-capability, --jetson) replace GPU detection as a
whole; --os, --arch and --python each replace one detected field (docs/cli.md)."""

from __future__ import annotations

import os
import platform
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Callable, NamedTuple, Optional

from packaging.version import InvalidVersion, Version

from cudafit.errors import InputError
from cudafit.gpus import lookup_gpu, suggest_gpus
from cudafit.records import DRIVER_NOT_GIVEN, GPU_NOT_GIVEN, GpuInfo, Machine, Matrices, Toolkit, driver_key, parse_cc

if TYPE_CHECKING:
    from cudafit.detection import DriverReading

OS_NAMES = ("linux", "windows", "macos", "wsl")
ARCH_NAMES = ("x86_64", "aarch64")
_DRIVER = re.compile(r"^\d{3,}\.\d+(\.\d+)?$", re.ASCII)  # ASCII: \d alone takes every script's digits
_PYTHON = re.compile(r"^(\d+)\.(\d+)(?:\.\d+)?$", re.ASCII)  # 3.12, or 3.12.1 as `python --version` prints it
# How far past the data's newest driver branch a version is still taken as a real driver (NVIDIA
# has numbered roughly 50-60 branches a year), and below its oldest one.
_BRANCH_MARGIN = 100
# Python 2 ended at 2.7; Python 3 may be one minor past the newest the data knows (a prerelease).
_PYTHON2_LAST = 7


class MachineOptions(NamedTuple):
    driver: Optional[str] = None
    gpus: tuple[str, ...] = ()
    compute_capabilities: tuple[str, ...] = ()
    os: Optional[str] = None
    arch: Optional[str] = None
    python: Optional[str] = None
    jetson: bool = False
    detect_extras: bool = False  # toolkits and frameworks (only `detect` and `doctor` need them)
    macos: Optional[str] = None  # --macos X.Y
    env_prefix: Optional[str] = None  # detect --env: the environment whose frameworks are listed

    @property
    def describes_gpus(self) -> bool:
        return self.driver is not None or bool(self.gpus) or bool(self.compute_capabilities) or self.jetson


def parse_driver(text: str) -> Optional[str]:
    """'535.104.05' -> '535.104.05'; 'none' -> None."""
    if text.strip().lower() == "none":
        return None
    if not _DRIVER.match(text.strip()):
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
    close = suggest_gpus(matrices.gpus, name)
    hint = ""
    if close:
        quoted = [repr(c) for c in close]
        hint = f"did you mean {quoted[0]}?" if len(quoted) == 1 else f"did you mean {', '.join(quoted[:-1])} or {quoted[-1]}?"
        hint += " "
    return InputError(
        f"not in cudafit's GPU table; {hint}give the name as nvidia-smi prints it (`cudafit gpus PATTERN` lists them) or give a compute capability",
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


def check_contradictions(opts: MachineOptions, os_name: str, arch: Optional[str]) -> None:
    """A description that cannot be one machine is an input error: answering it would produce a
    wrong install (the contract: macOS with an NVIDIA driver, --jetson on x86_64)."""
    if os_name == "macos":
        given: list[tuple[str, object]] = [
            *((("driver", opts.driver),) if opts.driver and opts.driver.strip().lower() != "none" else ()),
            *(("gpus", g) for g in opts.gpus),
            *(("compute_capability", c) for c in opts.compute_capabilities),
            *((("jetson", True),) if opts.jetson else ()),
        ]
        if given:
            raise InputError(
                "macOS has no NVIDIA driver (CUDA for macOS ended with 10.2); describe the machine without them, or give its real OS",
                field="os",
                value=os_name,
                others=tuple(given),
            )
    # An OS or arch that was not given is this machine's: the reason names it, since the user did not.
    os_given: tuple[tuple[str, object], ...] = (("os", os_name),) if opts.os else ()
    arch_given: tuple[tuple[str, object], ...] = (("arch", arch),) if opts.arch else ()
    os_here = "" if opts.os else f", and this machine runs {os_name} (describe the machine's OS to answer for another)"
    arch_here = "" if opts.arch else f", and this machine is {arch} (describe the machine's arch to answer for another)"
    if opts.macos and os_name != "macos":
        raise InputError(f"a macOS version describes a Mac{os_here}", field="macos", value=opts.macos, others=os_given)
    if opts.macos and arch == "aarch64" and int(opts.macos.split(".")[0]) < 11:
        raise InputError(f"Apple silicon Macs run macOS 11 or later{arch_here}", field="macos", value=opts.macos, others=arch_given)
    if opts.jetson:
        if opts.os and os_name != "linux":
            raise InputError("Jetson boards run Linux (Jetson Linux, L4T)", field="jetson", value=True, others=(("os", os_name),))
        if opts.arch and arch is not None and arch != "aarch64":
            raise InputError("Jetson boards are aarch64", field="jetson", value=True, others=(("arch", arch),))


def cuda_driver_max(driver: Optional[str], os_name: Optional[str], toolkits: Iterable[Toolkit]) -> Optional[str]:
    """The highest CUDA version a driver supports by the data, for when nvidia-smi did not say:
    the newest toolkit whose own driver (the Windows column under Windows and WSL2, where the
    driver is the Windows one) is <= `driver`. A toolkit whose driver is unknown is skipped, so the
    answer is a floor: the driver may support a newer CUDA than the data can tell."""
    if driver is None:
        return None
    try:
        have = Version(driver)
    except InvalidVersion:
        return None
    best: Optional[Version] = None
    for tk in toolkits:
        needed = tk.windows_driver_min if os_name in ("windows", "wsl") else tk.linux_driver_min
        if needed is None:
            continue
        try:
            if Version(needed) > have:
                continue
        except InvalidVersion:
            continue
        if best is None or tk.version > best:
            best = tk.version
    return f"{best.major}.{best.minor}" if best is not None else None


# What the description leaves out is read from this machine; detection is imported only then.
def _this_os() -> str:
    from cudafit import detection as detect

    return detect.detect_os()


def _this_python() -> Optional[str]:
    from cudafit import detection as detect

    return detect.detect_python()


def _this_macos() -> Optional[str]:
    from cudafit import detection as detect

    return detect.detect_macos()


def build_machine(opts: MachineOptions, matrices: Matrices, *, reader: Optional[Callable[..., DriverReading]] = None) -> Machine:
    """The Machine of a description, reading this one for what it leaves out (the driver with
    `reader`, by default detect.read_driver). A machine described whole imports no detection code."""
    # --jetson says the rest: a Jetson runs Linux on aarch64, whatever machine describes it
    os_name = check_os(opts.os) if opts.os else "linux" if opts.jetson else _this_os()
    arch = check_arch(opts.arch) if opts.arch else "aarch64" if opts.jetson else normalize_arch(platform.machine())
    python = check_python(opts.python, matrices) if opts.python else _this_python()
    macos = check_macos(opts.macos) if opts.macos else (_this_macos() if os_name == "macos" and not opts.os else None)
    check_contradictions(opts, os_name, arch)
    warnings: list[str] = []
    if python is None:
        warnings.append("could not tell the target Python (no $VIRTUAL_ENV, $CONDA_PREFIX or python on PATH); Python not checked")

    if os_name == "macos" and not opts.describes_gpus:
        # A Mac has no NVIDIA driver; never read this host's nvidia-smi for a described Mac.
        return Machine(os=os_name, arch=arch, python=python, driver=None, driver_known=True, gpus=(), gpus_known=True, warnings=tuple(warnings), macos=macos)
    if opts.describes_gpus:
        driver_known = opts.driver is not None
        driver = parse_driver(opts.driver) if opts.driver is not None else None
        if driver is not None:
            warnings.extend(check_driver(driver, os_name, matrices))
        gpus = []
        for name in opts.gpus:
            model, warning = lookup_gpu(matrices.gpus, name)
            if model is None:
                raise unknown_gpu(name, matrices)
            if opts.jetson and model.segment != "jetson":
                raise InputError(
                    f"a Jetson's GPU is its own module's (Orin, Thor, ...), not a {model.segment} card", field="jetson", value=True, others=(("gpus", name),)
                )
            if warning:
                warnings.append(warning)
            gpus.append(GpuInfo(name=name, compute_capability=model.compute_capability))
        for text in opts.compute_capabilities:
            try:
                cc = parse_cc(text)
            except ValueError:
                raise InputError("expected MAJOR.MINOR like 8.6", field="compute_capability", value=text) from None
            if matrices.architecture(cc) is None:
                # 99.9 or 8.60 (read as sm_860) is no GPU: answering it would invent kernels.
                known = sorted({c for a in matrices.architectures for c in a.compute_capabilities})
                raise InputError("no NVIDIA GPU has it; known: " + ", ".join(f"{a}.{b}" for a, b in known), field="compute_capability", value=text)
            gpus.append(GpuInfo(name=None, compute_capability=cc))
        gpus_known = bool(gpus) or (driver_known and driver is None)
        if driver_known and driver is None and gpus:
            warnings.append("--driver none with a GPU: no NVIDIA driver means no CUDA build can run")
        if not driver_known:
            warnings.append(DRIVER_NOT_GIVEN)
        if not gpus_known:
            warnings.append(GPU_NOT_GIVEN)
        return Machine(
            os=os_name,
            arch=arch,
            python=python,
            driver=driver,
            driver_known=driver_known,
            gpus=tuple(gpus),
            gpus_known=gpus_known,
            jetson=opts.jetson,
            cuda_driver_max=cuda_driver_max(driver, os_name, matrices.toolkits.values()),
            warnings=tuple(warnings),
            macos=macos,
            **_installed(opts)._asdict(),
        )

    from cudafit import detection as detect

    if os_name == "macos":
        reading = detect.DriverReading(None, True, (), True, None, ())
    else:
        reading = (reader or detect.read_driver)(os_name, want_banner=opts.detect_extras)
    warnings.extend(reading.warnings)
    driver = reading.driver
    if driver is not None and not _DRIVER.match(driver):
        raise InputError(f"nvidia-smi: driver version {driver!r} is not a version like 535.104.05")
    gpus = []
    for gpu in reading.gpus:
        if gpu.compute_capability is None and gpu.name:
            model, warning = lookup_gpu(matrices.gpus, gpu.name)
            if model is None:
                warnings.append(
                    f"GPU {gpu.name!r} is not in cudafit's GPU table and the driver does not report its compute capability; its architecture is not checked"
                )
            else:
                if warning:
                    warnings.append(warning)
                gpu = GpuInfo(gpu.name, model.compute_capability, gpu.memory_mib)
        gpus.append(gpu)
    return Machine(
        os=os_name,
        arch=arch,
        python=python,
        driver=driver,
        driver_known=reading.driver_known,
        gpus=tuple(gpus),
        gpus_known=reading.gpus_known,
        jetson=opts.jetson or detect.detect_jetson(),
        cuda_driver_max=reading.cuda_driver_max or cuda_driver_max(driver, os_name, matrices.toolkits.values()),
        warnings=tuple(warnings),
        detected=True,
        macos=macos,
        **_installed(opts)._asdict(),
    )


class _Installed(NamedTuple):
    toolkits: tuple[dict, ...] = ()
    frameworks: tuple[dict, ...] = ()


def _installed(opts: MachineOptions) -> _Installed:
    """The CUDA toolkits and frameworks of this machine and the target environment, where the
    command shows them (detect, doctor), whether the GPU side was described or read."""
    if not opts.detect_extras:
        return _Installed()
    from cudafit import detection
    from cudafit.toolkits import find_toolkits

    installed = detection.installed_distributions(Path(opts.env_prefix) if opts.env_prefix else detection.target_prefix())
    return _Installed(
        toolkits=tuple({"version": t.version, "path": str(t.root)} for t in find_toolkits(os.environ)),
        frameworks=tuple({"name": name, "version": installed[name]} for name in detection.FRAMEWORKS if name in installed),
    )


def machine_json(machine: Machine, *, full: bool = False) -> dict:
    out: dict[str, object] = {
        "os": machine.os,
        "arch": machine.arch,
        "python": machine.python,
        "driver": machine.driver,
    }
    if machine.macos:
        out["macos"] = machine.macos
    if full:
        out["cuda_driver_max"] = machine.cuda_driver_max
    gpus = []
    for gpu in machine.gpus:
        item: dict[str, object] = {
            "name": gpu.name,
            "compute_capability": f"{gpu.compute_capability[0]}.{gpu.compute_capability[1]}" if gpu.compute_capability else None,
        }
        if full:
            item["memory_mib"] = gpu.memory_mib
        gpus.append(item)
    out["gpus"] = gpus
    if full:
        out["jetson"] = machine.jetson
        out["toolkits"] = list(machine.toolkits)
        out["frameworks"] = list(machine.frameworks)
        out["warnings"] = list(machine.warnings)
    return out
