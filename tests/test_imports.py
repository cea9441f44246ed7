"""Modules import one way: no cycle between cudafit's modules, not even through a lazy import
inside a function (ARCHITECTURE.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import cudafit

PACKAGE = Path(cudafit.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("cudafit"):
                submodules = [f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in modules]
                # `from cudafit import records` imports the submodule; the package itself only
                # where a name of its own is imported (`from cudafit import __version__`)
                whole = [node.module] if len(submodules) < len(node.names) or node.module != "cudafit" else []
                targets = whole + submodules
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.startswith("cudafit")]
            graph[name] |= {t for t in targets if t in modules and t != name}
    return graph


def test_no_import_cycles():
    graph = _graph()
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt):] + [nxt]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
