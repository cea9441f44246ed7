"""GPU name -> model lookup, tolerant of the ways nvidia-smi has spelled names over the years."""

from __future__ import annotations

import re
from typing import Optional

from cudafit.records import GpuModel

_SEPARATORS = re.compile(r"[\s\-_]+")
# Drivers have printed the same card as "Tesla T4", "NVIDIA T4" or "T4"; the brand prefixes carry
# no information about the chip ("GeForce RTX 3090" is the only RTX 3090).
_BRAND_PREFIXES = ("nvidia ", "tesla ", "geforce ")


def normalize_gpu_name(name: str) -> str:
    text = _SEPARATORS.sub(" ", name.strip().lower()).strip()
    for prefix in _BRAND_PREFIXES:
        if text.startswith(prefix):
            text = text[len(prefix) :]
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


def _unique_models(table: dict[str, GpuModel]) -> list[GpuModel]:
    """Each model once, in the data file's order."""
    seen: dict[str, GpuModel] = {}
    for model in table.values():
        seen.setdefault(model.name, model)
    return list(seen.values())


def suggest_gpus(table: dict[str, GpuModel], name: str, limit: int = 3) -> list[str]:
    """Up to `limit` table names close to `name`: first the names holding every word of it
    ('RTX 3090' -> 'NVIDIA GeForce RTX 3090', '... RTX 3090 Ti'), shortest first, then
    difflib's closest spellings."""
    import difflib

    key = normalize_gpu_name(name)
    words = key.split()
    found: list[str] = []
    if words:
        holders = [(len(k), k, m.name) for k, m in table.items() if all(w in k.split() for w in words)]
        for _, _, full in sorted(holders):
            if full not in found:
                found.append(full)
    # Spelling neighbours only when no name holds every word: 'RTX 3090' must not also offer an A6000.
    for close in [] if found else difflib.get_close_matches(key, list(table), n=limit * 2, cutoff=0.6):
        full = table[close].name
        if full not in found:
            found.append(full)
    return found[:limit]


def _is_glob(pattern: str) -> bool:
    return any(c in pattern for c in "*?[")


def match_gpus(table: dict[str, GpuModel], pattern: Optional[str]) -> list[GpuModel]:
    """The models whose name (or a listed alias) matches `pattern`: a case-insensitive
    substring, or a glob when it holds *, ? or [ (matched against the whole name)."""
    models = _unique_models(table)
    if not pattern:
        return models
    import fnmatch

    spellings: dict[str, list[str]] = {}
    for key, model in table.items():
        spellings.setdefault(model.name, [model.name.lower()]).append(key)
    if _is_glob(pattern):
        pat = pattern.lower()
        return [m for m in models if any(fnmatch.fnmatchcase(s, pat) for s in spellings[m.name])]
    needle = pattern.lower()
    norm = normalize_gpu_name(pattern)
    return [m for m in models if any(needle in s or (norm and norm in s) for s in spellings[m.name])]


def gpu_row(model: GpuModel, architecture: Optional[str]) -> dict[str, object]:
    cc = model.compute_capability
    return {
        "name": model.name,
        "compute_capability": f"{cc[0]}.{cc[1]}",
        "architecture": architecture,
        "memory_gb": model.memory_gb,
        "segment": model.segment,
    }
