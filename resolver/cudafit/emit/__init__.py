"""Emitters: one module per output format, each a `render(resolution, options) -> str`.

A new format is one new module and one line in FORMATS."""

from __future__ import annotations

from importlib import import_module
from typing import Callable, NamedTuple, Optional

from cudafit.answers import Candidate, PackagePin, Resolution
from cudafit.errors import InputError

FORMATS = {
    "pip": "cudafit.emit.pip",
    "uv": "cudafit.emit.uv",
    "uv-project": "cudafit.emit.uv_project",
    "requirements": "cudafit.emit.requirements",
    "conda": "cudafit.emit.conda",
    "environment.yml": "cudafit.emit.environment_yml",
    "constraints": "cudafit.emit.constraints",
    "variant-properties": "cudafit.emit.variant_properties",
    "variant-env": "cudafit.emit.variant_env",
    "dockerfile": "cudafit.emit.dockerfile",
}
# Forms of the machine, not of an install: they carry no install step
MACHINE_FORMATS = frozenset(("variant-properties", "variant-env"))


class EmitOptions(NamedTuple):
    env_name: str = "cudafit"
    existing: Optional[str] = None  # current text of the output file, for formats that merge
    per_platform: bool = False  # uv-project: mark our pins and routes with this platform (others follow)
    described: str = ""  # what the answer is for, where not the machine it was solved on (a fleet)
    title: str = ""  # the whole first line, where one set cannot say it (a fleet's set per platform)


def renderer(fmt: str) -> Callable[[Resolution, EmitOptions], str]:
    return import_module(FORMATS[fmt]).render


def render(fmt: str, resolution: Resolution, options: Optional[EmitOptions] = None) -> str:
    return renderer(fmt)(resolution, options or EmitOptions())


class InstallGroup(NamedTuple):
    """One install command: its index (None: PyPI), a find-links page, the requirements, and the
    installer's options it needs (--no-deps, --no-build-isolation)."""

    index_url: Optional[str]
    find_links: Optional[str]
    requirements: tuple[str, ...]
    options: tuple[str, ...] = ()


# PackagePin.mode -> the pip/uv option that says it
MODE_OPTIONS = {"": (), "no-deps": ("--no-deps",), "no-build-isolation": ("--no-build-isolation",)}


def by_index(packages: tuple[PackagePin, ...], first: frozenset[str] = frozenset()) -> list[tuple[tuple[Optional[str], str], list[PackagePin]]]:
    """Packages grouped by the index they must come from and the way pip must install them, each
    group one install command (one --index-url serves one index). The builds others are made
    against (`first`: torch) come first, then PyTorch-style indexes, then PyPI, then what needs
    an option: a library that compiles against torch comes after torch is installed."""
    groups: dict[tuple[Optional[str], str], list[PackagePin]] = {}
    for pin in packages:
        groups.setdefault((pin.index_url, pin.mode), []).append(pin)
    return sorted(groups.items(), key=lambda item: (item[0][1] != "", not any(p.name in first for p in item[1]), item[0][0] is None))


def install_groups(resolution: Resolution, *, single: bool = False, fmt: str = "") -> list[InstallGroup]:
    """The install commands of a set. Pins shared between frameworks go into the last command
    that resolves dependencies, so pip keeps the nvidia-* versions and the torch build the solver
    chose. With `single` (a requirements file names at most one index, and no per-package
    option), builds that PyPI serves as they are move to PyPI; otherwise two indexes are an error,
    since the only way to name both, --extra-index-url, invites dependency confusion."""
    packages = resolution.packages
    if single:
        packages = tuple(p._replace(mode="") if p.mode == "no-deps" else p for p in packages)  # it declares nothing: plain is the same
        built = [p.name for p in packages if p.mode == "no-build-isolation"]
        if built:
            raise InputError(
                f"{', '.join(built)} compiles against the torch already installed, which needs "
                "--no-build-isolation after torch's own install; a file cannot say that: use the pip, uv or uv-project format",
                field="format",
                value=fmt,
            )
    # A library's line also pins the builds it is made against (torch), whichever line it is on,
    # and those builds' own line comes first.
    built_against = {p.name: set(c.requires) for c in resolution.candidates for p in c.packages}
    first = frozenset(dist for dists in built_against.values() for dist in dists)
    groups = by_index(packages, first)
    if single and len(groups) > 1:
        indexed = [p for (url, _mode), pins in groups if url for p in pins]
        if all(p.pypi_build for p in indexed):
            packages = tuple(p._replace(index_url=None, local=None) if p.index_url else p for p in packages)
            groups = by_index(packages, first)
        else:
            # a wheel named by URL still takes its dependencies from PyPI
            where = "; ".join(f"{', '.join(p.name + (' (by URL)' if p.url else '') for p in pins)} from {url or 'PyPI'}" for (url, _mode), pins in groups)
            raise InputError(
                f"this set needs two indexes ({where}); one file can name only one without --extra-index-url: use the uv-project, pip or uv format",
                field="format",
                value=fmt,
            )
    shared = sorted(resolution.shared_pins.items())
    resolving = [i for i, ((_url, mode), _pins) in enumerate(groups) if mode != "no-deps"]
    last = resolving[-1] if resolving else len(groups) - 1
    out = []
    for i, ((url, mode), pins) in enumerate(groups):
        links = next((p.find_links for p in pins if p.find_links), None)
        reqs = tuple(p.requirement for p in pins)
        named = {p.name for p in pins}
        wanted = set().union(*(built_against.get(p.name, set()) for p in pins)) if mode != "no-deps" else set()
        reqs += tuple(f"{dist}{spec}" for dist, spec in shared if dist not in named and (i == last or dist in wanted))
        out.append(InstallGroup(url, links, reqs, MODE_OPTIONS[mode]))
    return out


def compiled_here(resolution: Resolution) -> list[tuple[Candidate, str]]:
    """(candidate, CUDA major) of each library that compiles against the installed torch (a
    source build, installed with --no-build-isolation): it needs an nvcc of that major."""
    return [(c, c.cuda.split(".")[0]) for c in resolution.candidates if c.cuda and any(p.mode == "no-build-isolation" for p in c.packages)]


GENERATED = "; generated by cudafit"


def summary(resolution: Resolution) -> str:
    """The set in a few words: 'torch 2.14.1+cu126 (CUDA 12.6, cuDNN 9.10)'."""
    parts = [c.shown.removesuffix(" (CPU)") for c in resolution.candidates]  # the stack says CPU
    cuda, cudnn = stack_versions(resolution)
    stack = f"CUDA {cuda}, cuDNN {cudnn or 'unknown'}" if cuda else other_stack(resolution)
    return f"{', '.join(parts)} ({stack})"


def other_stack(resolution: Resolution) -> str:
    """What a set without CUDA runs on: ROCm 7.2, Intel XPU, or the CPU."""
    for c in resolution.candidates:
        if c.kind == "rocm":
            return f"ROCm {c.rocm or c.tag.removeprefix('rocm')}"
        if c.tag == "xpu":
            return "Intel XPU"
    return "CPU"


def environment(resolution: Resolution) -> dict[str, str]:
    """The variables the set needs set when it runs (HSA_OVERRIDE_GFX_VERSION), in order."""
    return {name: value for c in resolution.candidates for name, value in c.environment}


def header(resolution: Resolution, described: str = "", title: str = "") -> str:
    """The first line of a written file: the set, and what it is for (`described`, else the
    machine); `title` replaces both."""
    if title:
        return f"{title}{GENERATED}"
    machine = resolution.machine
    where = described or f"{machine.platform}, Python {machine.python or 'any'}"
    return f"{summary(resolution)} for {where}{GENERATED}"


def stack_versions(res: Resolution) -> tuple:
    """The CUDA and cuDNN the set ends up with: the highest any chosen build asks for (pip
    installs one runtime of each, new enough for all)."""
    from packaging.version import Version

    # A library built against another chosen build (xformers against torch) runs on that build's runtime.
    cudas = [c.cuda for c in res.candidates if c.cuda and not c.requires]
    cudnns = [c.cudnn for c in res.candidates if c.cudnn]
    cuda = max(cudas, key=Version) if cudas else None
    cudnn = max(cudnns, key=Version) if cudnns else None
    # A version every framework pins exactly is what pip installs, whatever the ranges allow.
    for dist, spec in res.shared_pins.items():
        exact = spec[2:] if spec.startswith("==") and "," not in spec else None
        if exact and dist.startswith("nvidia-cuda-runtime"):
            cuda = ".".join(exact.split(".")[:2])
        elif exact and dist.startswith("nvidia-cudnn"):
            cudnn = ".".join(exact.split(".")[:3])
    return cuda, cudnn


def cuda_from_conda(resolution: Resolution) -> Optional[tuple[list[str], str]]:
    """(packages, channel) of the CUDA runtime a chosen build expects from conda (TensorFlow on
    native Windows up to 2.10, TensorFlow 2.13's cudatoolkit), or None."""
    for c in resolution.candidates:
        if c.kind == "cuda" and c.conda:
            return [f"cudatoolkit={c.conda['cudatoolkit']}", f"cudnn={c.conda['cudnn']}"], c.conda["channel"]
    return None
