"""cudafit: the PyTorch/CUDA build that will run on this machine, and why.

As a library (docs/api.md): `describe`/`detect` a machine, `resolve` specs into a `Plan`,
`inspect` and `diagnose` an environment, `check_paths` dependency files, `install` a plan. The
names load on first use, so `import cudafit` (and the command line's start-up) costs nothing."""

from __future__ import annotations

from importlib import import_module

from cudafit.version import __version__

# typing costs a third of an empty interpreter's start-up, and nothing here needs it at run time:
# type checkers read this constant as True (as they do typing.TYPE_CHECKING)
TYPE_CHECKING = False

# public name -> the module that defines it
_PUBLIC = {
    "describe": "cudafit.api",
    "detect": "cudafit.api",
    "resolve": "cudafit.api",
    "inspect": "cudafit.api",
    "diagnose": "cudafit.api",
    "check_paths": "cudafit.api",
    "install": "cudafit.api",
    "Plan": "cudafit.api_records",
    "NoSolution": "cudafit.api_records",
    "InputError": "cudafit.errors",
    "CudafitError": "cudafit.errors",
    "InstallFailed": "cudafit.installer",
    "Machine": "cudafit.api_records",
    "Gpu": "cudafit.api_records",
    "Package": "cudafit.api_records",
    "Evidence": "cudafit.api_records",
    "Cause": "cudafit.api_records",
    "Shortfall": "cudafit.api_records",
    "Environment": "cudafit.api_records",
    "InstalledBuild": "cudafit.api_records",
    "Finding": "cudafit.api_records",
    "Report": "cudafit.api_records",
    "SCHEMA_VERSION": "cudafit.records",
}

__all__ = ["__version__", *_PUBLIC]

if TYPE_CHECKING:  # what type checkers and editors see; at run time __getattr__ loads each name
    from typing import Any

    from cudafit.api import check_paths as check_paths
    from cudafit.api import describe as describe
    from cudafit.api import detect as detect
    from cudafit.api import diagnose as diagnose
    from cudafit.api import inspect as inspect
    from cudafit.api import install as install
    from cudafit.api import resolve as resolve
    from cudafit.api_records import Cause as Cause
    from cudafit.api_records import Environment as Environment
    from cudafit.api_records import Evidence as Evidence
    from cudafit.api_records import Finding as Finding
    from cudafit.api_records import Gpu as Gpu
    from cudafit.api_records import InstalledBuild as InstalledBuild
    from cudafit.api_records import Machine as Machine
    from cudafit.api_records import NoSolution as NoSolution
    from cudafit.api_records import Package as Package
    from cudafit.api_records import Plan as Plan
    from cudafit.api_records import Report as Report
    from cudafit.api_records import Shortfall as Shortfall
    from cudafit.errors import CudafitError as CudafitError
    from cudafit.errors import InputError as InputError
    from cudafit.installer import InstallFailed as InstallFailed
    from cudafit.records import SCHEMA_VERSION as SCHEMA_VERSION


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'cudafit' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})
