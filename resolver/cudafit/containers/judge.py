"""Whether an NGC framework container runs on a host. An image brings no driver: the host's decides.

Two things must hold. The host's driver meets the driver the release needs (its notes' branch
where the data has it, else the toolkit driver of its CUDA from matrices/nvidia.toml), or, on a
data-center GPU, is one of the older branches the release lists for forward compatibility (the
CUDA forward-compatibility package the image carries). And every GPU is one the image has code
for: its CUDA's compile targets (nvidia.toml's [[toolkit]] targets, the list rules.check_arch
reads: CUDA 12 dropped Kepler, CUDA 13 Maxwell, Pascal and Volta), the release's own lowest
compute capability where the data has it, and a driver that drives the GPU at all.

Unknown stays unknown: a release whose CUDA the data lacks, a host whose driver or GPU is not
given, a data-center GPU on an older branch where the release's list is not in the data."""

from __future__ import annotations

from typing import NamedTuple, Optional

from packaging.version import InvalidVersion, Version

from cudafit.containers.data import Container, Fact
from cudafit.records import CC, GpuInfo, Machine, Matrices, cc_str, driver_key, parse_cc, sm

# segments forward compatibility never covers: NVIDIA's compatibility guide names data-center GPUs,
# select NGC Server Ready RTX cards (workstation parts, which the data does not single out) and
# Jetson boards
_NO_FORWARD = frozenset(("geforce", "geforce-laptop"))
_NOT_GIVEN = "the GPU is not given"
_DISCRETE = "these images are for discrete GPUs on x86_64 and arm64 (SBSA) servers"


class Verdict(NamedTuple):
    container: Container
    runs: Optional[bool]  # None: not known
    why: str
    driver_min: str = ""  # the driver it needs ("525", "575.51.03"), where known
    forward_compat: bool = False  # runs only through forward compatibility (a data-center GPU)


class _Part(NamedTuple):
    """What one check found: True it holds, False it rules the release out, None cannot tell."""

    runs: Optional[bool]
    why: str
    forward_compat: bool = False


def judge_all(machine: Machine, matrices: Matrices, framework: str = "pytorch") -> list[Verdict]:
    return [judge(c, machine, matrices) for c in matrices.ngc_containers if c.framework == framework]


def judge(c: Container, machine: Machine, matrices: Matrices) -> Verdict:
    floor, stated = _floor(c, machine, matrices)
    if machine.os not in ("linux", "wsl", None):
        return Verdict(c, False, "the containers are Linux images: a Linux host (or WSL2) runs them", floor)
    board = _board(c, machine, matrices)
    if board is not None:
        return Verdict(c, board.runs, board.why, floor)
    if machine.driver_known and machine.driver is None:
        return Verdict(c, False, "no NVIDIA driver here: the containers need the host's", floor)
    cuda = _version(c.cuda)
    if cuda is None:
        return Verdict(c, None, "its CUDA version is not in cudafit's data", floor)
    gpus = [g for g in machine.gpus if g.vendor == "nvidia"]
    # the GPU first: no driver makes up for an architecture the image has no code for
    parts = [_gpus(c, cuda, machine, matrices, gpus), _driver(c, cuda, machine, matrices, gpus, floor, stated)]
    for part in parts:
        if part.runs is False:
            return Verdict(c, False, part.why, floor)
    unknown = [p.why for p in reversed(parts) if p.runs is None]
    if len(unknown) == 2 and unknown[1].startswith(_NOT_GIVEN):
        unknown[0] = unknown[0].removesuffix(f"; {_NOT_GIVEN}")  # said once, where the GPU part says what it decides
    if unknown:
        return Verdict(c, None, "; ".join(unknown), floor)
    return Verdict(c, True, "; ".join(p.why for p in reversed(parts) if p.why), floor, parts[1].forward_compat)


def _board(c: Container, machine: Machine, matrices: Matrices) -> Optional[_Part]:
    """A Jetson's answer where the board decides it; None where the image is judged as on a server."""
    from cudafit.rules import jetson_problem

    igpu = c.image.endswith("-igpu")  # NVIDIA's images for Jetson's integrated GPU; none in the data yet
    if not machine.jetson:
        return _Part(False, "an iGPU image, for Jetson boards: this host's GPUs are discrete") if igpu else None
    if igpu:
        return _Part(None, "cudafit does not judge NVIDIA's iGPU images on a Jetson")
    if jetson_problem(matrices, machine) is None:
        return None  # Jetson Thor (JetPack 7) is an SBSA system: it runs the arm64 server images
    boards = [sm(g.compute_capability) for g in machine.gpus if g.vendor == "nvidia" and g.compute_capability]
    if machine.jetpack is None and not boards:
        # the board is not known, and Thor runs the server images while the boards before it do not
        why = f"{_DISCRETE}: a Jetson before Thor runs none of them, Jetson Thor (JetPack 7) the arm64 ones; give --jetpack or the board's GPU"
        return _Part(None, why)
    board = f"this Jetson ({', '.join(boards)})" if boards else "this Jetson"
    software = f" on JetPack {machine.jetpack}" if machine.jetpack else ""
    return _Part(
        False, f"{_DISCRETE}: {board}{software} needs NVIDIA's images for Jetson's integrated GPU (the -py3-igpu tags), which cudafit's data does not hold"
    )


def _driver(c: Container, cuda: Version, machine: Machine, matrices: Matrices, gpus: list[GpuInfo], floor: str, stated: str) -> _Part:
    minor = f"{cuda.major}.{cuda.minor}"
    if not machine.driver_known or machine.driver is None:
        if floor:
            return _Part(None, f"the host's driver is not given; it needs driver >= {floor} ({stated})")
        return _Part(None, f"the host's driver is not given, and the driver CUDA {minor} needs is not in cudafit's data")
    driver = machine.driver
    if floor:
        need = f"driver >= {floor} ({stated})"
        if _meets(driver, floor):
            return _Part(True, f"driver {driver} meets {need}")
        return _forward(c, machine, matrices, gpus, f"driver {driver} is older than {need}")
    compat = matrices.compat.get(cuda.major)
    least = (compat.windows_driver_min if machine.os == "wsl" else compat.linux_driver_min) if compat else None
    if least and not _meets(driver, least):
        # minor-version compatibility: no build of the major runs below it on the driver alone;
        # forward compatibility is the only way below it, as below any release's own floor
        older = (
            f"driver {driver} is older than {least}, the floor of every CUDA {cuda.major}.x build under minor-version compatibility"
            f" (the driver CUDA {minor} itself needs is not in cudafit's data)"
        )
        return _forward(c, machine, matrices, gpus, older)
    return _Part(None, f"the driver CUDA {minor} needs is not in cudafit's data")


def _forward(c: Container, machine: Machine, matrices: Matrices, gpus: list[GpuInfo], older: str) -> _Part:
    """Below the driver it needs: only forward compatibility runs it, on the GPUs it covers and the
    older branches the release lists."""
    assert machine.driver is not None
    branch = driver_key(machine.driver)[0]
    listed = None if not c.forward_compat else any(_branch_meets(item, branch, machine.driver) for item in c.forward_compat)
    if listed is False:  # whatever the GPU: its branch is not one the release runs on
        return _Part(False, f"{older}, and its branch is not among those it runs on through forward compatibility ({', '.join(c.forward_compat)})")
    # a Jetson's GPU is its board's, whatever name the driver or JetPack gives it
    segments = ["jetson" if machine.jetson else _segment(g, matrices) for g in gpus]
    if "datacenter" in segments:
        if listed:
            return _Part(True, f"{older}, and R{branch} runs it through forward compatibility (data-center GPU)", True)
        return _Part(None, f"{older}; a data-center GPU may run it through forward compatibility, but this release's branches are not in the data")
    covers = "forward compatibility is for data-center GPUs only (and select NGC Server Ready RTX cards)"
    if gpus and all(s in _NO_FORWARD for s in segments):
        return _Part(False, f"{older}; {covers}: {', '.join(_name(g) for g in gpus)} {'is a GeForce GPU' if len(gpus) == 1 else 'are GeForce GPUs'}")
    if not gpus:
        return _Part(None, f"{older}; {covers}; {_NOT_GIVEN}")
    unsure = [_unsure(g, s) for g, s in zip(gpus, segments, strict=True) if s not in _NO_FORWARD]
    return _Part(None, f"{older}; {covers}: {'; '.join(unsure)}")


def _unsure(g: GpuInfo, segment: Optional[str]) -> str:
    """Why forward compatibility may or may not cover a GPU that is not a data-center one."""
    if segment == "workstation":
        return f"{_name(g)} is a workstation GPU, and cudafit's data does not list which are NGC Server Ready"
    if segment == "jetson":  # the guide names Jetson boards, but the releases list data-center branches
        return f"{_name(g)} is a Jetson's, and whether this release runs on its driver through forward compatibility is not in cudafit's data"
    return f"whether {_name(g)} is a data-center GPU is not in cudafit's data"


def _gpus(c: Container, cuda: Version, machine: Machine, matrices: Matrices, gpus: list[GpuInfo]) -> _Part:
    """Whether the image has code for every GPU, and the host's driver drives them."""
    from cudafit.rules import check_gpu_support_by_driver, gpu_label

    minor = f"{cuda.major}.{cuda.minor}"
    toolkit = matrices.toolkit(Version(minor))
    targets = toolkit.targets if toolkit is not None else None
    earlier = _earlier_floor(c, matrices)
    known = [g for g in gpus if g.compute_capability is not None]
    found = [_supports(c, minor, g.compute_capability, gpu_label(g), targets, earlier, matrices) for g in known if g.compute_capability]
    no = next((p for p in found if p.runs is False), None)
    if no is not None:
        return no
    driven = check_gpu_support_by_driver(matrices, machine) if machine.driver_known and machine.driver else None
    if driven:
        return _Part(False, driven)
    unknown = [p.why for p in found if p.runs is None]
    unread = [g for g in gpus if g.compute_capability is None]
    doubt = _any_gpu(c, minor, machine, matrices, targets, earlier, unread) if unread or not gpus else ""
    if doubt:
        unknown.append(doubt)
    if unknown:
        return _Part(None, "; ".join(unknown))
    if not known:  # said, as it is what a yes without a GPU rests on
        return _Part(True, f"CUDA {minor} supports every GPU cudafit's data knows driver {machine.driver} to drive")
    return _Part(True, "")  # the given GPUs' support goes without saying beside the driver's


def _supports(
    c: Container, minor: str, cc: CC, label: str, targets: Optional[frozenset[CC]], earlier: Optional[tuple[CC, Container]], matrices: Matrices
) -> _Part:
    if targets is None:
        return _Part(None, f"which GPUs CUDA {minor} supports is not in cudafit's data")
    if not any(t[0] == cc[0] and t[1] <= cc[1] for t in targets):  # SASS runs on its major's later minors (rules.check_arch)
        if cc < min(targets):
            # the toolkit dropped it: PTX is compiled onto newer GPUs only, so nothing in the image runs on it
            arch = matrices.architecture(cc)
            named = f", a {arch.name} GPU" if arch is not None else ""
            evidence = f"nvidia.toml: CUDA {minor}'s targets; the image's CUDA {c.cuda.value if c.cuda else minor}, {c.cuda.grade if c.cuda else 'unknown'}"
            return _Part(False, f"CUDA {minor} supports compute capability {cc_str(min(targets))} and up, not {label}{named} ({evidence})")
        # a GPU newer than the toolkit's targets runs only PTX, JIT-compiled by the driver
        return _Part(None, f"no CUDA {minor} target runs on {label}: only PTX could, and whether the image carries it is not in cudafit's data")
    floor = _cc(c.min_cc)
    if c.min_cc is not None and floor is not None and cc < floor:
        return _Part(False, f"it supports compute capability {c.min_cc.value} and up ({c.min_cc.grade}); {label} is below it")
    if c.min_cc is None and earlier is not None and cc < earlier[0]:
        # NVIDIA's images drop architectures before their CUDA does; one dropped before stays in doubt
        before = earlier[1]
        assert before.min_cc is not None
        why = (
            f"release {before.tag} already supported only compute capability {before.min_cc.value} and up ({before.min_cc.grade}),"
            f" and this release's own lowest is not in cudafit's data; {label} is below it"
        )
        return _Part(None, why)
    return _Part(True, "")


def _any_gpu(
    c: Container,
    minor: str,
    machine: Machine,
    matrices: Matrices,
    targets: Optional[frozenset[CC]],
    earlier: Optional[tuple[CC, Container]],
    unread: list[GpuInfo],
) -> str:
    """A GPU is not given, or its compute capability not known: the release runs only if it runs on
    every GPU the host's driver can drive (gpus.toml's discrete GPUs, by the driver branches of
    their architectures); "" where it does."""
    from cudafit.rules import check_gpu_support_by_driver

    missing = _NOT_GIVEN if not unread else f"the compute capability of {', '.join(_name(g) for g in unread)} is not in cudafit's data"
    if not machine.driver_known or machine.driver is None:
        return missing
    ccs = sorted({m.compute_capability for m in matrices.gpus.values() if m.segment != "jetson"})
    drivable = [cc for cc in ccs if check_gpu_support_by_driver(matrices, machine._replace(gpus=(GpuInfo(None, cc),))) is None]
    failing = [(cc, part) for cc in drivable for part in [_supports(c, minor, cc, sm(cc), targets, earlier, matrices)] if part.runs is not True]
    if not failing:
        return ""
    shown = ", ".join(sm(cc) for cc, _part in failing)
    return f"{missing}, and it decides: driver {machine.driver} also drives GPUs of {shown}, and {failing[0][1].why}"


def _earlier_floor(c: Container, matrices: Matrices) -> Optional[tuple[CC, Container]]:
    """The highest lowest-compute-capability an earlier release of the framework declared."""
    key = _tag_key(c.tag)
    if key is None:
        return None
    floors = []
    for other in matrices.ngc_containers:
        other_key, floor = _tag_key(other.tag), _cc(other.min_cc)
        if other.framework == c.framework and other_key is not None and other_key < key and floor is not None:
            floors.append((floor, other))
    return max(floors, key=lambda f: f[0]) if floors else None


def _floor(c: Container, machine: Machine, matrices: Matrices) -> tuple[str, str]:
    """(the driver it needs, where that is stated)."""
    if c.driver_branch is not None:
        return c.driver_branch.value, f"release {c.tag}'s notes, {c.driver_branch.grade}"
    cuda = _version(c.cuda)
    if c.cuda is None or cuda is None:
        return "", ""
    toolkit = matrices.toolkit(Version(f"{cuda.major}.{cuda.minor}"))
    floor = (toolkit.windows_driver_min if machine.os == "wsl" else toolkit.linux_driver_min) if toolkit else None
    return (floor or ""), f"the CUDA {cuda.major}.{cuda.minor} toolkit's driver; CUDA {c.cuda.grade}"


def _version(fact: Optional[Fact]) -> Optional[Version]:
    try:
        return Version(fact.value) if fact is not None else None
    except InvalidVersion:
        return None


def _cc(fact: Optional[Fact]) -> Optional[CC]:
    try:
        return parse_cc(fact.value) if fact is not None else None
    except ValueError:
        return None


def _tag_key(tag: str) -> Optional[tuple[int, ...]]:
    try:
        return tuple(int(p) for p in tag.split("."))
    except ValueError:
        return None  # a described image has no release tag


def _branch_meets(item: str, branch: int, driver: str) -> bool:
    """Whether the driver is of a listed forward-compatibility branch ("R470 >= 470.57") and meets its floor."""
    name, _, minimum = (part.strip() for part in item.partition(">="))
    return name == f"R{branch}" and _meets(driver, minimum)


def _meets(driver: str, floor: str) -> bool:
    try:
        have, need = driver_key(driver), driver_key(floor)
    except ValueError:
        return False
    return have >= need if len(need) > 1 else have[0] >= need[0]


def _name(g: GpuInfo) -> str:
    return g.name or (sm(g.compute_capability) if g.compute_capability else "its GPU")


def _segment(g: GpuInfo, matrices: Matrices) -> Optional[str]:
    """The GPU's market segment in gpus.toml; None where the data does not know the GPU."""
    from cudafit.gpus import lookup_gpu

    model = lookup_gpu(matrices.gpus, g.name)[0] if g.name else None
    return (model.segment or None) if model is not None else None
