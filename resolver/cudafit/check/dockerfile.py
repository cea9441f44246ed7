"""Dockerfiles (and Containerfiles), as Docker reads them: dockerfile-parse splits the
instructions (continuations, comments) and the shell words of a RUN line with its ARG and ENV
values put in; this module finds the pip and uv installs among them. The image's last stage is
the environment that runs (an earlier stage is a build step, read for what it builds in); each
install command's `--index-url` is where its own requirements come from, and `-r`/`-c` files are
checked as files of their own. A word that names a variable without a value is passed over."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import NamedTuple, Optional

from cudafit.check import pins
from cudafit.check.model import Document, IndexRef, Pin, Problem, Span
from cudafit.check.source import read_text

# the options of `pip install` / `uv pip install` that take a value, and those that say where from
_VALUED = {
    *("-i", "--index-url", "--extra-index-url", "-f", "--find-links", "-r", "--requirement", "-c", "--constraint"),
    *("-e", "--editable", "-t", "--target", "--prefix", "--root", "--python", "-p", "--timeout", "--retries", "--cache-dir", "--src", "--progress-bar"),
    *("--trusted-host", "--platform", "--python-version", "--implementation", "--abi", "--only-binary", "--no-binary", "--index-strategy"),
    *("--config-settings", "-C", "--report", "--upgrade-package", "-P", "--extra", "--group", "--exclude-newer", "--keyring-provider"),
}
_SEPARATORS = {"&&", "||", ";", "|", "&"}
# the environment variables pip and uv take indexes from
_INDEX_VARIABLES = {
    "PIP_INDEX_URL": "index-url",
    "UV_INDEX_URL": "index-url",
    "UV_DEFAULT_INDEX": "index-url",
    "PIP_EXTRA_INDEX_URL": "extra-index-url",
    "UV_EXTRA_INDEX_URL": "extra-index-url",
    "UV_INDEX": "extra-index-url",
    "PIP_FIND_LINKS": "find-links",
    "UV_FIND_LINKS": "find-links",
}
# images that carry torch, torchvision and torchaudio already (PyTorch's and NVIDIA's)
_CARRIES_TORCH = re.compile(r"^(?:docker\.io/)?pytorch/pytorch:\d|^nvcr\.io/nvidia/pytorch:")


class Install(NamedTuple):
    """One pip/uv install command of a RUN line."""

    words: list[tuple[str, str]]  # (the requirement with ARG/ENV values put in, as written)
    index_url: Optional[str]  # its --index-url
    extra: list[tuple[str, str]]  # its --extra-index-url and --find-links pages: (url, kind)
    build_here: bool  # --no-build-isolation: it compiles against what is installed


def read(path: Path) -> Document:
    from dockerfile_parse import DockerfileParser

    text = read_text(path)
    lines = text.splitlines()
    parser = DockerfileParser(fileobj=io.BytesIO(text.encode()), env_replace=True)  # never the path: it may write there
    structure = parser.structure
    contexts = parser.context_structure
    found: list[Pin] = []
    indexes: list[IndexRef] = []
    problems: list[Problem] = []
    running = _running_stages(structure)
    froms = [n for n, item in enumerate(structure) if item["instruction"] == "FROM"]
    spans = {
        n: (image, _span(str(path), lines, structure[n]["startline"], structure[n]["endline"], structure[n]["value"].split()[0]))
        for image, n in zip(parser.parent_images, froms, strict=False)
    }
    # the running stage's chain starts FROM an image: that one is the image that runs, said last
    root = min(running) if froms else None
    images = tuple(spans[n] for n in froms if n != root and n in spans) + ((spans[root],) if root in spans else ())
    builds_here = False
    installed: set[tuple[str, str]] = set()  # (name, specifier) an earlier command installed
    seen_env: set[tuple[str, str]] = set()
    for n, item in enumerate(structure):
        if item["instruction"] != "RUN" or _stage_of(structure, n) not in running:
            continue  # another stage builds what the running one copies: its installs are not the image's environment
        values = {**contexts[n].get_values(context_type="ARG"), **contexts[n].get_values(context_type="ENV")}
        # pip and uv read their indexes from the environment too, and ARG and ENV values are in it
        for name, kind in _INDEX_VARIABLES.items():
            for url in (values.get(name) or "").split():
                if "$" not in url and (url, kind) not in seen_env:
                    seen_env.add((url, kind))
                    indexes.append(IndexRef(url, kind, _span(str(path), lines, item["startline"], item["endline"], name)))
        for install in installs(item["value"], values):
            if any("$" in url for url in (install.index_url or "", *(u for u, _kind in install.extra))):
                continue  # an index the shell computes ($(...)): where its requirements come from is not known here
            builds_here = builds_here or install.build_here
            mine: set[tuple[str, str]] = set()
            for word, written in install.words:
                if "$" in word:
                    continue  # a variable without a value here: unknown until the build
                span = _span(str(path), lines, item["startline"], item["endline"], written)
                pin = pins.parse(word, span, index=install.index_url)
                if isinstance(pin, Pin):
                    if pin.specifier.startswith("==") and (pin.name, pin.specifier) in installed:
                        continue  # already in the image from an earlier command: pip and uv keep it, from wherever it came
                    mine.add((pin.name, pin.specifier))
                    # a requirement written with a variable is not rewritten by --fix (it would lose it)
                    found.append(pin._replace(hashed=pin.hashed or word != written))
                elif isinstance(pin, Problem):
                    problems.append(pin)
            installed |= mine
            for url, kind in install.extra:
                indexes.append(IndexRef(url, kind, _span(str(path), lines, item["startline"], item["endline"], url)))
    image = images[-1][0] if images else ""
    if _CARRIES_TORCH.match(image):
        # `pip install torch` over an image that has torch installs nothing: the image's build stays
        found = [p for p in found if not (p.name in ("torch", "torchvision", "torchaudio") and not p.specifier)]
    python = re.match(r"(?:docker\.io/)?(?:library/)?python:(\d+\.\d+)", image)
    return Document(
        str(path),
        "dockerfile",
        pins=tuple(found),
        indexes=tuple(indexes),
        problems=tuple(problems),
        lines={str(path): tuple(lines)},
        requires_python=f"=={python[1]}.*" if python else "",
        platforms=("linux-x86_64", "linux-aarch64"),  # an image runs Linux
        images=images,
        builds_here=builds_here,
    )


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


def _stage_of(structure: list[dict], n: int) -> int:
    """The index of the FROM that begins the stage instruction `n` is in (0 before any)."""
    return max((m for m in range(n + 1) if structure[m]["instruction"] == "FROM"), default=0)


def installs(command: str, values: dict[str, str]) -> list[Install]:
    """The pip/uv install commands of one RUN line's shell text."""
    from dockerfile_parse.util import WordSplitter

    # an ARG without a value stays a variable (passed over), not an empty word
    known = {k: v for k, v in values.items() if v}
    written = list(WordSplitter(command).split())
    put_in = list(WordSplitter(command, args=known, envs=known).split())
    if len(put_in) != len(written):
        put_in = written
    words: list[tuple[str, str]] = []
    for word, raw in zip(put_in, written, strict=True):
        if "$" in raw and any(name not in known for name in re.findall(r"\$\{?(\w+)", raw)):
            word = raw  # a variable with no value here stays written, and is passed over
        if word.endswith(";") and len(word) > 1:
            words += [(word[:-1], raw.rstrip(";")), (";", ";")]
        else:
            words.append((word, raw))
    out = []
    current: list[tuple[str, str]] = []
    for pair in [*words, (";", ";")]:
        word = pair[0]
        if word in _SEPARATORS:
            found = _install(current)
            if found is not None:
                out.append(found)
            current = []
        else:
            current.append(pair)
    return out


def _install(pairs: list[tuple[str, str]]) -> Optional[Install]:
    words = [w for w, _raw in pairs]
    for n, word in enumerate(words):
        head = words[n : n + 4]
        if re.fullmatch(r"(.*/)?pip3?(\.\d+)?", word) and head[1:2] == ["install"]:
            return _parse(pairs[n + 2 :])
        if re.fullmatch(r"(.*/)?python3?(\.\d+)?", word) and head[1:4] == ["-m", "pip", "install"]:
            return _parse(pairs[n + 4 :])
        if re.fullmatch(r"(.*/)?uv", word) and head[1:3] == ["pip", "install"]:
            return _parse(pairs[n + 3 :])
    return None


def _parse(args: list[tuple[str, str]]) -> Install:
    reqs: list[tuple[str, str]] = []
    index: Optional[str] = None
    extra: list[tuple[str, str]] = []
    build_here = False
    it = iter(args)
    for arg, raw in it:
        name, _, inline = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if name in _VALUED:
            pair = (inline, raw) if inline else next(it, ("", ""))
            # a value the shell computes ($(...)) stays as written, and so is passed over
            value = pair[1] if "$(" in pair[1] or "`" in pair[1] else pair[0]
            if name in ("-i", "--index-url"):
                index = value
            elif name == "--extra-index-url":
                extra.append((value, "extra-index-url"))
            elif name in ("-f", "--find-links"):
                extra.append((value, "find-links"))
            continue
        if arg.startswith("-"):
            build_here = build_here or arg == "--no-build-isolation"
            continue
        reqs.append((arg, raw))
    return Install(reqs, index, extra, build_here)


def _span(path: str, lines: list[str], start: int, end: int, word: str) -> Span:
    """Where a word of an instruction is written: its line among the instruction's, its column."""
    for number in range(start, min(end, len(lines) - 1) + 1):
        col = lines[number].find(word)
        if col >= 0:
            return Span(path, number + 1, col + 1, word)
    return Span(path, start + 1, 1, word)
