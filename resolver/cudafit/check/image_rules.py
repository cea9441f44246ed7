"""The rule on a Dockerfile's image (CF019): an extension built in the image (an install with
--no-build-isolation) compiles with the image's nvcc against the torch the image installs, and
torch's extension builder refuses a CUDA major other than the one torch was built with (its
cpp_extension compares the two before it compiles). An nvidia/cuda devel image names its CUDA in
its tag (12.8.1-devel-ubuntu24.04), a pytorch/pytorch devel image its CUDA and the torch it carries
(2.6.0-cuda12.4-cudnn9-devel); a torch the Dockerfile installs names its own build (+cu128, or
PyPI's on Linux), and replaces the image's.

What compiles is the data's to say: flash-attn's setup.py first downloads the release asset made
for torch's CUDA major, torch's minor, its C++ ABI and the CPython, and compiles only where none
exists (its `route = "asset"` builds list them). So the rule fires where the data says a pinned
release compiles on every platform and Python the image may have; where it compiles on some only
(aarch64, which has no assets; a Python the assets lack), that is a note; a release or package the
data lacks is no evidence of a compile at all.

A Dockerfile's own compile is evidence by itself: a setup script's build (apex's `python setup.py
install --cuda_ext`, `python setup_cuda.py bdist_wheel`), or a project's folder or repository
installed without build isolation, with what says it is CUDA code for torch's extension builder
(TORCH_CUDA_ARCH_LIST or FORCE_CUDA set, apex's --cuda_ext), in any stage: a builder stage compiles
with its own image's nvcc. The torch is the one the stage's last install of it left; a torch the
file leaves unpinned is PyPI's newest for each Python, which is above the image's CUDA major only
where every release the data knows is, as a newer release only moves up."""

from __future__ import annotations

import re
from typing import NamedTuple, Optional

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from cudafit.check.indexes import effective_local, is_pypi, only_from_pypi, torch_variant
from cudafit.check.model import Document, Finding, Pin, SourceBuild
from cudafit.check.rules import finding
from cudafit.records import Matrices, TorchRelease

# images with nvcc: nvidia/cuda's devel flavours (Docker Hub or NGC), and pytorch/pytorch's
_DEVEL = re.compile(r"^(?:docker\.io/|nvcr\.io/)?nvidia/cuda:(?P<cuda>\d+)\.(?P<minor>\d+)(?:\.\d+)?-(?:cudnn\d*-)?devel-")
_PYTORCH = re.compile(r"^(?:docker\.io/)?pytorch/pytorch:(?P<torch>[\d.]+)-cuda(?P<cuda>\d+)\.(?P<minor>\d+)-cudnn\d+-devel$")
# A CUDA variant's name: cu118 is CUDA 11.8, cu130 13.0
_CUDA_VARIANT = re.compile(r"cu(\d+)(\d)")


class _Compiles(NamedTuple):
    """Where a pinned library release compiles from its sdist with this torch, rather than
    downloading a prebuilt asset: the (platform, Python) pairs of each."""

    pin: Pin
    compiled: list[tuple[str, str]]
    downloaded: list[tuple[str, str]]
    unknown: str = ""  # why the data cannot tell whether an asset spares the compile


def image_toolkit_differs(doc: Document, matrices: Matrices, releases: dict[str, TorchRelease]) -> list[Finding]:
    if doc.kind != "dockerfile" or not doc.builds_here or not doc.images:
        return []
    image, span = doc.images[-1]
    match = _DEVEL.match(image) or _PYTORCH.match(image)
    if match is None:
        return []
    nvcc = f"{match['cuda']}.{match['minor']}"
    # an image's own torch (pytorch/pytorch) is built with its nvcc: only a torch installed over it can differ
    for pin in doc.pins:
        if pin.name != "torch" or pin.version is None or pin.constraint:
            continue
        major = _torch_cuda_major(doc, pin, releases)
        if major is None or major == match["cuda"]:
            continue
        built = _compiled_here(doc, pin.version, int(major), matrices)
        fix = f"start FROM an nvidia/cuda devel image of CUDA {major} (resolve --format dockerfile picks one), or install torch's CUDA {match['cuda']} build"
        for one in built:
            if one.unknown:
                return [
                    finding(
                        "CF013",
                        span,
                        f"{one.pin.name} {one.pin.version}: {one.unknown}, so whether it downloads a prebuilt wheel for torch {pin.version} is not "
                        f"known here. Where none exists, it compiles (--no-build-isolation) with the image's nvcc, CUDA {nvcc} ({image}), "
                        f"against torch's CUDA {major}, which torch's extension builder refuses",
                        f"check the release's assets for torch {pin.version}, or {fix}",
                    )
                ]
            if not one.downloaded:
                return [
                    finding(
                        "CF019",
                        span,
                        f"the image's nvcc is CUDA {nvcc} ({image}), but {one.pin.name} {one.pin.version} has no prebuilt wheel for torch {pin.version}'s "
                        f"CUDA {major} build (its release assets), so it compiles here (--no-build-isolation) against that torch: torch's extension "
                        "builder refuses another CUDA major than its own",
                        fix,
                    )
                ]
        if built:  # the image's platform and Python are not known here: a compile on some of them is a note
            one = built[0]
            return [
                finding(
                    "CF013",
                    span,
                    f"{one.pin.name} {one.pin.version} downloads its prebuilt wheel for torch {pin.version}'s CUDA {major} build on "
                    f"{_where(one.downloaded, one)}, but compiles on {_where(one.compiled, one)}: there, the image's nvcc (CUDA {nvcc}, {image}) is "
                    "another CUDA major than torch's, which torch's extension builder refuses",
                    f"build the image where a release asset exists, or {fix}",
                )
            ]
    return []


def _compiled_here(doc: Document, torch: str, major: int, matrices: Matrices) -> list[_Compiles]:
    """The exact pins of releases that the data says build from their sdist (a `route = "source"`
    build), with where a release asset for this torch spares the compile."""
    from cudafit.frameworks import BY_MEMBER

    python = re.fullmatch(r"==(\d+\.\d+)\.\*", doc.requires_python)
    out = []
    for pin in doc.pins:
        if pin.name not in BY_MEMBER or pin.version is None or pin.constraint:
            continue
        release = next((r for r in BY_MEMBER[pin.name].releases(matrices) if _same(r.version, pin.version)), None)
        if release is None or not any(b.route == "source" for b in release.builds):
            continue  # not in the data (CF013 says so), or a wheel: nothing says it compiles
        # assets are added to a release after it for newer torch lines (2.8.3's for torch 2.9): past the
        # newest line the recorded ones serve, a missing asset is no evidence of a compile
        lines = [_line(b.pins.get("torch", "")) for b in release.builds if b.route == "asset" and b.pins]
        newest = max((line for line in lines if line is not None), default=None)
        mine = _line(f"=={torch}")
        # where the release's CI builds no asset at all (flash-attn's runners are x86_64), it compiles
        served = {p for b in release.builds if b.route == "asset" for p in b.platforms}
        places = set(doc.platforms or release.platforms) & set(release.platforms)
        if served and not places & served:
            newest = mine = None
        if newest is None and mine is not None and getattr(release, "asset", None):
            out.append(_Compiles(pin, [], [], "its release assets are not in cudafit's data"))
            continue
        if newest is not None and mine is not None and mine > newest:
            said = f"its release assets in cudafit's data serve torch up to {newest[0]}.{newest[1]}"
            said += ", and a release gets assets for newer torch lines after it (flash-attn 2.8.3's for torch 2.9)"
            out.append(_Compiles(pin, [], [], said))
            continue
        compiled, downloaded = [], []
        for platform in sorted(set(doc.platforms or release.platforms) & set(release.platforms)):
            for py in sorted({python[1]} if python else release.pythons(platform), key=_key):
                assets = [b for b in release.builds if b.route == "asset" and b.major == major and platform in b.platforms]
                if any(py in (b.python or release.pythons(platform)) and _admits((b.pins or {}).get("torch", ""), torch) for b in assets):
                    downloaded.append((platform, py))
                else:
                    compiled.append((platform, py))
        if compiled:
            out.append(_Compiles(pin, compiled, downloaded))
    return out


def _line(specifier: str) -> Optional[tuple[int, int]]:
    """The torch line a pin names (`==2.8.*`, `==2.9.1`): (2, 8)."""
    match = re.match(r"==\s*(\d+)\.(\d+)", specifier)
    return (int(match[1]), int(match[2])) if match else None


def _where(pairs: list[tuple[str, str]], one: _Compiles) -> str:
    """`linux-aarch64; linux-x86_64 with Python 3.13`: a platform alone where it is every Python."""
    every = one.compiled + one.downloaded
    said = []
    for platform in sorted({p for p, _py in pairs}):
        mine = [py for p, py in pairs if p == platform]
        whole = len(mine) == len([py for p, py in every if p == platform])
        said.append(platform if whole else f"{platform} with Python {', '.join(mine)}")
    return "; ".join(said)


def _same(version: Version, text: str) -> bool:
    try:
        return version == Version(text)
    except InvalidVersion:
        return False


def _admits(specifier: str, version: str) -> bool:
    try:
        return Version(version) in SpecifierSet(specifier)
    except (InvalidSpecifier, InvalidVersion):
        return False


def _key(py: str) -> tuple[int, ...]:
    return tuple(int(x) for x in py.split("."))


def _torch_cuda_major(doc: Document, pin: Pin, releases: dict[str, TorchRelease]) -> Optional[str]:
    local = effective_local(doc, pin)
    if local is None and only_from_pypi(doc, pin):
        release = releases.get(pin.version or "")
        local = (release.pypi_variant or {}).get("linux-x86_64") if release is not None else None
    major = _major(local or "")
    return str(major) if major is not None else None


def source_build_differs(doc: Document, matrices: Matrices, releases: dict[str, TorchRelease]) -> list[Finding]:
    """CF019 for a Dockerfile's own compiles (SourceBuild): the stage's image's nvcc against the
    CUDA major of the torch installed before it, where the image and the torch both say theirs."""
    out = []
    for build in doc.source_builds:
        match = _DEVEL.match(build.image) or _PYTORCH.match(build.image)
        if match is None:
            continue  # an image whose nvcc is not told by its name
        # the image's Python where the chain says (Ubuntu's python3, installed with apt): a range
        # takes that Python's newest release, not each Python's
        python = apt_python(matrices, build.apt_python, build.python_named)
        served = _torch_served(build, releases, python)
        if served is None:
            continue
        nvcc = int(match["cuda"])
        # A range takes, for each Python, its newest release the data knows. For a Python the range's
        # newest release serves, a release the data lacks may come later where the range admits one
        # (not `<2.9`), of another CUDA major but only a higher one: above the image's, it stays
        # above. An older Python's newest is final.
        exact = build.torch.version is not None or build.torch.local is not None or build.torch.from_index is not None
        open_above = not exact and _admits_later(build.torch.specifier, releases)
        newest = max((Version(version) for found in served.values() for version, _v in found if version), default=None)
        wrong = {
            platform: builds
            for platform, builds in served.items()
            if builds
            and all(
                m is not None and m != nvcc and (m > nvcc or not (open_above and Version(version) == newest))
                for version, m in ((version, _major(v)) for version, v in builds)
            )
        }
        if not wrong:
            continue
        builds = sorted({b for found in wrong.values() for b in found}, key=lambda b: Version(b[0] or "0"))
        where = f" on {', '.join(sorted(wrong))}" if set(wrong) != set(build.platforms) else ""
        majors = sorted({m for _version, v in builds if (m := _major(v)) is not None})
        out.append(
            finding(
                "CF019",
                build.span,
                f"`{build.command}` compiles CUDA code against the torch installed before it ({build.evidence}), with the image's nvcc, "
                f"CUDA {match['cuda']}.{match['minor']} ({build.image}); that torch{where} is {_torch_said(build.torch, builds, python, build.apt_python)}: "
                "torch's extension builder refuses a CUDA major other than its own",
                f"start the stage FROM an nvidia/cuda devel image of CUDA {' or '.join(map(str, majors))}, or install a torch built with CUDA {nvcc} "
                "from the PyTorch index of that CUDA",
            )
        )
    return out


def apt_python(matrices: Matrices, ubuntu: str, named: tuple[str, ...]) -> str:
    """The Python of an image whose stage installs `ubuntu`'s python3 with apt: that python3's
    version, where the data knows it and every Python the stage names by version is that one."""
    python = next((u.python for u in matrices.ubuntu_pythons if u.ubuntu == ubuntu), "") if ubuntu else ""
    return python if python and all(n == python for n in named) else ""


def _admits_later(specifier: str, releases: dict[str, TorchRelease]) -> bool:
    """Whether a requirement admits a torch after the data's newest (its next patch, line or major)."""
    try:
        spec = SpecifierSet(specifier)
    except InvalidSpecifier:
        return True
    last = max(r.version for r in releases.values())
    later = (f"{last.major}.{last.minor}.{last.micro + 1}", f"{last.major}.{last.minor + 1}.0", f"{last.major + 1}.0.0")
    return any(spec.contains(v, prereleases=True) for v in later)


def _torch_served(build: SourceBuild, releases: dict[str, TorchRelease], python: str = "") -> Optional[dict[str, list[tuple[str, str]]]]:
    """The torch builds the install gives on each of the stage's platforms: (version, variant) of
    each release it may take there; None where that is not known (another index; an extra index
    beside PyPI, as pip takes the highest version of any)."""
    pin = build.torch
    if pin.local is not None:
        return {p: [(pin.version or "", pin.local)] for p in build.platforms}
    if pin.from_index is not None and not is_pypi(pin.from_index):
        variant = torch_variant(pin.from_index)
        return {p: [(pin.version or "", variant)] for p in build.platforms} if variant else None
    if build.indexes:
        return None
    try:
        wanted = SpecifierSet(pin.specifier)
    except InvalidSpecifier:
        return None
    admitted = sorted((r for r in releases.values() if wanted.contains(r.version)), key=lambda r: r.version, reverse=True)
    if not admitted or (pin.version is not None and len(admitted) > 1):
        return None  # a release the data lacks
    out: dict[str, list[tuple[str, str]]] = {}
    for platform in build.platforms:
        # pip takes the newest release with a wheel for the image's Python: where it is not known, each Python's newest
        pythons = {py for r in admitted for py in r.pythons(platform) if not python or py == python}
        newest = [next(r for r in admitted if py in r.pythons(platform)) for py in pythons]
        out[platform] = sorted({(str(r.version), (r.pypi_variant or {}).get(platform, "")) for r in newest}, key=lambda b: Version(b[0]))
    return out


def _major(variant: str) -> Optional[int]:
    match = _CUDA_VARIANT.fullmatch(variant)
    return int(match[1]) if match else None


def _cuda(variant: str) -> str:
    match = _CUDA_VARIANT.fullmatch(variant)
    return f"CUDA {match[1]}.{match[2]}" if match else (variant or "no known build")


def _torch_said(pin: Pin, builds: list[tuple[str, str]], python: str = "", ubuntu: str = "") -> str:
    """`torch==2.1.0 from PyPI, a CUDA 12.1 build`; a range, with the release the image's Python
    takes (`ubuntu` says where that Python comes from), or each Python's."""
    text = f"torch{pin.specifier}" if pin.specifier else "torch"
    if pin.from_index is not None and not is_pypi(pin.from_index):
        text = f"{text} from {pin.from_index}"
    elif pin.local is None:
        text = f"{text} from PyPI"
    exact = pin.version is not None or pin.local is not None
    if len(builds) == 1 and python and not exact and builds[0][0]:
        where = f"Ubuntu {ubuntu.removeprefix('ubuntu')}'s python3, installed with apt"
        return f"{text}, whose newest release for the image's Python {python} ({where}) is {builds[0][0]}, a {_cuda(builds[0][1])} build"
    if len(builds) == 1:
        return f"{text}, a {_cuda(builds[0][1])} build"
    majors = " or ".join(sorted({str(_major(v)) for _version, v in builds}))
    each = ", ".join(f"{version} with {_cuda(variant)}" for version, variant in builds)
    return f"{text}, whose newest release depends on the image's Python: a CUDA {majors} build for each ({each})"
