"""Solver cases as data: tests/cases/resolve/*.toml. Each case describes a machine and a request,
the expected answer, and (in `why`) the source in matrices/ that makes that answer right."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from cudafit.machine import MachineOptions, build_machine
from cudafit.records import Policy
from cudafit.resolution import resolve

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

CASES = sorted((Path(__file__).parent / "cases" / "resolve").glob("*.toml"))


def run_case(case: dict, matrices):
    m = case["machine"]
    opts = MachineOptions(
        driver=m.get("driver"), gpus=tuple(m.get("gpus", ())), compute_capabilities=tuple(m.get("compute_capabilities", ())),
        os=m["os"], arch=m["arch"], python=m["python"], jetson=case.get("jetson", False), macos=case.get("macos"),
    )
    machine = build_machine(opts, matrices, reader=_no_detection)
    policy = Policy(strict_driver=case.get("strict_driver", False), cpu=case.get("cpu", False),
                    mixed_cuda=case.get("mixed_cuda", False))
    return resolve(case["specs"], machine, matrices, policy)


def _no_detection(*_a, **_k):
    raise AssertionError("a described machine must not run nvidia-smi")


def _regenerate(path: Path, res) -> None:
    """CUDAFIT_REGEN=1: the case's expected answer (ok, requirements, cuda) becomes what cudafit
    answers now, and a `*_contain` needle the answer no longer shows becomes the line most like it
    (one it resembles: a needle with no like line stays, and fails); the rest of the file as it is.
    The diff is then reviewed like any change."""
    import difflib

    import tomlkit

    doc = tomlkit.parse(path.read_text())
    expect = doc["expect"]
    wanted: dict = {"ok": res.ok}
    if "requirements" in expect:
        wanted["requirements"] = [p.requirement for p in res.packages]
    if "cuda" in expect and res.candidates:
        wanted["cuda"] = res.candidates[0].cuda
    for key, haystack in (("notes_contain", res.notes), ("conflicts_contain", res.conflicts), ("warnings_contain", res.warnings)):
        if key in expect:
            needles = []
            for needle in expect[key]:
                like = difflib.get_close_matches(needle, [line[: len(needle) + 40] for line in haystack], n=1, cutoff=0.6)
                shown = any(needle in line for line in haystack)
                needles.append(needle if shown or not like else next(line for line in haystack if line.startswith(like[0])))
            wanted[key] = needles
    if any(expect.get(key) != value for key, value in wanted.items()):
        for key, value in wanted.items():
            expect[key] = value
        path.write_text(tomlkit.dumps(doc))
        pytest.skip(f"regenerated {path.name}: review the diff, then run again without CUDAFIT_REGEN")


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_case(path, matrices):
    case = tomllib.loads(path.read_text())
    assert case.get("why"), f"{path.name}: every case cites the source that makes it right"
    expect = case["expect"]
    res = run_case(case, matrices)
    if os.environ.get("CUDAFIT_REGEN"):
        _regenerate(path, res)
    assert res.ok is expect["ok"], (res.conflicts, res.notes)
    if "requirements" in expect:
        assert [p.requirement for p in res.packages] == expect["requirements"], res.notes
    if "index_url" in expect:
        assert all((p.index_url or "") == expect["index_url"] for p in res.packages)
    if "cuda" in expect:
        assert res.candidates[0].cuda == expect["cuda"]
    for key, haystack in (("notes_contain", res.notes), ("conflicts_contain", res.conflicts), ("warnings_contain", res.warnings)):
        for needle in expect.get(key, []):
            assert any(needle in line for line in haystack), f"{needle!r} not in {list(haystack)}"


def test_unsupported_detected_arch_is_a_conflict_not_a_crash(matrices):
    from cudafit.records import Machine

    machine = Machine(os="linux", arch="ppc64le", python="3.12", driver=None)
    res = resolve(["torch"], machine, matrices, Policy())
    assert not res.ok
    assert any("no torch wheels for linux-ppc64le" in c for c in res.conflicts)


def test_a_release_built_against_numpy_1_pins_numpy_below_2():
    # tensorflow 2.10.1's metadata asks numpy>=1.20 and pip takes NumPy 2, with which its import fails
    from click.testing import CliRunner

    from cudafit.cli import main

    machine = ["--os", "windows", "--arch", "x86_64", "--python", "3.10", "--driver", "566.36", "--gpu", "NVIDIA GeForce RTX 3090"]
    result = CliRunner().invoke(main, ["resolve", "tensorflow", *machine, "--format", "pip"])
    assert result.exit_code == 0 and "pip install tensorflow==2.10.1 'numpy<2'" in result.stdout, result.output
    data = json.loads(CliRunner().invoke(main, ["resolve", "tensorflow", *machine, "--json"]).stdout)
    assert data["pins"].get("numpy") == "<2" and any("built against NumPy 1.x" in w for w in data["warnings"])
    # a release built against NumPy 2 gets no such pin
    newer = json.loads(CliRunner().invoke(main, ["resolve", "torch", "--os", "linux", "--arch", "x86_64", "--python", "3.12", "--driver", "580.65.06", "--json"]).stdout)
    assert "numpy" not in newer["pins"]
