"""The maintainer scripts (scripts/NAME.py) as modules for their tests: scripts are not a package,
and they import their siblings (pypi_wheels) by name, so their folder goes on sys.path."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def script(name: str) -> ModuleType:
    """scripts/NAME.py, imported once per test session under its own name."""
    if name in sys.modules and getattr(sys.modules[name], "__file__", None) == str(SCRIPTS / f"{name}.py"):
        return sys.modules[name]
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
