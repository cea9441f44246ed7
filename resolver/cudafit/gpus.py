"""GPU name -> model lookup, tolerant of the ways nvidia-smi has spelled names over the years."""

from __future__ import annotations

import re
from typing import Optional

from cudafit.records import GpuModel

_SEPARATORS = re.compile(r"[\s\-_]+")
# Drivers have printed the same card as "Tesla T4", "NVIDIA T4" or "T4"; the brand prefixes carry
# no information about the chip.
_BRAND_PREFIXES = ("nvidia ", "tesla ")


def normalize_gpu_name(name: str) -> str:
    text = _SEPARATORS.sub(" ", name.strip().lower()).strip()
    for prefix in _BRAND_PREFIXES:
        if text.startswith(prefix):
            text = text[len(prefix):]
    return text


def lookup_gpu(table: dict[str, GpuModel], name: str) -> tuple[Optional[GpuModel], Optional[str]]:
    """Return (model, warning). Exact match first, then the longest table name that is a
    word-boundary prefix of `name` (an unlisted form factor of a listed chip)."""
    key = normalize_gpu_name(name)
    model = table.get(key)
    if model is not None:
        return model, None
    words = key.split(" ")
    for n in range(len(words) - 1, 0, -1):
        model = table.get(" ".join(words[:n]))
        if model is not None:
            return model, (
                f"GPU {name!r} is not in the GPU table; taking compute capability "
                f"{model.compute_capability[0]}.{model.compute_capability[1]} from {model.name!r}"
            )
    return None, None
