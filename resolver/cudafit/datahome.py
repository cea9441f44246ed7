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

import json
import os
import time
from pathlib import Path
from typing import NamedTuple, Optional

from cudafit.errors import InputError

STATE = "state.json"
LOCK = "update.lock"
# An update that died without removing its lock leaves it behind; past this age it is stale.
STALE_LOCK_SECONDS = 15 * 60


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
    path = (folder or home()) / STATE
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return State()
    if not isinstance(doc, dict):
        return State()
    return State(*(doc.get(k) if isinstance(doc.get(k), str) and _plain(doc[k]) else None for k in State._fields))


def _plain(name: str) -> bool:
    # A state file names a folder beside it, nothing else: no separators, no "..".
    return bool(name) and "/" not in name and "\\" not in name and name not in (".", "..")


def current_root(folder: Optional[Path] = None) -> Optional[Path]:
    """The matrices folder of the update in use, or None where none is installed."""
    base = folder or home()
    state = read_state(base)
    return base / state.current / "matrices" if state.current else None


def write_state(folder: Path, state: State) -> None:
    tmp = folder / f"{STATE}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(state._asdict(), indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, folder / STATE)


class Lock:
    """One update at a time: a lock file created exclusively, holding the owner's pid and time."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / LOCK

    def __enter__(self) -> Lock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                if self._stale():
                    self.path.unlink(missing_ok=True)
                    continue
                raise InputError(f"another cudafit data update is running (lock {self.path}); wait for it, or remove the file if none is") from None
            with os.fdopen(fd, "w") as fh:
                fh.write(f"{os.getpid()} {int(time.time())}\n")
            return self
        raise InputError(f"cannot take the lock {self.path}")

    def __exit__(self, *exc: object) -> None:
        self.path.unlink(missing_ok=True)

    def _stale(self) -> bool:
        try:
            pid_text, _, started = self.path.read_text().partition(" ")
            pid, since = int(pid_text), int(started)
        except (OSError, ValueError):
            return True  # half-written by a process that died at once
        if time.time() - since > STALE_LOCK_SECONDS:
            return True
        return pid != os.getpid() and not _alive(pid)


def _alive(pid: int) -> bool:
    if os.name == "nt":  # no cheap liveness test: rely on the lock's age
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
