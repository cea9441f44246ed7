"""The README's `cudafit resolve` and `cudafit matrix` examples print what the README shows: each line shown is a line
cudafit prints; a line with " ... " shows parts of one printed line, in order. A command written
with "..." repeats the previous command's machine (the README's shorthand)."""

from __future__ import annotations

import difflib
import os
import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudafit.cli import main

README = Path(__file__).parent.parent / "README.md"


def _runs() -> list[tuple[list[str], list[str], tuple[int, int]]]:
    """(arguments, the lines shown after the command, where those lines are in the README)."""
    runs = []
    previous: list[str] = []
    text = README.read_text()
    for block in re.finditer(r"```console\n(.*?)```", text, re.S):
        offset = block.start(1)
        for run in re.finditer(r"^\$ (.*)\n((?:(?!\$ ).*\n)*)", block.group(1), re.M):
            command, shown = run.group(1), run.group(2)
            expected = shown.splitlines()
            args = shlex.split(command, comments=True)
            if args[:2] != ["cudafit", "resolve"] and not (args[:2] == ["cudafit", "matrix"] and "--os" in args):
                continue  # doctor, fleet and data examples read this machine, files or the network
            if "..." in args:
                at = args.index("...")
                machine = previous[previous.index("--os") :]
                if "--format" in machine:
                    machine = machine[: machine.index("--format")]
                args = args[:at] + machine + args[at + 1 :]
            previous = args
            runs.append((args[1:], expected, (offset + run.start(2), offset + run.end(2))))
    return runs


def _shows(line: str, printed: list[str]) -> bool:
    """`line` is a printed line; with " ... ", one that starts and ends as it does, with its
    middle parts in order between."""
    if " ... " not in line:
        return line in printed
    first, *middle, last = line.split(" ... ")
    for candidate in printed:
        if not (candidate.startswith(first) and candidate.endswith(last)):
            continue
        at = len(first)
        for part in middle:
            at = candidate.find(part, at)
            if at < 0:
                break
            at += len(part)
        else:
            if at <= len(candidate) - len(last):
                return True
    return False


def _regenerated(expected: list[str], printed: list[str]) -> list[str]:
    """The lines a README example shows, as cudafit prints them now: a line that still shows stays
    (its " ... " too); a stale one becomes the most alike printed line not yet shown, in order; a
    stale one with no printed line left is dropped (the output got shorter)."""
    out: list[str] = []
    used = -1
    for line in expected:
        if _shows(line, printed):
            out.append(line)
            used = max([used] + [i for i, p in enumerate(printed) if p == line])
            continue
        rest = printed[used + 1 :]
        like = difflib.get_close_matches(line, rest, n=1, cutoff=0)
        if like:
            used += 1 + rest.index(like[0])
            out.append(like[0])
    return out


def test_readme_resolve_examples_are_what_cudafit_prints():
    """With CUDAFIT_REGEN=1 an example the data has moved is rewritten from what cudafit prints now
    (_regenerated); review the README's diff like any change."""
    runs = _runs()
    assert len(runs) >= 12
    text = README.read_text()
    rewritten = text
    for args, expected, (start, end) in reversed(runs):  # from the end: earlier spans keep their place
        result = CliRunner().invoke(main, args)
        printed = (result.stdout + result.stderr).splitlines()
        if all(_shows(line, printed) for line in expected):
            continue
        stale = next(line for line in expected if not _shows(line, printed))
        assert os.environ.get("CUDAFIT_REGEN"), f"README: `cudafit {shlex.join(args)}` no longer prints {stale!r}"
        rewritten = rewritten[:start] + "".join(f"{line}\n" for line in _regenerated(expected, printed)) + rewritten[end:]
    if rewritten != text:
        README.write_text(rewritten)
        pytest.skip("rewrote README.md's examples from what cudafit prints now: review the diff, then run again without CUDAFIT_REGEN")
