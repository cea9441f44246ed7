"""--format dockerfile: a Dockerfile that installs the answer. The base image follows what the set
needs of the system: a slim Python image where the wheels bring their own CUDA (torch, JAX's and
TensorFlow's CUDA wheels, ROCm's wheels); an nvidia/cuda devel image of torch's CUDA where a library
compiles against it (nvcc), a cudnn runtime image where a build loads the system's CUDA (JAX's
-local extras). nvidia/cuda tags come from matrices/cuda-images.toml (a supported release of the
CUDA line first: NVIDIA deletes end-of-life tags), never from a rule of thumb. The set's
constraints file goes into the image as PIP_CONSTRAINT/UV_CONSTRAINT, so a later install in a
derived image cannot move it. The header says the host driver the set needs and the GPUs its
kernels cover: the image carries no driver."""

from __future__ import annotations

import shlex

from cudafit.answers import Resolution
from cudafit.emit import EmitOptions, compiled_here, cuda_from_conda, environment, header
from cudafit.errors import InputError

# uv's own image, for Python of any version on an nvidia/cuda base (uv's "Using uv in Docker" guide)
UV_IMAGE = "ghcr.io/astral-sh/uv:0.13.9"
CONSTRAINTS = "/etc/cudafit-constraints.txt"


def render(resolution: Resolution, options: EmitOptions) -> str:
    from cudafit.emit.constraints import render as constraints
    from cudafit.emit.pip import commands

    machine = resolution.machine
    if machine.os not in ("linux", "wsl"):
        raise InputError(
            f"a container runs Linux; this answer is for {machine.platform} (describe the image's machine: --os linux --arch x86_64)",
            field="format",
            value="dockerfile",
        )
    if cuda_from_conda(resolution) is not None:
        raise InputError("this answer takes its CUDA from conda: use --format environment.yml with a conda base image", field="format", value="dockerfile")
    base, why, uses_uv = _base(resolution)
    lines = ["# syntax=docker/dockerfile:1", f"# {header(resolution, options.described, options.title)}"]
    lines += [f"# {line}" for line in _host(resolution)]
    lines += [f"# base: {why}", f"FROM {base}"]
    python = machine.python or "3"
    if uses_uv:
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
        lines.append(f"RUN {'uv pip install' if uses_uv else 'pip install'} setuptools wheel packaging ninja")
    for step in commands(resolution, "uv pip install" if uses_uv else "pip install"):
        if step.startswith("#"):
            continue  # a remark for a shell (a compiler to select, a variable to export): said below instead
        lines.append(f"RUN {step}")
    for name, value in environment(resolution).items():
        lines.append(f"ENV {name}={shlex.quote(value)}")
    return "\n".join(lines) + "\n"


def _base(resolution: Resolution) -> tuple[str, str, bool]:
    """(image, why, whether Python comes from uv rather than the image)."""
    from cudafit import cuda_images
    from cudafit.loader import load

    machine = resolution.machine
    compiled = compiled_here(resolution)
    local = [c for c in resolution.candidates for p in c.packages for e in p.extras if e.endswith("-local")]
    if not compiled and not local:
        return f"python:{machine.python or '3'}-slim", "the wheels bring their own CUDA/ROCm libraries: a slim Python image", False
    if any(c.kind == "rocm" for c in local):
        raise InputError("this answer loads the system's ROCm (a -local extra), and cudafit has no data on ROCm images yet", field="format", value="dockerfile")
    torch = next((c for c in resolution.candidates if c.family == "torch" and c.cuda), None)
    source = compiled[0][0] if compiled else local[0]
    cuda = (torch.cuda if torch is not None else None) or source.cuda
    if cuda is None:
        raise InputError("no CUDA version is known for the build that needs the system's CUDA", field="format", value="dockerfile")
    flavour = "devel" if compiled else "cudnn-runtime"
    found = cuda_images.pick(load().cuda_images, cuda, flavour, machine.arch or "x86_64")
    if found is None:
        raise InputError(
            f"cudafit's data has no {cuda_images.REPOSITORY} {flavour} image of CUDA {cuda} for {machine.arch} (matrices/cuda-images.toml)",
            field="format",
            value="dockerfile",
        )
    image, os_name = found
    tag = image.tag(cuda_images.cudnn_flavour(image, flavour, os_name) or flavour, os_name)
    name = source.packages[0].name
    need = f"{name} compiles against torch here: nvcc of CUDA {cuda}" if compiled else f"{name} loads the system's CUDA {cuda} and cuDNN"
    state = "" if image.status == "supported" else f"; end-of-life in NVIDIA's tag lists (it may be deleted): no supported {cuda} image has this flavour"
    return f"{cuda_images.REPOSITORY}:{tag}", f"{need}{state}", True


def _host(resolution: Resolution) -> list[str]:
    """What the host must have: the driver (an image carries none) and the GPUs the kernels cover."""
    from cudafit.frameworks import release_of
    from cudafit.loader import load

    out = []
    if resolution.driver_min:
        out.append(f"host: an NVIDIA driver >= {resolution.driver_min} and the NVIDIA Container Toolkit (docker run --gpus all)")
    if any(c.kind == "rocm" for c in resolution.candidates):
        out.append("host: the amdgpu kernel driver (docker run --device /dev/kfd --device /dev/dri --group-add video)")
    matrices = load()
    for c in resolution.candidates:
        if c.kind != "cuda":
            continue
        release = release_of(c.family, c.version, matrices)
        build = next((b for b in getattr(release, "builds", ()) if b.tag == c.tag and resolution.machine.platform in b.platforms), None)
        if build is not None and build.sass:
            archs = ", ".join(f"sm_{a}{b}" for a, b in sorted(build.sass))
            out.append(f"{c.family} {c.version}+{c.tag} has kernels (SASS) for {archs}")
    return out
