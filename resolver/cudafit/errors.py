"""The two kinds of failure a user can cause; anything else is a bug and keeps its traceback."""

from __future__ import annotations


class CudafitError(Exception):
    """A problem with the user's input or environment: printed as one line, exit code 2."""

    exit_code = 2


class InputError(CudafitError):
    """A malformed option, spec, file or tool output."""


class DataError(CudafitError):
    """An inconsistent or unreadable file in matrices/ (names the file, entry and field)."""
