"""Where data updates live: a folder per installed bundle under the user data folder, and
`state.json` naming the one in use and the one before it (for `data rollback`).

    <home>/state.json          {"current": "2026.12.1-3f9a0c12", "previous": "2026.11.2-81bd0e44"}
    <home>/2026.12.1-3f9a0c12/ manifest.json, matrices/*.toml, matrices/*/*.toml
    <home>/update.lock         held while an update or a rollback runs

The switch between bundles is one atomic rename of state.json, so a reader sees the old data or
the new, never half of each; a folder is written completely before state.json names it.
$CUDAFIT_DATA_HOME replaces the user data folder (tests, shared installs).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NamedTuple, Optional

from cudafit.errors import InputError

STATE = "state.json"
LOCK = "update.lock"


class State(NamedTuple):
    current: Optional[str] = None
    previous: Optional[str] = None


def home() -> Path:
    override = os.environ.get("CUDAFIT_DATA_HOME")
    if override:
        return Path(override)
    import platformdirs

    return Path(platformdirs.user_data_dir("cudafit", appauthor=False)) / "data"


def read_state(folder: Optional[Path] = None) -> State:
    """The state in `folder` (default: home()); an absent or unreadable state is no update."""
    import json  # here, not at the top: most runs find no state file and never need it

    path = (folder or home()) / STATE
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return State()
    if not isinstance(doc, dict):
        return State()
    return State(*(doc.get(k) if isinstance(doc.get(k), str) and _plain(doc[k]) else None for k in State._fields))


def state_problem(folder: Optional[Path] = None) -> Optional[str]:
    """What is wrong with a state file that is there but names no update it can be read as (not
    JSON, not an object), or None: an installed update is then not used, and that is said."""
    import json

    path = (folder or home()) / STATE
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{path}: {exc.strerror}"
    except ValueError as exc:
        return f"{path} is not JSON ({exc})"
    if not isinstance(doc, dict):
        return f"{path} is not a JSON object"
    return None


def _plain(name: str) -> bool:
    # A state file names a folder beside it, nothing else: no separators, no "..".
    return bool(name) and "/" not in name and "\\" not in name and name not in (".", "..")


def current_root(folder: Optional[Path] = None) -> Optional[Path]:
    """The matrices folder of the update in use, or None where none is installed."""
    base = folder or home()
    if not (base / STATE).is_file():
        return None  # the usual case: no update was ever installed
    state = read_state(base)
    return base / state.current / "matrices" if state.current else None


def unlike_manifest(root: Path, present: list[str]) -> Optional[str]:
    """How an installed update's matrices folder (`root`, holding the files `present`) differs from
    the files its bundle's manifest names, or None. A file lost or added after the update was
    checked would silently change answers."""
    manifest = read_manifest(root.parent)
    named = set(manifest["files"]) if manifest and isinstance(manifest.get("files"), dict) else None
    if named is None:
        return f"{root.parent}: no readable manifest.json"
    missing, extra = sorted(named - set(present)), sorted(set(present) - named)
    if not missing and not extra:
        return None
    said = [f"missing {', '.join(missing)}" if missing else "", f"not in its manifest: {', '.join(extra)}" if extra else ""]
    return f"{root}: the files differ from the bundle's manifest: " + "; ".join(s for s in said if s)


def read_manifest(folder: Path) -> Optional[dict]:
    """The manifest an installed bundle's folder keeps, or None."""
    import json

    try:
        doc = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def write_state(folder: Path, state: State) -> None:
    import json

    tmp = folder / f"{STATE}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(state._asdict(), indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, folder / STATE)


class Lock:
    """One update at a time: an OS lock (flock, or msvcrt on Windows) on a lock file that stays.
    The OS drops the lock when its holder exits, however it exits, so no lock is ever stale."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / LOCK
        self._fd: Optional[int] = None

    def __enter__(self) -> Lock:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
        except OSError as exc:
            raise InputError(f"cannot write the data folder {self.path.parent}: {exc.strerror or exc}") from None
        try:
            _lock(fd)
        except OSError:
            os.close(fd)
            raise InputError(f"another cudafit data update is running (it holds {self.path}); wait for it to finish") from None
        self._fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing releases the lock
            self._fd = None


def _lock(fd: int) -> None:
    """Take an exclusive lock on `fd` without waiting; OSError when another process holds it."""
    if sys.platform == "win32":
        import msvcrt

        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
    else:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
