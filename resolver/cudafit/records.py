"""Typed, immutable records shared by the loader, detector, solver and emitters.

They are NamedTuples rather than frozen dataclasses: every command imports them, and building a
dataclass costs about five times as much import time (scripts/bench.py measures start-up)."""

from collections.abc import Mapping
from typing import Literal, NamedTuple, Optional, Protocol

from packaging.version import Version

from cudafit.gpu_tables import AmdModel, AmdTfBuild, AmdTorchBuild, GfxTarget, IntelModel, JetsonWheel

# A compute capability as (major, minor): (8, 6) is sm_86.
CC = tuple[int, int]

# What a build is for: a CUDA GPU, the CPU, an AMD GPU (ROCm), or another accelerator (xpu).
BuildKind = Literal["cuda", "cpu", "rocm", "other"]
# The constraint that ruled a build or release out (Rejection.constraint).
Constraint = Literal["driver", "compute-capability", "python", "platform", "os", "spec", "extra", "accelerator", "data", "joint", "fleet", "image"]
# Why two builds cannot share one environment (Clash.kind).
ClashKind = Literal["cuda-major", "cuda-range", "cudnn-major", "cudnn-unknown", "pins-unknown", "pin", "requires", "rocm-release"]


class Shortfall(NamedTuple):
    """What a build needs that the machine lacks, as values beside the reason's words (a launcher
    acts on them: "needs driver 580.65.06, has 535.104.05")."""

    quantity: Literal["driver", "compute-capability", "gfx", "python", "rocm"]
    needs: str  # the driver floor; the build's kernels ("sm_75, sm_80; PTX compute_80", AMD's "gfx1030, gfx1100"); its Pythons ("3.10-3.13")
    has: str  # the machine's driver ("none" where there is none), GPU architecture (sm_61, gfx1010), Python or host ROCm


PLATFORMS = (
    "linux-x86_64",
    "linux-aarch64",
    "windows-x86_64",
    "windows-arm64",
    "macos-arm64",
    "macos-x86_64",
)


def pythons_on(python: frozenset[str], by_platform: Optional[dict[str, frozenset[str]]], platform: Optional[str]) -> frozenset[str]:
    """A release's CPython minors on one platform: the platform's own list where it lacks some."""
    if platform is None:
        return python
    return (by_platform or {}).get(platform, python)


def driver_key(text: str) -> tuple[int, ...]:
    """Comparable form of a driver version; a branch "570" sorts before every 570.x.y."""
    return tuple(int(part) for part in text.split("."))


def cc_str(cc: CC) -> str:
    return f"{cc[0]}.{cc[1]}"


def sm(cc: CC) -> str:
    return f"sm_{cc[0]}{cc[1]}"


def parse_cc(text: str) -> CC:
    """'8.6' -> (8, 6); raises ValueError on anything else."""
    major, dot, minor = text.strip().partition(".")
    if not dot or not (major.isascii() and major.isdigit() and minor.isascii() and minor.isdigit()):
        raise ValueError(f"not a compute capability (expected MAJOR.MINOR like 8.6): {text!r}")
    return int(major), int(minor)


# --- matrices -------------------------------------------------------------------------------


# The version of every JSON object cudafit prints (its `schema_version` key) and of the API's
# to_dict(): raised when a key is removed or changes meaning; adding a key does not raise it.
SCHEMA_VERSION = 1


class CompatFloor(NamedTuple):
    """CUDA minor-version compatibility: the oldest driver that runs any build of this major."""

    major: int
    linux_driver_min: Optional[str]  # driver versions stay text: "450.80.02" must print as such
    windows_driver_min: Optional[str]


class Toolkit(NamedTuple):
    version: Version  # major.minor
    linux_driver_min: Optional[str]  # None: unknown
    windows_driver_min: Optional[str]
    targets: Optional[frozenset[CC]]  # None: unknown


class Architecture(NamedTuple):
    name: str
    compute_capabilities: frozenset[CC]
    first_driver: Optional[str]  # a branch ("570") or a full version
    last_driver: Optional[str]


class JetPack(NamedTuple):
    """A JetPack release line: the Jetson Linux (L4T) it ships and the boards it runs on."""

    version: str  # "6.2"
    jetson_linux: str  # "36.4"
    compute_capabilities: frozenset[CC]  # the boards' GPUs
    server_builds: bool  # whether the server (SBSA) aarch64 builds of the frameworks run on it


class GpuModel(NamedTuple):
    name: str
    compute_capability: CC
    memory_gb: Optional[float]
    segment: str
    arch: Optional[str] = None  # a superchip's GPU sits in that machine only (GH200, GB200, GB10: aarch64)


GRADES = ("measured", "declared", "reported")  # the order of trust; a fact without a grade is unknown
TRUSTED = frozenset(("measured", "declared"))


class Evidence(NamedTuple):
    """How a fact is known: its grade and the [sources] keys that state it."""

    grade: str  # one of GRADES
    source: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.grade} ({', '.join(self.source)})"


class Build(NamedTuple):
    """One build of a framework release: a `[[build]]` of schema 2, the same record for every
    framework (matrices/README.md). Fields past `evidence` are facts only some frameworks have."""

    tag: str  # torch's local version tag (cu126, cpu, rocm6.2); a CUDA flavour elsewhere (cu12)
    kind: BuildKind
    platforms: frozenset[str]
    cuda: Optional[Version] = None  # the CUDA it was built with (JAX: the oldest runtime its pins accept); None: unknown
    cudnn: Optional[str] = None  # None for CUDA builds means unknown
    sass: Optional[frozenset[CC]] = None  # None: unknown
    ptx: Optional[frozenset[CC]] = None
    pins: Optional[dict[str, str]] = None  # the nvidia-*/cuda-* wheels it installs with; {}: none; None: unknown
    python: Optional[frozenset[str]] = None  # None: as the release
    index_url: str = ""  # "": the framework's own (torch: its download index per tag; others: PyPI)
    package: str = ""  # the distribution, where it is not the framework's own name (onnxruntime-gpu)
    extras: tuple[str, ...] = ()  # the extras that select it or bring its CUDA wheels: and-cuda, cuda12, cuda+cudnn
    notes: str = ""
    # fact (exists, cuda, cudnn, sass, ptx, pins, pypi_pins) -> how it is known; the shared empty
    # default is never mutated (records are built once by the loader and only read)
    evidence: dict[str, Evidence] = {}
    rocm: Optional[str] = None  # torch: the ROCm release of a rocm build
    pypi_pins: Optional[dict[str, str]] = None  # torch: the PyPI wheel's pins, where they differ from the index build's
    packages: tuple[str, ...] = ()  # JAX: the distributions its extra brings
    local: str = ""  # JAX: the local version tag of a find-links jaxlib (cuda12.cudnn89)
    find_links: str = ""  # JAX: the -f page pip needs for it
    pins_python: Optional[frozenset[str]] = None  # TensorFlow: the Pythons its [and-cuda] pins install on; None: all
    cuda_wheels: Optional[dict[str, str]] = None  # TensorFlow: the pins that still install where [and-cuda] cannot
    conda: Optional[dict[str, str]] = None  # TensorFlow: the conda route for CUDA (cudatoolkit, cudnn, channel)
    # How a library's build reaches the machine: "" a wheel from its index; "asset" a wheel the
    # project attaches to its release (flash-attn); "source" compiled from the sdist against the
    # installed torch.
    route: str = ""
    asset: str = ""  # route "asset": the build's part of the asset's file name (flash-attn: cu12torch2.8cxx11abiTRUE)
    # The pins as the data (and the wheel's Requires-Dist) writes them, where the loader expanded a
    # cuda-toolkit[EXTRA,...] pin into the library wheels of those extras; None: `pins` is that text.
    raw_pins: Optional[dict[str, str]] = None
    # bitsandbytes: the CUDA versions of torch whose native library this build stands for
    # (">=12.1,<12.8"): it loads the library of torch's CUDA version; "" for any of its major.
    torch_cuda: str = ""
    # torchao: False where the build's compiled kernels never load whatever the torch (0.14.0's load
    # gate tests for its nightly, not the release): only its Python and Triton code runs
    loads: bool = True
    # torch ROCm builds: the AMD GPU targets its own kernels are compiled for (PYTORCH_ROCM_ARCH;
    # None: unknown), those of them its bundled rocBLAS has no kernels for (listed, yet matrix
    # products fail), and how the ROCm libraries come: "bundled" in the wheel, or "wheels" (the
    # rocm[...] packages it requires from its index, 7.14 on)
    gfx: Optional[frozenset[str]] = None
    gfx_no_blas: frozenset[str] = frozenset()
    rocm_libraries: str = ""  # JAX's too: "host" (the host's /opt/rocm), "host-or-wheels" (or AMD's rocm wheels)
    rocm_wheels: str = ""  # JAX, "host-or-wheels": the rocm wheels' version ("7.14.1") and index that serve it
    rocm_index: str = ""
    # torch XPU builds: per platform, the Intel GPU device codes its kernels are precompiled for
    # (others JIT-compile them from SPIR-V at first use); None: unknown
    xpu_aot: Optional[dict[str, frozenset[str]]] = None
    # torch ROCm and XPU builds: the distributions it requires that only its own index serves in a
    # usable version (triton-rocm, the rocm wheels): an installer that takes other packages from
    # PyPI (uv with an explicit index) must route these to the index too
    index_packages: tuple[str, ...] = ()

    def grade(self, fact: str) -> str:
        found = self.evidence.get(fact)
        return found.grade if found else "unknown"

    @property
    def written_pins(self) -> Optional[dict[str, str]]:
        """The pins as written, cuda-toolkit's extras kept (what the maintainer scripts compare with
        a wheel's Requires-Dist); `pins` is what they install."""
        return self.raw_pins if self.raw_pins is not None else self.pins

    @property
    def major(self) -> int:
        """The CUDA major: the version's, else the flavour tag's (cu12)."""
        return self.cuda.major if self.cuda is not None else int(self.tag.removeprefix("cu"))

    @property
    def extra(self) -> str:
        return self.extras[0] if self.extras else ""


class TorchRelease(NamedTuple):
    version: Version
    date: str
    python: frozenset[str]
    platforms: frozenset[str]
    torchvision: Optional[str]
    torchaudio: Optional[str]
    conda_cuda: tuple[str, ...]
    pypi_variant: dict[str, str]
    builds: tuple[Build, ...]
    source: tuple[str, ...] = ()
    python_by_platform: Optional[dict[str, frozenset[str]]] = None
    # CUDA builds the wheel's own arch table or a build matrix lists, but which were not published
    # (cu134 in 2.14: removed before release); maintainer scripts skip them.
    not_shipped: tuple[str, ...] = ()
    # CUDA builds the wheel's arch table lists whose publication no reachable source confirms or
    # denies (cu134 in 2.15): not offered, and the maintainer scripts do not count them as missing.
    unconfirmed: tuple[str, ...] = ()
    macos_min: dict[str, str] = {}  # macOS platform -> oldest macOS its wheels install on (wheel tags); never mutated
    # The conda package whose version picks the CUDA of the pytorch channel's builds: pytorch-cuda
    # from 1.13; cudatoolkit before (conda_cuda then lists cudatoolkit versions).
    conda_cuda_package: str = "pytorch-cuda"
    macos_min_by_python: dict[str, str] = {}  # Python -> a newer minimum some Pythons' wheels need

    def pythons(self, platform: Optional[str]) -> frozenset[str]:
        return pythons_on(self.python, self.python_by_platform, platform)


class Release(Protocol):
    """What every family's release record has (TorchRelease, TFRelease, JaxRelease, OrtRelease and
    LibraryRelease): the view the solver, the checks and the coverage report share. Each record
    adds its own fields (torch's companions, TensorFlow's CPU package, JAX's extras)."""

    @property
    def version(self) -> Version: ...
    @property
    def date(self) -> str: ...
    @property
    def python(self) -> frozenset[str]: ...
    @property
    def platforms(self) -> frozenset[str]: ...
    @property
    def builds(self) -> tuple["Build", ...]: ...
    @property
    def python_by_platform(self) -> Optional[dict[str, frozenset[str]]]: ...
    @property
    def macos_min(self) -> dict[str, str]: ...
    @property
    def macos_min_by_python(self) -> dict[str, str]: ...

    def pythons(self, platform: Optional[str]) -> frozenset[str]: ...


class OrtRelease(NamedTuple):
    """A release with no fields of its own beyond the shared ones: ONNX Runtime, and the libraries
    built against torch (LibraryRelease)."""

    version: Version
    date: str
    python: frozenset[str]
    platforms: frozenset[str]
    builds: tuple[Build, ...]
    python_by_platform: Optional[dict[str, frozenset[str]]] = None
    macos_min: dict[str, str] = {}  # no macOS wheels; kept so every release screens alike (never mutated)
    macos_min_by_python: dict[str, str] = {}
    # A library's own floor on the GPU, where its project states one beyond what its kernels show
    # (vllm: 7.5; FlashAttention 2: 8.0), and how that is known.
    gpu_min: Optional[CC] = None
    gpu_min_evidence: Optional[Evidence] = None
    asset: str = ""  # the URL of a release asset, with {build} (Build.asset) and {py} (312) to fill

    def pythons(self, platform: Optional[str]) -> frozenset[str]:
        return pythons_on(self.python, self.python_by_platform, platform)


class WheelFiles(NamedTuple):
    """One release of a distribution as PyPI's file list shows it (matrices/wheels.toml): whether
    it has an sdist, and per platform the CPython minors a wheel there installs on ("any": a pure
    wheel, which installs on every platform)."""

    version: Version
    sdist: bool
    wheels: dict[str, frozenset[str]]
    # Its Requires-Dist lines (as written, no `extra` marker) that name another distribution of the
    # file lists: liger-kernel's triton, which has no Windows or macOS wheel.
    requires: tuple[str, ...] = ()

    def pythons(self, platform: str) -> frozenset[str]:
        return self.wheels.get(platform, frozenset()) | self.wheels.get(PURE, frozenset())

    def __hash__(self) -> int:
        # A lockfile's pins carry one, and pins are hashed often: the version and sdist tell
        # releases apart (equal ones still compare their wheels).
        return hash((self.version, self.sdist))


PURE = "any"


class Matrices(NamedTuple):
    data_date: str
    compat: dict[int, CompatFloor]
    toolkits: dict[tuple[int, int], Toolkit]
    architectures: tuple[Architecture, ...]
    gpus: dict[str, GpuModel]  # normalised name (and alias) -> model
    torch_index: str  # URL template with {variant}
    frameworks: Mapping[str, tuple] = {}  # family -> its releases, newest first (each provider reads its own); never mutated
    jetpacks: tuple[JetPack, ...] = ()  # oldest first
    unknown_driver_major: int = 12  # with the driver unknown, answer for this CUDA major's floor (nvidia.toml)
    pythons: tuple[tuple[int, int], ...] = ()  # every CPython minor some release has wheels for, oldest first
    wheel_files: Mapping[str, tuple[WheelFiles, ...]] = {}  # distribution -> its releases' files, newest first
    amd_gpus: Mapping[str, AmdModel] = {}  # normalised name (and alias) -> model (amd.toml)
    gfx_targets: Mapping[str, GfxTarget] = {}  # gfx1031 -> what the data knows of it (amd.toml)
    intel_gpus: Mapping[str, IntelModel] = {}  # normalised name (and alias) -> model (intel.toml)
    jetson_wheels: tuple[JetsonWheel, ...] = ()  # NVIDIA's torch wheels for Jetson boards before Thor (jetson.toml)
    amd_torch: tuple[AmdTorchBuild, ...] = ()  # AMD's own torch builds (amd-torch.toml), newest first
    amd_tensorflow: tuple[AmdTfBuild, ...] = ()  # AMD's tensorflow-rocm builds (amd-tensorflow.toml), newest first
    torch_variant_labels: tuple = ()  # PyTorch's wheel-variant labels (variant_labels.VariantLabel, torch-variants.toml)
    cuda_images: tuple = ()  # NVIDIA's CUDA base images on Ubuntu (cuda_images.CudaImage, cuda-images.toml), newest first
    ubuntu_pythons: tuple = ()  # the python3 each Ubuntu of those images installs with apt (cuda_images.UbuntuPython)
    image_repositories: tuple = ()  # the machines an image repository publishes for (cuda_images.ImageRepository)
    ngc_containers: tuple = ()  # NVIDIA's NGC framework containers (containers.data.Container, ngc-containers.toml), newest first
    kernels: tuple = ()  # precisions and kernels per compute capability (kernel_data.KernelFact, kernels.toml)
    numpy1: tuple = ()  # releases built against NumPy 1.x that pip puts beside NumPy 2 (numpy_abi.NumpyOne, numpy-abi.toml)

    @property
    def torch(self) -> tuple[TorchRelease, ...]:
        return self.frameworks.get("torch", ())

    def toolkit(self, cuda: Version) -> Optional[Toolkit]:
        return self.toolkits.get((cuda.major, cuda.minor))

    def jetpack(self, version: Optional[str]) -> Optional[JetPack]:
        """The [[jetpack]] line of that version ("6.2"), where the data has it."""
        return next((j for j in self.jetpacks if j.version == version), None)

    def architecture(self, cc: CC) -> Optional[Architecture]:
        for arch in self.architectures:
            if cc in arch.compute_capabilities:
                return arch
        return None


LibraryRelease = OrtRelease


# --- the machine ----------------------------------------------------------------------------


class GpuInfo(NamedTuple):
    name: Optional[str]
    compute_capability: Optional[CC]  # NVIDIA only
    memory_mib: Optional[int] = None
    vendor: str = "nvidia"  # nvidia | amd | intel
    target: Optional[str] = None  # AMD: its LLVM target (gfx1100); Intel: its device code (dg2)
    integrated: bool = False  # an APU's or a CPU's GPU, which a discrete GPU beside it outranks


class Machine(NamedTuple):
    os: Optional[str]  # linux | windows | macos | wsl
    arch: Optional[str]  # x86_64 | aarch64
    python: Optional[str]  # "3.12"
    driver: Optional[str]  # None with driver_known=True means: no NVIDIA driver
    driver_known: bool = True
    gpus: tuple[GpuInfo, ...] = ()
    gpus_known: bool = True
    jetson: bool = False
    cuda_driver_max: Optional[str] = None
    toolkits: tuple[dict, ...] = ()
    frameworks: tuple[dict, ...] = ()
    warnings: tuple[str, ...] = ()
    detected: bool = False  # the GPU side was read from this machine (an unknown driver did not answer)
    macos: Optional[str] = None  # "14.5" on a Mac, where known
    jetpack: Optional[str] = None  # a Jetson's JetPack line ("6.2"), where given or read
    # the ROCm user space installed on the host (/opt/rocm), which JAX's ROCm plugin loads (torch's
    # ROCm builds bring their own): "7.2.1"; "" none; None unknown
    rocm: Optional[str] = None
    # the amdgpu kernel module's version where AMD's DKMS package installed it ("6.12.12"); "" the
    # kernel's own amdgpu (it has no version); None not read. Shown, not judged: AMD publishes no
    # mapping from it to the ROCm releases its compatibility tables name
    amdgpu: Optional[str] = None

    @property
    def has_driver(self) -> bool:
        return self.driver is not None

    @property
    def platform(self) -> Optional[str]:
        if self.os is None or self.arch is None:
            return None
        os_key = "linux" if self.os == "wsl" else self.os
        arch = self.arch
        if os_key in ("macos", "windows") and arch == "aarch64":
            arch = "arm64"
        return f"{os_key}-{arch}"


class Policy(NamedTuple):
    strict_driver: bool = False  # each toolkit's own driver, not minor-version compatibility
    cpu: bool = False  # CPU builds even beside a GPU
    mixed_cuda: bool = False  # allow frameworks on different CUDA majors in one environment
    # CPU torch builds too, ranked after every GPU build (check: a CPU wheel an index serves is a
    # build pip installs, such as PyPI's torch 2.5 to 2.10 on linux-aarch64)
    cpu_also: bool = False
    # (family, version, tag) of the builds a family may choose from; a family not named is free.
    # `fleet` asks each node class for the builds that run on every class.
    only: frozenset[tuple[str, str, str]] = frozenset()
    only_reason: str = "runs here, but not on every node class of the fleet"  # why a build outside `only` is out
    only_constraint: Constraint = "fleet"  # what holds them: a fleet, or an image's own torch (resolve --inside)
