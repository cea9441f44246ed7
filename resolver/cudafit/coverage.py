"""What the data knows, fact by fact: one row per framework, release, build and platform, with the
evidence grade of each fact, so that a maintainer sees the holes at a glance (`cudafit data coverage`)."""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple, Optional

from cudafit.frameworks import providers
from cudafit.frameworks.library import build_label
from cudafit.records import SCHEMA_VERSION, Build, Matrices

FACTS = ("exists", "cuda", "cudnn", "sass", "ptx", "pins")
UNKNOWN = "unknown"
NOT_APPLICABLE = "n/a"  # a CPU build has no CUDA, cuDNN or GPU code
_SHORT = {"measured": "M", "declared": "D", "reported": "R", UNKNOWN: "?", NOT_APPLICABLE: "-"}


class CoverageRow(NamedTuple):
    framework: str
    release: str
    variant: str
    platform: str
    facts: dict[str, str]  # fact -> grade | unknown | n/a
    sources: dict[str, tuple[str, ...]]  # fact -> source keys (graded facts only)

    @property
    def has_hole(self) -> bool:
        return any(g in (UNKNOWN, "reported") for g in self.facts.values())


def coverage_rows(matrices: Matrices, frameworks: Optional[tuple[str, ...]] = None, *, holes_only: bool = False) -> list[CoverageRow]:
    rows: list[CoverageRow] = []
    for provider in providers():
        if frameworks and provider.FAMILY not in frameworks:
            continue
        for release in provider.releases(matrices):
            for build in release.builds:
                rows += _rows(provider.FAMILY, str(release.version), build)
    return [r for r in rows if r.has_hole] if holes_only else rows


def _rows(framework: str, release: str, build: Build) -> list[CoverageRow]:
    if build.kind == "cuda":
        facts = {fact: build.grade(fact) for fact in FACTS}
    else:
        facts = {fact: NOT_APPLICABLE for fact in FACTS}
        facts["exists"] = build.grade("exists")
    sources = {fact: ev.source for fact, ev in build.evidence.items() if fact in FACTS}
    label = build_label(build)  # tells a library's release assets and source builds apart
    return [CoverageRow(framework, release, label, platform, facts, sources) for platform in sorted(build.platforms)]


def summary(rows: list[CoverageRow]) -> dict[str, dict[str, int]]:
    """framework -> grade -> how many facts carry it."""
    out: dict[str, Counter] = {}
    for row in rows:
        out.setdefault(row.framework, Counter()).update(g for g in row.facts.values() if g != NOT_APPLICABLE)
    return {fw: dict(sorted(counts.items())) for fw, counts in out.items()}


def coverage_json(rows: list[CoverageRow]) -> dict:
    return {
        "schema_version": SCHEMA_VERSION,
        "facts": list(FACTS),
        "summary": summary(rows),
        "rows": [
            {
                "framework": r.framework,
                "release": r.release,
                "variant": r.variant,
                "platform": r.platform,
                "facts": {f: {"grade": g, **({"source": list(r.sources[f])} if f in r.sources else {})} for f, g in r.facts.items()},
            }
            for r in rows
        ],
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
    lines.append(
        "M measured (read from the shipped wheel)  D declared (the project's build configuration or release "
        "documents)  R reported (a third party)  ? unknown  - not applicable"
    )
    for framework, counts in summary(rows).items():
        lines.append(f"{framework}: " + ", ".join(f"{n} {grade}" for grade, n in counts.items()))
    return "\n".join(lines) + "\n"
