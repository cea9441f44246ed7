"""Precision and kernel fit worded (resolve's and doctor's text and JSON), from kernel_fit's values."""

from __future__ import annotations

from typing import Iterable

from cudafit.kernel_fit import Fit, shown

_FEATURE_WORDS = {
    "fp16-tensor-cores": "fp16 Tensor Cores",
    "bf16": "bf16",
    "tf32": "TF32",
    "fp8": "FP8",
    "fp4": "FP4",
    "sdpa-flash": "SDPA flash",
    "sdpa-mem-efficient": "SDPA memory-efficient",
    "sdpa-cudnn": "SDPA cuDNN",
    "flash-attention-2": "FlashAttention-2",
    "flash-attention-3": "FlashAttention-3",
    "xformers-memory-efficient-attention": "xformers attention",
    "bnb-llm-int8": "LLM.int8",
}
_OUTSIDE = {"slow": "runs slowly", "falls-back": "falls back", "error": "fails", "unavailable": "absent"}


def kernels_text(fits: Iterable[Fit]) -> list[str]:
    """A line per GPU: the precisions and kernels it gets with the chosen versions, and those it does
    not, with what happens instead (matrices/kernels.toml)."""
    lines = []
    for label, chosen in shown(list(fits)).items():
        # FlashAttention comes in several packages: say whose
        has = [_FEATURE_WORDS[f.feature] + (f" ({f.framework})" if f.feature.startswith("flash-attention") else "") for f in chosen if f.available]
        lacks = [f"{_FEATURE_WORDS[f.feature]} ({_OUTSIDE.get(f.outside, f.outside)}{_in(f)})" for f in chosen if not f.available]
        lines.append(f"kernels: {label}: {', '.join(has) or 'none of those known'}" + (f"; not: {', '.join(lacks)}" if lacks else ""))
    return lines


def _in(f: Fit) -> str:
    return f" in {f.framework} {f.version}" if f.framework else ""


def kernels_json(fits: Iterable[Fit]) -> list[dict]:
    return [
        {
            "gpu": f.gpu,
            "arch": f.arch,
            "feature": f.feature,
            "framework": f.framework or None,
            "version": f.version or None,
            "available": f.available,
            **({"outside": f.outside} if not f.available else {}),
            "evidence": {"grade": f.grade, "source": list(f.sources)},
        }
        for f in fits
    ]
