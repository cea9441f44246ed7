"""torch on a Jetson board before Thor: NVIDIA's own wheels for its JetPack line (jetson.toml),
installed by URL. The index and PyPI aarch64 builds are for SBSA servers (and Thor), so these are
the only CUDA builds that run there."""

from __future__ import annotations

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cudafit.answers import Candidate, PackagePin, Rejection
from cudafit.gpu_tables import JetsonWheel
from cudafit.records import Evidence, JetPack, Machine, Matrices

FAMILY = "torch"


def jetpack_line(matrices: Matrices, version: str) -> JetPack | None:
    """The [[jetpack]] line a JetPack release belongs to: 6.2.1 is the 6.2 line, 5.1.2 the 5.1
    line; a release of a line the data does not hold (7.2) belongs to none."""
    given = Version(version)
    return next((j for j in matrices.jetpacks if Version(j.version).release[:2] == given.release[:2]), None)


def jetpack_of_l4t(matrices: Matrices, l4t: str) -> JetPack | None:
    """The JetPack line of a Jetson Linux release (36.4.3 is JetPack 6.2): the newest line whose
    first Jetson Linux release it is at or after, within the same Jetson Linux major."""
    given = Version(l4t)
    lines = [j for j in matrices.jetpacks if Version(j.jetson_linux).major == given.major and Version(j.jetson_linux) <= given]
    return lines[-1] if lines else None


def candidates(specs: dict[str, SpecifierSet], machine: Machine, matrices: Matrices) -> tuple[list[Candidate], list[Rejection]]:
    """NVIDIA's wheels for the machine's JetPack line that satisfy the spec, newest first."""
    if machine.jetpack is None:
        return [], []
    spec = specs.get("torch", SpecifierSet())
    if not matrices.jetson_wheels or not any(machine.jetpack in w.jetpacks for w in matrices.jetson_wheels):
        return [], []
    companions = [name for name in ("torchvision", "torchaudio") if name in specs]
    found: list[tuple[Version, Candidate]] = []
    rejected: list[Rejection] = []
    for wheel in matrices.jetson_wheels:
        if machine.jetpack not in wheel.jetpacks:
            continue
        version = Version(wheel.torch)
        if companions:
            reason = f"NVIDIA publishes no {' or '.join(companions)} for Jetson: build it from source, or take it from the Jetson AI Lab index"
            rejected.append(Rejection(FAMILY, version, "jetson", "platform", reason))
            continue
        index = next((word.rstrip(").,") for word in wheel.notes.split() if word.startswith("(https://") or word.startswith("https://")), "")
        elsewhere = f" (newer community builds: {index.lstrip('(')}, whose contents change)" if index else ""
        if not spec.contains(version, prereleases=True):
            reason = f"NVIDIA's build for JetPack {machine.jetpack} is torch {wheel.torch}, which does not satisfy torch{spec}{elsewhere}"
            rejected.append(Rejection(FAMILY, version, "jetson", "platform", reason))
            continue
        if machine.python is not None and machine.python != wheel.python:
            reason = f"NVIDIA's build for JetPack {machine.jetpack} (torch {wheel.torch}) is for Python {wheel.python} only{elsewhere}"
            rejected.append(Rejection(FAMILY, version, "jetson", "platform", reason))
            continue
        found.append((version, _candidate(wheel, version, machine)))
    found.sort(key=lambda item: item[0], reverse=True)
    return [c for _v, c in found], rejected


def _candidate(wheel: JetsonWheel, version: Version, machine: Machine) -> Candidate:
    pin = PackagePin(FAMILY, str(version.public), None, "jetson", None, url=wheel.url)
    why = f"NVIDIA's build for JetPack {machine.jetpack} (CUDA {wheel.cuda}, Python {wheel.python}); facts: build {wheel.grade} ({', '.join(wheel.sources)})"
    return Candidate(
        family=FAMILY,
        version=version,
        tag="jetson",
        kind="cuda",
        packages=(pin,),
        cuda=wheel.cuda,
        cudnn=None,
        pins={},
        why=(why,),
        warnings=(wheel.notes,) if wheel.notes else (),
        evidence={"exists": Evidence(wheel.grade, wheel.sources)},
    )
