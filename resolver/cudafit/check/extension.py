"""Whether a project's build compiles against the torch its `[build-system] requires` brings.

Only a compiled extension links torch's C++ ABI; a pure-Python package that lists torch among its
build requirements (YOLO-World does) builds and runs with any torch, so what its isolated build
installs never matters. The evidence read here: a build backend that exists to compile (CMake,
Meson), setuptools' `ext-modules` in pyproject.toml, or a setup.py beside it that uses torch's
`cpp_extension` (the way PyTorch extensions are built), read with Python's own parser. uv can be
told to build against the runtime's torch instead (`built_beside_runtime`). Where the pyproject
lists no dependencies, the torch the project runs with is the one setuptools reads
(`declared_torch`): setup.py's `install_requires`, or a `[tool.setuptools.dynamic]` file."""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from cudafit.check import pins
from cudafit.check.model import Pin, Span

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


def declared_torch(path: Path, data: dict[str, Any]) -> tuple[Pin, ...]:
    """The torch a setuptools project declares outside its pyproject, where the pyproject leaves its
    dependencies to setuptools (no `[project]` table, or `dependencies` in its `dynamic`): the
    requirement files `[tool.setuptools.dynamic] dependencies` names, else the `install_requires`
    its setup.py writes out (a list in the `setup()` call, or a module-level name bound once to
    one). A requirement setup.py computes (`f"torch=={torch.__version__}"`, the build's own torch)
    is no constant and is not read: it says nothing against the build."""
    build = data.get("build-system")
    backend = build.get("build-backend") if isinstance(build, dict) else None
    if backend is not None and not (isinstance(backend, str) and backend.startswith("setuptools")):
        return ()  # only setuptools reads setup.py and its dynamic files
    project = data.get("project")
    if isinstance(project, dict):
        dynamic = project.get("dynamic")
        if "dependencies" in project or not (isinstance(dynamic, list) and "dependencies" in dynamic):
            return ()  # the pyproject lists them (CF014 reads those), or the project has none
    if _dynamic_dependencies(data) is not None:
        return tuple(pin for file in dynamic_files(path, data) for pin in _torch_in_file(file))
    tree = _setup_tree(path.parent / "setup.py")
    return _install_requires_torch(tree, str(path.parent / "setup.py")) if tree is not None else ()


def _dynamic_dependencies(data: dict[str, Any]) -> Optional[dict[str, Any]]:
    """`[tool.setuptools.dynamic] dependencies` (`{file = [...]}`), where the pyproject has it."""
    tool = data.get("tool")
    setuptools = tool.get("setuptools") if isinstance(tool, dict) else None
    dynamic = setuptools.get("dynamic") if isinstance(setuptools, dict) else None
    found = dynamic.get("dependencies") if isinstance(dynamic, dict) else None
    return found if isinstance(found, dict) else None


def dynamic_files(path: Path, data: dict[str, Any]) -> list[Path]:
    """The files `[tool.setuptools.dynamic] dependencies` names, beside the pyproject at `path`."""
    named = (_dynamic_dependencies(data) or {}).get("file")
    names = [named] if isinstance(named, str) else named if isinstance(named, list) else []
    return [path.parent / name for name in names if isinstance(name, str)]


def _torch_in_file(file: Path) -> list[Pin]:
    """The torch requirements of a requirements file setuptools reads (one requirement a line)."""
    from cudafit.check.requirements import read as read_requirements
    from cudafit.errors import InputError

    try:
        if not file.is_file() or file.stat().st_size > MAX_SETUP_BYTES:
            return []
        # setuptools reads the file's own lines: an include (`-r base.txt`) is no requirement to it
        return [p for p in read_requirements(file).pins if p.name == "torch" and not p.constraint and p.span.path == str(file)]
    except (OSError, InputError, RecursionError):
        return []  # a file that cannot be read declares nothing here; checked on its own if found


def _install_requires_torch(tree: ast.Module, setup: str) -> tuple[Pin, ...]:
    # A name is read only where it is bound once in the whole file, at module level: one bound
    # again, in a branch or a function, or added to (`+=`) is not certain.
    bound: dict[str, list[Optional[ast.expr]]] = {}
    top_level = {id(node) for node in tree.body}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Name):
                    top = isinstance(node, ast.Assign) and id(node) in top_level
                    bound.setdefault(target.id, []).append(node.value if top else None)
    for call in ast.walk(tree):
        if not (isinstance(call, ast.Call) and _calls_setup(call.func)):
            continue
        for keyword in call.keywords:
            if keyword.arg != "install_requires":
                continue
            value = keyword.value
            if isinstance(value, ast.Name):
                once = bound.get(value.id, [])
                value = once[0] if len(once) == 1 and once[0] is not None else value
            if not isinstance(value, (ast.List, ast.Tuple)):
                return ()
            out = []
            for item in value.elts:
                if isinstance(item, ast.Constant) and isinstance(item.value, str):
                    pin = pins.parse(item.value, Span(setup, item.lineno, item.col_offset + 1, item.value))
                    if isinstance(pin, Pin) and pin.name == "torch":
                        out.append(pin)
            return tuple(out)
    return ()


def _calls_setup(func: ast.expr) -> bool:
    return (isinstance(func, ast.Name) and func.id == "setup") or (isinstance(func, ast.Attribute) and func.attr == "setup")


def _setup_tree(setup: Path) -> Optional[ast.Module]:
    """setup.py as Python's parser reads it; None where it cannot be read (it says nothing then).
    Parsed once per version of the file: how it compiles and what it requires are both read."""
    try:
        if not setup.is_file():
            return None
        stat = setup.stat()
    except OSError:
        return None
    return None if stat.st_size > MAX_SETUP_BYTES else _parsed(str(setup), stat.st_size, stat.st_mtime_ns)


@lru_cache(maxsize=16)  # the tree is only read, never changed
def _parsed(setup: str, _size: int, _mtime_ns: int) -> Optional[ast.Module]:
    try:
        return ast.parse(Path(setup).read_bytes(), filename=setup)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _setup_uses_torch_builder(setup: Path) -> bool:
    tree = _setup_tree(setup)
    if tree is None:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.alias) and (node.name in TORCH_BUILDERS or node.name.endswith(".cpp_extension")):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("cpp_extension"):
            return True
        if isinstance(node, ast.Attribute) and node.attr in TORCH_BUILDERS:
            return True
    return False
