"""The framework registry: the solver reaches every framework through it and names none."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from cudafit import frameworks
from cudafit.frameworks import BY_FAMILY, BY_MEMBER, REGISTRY, providers

PROVIDERS = providers()

# the solver's modules: the request, the joint search, the per-driver-floor answer
SOLVER = [Path(frameworks.__file__).parent.parent / f"{name}.py" for name in ("solve", "specs", "search", "floors")]
REQUIRED = ("FAMILY", "MEMBERS", "REQUIRES", "BRINGS", "COMPANIONS", "known_extras", "releases", "implied", "check_extras", "pairs", "candidates")


@pytest.mark.parametrize("provider", PROVIDERS, ids=[p.FAMILY for p in PROVIDERS])
def test_every_provider_has_the_protocol(provider, matrices):
    for name in REQUIRED:
        assert hasattr(provider, name), f"{provider.__name__} lacks {name}"
    assert provider.MEMBERS[0] == provider.FAMILY
    assert list(provider.releases(matrices)) == sorted(provider.releases(matrices), key=lambda r: r.version, reverse=True)
    assert BY_FAMILY[provider.FAMILY] is provider
    assert all(BY_MEMBER[m] is provider for m in provider.MEMBERS)
    # the registry, read without importing providers, says what the module says
    assert (provider.FAMILY, provider.__name__.rsplit(".", 1)[1], provider.MEMBERS) in REGISTRY
    reader = frameworks.readers()[provider.FAMILY]
    assert reader.__name__ == f"{provider.__name__}_data"
    assert isinstance(reader.DATA_PREFIX, str) and callable(reader.read_file)


def test_the_solver_names_no_framework():
    words = {p.FAMILY for p in PROVIDERS} | {m for p in PROVIDERS for m in p.MEMBERS}
    for path in SOLVER:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                assert not any(w in node.value.lower() for w in words), f"{path.name} line {node.lineno}: {node.value!r}"
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] + [getattr(node, "module", "") or ""]
                assert not any(n.split(".")[-1] in ("pytorch", "tensorflow", "jax") for n in names), ast.dump(node)
                # causes are values: the words are explain.py's, applied by resolution.py
                assert not any(n.split(".")[-1] == "explain" for n in names), f"{path.name} line {node.lineno} imports explain"
            if isinstance(node, ast.Attribute):
                assert node.attr not in ("torch", "tensorflow", "jax"), f"{path.name} line {node.lineno}: .{node.attr}"


def test_pairs_and_implied(matrices):
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    torch = BY_FAMILY["torch"]
    assert torch.pairs("torchvision", Version("0.20.1"), matrices) == [Version("2.5.1")]  # its Requires-Dist pin
    assert torch.pairs("torch", Version("2.5.1"), matrices) == [Version("2.5.1")]
    assert list(torch.implied({"torchvision": SpecifierSet()})) == ["torch", "torchvision"]
    assert BY_FAMILY["jax"].check_extras(frozenset({"cuda12", "cuda13"}))
    assert BY_FAMILY["jax"].check_extras(frozenset({"cuda12"})) is None


def test_a_jax_extra_split_by_platform_is_one_choice(tmp_path):
    """One extra's build written as two entries (x86_64, aarch64): the entry for the other platform
    is no rejection of the extra."""
    import shutil

    from cudafit.loader import data_dir, load
    from cudafit.records import GpuInfo, Machine, Policy
    from cudafit.resolution import resolve

    copy = tmp_path / "m"
    shutil.copytree(data_dir(), copy)
    path = copy / "jax" / "jax-0.8.toml"
    text = path.read_text()
    start = text.index("[[build]]")
    end = text.index("[[build]]", start + 1)
    block = text[start:end]
    x86 = block.replace('platforms = ["linux-x86_64", "linux-aarch64"]', 'platforms = ["linux-x86_64"]', 1)
    arm = block.replace('platforms = ["linux-x86_64", "linux-aarch64"]', 'platforms = ["linux-aarch64"]', 1)
    assert x86 != block
    path.write_text(text[:start] + arm + x86 + text[end:])
    machine = Machine(os="linux", arch="x86_64", python="3.12", driver="580.65.06", gpus=(GpuInfo("NVIDIA H100 80GB HBM3", (9, 0)),))
    res = resolve(["jax[cuda12]==0.8.*"], machine, load(copy), Policy())
    assert res.ok and res.packages[0].requirement.startswith("jax[cuda12]==0.8.")
    assert not any("has no wheels for linux-x86_64" in r.reason for r in res.rejections)


# jax's own METADATA (PyPI wheels, read 2026-12-02): extra "cuda" requires exactly what "cuda12"
# does from 0.4.30; from 0.4.16 to 0.4.29 it is a CUDA jaxlib from JAX's find-links page for a
# locally installed CUDA (what cuda11_local / cuda12_local require).
@pytest.mark.parametrize("spec, chosen", [
    ("jax[cuda]", "cu12"),
    ("jax[cuda]==0.10.2", "cu12"),
    ("jax[cuda]==0.4.35", "cu12"),
])
def test_jax_cuda_is_the_alias_its_metadata_says(matrices, spec, chosen):
    from cudafit.records import GpuInfo, Machine, Policy
    from cudafit.resolution import resolve

    machine = Machine(os="linux", arch="x86_64", python="3.12", driver="580.65.06", gpus=(GpuInfo("NVIDIA H100 80GB HBM3", (9, 0)),))
    res = resolve([spec], machine, matrices, Policy())
    assert res.ok, res.conflicts
    assert [c.tag for c in res.candidates if c.family == "jax"] == [chosen]


def test_jax_cuda_before_the_plugins_is_the_local_flavour_cudafit_has_no_data_for(matrices):
    from cudafit.records import GpuInfo, Machine, Policy
    from cudafit.resolution import resolve

    machine = Machine(os="linux", arch="x86_64", python="3.11", driver="580.65.06", gpus=(GpuInfo("NVIDIA H100 80GB HBM3", (9, 0)),))
    res = resolve(["jax[cuda]==0.4.26"], machine, matrices, Policy())
    assert not res.ok
    reasons = [r.reason for r in res.rejections if r.family == "jax"]
    assert any("cuda12-local" in r and "requires what jax[cuda12_local] does" in r for r in reasons), reasons


def test_an_alias_must_name_extras_of_its_release(tmp_path):
    import shutil

    from cudafit.errors import DataError
    from cudafit.loader import data_dir, load

    copy = tmp_path / "m"
    shutil.copytree(data_dir(), copy)
    path = copy / "jax" / "jax-0.8.toml"
    path.write_text(path.read_text().replace('aliases = { cuda = "cuda12" }', 'aliases = { cuda = "cuda99" }', 1))
    with pytest.raises(DataError, match="aliases"):
        load(copy)


def test_jax_cuda_without_a_driver_says_so_first(matrices):
    """The newest releases are ruled out by the missing driver: that is the cause, said first,
    not the older releases' extras (found by a newcomer's sweep)."""
    from cudafit.records import Machine, Policy
    from cudafit.resolution import resolve

    machine = Machine(os="linux", arch="x86_64", python="3.12", driver=None, driver_known=True, gpus=(), gpus_known=True)
    res = resolve(["jax[cuda]"], machine, matrices, Policy())
    assert not res.ok and res.conflicts[0].startswith("accelerator: jax 0.12") and "no NVIDIA driver" in res.conflicts[0], res.conflicts


def test_jax_cuda_beside_the_flavour_it_repeats_is_one_flavour(matrices):
    """`jax[cuda,cuda12]` asks one flavour (cuda is cuda12 from 0.4.30); `jax[cuda,cuda13]` two."""
    from cudafit.records import GpuInfo, Machine, Policy
    from cudafit.resolution import resolve

    machine = Machine(os="linux", arch="x86_64", python="3.12", driver="580.65.06", gpus=(GpuInfo("NVIDIA H100 80GB HBM3", (9, 0)),))
    res = resolve(["jax[cuda,cuda12]"], machine, matrices, Policy())
    assert res.ok and [c.tag for c in res.candidates] == ["cu12"]
    res = resolve(["jax[cuda,cuda13]"], machine, matrices, Policy())
    assert not res.ok and any("one CUDA flavour per environment" in c for c in res.conflicts), res.conflicts


def test_the_type_checker_holds_every_provider_to_the_protocol():
    # frameworks/conformance.py assigns each provider to a Provider-typed name; mypy checks it there
    from cudafit.frameworks import conformance

    assert [p.FAMILY for p in conformance.PROVIDERS] == list(frameworks.families())
