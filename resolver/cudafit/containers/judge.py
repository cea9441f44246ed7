"""Whether an NGC container runs on a host. NVIDIA states each release's need as its CUDA's driver
branch or later (where its notes give the branch, that one; else the toolkit driver of its CUDA,
from matrices/nvidia.toml), and that data-center GPUs also run it on the older branches it lists,
through the CUDA forward-compatibility package the image carries. An image brings no driver: the
host's decides. Unknown stays unknown: a release whose CUDA the data lacks, a host whose driver
is not given, a data-center GPU on an older branch where the release's list is not in the data."""

from __future__ import annotations

from typing import NamedTuple, Optional

from packaging.version import InvalidVersion, Version

from cudafit.containers.data import Container
from cudafit.records import GpuInfo, Machine, Matrices, driver_key


class Verdict(NamedTuple):
    container: Container
    runs: Optional[bool]  # None: not known
    why: str
    driver_min: str = ""  # the driver it needs ("525", "575.51.03"), where known
    forward_compat: bool = False  # runs only through forward compatibility (a data-center GPU)


def judge_all(machine: Machine, matrices: Matrices, framework: str = "pytorch") -> list[Verdict]:
    return [judge(c, machine, matrices) for c in matrices.ngc_containers if c.framework == framework]


def judge(c: Container, machine: Machine, matrices: Matrices) -> Verdict:
    floor, stated = _floor(c, machine, matrices)
    if machine.os not in ("linux", "wsl", None):
        return Verdict(c, False, "the containers are Linux images: a Linux host (or WSL2) runs them", floor)
    if machine.driver_known and machine.driver is None:
        return Verdict(c, False, "no NVIDIA driver here: the containers need the host's", floor)
    if c.cuda is None:
        return Verdict(c, None, "its CUDA version is not in cudafit's data", floor)
    if floor == "":
        below = _below_major_floor(c.cuda.value, machine, matrices)
        if below:
            return Verdict(c, False, below, floor)
        return Verdict(c, None, f"the driver CUDA {c.cuda.value} needs is not in cudafit's data", floor)
    need = f"driver >= {floor} ({stated})"
    gpus = [g for g in machine.gpus if g.vendor == "nvidia"]
    if not machine.driver_known or machine.driver is None:
        return Verdict(c, None, f"the host's driver is not given; it needs {need}", floor)
    low = _below_min_cc(c, gpus)
    if low:
        return Verdict(c, False, low, floor)
    if _meets(machine.driver, floor):
        return Verdict(c, True, f"driver {machine.driver} meets {need}", floor)
    older = f"driver {machine.driver} is older than {need}"
    if not any(_datacenter(g.name, matrices) for g in gpus):
        return Verdict(c, False, f"{older}; forward compatibility is for data-center GPUs only", floor)
    if not c.forward_compat:
        why = f"{older}; a data-center GPU may run it through forward compatibility, but this release's branches are not in the data"
        return Verdict(c, None, why, floor)
    branch = driver_key(machine.driver)[0]
    for item in c.forward_compat:
        name, _, minimum = (part.strip() for part in item.partition(">="))
        if name == f"R{branch}" and _meets(machine.driver, minimum):
            return Verdict(c, True, f"{older}, and R{branch} runs it through forward compatibility (data-center GPU)", floor, True)
    listed = ", ".join(c.forward_compat)
    return Verdict(c, False, f"{older}, and its branch is not among those it runs on through forward compatibility ({listed})", floor)


def _floor(c: Container, machine: Machine, matrices: Matrices) -> tuple[str, str]:
    """(the driver it needs, where that is stated)."""
    if c.driver_branch is not None:
        return c.driver_branch.value, f"release {c.tag}'s notes, {c.driver_branch.grade}"
    if c.cuda is None:
        return "", ""
    try:
        cuda = Version(c.cuda.value)
    except InvalidVersion:
        return "", ""
    toolkit = matrices.toolkit(Version(f"{cuda.major}.{cuda.minor}"))
    floor = (toolkit.windows_driver_min if machine.os == "wsl" else toolkit.linux_driver_min) if toolkit else None
    return (floor or ""), f"the CUDA {cuda.major}.{cuda.minor} toolkit's driver; CUDA {c.cuda.grade}"


def _below_major_floor(cuda: str, machine: Machine, matrices: Matrices) -> str:
    """Why the host's driver is below the floor every build of the CUDA major needs (13.x: R580),
    where the release's own floor is not known but that one is; else ""."""
    if not machine.driver_known or machine.driver is None:
        return ""
    try:
        major = Version(cuda).major
    except InvalidVersion:
        return ""
    compat = matrices.compat.get(major)
    floor = (compat.windows_driver_min if machine.os == "wsl" else compat.linux_driver_min) if compat else None
    if floor and not _meets(machine.driver, floor):
        return f"driver {machine.driver} is older than {floor}, the floor of every CUDA {major}.x build"
    return ""


def _meets(driver: str, floor: str) -> bool:
    try:
        have, need = driver_key(driver), driver_key(floor)
    except ValueError:
        return False
    return have >= need if len(need) > 1 else have[0] >= need[0]


def _datacenter(name: Optional[str], matrices: Matrices) -> bool:
    from cudafit.gpus import lookup_gpu

    model = lookup_gpu(matrices.gpus, name)[0] if name else None
    return model is not None and model.segment == "datacenter"


def _below_min_cc(c: Container, gpus: list[GpuInfo]) -> str:
    if c.min_cc is None:
        return ""
    major, _, minor = c.min_cc.value.partition(".")
    for g in gpus:
        if g.compute_capability is not None and g.compute_capability < (int(major), int(minor or 0)):
            return f"it supports compute capability {c.min_cc.value} and up ({c.min_cc.grade}); {g.name} is {g.compute_capability[0]}.{g.compute_capability[1]}"
    return ""
