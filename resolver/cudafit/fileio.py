"""Writing what the user asked for with `-o`: atomically over a file, straight into a pipe or a
character device, never over anything else (issue 7, item 1: `-o /dev/full` used to replace the
device node with a regular file)."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import Optional, Union

from cudafit.errors import InputError

PathLike = Union[str, "os.PathLike[str]"]

# /dev/stdout, /dev/fd/N and /proc/self/fd/N are links the kernel resolves to an open file
# description (a pipe, a terminal, or a file opened with `>>`). os.path.realpath cannot follow
# them, and replacing the file they name by a rename would cut the caller's redirection off; they
# are written straight, as the shell's `>` would.
_FD_LINK_PREFIXES = ("/dev/fd/", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/proc/")


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _target(path: PathLike) -> tuple[str, Optional[os.stat_result]]:
    """The path and its stat (following symlinks), or None where nothing is there yet."""
    name = os.fspath(path)
    if not name:
        raise InputError("cannot write '': an empty path")
    try:
        return name, os.stat(name)
    except FileNotFoundError:
        return name, None
    except OSError as exc:
        raise InputError(f"cannot write {name}: {exc.strerror}") from None


def _straight(name: str, st: Optional[os.stat_result]) -> bool:
    """True where `-o` writes into the path as it is; raises where `-o` must not touch it."""
    if st is None:
        return False
    if stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode):
        return True
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"cannot write {name}: it is {_kind(st.st_mode)}; -o takes a file, a FIFO or a character device")
    return os.path.abspath(name).startswith(_FD_LINK_PREFIXES)


def _inherited_fd(name: str) -> Optional[int]:
    """The descriptor /dev/stdout, /dev/stderr, /dev/fd/N or /proc/self/fd/N names, else None."""
    fixed = {"/dev/stdout": 1, "/dev/stderr": 2}
    if name in fixed:
        return fixed[name]
    for prefix in ("/dev/fd/", "/proc/self/fd/"):
        if name.startswith(prefix) and name[len(prefix) :].isdigit():
            return int(name[len(prefix) :])
    return None


def check_output(path: PathLike) -> None:
    """Refuse a target `-o` must not write (a directory, a block device, a socket, a symlink to
    one of those, a folder named with a trailing slash that is not there) before any work is done."""
    name, st = _target(path)
    if st is None and name.endswith(("/", os.sep)):
        # `-o out/` names a folder: writing a file called `out` would not be what was asked
        raise InputError(f"cannot write into {name}: the folder does not exist (create it first)")
    _straight(name, st)


def read_existing(path: PathLike) -> Optional[str]:
    """The text of a regular file that `-o` is about to update, or None (a new path, a FIFO or a
    device: reading a FIFO would block, and a device holds no file to merge with)."""
    name, st = _target(path)
    if st is None or _straight(name, st):
        return None
    try:
        with open(name, encoding="utf-8") as fh:
            return fh.read()
    except OSError as exc:
        raise InputError(f"cannot read {name}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"cannot read {name}: not UTF-8 text (byte {exc.start})") from None


def write_output(path: PathLike, text: str) -> None:
    """Write `text` where `-o` points: atomically over a regular file, a new path or a symlink to
    a regular file; straight into a character device or a FIFO (as `> /dev/null` would); refuse
    anything else. Every failure is an InputError naming the path."""
    write_output_bytes(path, text.encode("utf-8"))


def write_output_bytes(path: PathLike, data: bytes) -> None:
    """write_output for bytes (a data bundle)."""
    name, st = _target(path)
    if not _straight(name, st):
        write_atomic_bytes(Path(name), data)
        return
    fd = _inherited_fd(name)
    if fd is not None:
        # /dev/stdout and friends name a descriptor this process already holds: opening the path
        # anew would start a second file offset (and truncate or interleave a redirected file),
        # so the text goes through the descriptor itself, as a shell's `>&1` would.
        try:
            sys.stdout.flush()
            while data:
                data = data[os.write(fd, data) :]
        except OSError as exc:
            raise InputError(f"cannot write {name}: {exc.strerror}") from None
        return
    try:
        # Append, never truncate: /dev/stdout redirected to a file already holds what came
        # before (`{ echo a; cudafit ... -o /dev/stdout; } > f`), and a FIFO or device has nothing
        # to truncate. The close flushes, so it is inside the try too (/dev/full fails only then).
        with open(name, "ab") as fh:
            fh.write(data)
    except OSError as exc:
        raise InputError(f"cannot write {name}: {exc.strerror}") from None


def write_atomic(path: Path, text: str) -> None:
    """Write all of `text` or nothing: a temporary file in the same folder, then a rename.
    A symlink is written through, and the file keeps its mode (a new one gets 0666 less umask)."""
    write_atomic_bytes(path, text.encode("utf-8"))


def write_atomic_bytes(path: Path, data: bytes) -> None:
    """write_atomic for bytes."""
    path = Path(os.path.realpath(path))
    folder = path.parent
    try:
        mode = path.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    try:
        import tempfile  # only when a file is written: it costs start-up time on every other run

        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise InputError(f"cannot write {path}: {exc.strerror}") from None
