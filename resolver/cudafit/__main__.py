"""The program: the console script and `python -m cudafit` both run `main`. It imports nothing
before it runs, so that its first step comes before every import (cudafit.cli holds the commands)."""

import gc
import os
import sys


def main() -> None:
    """Run the command line, then end the process. Two things only a whole program may do, each
    worth milliseconds of a `resolve` (scripts/bench.py measures them):
    - the cycle collector is off from the first import on: imports and the cached data allocate
      in bursts, reference counting frees what a command lets go, and the collector would only
      rescan the rest (about 3 ms);
    - the process ends without the interpreter's teardown, which frees every module and object
      one by one (about 9 ms). Nothing is left to clean up when a command returns: files are
      written atomically and closed, and no exit handler is registered. The output is flushed
      first; where that fails (a closed pipe), the ordinary exit reports it."""
    gc.disable()
    from cudafit.cli import run

    code = run()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        sys.exit(code)
    os._exit(code)


if __name__ == "__main__":
    main()
