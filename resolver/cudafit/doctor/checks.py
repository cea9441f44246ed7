"""The doctor's checks, in the order they run: each reads the Context and returns findings, and the
runner keeps the first of any finding two checks both report, so this order is the report's order."""

from __future__ import annotations

from typing import Callable

from cudafit.doctor.context import Context
from cudafit.doctor.gpu_checks import cpu_builds, driver_and_gpus, driver_floor, kernels
from cudafit.doctor.held_checks import held_set
from cudafit.doctor.model import Finding
from cudafit.doctor.platform_checks import dead_ends
from cudafit.doctor.python_checks import python, python_support, unreadable
from cudafit.doctor.stack_checks import built_against, companions, cuda_stacks, jax_plugins, numpy_two
from cudafit.doctor.system_checks import loading, system_cuda
from cudafit.doctor.vendor_checks import amd_and_intel

CHECKS: tuple[Callable[[Context], list[Finding]], ...] = (
    driver_and_gpus,
    cpu_builds,
    amd_and_intel,
    driver_floor,
    kernels,
    cuda_stacks,
    companions,
    jax_plugins,
    numpy_two,
    built_against,
    held_set,
    system_cuda,
    loading,
    dead_ends,
    python,
    python_support,
    unreadable,
)
