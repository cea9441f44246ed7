"""pip requirements files, as pip reads them: comments, `\\` continuations, `-r`/`-c` includes
(relative to the including file, each read once, so a cycle ends), global options (`--index-url`,
`--extra-index-url`, `-f`, `--no-index`) and per-requirement options (`--hash`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, NamedTuple, Optional, Union

from cudafit.check import pins
from cudafit.check.model import Document, IndexRef, Pin, Problem, Span
from cudafit.check.source import read_text
from cudafit.errors import InputError

MISSING_INCLUDE = "CF011"
INCLUDE_CYCLE = "CF012"

# pip's own rule: a comment starts at a `#` at the start of a line or after whitespace.
_COMMENT = re.compile(r"(^|\s+)#.*$")
_INDEX_OPTIONS = {
    "-i": "index-url",
    "--index-url": "index-url",
    "--extra-index-url": "extra-index-url",
    "-f": "find-links",
    "--find-links": "find-links",
}
_INCLUDE_OPTIONS = {"-r": False, "--requirement": False, "-c": True, "--constraint": True}
# The options of a requirements file that take a value (pip's own list, less the includes above)
_NEEDS_VALUE = {*_INDEX_OPTIONS, "-e", "--editable", "--trusted-host", "--only-binary", "--no-binary", "--use-feature", "--config-settings"}


class LogicalLine(NamedTuple):
    text: str  # continuations joined, comment removed
    line: int  # 1-based physical line it starts on
    col: int  # 1-based column of its first character


def logical_lines(text: str) -> list[LogicalLine]:
    out: list[LogicalLine] = []
    parts: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        if not parts:
            start = number
        if raw.endswith("\\") and not _COMMENT.search(raw):
            parts.append(raw[:-1])
            continue
        parts.append(raw)
        joined = _COMMENT.sub("", "".join(parts))
        parts = []
        stripped = joined.strip()
        if stripped:
            out.append(LogicalLine(stripped, start, len(joined) - len(joined.lstrip()) + 1))
    if parts:
        joined = _COMMENT.sub("", "".join(parts)).strip()
        if joined:
            out.append(LogicalLine(joined, start, 1))
    return out


def _option(text: str) -> tuple[str, Optional[str]]:
    """(`--name`, value) of an option line: `-i URL`, `-iURL`, `--index-url=URL`, `--no-index`."""
    if text.startswith("--"):
        name, sep, value = text.partition("=")
        if not sep:
            name, _, value = text.partition(" ")
        return name.strip(), value.strip() or None
    name, value = text[:2], text[2:].lstrip("= ").strip()
    return name, value or None


def read(path: Path, *, group: str = "", lines: Optional[dict[str, tuple[str, ...]]] = None) -> Document:
    """The document of one requirements file, with everything its includes bring."""
    # A cycle is a file included again inside its own include chain; a file two others include (a
    # diamond: lint.txt includes requirements.txt and test.txt, which includes requirements.txt
    # too) is read once, as pip reads it again for the same pins.
    reading: list[Path] = []
    read_as: set[tuple[Path, bool]] = set()
    all_lines: dict[str, tuple[str, ...]] = {} if lines is None else lines
    found_pins: list[Pin] = []
    indexes: list[IndexRef] = []
    problems: list[Problem] = []
    no_index = False

    def visit(file: Path, chain: str, constraint: bool, text: str) -> None:
        nonlocal no_index
        reading.append(file.resolve())
        read_as.add((file.resolve(), constraint))
        all_lines[str(file)] = tuple(text.splitlines())
        for logical in logical_lines(text):
            span = Span(str(file), logical.line, logical.col, logical.text)
            name, value = _option(logical.text) if logical.text.startswith("-") else ("", None)
            if name in _INCLUDE_OPTIONS:
                include(file, value, span, chain, constraint or _INCLUDE_OPTIONS[name])
                continue
            no_index = no_index or name == "--no-index"
            found = parse_line(logical.text, span, chain, constraint)
            if isinstance(found, Pin):
                found_pins.append(found)
            elif isinstance(found, IndexRef):
                indexes.append(found)
            elif isinstance(found, Problem):
                problems.append(found)
        reading.pop()

    def include(parent: Path, value: Optional[str], span: Span, chain: str, constraint: bool) -> None:
        if not value:
            problems.append(Problem(MISSING_INCLUDE, "an include option without a file name", span))
            return
        target = (parent.parent / value) if not Path(value).is_absolute() else Path(value)
        if target.resolve() in reading:
            # pip 26.3 stops ("recursively references itself"), pip before 24.3 recursed until it
            # crashed; uv reads each file once and installs, so this is pip's error, said as such
            said = f"includes {value}, a file this chain of includes is already reading: pip refuses the loop (older pips crash; uv reads each file once)"
            problems.append(Problem(INCLUDE_CYCLE, said, span))
            return
        if (target.resolve(), constraint) in read_as:
            return
        try:
            text = read_text(target)
        except InputError as exc:
            problems.append(Problem(MISSING_INCLUDE, f"cannot include {value}: {exc.reason}", span))
            return
        visit(target, chain or value, constraint, text)

    # A constraints file (constraints*.txt, as files.py finds it, or one cudafit wrote under any
    # name) limits versions and installs nothing, read through -c or handed over on its own.
    text = read_text(path)
    visit(path, group, path.name.startswith("constraints") or _written_as_constraints(text), text)
    return Document(
        str(path),
        "requirements",
        pins=tuple(found_pins),
        indexes=tuple(indexes),
        problems=tuple(problems),
        lines=all_lines,
        no_index=no_index,
        compiled_here=_compiled_for_one_platform(text),
    )._replace(**_written_for(text))


# the header uv and pip-tools write above what they resolved
_COMPILED = re.compile(r"^#\s*This file (?:was|is) autogenerated by (?:uv|pip-compile)\b", re.IGNORECASE)


def _compiled_for_one_platform(text: str) -> bool:
    """A requirements file uv pip compile or pip-compile wrote for the platform it ran on: every pin
    is what that platform resolved (a `--universal` output carries markers for the others)."""
    head = text[:2048].splitlines()[:8]
    return any(_COMPILED.match(line) for line in head) and not any("--universal" in line for line in head)


def _written_for(text: str) -> dict[str, Any]:
    """What a requirements file cudafit wrote says it is for, in its first line ('... for
    linux-x86_64, Python 3.12; generated by cudafit'): the set was resolved for that machine, so
    it is judged there alone, as a resolver's output for its own platform is."""
    from cudafit.check.environments import PLATFORMS
    from cudafit.emit import GENERATED

    first = text.partition("\n")[0].rstrip()
    match = re.search(r" for ([a-z]+-[a-z0-9_]+)(?:, Python (\d+\.\d+|any))?" + re.escape(GENERATED) + "$", first)
    if not first.startswith("#") or match is None or match.group(1) not in PLATFORMS:
        return {}
    python = match.group(2)
    return {"platforms": (match.group(1),)} | ({"requires_python": f"=={python}.*"} if python and python != "any" else {})


def _written_as_constraints(text: str) -> bool:
    """cudafit's own constraints file (resolve --format constraints), whatever its name."""
    from cudafit.emit import GENERATED
    from cudafit.held import INSTALL_LEAD

    first, _, rest = text.partition("\n")
    return first.startswith("#") and first.endswith(GENERATED) and INSTALL_LEAD in rest[:1000]


def _requirement_part(line: str) -> str:
    """The requirement without its per-requirement options (` --hash=...`, ` --config-settings ...`)."""
    match = re.search(r"\s-{1,2}[A-Za-z]", line)
    return line[: match.start()].strip() if match else line


def parse_line(text: str, span: Span, group: str, constraint: bool = False) -> Union[Pin, IndexRef, Problem, None]:
    """One line that is not an include (of a requirements file, or of environment.yml's `pip:`
    section): an index option, a requirement, a problem, or None (-e, --pre, --trusted-host, ...)."""
    if text.startswith("-"):
        name, value = _option(text)
        if name in _INDEX_OPTIONS and value:
            return IndexRef(value, _INDEX_OPTIONS[name], span._replace(text=value, col=span.col + text.index(value)))
        if name in _NEEDS_VALUE and not value:
            return Problem(pins.NOT_A_REQUIREMENT, f"{name} without its value: pip refuses the line ({name} option requires 1 argument)", span)
        return None
    requirement = _requirement_part(text)
    found = pins.parse(requirement, span._replace(text=requirement), group=group, constraint=constraint)
    if isinstance(found, Pin) and re.search(r"(?:^|\s)--hash[=\s]", text[len(requirement) :]):
        found = found._replace(hashed=True)
    return found
