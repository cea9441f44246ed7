"""PyTorch's wheel-variant labels (matrices/torch-variants.toml, from the `variants.json` it
published with its variant wheels) read as declared evidence, and where a label promises more than
a platform's build of its tag carries: one label stands for every platform, while the builds
differ per platform (the aarch64 cu126 build has SASS for sm_80 and sm_90 only)."""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

from cudafit.fields import Entry, read_str, read_str_list, table_entries
from cudafit.records import Build, Matrices

FILE = "torch-variants.toml"


class VariantLabel(NamedTuple):
    torch: str  # "2.10.0"
    label: str  # "cuda12.6"
    tag: str  # the index build it repacks: "cu126"
    sm_real: frozenset[tuple[int, int]] = frozenset()  # nvidia :: sm_arch :: NN_real
    sm_virtual: frozenset[tuple[int, int]] = frozenset()  # nvidia :: sm_arch :: NN_virtual (PTX)
    cuda_lower: str = ""  # nvidia :: cuda_version_lower_bound
    gfx: frozenset[str] = frozenset()  # amd :: gfx_arch
    sources: tuple[str, ...] = ()


class Mislabel(NamedTuple):
    label: VariantLabel
    platform: str
    claims: tuple[str, ...]  # what the label says that the platform's build does not carry ("sm_70 SASS")
    build_grade: str  # how the build's own list is known


def read(doc: dict, dates: list[str]) -> tuple[VariantLabel, ...]:
    out = []
    for e in table_entries(FILE, doc, "label", "label", dates):
        raw = e.raw
        sm = e.get("sm_arch", read_str_list, required=False, default=[])
        real, virtual = _sm(e, sm)
        out.append(
            VariantLabel(
                torch=e.get("torch", read_str),
                label=e.get("label", read_str),
                tag=e.get("tag", read_str),
                sm_real=real,
                sm_virtual=virtual,
                cuda_lower=e.get("cuda_version_lower_bound", read_str, required=False, default=""),
                gfx=frozenset(e.get("gfx_arch", read_str_list, required=False, default=[])),
                sources=tuple(raw.get("source", ())),
            )
        )
        e.finish()
    return tuple(out)


def _sm(e: Entry, values: list[str]) -> tuple[frozenset[tuple[int, int]], frozenset[tuple[int, int]]]:
    real: set[tuple[int, int]] = set()
    virtual: set[tuple[int, int]] = set()
    for value in values:
        number, _, kind = value.partition("_")
        if kind not in ("real", "virtual") or not number.isdigit() or len(number) < 2:
            raise e.fail("sm_arch", f"{value!r} is not an sm_arch value like 86_real or 120_virtual")
        (real if kind == "real" else virtual).add((int(number[:-1]), int(number[-1])))
    return frozenset(real), frozenset(virtual)


def audit(matrices: Matrices) -> list[Mislabel]:
    """Each label against the builds of its tag, per platform, where their lists are known."""
    out = []
    releases = {str(r.version): r for r in matrices.torch}
    for label in matrices.torch_variant_labels:
        release = releases.get(label.torch)
        if release is None:
            continue
        for build in release.builds:
            if build.tag != label.tag:
                continue
            for platform in sorted(build.platforms):
                claims, grade = _claims(label, build)
                if claims:
                    out.append(Mislabel(label, platform, claims, grade))
    return out


def _claims(label: VariantLabel, build: Build) -> tuple[tuple[str, ...], str]:
    if label.gfx:
        if build.gfx is None:
            return (), "unknown"
        missing = sorted(label.gfx - build.gfx) + sorted(t for t in label.gfx & build.gfx_no_blas)
        words = [f"{t} kernels" if t not in build.gfx else f"{t} rocBLAS kernels" for t in missing]
        grade = build.grade("gfx") if not (label.gfx & build.gfx_no_blas) else f"{build.grade('gfx')}; rocBLAS gaps {build.grade('gfx_no_blas')}"
        return tuple(words), grade
    if build.sass is None:
        return (), "unknown"
    # a GPU the label names runs the build where some SASS of its major and no higher minor, or
    # some PTX no newer than it, is there (sm_86 runs sm_80's code)
    ptx = build.ptx or frozenset()
    words = [f"kernels for sm_{a}{b}" for a, b in sorted(label.sm_real) if not _runs((a, b), build.sass, ptx)]
    if build.ptx is not None:
        words += [f"compute_{a}{b} PTX" for a, b in sorted(label.sm_virtual - build.ptx)]
    grades = {build.grade("sass")} | ({build.grade("ptx")} if label.sm_virtual else set())
    return tuple(words), "/".join(sorted(grades))


def _runs(cc: tuple[int, int], sass: frozenset[tuple[int, int]], ptx: frozenset[tuple[int, int]]) -> bool:
    return any(s[0] == cc[0] and s[1] <= cc[1] for s in sass) or any(p <= cc for p in ptx)


def words(m: Mislabel) -> str:
    return (
        f"torch {m.label.torch}'s variant label {m.label.label} ({m.label.tag} builds) promises {', '.join(m.claims)}, which its {m.platform} build "
        f"does not carry [label declared ({', '.join(m.label.sources)}); the build's list {m.build_grade}]"
    )


def as_dict(m: Mislabel) -> dict[str, Any]:
    return {"torch": m.label.torch, "label": m.label.label, "tag": m.label.tag, "platform": m.platform, "claims": list(m.claims), "build_grade": m.build_grade}


def label_of(matrices: Matrices, torch: str, tag: str) -> Optional[VariantLabel]:
    return next((v for v in matrices.torch_variant_labels if v.torch == torch and v.tag == tag), None)
