"""Why a run never used the GPU, where doctor can tell: its first error for the active environment
on this machine (a CPU-only build, a build the driver cannot load, no kernels for the GPU)."""

from __future__ import annotations

import os
from typing import Optional

from cudafit.errors import CudafitError


def doctor_cause() -> Optional[str]:
    from cudafit.detection import interpreter_version, python_of_prefix
    from cudafit.doctor.environment import read_environment
    from cudafit.doctor.runner import diagnose, read_driver
    from cudafit.installer import find_target
    from cudafit.loader import load
    from cudafit.machine import MachineOptions, build_machine
    from cudafit.toolkits import find_toolkits

    try:
        matrices = load()
        target = find_target(None)
        python = python_of_prefix(target.prefix) if target.prefix.joinpath("pyvenv.cfg").is_file() else interpreter_version(target.python)
        machine = build_machine(MachineOptions(python=python), matrices, reader=read_driver)
        environment = read_environment(target.prefix, target.python, python=python)
        report = diagnose(environment, machine, matrices, environ=os.environ, toolkits=find_toolkits(os.environ))
    except (CudafitError, OSError):
        return None  # doctor cannot read this environment: the finding stands without its cause
    errors = [f for f in report.findings if f.severity == "error"]
    return f"{errors[0].code} {errors[0].message}" if errors else None
