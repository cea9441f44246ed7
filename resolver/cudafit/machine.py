"""The machine a command reasons about: detected, described by options, or a mix of both.

The GPU-side options (--driver, --gpu, --compute-capability, --jetson) replace GPU detection as a
whole; --os, --arch and --python each replace one detected field (docs/cli.md). Each input is
checked on its own in machine_input.py; what no single input shows (a description that cannot be
one machine) is checked here."""

from __future__ import annotations

import os
import platform
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Callable, NamedTuple, Optional

from packaging.version import InvalidVersion, Version

from cudafit import machine_more, vendor_gpus
from cudafit.answers import DRIVER_NOT_GIVEN, GPU_NOT_GIVEN
from cudafit.errors import InputError
from cudafit.gpu_tables import is_gfx
from cudafit.gpus import lookup_gpu
from cudafit.machine_input import (
    DRIVER_VERSION,
    check_arch,
    check_driver,
    check_macos,
    check_os,
    check_python,
    normalize_arch,
    parse_driver,
    unknown_gpu,
)
from cudafit.records import GpuInfo, Machine, Matrices, Toolkit, parse_cc

if TYPE_CHECKING:
    from cudafit.detection import DriverReading


ROCM_WITHOUT_AMD = "--rocm without an AMD GPU: describe the GPU too (--gfx or --gpu); ROCm builds are answered only for one"


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
    gfx: tuple[str, ...] = ()  # --gfx gfx1100: AMD GPUs by their LLVM target
    jetpack: Optional[str] = None  # --jetpack 6.2: a Jetson's JetPack release (implies --jetson)
    rocm: Optional[str] = None  # --rocm 7.2: the ROCm installed on the host ("none": none)

    @property
    def describes_gpus(self) -> bool:
        return self.driver is not None or bool(self.gpus) or bool(self.compute_capabilities) or self.jetson or bool(self.gfx) or self.jetpack is not None


def _family(os_name: str) -> str:
    """WSL reads the Windows driver through Linux: one family, for whose driver this host has."""
    return "linux" if os_name == "wsl" else os_name


def _superchip_arch(opts: MachineOptions, matrices: Matrices) -> MachineOptions:
    """A GPU that sits beside one CPU only (GH200, GB200, GB10: NVIDIA's Arm Grace) says the
    machine's arch: taken where none is given, bad input where another is."""
    for name in opts.gpus:
        model = lookup_gpu(matrices.gpus, name)[0]
        if model is None or model.arch is None:
            continue
        if opts.arch and check_arch(opts.arch) != model.arch:
            raise InputError(
                f"{name!r} sits beside NVIDIA's Arm Grace CPU: its machine is {model.arch}", field="arch", value=opts.arch, others=(("gpus", name),)
            )
        if not opts.arch:
            return opts._replace(arch=model.arch)
    return opts


def _jetson_gpu(opts: MachineOptions, matrices: Matrices) -> Optional[str]:
    """The described GPU that is a Jetson module's, in words: by its name, or by a compute
    capability only Jetson modules have (8.7: Orin). Such a machine is a Jetson."""
    for name in opts.gpus:
        model = lookup_gpu(matrices.gpus, name)[0]
        if model is not None and model.segment == "jetson":
            return repr(name)
    for text in opts.compute_capabilities:
        try:
            cc = parse_cc(text)
        except ValueError:
            continue  # said where the capabilities are read
        having = {m.segment for m in matrices.gpus.values() if m.compute_capability == cc}
        if having == {"jetson"}:
            return f"compute capability {text}"
    return None


def check_contradictions(opts: MachineOptions, os_name: str, arch: Optional[str], matrices: Optional[Matrices] = None) -> None:
    """A description that cannot be one machine is an input error: answering it would produce a
    wrong install (the contract: macOS with an NVIDIA driver, --jetson on x86_64). An AMD GPU on
    macOS is an Intel Mac's, which MPS uses."""
    if os_name == "macos":
        others = {g: vendor_gpus.by_name(g, matrices)[0] for g in opts.gpus} if matrices is not None else {}
        discrete_intel = next((g for g, found in others.items() if found is not None and found.vendor == "intel" and not found.integrated), None)
        if discrete_intel is not None:
            reason = "no Mac has this GPU (Intel Macs have Intel's integrated GPUs or AMD's)"
            raise InputError(reason, field="gpus", value=discrete_intel, others=(("os", os_name),))
        # only a GPU of NVIDIA's table contradicts macOS; a name no table knows is said unknown later
        nvidia = {g for g in opts.gpus if matrices is None or lookup_gpu(matrices.gpus, g)[0] is not None}
        given: list[tuple[str, object]] = [
            *((("driver", opts.driver),) if opts.driver and opts.driver.strip().lower() != "none" else ()),
            *(("gpus", g) for g in opts.gpus if g in nvidia),
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
    opts = _superchip_arch(opts, matrices)
    module = None if opts.jetson else _jetson_gpu(opts, matrices)
    if module and opts.arch and check_arch(opts.arch) != "aarch64":
        raise InputError(f"{module} is a Jetson module's GPU, and a Jetson is an aarch64 machine", field="arch", value=opts.arch)
    if opts.jetpack is not None or module:
        # a JetPack is a Jetson's, and so is a Jetson module's GPU (Orin, Thor; sm_87 is Orin's alone)
        opts = opts._replace(jetson=True)
    # --jetson says the rest: a Jetson runs Linux on aarch64, whatever machine describes it
    os_name = check_os(opts.os) if opts.os else "linux" if opts.jetson else _this_os()
    arch = check_arch(opts.arch) if opts.arch else "aarch64" if opts.jetson else normalize_arch(platform.machine())
    python = check_python(opts.python, matrices) if opts.python else _this_python()
    macos = check_macos(opts.macos) if opts.macos else (_this_macos() if os_name == "macos" and not opts.os else None)
    check_contradictions(opts, os_name, arch, matrices)
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
                other, warning = vendor_gpus.by_name(name, matrices)
                if other is None and is_gfx(name.strip().lower()):
                    other = vendor_gpus.by_gfx(name, matrices)  # --gpu gfx1100: an AMD target, as --gfx takes it
                if other is None and name.strip().lower() in ("amd radeon graphics", "radeon graphics"):
                    raise InputError(
                        "the name the driver gives a GPU it has no product name for: describe it by its target (--gfx, rocminfo's Name: gfxNNNN)",
                        field="gpus",
                        value=name,
                    )
                if other is None:
                    raise unknown_gpu(name, matrices)
                if opts.jetson:
                    raise InputError("a Jetson's GPU is its own module's (Orin, Thor, ...)", field="jetson", value=True, others=(("gpus", name),))
                if warning:
                    warnings.append(warning)
                gpus.append(other)
                continue
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
        for text in opts.gfx:
            if opts.jetson:
                raise InputError("a Jetson's GPU is its own module's (Orin, Thor, ...)", field="jetson", value=True, others=(("gfx", text),))
            gpus.append(vendor_gpus.by_gfx(text, matrices))
        if gpus and all(g.vendor != "nvidia" for g in gpus):
            # only AMD or Intel GPUs described: no NVIDIA GPU is there for a CUDA build
            if driver is not None:
                warnings.append(f"--driver {driver} without an NVIDIA GPU: the answer is for the AMD or Intel GPUs described")
            driver, driver_known = None, True
        jetpack = machine_more.jetpack(opts.jetpack, matrices) if opts.jetpack else None
        if jetpack is None and opts.jetson:
            jetpack = machine_more.assumed_jetpack(gpus, matrices, warnings)
        if jetpack is not None:
            machine_more.check_board(jetpack, gpus, matrices)
        line = matrices.jetpack(jetpack)
        board = machine_more.board_gpu(line, gpus)
        if board is not None:
            gpus.append(board)
        gpus_known = bool(gpus) or (driver_known and driver is None)
        if opts.driver is not None and driver is None and any(g.vendor == "nvidia" for g in gpus):
            warnings.append("--driver none with a GPU: no NVIDIA driver means no CUDA build can run")
        if not driver_known and not (line is not None and not line.server_builds):  # before Thor, the JetPack is the driver
            warnings.append(DRIVER_NOT_GIVEN)
        if not gpus_known:
            warnings.append(GPU_NOT_GIVEN)
        warnings.extend(machine_more.left_out_note(gpus, driver, driver_known))
        if opts.rocm is not None and not any(g.vendor == "amd" for g in gpus):
            warnings.append(ROCM_WITHOUT_AMD)
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
            jetpack=jetpack,
            rocm=machine_more.host_rocm(opts.rocm, matrices) if opts.rocm is not None else None,
            **_installed(opts)._asdict(),
        )

    from cudafit import detection as detect

    another_machine = False
    if os_name == "macos":
        reading = detect.DriverReading(None, True, (), True, None, ())
    elif another_machine := bool((opts.os and _family(os_name) != _family(_this_os())) or (opts.arch and arch != normalize_arch(platform.machine()))):
        # another machine's OS or arch, its GPUs not described: this host's driver is not its own
        reading = detect.DriverReading(None, False, (), False, None, (DRIVER_NOT_GIVEN, GPU_NOT_GIVEN))
    else:
        reading = (reader or detect.read_driver)(os_name, want_banner=opts.detect_extras)
    warnings.extend(reading.warnings)
    driver = reading.driver
    if driver is not None and not DRIVER_VERSION.match(driver):
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
    others = machine_more.amd_and_intel(os_name, matrices, warnings, no_nvidia_driver=driver is None and reading.driver_known)
    gpus += others
    gpus_known = reading.gpus_known or bool(others)
    warnings.extend(machine_more.left_out_note(gpus, driver, reading.driver_known))
    jetson = opts.jetson or detect.detect_jetson()
    jetpack = machine_more.jetpack(opts.jetpack, matrices) if opts.jetpack else machine_more.read_jetpack(matrices, warnings) if jetson else None
    driver_known = reading.driver_known
    board = machine_more.board_gpu(matrices.jetpack(jetpack), gpus)
    if jetson and driver is None:
        # a Jetson's driver is its JetPack's own: no nvidia-smi (a container, JetPack 5 and 6) is
        # no sign of its absence, and its version file names Jetson Linux, not a driver
        driver_known = False
    if board is not None:
        gpus.append(board)
        gpus_known = True
    if opts.rocm is not None and not any(g.vendor == "amd" for g in gpus):
        warnings.append(ROCM_WITHOUT_AMD)
    return Machine(
        os=os_name,
        arch=arch,
        python=python,
        driver=driver,
        driver_known=driver_known,
        gpus=tuple(gpus),
        gpus_known=gpus_known,
        jetson=jetson,
        jetpack=jetpack,
        cuda_driver_max=reading.cuda_driver_max or cuda_driver_max(driver, os_name, matrices.toolkits.values()),
        warnings=tuple(warnings),
        detected=not another_machine,
        macos=macos,
        rocm=machine_more.host_rocm(opts.rocm, matrices) if opts.rocm is not None else machine_more.read_host_rocm(os_name, gpus),
        amdgpu=machine_more.read_amdgpu(os_name, gpus),
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
        # detect's and doctor's: a null driver with driver_known false is not known (not given,
        # nvidia-smi missing or silent), with true no NVIDIA driver
        out["driver_known"] = machine.driver_known
        out["cuda_driver_max"] = machine.cuda_driver_max
    gpus = []
    for gpu in machine.gpus:
        item: dict[str, object] = {
            "name": gpu.name,
            "compute_capability": f"{gpu.compute_capability[0]}.{gpu.compute_capability[1]}" if gpu.compute_capability else None,
        }
        if full:
            item["memory_mib"] = gpu.memory_mib
        if gpu.vendor != "nvidia":  # AMD and Intel GPUs: whose, and the target their kernels are built for
            item["vendor"] = gpu.vendor
            item["target"] = gpu.target
        gpus.append(item)
    out["gpus"] = gpus
    if full:
        out["jetson"] = machine.jetson
        if machine.jetpack:
            out["jetpack"] = machine.jetpack
        if machine.rocm is not None:
            out["rocm"] = machine.rocm or None  # null: no ROCm on the host; absent: unknown
        if machine.amdgpu is not None:
            out["amdgpu_dkms"] = machine.amdgpu or None  # null: the kernel's own amdgpu
        out["toolkits"] = list(machine.toolkits)
        out["frameworks"] = list(machine.frameworks)
        out["warnings"] = list(machine.warnings)
    return out
