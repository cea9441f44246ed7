"""Why a run never used the GPU, where doctor can tell: its first error for the environment the
command runs in (a CPU-only build, a build the driver cannot load, no kernels for the GPU). That
environment is the command's own interpreter's (`/opt/envs/a/bin/python train.py`, or a script
such as torchrun whose first line names one), else the active one."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Optional

from cudafit.errors import CudafitError

_PYTHON = re.compile(r"python(\d+(\.\d+t?)?)?(\.exe)?", re.IGNORECASE)


def interpreter_of(command: Sequence[str], environ: Mapping[str, str]) -> Optional[str]:
    """The Python the command runs in, where its words say so: the interpreter it starts, or the one
    the first line (#!) of the script it starts names. None where they do not (`uv run`, a shell
    script, a binary): the active environment is then the best guess."""
    if not command:
        return None
    found = shutil.which(command[0], path=environ.get("PATH"))
    if found is None:
        return None
    if _PYTHON.fullmatch(Path(found).name):
        return found  # not resolved: a venv's bin/python links to the base interpreter, and the venv is the environment
    try:
        with open(found, "rb") as script:
            first = script.readline(512)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode(errors="replace").split()
    if words and Path(words[0]).name == "env":  # #!/usr/bin/env python3
        words = [w for w in words[1:] if not w.startswith("-")]
        named = shutil.which(words[0], path=environ.get("PATH")) if words else None
    else:
        named = words[0] if words else None
    return named if named and _PYTHON.fullmatch(Path(named).name) and os.access(named, os.X_OK) else None


def environment_of(interpreter: Optional[str]) -> Optional[str]:
    """What doctor reads for an interpreter: itself where it sits in an environment's bin/ (or
    Scripts/), else the prefix it reports (pyenv's shims and other launchers are not environments)."""
    if interpreter is None or Path(interpreter).parent.name in ("bin", "Scripts"):
        return interpreter
    from cudafit.detection import reported_prefix

    prefix = reported_prefix(interpreter)
    return str(prefix) if prefix is not None else None


def doctor_cause(interpreter: Optional[str] = None) -> Optional[str]:
    from cudafit.doctor.environment import read_target
    from cudafit.doctor.runner import diagnose, read_driver
    from cudafit.installer import find_target
    from cudafit.loader import load
    from cudafit.machine import MachineOptions, build_machine
    from cudafit.toolkits import find_toolkits

    try:
        matrices = load()
        target = find_target(interpreter)
        environment = read_target(target.python, target.prefix)
        machine = build_machine(MachineOptions(python=environment.python), matrices, reader=read_driver)
        report = diagnose(environment, machine, matrices, environ=os.environ, toolkits=find_toolkits(os.environ))
    except (CudafitError, OSError):
        return None  # doctor cannot read this environment: the finding stands without its cause
    errors = [f for f in report.findings if f.severity == "error"]
    return f"{errors[0].code} {errors[0].message}" if errors else None
