from __future__ import annotations

import os
import tempfile
from pathlib import Path

from cudafit.errors import InputError


def write_atomic(path: Path, text: str) -> None:
    """Write all of `text` or nothing: a temporary file in the same folder, then a rename.
    A symlink is written through, and the file keeps its mode (a new one gets 0666 less umask)."""
    path = Path(os.path.realpath(path))
    folder = path.parent
    try:
        mode = path.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise InputError(f"cannot write {path}: {exc.strerror}") from None
