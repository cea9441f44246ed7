"""The three forms of `cudafit check`'s report (the CLI contract): text lines with a summary, a
JSON list, and GitHub workflow annotations."""

from __future__ import annotations

import json

from cudafit.check.model import SEVERITIES, Finding

FORMATS = ("text", "json", "github")


def text(findings: tuple[Finding, ...], files: int, show_fixes: bool = True, unreadable: int = 0) -> str:
    lines = [f"{f.path}:{f.line}:{f.col}: {f.code} {f.message}" + (f" (fix: {f.fix})" if show_fixes and f.fix else "") for f in findings]
    errors = sum(f.severity == "error" for f in findings)
    notes = sum(f.severity == "note" for f in findings)
    warnings = len(findings) - errors - notes
    if findings:
        # Findings that share one edit (two pins against one index URL) are one fix, as --fix makes it.
        fixable = len({(f.edit[0], f.edit[1]) for f in findings if f.edit is not None})
        summary = f"Found {_count(errors, 'error')} and {_count(warnings, 'warning')} in {_count(files, 'file')} checked."
        if notes:
            summary = summary[:-1] + f", and {_count(notes, 'note')} on what cudafit cannot check."
        if fixable:
            summary += f" {fixable} fixable with --fix."
    elif unreadable:
        summary = f"No findings in {_count(files, 'file')} checked; {unreadable} could not be read."
    else:
        summary = f"All checks passed ({_count(files, 'file')})."
    return "\n".join([*lines, summary]) + "\n"


def as_json(findings: tuple[Finding, ...]) -> str:
    rows = [
        {
            "path": f.path,
            "line": f.line,
            "col": f.col,
            "code": f.code,
            "message": f.message,
            "severity": f.severity,
            "fix": f.fix or None,
            "fixable": f.edit is not None,
            "environments": f.where or None,
        }
        for f in findings
    ]
    return json.dumps(rows, indent=2) + "\n"


def github(findings: tuple[Finding, ...]) -> str:
    """`::error file=...,line=...,col=...,title=CODE::message`, escaped as the runner expects."""
    out = []
    for f in findings:
        level = {"error": "error", "warning": "warning"}.get(f.severity, "notice")
        message = f.message + (f" (fix: {f.fix})" if f.fix else "")
        out.append(f"::{level} file={_prop(f.path)},line={f.line},col={f.col},title={_prop(f.code)}::{_data(message)}")
    return "".join(line + "\n" for line in out)


def fails(findings: tuple[Finding, ...], fail_on: str = "warning") -> bool:
    """Whether the findings fail the run: those of `fail_on` or more severe do (by default errors
    and warnings; a note, cudafit cannot check something, only when asked: --strict)."""
    worst = SEVERITIES.index(fail_on)
    return any(SEVERITIES.index(f.severity) <= worst for f in findings)


def _data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(value: str) -> str:
    return _data(value).replace(":", "%3A").replace(",", "%2C")


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"
