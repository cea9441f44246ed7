"""Precision and kernel fit (issue 30): which precisions and fast kernels each GPU gets with the
chosen framework versions, from matrices/kernels.toml, said by resolve before the run."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from packaging.version import Version

from cudafit.cli import main
from cudafit.kernel_fit import fit
from cudafit.loader import load
from cudafit.records import GpuInfo

LINUX = ["--os", "linux", "--arch", "x86_64", "--python", "3.12"]


def gpu(name: str, cc: tuple[int, int]) -> GpuInfo:
    return GpuInfo(name=name, compute_capability=cc, vendor="nvidia")


def judged(cc: tuple[int, int], **versions: str) -> dict[tuple[str, str], object]:
    fits = fit((gpu("G", cc),), {k.replace("_", "-"): Version(v) for k, v in versions.items()}, load().kernels)
    return {(f.feature, f.framework): f for f in fits}


def test_every_fact_is_a_range_that_holds_something():
    facts = load().kernels
    assert len(facts) >= 40 and len({f.id for f in facts}) == len(facts)
    for f in facts:
        assert f.max_cc is None or f.max_cc >= f.min_cc, f.id
        assert f.sources and f.grade in ("measured", "declared", "reported"), f.id


@pytest.mark.parametrize(
    "torch, outside",
    [("2.2.2", "error"), ("2.3.1", "slow"), ("2.14.1", "slow")],  # autocast refused bf16 below sm_80 up to 2.2; emulated since
)
def test_bf16_on_a_t4_is_what_the_torch_version_makes_of_it(torch, outside):
    fits = judged((7, 5), torch=torch)
    assert fits[("bf16", "torch")].available is False and fits[("bf16", "torch")].outside == outside
    assert fits[("bf16", "")].available is False and fits[("fp16-tensor-cores", "")].available is True


@pytest.mark.parametrize(
    "cc, torch, available",
    [((7, 5), "2.1.2", True), ((7, 5), "2.2.2", False), ((12, 0), "2.6.0", False), ((12, 0), "2.7.1", True), ((9, 0), "2.5.1", True)],
)
def test_torchs_flash_attention_backend_follows_its_version_and_the_gpu(cc, torch, available):
    # flash SDPA: sm_75-sm_90 in 2.0-2.1, sm_80-sm_90 in 2.2-2.6, sm_80-sm_121 from 2.7
    assert judged(cc, torch=torch)[("sdpa-flash", "torch")].available is available


def test_hardware_number_formats():
    h100, ada, rtx5090, a100 = judged((9, 0)), judged((8, 9)), judged((12, 0)), judged((8, 0))
    assert h100[("fp8", "")].available and ada[("fp8", "")].available and not a100[("fp8", "")].available
    assert rtx5090[("fp4", "")].available and not h100[("fp4", "")].available
    assert a100[("tf32", "")].available and not judged((7, 0))[("tf32", "")].available


def test_resolve_says_it_per_gpu_with_evidence_in_json():
    args = ["resolve", "torch", "--gpu", "Tesla T4", "--gpu", "NVIDIA H100 80GB HBM3", "--driver", "580.65.06", *LINUX]
    text = CliRunner().invoke(main, args).stdout
    t4 = next(line for line in text.splitlines() if line.startswith("kernels: Tesla T4 (sm_75)"))
    assert "not: bf16 (runs slowly in torch" in t4 and "SDPA flash (falls back" in t4
    h100 = next(line for line in text.splitlines() if line.startswith("kernels: NVIDIA H100 80GB HBM3 (sm_90)"))
    assert "FP8" in h100.split("; not:")[0] and "FP4 (absent)" in h100
    doc = json.loads(CliRunner().invoke(main, [*args, "--json"]).stdout)
    bf16 = next(k for k in doc["kernels"] if k["gpu"] == "Tesla T4" and k["feature"] == "bf16" and k["framework"] == "torch")
    assert bf16["available"] is False and bf16["outside"] == "slow" and bf16["evidence"]["grade"] == "declared" and bf16["evidence"]["source"]


def test_a_library_chosen_brings_its_own_kernels():
    result = CliRunner().invoke(main, ["resolve", "torch", "flash-attn", "--gpu", "NVIDIA A100-SXM4-80GB", "--driver", "580.65.06", *LINUX])
    assert "FlashAttention-2 (flash-attn)" in result.stdout


def test_no_gpu_no_kernel_line():
    result = CliRunner().invoke(main, ["resolve", "torch", "--driver", "none", *LINUX])
    assert "kernels:" not in result.stdout


def test_doctor_says_it_for_the_installed_torch(tmp_path):
    from doctor_env import PY, FakeEnv

    env = FakeEnv(tmp_path / "venv")
    env.torch("2.14.1+cu126", "12.6")
    machine = ["--os", "linux", "--arch", "x86_64", "--python", PY, "--driver", "580.65.06", "--gpu", "Tesla T4"]
    result = CliRunner().invoke(main, ["doctor", "--env", str(env.prefix), *machine])
    line = next(line for line in result.stdout.splitlines() if line.startswith("kernels: Tesla T4 (sm_75)"))
    assert "bf16 (runs slowly in torch 2.14.1)" in line
    doc = json.loads(CliRunner().invoke(main, ["doctor", "--env", str(env.prefix), *machine, "--json"]).stdout)
    assert any(k["feature"] == "sdpa-flash" and k["available"] is False for k in doc["kernels"])
