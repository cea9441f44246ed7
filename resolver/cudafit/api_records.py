"""The records of the Python API: frozen, keyword-built, and independent of the internal ones, so
the internals can change without breaking a caller. Each converts from its internal counterpart
here and nowhere else."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Optional

from cudafit import answers, records
from cudafit.errors import CudafitError, InputError
from cudafit.records import SCHEMA_VERSION

__all__ = [
    "SCHEMA_VERSION",
    "Cause",
    "Shortfall",
    "Environment",
    "Evidence",
    "Finding",
    "Gpu",
    "InstalledBuild",
    "Installer",
    "Machine",
    "NoSolution",
    "Package",
    "Plan",
    "Report",
    "Severity",
]


Installer = Literal["pip", "uv", "conda"]
Severity = Literal["error", "warning", "note"]


@dataclass(frozen=True, kw_only=True)
class Gpu:
    name: Optional[str] = None  # as nvidia-smi prints it; None where only the compute capability is known
    compute_capability: Optional[str] = None  # "8.6"; None: unknown
    memory_mib: Optional[int] = None
    vendor: str = "nvidia"  # nvidia | amd | intel
    target: Optional[str] = None  # AMD: its LLVM target (gfx1100); Intel: its device code (dg2)
    integrated: bool = False  # an APU's or a CPU's GPU


@dataclass(frozen=True, kw_only=True)
class Machine:
    """A machine as cudafit answers for it: described (`describe`) or read (`detect`)."""

    os: Optional[str]  # linux | windows | macos | wsl; None: unknown
    arch: Optional[str]  # x86_64 | aarch64
    python: Optional[str]  # "3.12"; None: not checked
    driver: Optional[str] = None  # "570.86.15"; None: no NVIDIA driver (driver_known) or unknown
    driver_known: bool = True  # False: whether and which driver is there is unknown (answers go per driver floor)
    gpus: tuple[Gpu, ...] = ()
    gpus_known: bool = True  # False: the GPUs are unknown (their architecture is not checked)
    jetson: bool = False
    macos: Optional[str] = None  # "14.5" on a Mac, where known
    jetpack: Optional[str] = None  # a Jetson's JetPack line ("6.2")
    rocm: Optional[str] = None  # the ROCm installed on the host ("7.2.1"); "": none; None: unknown
    amdgpu: Optional[str] = None  # AMD's DKMS amdgpu module version ("6.16.13"); "": the kernel's own; None: not read
    cuda_driver_max: Optional[str] = None  # the newest CUDA the driver supports ("12.8")
    warnings: tuple[str, ...] = ()
    detected: bool = False  # read from this machine rather than described

    @staticmethod
    def from_record(m: records.Machine) -> Machine:
        gpus = tuple(
            Gpu(
                name=g.name,
                compute_capability=f"{g.compute_capability[0]}.{g.compute_capability[1]}" if g.compute_capability else None,
                memory_mib=g.memory_mib,
                vendor=g.vendor,
                target=g.target,
                integrated=g.integrated,
            )
            for g in m.gpus
        )
        return Machine(
            os=m.os,
            arch=m.arch,
            python=m.python,
            driver=m.driver,
            driver_known=m.driver_known,
            gpus=gpus,
            gpus_known=m.gpus_known,
            jetson=m.jetson,
            macos=m.macos,
            jetpack=m.jetpack,
            rocm=m.rocm,
            amdgpu=m.amdgpu,
            cuda_driver_max=m.cuda_driver_max,
            warnings=m.warnings,
            detected=m.detected,
        )

    def to_record(self) -> records.Machine:
        gpus = tuple(
            records.GpuInfo(g.name, records.parse_cc(g.compute_capability) if g.compute_capability else None, g.memory_mib, g.vendor, g.target, g.integrated)
            for g in self.gpus
        )
        return records.Machine(
            os=self.os,
            arch=self.arch,
            python=self.python,
            driver=self.driver,
            driver_known=self.driver_known,
            gpus=gpus,
            gpus_known=self.gpus_known,
            jetson=self.jetson,
            cuda_driver_max=self.cuda_driver_max,
            warnings=self.warnings,
            detected=self.detected,
            macos=self.macos,
            jetpack=self.jetpack,
            rocm=self.rocm,
            amdgpu=self.amdgpu,
        )

    def to_dict(self) -> dict[str, Any]:
        """As `cudafit detect --json` prints the machine (without toolkits and frameworks: see inspect())."""
        from cudafit.machine import machine_json

        out = machine_json(self.to_record(), full=True)
        del out["toolkits"], out["frameworks"]
        return out


@dataclass(frozen=True, kw_only=True)
class Evidence:
    grade: str  # measured | declared | reported | unknown
    sources: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Package:
    """One package of a plan, exactly as it must be installed."""

    name: str
    version: str  # public version: "2.14.1"
    local: Optional[str]  # local tag ("cu126"); None where the index serves it without one
    variant: str  # cu126 | cpu | rocm6.4 | cu12 (TensorFlow/JAX flavour) | ...
    index_url: Optional[str]  # None: PyPI
    requirement: str  # "torch==2.14.1+cu126", extras included
    extras: tuple[str, ...] = ()
    find_links: Optional[str] = None  # a -f page pip needs besides the index
    url: Optional[str] = None  # a wheel named by its URL
    evidence: dict[str, Evidence] = field(default_factory=dict)  # how each fact of the build is known (the framework's own package only)

    @staticmethod
    def from_pin(pin: answers.PackagePin, candidate: answers.Candidate) -> Package:
        from cudafit.evidence import graded_facts

        evidence: dict[str, Evidence] = {}
        if pin.name == candidate.family and candidate.evidence:
            for fact, ev in graded_facts(candidate.evidence, candidate.kind == "cuda").items():
                evidence[fact] = Evidence(grade=ev.grade, sources=ev.source)
        return Package(
            name=pin.name,
            version=pin.version,
            local=pin.local,
            variant=pin.variant,
            index_url=pin.index_url,
            requirement=pin.requirement,
            extras=pin.extras,
            find_links=pin.find_links,
            url=pin.url,
            evidence=evidence,
        )


@dataclass(frozen=True, kw_only=True)
class Cause:
    """Why a build or release is not in the answer: the constraint that decided, as a value, and
    the reason in words (`constraint`: driver | compute-capability | python | platform | spec |
    accelerator | joint | fleet)."""

    family: str  # torch
    version: str  # 2.15.0
    build: Optional[str]  # cu132; None: the whole release
    constraint: str
    reason: str
    evidence: str = ""
    shortfall: Optional[Shortfall] = None  # what the machine lacks, as values, where the data says

    @staticmethod
    def from_rejection(r: answers.Rejection) -> Cause:
        lacking = None if r.shortfall is None else Shortfall(quantity=r.shortfall.quantity, needs=r.shortfall.needs, has=r.shortfall.has)
        return Cause(family=r.family, version=str(r.version), build=r.tag, constraint=r.constraint, reason=r.reason, evidence=r.evidence, shortfall=lacking)


@dataclass(frozen=True, kw_only=True)
class Shortfall:
    """What a build needs that the machine lacks: `quantity` driver | compute-capability | gfx | python;
    `needs` the driver floor, the build's kernels ("SASS sm_75, sm_80; PTX none") or its Pythons
    ("3.10-3.13"); `has` the machine's driver ("none" where it has none), GPU architecture (sm_61)
    or Python."""

    quantity: str
    needs: str
    has: str


@dataclass(frozen=True, kw_only=True)
class InstalledBuild:
    """A framework or library build as installed, read from its own files (never imported)."""

    family: str  # torch | tensorflow | jax | onnxruntime-gpu | xformers | ...
    dist: str
    version: str  # as installed: "2.5.1+cu124"
    kind: str  # cuda | cpu | rocm | unknown
    cuda: Optional[str] = None
    cudnn: Optional[str] = None


@dataclass(frozen=True, kw_only=True)
class Environment:
    """What a Python environment holds, as `inspect` reads it."""

    prefix: str
    python: Optional[str]
    builds: tuple[InstalledBuild, ...] = ()  # frameworks
    libraries: tuple[InstalledBuild, ...] = ()  # libraries built against a framework
    distributions: dict[str, str] = field(default_factory=dict)  # every installed distribution -> version
    problems: tuple[str, ...] = ()  # what could not be read


@dataclass(frozen=True, kw_only=True)
class Finding:
    """One problem `diagnose` or `check_paths` found. `path`/`line`/`col` name the file position
    for check; `commands` are doctor's fix commands, shell lines to show a person."""

    code: str
    severity: Severity
    message: str
    fix: str = ""
    commands: tuple[str, ...] = ()
    path: Optional[str] = None
    line: Optional[int] = None
    col: Optional[int] = None
    environments: tuple[str, ...] = ()  # check: the environments it holds in; () for every one


@dataclass(frozen=True, kw_only=True)
class Report:
    """`diagnose`'s or `check_paths`' answer. ok: nothing fails (doctor: no error; check: nothing
    at or above the failing severity)."""

    ok: bool
    findings: tuple[Finding, ...]
    machine: Optional[Machine] = None  # diagnose: the machine it judged
    errors: tuple[str, ...] = ()  # check: files that could not be read
    files: int = 0  # check: files read
    fix: Optional[Plan] = None  # diagnose: the set that repairs the environment, where a finding asks for one


class NoSolution(CudafitError):
    """No consistent set runs on the machine: `causes` (every build ruled out, and why),
    `conflicts` (the deciding ones, in words), and `to_dict()` as `cudafit resolve --json` prints it."""

    exit_code = 1

    def __init__(self, resolution: answers.Resolution) -> None:
        self._resolution = resolution
        self.causes: tuple[Cause, ...] = tuple(Cause.from_rejection(r) for r in resolution.rejections if r.constraint != "spec")
        self.conflicts: tuple[str, ...] = resolution.conflicts
        self.machine = Machine.from_record(resolution.machine)
        super().__init__("; ".join(resolution.conflicts) or "no consistent set of builds runs on this machine")

    def to_dict(self) -> dict[str, Any]:
        from cudafit.report import resolution_json

        return resolution_json(self._resolution)


@dataclass(frozen=True)
class Plan:
    """The chosen set for a machine: its packages, the CUDA and cuDNN it ends up with, the pins it
    holds the nvidia-* wheels at, and why each build was chosen."""

    machine: Machine
    packages: tuple[Package, ...]
    cuda: Optional[str]
    cudnn: Optional[str]
    pins: dict[str, str]  # nvidia-* distribution -> specifier every chosen build allows
    reasons: tuple[str, ...]  # why each build, in words
    notes: tuple[str, ...]
    warnings: tuple[str, ...]
    _resolution: answers.Resolution = field(repr=False, compare=False)
    # variables the set needs set where it runs (HSA_OVERRIDE_GFX_VERSION for an AMD GPU on
    # another target's kernels); a launcher adds them to the environment it starts programs in
    environment: dict[str, str] = field(default_factory=dict)
    # the request, for the answer an nvidia/cuda base image can carry (render("dockerfile"))
    _request: Optional[tuple[tuple[str, ...], records.Policy]] = field(default=None, repr=False, compare=False)

    def commands(self, installer: Installer = "pip", *, python: Optional[str] = None) -> list[list[str]]:
        """The install commands as argument lists (never shell strings), to run in order: pip as
        `python -m pip` (`python`: the environment's interpreter, default "python"), uv as
        `uv pip install` (with `--python` where given), conda: the conda route where the set has one
        (TensorFlow's CUDA runtime), then pip for the rest."""
        from cudafit.installer import commands

        if installer not in ("pip", "uv", "conda"):
            raise InputError("expected pip, uv or conda", field="installer", value=installer)
        return commands(self._resolution, installer="uv" if installer == "uv" else "pip", python=python, conda="conda" if installer == "conda" else None)

    def render(self, format: str, *, name: str = "cudafit", existing: Optional[str] = None) -> str:
        """The text `cudafit resolve --format FORMAT` prints (`name`: the environment or project
        name of conda and uv-project output; `existing`: a pyproject.toml's text to merge into)."""
        from cudafit.emit import FORMATS, EmitOptions, render

        if format not in FORMATS:
            raise InputError(f"expected one of {', '.join(FORMATS)}", field="format", value=format)
        res = self._resolution
        if format == "dockerfile" and self._request is not None:
            from cudafit.containers.cuda_base import for_cuda_image
            from cudafit.loader import load

            specs, policy = self._request
            res = for_cuda_image(specs, res.machine, load(), policy, res)
        return render(format, res, EmitOptions(env_name=name, existing=existing))

    def to_dict(self) -> dict[str, Any]:
        """What `cudafit resolve --json` prints for the same request: the same keys, the same values."""
        from cudafit.report import resolution_json

        return resolution_json(self._resolution)

    @staticmethod
    def from_resolution(res: answers.Resolution, request: Optional[tuple[tuple[str, ...], records.Policy]] = None) -> Plan:
        from cudafit.emit import environment, stack_versions

        cuda, cudnn = stack_versions(res)
        return Plan(
            machine=Machine.from_record(res.machine),
            packages=tuple(Package.from_pin(p, c) for c in res.candidates for p in c.packages),
            cuda=cuda,
            cudnn=cudnn,
            pins=dict(sorted(res.shared_pins.items())),
            reasons=tuple(line for c in res.candidates for line in c.why),
            notes=res.notes,
            warnings=res.warnings,
            _resolution=res,
            environment=environment(res),
            _request=request,
        )
