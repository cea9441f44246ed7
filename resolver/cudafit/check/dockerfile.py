"""Dockerfiles (and Containerfiles), as Docker reads them: dockerfile-parse splits the
instructions (continuations, comments) and puts the ARG values into FROM; a RUN line's shell text,
its heredoc bodies that a shell runs, and the JSON words of its exec form go to shell_installs,
which finds the pip and uv installs among them. The image's last stage is the environment that
runs (an earlier stage is a build step, read for what it builds in); each install command's
`--index-url` (or an index variable set before the command, or `pip config set` earlier in the
stage chain) is where its own requirements come from, and `-r`/`-c` files are checked as files of
their own. A word that names a variable without a value is passed over; one the shell computes
(`$(...)`) is passed over with a note. Every stage is also read for the CUDA extensions it compiles
(a setup script's build, a project's folder installed without isolation): a builder stage compiles
with its own image's nvcc against the torch its chain installed, which CF019 judges."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Optional

from cudafit.check import pins
from cudafit.check.model import Document, IndexRef, Pin, Problem, SourceBuild, Span
from cudafit.check.pins import looks_like_path
from cudafit.check.shell_installs import INDEX_VARIABLES, SHELL, Install, Shell, extra_kind, index_entry, installs, simple_commands, split_shell, steps
from cudafit.check.source import read_text
from cudafit.errors import InputError

# images that carry torch, torchvision and torchaudio already (PyTorch's and NVIDIA's)
_CARRIES_TORCH = re.compile(r"^(?:docker\.io/)?pytorch/pytorch:\d|^nvcr\.io/nvidia/pytorch:")


def read(path: Path) -> Document:
    from dockerfile_parse import DockerfileParser

    text = read_text(path)
    lines = text.splitlines()
    parser = DockerfileParser(fileobj=io.BytesIO(text.encode()), env_replace=True)  # never the path: it may write there
    parsed = parser.structure
    image_of = dict(zip((n for n, item in enumerate(parsed) if item["instruction"] == "FROM"), map(_from_hub, parser.parent_images), strict=False))
    # dockerfile-parse reads a heredoc's body lines as instructions of their own (a Python
    # body's `from x import y` as a FROM): they are the RUN's, and are read with it
    bodies = _heredocs(parsed, lines)
    inside = {line for runs in bodies.values() for _shell, first, last in runs for line in range(first, last + 1)}
    keep = [n for n, item in enumerate(parsed) if item["startline"] not in inside]
    structure = [parsed[n] for n in keep]
    every_context = parser.context_structure  # a property that parses the whole file again on each read: once
    contexts = [every_context[n] for n in keep]
    found: list[Pin] = []
    indexes: list[IndexRef] = []
    problems: list[Problem] = []
    running = _running_stages(structure)
    froms = [n for n, item in enumerate(structure) if item["instruction"] == "FROM"]
    spans = {
        n: (image_of[keep[n]], _span(str(path), lines, structure[n]["startline"], structure[n]["endline"], structure[n]["value"].split()[0]))
        for n in froms
        if keep[n] in image_of
    }
    # the running stage's chain starts FROM an image: that one is the image that runs, said last
    root = min(running) if froms else None
    images = tuple(spans[n] for n in froms if n != root and n in spans) + ((spans[root],) if root in spans else ())
    builds_here = False
    installed: set[tuple[str, str]] = set()  # (name, specifier) an earlier command installed
    installed_steps: list[set[tuple[str, str]]] = []  # each install command's pins, in order
    step: list[int] = []  # for each pin found, the install command it came from
    seen_env: set[tuple[str, str]] = set()
    config: dict[str, str] = {}
    # uv reads it, pip does not: only a Dockerfile that runs uv can be given an index this way
    uses_uv = any(item["instruction"] == "RUN" and _UV_RUN.search(item["value"]) for item in structure)
    context_config = _context_uv_config(path) if uses_uv else ""
    stage_of = _stages(structure)
    posix = _posix_runs(structure, stage_of, image_of, keep)
    for n, item in enumerate(structure):
        if stage_of[n] in running and (_sets_config(item) or (context_config and _copies_context(item))):
            # pip or uv reads an index from a file the Dockerfile brings in, which is not read here:
            # where the pins come from is unknown, so no index claim (as for an unknown index)
            where = _span(str(path), lines, item["startline"], item["endline"], item["value"].split()[0])
            given = "a pip or uv configuration file the image is given"
            if not _sets_config(item):
                given = f"the uv configuration the build context brings ({context_config})"
            indexes.append(IndexRef(f"{given} ({item['instruction']} line {item['startline'] + 1})", "index-url", where))
        if item["instruction"] != "RUN" or stage_of[n] not in running:
            continue  # another stage builds what the running one copies: its installs are not the image's environment
        if not posix[n] and _exec_form(item["value"]) is None:
            continue  # cmd or PowerShell text (`for %f in (*.whl) do pip install %f`): not a POSIX shell's words
        values = {**contexts[n].get_values(context_type="ARG"), **contexts[n].get_values(context_type="ENV")}
        # pip and uv read their indexes from the environment too, and ARG and ENV values are in it
        for name, (tool, kind) in INDEX_VARIABLES.items():
            for url in (index_entry(u) for u in (values.get(name) or "").split()):
                kind = extra_kind(tool, kind, values.get("UV_INDEX_STRATEGY", ""))
                if "$" not in url and (url, kind) not in seen_env:
                    seen_env.add((url, kind))
                    indexes.append(IndexRef(url, kind, _span(str(path), lines, item["startline"], item["endline"], name)))
        shell = Shell(values, config)
        scripts = [(_exec_form(item["value"]) or item["value"], item["startline"], item["endline"])]
        scripts += [(body, first, last) for body, first, last in bodies.get(keep[n], ()) if body is not None]
        for script, first, last in scripts:
            for install in installs(script, values, shell):
                for raw in install.computed:
                    where = _span(str(path), lines, first, last, raw.split("$(")[0].split("`")[0] or raw[:2])
                    said = f"{raw!r} is computed by the shell as the image is built: cudafit cannot read it, so what it installs was not checked"
                    problems.append(Problem("CF013", said, where))
                if any("$" in url for url in (install.index_url or "", *(u for u, _kind in install.extra))):
                    # an index the shell computes: where its requirements come from is not known here,
                    # but a word pip refuses (`mmcv==${MMCV}}`) is refused wherever it comes from
                    problems += [
                        said
                        for word, written in install.words
                        if "$" not in word and "`" not in word
                        for said in [pins.parse(word, _span(str(path), lines, first, last, written), index=install.index_url)]
                        if isinstance(said, Problem)
                    ]
                    continue
                builds_here = builds_here or install.build_here
                mine: set[tuple[str, str]] = set()
                for word, written in install.words:
                    if "$" in word or "`" in word:
                        continue  # a variable without a value here: unknown until the build
                    span = _span(str(path), lines, first, last, written)
                    pin = pins.parse(word, span, index=install.index_url)
                    if isinstance(pin, Pin):
                        if pin.specifier.startswith("==") and (pin.name, pin.specifier) in installed:
                            continue  # already in the image from an earlier command: pip and uv keep it, from wherever it came
                        mine.add((pin.name, pin.specifier))
                        # a requirement written with a variable is not rewritten by --fix (it would lose it)
                        found.append(pin._replace(hashed=pin.hashed or word != written))
                        step.append(len(installed_steps))
                    elif isinstance(pin, Problem):
                        problems.append(pin)
                installed |= mine
                installed_steps.append(mine)
                for url, kind in install.extra:
                    indexes.append(IndexRef(url, kind, _span(str(path), lines, first, last, url)))
    found = _what_stays(found, step)
    image = images[-1][0] if images else ""
    if _CARRIES_TORCH.match(image):
        # `pip install torch` over an image that has torch installs nothing: the image's build stays
        found = [p for p in found if not (p.name in ("torch", "torchvision", "torchaudio") and not p.specifier)]
    python = re.match(r"(?:docker\.io/)?(?:library/)?python:(\d+\.\d+)", image)
    apt = ("", ()) if python else _apt_python(image, "\n".join(item["value"] for n, item in enumerate(structure) if stage_of[n] in running))
    return Document(
        str(path),
        "dockerfile",
        pins=tuple(found),
        indexes=tuple(indexes),
        problems=tuple(problems),
        lines={str(path): tuple(lines)},
        requires_python=f"=={python[1]}.*" if python else "",
        platforms=_platforms(structure, running, root),
        images=images,
        builds_here=builds_here,
        source_builds=_source_builds(str(path), lines, structure, contexts, bodies, keep, spans, context_config),
        apt_python=apt[0],
        python_named=apt[1],
    )


# what says a compile is of CUDA code with torch's extension builder: the variables only that
# builder (and the projects that use it) read, or apex's flag for its CUDA kernels
_CUDA_BUILD_VARIABLES = ("TORCH_CUDA_ARCH_LIST", "FORCE_CUDA")


def _source_builds(
    path: str,
    lines: list[str],
    structure: list[dict],
    contexts: list,
    bodies: dict[int, list[tuple[Optional[str], int, int]]],
    keep: list[int],
    spans: dict[int, tuple[str, Span]],
    context_config: str,
) -> tuple[SourceBuild, ...]:
    """Each stage's compiles of a torch CUDA extension (a setup script's build, or a project's own
    folder or repository installed without build isolation), every stage's: a builder stage
    compiles what the running one copies. Each is told with the torch that the last install naming
    torch left in its stage's chain; one where the image was given a pip or uv configuration (an
    index cudafit cannot read) is left out, as is one before any torch install."""
    parents: dict[int, Optional[int]] = {}
    names: dict[str, int] = {}
    for n, item in enumerate(structure):
        if item["instruction"] == "FROM":
            words = [w for w in item["value"].split() if not w.startswith("--platform")]
            parents[n] = names.get(words[0].lower()) if words else None
            if len(words) >= 3 and words[1].lower() == "as":
                names[words[2].lower()] = n
    # per stage: the torch pin of the last install that named it, with that install's extra indexes;
    # None before any, or where a configuration file names an index that is not read here
    torch: dict[int, Optional[tuple[Pin, tuple[IndexRef, ...]]]] = {}
    configured: set[int] = set()  # stages whose later installs read an index from such a file
    pip_config: dict[int, dict[str, str]] = {}  # what `pip config set` wrote in each stage's chain
    said: dict[int, str] = {}  # what each stage's chain has run or worked in so far, for the projects it builds
    out: list[SourceBuild] = []
    stage_of = _stages(structure)
    for n, item in enumerate(structure):
        stage = stage_of[n]
        if item["instruction"] == "FROM":
            up = parents.get(n)
            torch[n] = torch.get(up) if up is not None else None
            said[n] = said.get(up, "") if up is not None else ""
            pip_config[n] = dict(pip_config.get(up, {})) if up is not None else {}
            if up in configured:
                configured.add(n)
            continue
        said[stage] = said.get(stage, "") + "\n" + item["value"]
        if _sets_config(item) or (context_config and _copies_context(item)):
            configured.add(stage)
        if item["instruction"] != "RUN":
            continue
        chain = _chain(parents, stage)
        root = chain[-1]
        if root not in spans:
            continue
        image, image_span = spans[root]
        values = {**contexts[n].get_values(context_type="ARG"), **contexts[n].get_values(context_type="ENV")}
        shell = Shell(values, pip_config.setdefault(stage, {}))
        # an index ARG or ENV names (PIP_INDEX_URL, UV_INDEX) is read beside or instead of a flag's: unknown here
        from_environment = any(values.get(name) for name in INDEX_VARIABLES)
        scripts = [(_exec_form(item["value"]) or item["value"], item["startline"], item["endline"])]
        scripts += [(body, first, last) for body, first, last in bodies.get(keep[n], ()) if body is not None]
        for script, first, last in scripts:
            for step in steps(script, values, shell):
                if isinstance(step, Install):
                    for word, written in step.words:
                        pin = None if "$" in word else pins.parse(word, image_span, index=step.index_url)
                        # an unpinned torch over an image's own leaves that one (pip keeps what satisfies)
                        if isinstance(pin, Pin) and pin.name == "torch" and not (_CARRIES_TORCH.match(image) and pin.version is None):
                            pin = pin._replace(span=_span(path, lines, first, last, written))
                            extra = tuple(IndexRef(url, kind, pin.span) for url, kind in step.extra)
                            computed = any("$" in url for url in (step.index_url or "", *(u for u, _k in step.extra)))
                            torch[stage] = None if computed or from_environment or stage in configured else (pin, extra)
                    sources = [w for w, _raw in step.words if looks_like_path(w) and not w.endswith(".whl")] + step.editable
                    if not (step.build_here and sources):
                        continue
                    command, written, env = f"pip install --no-build-isolation {sources[0]}", sources[0], step.env
                else:
                    command, written, env = " ".join(step.words), step.written, step.env
                env = {**values, **shell.exported, **env}
                # a wheel build of a project whose setup.py downloads its release's prebuilt wheel may compile nothing
                wheel = isinstance(step, Install) or "bdist_wheel" in step.words
                if wheel and _FETCHES_WHEEL.search(said[stage]) and not any(k.endswith("_FORCE_BUILD") and v.upper() == "TRUE" for k, v in env.items()):
                    continue
                evidence = _compiles_cuda(command, env)
                held = torch.get(stage)
                if evidence and held is not None:
                    out.append(
                        SourceBuild(
                            _span(path, lines, first, last, written),
                            command,
                            evidence,
                            image,
                            held[0],
                            held[1],
                            _platforms(structure, set(chain), root),
                            *_apt_python(image, said[stage]),
                        )
                    )
    return tuple(out)


# projects whose setup.py, building a wheel, first downloads the prebuilt one of its release made
# for the torch, CUDA and Python it finds (their *_FORCE_BUILD=TRUE compiles instead)
_FETCHES_WHEEL = re.compile(r"flash[-_]attn|flash[-_]attention|causal[-_]conv1d|mamba", re.IGNORECASE)


# an nvidia/cuda image's Ubuntu, from its tag (12.8.1-devel-ubuntu22.04)
_CUDA_UBUNTU = re.compile(r"^(?:docker\.io/|nvcr\.io/)?nvidia/cuda:\S+-(ubuntu\d{2}\.\d{2})$")
# an apt install and the words after it, to the end of its command
_APT_INSTALL = re.compile(r"\bapt(?:-get)?\s+(?:\S+\s+)*?install\b([^;&|\n]*)")
# the packages of the distribution's own python3
_DISTRO_PYTHON = frozenset(
    {"python3", "python3-pip", "python3-dev", "python3-venv", "python3-full", "python-is-python3", "python3-setuptools", "python3-wheel"}
)
# any other way to a Python (conda and its kin, pyenv, uv's Pythons, deadsnakes, a versioned
# interpreter or package, switched alternatives): the Python is then not the distribution's
_OTHER_PYTHON = re.compile(
    r"conda|mamba|pyenv|deadsnakes|\buv\s+(?:python|venv)|--python\b|pythonz|\basdf\b|\bmise\b|\bpixi\b|\brye\b"
    r"|python-build-standalone|update-alternatives|python2",
    re.IGNORECASE,
)
# a Python named by its version (a python3.11 package, /usr/lib/python3.10/ paths): it must be the distribution's
_VERSIONED_PYTHON = re.compile(r"python(3\.\d+)")


def _apt_python(image: str, said: str) -> tuple[str, tuple[str, ...]]:
    """The Ubuntu whose python3 the stage chain runs (`apt-get install python3-pip` on an
    nvidia/cuda image, and no other Python anywhere in the chain), with the versions of Python the
    chain names (its python3's only where it is that one); ("", ()) where not told."""
    ubuntu = _CUDA_UBUNTU.match(image)
    if ubuntu is None or _OTHER_PYTHON.search(said):
        return "", ()
    for match in _APT_INSTALL.finditer(said):
        if _DISTRO_PYTHON & {word.strip("'\"\\") for word in match[1].split()}:
            return ubuntu[1], tuple(sorted(set(_VERSIONED_PYTHON.findall(said))))
    return "", ()


def _chain(parents: dict[int, Optional[int]], stage: int) -> list[int]:
    """A stage and the stages it is built FROM by name, the one FROM an image last."""
    out = [stage]
    while (up := parents.get(out[-1])) is not None and up not in out:
        out.append(up)
    return out


def _compiles_cuda(command: str, env: dict[str, str]) -> str:
    """What says this build compiles CUDA code with torch's extension builder, in words; "" where nothing does."""
    if "--cuda_ext" in command.split():
        return "apex's --cuda_ext builds its CUDA kernels"
    named = [name for name in _CUDA_BUILD_VARIABLES if name in env and (name != "FORCE_CUDA" or env[name] == "1")]
    return f"{named[0]} is set for it, which only a CUDA extension build reads" if named else ""


_ARCHES = {"amd64": "linux-x86_64", "x86_64": "linux-x86_64", "arm64": "linux-aarch64", "aarch64": "linux-aarch64"}
# a wheel's platform tag names the one architecture pip installs it on
_CHOSEN_BY_ARCH = re.compile(r"uname\s+-[a-z]*m|\bTARGETARCH\b|\bTARGETPLATFORM\b|dpkg\s+--print-architecture|\barch\s*\)|\$\(arch\)|`arch`")
_WHEEL_ARCH = re.compile(r"[-_.](?:manylinux\w*?|musllinux\w*?|linux)_(x86_64|aarch64)\.whl\b")


def _platforms(structure: list[dict], running: set[int], root: Optional[int]) -> tuple[str, ...]:
    """The machines the image is built for: Linux on both architectures, unless the running chain
    starts `FROM --platform=linux/amd64`, or its RUN lines install wheels of one architecture only
    (a linux_x86_64 wheel's install fails elsewhere, so the image is not built elsewhere)."""
    if root is not None:
        flag = next((w for w in structure[root]["value"].split() if w.startswith("--platform=")), "")
        value = flag.partition("=")[2]  # linux/amd64, or the architecture alone (amd64): Docker takes linux
        arch = _ARCHES.get((value.split("/")[1] if "/" in value else value).lower())
        if arch is not None:
            return (arch,)
    stage_of = _stages(structure)
    runs = [item["value"] for n, item in enumerate(structure) if item["instruction"] == "RUN" and stage_of[n] in running]
    named = {_ARCHES[m] for value in runs for m in _WHEEL_ARCH.findall(value)}
    # an install chosen by the machine it runs on (`if [ "$(uname -m)" = x86_64 ]`) leaves the others built
    chosen = any(_CHOSEN_BY_ARCH.search(value) for value in runs)
    if len(named) == 1 and not chosen:
        return tuple(named)
    return ("linux-x86_64", "linux-aarch64")  # an image runs Linux


def _running_stages(structure: list[dict]) -> set[int]:
    """The stages (by the index of their FROM) whose installs the image that runs holds: the last
    stage and each earlier stage it is built FROM by name (`FROM vllm-base AS vllm-openai`)."""
    froms = [n for n, item in enumerate(structure) if item["instruction"] == "FROM"]
    if not froms:
        return {0}
    names: dict[str, int] = {}
    bases: dict[int, str] = {}
    for n in froms:
        words = structure[n]["value"].split()
        words = [w for w in words if not w.startswith("--platform")]
        bases[n] = words[0].lower() if words else ""
        if len(words) >= 3 and words[1].lower() == "as":
            names[words[2].lower()] = n
    out: set[int] = set()
    stage: Optional[int] = froms[-1]
    while stage is not None and stage not in out:
        out.add(stage)
        stage = names.get(bases[stage])
    return out


def _stages(structure: list[dict]) -> list[int]:
    """For each instruction, the index of the FROM that begins its stage (0 before any)."""
    out, stage = [], 0
    for n, item in enumerate(structure):
        if item["instruction"] == "FROM":
            stage = n
        out.append(stage)
    return out


# Docker Hub's images the rules read, as a mirror of the hub serves them too (docker.1ms.run/nvidia/cuda:...)
_HUB = re.compile(r"^(?:docker\.io/)?(?:library/)?(?:nvidia/cuda|pytorch/pytorch|python):")


def _from_hub(image: str) -> str:
    """A Docker Hub image pulled through a registry mirror, as the hub names it: the first part of a
    reference is a registry host where it has a dot or a port (Docker's own rule), and NVIDIA's
    registry (nvcr.io) is read as itself."""
    host, _, rest = image.partition("/")
    if rest and ("." in host or ":" in host or host == "localhost") and host not in ("nvcr.io", "docker.io") and _HUB.match(rest):
        return rest
    return image


def _heredocs(structure: list[dict], lines: list[str]) -> dict[int, list[tuple[Optional[str], int, int]]]:
    """Each RUN's heredoc bodies (BuildKit's `RUN <<EOT` ... `EOT`): (the body where the shell
    runs it, else None; its first and last line, the delimiter's included), by the RUN's index."""
    out: dict[int, list[tuple[Optional[str], int, int]]] = {}
    for n, item in enumerate(structure):
        if item["instruction"] != "RUN" or "<<" not in item["value"]:
            continue
        tokens = split_shell(item["value"])
        delimiters = [tokens[k + 1] for k, token in enumerate(tokens[:-1]) if token == "<<"]
        # the body is shell where it is the command itself (`RUN <<EOT`) or a shell reads it (`RUN <<EOT bash`)
        commands = [[w for w in words if not w.startswith("--")] for words in simple_commands(tokens, item["value"])]  # RUN's --mount=...
        shell = all(not words or SHELL.fullmatch(words[0]) for words in commands)
        line = item["endline"] + 1
        for delimiter in delimiters:
            word = delimiter[1:] if delimiter.startswith("-") else delimiter  # <<-EOT: its lines' leading tabs are dropped
            first = line
            while line < len(lines) and (lines[line].lstrip("\t") if delimiter != word else lines[line]) != word:
                line += 1
            if line >= len(lines):
                break  # no line ends it: no heredoc (a shift in $((1<<2)))
            body = "\n".join(lines[first:line])
            # a body run as a script may name another interpreter (#!/usr/bin/env python)
            interpreter = body.split("\n", 1)[0][2:].split() if body.startswith("#!") else []
            runs_shell = shell and (not interpreter or SHELL.fullmatch(interpreter[-1] if interpreter[0].endswith("/env") else interpreter[0]))
            # a backslash-newline joins two lines before the shell reads them (POSIX 2.2.1)
            out.setdefault(n, []).append((body.replace("\\\n", "") if runs_shell else None, first, line))
            line += 1
    return out


# Windows images run RUN lines with cmd unless a SHELL instruction says otherwise
_WINDOWS_IMAGE = re.compile(r"^mcr\.microsoft\.com/(?:windows|powershell)", re.IGNORECASE)


def _posix_runs(structure: list[dict], stage_of: list[int], image_of: dict[int, str], keep: list[int]) -> list[bool]:
    """For each instruction, whether its stage's shell is a POSIX one (sh, bash): a SHELL
    instruction of cmd or PowerShell, or a Windows base image, says it is not."""
    shell_of: dict[int, bool] = {}
    out = []
    for n, item in enumerate(structure):
        if item["instruction"] == "FROM":
            shell_of[n] = not _WINDOWS_IMAGE.match(image_of.get(keep[n], ""))
        elif item["instruction"] == "SHELL":
            words = _exec_form(item["value"]) or []
            shell_of[stage_of[n]] = bool(words) and SHELL.fullmatch(words[0].lower().removesuffix(".exe")) is not None
        out.append(shell_of.get(stage_of[n], True))
    return out


def _exec_form(value: str) -> Optional[list[str]]:
    """The words of an exec-form RUN (`RUN ["pip", "install", "x"]`): a JSON array, run without a shell."""
    if not value.lstrip().startswith("["):
        return None
    try:
        words = json.loads(value)
    except ValueError:
        return None  # not JSON: Docker runs it in the shell form
    return words if isinstance(words, list) and words and all(isinstance(w, str) for w in words) else None


def _span(path: str, lines: list[str], start: int, end: int, word: str) -> Span:
    """Where a word of an instruction is written: its line among the instruction's, its column."""
    for number in range(start, min(end, len(lines) - 1) + 1):
        col = lines[number].find(word)
        if col >= 0:
            return Span(path, number + 1, col + 1, word)
    return Span(path, start + 1, 1, word)


def _what_stays(found: list[Pin], step: list[int]) -> list[Pin]:
    """Installs run one after another: a later install of a name replaces the version an earlier
    one left where its requirement does not admit it, and keeps it where it does (pip and uv keep
    what satisfies). So two commands' pins of one name are not one set that must agree (CF017);
    within one command they are."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    by_name: dict[str, list[tuple[int, Pin]]] = {}
    for n, pin in zip(step, found, strict=True):
        by_name.setdefault(pin.name, []).append((n, pin))
    dropped: set[int] = set()
    for items in by_name.values():
        steps = sorted({n for n, _pin in items})
        if len(steps) < 2:
            continue
        current = [p for n, p in items if n == steps[0]]
        for later in steps[1:]:
            mine = [p for n, p in items if n == later]
            versions = [p.version for p in current if p.version is not None and p.specifier.startswith("==")]
            try:
                kept = bool(versions) and all(SpecifierSet(p.specifier).contains(Version(v), prereleases=True) for p in mine for v in versions)
            except (InvalidSpecifier, InvalidVersion):
                continue  # cannot tell: both stay, as before
            drop, current = (mine, current) if kept else (current, mine)
            dropped |= {id(p) for p in drop}
    return [p for p in found if id(p) not in dropped]


# where pip and uv read their configuration: pip.conf (global, user, site), uv.toml
_CONFIG_PATH = re.compile(r"(?:^|/)(?:pip\.conf|pip\.ini|uv\.toml)$")
_CONFIG_VARIABLES = ("PIP_CONFIG_FILE", "UV_CONFIG_FILE")


def _sets_config(item: dict) -> bool:
    """A COPY or ADD of a pip/uv configuration file, a RUN that mounts one (a build secret), or an
    ENV that points pip or uv at one."""
    value = item["value"]
    if item["instruction"] in ("COPY", "ADD"):
        words = [w for w in value.split() if not w.startswith("--")]
        return bool(words) and (bool(_CONFIG_PATH.search(words[-1].rstrip("/"))) or any(_CONFIG_PATH.search(w) for w in words[:-1]))
    if item["instruction"] == "RUN":
        return any(
            _CONFIG_PATH.search(part.split("=", 1)[1])
            for flag in value.split()
            if flag.startswith("--mount=")
            for part in flag[8:].split(",")
            if part.startswith(("target=", "dst=", "destination="))
        )
    if item["instruction"] == "ENV":
        return any(name in value for name in _CONFIG_VARIABLES)
    return False


_UV_RUN = re.compile(r"(?:^|[\s;&|(/])uv\s+(?:pip|sync|add|run|tool)\b")


def _copies_context(item: dict) -> bool:
    """`COPY . .`, `ADD ./ /app`, `COPY [".", "/app"]`: the whole build context, not from another stage."""
    if item["instruction"] not in ("COPY", "ADD"):
        return False
    words = item["value"].split()
    if any(w.startswith("--from") for w in words):
        return False
    words = [w for w in words if not w.startswith("--")]
    listed = _exec_form(" ".join(words))  # the JSON form
    sources = (listed or words)[:-1]
    return any(w in (".", "./") for w in sources)


# uv's settings that name where packages come from, at the top of uv.toml / [tool.uv] or under `pip`
_UV_INDEX_KEYS = ("index", "index-url", "extra-index-url", "find-links")


def _context_uv_config(path: Path) -> str:
    """The uv configuration a build context copied whole would bring, where one names an index:
    uv reads uv.toml, or pyproject.toml's [tool.uv], from the directory it runs in (pip reads no
    configuration from there). The context is the Dockerfile's folder or, as `docker build -f
    docker/Dockerfile .` has it, a folder above it up to the repository's root: each is looked at."""
    from cudafit.check.pyproject import load_toml

    folder = path.resolve().parent
    for _ in range(4):  # the Dockerfile's folder and three above it at most
        for name, table in (("uv.toml", ()), ("pyproject.toml", ("tool", "uv"))):
            candidate = folder / name
            if not candidate.is_file():
                continue
            try:
                settings: object = load_toml(candidate, candidate.read_text(encoding="utf-8", errors="replace"))
            except (OSError, InputError):
                continue  # uv refuses it as well: it names nothing
            for key in table:
                settings = settings.get(key, {}) if isinstance(settings, dict) else {}
            if isinstance(settings, dict) and any(k in part for part in (settings, settings.get("pip", {})) if isinstance(part, dict) for k in _UV_INDEX_KEYS):
                return str(candidate)
        if (folder / ".git").exists() or folder.parent == folder:
            break
        folder = folder.parent
    return ""
