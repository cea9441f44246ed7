"""What the data knows, fact by fact: one row per framework, release, build and platform, with the
evidence grade of each fact, so that a maintainer sees the holes at a glance (`cudafit data coverage`).

TensorFlow and JAX data carry no grades yet: their known facts show as "ungraded"."""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple, Optional

from cudafit.records import Matrices

FACTS = ("exists", "cuda", "cudnn", "sass", "ptx", "pins")
UNKNOWN = "unknown"
UNGRADED = "ungraded"  # known, from a data file that does not grade its facts yet
NOT_APPLICABLE = "n/a"  # a CPU build has no CUDA, cuDNN or GPU code
_SHORT = {"measured": "M", "declared": "D", "reported": "R", UNKNOWN: "?", UNGRADED: "u", NOT_APPLICABLE: "-"}


class CoverageRow(NamedTuple):
    framework: str
    release: str
    variant: str
    platform: str
    facts: dict[str, str]  # fact -> grade | unknown | ungraded | n/a
    sources: dict[str, tuple[str, ...]]  # fact -> source keys (graded facts only)

    @property
    def has_hole(self) -> bool:
        return any(g in (UNKNOWN, "reported") for g in self.facts.values())


def coverage_rows(matrices: Matrices, frameworks: Optional[tuple[str, ...]] = None, *, holes_only: bool = False
                  ) -> list[CoverageRow]:
    wanted = frameworks or ("torch", "tensorflow", "jax", "onnxruntime-gpu")
    rows: list[CoverageRow] = []
    if "torch" in wanted:
        rows += _torch(matrices)
    if "tensorflow" in wanted:
        rows += _tensorflow(matrices)
    if "jax" in wanted:
        rows += _jax(matrices)
    if "onnxruntime-gpu" in wanted:
        rows += _onnxruntime(matrices)
    return [r for r in rows if r.has_hole] if holes_only else rows


def _torch(matrices: Matrices) -> list[CoverageRow]:
    rows = []
    for release in matrices.torch:
        for variant in release.variants:
            if variant.kind == "cuda":
                facts = {fact: variant.grade(fact) for fact in FACTS}
            else:
                facts = {fact: NOT_APPLICABLE for fact in FACTS}
                facts["exists"] = variant.grade("exists")
            sources = {fact: ev.source for fact, ev in variant.evidence.items() if fact in FACTS}
            for platform in sorted(variant.platforms):
                rows.append(CoverageRow("torch", str(release.version), variant.tag, platform, facts, sources))
    return rows


def _known(value: object) -> str:
    return UNKNOWN if value is None else UNGRADED


def _tensorflow(matrices: Matrices) -> list[CoverageRow]:
    rows = []
    for release in matrices.tensorflow:
        for platform in sorted(release.gpu_platforms):
            # Before 2.14 pip brings no CUDA (it is the system's or conda's): no pins to know.
            pins = UNGRADED if release.and_cuda is not None else (UNKNOWN if "and-cuda" in release.extras else NOT_APPLICABLE)
            facts = {"exists": UNGRADED, "cuda": _known(release.cuda), "cudnn": _known(release.cudnn),
                     "sass": _known(release.sass), "ptx": _known(release.ptx), "pins": pins}
            rows.append(CoverageRow("tensorflow", str(release.version), "cuda", platform, facts, {}))
    return rows


def _jax(matrices: Matrices) -> list[CoverageRow]:
    rows = []
    for release in matrices.jax:
        for flavour in release.cuda:
            facts = {"exists": UNGRADED, "cuda": _known(flavour.cuda_min), "cudnn": _known(flavour.cudnn_min),
                     "sass": _known(flavour.sass), "ptx": _known(flavour.ptx), "pins": _known(flavour.pins)}
            for platform in sorted(flavour.platforms):
                rows.append(CoverageRow("jax", str(release.version), flavour.flavour, platform, facts, {}))
    return rows


def _onnxruntime(matrices: Matrices) -> list[CoverageRow]:
    rows = []
    for release in matrices.frameworks.get("onnxruntime-gpu", ()):
        for build in release.builds:
            facts = {fact: (build.evidence[fact].grade if fact in build.evidence else UNKNOWN) for fact in FACTS}
            sources = {fact: ev.source for fact, ev in build.evidence.items() if fact in FACTS}
            for platform in sorted(build.platforms):
                rows.append(CoverageRow("onnxruntime-gpu", str(release.version), build.flavour, platform, facts, sources))
    return rows


def summary(rows: list[CoverageRow]) -> dict[str, dict[str, int]]:
    """framework -> grade -> how many facts carry it."""
    out: dict[str, Counter] = {}
    for row in rows:
        out.setdefault(row.framework, Counter()).update(g for g in row.facts.values() if g != NOT_APPLICABLE)
    return {fw: dict(sorted(counts.items())) for fw, counts in out.items()}


def coverage_json(rows: list[CoverageRow]) -> dict:
    return {
        "facts": list(FACTS),
        "summary": summary(rows),
        "rows": [{"framework": r.framework, "release": r.release, "variant": r.variant, "platform": r.platform,
                  "facts": {f: {"grade": g, **({"source": list(r.sources[f])} if f in r.sources else {})}
                            for f, g in r.facts.items()}}
                 for r in rows],
    }


def coverage_text(rows: list[CoverageRow]) -> str:
    if not rows:
        return "no rows\n"
    width = max(len(f"{r.framework} {r.release}+{r.variant} {r.platform}") for r in rows)
    lines = [f"{'build':<{width}}  " + " ".join(f"{f:<6}" for f in FACTS)]
    for r in rows:
        label = f"{r.framework} {r.release}+{r.variant} {r.platform}"
        lines.append(f"{label:<{width}}  " + " ".join(f"{_SHORT[r.facts[f]]:<6}" for f in FACTS))
    lines.append("")
    lines.append("M measured (read from the shipped wheel)  D declared (the project's build configuration or release "
                 "documents)  R reported (a third party)  ? unknown  u known, not yet graded  - not applicable")
    for framework, counts in summary(rows).items():
        lines.append(f"{framework}: " + ", ".join(f"{n} {grade}" for grade, n in counts.items()))
    return "\n".join(lines) + "\n"
