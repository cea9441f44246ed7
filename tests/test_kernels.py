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


def line_of(text: str, label: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(f"kernels: {label}: "))


def clauses(line: str) -> list[str]:
    """A kernels line's clauses: the GPU's own, then one per framework."""
    return line.split(": ", 2)[2].split("; ")


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
    assert line_of(text, "Tesla T4 (sm_75)") == (
        "kernels: Tesla T4 (sm_75): the GPU has fp16 Tensor Cores but not bf16, TF32, FP8, FP4; "
        "torch 2.15.0 gets SDPA memory-efficient but not bf16 (runs slowly), FP8 (fails), SDPA flash (falls back), SDPA cuDNN (falls back)"
    )
    assert line_of(text, "NVIDIA H100 80GB HBM3 (sm_90)") == (
        "kernels: NVIDIA H100 80GB HBM3 (sm_90): the GPU has fp16 Tensor Cores, bf16, TF32, FP8 but not FP4; "
        "torch 2.15.0 gets bf16, TF32 matmul (opt-in), TF32 convolutions, FP8, SDPA flash, SDPA memory-efficient, SDPA cuDNN"
    )
    doc = json.loads(CliRunner().invoke(main, [*args, "--json"]).stdout)
    bf16 = next(k for k in doc["kernels"] if k["gpu"] == "Tesla T4" and k["feature"] == "bf16" and k["framework"] == "torch")
    assert bf16["available"] is False and bf16["outside"] == "slow" and bf16["evidence"]["grade"] == "declared" and bf16["evidence"]["source"]


def test_a_library_chosen_brings_its_own_kernels():
    result = CliRunner().invoke(main, ["resolve", "torch", "flash-attn", "--gpu", "NVIDIA A100-SXM4-80GB", "--driver", "580.65.06", *LINUX])
    flash_attn = clauses(line_of(result.stdout, "NVIDIA A100-SXM4-80GB (sm_80)"))[-1]
    assert flash_attn.startswith("flash-attn 2.") and " gets FlashAttention-2" in flash_attn


def test_no_gpu_no_kernel_line():
    result = CliRunner().invoke(main, ["resolve", "torch", "--driver", "none", *LINUX])
    assert "kernels:" not in result.stdout


def test_doctor_says_it_for_the_installed_torch(tmp_path):
    from doctor_env import PY, FakeEnv

    env = FakeEnv(tmp_path / "venv")
    env.torch("2.14.1+cu126", "12.6")
    machine = ["--os", "linux", "--arch", "x86_64", "--python", PY, "--driver", "580.65.06", "--gpu", "Tesla T4"]
    result = CliRunner().invoke(main, ["doctor", "--env", str(env.prefix), *machine])
    line = line_of(result.stdout, "Tesla T4 (sm_75)")
    assert "; torch 2.14.1 gets SDPA memory-efficient but not bf16 (runs slowly)," in line
    doc = json.loads(CliRunner().invoke(main, ["doctor", "--env", str(env.prefix), *machine, "--json"]).stdout)
    assert any(k["feature"] == "sdpa-flash" and k["available"] is False for k in doc["kernels"])


# -- what is whose: the GPU's hardware apart from each framework's own facts -------------------


def resolve_lines(*specs: str, gpu_name: str) -> tuple[str, dict]:
    args = ["resolve", *specs, "--gpu", gpu_name, "--driver", "580.65.06", *LINUX]
    text = CliRunner().invoke(main, args).stdout
    doc = json.loads(CliRunner().invoke(main, [*args, "--json"]).stdout)
    return text, doc


def test_an_rtx_5090_with_tensorflow_has_fp8_and_fp4_in_hardware_only():
    text, doc = resolve_lines("tensorflow", gpu_name="NVIDIA GeForce RTX 5090")
    gpu_clause, tf = clauses(line_of(text, "NVIDIA GeForce RTX 5090 (sm_120)"))
    assert gpu_clause == "the GPU has fp16 Tensor Cores, bf16, TF32, FP8, FP4"
    assert tf.startswith("tensorflow 2.") and " gets fp16 Tensor Cores, TF32" in tf and "FP8" not in tf and "FP4" not in tf
    assert not any(k["framework"] == "tensorflow" and k["feature"] in ("fp8", "fp4", "mxfp4", "nvfp4") for k in doc["kernels"])


def test_an_rtx_5090_with_torch_says_which_fp4_torch_runs():
    text, doc = resolve_lines("torch", gpu_name="NVIDIA GeForce RTX 5090")
    assert clauses(line_of(text, "NVIDIA GeForce RTX 5090 (sm_120)")) == [
        "the GPU has fp16 Tensor Cores, bf16, TF32, FP8, FP4",
        "torch 2.15.0 gets bf16, TF32 matmul (opt-in), TF32 convolutions, FP8, NVFP4, SDPA flash, SDPA memory-efficient, SDPA cuDNN (opt-in)"
        " but not MXFP4 (fails)",
    ]
    found = {(k["feature"], k["framework"]): k for k in doc["kernels"]}
    # torch's MXFP4 op is refused on sm_120 (declared), NVFP4 reported working; the GPU has FP4 itself
    assert found[("mxfp4", "torch")]["available"] is False and found[("mxfp4", "torch")]["outside"] == "error"
    assert found[("nvfp4", "torch")]["available"] is True and found[("nvfp4", "torch")]["evidence"]["grade"] == "reported"
    assert found[("fp4", None)]["available"] is True and ("fp4", "torch") not in found


def test_a_framework_says_a_format_the_gpu_lacks_only_where_it_adds_something():
    t4, a100 = judged((7, 5), torch="2.15.0"), judged((8, 0), torch="2.15.0")
    # the T4 has no TF32: torch's silent fallback adds nothing to that, its slow bf16 does
    assert t4[("tf32-matmul", "torch")].outside == "falls-back" and t4[("bf16", "torch")].outside == "slow"
    text, _doc = resolve_lines("torch", gpu_name="Tesla T4")
    torch = clauses(line_of(text, "Tesla T4 (sm_75)"))[1]
    assert "TF32" not in torch and "bf16 (runs slowly)" in torch and "MXFP4" not in torch and "NVFP4" not in torch
    # the A100 has no FP8: torch._scaled_mm refuses it (said), its FP4 formats are the GPU's lack (not said)
    assert a100[("fp8", "torch")].outside == "error" and a100[("mxfp4", "torch")].outside == "error"
    text, _doc = resolve_lines("torch", gpu_name="NVIDIA A100-SXM4-80GB")
    assert clauses(line_of(text, "NVIDIA A100-SXM4-80GB (sm_80)"))[1].endswith(" but not FP8 (fails)")


@pytest.mark.parametrize(
    "cc, versions",
    [
        ((7, 5), {"torch": "2.2.2"}),
        ((8, 0), {"torch": "2.15.0", "xformers": "0.0.33"}),
        ((8, 6), {"torch": "1.11.0"}),
        ((9, 0), {"torch": "2.15.0", "flash-attn": "2.8.3"}),
        ((10, 0), {"torch": "2.15.0", "transformer-engine": "2.8"}),
        ((12, 0), {"torch": "2.15.0", "bitsandbytes": "0.45.0"}),
        ((12, 0), {"tensorflow": "2.21.0", "jax": "0.7.0"}),
    ],
)
def test_each_word_of_the_text_is_the_json_entry_of_its_owner(cc, versions):
    from cudafit.kernel_fit import shown
    from cudafit.kernel_words import _FEATURE_WORDS, kernels_json, kernels_text

    fits = fit((gpu("G", cc),), {k: Version(v) for k, v in versions.items()}, load().kernels)
    doc = kernels_json(fits)
    keys = [(k["gpu"], k["feature"], k["framework"]) for k in doc]
    assert len(keys) == len(set(keys))  # one entry per (gpu, feature, framework): no two facts merged
    by_key = {(k["feature"], k["framework"] or ""): k for k in doc}
    (line,) = kernels_text(fits)
    (parts,) = shown(fits).values()
    said = clauses(line)
    assert len(said) == len(parts) and said[0].startswith("the GPU has ")
    for clause, part in zip(said, parts, strict=True):
        assert clause.startswith(f"{part.framework} {part.version} gets " if part.framework else "the GPU has ")
        for f in part.fits:
            entry = by_key[(f.feature, f.framework)]  # the hardware's under framework null, apart
            assert entry["available"] is f.available and entry.get("opt_in", False) is f.opt_in
            assert _FEATURE_WORDS[f.feature] + (" (opt-in)" if f.opt_in else "") in clause


def test_the_json_keeps_each_tf32_fact_apart():
    fits = judged((8, 0), torch="2.15.0", tensorflow="2.21.0")
    assert fits[("tf32", "")].available and not fits[("tf32", "")].opt_in  # the GPU's TF32 Tensor Cores
    assert fits[("tf32-matmul", "torch")].opt_in and fits[("tf32-matmul", "torch")].sources == ("torch_whl_context_h", "torch_cuda_rst")
    assert not fits[("tf32-cudnn", "torch")].opt_in and not fits[("tf32", "tensorflow")].opt_in  # both on by default
    assert ("tf32", "torch") not in fits


def test_no_two_facts_of_one_name_hold_for_one_framework_version():
    """What the JSON reports per (feature, framework) is one fact: where two could hold for a
    version, one would be dropped unseen (torch's matmul and cuDNN TF32 were, as one `tf32`)."""
    from cudafit.kernel_fit import holds

    facts = load().kernels
    for framework in {fw for f in facts for fw in f.frameworks}:
        bounds = {Version("0.0.1"), Version("99.0")}
        for f in facts:
            for v in (f.since.get(framework), f.until.get(framework)):
                if v is not None:
                    bounds |= {v, Version(".".join(map(str, (*v.release, 99)))), Version(".".join(map(str, v.release[:-1] + (v.release[-1] + 1,))))}
        for version in bounds:
            named = [f.name for f in facts if framework in f.frameworks and holds(f, framework, version)]
            assert len(named) == len(set(named)), (framework, version, sorted(n for n in named if named.count(n) > 1))


# -- a build that does not run on a GPU gets no framework features there (doctor) ----------------


def doctor_run(env, *gpus: str) -> tuple[str, dict]:
    from doctor_env import PY

    machine = ["--os", "linux", "--arch", "x86_64", "--python", PY, "--driver", "580.65.06", *(a for g in gpus for a in ("--gpu", g))]
    text = CliRunner().invoke(main, ["doctor", "--env", str(env.prefix), *machine]).stdout
    return text, json.loads(CliRunner().invoke(main, ["doctor", "--env", str(env.prefix), *machine, "--json"]).stdout)


def test_doctor_gives_no_torch_features_where_its_build_has_no_kernels(tmp_path):
    from doctor_env import FakeEnv, elf

    env = FakeEnv(tmp_path / "venv")
    env.torch("2.8.0+cu128", "12.8")  # the data: no sm_61 SASS, no PTX
    env.dist("xformers", "0.0.32").file("xformers/_C.so", elf(["libcudart.so.12"]))
    text, doc = doctor_run(env, "NVIDIA GeForce GTX 1080", "NVIDIA A100-SXM4-80GB")
    assert any(f["code"] == "DR021" for f in doc["findings"])
    assert clauses(line_of(text, "NVIDIA GeForce GTX 1080 (sm_61)")) == [
        "the GPU has no fp16 Tensor Cores, bf16, TF32, FP8, FP4",
        "torch 2.8.0 does not run on it (torch 2.8.0+cu128 has no kernels for sm_61)",
        "xformers 0.0.32 does not run on it (it runs on torch 2.8.0+cu128, which does not)",
    ]
    gtx = [k for k in doc["kernels"] if k["gpu"] == "NVIDIA GeForce GTX 1080"]
    assert gtx and all(k["framework"] is None for k in gtx)  # the hardware's facts stay
    # the A100 in the same machine runs it
    a100 = clauses(line_of(text, "NVIDIA A100-SXM4-80GB (sm_80)"))
    assert a100[1].startswith("torch 2.8.0 gets bf16") and a100[2] == "xformers 0.0.32 gets memory_efficient_attention"
    assert any(k["gpu"] == "NVIDIA A100-SXM4-80GB" and k["feature"] == "sdpa-mem-efficient" and k["available"] for k in doc["kernels"])


def test_doctor_judges_the_kernels_read_from_the_installed_library(tmp_path):
    from doctor_env import FakeEnv

    env = FakeEnv(tmp_path / "venv")
    env.torch("2.9.0+cu130", "13.0", arch="sm_75 sm_80 sm_86 sm_90 sm_100 sm_120")
    text, doc = doctor_run(env, "NVIDIA GeForce GTX 1080")
    assert clauses(line_of(text, "NVIDIA GeForce GTX 1080 (sm_61)"))[1] == "torch 2.9.0 does not run on it (torch 2.9.0+cu130 has no kernels for sm_61)"
    assert not any(k["framework"] for k in doc["kernels"])
    text, _doc = doctor_run(env, "Tesla T4")
    assert clauses(line_of(text, "Tesla T4 (sm_75)"))[1].startswith("torch 2.9.0 gets SDPA memory-efficient")


# -- xformers' FlashAttention-3: bundled in 0.0.33-0.0.34 only -------------------------------------


@pytest.mark.parametrize("xformers, bundled", [("0.0.33", True), ("0.0.33.post2", True), ("0.0.34", True), ("0.0.35", False)])
def test_xformers_flash_attention_3_ends_where_xformers_stopped_bundling_it(xformers, bundled):
    for cc in ((8, 0), (9, 0)):
        fits = judged(cc, xformers=xformers)
        assert (fits[("flash-attention-3", "xformers")].available if bundled else ("flash-attention-3", "xformers") not in fits)
    fact = next(f for f in load().kernels if f.id == "xformers-fa3")
    assert str(fact.until["xformers"]) == "0.0.34" and "xformers_fa3_bundle" in fact.sources


def test_resolve_with_xformers_0_0_35_on_an_h100_says_no_flash_attention_3():
    text, doc = resolve_lines("torch", "xformers==0.0.35", gpu_name="NVIDIA H100 80GB HBM3")
    assert clauses(line_of(text, "NVIDIA H100 80GB HBM3 (sm_90)"))[-1] == "xformers 0.0.35 gets memory_efficient_attention"
    assert not any(k["feature"] == "flash-attention-3" for k in doc["kernels"])


# -- available, and on by default or opt-in ----------------------------------------------------


@pytest.mark.parametrize(
    "torch, matmul_opt_in",
    [("1.11.0", False), ("1.12.1", True), ("2.15.0", True)],  # matmul TF32 off by default since 1.12
)
def test_torchs_matmul_tf32_is_opt_in_since_1_12_and_cudnns_is_on(torch, matmul_opt_in):
    fits = judged((8, 6), torch=torch)
    assert fits[("tf32-matmul", "torch")].available and fits[("tf32-matmul", "torch")].opt_in is matmul_opt_in
    assert fits[("tf32-cudnn", "torch")].available and not fits[("tf32-cudnn", "torch")].opt_in


@pytest.mark.parametrize(
    "cc, torch, opt_in",
    [
        ((8, 6), "2.4.1", False),  # 2.3-2.5.0: where it stood in the default order was not read: no claim
        ((8, 0), "2.5.1", True),  # 2.5.1-2.8: last, after math, on every GPU
        ((9, 0), "2.6.0", True),
        ((8, 9), "2.8.0", True),
        ((9, 0), "2.9.1", False),  # 2.9: first again on 9.0 and 10.x (behind a cuDNN version gate)
        ((10, 0), "2.15.0", False),
        ((8, 0), "2.15.0", True),  # ... and still opt-in on 8.x and 12.x
        ((8, 6), "2.11.0", True),
        ((12, 0), "2.15.0", True),
    ],
)
def test_sdpa_cudnn_is_said_opt_in_where_torch_leaves_it_last(cc, torch, opt_in):
    found = judged(cc, torch=torch)[("sdpa-cudnn", "torch")]
    assert found.available and found.opt_in is opt_in


def test_opt_in_is_said_in_the_text_and_the_json():
    text, doc = resolve_lines("torch", gpu_name="NVIDIA A100-SXM4-80GB")
    torch = clauses(line_of(text, "NVIDIA A100-SXM4-80GB (sm_80)"))[1]
    assert "TF32 matmul (opt-in), TF32 convolutions," in torch and "SDPA cuDNN (opt-in)" in torch
    opted = {(k["feature"], k["framework"]) for k in doc["kernels"] if k.get("opt_in")}
    assert {("tf32-matmul", "torch"), ("sdpa-cudnn", "torch")} <= opted and ("tf32-cudnn", "torch") not in opted
    assert all(k["available"] for k in doc["kernels"] if "opt_in" in k)


def test_opt_in_reads_true_or_a_list_of_compute_capabilities():
    from cudafit.errors import DataError
    from cudafit.kernel_data import read

    def doc(opt_in: object) -> dict:
        feature = {"id": "x", "name": "x", "min_cc": "8.0", "below": "falls-back", "frameworks": ["torch"], "grade": "declared", "source": ["s"], "opt_in": opt_in}
        return {"schema": 2, "data_date": "2026-12-03", "sources": {"s": "a source"}, "feature": [feature]}

    (fact,) = read(doc(True), [])
    assert fact.opt_in and fact.opt_in_on((8, 6)) and not fact.opt_in_on((7, 5))  # only where it is available
    (fact,) = read(doc(["8.6"]), [])
    assert fact.opt_in_on((8, 6)) and not fact.opt_in_on((9, 0))
    for wrong in (False, [], ["8"]):
        with pytest.raises(DataError, match="opt_in"):
            read(doc(wrong), [])
