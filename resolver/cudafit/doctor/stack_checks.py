"""Checks on the CUDA stack inside the environment: frameworks on different CUDA or cuDNN majors,
nvidia-* wheels that do not satisfy what a framework requires, both ONNX Runtime packages at once,
torchvision and torchaudio made for another torch, and libraries (xformers, vllm, flash-attn,
torchao) built against another torch or CUDA."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Optional

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from cudafit.doctor.context import Context, cuda_builds, cuda_major, finding
from cudafit.doctor.environment import requirements_for
from cudafit.doctor.model import Finding, InstalledBuild
from cudafit.records import LibraryRelease

if TYPE_CHECKING:
    from packaging.specifiers import SpecifierSet

_CUDA_WHEEL = re.compile(r"nvidia-[a-z0-9-]+|cuda-[a-z0-9-]+")
_SUFFIX = re.compile(r"-cu(\d+)$")


def cuda_stacks(ctx: Context) -> list[Finding]:
    out = []
    majors = {b.label: major for b in cuda_builds(ctx) for major in [cuda_major(ctx, b)] if major is not None}
    if len(set(majors.values())) > 1:
        said = ", ".join(f"{label} (CUDA {major})" for label, major in majors.items())
        out.append(
            finding(
                "DR030",
                f"These frameworks are built for different CUDA majors: {said}; loaded in one process, one of them fails to find its libraries.",
                "Install builds of one CUDA major:",
                ctx.repair.commands(),
            )
        )
    cudnn = sorted({_SUFFIX.search(d).group(1) for d in ctx.env.distributions if d.startswith("nvidia-cudnn-cu") and _SUFFIX.search(d)})  # type: ignore[union-attr]
    if len(cudnn) > 1:
        out.append(
            finding(
                "DR030",
                f"Two cuDNN stacks are installed ({', '.join('nvidia-cudnn-cu' + c for c in cudnn)}): the frameworks that use them cannot share a process.",
                "Install builds that share one cuDNN:",
                ctx.repair.commands(),
                severity="warning",
            )
        )
    wrong: list[str] = []
    missing: list[str] = []
    for dist in ctx.env.distributions.values():
        if not dist.requires:
            continue
        asked = [""] + [e for e in dist.extras if _extra_in_use(ctx, dist.name, e)]
        for extra in asked:
            for req in requirements_for(dist, extra, ctx.env.python):
                name = canonicalize_name(req.name)
                if not _CUDA_WHEEL.fullmatch(name) or not str(req.specifier):
                    continue
                have = ctx.env.distributions.get(name)
                if have is None:
                    missing.append(f"{dist.name} {dist.version} needs {name}{req.specifier}, which is not installed")
                elif not req.specifier.contains(have.version, prereleases=True):
                    wrong.append(f"{dist.name} {dist.version} needs {name}{req.specifier}, but {have.version} is installed")
    for problems, what in ((wrong, "wrong version"), (missing, "missing")):
        if problems:
            shown = "; ".join(sorted(set(problems))[:4]) + (f"; and {len(set(problems)) - 4} more" if len(set(problems)) > 4 else "")
            out.append(
                finding("DR031", f"CUDA wheels {what}: {shown}.", "Reinstall the set the resolver picks, which pins every CUDA wheel:", ctx.repair.commands())
            )
    if "onnxruntime" in ctx.env.distributions and "onnxruntime-gpu" in ctx.env.distributions:
        out.append(
            finding(
                "DR032",
                "onnxruntime and onnxruntime-gpu are both installed; they share one package folder, "
                "so whichever was installed last wins and the CUDA provider may be gone.",
                # The resolver's set, never the installed version as such: another finding may say it
                # cannot run here (a driver too old for its CUDA, no kernels for the GPU).
                "Remove both and install only the onnxruntime-gpu build the resolver picks for this machine:"
                if ctx.repair.solved
                else f"Remove both ({ctx.repair.pip('uninstall', 'onnxruntime', 'onnxruntime-gpu')}); "
                "no set with onnxruntime-gpu runs here, and this says why:",
                ctx.repair.commands(),
            )
        )
    return out


def built_against(ctx: Context) -> list[Finding]:
    """Libraries built against torch (xformers, vllm, flash-attn, torchao) beside the torch that
    is installed: its CUDA major must be theirs, and its version the one they require (their
    metadata, or for torchao the version gate the data records)."""
    torch = next((b for b in ctx.env.builds if b.family == "torch"), None)
    out = []
    for lib in ctx.env.libraries:
        problems = _library_problems(ctx, lib, torch)
        if problems:
            out.append(
                finding(
                    "DR033",
                    f"{lib.label} {'; '.join(problems)}: "
                    + (
                        "its compiled kernels will not load (or will crash)."
                        if lib.kind == "cuda"
                        else "it is made for another torch and may fail to import or run."
                    ),
                    "Remove the library (pip keeps an installed version, whatever its build) and install it with torch as one set:",
                    (ctx.repair.pip("uninstall", lib.dist), *ctx.repair.commands()),
                    severity="warning" if lib.family == "torchao" else "error",  # torchao falls back to its Python code
                )
            )
    return out


def _library_problems(ctx: Context, lib: InstalledBuild, torch: Optional[InstalledBuild]) -> list[str]:
    from cudafit.frameworks import release_of

    if torch is None:
        return ["is installed without torch"]
    problems = []
    torch_major = cuda_major(ctx, torch)
    if lib.kind == "cuda" and torch.kind in ("cpu", "rocm"):
        problems.append(f"links the CUDA {lib.cuda} runtime, which only a CUDA build of torch brings, but {torch.label} is a {torch.kind.upper()} build")
    elif lib.kind == "cuda" and lib.cuda and torch_major and lib.cuda.split(".")[0] != torch_major:
        problems.append(f"links CUDA {lib.cuda.split('.')[0]}, but {torch.label} brings CUDA {torch_major}")
    try:
        torch_version = Version(Version(torch.version).public)
        release = release_of(lib.family, Version(Version(lib.version).public), ctx.matrices)
    except InvalidVersion:
        return problems
    if lib.built_for:
        try:
            built = Version(Version(lib.built_for).public)
        except InvalidVersion:
            built = None
        if built is not None and built.release[:2] != torch_version.release[:2] and (release is None or _requirement(release, lib, ctx) is None):
            problems.append(f"was built against torch {lib.built_for}, but {torch.label} is installed")
    if release is not None:
        spec = _requirement(release, lib, ctx)
        if spec is not None and not spec.contains(torch_version, prereleases=True):
            problems.append(f"goes with torch{spec}, but {torch.label} is installed")
    return problems


def _requirement(release: LibraryRelease, lib: InstalledBuild, ctx: Context) -> Optional[SpecifierSet]:
    """The torch a library release requires (the data's, for the build of its CUDA major here)."""
    from packaging.specifiers import SpecifierSet

    platform = ctx.machine.platform
    for build in release.builds:
        if platform is not None and platform not in build.platforms:
            continue
        if lib.cuda and build.kind == "cuda" and build.cuda is not None and str(build.cuda.major) != lib.cuda.split(".")[0]:
            continue
        spec = (build.pins or {}).get("torch")
        if spec:
            return SpecifierSet(spec)
    return None


def _extra_in_use(ctx: Context, dist: str, extra: str) -> bool:
    """An extra counts as asked for when any CUDA wheel only it brings is installed."""
    d = ctx.env.distributions[dist]
    base = {canonicalize_name(r.name) for r in requirements_for(d, "", ctx.env.python)}
    own = {canonicalize_name(r.name) for r in requirements_for(d, extra, ctx.env.python)} - base
    return any(_CUDA_WHEEL.fullmatch(n) and n in ctx.env.distributions for n in own)


# the local tag of a PyTorch index build: cu124, rocm6.2, cpu, xpu
_LOCAL_CUDA = re.compile(r"^cu(\d+?)(\d)$")


def _variant(ctx: Context, local: Optional[str], torch_release: Version) -> Optional[str]:
    """A build's tag (cu124, cpu, rocm6.2): its own local tag, else PyPI's build of that torch
    release on this platform (the data's pypi_variant), else None (not known)."""
    if local:
        return local
    from cudafit.frameworks import release_of

    release = release_of("torch", Version(torch_release.public), ctx.matrices)
    variants = getattr(release, "pypi_variant", None) or {}
    return variants.get(ctx.machine.platform or "") if variants else None


def _kind(tag: str) -> str:
    """What loads beside what: the CUDA major of a CUDA build, else the build kind (cpu, rocm, xpu)."""
    cuda = _LOCAL_CUDA.match(tag)
    return f"cuda{cuda[1]}" if cuda else re.sub(r"[\d.]+$", "", tag)


def _said(tag: str) -> str:
    cuda = _LOCAL_CUDA.match(tag)
    return f"a CUDA {cuda[1]} build" if cuda else f"a {tag.upper() if tag in ('cpu', 'xpu') else tag} build"


def companions(ctx: Context) -> list[Finding]:
    """torchvision and torchaudio pin the torch they were built with (Requires-Dist torch==X in
    their METADATA) and load their compiled operators against it: another torch fails to load them
    (`operator torchvision::nms does not exist`), and an index build of another CUDA major brings a
    second CUDA runtime."""
    torch = ctx.env.distributions.get("torch")
    if torch is None:
        return []
    try:
        torch_version = Version(torch.version)
    except InvalidVersion:
        return []
    wrong = []
    for name in ("torchvision", "torchaudio"):
        dist = ctx.env.distributions.get(name)
        if dist is None:
            continue
        torch_reqs = [r for r in requirements_for(dist, "", ctx.env.python) if canonicalize_name(r.name) == "torch"]
        pinned = [s.version for r in torch_reqs for s in r.specifier if s.operator == "=="]
        try:
            made_for = Version(pinned[0]) if pinned else None
            own = Version(dist.version)
        except InvalidVersion:
            continue
        if made_for is not None and made_for.public != torch_version.public:
            wrong.append(f"{name} {dist.version} is made for torch {made_for.public} (its metadata pins it), not the installed {torch.version}")
            continue
        # each side's build: its local tag, or PyPI's build of that torch release on this platform
        theirs = _variant(ctx, own.local, made_for or torch_version)
        mine = _variant(ctx, torch_version.local, torch_version)
        if theirs and mine and _kind(theirs) != _kind(mine):
            wrong.append(f"{name} {dist.version} is {_said(theirs)} beside torch {torch.version}, {_said(mine)}")
    if not wrong:
        return []
    return [
        finding(
            "DR035",
            "; ".join(wrong) + ": its compiled operators will not load with this torch.",
            "Install torch with the torchvision and torchaudio of its release, as one set:",
            ctx.repair.commands(),
        )
    ]


_JAX_PLUGIN = re.compile(r"jax-cuda(\d+)-plugin")
_DOTTED = re.compile(r"[0-9]+(?:\.[0-9]+)*")


def jax_plugins(ctx: Context) -> list[Finding]:
    """jaxlib loads a CUDA plugin only where the dotted numbers of their versions are the same
    (jaxlib/plugin_support.py: otherwise it warns that the plugin "will not be used"), and JAX then
    runs on the CPU."""
    jaxlib = ctx.env.distributions.get("jaxlib")
    if jaxlib is None:
        return []
    own = _DOTTED.match(jaxlib.version)
    stale = [
        d
        for name, d in sorted(ctx.env.distributions.items())
        if _JAX_PLUGIN.fullmatch(name) and own is not None and (m := _DOTTED.match(d.version)) is not None and m.group(0) != own.group(0)
    ]
    if not stale:
        return []
    said = ", ".join(f"{d.name} {d.version}" for d in stale)
    pjrt = [n.replace("-plugin", "-pjrt") for n in (d.name for d in stale) if n.replace("-plugin", "-pjrt") in ctx.env.distributions]
    remove = ctx.repair.pip("uninstall", *(d.name for d in stale), *pjrt)
    kept = [name for name in ctx.env.distributions if _JAX_PLUGIN.fullmatch(name) and ctx.env.distributions[name] not in stale]
    if kept:
        # a plugin of jaxlib's own version is there too: it is the one jaxlib loads once the other goes
        return [
            finding("DR036", f"{said} is not of jaxlib {jaxlib.version}'s version: jaxlib skips it; {kept[0]} is the plugin it loads.", "Remove it:", (remove,))
        ]
    # the plugin of jaxlib's own version, of the CUDA major installed (its pjrt comes with it)
    assert own is not None
    wanted = [f"{d.name}[with-cuda]=={own.group(0)}" for d in stale]
    return [
        finding(
            "DR036",
            f"{said} is not of jaxlib {jaxlib.version}'s version: jaxlib does not load it (it warns that the plugin is not compatible and will not be used), "
            "so JAX runs on the CPU.",
            "Replace it with the plugin of jaxlib's version:",
            (remove, ctx.repair.pip("install", *wanted)),
        )
    ]


def numpy_two(ctx: Context) -> list[Finding]:
    """NumPy 2 installed beside a framework built against NumPy 1.x (numpy-abi.toml): importing it
    fails ("_ARRAY_API not found"), or, for torch, every NumPy conversion does."""
    from cudafit.numpy_abi import built_on_numpy1

    numpy = ctx.env.distributions.get("numpy")
    try:
        if numpy is None or Version(numpy.version).major < 2:
            return []
    except InvalidVersion:
        return []
    out = []
    for build in ctx.env.builds:
        fact = built_on_numpy1(ctx.matrices.numpy1, build.family, build.version, ctx.machine.platform)
        if fact is None:
            continue
        fails = "importing it fails (_ARRAY_API not found)" if fact.effect == "import" else "every NumPy conversion fails (Numpy is not available)"
        out.append(
            finding(
                "DR037",
                f"{build.label} was built against NumPy 1.x, and numpy {numpy.version} is installed: {fails}.",
                "Install a NumPy 1.x beside it (or a release of the framework built against NumPy 2):",
                (ctx.repair.pip("install", "numpy<2"),),
                severity="error" if fact.effect == "import" else "warning",
            )
        )
    return out
