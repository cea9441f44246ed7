"""The README's `cudafit resolve` examples print what the README shows: each line shown is a line
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


def _runs() -> list[tuple[list[str], list[str]]]:
    runs = []
    previous: list[str] = []
    for block in re.findall(r"```console\n(.*?)```", README.read_text(), re.S):
        for run in re.split(r"^\$ ", block, flags=re.M)[1:]:
            command, *expected = run.splitlines()
            args = shlex.split(command, comments=True)
            if args[:2] != ["cudafit", "resolve"]:
                continue  # doctor, fleet and data examples read this machine, files or the network
            if "..." in args:
                at = args.index("...")
                machine = previous[previous.index("--os") :]
                if "--format" in machine:
                    machine = machine[: machine.index("--format")]
                args = args[:at] + machine + args[at + 1 :]
            previous = args
            runs.append((args[1:], expected))
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


def _closest(line: str, printed: list[str]) -> str:
    """The printed line a stale README line stands for: the most alike."""
    return difflib.get_close_matches(line, printed, n=1, cutoff=0)[0]


def test_readme_resolve_examples_are_what_cudafit_prints():
    """With CUDAFIT_REGEN=1 a line the data has moved is rewritten as cudafit prints it now (lines
    that still show keep their " ... "); review the README's diff like any change."""
    runs = _runs()
    assert len(runs) >= 12
    text = README.read_text()
    rewritten = text
    for args, expected in runs:
        result = CliRunner().invoke(main, args)
        printed = (result.stdout + result.stderr).splitlines()
        for line in expected:
            if _shows(line, printed):
                continue
            assert os.environ.get("CUDAFIT_REGEN"), f"README: `cudafit {shlex.join(args)}` no longer prints {line!r}"
            rewritten = rewritten.replace(f"\n{line}\n", f"\n{_closest(line, printed)}\n", 1)
    if rewritten != text:
        README.write_text(rewritten)
        pytest.skip("rewrote README.md's examples from what cudafit prints now: review the diff, then run again without CUDAFIT_REGEN")
