"""What the readers of `cudafit check` hand the rules: each requirement, index and conda spec of a
file with the line and column it was written at, so a finding and a fix point at the exact text."""

from __future__ import annotations

from typing import NamedTuple, Optional

from cudafit.records import WheelFiles


class Span(NamedTuple):
    """Where a value sits: the file, its 1-based line and column, and the text written there (a
    fix replaces exactly that text, so it keeps the rest of the line and the file's layout)."""

    path: str
    line: int
    col: int
    text: str = ""


class Route(NamedTuple):
    """One entry of `[tool.uv.sources]` for a package: the index it names, and where it applies
    (an extra or dependency group, a marker); uv takes the first that applies, else the default."""

    url: str
    selection: str = ""  # "extra cuda", "group dev"; "" for every selection
    marker: Optional[str] = None


# A lock package's reach: paths from the project to it, each the markers met along it (kept apart,
# not joined into one long marker: the few distinct ones are evaluated once per environment).
Reach = tuple[tuple[str, ...], ...]
EVERYWHERE: Reach = ((),)


class Pin(NamedTuple):
    """A requirement as a file states it. `version` and `local` are set only for an exact pin
    (`==2.5.1+cu124` or a lockfile's version); `specifier` keeps the whole specifier."""

    name: str  # canonical (PEP 503)
    specifier: str  # "==2.5.1+cu124", ">=2.4", "" for none
    span: Span  # the requirement's text
    version: Optional[str] = None  # public version of an exact pin
    local: Optional[str] = None  # its local tag (cu124), if any
    marker: Optional[str] = None  # the PEP 508 marker, as written
    from_index: Optional[str] = None  # the index this one requirement comes from (uv sources, a lockfile)
    group: str = ""  # "" for the main set; an extra, dependency group or include chain otherwise
    constraint: bool = False  # a -c constraints file line: limits versions, installs nothing
    extras: tuple[str, ...] = ()
    hashed: bool = False  # pinned by --hash too: a new version needs a new hash, so no fix rewrites it
    routes: tuple[Route, ...] = ()  # uv sources that route it per extra, group or marker (from_index is then None)
    # Where the project's dependencies reach it: a uv.lock entry carries no marker of its own for
    # that (its edges do). Each path is the markers met along it (all must hold); one path that
    # holds is enough. EVERYWHERE where its own marker holds; None where the reader could not tell
    # (too many paths), so rules that need it skip the pin.
    reached: Optional[Reach] = ((),)
    # A lockfile's own list of the package's files (uv.lock `wheels`/`sdist`, pylock `wheels`): what
    # an install of the lock can choose from. None elsewhere.
    files: Optional[WheelFiles] = None
    # Not written in the file: what a pinned release requires in its own METADATA ("jax 0.4.26"),
    # checked against the file's pins of that name (contradictions.py).
    required_by: str = ""
    override: bool = False  # uv's override-dependencies: replaces every requirement of its name
    # A lock's wheel-variant labels of the package (PEP 825 names: torch-...-cuda12.8.whl): the
    # installer picks one per machine from its properties (check/variant_pick.py)
    labels: tuple[str, ...] = ()


BUILD_SYSTEM = "build-system"  # the group of `[build-system] requires`: what an isolated build installs, never the environment


class IndexRef(NamedTuple):
    """An index a file points pip, uv, Poetry or conda at."""

    url: str
    kind: str  # index-url | extra-index-url | find-links | uv-index | poetry-source | channel
    span: Span
    name: str = ""  # uv's or Poetry's name for it
    explicit: bool = False  # uv `explicit = true`: used only by packages that name it


class CondaSpec(NamedTuple):
    """A conda package spec from environment.yml (`pytorch=2.5.1`, `pytorch::pytorch-cuda=12.4`)."""

    name: str
    version: str  # as written ("2.5.1", "2.5.*", ""), without the build string
    channel: str  # the channel named in the spec, "" for none
    span: Span


class Problem(NamedTuple):
    """Something a reader found wrong with the file itself (a line pip would refuse, a missing
    include): reported as a finding of its own code."""

    code: str
    message: str
    span: Span


class SourceBuild(NamedTuple):
    """A Dockerfile's compile of a torch CUDA extension against the torch its stage already holds
    (`python setup.py install` with TORCH_CUDA_ARCH_LIST set): the image the stage's chain starts
    FROM, whose nvcc compiles it, and the torch the last install that named torch left there."""

    span: Span  # the command that compiles
    command: str  # its words, as the message quotes them
    evidence: str  # what says it compiles CUDA code against torch, in words
    image: str
    torch: Pin  # the last install that named torch in the chain (a compile before any is not told)
    indexes: tuple[IndexRef, ...] = ()  # that install's extra indexes and pages
    platforms: tuple[str, ...] = ()  # the machines the stage is built for
    # the Ubuntu (of an nvidia/cuda image's tag) whose python3 the chain installs with apt, where
    # that is the chain's only Python ("ubuntu22.04"); "" where the Python is not told
    apt_python: str = ""
    python_named: tuple[str, ...] = ()  # the Python versions the chain names (python3.10 paths): must be that python3's


class Document(NamedTuple):
    """One file as read: what it asks for, where from, and what is wrong with its text."""

    path: str
    kind: str  # requirements | pyproject | uv-lock | pylock | conda-env
    pins: tuple[Pin, ...] = ()
    indexes: tuple[IndexRef, ...] = ()
    conda: tuple[CondaSpec, ...] = ()
    channels: tuple[IndexRef, ...] = ()
    problems: tuple[Problem, ...] = ()
    lines: dict[str, tuple[str, ...]] = {}  # path -> its lines, for suppression comments (never mutated)
    no_index: bool = False  # pip's --no-index: only find-links pages
    requires_python: str = ""  # the file's requires-python, where it states one
    platforms: tuple[str, ...] = ()  # the platforms it installs on, where the file says (a Dockerfile: Linux); () every one
    images: tuple[tuple[str, Span], ...] = ()  # a Dockerfile's FROM images, ARGs put in, the running one last
    builds_here: bool = False  # a Dockerfile builds a package against what it installed (--no-build-isolation)
    # a resolver's output for the one platform it ran on (uv pip compile or pip-compile, not universal)
    compiled_here: bool = False
    # a pyproject whose build compiles against torch: how, in words (check/extension.py); "" where nothing says so
    extension: str = ""
    # its torch as setup.py or a setuptools dynamic file declares it, where the pyproject lists no dependencies
    extension_torch: tuple[Pin, ...] = ()
    # a Dockerfile's compiles of torch CUDA extensions by a setup script or a build without isolation, every stage's
    source_builds: tuple[SourceBuild, ...] = ()
    # a Dockerfile whose running stage installs Ubuntu's python3 with apt on an nvidia/cuda image, and
    # no other Python: that Ubuntu ("ubuntu22.04"), whose python3 the data knows
    apt_python: str = ""
    python_named: tuple[str, ...] = ()  # the Python versions the stage names (python3.10 paths): must be that python3's


# Kinds whose pins are one set installed together (a requirements file and its includes; an image)
ONE_SET = ("requirements", "dockerfile")


SEVERITIES = ("error", "warning", "note")  # a finding's severity, most severe first


class Finding(NamedTuple):
    path: str
    line: int
    col: int
    code: str
    message: str
    severity: str  # error | warning | note (cudafit cannot check it: fails nothing unless --strict)
    fix: str = ""  # how to fix it, in words
    edit: Optional[tuple[Span, str]] = None  # an unambiguous rewrite: the span's text becomes this
    where: str = ""  # the environments it holds in, in words, where not in all the file describes ("windows-x86_64")
    environments: tuple[str, ...] = ()  # their keys (environments.Environment.key); () for every one

    def sort_key(self) -> tuple:
        return (self.path, self.line, self.col, self.code)
