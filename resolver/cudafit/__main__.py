"""The program: the console script and `python -m cudafit` both run `main`. It imports nothing
before it runs, so that its first step comes before every import (cudafit.cli holds the commands)."""

import errno
import gc
import os
import sys
from typing import NoReturn

# Failures of the output itself (a full disk, a device error, a closed descriptor), as opposed to
# a command's own file errors, which carry a file name and are the command's to report.
_OUTPUT_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EBADF, errno.EFBIG}


def main() -> NoReturn:
    """Run the command line, then end the process. Two things only a whole program may do, each
    worth milliseconds of a `resolve` (scripts/bench.py measures them):
    - the cycle collector stays off while the program imports its libraries, which would only
      make it rescan every module's objects (about 3 ms); those are then set aside for good
      (gc.freeze), and it runs again, seldom, over what the command itself allocates: often
      enough that a `check` of 2,000 files peaks at 34 MB, not 48 MB without it, and seldom
      enough that a `resolve` is rarely interrupted;
    - the process ends without the interpreter's teardown, which frees every module and object
      one by one (about 9 ms). Nothing is left to clean up when a command returns: files are
      written atomically and closed, and what an exit handler would flush (stdout, stderr) is
      flushed here. Output that cannot be written is one line on stderr and exit 2, as for
      `-o FILE`; a reader that went away (`| head -1`) ends it silently with 1, as click does."""
    gc.disable()
    from cudafit.cli import run

    gc.freeze()
    gc.set_threshold(100_000, 10, 10)  # the young objects of a command, every 100,000 allocations
    gc.enable()

    try:
        code = run()
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:  # None: the descriptor was closed (`>&-`); nothing was written
                stream.flush()
    except BrokenPipeError:
        code = 1
    except OSError as exc:
        if exc.filename is not None or exc.errno not in _OUTPUT_ERRORS:
            raise
        code = 2
        try:
            os.write(2, f"cudafit: error: cannot write the output: {exc.strerror}\n".encode())
        except OSError:
            pass  # stderr is gone too: the exit code says it
    os._exit(code)


if __name__ == "__main__":
    main()
