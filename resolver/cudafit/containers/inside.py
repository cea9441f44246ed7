"""`resolve --inside IMAGE`: the library builds (xformers, flash-attn, vllm, ...) that fit the torch
an image already carries, installed without moving it.

An NGC image's torch is NVIDIA's own build of a pre-release (2.8.0a0+5228986c39): library wheels
are built against the release it precedes (torch 2.8.0) and pin it exactly, a pin the pre-release
does not meet (PEP 440), so pip and uv would replace NVIDIA's torch with PyPI's. The answer is
solved against that release, with torch held to one build of the image's CUDA major: NVIDIA built
the image's torch against the image's own CUDA libraries, so no PyTorch build is the image's, and
the one that stands for it is tried in turn (the image's CUDA minor, the minors below it newest
first, then those above it oldest first) until the libraries fit one. It is installed by uv with
the image's own torch family as overrides: uv then takes every other dependency and keeps the
image's torch (tests/test_inside.py runs it)."""

from __future__ import annotations

from typing import NamedTuple, Optional

from packaging.version import Version

from cudafit.answers import Candidate, Resolution
from cudafit.containers.data import Container, Fact
from cudafit.containers.image import Image
from cudafit.containers.judge import Verdict, judge
from cudafit.errors import InputError
from cudafit.records import Machine, Matrices, Policy, driver_key

TORCH_FAMILY = ("torch", "torchvision", "torchaudio")
OVERRIDES = "/tmp/cudafit-image.txt"  # the image's torch family, as its pip lists them
# reads the versions the image really has (NVIDIA's local labels vary: .nv25.05, .nv25.5)
READ_IMAGE = "python -m pip list --format=freeze | grep -iE '^(torch|torchvision|torchaudio)==' > " + OVERRIDES
NGC_CONSTRAINT = "/etc/pip/constraint.txt"  # NVIDIA's pins in its images from 25.03 (matrices/ngc-containers.toml)
# NGC images from 25.01 (Ubuntu 24.04, Python 3.12) keep the distribution's PEP 668 marker on the
# system Python and set PIP_BREAK_SYSTEM_PACKAGES=1 for pip, which uv does not read: NVIDIA's own
# bionemo-framework Dockerfile on nvcr.io/nvidia/pytorch:25.06-py3 sets UV_BREAK_SYSTEM_PACKAGES for
# that reason (its Dockerfile at 915dd66c, search-index id 28175609883), as a runbook does for
# `uv pip install --system` on 26.05-py3 (id 55589472064). The flag only lifts uv's refusal of an
# EXTERNALLY-MANAGED interpreter, so on the older images, which have no marker, it changes nothing.
UV_SYSTEM = "uv pip install --system --break-system-packages"
# why the libraries are answered for the image's own CUDA driver below the host's
_FORWARD = "inside the image, its CUDA forward-compatibility libraries stand in for the host driver's"


class Inside(NamedTuple):
    image: Image
    resolution: Resolution  # solved against the torch release the image's build is of
    host: Optional[Verdict]  # whether the image runs on the host; None where the host's driver is not known
    torch_tag: str  # the torch build the libraries were matched against (cu129); "" where none was
    assumed_driver: str = ""  # the driver the libraries were answered for, where not the host's own
    assumed_why: str = ""  # why: the host's driver is not given, or forward compatibility stands in for it
    torch_version: str = ""  # the torch release as cudafit's data holds it (2.8.0), the stand-in's version
    tried: tuple[str, ...] = ()  # the stand-in builds solved, in order (cu132, cu130): the last is the answer's
    coverage: tuple[str, ...] = ()  # where no build fits: the releases the data holds of each library that fits no torch build
    stand_in_cuda: str = ""  # the CUDA of the torch build matched (13.0 for cu130)

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

    @property
    def matched(self) -> str:
        """The torch build that stood for the image's (2.8.0+cu129); "" where none was matched."""
        return f"{self.torch_version}+{self.torch_tag}" if self.torch_tag else ""


def resolve_inside(specs: list[str], image: Image, machine: Machine, matrices: Matrices, policy: Policy) -> Inside:
    from cudafit.frameworks import release_of
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
    assumed, assumed_why = _assumed_driver(image, machine, host, matrices)
    if assumed:
        machine = machine._replace(driver=assumed, driver_known=True)
    release = image.torch_release
    record = release_of("torch", release, matrices)
    tags = torch_builds(release, image.cuda, matrices)
    if record is None or not tags:
        what = relation(image.torch, order=True)
        said = f"cudafit's data has no torch {release} build of CUDA {image.cuda.major}; {image.name}'s torch {image.torch} is {what}"
        failed = Resolution(ok=False, machine=machine, conflicts=(said,))
        return Inside(image, failed, host, "", assumed, assumed_why, coverage=_coverage(specs, release, machine, matrices))
    version = str(record.version)  # as the data holds it: a described "2.8" is the data's 2.8.0
    cuda = {b.tag: str(b.cuda) for b in record.builds if b.cuda is not None}
    first: Optional[tuple[Resolution, str]] = None
    for n, tag in enumerate(tags):
        why = f"{image.name} carries torch {image.torch} of CUDA {image.cuda}: torch {version}+{tag} stands for it"
        held = policy._replace(only=frozenset({("torch", version, tag)}), only_reason=why, only_constraint="image")
        res = resolve([f"torch=={version}", *specs], machine, matrices, held)
        if res.ok:
            return Inside(image, res, host, tag, assumed, assumed_why, version, tuple(tags[: n + 1]), (), cuda[tag])
        first = first or (res, tag)
    assert first is not None  # tags is not empty
    # no stand-in fits: the nearest one's conflicts are the answer's
    coverage = _coverage(specs, record.version, machine, matrices)
    return Inside(image, first[0], host, first[1], assumed, assumed_why, version, tuple(tags), coverage, cuda[first[1]])


def relation(torch: Version, order: bool = False) -> str:
    """What the image's torch is to the release of its version's numbers, as PEP 440 says; with
    `order`, which of the two comes first where they differ."""
    release = torch.base_version
    if torch.is_postrelease:  # 2.8.0.post1, and its own development releases: all after 2.8.0
        return f"a post-release of {release}" + (", which follows that release" if order else "")
    if torch.is_devrelease and not torch.pre:
        return f"a development release of {release}" + (", which precedes that release" if order else "")
    if torch.is_prerelease:
        return f"a pre-release of {release}" + (", which precedes that release" if order else "")
    return f"a build of the release {release} ({torch.local})" if torch.local else f"the release {release}"


def _assumed_driver(image: Image, machine: Machine, host: Optional[Verdict], matrices: Matrices) -> tuple[str, str]:
    """The driver the libraries are answered for where it is not the host's own, and why ("", "" where it is)."""
    floor = _toolkit_driver(image.cuda, matrices)
    if not floor:
        return "", ""
    if not machine.driver_known:
        return floor, "its driver is not given"
    if host is None or machine.driver is None or _meets(machine.driver, floor):
        return "", ""
    # below the image's own floor the image runs only through forward compatibility, and there the
    # forward-compatibility package in the image (a newer libcuda) is what the libraries load
    if host.runs is True and host.forward_compat:
        return floor, _FORWARD
    below = bool(host.driver_min) and not _meets(machine.driver, host.driver_min)  # the floor the verdict was judged by
    if host.runs is None and below and _datacenter(machine, matrices):
        return floor, f"should a data-center GPU run the image through forward compatibility, {_FORWARD}"
    return "", ""


def _meets(driver: str, floor: str) -> bool:
    try:
        return driver_key(driver) >= driver_key(floor)
    except ValueError:  # a driver that is not numbers: not known to meet it
        return False


def _datacenter(machine: Machine, matrices: Matrices) -> bool:
    """Whether a GPU of the host is a data-center one (gpus.toml's segment), the GPUs forward compatibility covers."""
    from cudafit.gpus import lookup_gpu

    models = [lookup_gpu(matrices.gpus, g.name)[0] for g in machine.gpus if g.vendor == "nvidia" and g.name]
    return any(m is not None and m.segment == "datacenter" for m in models)


def _toolkit_driver(cuda: Version, matrices: Matrices) -> str:
    """The driver NVIDIA's toolkit of this CUDA needs on Linux: what any host running the image has."""
    toolkit = matrices.toolkit(Version(f"{cuda.major}.{cuda.minor}"))
    return (toolkit.linux_driver_min or "") if toolkit is not None else ""


def torch_builds(release: Version, cuda: Version, matrices: Matrices) -> list[str]:
    """The torch builds of `release` that may stand for an image's torch of CUDA `cuda`, in the
    order they are tried: of the same major only (the CUDA runtime its libraries link), the same
    minor, then the minors below it newest first, then those above it oldest first."""
    from cudafit.frameworks import release_of

    record = release_of("torch", release, matrices)
    if record is None:
        return []
    same = sorted((b.cuda, b.tag) for b in record.builds if b.kind == "cuda" and b.cuda is not None and b.cuda.major == cuda.major)
    wanted = (cuda.major, cuda.minor)
    exact = [tag for version, tag in same if (version.major, version.minor) == wanted]
    below = [tag for version, tag in reversed(same) if (version.major, version.minor) < wanted]
    above = [tag for version, tag in same if (version.major, version.minor) > wanted]
    return list(dict.fromkeys([*exact, *below, *above]))


def _coverage(specs: list[str], release: Version, machine: Machine, matrices: Matrices) -> tuple[str, ...]:
    """For each library none of whose releases in cudafit's data is built for torch `release`: the
    releases the data holds, and, where every one is built for newer (older) torch releases only,
    that an older (later) release may be built for it. A library with a build whose torch pin is
    unknown or admits the release is not named: there the data is not what is missing."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    from cudafit.frameworks import BY_FAMILY, release_of

    torch = release_of("torch", release, matrices)
    released = f" (released {torch.date})" if torch is not None and torch.date else ""
    torches = sorted(r.version for r in BY_FAMILY["torch"].releases(matrices))
    out = []
    for family in _families(specs, machine, matrices):
        releases = sorted(BY_FAMILY[family].releases(matrices), key=lambda r: r.version)
        pins = [None if b.pins is None else b.pins.get("torch", "") for r in releases for b in r.builds]
        try:
            sets = [SpecifierSet(pin) for pin in pins if pin is not None]
        except InvalidSpecifier:
            continue  # a pin the data cannot read says nothing either way
        if not releases or len(sets) < len(pins) or any(s.contains(release, prereleases=True) for s in sets):
            continue
        oldest, newest = releases[0], releases[-1]
        held = f"cudafit's data holds {family} {oldest.version} ({oldest.date}) to {newest.version} ({newest.date})"
        said = f"{held}; none of those is built for torch {release}{released}"
        # the torch releases of the data that the library's builds are built for
        fits = [v for v in torches if any(s.contains(v, prereleases=True) for s in sets)]
        if fits and release < fits[0]:
            said += f": they are built for torch {fits[0]} and later, so an older {family} release may be built for it, but none is in the data"
        elif fits and release > fits[-1]:
            said += f": they are built for torch {fits[-1]} and earlier, so a later {family} release may be built for it, but none is in the data"
        out.append(said)
    return tuple(out)


def _families(specs: list[str], machine: Machine, matrices: Matrices) -> list[str]:
    """The libraries the specs name, in their order (torch, implied by each, left out)."""
    from cudafit.specs import parse_specs

    return [f for f in parse_specs(specs, machine, matrices)[0] if f != "torch"]


def _described(image: Image) -> Container:
    return Container(tag="described", framework="pytorch", image=image.name, cuda=Fact(str(image.cuda), "declared"))


def install_steps(inside: Inside) -> list[str]:
    """Shell lines that install the libraries in the image: read its torch family, then uv with
    them as overrides (and NVIDIA's constraints, where the image has them)."""
    from cudafit.emit.pip import commands

    installer = f"{UV_SYSTEM} --override {OVERRIDES}"
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
            f"the image's torch {image.torch} is {relation(image.torch)}: {', '.join(refused)}, which it does not meet, "
            "so plain pip or uv would replace the image's torch with PyPI's; the overrides keep it"
        )
    # wheels made elsewhere; a build from source here compiles against the image's own torch
    compiled = [c for c in inside.libraries if c.requires and any(p.mode != "no-build-isolation" for p in c.packages)]
    if compiled and image.torch != release:
        names = ", ".join(sorted({c.packages[0].name for c in compiled}))
        out.append(
            f"{names}: made for PyTorch's own torch builds (matched here against torch {inside.matched}), "
            f"not for the image's own (built against its CUDA {image.cuda}); "
            "should one fail to load (an undefined symbol), build it in the image against its own torch: "
            f"{UV_SYSTEM} --override {OVERRIDES} --no-build-isolation --no-binary NAME NAME==VERSION"
        )
    # a library that loads its compiled code for torch's own CUDA version (the data's torch_cuda):
    # the stand-in's CUDA is not the image's, and the image's torch reports the image's
    minor = [c for c in inside.libraries if c.torch_cuda and c.torch_cuda != "cpu" and not _admits(c.torch_cuda, image.cuda)]
    for c in minor:
        out.append(
            f"{c.packages[0].name} {c.version}+{c.tag}: cudafit's data says it loads its compiled code for torch's CUDA version and stands for "
            f"CUDA {c.torch_cuda} only; the image's torch is of CUDA {image.cuda}, so that code may not load beside it "
            "(a build from source in the image compiles it against the image's torch and CUDA)"
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
