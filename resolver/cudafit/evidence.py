"""Words for how the facts of a build are known (their evidence grades and sources)."""

from __future__ import annotations

from functools import lru_cache

from cudafit.records import Evidence

_LABELS = (("exists", "build"), ("sass", "SASS"), ("ptx", "PTX"), ("cudnn", "cuDNN"), ("pins", "pins"))


def describe(evidence: dict[str, Evidence], cuda: bool = True) -> str:
    """'facts: build, SASS, PTX measured (wheel-2.14); cuDNN declared (install-cuda)': the grade
    and sources each fact rests on, grouped so that the line stays short."""
    return _describe(tuple(evidence.items()), cuda)


@lru_cache(maxsize=512)  # builds of one release line share their evidence: each is worded once
def _describe(items: tuple[tuple[str, Evidence], ...], cuda: bool) -> str:
    evidence = dict(items)
    groups: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    unknown = []
    # A build without CUDA has no kernels or cuDNN to grade; a library's still names its torch.
    labels = _LABELS if cuda else [(f, label) for f, label in _LABELS if f == "exists" or (f == "pins" and f in evidence)]
    for fact, label in labels:
        found = evidence.get(fact)
        if found is None:
            unknown.append(label)
        else:
            groups.setdefault((found.grade, found.source), []).append(label)
    parts = [f"{', '.join(labels)} {grade} ({_sources(source)})" for (grade, source), labels in groups.items()]
    if unknown:
        parts.append(f"{', '.join(unknown)} unknown")
    return "facts: " + "; ".join(parts)


def _sources(keys: tuple[str, ...]) -> str:
    # A build shared by many patch releases cites each one's metadata; --json lists them all.
    if len(keys) > 4:
        return f"{', '.join(keys[:2])} and {len(keys) - 2} more"
    return ", ".join(keys)


# The facts an answer grades for a build: all six for a CUDA build, its existence for the others.
CUDA_FACTS = ("exists", "cuda", "cudnn", "sass", "ptx", "pins")


def graded_facts(facts: dict[str, Evidence], cuda: bool) -> dict[str, Evidence]:
    """Each fact an answer shows for a build, with its evidence (unknown where the data has none):
    what `resolve --json` prints as packages[].evidence and the API's Package.evidence holds."""
    return {fact: facts.get(fact) or Evidence("unknown", ()) for fact in (CUDA_FACTS if cuda else CUDA_FACTS[:1])}
