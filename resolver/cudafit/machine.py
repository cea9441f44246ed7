"""The machine a command reasons about: detected, described by options, or a mix of both.

The GPU-side options (--driver, --gpu, --compute-capability, --jetson) replace GPU detection as a
whole; --os, --arch and --python each replace one detected field (../shared/cli-contract.md)."""

from __future__ import annotations

import platform
import re
from typing import NamedTuple, Optional

from cudafit import detect
from cudafit.errors import InputError
from cudafit.gpus import lookup_gpu
from cudafit.records import GpuInfo, Machine, Matrices, parse_cc

OS_NAMES = ("linux", "windows", "macos", "wsl")
ARCH_NAMES = ("x86_64", "aarch64")
_DRIVER = re.compile(r"^\d{3,}\.\d+(\.\d+)?$")
_PYTHON = re.compile(r"^3\.\d{1,2}$")


class MachineOptions(NamedTuple):
    driver: Optional[str] = None
    gpus: tuple[str, ...] = ()
    compute_capabilities: tuple[str, ...] = ()
    os: Optional[str] = None
    arch: Optional[str] = None
    python: Optional[str] = None
    jetson: bool = False
    detect_extras: bool = False  # toolkits and frameworks (only `detect` and `doctor` need them)

    @property
    def describes_gpus(self) -> bool:
        return self.driver is not None or bool(self.gpus) or bool(self.compute_capabilities) or self.jetson


def parse_driver(text: str) -> Optional[str]:
    """'535.104.05' -> '535.104.05'; 'none' -> None."""
    if text.strip().lower() == "none":
        return None
    if not _DRIVER.match(text.strip()):
        raise InputError(f"--driver {text!r}: expected an NVIDIA driver version like 535.104.05 or 566.36, or 'none'")
    return text.strip()


def check_os(text: str) -> str:
    if text not in OS_NAMES:
        raise InputError(f"--os {text!r}: expected one of {', '.join(OS_NAMES)}")
    return text


def check_arch(text: str) -> str:
    arch = detect.normalize_arch(text)
    if arch not in ARCH_NAMES:
        raise InputError(f"--arch {text!r}: expected x86_64 or aarch64 (arm64)")
    return arch


def check_python(text: str) -> str:
    if not _PYTHON.match(text):
        raise InputError(f"--python {text!r}: expected a Python version like 3.12")
    return text


def build_machine(opts: MachineOptions, matrices: Matrices, *, reader=detect.read_driver) -> Machine:
    os_name = check_os(opts.os) if opts.os else detect.detect_os()
    arch = check_arch(opts.arch) if opts.arch else detect.normalize_arch(platform.machine())
    python = check_python(opts.python) if opts.python else detect.detect_python()
    warnings: list[str] = []
    if python is None:
        warnings.append("could not tell the target Python (no $VIRTUAL_ENV, $CONDA_PREFIX or python on PATH); Python not checked")

    if opts.describes_gpus:
        driver_known = opts.driver is not None
        driver = parse_driver(opts.driver) if opts.driver is not None else None
        gpus = []
        for name in opts.gpus:
            model, warning = lookup_gpu(matrices.gpus, name)
            if model is None:
                raise InputError(
                    f"--gpu {name!r}: not in cudafit's GPU table; give the name as nvidia-smi prints it "
                    f"(e.g. 'NVIDIA GeForce RTX 3090') or use --compute-capability X.Y"
                )
            if warning:
                warnings.append(warning)
            gpus.append(GpuInfo(name=name, compute_capability=model.compute_capability))
        for text in opts.compute_capabilities:
            try:
                gpus.append(GpuInfo(name=None, compute_capability=parse_cc(text)))
            except ValueError:
                raise InputError(f"--compute-capability {text!r}: expected MAJOR.MINOR like 8.6") from None
        gpus_known = bool(gpus) or (driver_known and driver is None)
        if driver_known and driver is None and gpus:
            warnings.append("--driver none with a GPU: no NVIDIA driver means no CUDA build can run")
        if not driver_known:
            warnings.append("driver not given (--driver): the driver requirement is stated, not checked")
        if not gpus_known:
            warnings.append("GPU not given (--gpu/--compute-capability): GPU architecture not checked")
        return Machine(
            os=os_name, arch=arch, python=python, driver=driver, driver_known=driver_known,
            gpus=tuple(gpus), gpus_known=gpus_known, jetson=opts.jetson, warnings=tuple(warnings),
        )

    if os_name == "macos":
        reading = detect.DriverReading(None, True, (), True, None, ())
    else:
        reading = reader(os_name, want_banner=opts.detect_extras)
    warnings.extend(reading.warnings)
    driver = reading.driver
    if driver is not None and not _DRIVER.match(driver):
        raise InputError(f"nvidia-smi: driver version {driver!r} is not a version like 535.104.05")
    gpus = []
    for gpu in reading.gpus:
        if gpu.compute_capability is None and gpu.name:
            model, warning = lookup_gpu(matrices.gpus, gpu.name)
            if model is None:
                warnings.append(f"GPU {gpu.name!r} is not in cudafit's GPU table and the driver does not report its compute "
                                "capability; its architecture is not checked")
            else:
                if warning:
                    warnings.append(warning)
                gpu = GpuInfo(gpu.name, model.compute_capability, gpu.memory_mib)
        gpus.append(gpu)
    extras: dict = {}
    if opts.detect_extras:
        extras["toolkits"] = tuple(detect.detect_toolkits())
        installed = detect.installed_distributions(detect.target_prefix())
        extras["frameworks"] = tuple(
            {"name": name, "version": installed[name]} for name in detect.FRAMEWORKS if name in installed
        )
    return Machine(
        os=os_name, arch=arch, python=python, driver=driver, driver_known=reading.driver_known,
        gpus=tuple(gpus), gpus_known=reading.gpus_known, jetson=opts.jetson or detect.detect_jetson(),
        cuda_driver_max=reading.cuda_driver_max, warnings=tuple(warnings), **extras,
    )


def machine_json(machine: Machine, *, full: bool = False) -> dict:
    out: dict[str, object] = {
        "os": machine.os,
        "arch": machine.arch,
        "python": machine.python,
        "driver": machine.driver,
    }
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
