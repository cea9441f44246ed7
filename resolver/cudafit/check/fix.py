"""Applying the unambiguous fixes: each edit replaces the exact text a finding points at, so the
rest of the file (comments, layout, line endings) stays as it was. A file is written atomically,
and only where every edit still finds its text in place."""

from __future__ import annotations

import difflib
from pathlib import Path

from cudafit.check.model import Finding


def edited(path: str, findings: list[Finding]) -> tuple[str, str, list[Finding]]:
    """(old text, new text, findings fixed) for one file."""
    with open(path, encoding="utf-8", newline="") as fh:  # keep CRLF line endings as they are
        old = fh.read()
    lines = old.splitlines(keepends=True)
    fixed = []
    # From the end, so an edit never moves the position of one still to apply.
    for found in sorted((f for f in findings if f.edit is not None), key=lambda f: (f.edit[0].line, f.edit[0].col), reverse=True):  # type: ignore[index]
        span, new = found.edit  # type: ignore[misc]
        if not 0 < span.line <= len(lines) or not span.text:
            continue
        line = lines[span.line - 1]
        start = span.col - 1 + (span.line == 1 and line.startswith("\ufeff"))  # the readers drop a BOM
        if line[start : start + len(span.text)] != span.text:
            continue
        lines[span.line - 1] = line[:start] + new + line[start + len(span.text) :]
        fixed.append(found)
    return old, "".join(lines), fixed


def diff(path: str, old: str, new: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{path}", f"b/{path}"))


def apply(findings: tuple[Finding, ...], *, write: bool) -> tuple[list[Finding], str, list[str]]:
    """(the findings fixed, the unified diff of all edits, the files that could not be written);
    files are rewritten when `write`, each on its own: one that cannot be written stops no other."""
    from cudafit.errors import InputError
    from cudafit.fileio import write_atomic

    by_path: dict[str, list[Finding]] = {}
    for found in findings:
        if found.edit is not None:
            by_path.setdefault(found.edit[0].path, []).append(found)
    fixed: list[Finding] = []
    diffs = []
    errors = []
    for path, group in sorted(by_path.items()):
        old, new, done = edited(path, group)
        if new == old:
            continue
        if write:
            try:
                write_atomic(Path(path), new)
            except InputError as exc:
                errors.append(str(exc))
                continue
        diffs.append(diff(path, old, new))
        fixed += done
    return fixed, "".join(diffs), errors
