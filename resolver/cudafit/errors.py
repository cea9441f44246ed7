"""The two kinds of failure a user can cause; anything else is a bug and keeps its traceback."""

from __future__ import annotations

import re
from typing import Callable, Optional


class CudafitError(Exception):
    """A problem with the user's input or environment: printed as one line, exit code 2."""

    exit_code = 2


_WORD = re.compile(r"[\w.+-]+")


def _name(field: str) -> str:
    return field


class InputError(CudafitError):
    """A malformed option, spec, file or tool output.

    Where one input is at fault it carries it as values: `field` (its name in the Python API:
    driver, gpus, compute_capability, os, arch, python, macos, jetson, spec, ...), `value` (what
    was given) and `others` (the inputs it contradicts, as (field, value) pairs); `reason` says
    what is wrong without naming how the input was given. The edge that took the input words it:
    `worded(label)` names each field as that edge does (the CLI: `--driver`; a file: its key);
    str() names them as the API does. A boolean field given as True is named alone (`--jetson`).
    A file at fault is named by `path` (and `line`) instead."""

    def __init__(
        self,
        reason: str,
        *,
        field: Optional[str] = None,
        value: object = None,
        others: tuple[tuple[str, object], ...] = (),
        path: Optional[str] = None,
        line: Optional[int] = None,
    ) -> None:
        self.reason = reason
        self.field = field
        self.value = value
        self.others = others
        self.path = path  # a file at fault: named as `path:line: reason`, whoever words it
        self.line = line
        super().__init__(self.worded(_name))

    def worded(self, label: Callable[[str], str]) -> str:
        if self.path is not None:
            return f"{self.path}{'' if self.line is None else f':{self.line}'}: {self.reason}"
        if self.field is None:
            return self.reason
        said = [label(self.field) if self.value is True else f"{label(self.field)} {self.value!r}"]
        # what it contradicts: quoted only where a bare word would not read as one value
        said += [label(f) if v is True else f"{label(f)} {v}" if _WORD.fullmatch(str(v)) else f"{label(f)} {v!r}" for f, v in self.others]
        return said[0] + (f" with {', '.join(said[1:])}" if len(said) > 1 else "") + f": {self.reason}"


class DataError(CudafitError):
    """An inconsistent or unreadable file in matrices/ (names the file, entry and field)."""
