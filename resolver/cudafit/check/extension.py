"""Whether a project's build compiles against the torch its `[build-system] requires` brings.

Only a compiled extension links torch's C++ ABI; a pure-Python package that lists torch among its
build requirements (YOLO-World does) builds and runs with any torch, so what its isolated build
installs never matters. The evidence read here: a build backend that exists to compile (CMake,
Meson), setuptools' `ext-modules` in pyproject.toml, or a setup.py beside it that uses torch's
`cpp_extension` (the way PyTorch extensions are built), read with Python's own parser. uv can be
told to build against the runtime's torch instead (`built_beside_runtime`)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

# Backends that compile the project with a native build system (their module's first component).
COMPILING_BACKENDS = frozenset({"scikit_build_core", "mesonpy", "py_build_cmake", "cmake_build_extension"})

# The names a setup.py reaches torch's extension builder by (torch.utils.cpp_extension's).
TORCH_BUILDERS = frozenset({"cpp_extension", "CppExtension", "CUDAExtension", "BuildExtension", "SyclExtension"})

# A setup.py larger than this is not read (real ones are a few KB; memory stays bounded).
MAX_SETUP_BYTES = 1024 * 1024


def built_beside_runtime(data: dict[str, Any]) -> bool:
    """uv told to build the project against the torch it runs with: without build isolation, or
    with torch as an extra build dependency that matches the runtime's (`match-runtime`)."""
    tool = data.get("tool")
    uv = tool.get("uv") if isinstance(tool, dict) else None
    project = data.get("project")
    name = project.get("name") if isinstance(project, dict) else None
    if not isinstance(uv, dict) or not isinstance(name, str):
        return False
    own = canonicalize_name(name)
    if uv.get("no-build-isolation") is True:
        return True
    isolated = uv.get("no-build-isolation-package")
    if isinstance(isolated, list) and any(isinstance(n, str) and canonicalize_name(n) == own for n in isolated):
        return True
    extra = uv.get("extra-build-dependencies")
    for package, requirements in extra.items() if isinstance(extra, dict) else ():
        if canonicalize_name(package) != own or not isinstance(requirements, list):
            continue
        for item in requirements:
            if isinstance(item, dict) and item.get("match-runtime") is True and _names_torch(item.get("requirement")):
                return True
    return False


def _names_torch(requirement: Any) -> bool:
    try:
        return isinstance(requirement, str) and canonicalize_name(Requirement(requirement).name) == "torch"
    except InvalidRequirement:
        return False


def compiled_by(path: Path, data: dict[str, Any]) -> str:
    """How the project at `path` (its pyproject.toml, read as `data`) compiles against torch, in
    words for a finding ("its setup.py builds with torch's cpp_extension"); "" where nothing says
    it does."""
    build = data.get("build-system")
    backend = build.get("build-backend") if isinstance(build, dict) else None
    if isinstance(backend, str) and backend.split(".")[0] in COMPILING_BACKENDS:
        return f"its build backend {backend} compiles it"
    tool = data.get("tool")
    setuptools = tool.get("setuptools") if isinstance(tool, dict) else None
    if isinstance(setuptools, dict) and setuptools.get("ext-modules"):
        return "[tool.setuptools] ext-modules compiles it"
    if backend is None or (isinstance(backend, str) and backend.startswith("setuptools")):
        if _setup_uses_torch_builder(path.parent / "setup.py"):
            return "its setup.py builds with torch's cpp_extension"
    return ""


def _setup_uses_torch_builder(setup: Path) -> bool:
    try:
        if not setup.is_file() or setup.stat().st_size > MAX_SETUP_BYTES:
            return False
        tree = ast.parse(setup.read_bytes(), filename=str(setup))
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return False  # a setup.py that cannot be read says nothing either way
    for node in ast.walk(tree):
        if isinstance(node, ast.alias) and (node.name in TORCH_BUILDERS or node.name.endswith(".cpp_extension")):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("cpp_extension"):
            return True
        if isinstance(node, ast.Attribute) and node.attr in TORCH_BUILDERS:
            return True
    return False
