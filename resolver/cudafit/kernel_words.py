"""Precision and kernel fit worded (resolve's and doctor's text and JSON), from kernel_fit's values."""

from __future__ import annotations

from typing import Iterable

from cudafit.kernel_fit import DOES_NOT_RUN, Fit, Part, shown

_FEATURE_WORDS = {
    "fp16-tensor-cores": "fp16 Tensor Cores",
    "bf16": "bf16",
    "tf32": "TF32",
    "tf32-matmul": "TF32 matmul",
    "tf32-cudnn": "TF32 convolutions",
    "fp8": "FP8",
    "fp4": "FP4",
    "mxfp4": "MXFP4",
    "nvfp4": "NVFP4",
    "sdpa-flash": "SDPA flash",
    "sdpa-mem-efficient": "SDPA memory-efficient",
    "sdpa-cudnn": "SDPA cuDNN",
    "flash-attention-2": "FlashAttention-2",
    "flash-attention-3": "FlashAttention-3",
    "xformers-memory-efficient-attention": "memory_efficient_attention",
    "bnb-llm-int8": "LLM.int8",
}
_OUTSIDE = {"slow": "runs slowly", "falls-back": "falls back", "error": "fails", "unavailable": "absent"}


def kernels_text(fits: Iterable[Fit]) -> list[str]:
    """A line per GPU: what the GPU has in hardware, then what each framework version gets on it
    (marked opt-in where the framework leaves it off until asked) and what it does instead where
    it gets a feature not (matrices/kernels.toml):

    kernels: Tesla T4 (sm_75): the GPU has fp16 Tensor Cores but not bf16, TF32, FP8, FP4;
    torch 2.15.0 gets SDPA memory-efficient but not bf16 (runs slowly), FP8 (fails), ..."""
    return [f"kernels: {label}: " + "; ".join(_clause(p) for p in parts) for label, parts in shown(list(fits)).items()]


def _clause(part: Part) -> str:
    owner = f"{part.framework} {part.version}" if part.framework else "the GPU"
    stop = next((f for f in part.fits if f.feature == DOES_NOT_RUN), None)
    if stop is not None:
        return f"{owner} does not run on it ({stop.note})"
    verb = "gets" if part.framework else "has"
    has = [_FEATURE_WORDS[f.feature] + (" (opt-in)" if f.opt_in else "") for f in part.fits if f.available]
    # the GPU's lack is the lack; a framework's says what happens instead
    lacks = [_FEATURE_WORDS[f.feature] + (f" ({_OUTSIDE.get(f.outside, f.outside)})" if part.framework else "") for f in part.fits if not f.available]
    if not has:
        return f"{owner} {verb} no {', '.join(lacks)}"
    return f"{owner} {verb} {', '.join(has)}" + (f" but not {', '.join(lacks)}" if lacks else "")


def kernels_json(fits: Iterable[Fit]) -> list[dict]:
    """Every fact judged, one per (gpu, feature, framework): the hardware's with framework null,
    apart from the frameworks'; `opt_in` only where it is true."""
    return [
        {
            "gpu": f.gpu,
            "arch": f.arch,
            "feature": f.feature,
            "framework": f.framework or None,
            "version": f.version or None,
            "available": f.available,
            **({"outside": f.outside} if not f.available else {}),
            **({"opt_in": True} if f.opt_in else {}),
            "evidence": {"grade": f.grade, "source": list(f.sources)},
        }
        for f in fits
        if f.feature != DOES_NOT_RUN
    ]
