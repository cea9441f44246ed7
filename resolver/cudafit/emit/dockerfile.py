"""--format dockerfile: a Dockerfile that installs the answer. The base image follows what the set
needs of the system: a slim Python image where the wheels bring their own CUDA (torch, JAX's and
TensorFlow's CUDA wheels, ROCm's wheels); an nvidia/cuda devel image of torch's CUDA where a library
compiles against it (nvcc), a cudnn runtime image of the build's CUDA and cuDNN where a build loads
the system's (ONNX Runtime before its cuda extras, TensorFlow before [and-cuda], JAX's -local
extras). nvidia/cuda tags come from matrices/cuda-images.toml (a supported release of the CUDA line
first: NVIDIA deletes end-of-life tags), never from a rule of thumb; where the data has none, the
answer is refused rather than written on a wrong base. So is a Jetson's: its base must be an
L4T/JetPack image, which the data does not hold. The set's constraints file goes into the image as
PIP_CONSTRAINT/UV_CONSTRAINT, so a later install in a derived image cannot move it. The header says
the host driver the image and the set need (an nvidia/cuda image's NVIDIA_REQUIRE_CUDA included:
the NVIDIA Container Toolkit enforces it at `docker run`) and the GPUs its kernels cover: the image
carries no driver."""

from __future__ import annotations

import shlex
from typing import Any, NamedTuple, Optional

from packaging.version import Version

from cudafit.answers import Candidate, Resolution
from cudafit.cuda_images import CudaImage
from cudafit.emit import EmitOptions, compiled_here, cuda_from_conda, environment, header
from cudafit.errors import InputError
from cudafit.records import Machine, Matrices, driver_key

# uv's own image, for Python of any version on an nvidia/cuda base (uv's "Using uv in Docker" guide)
UV_IMAGE = "ghcr.io/astral-sh/uv:0.13.9"
CONSTRAINTS = "/etc/cudafit-constraints.txt"

# The builds whose wheel brings no CUDA libraries, by the data fact their provider warns on
# (frameworks/onnxruntime.py: no cuda/cudnn extras before 1.21; frameworks/tensorflow.py: no
# [and-cuda] before 2.14): the machine, here the image, must hold that CUDA and cuDNN.
_BRINGS_NO_CUDA = {
    "onnxruntime-gpu": lambda build: not build.extras,
    "tensorflow": lambda build: "and-cuda" not in build.extras,
}


class Base(NamedTuple):
    image: str  # what FROM names
    why: str
    uses_uv: bool  # Python comes from uv, not from the image
    cuda_image: Optional[tuple[CudaImage, str]] = None  # an nvidia/cuda base: the image and its Ubuntu


def render(resolution: Resolution, options: EmitOptions) -> str:
    from cudafit.emit.constraints import render as constraints
    from cudafit.emit.pip import commands
    from cudafit.loader import load

    machine = resolution.machine
    if machine.os not in ("linux", "wsl"):
        raise InputError(
            f"a container runs Linux; this answer is for {machine.platform} (describe the image's machine: --os linux --arch x86_64)",
            field="format",
            value="dockerfile",
        )
    if machine.jetson:
        raise InputError(_jetson(resolution), field="format", value="dockerfile")
    if cuda_from_conda(resolution) is not None:
        raise InputError("this answer takes its CUDA from conda: use --format environment.yml with a conda base image", field="format", value="dockerfile")
    matrices = load()
    base = _base(resolution, matrices)
    lines = ["# syntax=docker/dockerfile:1", f"# {header(resolution, options.described, options.title)}"]
    # A fleet's file stands for every node class, while its resolution carries one class's machine:
    # the GPUs and driver that machine describes say nothing of the others.
    one_machine = not (options.described or options.title)
    lines += [f"# {line}" for line in _host(resolution, base, matrices, one_machine)]
    lines += [f"# base: {base.why}", f"FROM {base.image}"]
    python = machine.python or "3"
    if base.uses_uv:
        lines += [
            f"COPY --from={UV_IMAGE} /uv /uvx /bin/",
            f"RUN uv venv --python {python} /opt/venv",
            "ENV VIRTUAL_ENV=/opt/venv PATH=/opt/venv/bin:$PATH",
        ]
    lines.append("ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1")
    held = [line for line in constraints(resolution, options).splitlines() if line and not line.startswith("#")]
    if held:
        lines.append("# the set's constraints: a later install in this image or one built on it cannot move the set")
        lines.append("RUN printf '%s\\n' " + " ".join(shlex.quote(line) for line in held) + f" > {CONSTRAINTS}")
        lines.append(f"ENV PIP_CONSTRAINT={CONSTRAINTS} UV_CONSTRAINT={CONSTRAINTS}")
    if compiled_here(resolution):
        # --no-build-isolation builds in the environment itself: its build tools must be there
        lines.append(f"RUN {'uv pip install' if base.uses_uv else 'pip install'} setuptools wheel packaging ninja")
    for step in commands(resolution, "uv pip install" if base.uses_uv else "pip install"):
        if step.startswith("#"):
            continue  # a remark for a shell (a compiler to select, a variable to export): said below instead
        lines.append(f"RUN {step}")
    for name, value in environment(resolution).items():
        lines.append(f"ENV {name}={shlex.quote(value)}")
    return "\n".join(lines) + "\n"


def _jetson(resolution: Resolution) -> str:
    jetson_wheel = next((c for c in resolution.candidates if c.tag == "jetson"), None)
    why = (
        f": NVIDIA's Jetson wheel {jetson_wheel.label} links JetPack's CUDA in /usr/local/cuda, which neither python:slim nor nvidia/cuda holds"
        if jetson_wheel
        else ""
    )
    return f"a Jetson's container starts from an L4T/JetPack base image that matches its JetPack, and cudafit has no tag data for those images{why}"


def build_of(c: Candidate, machine: Machine, matrices: Matrices) -> Any:
    """The data's build record behind a chosen candidate, or None: its tag is the build's own, or
    a library's label (source-cu12, an asset's cu12torch2.8cxx11abiTRUE)."""
    from cudafit.frameworks import release_of
    from cudafit.frameworks.library import build_label

    release = release_of(c.family, c.version, matrices)
    builds = getattr(release, "builds", ())
    return next((b for b in builds if machine.platform in b.platforms and c.tag in (b.tag, build_label(b))), None)


def _system_cuda(resolution: Resolution, matrices: Matrices) -> list[Candidate]:
    """The chosen CUDA builds that load the system's CUDA and cuDNN: the wheel brings none, or a
    -local extra asks for it."""
    out = []
    for c in resolution.candidates:
        if any(e.endswith("-local") for p in c.packages for e in p.extras):
            out.append(c)
            continue
        says = _BRINGS_NO_CUDA.get(c.family)
        build = build_of(c, resolution.machine, matrices) if says is not None and c.kind == "cuda" else None
        if says is not None and build is not None and says(build):
            out.append(c)
    return out


def refused_at_run(resolution: Resolution, matrices: Matrices) -> bool:
    """Whether `docker run` refuses the answer's nvidia/cuda base on the described host for sure: its
    NVIDIA_REQUIRE_CUDA asks for the driver of the image's own CUDA (no minor-version compatibility),
    and excepts the host's branch for none of its GPUs' brands (cuda_images.refuses)."""
    from cudafit import cuda_images, rules

    machine = resolution.machine
    if not machine.driver or not (compiled_here(resolution) or _system_cuda(resolution, matrices)):
        return False
    try:
        base = _base(resolution, matrices)
    except InputError:
        return False
    if base.cuda_image is None:
        return False
    image, os_name = base.cuda_image
    own = rules.own_driver(matrices, machine, Version(".".join(image.cuda.split(".")[:2])))
    requirement = image.requirement(os_name, machine.arch or "x86_64")
    if not own or requirement is None:
        return False
    return cuda_images.refuses(requirement, own, machine.driver, tuple(g.name or "" for g in machine.gpus))


def _base(resolution: Resolution, matrices: Matrices) -> Base:
    from cudafit import cuda_images

    machine = resolution.machine
    compiled = compiled_here(resolution)
    system = _system_cuda(resolution, matrices)
    if not compiled and not system:
        return Base(f"python:{machine.python or '3'}-slim", "the wheels bring their own CUDA/ROCm libraries: a slim Python image", False)
    if any(c.kind == "rocm" for c in system):
        raise InputError("this answer loads the system's ROCm (a -local extra), and cudafit has no data on ROCm images yet", field="format", value="dockerfile")
    cuda, cudnn, need = _needs(resolution, compiled, system)
    flavour = ("cudnn-devel" if system else "devel") if compiled else "cudnn-runtime"
    arch = machine.arch or "x86_64"
    found = cuda_images.pick(matrices.cuda_images, cuda, flavour, arch, cudnn=cudnn)
    if found is None:
        with_cudnn = f" with a cuDNN {cudnn.split('.')[0]}.x of {cudnn} or newer" if cudnn else ""
        raise InputError(
            f"{need}, and cudafit's data has no {cuda_images.REPOSITORY} {flavour} image of CUDA {cuda}{with_cudnn} for {arch} (matrices/cuda-images.toml)",
            field="format",
            value="dockerfile",
        )
    image, os_name = found
    tag = image.tag(cuda_images.cudnn_flavour(image, flavour, os_name) or flavour, os_name)
    held = f" (cuDNN {image.cudnn} in the image)" if cudnn else ""
    served = " with a cuDNN that serves it" if cudnn else ""
    state = (
        "" if image.status == "supported" else f"; end-of-life in NVIDIA's tag lists (it may be deleted): no supported {cuda} image has this flavour{served}"
    )
    return Base(f"{cuda_images.REPOSITORY}:{tag}", f"{need}{held}{state}", True, found)


def _needs(resolution: Resolution, compiled: list[tuple[Candidate, str]], system: list[Candidate]) -> tuple[str, Optional[str], str]:
    """(CUDA major.minor, cuDNN or None, why in words) the image must hold: nvcc of torch's CUDA
    for a library compiled here, the CUDA and cuDNN a build that brings none was made with."""

    def refuse(reason: str) -> InputError:
        return InputError(reason, field="format", value="dockerfile")

    needs: list[tuple[str, str]] = []  # (major.minor, what needs it)
    cudnns: list[tuple[str, str]] = []
    if compiled:
        torch = next((c for c in resolution.candidates if c.family == "torch" and c.cuda), None)
        source = compiled[0][0]
        # the extension builder checks nvcc against torch's own CUDA: that one, not the library's
        cuda = (torch.cuda if torch is not None else None) or source.cuda
        if cuda is None:
            raise refuse("no CUDA version is known for the build that compiles here")
        needs.append((".".join(cuda.split(".")[:2]), f"{source.packages[0].name} compiles against torch here: nvcc of CUDA {cuda}"))
    for c in system:
        if not c.cuda or "." not in c.cuda:
            raise refuse(
                f"{c.label} brings no CUDA libraries: it loads the system's CUDA {c.cuda or '?'}.x, and the CUDA minor it was built with "
                "is unknown in cudafit's data, so no nvidia/cuda image can be named for it"
            )
        if not c.cudnn or c.cudnn == "unknown":
            raise refuse(f"{c.label} loads the system's CUDA {c.cuda} and a cuDNN that is unknown in cudafit's data: no cudnn image can be named for it")
        needs.append((".".join(c.cuda.split(".")[:2]), f"{c.label} brings no CUDA libraries: it loads the system's CUDA {c.cuda} and cuDNN {c.cudnn}"))
        cudnns.append((c.cudnn, c.label))
    if len({cuda for cuda, _why in needs}) > 1:
        raise refuse("one image holds one CUDA, and these builds need different ones: " + "; ".join(why for _cuda, why in needs))
    if len({cudnn.split(".")[0] for cudnn, _who in cudnns}) > 1:
        raise refuse("one image holds one cuDNN, and these builds need different majors: " + ", ".join(f"{who}: cuDNN {cudnn}" for cudnn, who in cudnns))
    cudnn = max((cudnn for cudnn, _who in cudnns), key=Version) if cudnns else None
    return needs[0][0], cudnn, "; ".join(why for _cuda, why in needs)


def _host(resolution: Resolution, base: Base, matrices: Matrices, one_machine: bool) -> list[str]:
    """What the host must have: the driver (an image carries none) and the GPUs the kernels cover.
    `one_machine`: the file is for the machine the answer describes (its GPUs and driver count)."""
    machine = resolution.machine
    out = []
    floor = set_floor(resolution, matrices) if one_machine else resolution.driver_min
    if base.cuda_image is not None:
        out += _image_host(machine if one_machine else machine._replace(driver=None), base.cuda_image, floor, matrices)
    elif floor:
        out.append(f"host: an NVIDIA driver >= {floor} and the NVIDIA Container Toolkit (docker run --gpus all)")
    if any(c.kind == "rocm" for c in resolution.candidates):
        out.append("host: the amdgpu kernel driver (docker run --device /dev/kfd --device /dev/dri --group-add video)")
    nvcc = ".".join(base.cuda_image[0].cuda.split(".")[:2]) if base.cuda_image is not None else None
    for c in resolution.candidates:
        build = build_of(c, machine, matrices) if c.kind == "cuda" else None
        if build is None or not build.sass:
            continue
        archs = ", ".join(f"sm_{a}{b}" for a, b in sorted(build.sass))
        if build.route == "source" and build.cuda is not None and (nvcc is None or Version(nvcc) < build.cuda):
            # the data's list is what an nvcc of its CUDA or newer compiles; an older one leaves some out
            out.append(f"{c.label} compiles with nvcc {nvcc or 'unknown'} here, whose kernels are not in cudafit's data (nvcc {build.cuda}+: {archs})")
            continue
        out.append(f"{c.label} has kernels (SASS) for {archs}")
    return out


def set_floor(resolution: Resolution, matrices: Matrices) -> str:
    """The oldest driver the set runs on with the GPUs described (rules.floor_for_gpus)."""
    from cudafit import rules

    return rules.floor_for_gpus(resolution.driver_min, resolution.machine, matrices)


def _image_host(machine: Machine, found: tuple[CudaImage, str], floor: str, matrices: Matrices) -> list[str]:
    """An nvidia/cuda base: the driver its NVIDIA_REQUIRE_CUDA asks for at `docker run` (cuda>=X.Y:
    the X.Y toolkit's driver), the older branches it lets start on some GPU brands, and the set's."""
    from cudafit import rules

    image, os_name = found
    cuda = ".".join(image.cuda.split(".")[:2])
    own = rules.own_driver(matrices, machine, Version(cuda))
    needed = max((d for d in (own, floor) if d), key=driver_key, default="")
    out = [f"host: an NVIDIA driver >= {needed} and the NVIDIA Container Toolkit (docker run --gpus all)"] if needed else []
    requirement = image.requirement(os_name, machine.arch or "x86_64")
    toolkit = f"CUDA {cuda}'s ({own})" if own else f"CUDA {cuda}'s (a driver unknown in cudafit's data)"
    if requirement is None:
        out.append(
            f"host: NVIDIA's images make docker run refuse a driver older than their CUDA, here {toolkit}; "
            "which older branches this image's NVIDIA_REQUIRE_CUDA excepts is not in cudafit's data"
        )
    else:
        out.append(f"host: the image sets NVIDIA_REQUIRE_CUDA=cuda>={requirement.cuda}: docker run refuses a driver older than {toolkit}")
        # only branches that matter: below the image's own floor, and new enough for the set and GPUs
        lowest = int(floor.split(".")[0]) if floor else 0
        top = int(own.split(".")[0]) if own else None
        branches = [b for b in requirement.branches if int(b) >= lowest and (top is None or int(b) < top)]
        if branches:
            # the floor's own branch only from the floor on: the set needs that much
            said = ", ".join(f"R{b}" + (f" (from {floor})" if floor and "." in floor and b == floor.split(".")[0] else "") for b in branches)
            geforce = "" if "geforce" in requirement.brands else " (GeForce is not among them)"
            out.append(f"host: it also starts on {said} drivers where the GPU's brand is {', '.join(requirement.brands)}{geforce}")
    if machine.driver and needed and driver_key(machine.driver) < driver_key(needed):
        branch = machine.driver.split(".")[0]
        excepted = requirement is not None and branch in requirement.branches
        unless = f" unless the GPU's brand is one of those R{branch} is excepted for (above)" if excepted else ""
        out.append(f"host: the described driver {machine.driver} is older: docker run refuses this image there{unless}")
    return out
