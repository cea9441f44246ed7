"""Where watch's own stdout or stderr is a terminal, the command writes to a terminal too (a pseudo-
terminal whose other end watch reads and passes on): Python then flushes each line, progress bars
draw and colours stay, as without watch. Its size follows the real terminal's, and its output is
passed byte for byte (no newline translation). Elsewhere (a pipe, a file, CI, Windows) the command
writes to a pipe, as it would to watch's own pipe or file."""

from __future__ import annotations

import os
import signal
import sys
from typing import Any, Optional


class Terminals:
    """One pseudo-terminal per stream that is a terminal here: `slaves` go to the command,
    `masters` are read; `close_slaves()` once the command has them."""

    def __init__(self, streams: dict[str, int]) -> None:
        self.masters: dict[str, int] = {}
        self.slaves: dict[str, int] = {}
        self._real: dict[str, int] = {}
        self._previous: Any = None
        self.child: Optional[int] = None  # told of a new size after the terminal's is copied
        ttys = {name: fd for name, fd in streams.items() if _isatty(fd)}
        if sys.platform == "win32" or not ttys:
            return
        import pty
        import termios

        for name, fd in ttys.items():
            try:
                master, slave = pty.openpty()
            except OSError:
                continue  # no pseudo-terminals left, or none on this system: a pipe then
            attrs = termios.tcgetattr(slave)
            attrs[1] &= ~termios.OPOST  # output as written: no "\n" -> "\r\n"
            termios.tcsetattr(slave, termios.TCSANOW, attrs)
            self.masters[name], self.slaves[name], self._real[name] = master, slave, fd
        if self.masters:
            self.resize()
            if hasattr(signal, "SIGWINCH"):
                self._previous = signal.signal(signal.SIGWINCH, lambda _signum, _frame: self.resize())

    def resize(self) -> None:
        import fcntl
        import termios

        for name, slave in self.slaves.items():
            try:
                size = fcntl.ioctl(self._real[name], termios.TIOCGWINSZ, b"\0" * 8)
                fcntl.ioctl(slave if slave >= 0 else self.masters[name], termios.TIOCSWINSZ, size)
            except OSError:
                pass  # the terminal went away: the size stays
        # the command heard the terminal's SIGWINCH as watch did, maybe before the copy: again now
        if self.child is not None and hasattr(signal, "SIGWINCH"):
            try:
                os.kill(self.child, signal.SIGWINCH)
            except OSError:
                pass  # it has ended

    def stream(self, name: str) -> Optional[int]:
        slave = self.slaves.get(name)
        return slave if slave is not None and slave >= 0 else None

    def close_slaves(self) -> None:
        """The command holds them now; closed here, the masters read end of file (EIO) once it and
        its children have closed theirs."""
        for name, slave in self.slaves.items():
            if slave >= 0:
                os.close(slave)
                self.slaves[name] = -1

    def restore(self) -> None:
        if self._previous is not None and hasattr(signal, "SIGWINCH"):
            signal.signal(signal.SIGWINCH, self._previous)


def _isatty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False
