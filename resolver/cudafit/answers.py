"""Typed, immutable records of an answer: the packages a chosen build installs, why builds were
ruled out (Rejection) or cannot share an environment (Clash), the candidates and the resolution.
NamedTuples, as in records.py (import time)."""

from typing import NamedTuple, Optional

from packaging.version import Version

from cudafit.last_line import LastLine
from cudafit.records import BuildKind, ClashKind, Constraint, Evidence, Machine, Shortfall


class PackagePin(NamedTuple):
    name: str
    version: str  # public version, e.g. 2.5.1
    local: Optional[str]  # local tag, e.g. cu124; None when the index serves it without one
    variant: str
    index_url: Optional[str]  # None: PyPI
    extras: tuple[str, ...] = ()
    find_links: Optional[str] = None  # a -f page pip needs besides the index (old JAX CUDA wheels)
    pypi_build: bool = False  # PyPI serves this very build as NAME==VERSION (no local tag)
    supports: Optional[str] = None  # not a framework: a wheel installed for this family's build (TF's CUDA wheels)
    url: Optional[str] = None  # a wheel named by its URL (a project's release asset), not found on an index
    # How pip must install it: "" plainly; "no-deps" (it declares nothing, so nothing may move);
    # "no-build-isolation" (it compiles against the torch already installed)
    mode: str = ""

    @property
    def requirement(self) -> str:
        extras = f"[{','.join(self.extras)}]" if self.extras else ""
        if self.url:
            return f"{self.name}{extras} @ {self.url}"
        full = f"{self.version}+{self.local}" if self.local else self.version
        return f"{self.name}{extras}=={full}"


# Rejection causes the solver acts on (the wording stays in `reason`; nothing reads that text).
VERSION_SPEC = "version-spec"  # the release's version does not satisfy the spec
CPU_BESIDE_GPU = "cpu-beside-gpu"  # a CPU build exists, but a GPU is here: --cpu would take it
# A described machine's unknowns, said as warnings; a CPU build asks neither, so --cpu drops them.
DRIVER_NOT_GIVEN = "driver not given (--driver): the driver requirement is stated, not checked"
GPU_NOT_GIVEN = "GPU not given (--gpu/--compute-capability): GPU architecture not checked"


class Clash(NamedTuple):
    """Why two builds cannot share one environment: the solver's finding, as a value (explain.py
    words it)."""

    kind: ClashKind
    a: str  # the first build's label
    b: str  # the second build's label
    a_value: str = ""  # its CUDA major, cuDNN or specifier
    b_value: str = ""
    dist: str = ""  # the distribution both pin (kind pin)
    unknown_is_a: bool = False  # kind cudnn-unknown / pins-unknown: the first build's fact is the unknown one


class Rejection(NamedTuple):
    family: str  # "torch"
    version: Version
    tag: Optional[str]  # the build ("cu124"); None when the whole release was ruled out
    constraint: Constraint
    reason: str
    evidence: str = ""  # how the facts that decided are known, with sources (shown by --why)
    cause: str = ""  # what the answer does with it: VERSION_SPEC, CPU_BESIDE_GPU, a joint rejection's Clash kind, or "" (read the constraint)
    # A joint rejection: the family none of whose builds it fits, and the clash that tells why
    # (explain.py words its reason from them)
    against: str = ""
    clash: Optional[Clash] = None
    # What only the command line offers to take this build anyway ("ask for it with --cpu"):
    # shown after the reason where commands print it, left out where it means nothing (check, the API)
    advice: str = ""
    shortfall: Optional[Shortfall] = None  # what the machine lacks, as values (driver, kernels, Python), where known

    @property
    def build(self) -> str:
        if self.tag == "jetson":  # NVIDIA's Jetson wheels carry their own local version
            return str(self.version)
        return f"{self.version}+{self.tag}" if self.tag else str(self.version)

    @property
    def subject(self) -> str:
        return f"{self.family} {self.build}"


class BuildClash(NamedTuple):
    """A runnable build that cannot join the chosen set, and why."""

    family: str
    version: Version
    tag: str
    clash: Clash


class Candidate(NamedTuple):
    family: str
    version: Version
    tag: str  # the build: cu124, cpu, cu12 (TensorFlow/JAX CUDA flavour)
    kind: BuildKind
    packages: tuple[PackagePin, ...]
    cuda: Optional[str]
    cudnn: Optional[str]
    pins: dict[str, str]  # nvidia-*/cuda-* distribution -> specifier, shared with other frameworks
    pins_known: bool = True  # False: the build needs nvidia-* wheels, but which versions is unknown
    verified: bool = True  # False: which GPU architectures the build carries is unknown
    why: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    conda_channel_cuda: tuple[str, ...] = ()
    conda: Optional[dict[str, str]] = None  # TensorFlow's conda CUDA route
    evidence: dict[str, Evidence] = {}  # how each fact of the build is known (graded data only; never mutated)
    # A library built against another framework (xformers against torch): distribution -> the
    # version the chosen build of that framework must be.
    requires: dict[str, str] = {}
    loads_cudnn: bool = True  # False: it loads no cuDNN (xformers), so cuDNN majors are not its concern
    # True: its kernels load the CUDA runtime of the build it is made against, so that build must
    # be a CUDA one (xformers, vllm, flash-attn; torchao's kernels are optional)
    needs_required_cuda: bool = False
    torch_cuda: str = ""  # the CUDA versions of the build it is made against that it serves (records.Build.torch_cuda)
    environment: tuple[tuple[str, str], ...] = ()  # variables the build needs set to run here (HSA_OVERRIDE_GFX_VERSION)
    index_packages: tuple[str, ...] = ()  # what it requires that only its index serves (records.Build.index_packages)
    rocm: Optional[str] = None  # a ROCm build's ROCm release ("7.14"): one process loads one ROCm runtime
    # what the build installs beside its requirement at versions it fixes, as (name, specifier):
    # jaxlib and JAX's plugins; a constraints file holds them too
    held: tuple[tuple[str, str], ...] = ()

    @property
    def label(self) -> str:
        if self.tag == "jetson":  # NVIDIA's Jetson wheels carry their own local version
            return f"{self.family} {self.version}"
        return f"{self.family} {self.version}+{self.tag}"

    @property
    def shown(self) -> str:
        """The build as a user meets it: a CPU build pip installs without a local tag (PyPI's on
        macOS and Windows) is `torch 2.15.0 (CPU)`, never a `+cpu` that pip never shows."""
        if self.kind == "cpu" and self.packages and not any(p.local for p in self.packages):
            return f"{self.family} {self.version} (CPU)"
        return self.label


class Conflict(NamedTuple):
    """One cause of a failure, as explain.py words it: the constraint that decided (driver,
    compute-capability, joint, python, spec, data, hint, ...), what it is about ("torch
    2.15.0+cu130, 2.14.1+cu132"; "" for the whole request) and the reason."""

    constraint: str
    subject: str
    reason: str
    advice: str = ""  # what only the command line offers (an option), as Rejection.advice

    @property
    def worded(self) -> str:
        """The line `resolve` prints: "driver: torch 2.15.0+cu130: driver 535 < 580 (...)"."""
        return ": ".join(part for part in (self.constraint, self.subject, self.reason) if part) + (f" ({self.advice})" if self.advice else "")


class FloorAnswer(NamedTuple):
    """With the driver unknown: the best set for drivers from one CUDA major's floor up."""

    cuda_major: int
    driver_min: str  # the floor, raised to what the GPUs' architecture needs
    ok: bool
    requirements: tuple[str, ...]
    cause: str = ""  # why nothing runs there (the first conflict, worded)
    chosen: bool = False  # the row the answer is for
    reason: str = ""  # the cause's reason alone (what the per-floor table shows)
    built_for: tuple[int, ...] = ()  # the CUDA majors of the set's CUDA builds (a V100 on a CUDA 13 driver: 12)


class Request(NamedTuple):
    """What was asked, as the solver read it: each family's member specifiers in the order named,
    each family's releases in the data (newest first), and whether a CPU answer was asked for or
    would not help. explain.py words an answer's notes and a failure's conflicts from it."""

    families: dict  # family -> {distribution: SpecifierSet}, in the order named (never mutated)
    versions: dict  # family -> [version, ...] newest first (never mutated)
    cpu_asked: bool


class Resolution(NamedTuple):
    ok: bool
    machine: Machine
    candidates: tuple[Candidate, ...] = ()
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    conflicts: tuple[str, ...] = ()  # the causes of a failure, worded (Conflict.worded), cause first
    rejections: tuple[Rejection, ...] = ()
    shared_pins: dict[str, str] = {}  # nvidia-* versions every chosen build allows; emitted as pins
    offered: tuple[tuple[Candidate, ...], ...] = ()  # every family's runnable builds, best first
    by_driver_floor: tuple[FloorAnswer, ...] = ()  # driver unknown: the answer per CUDA major's floor
    clashes: tuple[BuildClash, ...] = ()  # every offered build that clashes with the chosen set
    pythons: frozenset[str] = frozenset()  # the Pythons every chosen release has wheels for here ("3.12")
    request: Optional[Request] = None  # what was asked (explain.worded words the answer from it)
    causes: tuple[Conflict, ...] = ()  # a failure's conflicts as values (conflicts holds their words)
    last_lines: tuple[LastLine, ...] = ()  # the GPU's last release line, where newer releases dropped it
    driver_min: str = ""  # the oldest NVIDIA driver that loads every chosen CUDA build ("" for none, or unknown)
    kernels: tuple = ()  # kernel_fit.Fit per GPU and feature for the chosen versions (matrices/kernels.toml)

    @property
    def packages(self) -> tuple[PackagePin, ...]:
        return tuple(p for c in self.candidates for p in c.packages)
