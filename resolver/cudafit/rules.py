"""The CUDA facts every framework shares: will this driver load a build, and does the build carry
code for this GPU. Pure functions over Matrices and Machine; each answer carries its reason."""

from __future__ import annotations

from typing import Literal, NamedTuple, Optional, Union

from packaging.version import Version

from cudafit.records import CC, Constraint, GpuInfo, Machine, Matrices, Shortfall, driver_key, sm


def gpu_usable(machine: Machine) -> bool:
    """Whether a CUDA build could use this machine's GPU: not a Mac, and an NVIDIA driver is there
    or unknown (a description without one). A known absence of the driver means CPU builds, even
    beside a GPU: nothing CUDA can load."""
    return machine.os != "macos" and (machine.driver is not None or not machine.driver_known)


class Verdict(NamedTuple):
    ok: bool
    reason: str  # why it fails, or how it passes
    warning: Optional[str] = None
    constraint: Union[Constraint, Literal[""]] = ""  # "": it passes
    shortfall: Optional[Shortfall] = None  # what the machine lacks, as values (None: it passes, or the data is what lacks)


def _uses_windows_driver(machine: Machine) -> bool:
    # Under WSL2 the Linux side sees the Windows driver, and nvidia-smi prints its version
    # (566.36, say), so the Windows column of NVIDIA's table applies.
    return machine.os in ("windows", "wsl")


def driver_floor(matrices: Matrices, machine: Machine, cuda: Version, strict: bool) -> tuple[Optional[str], str]:
    """The oldest driver that loads a CUDA `cuda` build, and which rule sets it.

    By default NVIDIA's minor-version compatibility applies (any 12.x build runs on the 12.0-era
    driver floor); strict mode demands the toolkit's own driver. CUDA 10.x has no minor-version
    compatibility, so its own driver is the floor either way."""
    windows = _uses_windows_driver(machine)
    toolkit = matrices.toolkit(cuda)
    own = None
    if toolkit is not None:
        own = toolkit.windows_driver_min if windows else toolkit.linux_driver_min
    compat = matrices.compat.get(cuda.major)
    if not strict and compat is not None:
        floor = compat.windows_driver_min if windows else compat.linux_driver_min
        if floor is not None:
            return floor, f"CUDA {cuda.major}.x minor-version compatibility floor"
    return own, f"CUDA {cuda} toolkit driver"


def own_driver(matrices: Matrices, machine: Machine, cuda: Version) -> Optional[str]:
    toolkit = matrices.toolkit(cuda)
    if toolkit is None:
        return None
    return toolkit.windows_driver_min if _uses_windows_driver(machine) else toolkit.linux_driver_min


def check_driver(matrices: Matrices, machine: Machine, cuda: Version, strict: bool) -> Verdict:
    floor, rule = driver_floor(matrices, machine, cuda, strict)
    side = "Windows" if _uses_windows_driver(machine) else "Linux"
    if floor is None:
        return Verdict(False, f"the {side} driver needed for CUDA {cuda} is unknown in cudafit's data", constraint="driver")
    if not machine.driver_known:
        return Verdict(
            True, f"needs {side} driver >= {floor} ({rule})", warning=f"CUDA {cuda} build needs {side} driver >= {floor} ({rule}); the driver was not checked"
        )
    if machine.driver is None:
        return Verdict(False, "no NVIDIA driver", constraint="driver", shortfall=Shortfall("driver", floor, "none"))
    if driver_key(machine.driver) < driver_key(floor):
        return Verdict(False, f"driver {machine.driver} < {floor} ({rule})", constraint="driver", shortfall=Shortfall("driver", floor, machine.driver))
    return Verdict(True, f"driver {machine.driver} >= {floor} ({rule})")


def check_gpu_support_by_driver(matrices: Matrices, machine: Machine) -> Optional[str]:
    """A reason when the driver itself cannot drive a GPU (only possible for a described machine)."""
    if machine.driver is None:
        return None
    for gpu in machine.gpus:
        arch = matrices.architecture(gpu.compute_capability) if gpu.compute_capability else None
        if arch is None:
            continue
        if arch.first_driver and driver_key(machine.driver) < driver_key(arch.first_driver):
            return f"driver {machine.driver} predates {arch.name} support (needs the R{arch.first_driver} branch or newer) for {gpu_label(gpu)}"
        # Only Linux driver numbers name their branch (R580 is 580.x); Windows builds of one
        # branch run on past it (581.xx, 582.xx), so the end of support is checked on Linux only.
        if arch.last_driver and not _uses_windows_driver(machine) and driver_key(machine.driver)[0] > driver_key(arch.last_driver)[0]:
            return f"driver {machine.driver} is newer than the last branch supporting {arch.name} (R{arch.last_driver}) for {gpu_label(gpu)}"
    return None


def jetson_problem(matrices: Matrices, machine: Machine) -> Optional[str]:
    """Why the frameworks' server (SBSA) aarch64 builds do not run on this Jetson, or None.

    The board decides: JetPack 7 on Thor is SBSA and runs them; boards before it need NVIDIA's
    Jetson builds. Without a GPU given, the board is assumed to be one before Thor, and the
    answer says so, with the JetPack it assumes."""
    if not machine.jetson:
        return None
    ccs = [g.compute_capability for g in machine.gpus if g.compute_capability]
    lines = matrices.jetpacks
    if machine.jetpack is not None:
        jetpack = matrices.jetpack(machine.jetpack)
        board = ", ".join(gpu_label(g) for g in machine.gpus if g.compute_capability) or "this Jetson"
        assumed = ""
    elif ccs:
        fitting = [j for j in lines if all(cc in j.compute_capabilities for cc in ccs)]
        jetpack = fitting[-1] if fitting else None
        board = ", ".join(gpu_label(g) for g in machine.gpus if g.compute_capability)
        assumed = ""
    else:
        jetpack = next((j for j in reversed(lines) if not j.server_builds), None)
        board = "a Jetson board before Thor"
        assumed = " (assumed: no GPU given; for Jetson Thor give --compute-capability 11.0 or --gpu 'NVIDIA Thor')"
    if jetpack is not None and jetpack.server_builds:
        return None
    # a JetPack not given is the newest line for the board: said as such
    given = "" if machine.jetpack is not None else ", the newest line for it: --jetpack X.Y gives yours"
    software = f" on JetPack {jetpack.version} (Jetson Linux {jetpack.jetson_linux}{given})" if jetpack is not None else ""
    software = software or " (no JetPack line for it in cudafit's data)"
    return f"{board}{software} needs NVIDIA's Jetson builds: the index and PyPI aarch64 builds are for SBSA servers and Jetson Thor{assumed}"


def macos_too_old(macos_min: dict[str, str], by_python: dict[str, str], machine: Machine) -> Optional[str]:
    """A wheel's macOS tag is a floor pip enforces: on an older Mac the release has no wheel.
    (A platform fact, not a CUDA one, but every framework's macOS wheels carry it.)"""
    if machine.os != "macos" or not machine.macos or machine.platform is None:
        return None
    need = by_python.get(machine.python or "") or macos_min.get(machine.platform)
    if need and Version(machine.macos) < Version(need):
        return f"its macOS wheels need macOS >= {need} (this Mac: {machine.macos})"
    return None


def gpus_first_driver(matrices: Matrices, machine: Machine) -> Optional[str]:
    """The oldest driver branch every GPU's architecture is supported from, where known."""
    branches = [
        arch.first_driver
        for g in machine.gpus
        if g.compute_capability
        for arch in [matrices.architecture(g.compute_capability)]
        if arch is not None and arch.first_driver
    ]
    return max(branches, key=driver_key) if branches else None


def gpus_oldest_driver(matrices: Matrices, machine: Machine) -> Optional[str]:
    """The oldest driver every GPU's architecture runs on: its branch ("570") stands for the oldest
    driver of it a toolkit names (CUDA 12.8: 570.26), since "570.00" would fail that toolkit's own
    driver checks (PTX JIT); the branch itself where no toolkit names one of it."""
    need = gpus_first_driver(matrices, machine)
    if need and "." not in need:
        windows = machine.os in ("windows", "wsl")
        named = [t.windows_driver_min if windows else t.linux_driver_min for t in matrices.toolkits.values()]
        in_branch = [d for d in named if d and d != "unknown" and d.split(".")[0] == need]
        need = min(in_branch, key=driver_key) if in_branch else need
    return need


def floor_for_gpus(floor: str, machine: Machine, matrices: Matrices) -> str:
    """A set's driver floor (its CUDA builds' own), raised to the branch the machine's GPUs'
    architecture needs: a B200 on a CUDA 12.9 build needs R570 (12.8's 570.26), not 12.x's 525."""
    if not floor:
        return ""
    need = gpus_oldest_driver(matrices, machine)
    return max(floor, need, key=driver_key) if need else floor


def gpu_driver_needs(matrices: Matrices, machine: Machine) -> list[str]:
    """What each GPU asks of a driver, for answers where the driver is unknown."""
    needs = []
    for gpu in machine.gpus:
        arch = matrices.architecture(gpu.compute_capability) if gpu.compute_capability else None
        if arch is not None and arch.first_driver:
            needs.append(f"{gpu_label(gpu)} needs a driver of the R{arch.first_driver} branch or newer ({arch.name})")
    return needs


def gpu_label(gpu: GpuInfo) -> str:
    cc = sm(gpu.compute_capability) if gpu.compute_capability else "unknown sm"
    return f"{gpu.name} ({cc})" if gpu.name else cc


def check_arch(
    matrices: Matrices,
    machine: Machine,
    cuda: Version,
    sass: Optional[frozenset[CC]],
    ptx: Optional[frozenset[CC]],
) -> tuple[Verdict, bool]:
    """Does the build carry code for every GPU? Returns (verdict, needs_jit).

    SASS runs on GPUs of the same major with an equal or higher minor; PTX is JIT-compiled by the
    driver for any equal-or-newer GPU, but a driver older than the toolkit that wrote the PTX
    cannot compile it, even under minor-version compatibility."""
    known: list[tuple[GpuInfo, CC]] = [(g, g.compute_capability) for g in machine.gpus if g.compute_capability is not None]
    if not known:
        return Verdict(True, "GPU architecture not checked", warning=None), False
    if sass is None:
        # The build's list is unknown, but the toolkit bounds it: CUDA 12.6 cannot have compiled
        # SASS for sm_120, nor CUDA 13.0 for sm_61. Such a GPU can only run the build's PTX.
        toolkit = matrices.toolkit(cuda)
        if toolkit is None or toolkit.targets is None:
            return Verdict(True, "architecture list unknown", warning=f"which GPU architectures the CUDA {cuda} build carries is unknown; not checked"), False
        targets = toolkit.targets
        out_of_reach = [(g, cc) for g, cc in known if not any(t[0] == cc[0] and t[1] <= cc[1] for t in targets)]
        if not out_of_reach:
            return Verdict(True, "architecture list unknown", warning=f"which GPU architectures the CUDA {cuda} build carries is unknown; not checked"), False
        if ptx is None:
            gpu = out_of_reach[0][0]
            return Verdict(
                False, f"CUDA {cuda} cannot compile SASS for {gpu_label(gpu)} and the build's PTX is unknown", constraint="compute-capability"
            ), False
        known, sass = out_of_reach, frozenset()
    needs_jit = False
    for gpu, cc in known:
        if any(s[0] == cc[0] and s[1] <= cc[1] for s in sass):
            continue
        ptx_ok = ptx is not None and any(p <= cc for p in ptx)
        if not ptx_ok:
            have = ", ".join(sm(c) for c in sorted(sass)) or "none"
            ptx_text = "unknown" if ptx is None else (", ".join(f"compute_{a}{b}" for a, b in sorted(ptx)) or "none")
            kernels = f"SASS {have}; PTX {ptx_text}"
            lacking = Shortfall("compute-capability", kernels, sm(cc))
            return Verdict(False, f"no kernel image for {gpu_label(gpu)}: {kernels}", constraint="compute-capability", shortfall=lacking), False
        own = own_driver(matrices, machine, cuda)
        if machine.driver is not None and (own is None or driver_key(machine.driver) < driver_key(own)):
            return Verdict(
                False,
                f"{gpu_label(gpu)} needs PTX JIT, which needs the CUDA {cuda} driver ({own or 'unknown'}); driver is {machine.driver}",
                constraint="compute-capability",
                shortfall=Shortfall("driver", own, machine.driver) if own else None,
            ), False
        needs_jit = True
    if needs_jit:
        return Verdict(True, "runs through PTX JIT", warning="no SASS for this GPU: kernels are JIT-compiled from PTX (slow first start, larger cache)"), True
    shown = ", ".join(sorted({sm(cc) for _g, cc in known}))
    return Verdict(True, f"SASS for {shown}"), False


def newest_toolkit(matrices: Matrices, major: int) -> Optional[Version]:
    return max((t.version for k, t in matrices.toolkits.items() if k[0] == major), default=None)


def installed_runtime(matrices: Matrices, cuda: Version, pins: Optional[dict[str, str]]) -> Version:
    """The CUDA runtime pip ends up installing for a build: the build's own when its pins are exact,
    else (ranges, or a plugin that takes any runtime of the major) the newest of the major, which
    is what --strict-driver must hold the driver to."""
    runtime = next((spec for dist, spec in (pins or {}).items() if dist.startswith("nvidia-cuda-runtime")), None)
    if runtime is not None and runtime.startswith("==") and "," not in runtime:
        return cuda
    return newest_toolkit(matrices, cuda.major) or cuda


class Refusal(NamedTuple):
    """Why a build does not run here: the constraint that decided, the reason in words, and what
    the machine lacks as values where that is known."""

    constraint: Constraint
    reason: str
    shortfall: Optional[Shortfall] = None


class BuildVerdict(NamedTuple):
    """Whether a CUDA build loads on the driver and carries code for every GPU."""

    rejection: Optional[Refusal]  # when it does not run here
    driver: Optional[Verdict] = None
    arch: Optional[Verdict] = None
    needs_jit: bool = False

    @property
    def warnings(self) -> tuple[str, ...]:
        return tuple(v.warning for v in (self.driver, self.arch) if v is not None and v.warning)

    @property
    def reason(self) -> str:
        return "; ".join(v.reason for v in (self.driver, self.arch) if v is not None)


def judge_cuda_build(
    matrices: Matrices,
    machine: Machine,
    cuda: Version,
    sass: Optional[frozenset[CC]],
    ptx: Optional[frozenset[CC]],
    strict: bool,
    driver_problem: Optional[str],
    built_with: Optional[Version] = None,
) -> BuildVerdict:
    """The checks every framework's CUDA build goes through. `built_with` is the toolkit that
    compiled the build when it differs from the CUDA runtime the driver must load (JAX)."""
    if machine.driver_known and machine.driver is None:
        return BuildVerdict(Refusal("accelerator", "CUDA build; this machine has no NVIDIA driver"))
    if driver_problem:
        return BuildVerdict(Refusal("driver", driver_problem))
    jetson = jetson_problem(matrices, machine)
    if jetson:
        return BuildVerdict(Refusal("platform", jetson))
    driver = check_driver(matrices, machine, cuda, strict)
    if not driver.ok:
        return BuildVerdict(Refusal(driver.constraint or "driver", driver.reason, driver.shortfall))
    arch, needs_jit = check_arch(matrices, machine, built_with or cuda, sass, ptx)
    if not arch.ok:
        return BuildVerdict(Refusal(arch.constraint or "compute-capability", arch.reason, arch.shortfall))
    return BuildVerdict(None, driver, arch, needs_jit)
