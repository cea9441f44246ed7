"""Reading a file to check: text or a clear refusal (binary, not UTF-8, too large), never a traceback."""

from __future__ import annotations

import stat
from pathlib import Path

from cudafit.errors import InputError

# Dependency files are a few kilobytes; anything this large is not one, and reading it would
# only slow the hook down.
MAX_BYTES = 2 * 1024 * 1024


def regular_file(path: Path) -> None:
    """Refuse what is not a regular file before opening it: a FIFO blocks an open, a device
    (/dev/zero, also through a symlink) never ends."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise InputError("no such file", path=str(path)) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=str(path)) from None
    if stat.S_ISDIR(mode):
        raise InputError("is a directory", path=str(path))
    if not stat.S_ISREG(mode):
        kind = "a FIFO" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file"
        raise InputError(f"{kind}, not a dependency file; not checked", path=str(path))


def read_text(path: Path) -> str:
    regular_file(path)
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise InputError(
                f"{size // (1024 * 1024)} MB is too large for a dependency file (limit {MAX_BYTES // (1024 * 1024)} MB); not checked", path=str(path)
            )
        data = path.read_bytes()
    except IsADirectoryError:
        raise InputError("is a directory", path=str(path)) from None
    except FileNotFoundError:
        raise InputError("no such file", path=str(path)) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=str(path)) from None
    if b"\0" in data:
        raise InputError("a binary file, not a dependency file; not checked", path=str(path))
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(f"not valid UTF-8 (byte 0x{data[exc.start]:02x}); not checked", path=str(path), line=line) from None
    return text
