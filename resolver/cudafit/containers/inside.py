"""`resolve --inside IMAGE`: the library builds (xformers, flash-attn, vllm, ...) that fit the torch
an image already carries, installed without moving it.

An NGC image's torch is NVIDIA's own build of a pre-release (2.8.0a0+5228986c39): library wheels
are built against the release it precedes (torch 2.8.0) and pin it exactly, a pin the pre-release
does not meet (PEP 440), so pip and uv would replace NVIDIA's torch with PyPI's. The answer is
solved against that release, with torch held to one build of the image's CUDA major (the one its
libraries must match), and installed by uv with the image's own torch family as overrides: uv then
takes every other dependency and keeps the image's torch (tests/test_inside.py runs it)."""

from __future__ import annotations

from typing import NamedTuple, Optional

from packaging.version import Version

from cudafit.answers import Candidate, Resolution
from cudafit.containers.data import Container, Fact
from cudafit.containers.image import Image
from cudafit.containers.judge import Verdict, judge
from cudafit.errors import InputError
from cudafit.records import Machine, Matrices, Policy

TORCH_FAMILY = ("torch", "torchvision", "torchaudio")
OVERRIDES = "/tmp/cudafit-image.txt"  # the image's torch family, as its pip lists them
# reads the versions the image really has (NVIDIA's local labels vary: .nv25.05, .nv25.5)
READ_IMAGE = "python -m pip list --format=freeze | grep -iE '^(torch|torchvision|torchaudio)==' > " + OVERRIDES
NGC_CONSTRAINT = "/etc/pip/constraint.txt"  # NVIDIA's pins in its images from 25.03 (matrices/ngc-containers.toml)


class Inside(NamedTuple):
    image: Image
    resolution: Resolution  # solved against the torch release the image's build precedes
    host: Optional[Verdict]  # whether the image runs on the host; None where the host's driver is not known
    torch_tag: str  # the torch build the libraries were matched against (cu129)
    assumed_driver: str = ""  # the host's driver not known: answered for the one the image's CUDA needs

    @property
    def libraries(self) -> tuple[Candidate, ...]:
        return tuple(c for c in self.resolution.candidates if c.family != "torch")

    @property
    def ok(self) -> bool:
        return self.resolution.ok and (self.host is None or self.host.runs is not False)

    @property
    def constraint(self) -> Optional[str]:
        """The image's own pip constraints file, where the data says it has one."""
        c = self.image.container
        return NGC_CONSTRAINT if c is not None and c.pip_constraint else None


def resolve_inside(specs: list[str], image: Image, machine: Machine, matrices: Matrices, policy: Policy) -> Inside:
    from cudafit.resolution import resolve
    from cudafit.specs import parse_specs

    if not specs:
        raise InputError("name the libraries to install in the image (xformers, flash-attn, vllm, ...)", field="inside", value=image.name)
    machine = machine._replace(os="linux", python=image.python)  # the image's, whatever the host runs
    for spec in specs:  # a library's spec implies torch; only a spec that names it is refused
        if next(iter(parse_specs([spec], machine, matrices)[0])) == "torch":
            said = f"the image carries its own torch ({image.torch}); --inside keeps it: name only what to install beside it"
            raise InputError(said, field="spec", value=spec)
    if machine.detected and machine.driver_known and machine.driver is None:
        # this machine has no NVIDIA driver (a laptop, CI): it prepares the image for another host
        machine = machine._replace(driver_known=False, gpus=(), gpus_known=False)
    host = judge(image.container or _described(image), machine, matrices) if machine.driver_known else None
    assumed = "" if machine.driver_known else _toolkit_driver(image.cuda, matrices)
    if assumed:
        machine = machine._replace(driver=assumed, driver_known=True)
    release = image.torch_release
    tag = torch_build(release, image.cuda, matrices)
    if tag is None:
        failed = Resolution(
            ok=False,
            machine=machine,
            conflicts=(f"cudafit's data has no torch {release} build of CUDA {image.cuda.major}, the release {image.name}'s torch ({image.torch}) precedes",),
        )
        return Inside(image, failed, host, "", assumed)
    why = f"{image.name} carries torch {image.torch} of CUDA {image.cuda}: libraries must fit torch {release}+{tag}"
    held = policy._replace(only=frozenset({("torch", str(release), tag)}), only_reason=why, only_constraint="image")
    return Inside(image, resolve([f"torch=={release}", *specs], machine, matrices, held), host, tag, assumed)


def _toolkit_driver(cuda: Version, matrices: Matrices) -> str:
    """The driver NVIDIA's toolkit of this CUDA needs on Linux: what any host running the image has."""
    toolkit = matrices.toolkit(Version(f"{cuda.major}.{cuda.minor}"))
    return (toolkit.linux_driver_min or "") if toolkit is not None else ""


def torch_build(release: Version, cuda: Version, matrices: Matrices) -> Optional[str]:
    """The torch build of `release` that stands for an image's torch of CUDA `cuda`: of the same
    major, the same minor, else the newest below it, else the oldest above it."""
    from cudafit.frameworks import release_of

    record = release_of("torch", release, matrices)
    if record is None:
        return None
    same = sorted((b.cuda, b.tag) for b in record.builds if b.kind == "cuda" and b.cuda is not None and b.cuda.major == cuda.major)
    wanted = (cuda.major, cuda.minor)
    below = [tag for version, tag in same if (version.major, version.minor) <= wanted]
    return below[-1] if below else (same[0][1] if same else None)


def _described(image: Image) -> Container:
    return Container(tag="described", framework="pytorch", image=image.name, cuda=Fact(str(image.cuda), "declared"))


def install_steps(inside: Inside) -> list[str]:
    """Shell lines that install the libraries in the image: read its torch family, then uv with
    them as overrides (and NVIDIA's constraints, where the image has them)."""
    from cudafit.emit.pip import commands

    installer = f"uv pip install --system --override {OVERRIDES}"
    if inside.constraint:
        installer += f" --constraint {inside.constraint}"
    steps = [READ_IMAGE]
    steps += [line for line in commands(libraries_only(inside), installer) if not line.startswith("#")]
    return steps


def libraries_only(inside: Inside) -> Resolution:
    """The answer without the torch it was matched against: the image has its own. Shared pins
    stay where a library itself pins them (torch's own nvidia-* pins are not installed here)."""
    res = inside.resolution
    libraries = inside.libraries
    pinned = {dist for c in libraries for dist in c.pins}
    shared = {dist: spec for dist, spec in res.shared_pins.items() if dist in pinned and dist not in TORCH_FAMILY}
    # torch's own warnings are about a build this answer does not install
    warnings = tuple(w for w in res.warnings if not w.startswith(tuple(f"{name} " for name in TORCH_FAMILY)))
    return res._replace(candidates=libraries, shared_pins=shared, offered=(), clashes=(), warnings=warnings)


def caveats(inside: Inside) -> list[str]:
    """What the user should know about installing these builds in the image, as facts."""
    image, release = inside.image, inside.image.torch_release
    out = []
    refused = sorted({f"{c.packages[0].name} requires torch{spec}" for c in inside.libraries for spec in _torch_pins(c) if not _admits(spec, image.torch)})
    if refused:
        out.append(
            f"the image's torch {image.torch} is a pre-release of {release}: {', '.join(refused)}, which it does not meet, "
            "so plain pip or uv would replace the image's torch with PyPI's; the overrides keep it"
        )
    # wheels made elsewhere; a build from source here compiles against the image's own torch
    compiled = [c for c in inside.libraries if c.requires and any(p.mode != "no-build-isolation" for p in c.packages)]
    if compiled and image.torch != release:
        names = ", ".join(sorted({c.packages[0].name for c in compiled}))
        out.append(
            f"{names}: built against the torch {release} release, not the image's build; should one fail to load (an undefined symbol), "
            f"build it in the image against its own torch: uv pip install --system --override {OVERRIDES} --no-build-isolation --no-binary NAME NAME==VERSION"
        )
    needs_companions = sorted({dist for c in inside.libraries for dist in c.requires if dist != "torch"})
    if needs_companions:
        out.append(f"{', '.join(needs_companions)}: the image's own are kept where it has them (the overrides name what its pip lists)")
    return out


def _torch_pins(c: Candidate) -> list[str]:
    spec = c.requires.get("torch")
    return [spec] if spec else []


def _admits(spec: str, version: Version) -> bool:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        return SpecifierSet(spec).contains(version, prereleases=True)
    except InvalidSpecifier:
        return False
