"""Local version labels (+cu128) name one build, in specs and in --why, as pip's rules for local
versions do: torch==2.10.0 matches every build of 2.10.0, torch==2.10.0+cu128 only that one."""

from __future__ import annotations

import pytest
from packaging.specifiers import SpecifierSet

from cudafit.frameworks.pytorch import split_locals
from cudafit.machine import MachineOptions, build_machine
from cudafit.records import Policy
from cudafit.resolution import resolve, why_not


def _never_read(*args, **kwargs):
    raise AssertionError("a machine described whole read this machine's driver")


@pytest.mark.parametrize("specs, public, tags", [
    ({"torch": SpecifierSet("==2.10.0+cu128")}, {"torch": "==2.10.0"}, {"cu128"}),
    ({"torch": SpecifierSet("==2.10.0")}, {"torch": "==2.10.0"}, set()),
    ({"torch": SpecifierSet(">=2.4,==2.10.0+CU128")}, {"torch": ">=2.4,==2.10.0"}, {"cu128"}),
    ({"torch": SpecifierSet("==2.10.0+cu126"), "torchvision": SpecifierSet("==0.25.0+cu126")},
     {"torch": "==2.10.0", "torchvision": "==0.25.0"}, {"cu126"}),
])
def test_split_locals(specs, public, tags):
    got_public, got_tags = split_locals(specs)
    assert {k: SpecifierSet(v) for k, v in public.items()} == got_public
    assert got_tags == tags


def _resolve(matrices, *specs: str):
    machine = build_machine(MachineOptions(driver="535.104.05", gpus=("NVIDIA GeForce RTX 3090",), os="linux",
                                           arch="x86_64", python="3.12"), matrices, reader=_never_read)
    return resolve(list(specs), machine, matrices, Policy())


def test_two_different_builds_named_is_a_conflict(matrices):
    res = _resolve(matrices, "torch==2.10.0+cu128", "torchvision==0.25.0+cu126")
    assert not res.ok


def test_why_accepts_a_local_version(matrices):
    res = _resolve(matrices, "torch")
    lines = why_not("torch==2.14.1+cu130", res, matrices)
    assert lines == ["torch 2.14.1+cu130: driver 535.104.05 < 580 (CUDA 13.x minor-version compatibility floor)"]
    assert why_not("torch==2.14.1+cu126", res, matrices)[0].startswith("torch 2.14.1+cu126 is part of the answer")
    assert why_not("torch==2.14.1+cu999", res, matrices) == ["torch 2.14.1+cu999 is not in cudafit's data for this platform"]


def test_unknown_driver_answers_per_floor(matrices):
    machine = build_machine(MachineOptions(gpus=("NVIDIA GeForce RTX 3090",), os="linux", arch="x86_64", python="3.12"),
                            matrices, reader=_never_read)
    res = resolve(["torch"], machine, matrices, Policy())
    rows = {a.cuda_major: a for a in res.by_driver_floor}
    assert set(rows) == {11, 12, 13}
    assert rows[12].chosen and not rows[13].chosen and not rows[11].chosen
    assert [p.requirement for p in res.packages] == list(rows[12].requirements)
    assert rows[13].driver_min == "580" and rows[11].driver_min == "455.23"  # 450.80.02 raised to Ampere's R455: its first driver a toolkit names (CUDA 11.1)
    assert res.machine.driver is None and not res.machine.driver_known


def test_a_driver_that_did_not_answer_is_said_so(matrices):
    from cudafit.detection import DriverReading
    from cudafit.report import describe_machine

    def failed(*_a, **_k):
        return DriverReading(None, False, (), False, None, ("nvidia-smi failed: couldn't communicate with the NVIDIA driver",))

    machine = build_machine(MachineOptions(os="linux", arch="x86_64", python="3.12"), matrices, reader=failed)
    res = resolve(["torch"], machine, matrices, Policy())
    assert "driver did not answer" in describe_machine(res)
    assert res.by_driver_floor


def test_conflicts_lead_with_the_cause_and_json_keeps_every_rejection():
    import json

    from click.testing import CliRunner

    from cudafit.cli import main

    args = ["resolve", "torch", "--os", "linux", "--arch", "x86_64", "--python", "3.12", "--driver", "560.35.03",
            "--gpu", "NVIDIA GeForce RTX 5090"]
    text = CliRunner().invoke(main, args)
    assert text.exit_code == 1
    lines = [line for line in text.stdout.splitlines() if line.startswith("  - ")]
    assert "predates Blackwell support" in lines[0]
    assert lines[1].startswith("  - python: torch 1.12.0 to 2.1.2 (") and lines[1].endswith("no wheel for Python 3.12")
    data = json.loads(CliRunner().invoke(main, [*args, "--json"]).stdout)
    assert len(data["rejected"]) > 100
    assert {r["constraint"] for r in data["rejected"]} >= {"driver", "python"}


@pytest.mark.parametrize("specs, expected", [
    (["torch==9.9"], "spec: no torch release in cudafit's data"),
    (["torchvision==9.9"], "spec: no torch release in cudafit's data"),
    (["jax", "jaxlib==99"], "spec: no jax release in cudafit's data"),
])
def test_no_release_matches_the_spec(matrices, specs, expected):
    res = _resolve(matrices, *specs)
    assert not res.ok
    assert any(c.startswith(expected) for c in res.conflicts), res.conflicts
