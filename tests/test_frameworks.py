"""The framework registry: the solver reaches every framework through it and names none."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from cudafit import frameworks
from cudafit.frameworks import BY_FAMILY, BY_MEMBER, PROVIDERS

SOLVER = Path(frameworks.__file__).parent.parent / "solve.py"
REQUIRED = ("FAMILY", "MEMBERS", "DATA_PREFIX", "read_file", "known_extras", "releases", "implied", "check_extras", "pairs", "candidates")


@pytest.mark.parametrize("provider", PROVIDERS, ids=[p.FAMILY for p in PROVIDERS])
def test_every_provider_has_the_protocol(provider, matrices):
    for name in REQUIRED:
        assert hasattr(provider, name), f"{provider.__name__} lacks {name}"
    assert provider.MEMBERS[0] == provider.FAMILY
    assert list(provider.releases(matrices)) == sorted(provider.releases(matrices), key=lambda r: r.version, reverse=True)
    assert BY_FAMILY[provider.FAMILY] is provider
    assert all(BY_MEMBER[m] is provider for m in provider.MEMBERS)


def test_the_solver_names_no_framework():
    tree = ast.parse(SOLVER.read_text())
    words = {p.FAMILY for p in PROVIDERS} | {m for p in PROVIDERS for m in p.MEMBERS}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            assert not any(w in node.value.lower() for w in words), f"solve.py line {node.lineno}: {node.value!r}"
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] + [getattr(node, "module", "") or ""]
            assert not any(n.split(".")[-1] in ("pytorch", "tensorflow", "jax") for n in names), ast.dump(node)
        if isinstance(node, ast.Attribute):
            assert node.attr not in ("torch", "tensorflow", "jax"), f"solve.py line {node.lineno}: .{node.attr}"


def test_pairs_and_implied(matrices):
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    torch = BY_FAMILY["torch"]
    assert torch.pairs("torchvision", Version("0.20.1"), matrices) == [Version("2.5.1")]  # its Requires-Dist pin
    assert torch.pairs("torch", Version("2.5.1"), matrices) == [Version("2.5.1")]
    assert list(torch.implied({"torchvision": SpecifierSet()})) == ["torch", "torchvision"]
    assert BY_FAMILY["jax"].check_extras(frozenset({"cuda12", "cuda13"}))
    assert BY_FAMILY["jax"].check_extras(frozenset({"cuda12"})) is None
