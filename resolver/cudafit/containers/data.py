"""matrices/ngc-containers.toml: one record per NGC container release, each fact with its grade."""

from __future__ import annotations

from typing import NamedTuple, Optional

from cudafit.fields import Entry, read_bool, read_grade, read_str, read_str_list, table_entries

FILE = "ngc-containers.toml"
FRAMEWORKS = ("pytorch", "tensorflow", "jax")  # NGC's framework containers the data may hold


class Fact(NamedTuple):
    value: str
    grade: str  # declared | reported


class Container(NamedTuple):
    tag: str  # "25.12"
    framework: str  # pytorch | tensorflow | jax
    image: str  # nvcr.io/nvidia/pytorch:25.12-py3
    cuda: Optional[Fact] = None
    torch: Optional[Fact] = None
    tensorflow: Optional[Fact] = None
    jax: Optional[Fact] = None
    python: Optional[Fact] = None
    driver_branch: Optional[Fact] = None  # the branch it states ("525 or later"); else its CUDA's toolkit driver
    forward_compat: tuple[str, ...] = ()  # older branches it runs on through forward compatibility: "R470 >= 470.57"
    min_cc: Optional[Fact] = None  # the lowest compute capability it supports
    pip_constraint: Optional[bool] = None  # /etc/pip/constraint.txt in the image
    sources: tuple[str, ...] = ()

    @property
    def version(self) -> Optional[Fact]:
        """The version of the framework the container is named for, as NVIDIA prints it."""
        return {"pytorch": self.torch, "tensorflow": self.tensorflow, "jax": self.jax}.get(self.framework)


def read(doc: dict, dates: list[str]) -> tuple[Container, ...]:
    out = []
    for e in table_entries(FILE, doc, "container", "tag", dates):
        forward = e.get("forward_compat", read_str_list, required=False, default=[])
        for item in forward:
            if not item.startswith("R") or ">=" not in item:
                raise e.fail("forward_compat", f"{item!r}: expected a branch and its floor, like 'R470 >= 470.57'")
        constraint = e.get("pip_constraint", read_bool, required=False)
        framework = e.get("framework", read_str)
        if framework not in FRAMEWORKS:
            raise e.fail("framework", f"{framework!r}: expected one of {', '.join(FRAMEWORKS)}")
        out.append(
            Container(
                tag=e.get("tag", read_str),
                framework=framework,
                image=e.get("image", read_str),
                cuda=_fact(e, "cuda"),
                torch=_fact(e, "torch"),
                tensorflow=_fact(e, "tensorflow"),
                jax=_fact(e, "jax"),
                python=_fact(e, "python"),
                driver_branch=_fact(e, "driver_branch", "driver_grade"),
                forward_compat=tuple(forward),
                min_cc=_fact(e, "min_compute_capability", "gpu_grade"),
                pip_constraint=constraint,
                sources=tuple(e.raw.get("source", ())),
            )
        )
        e.finish()
    return tuple(sorted(out, key=lambda c: (c.framework, tuple(int(p) for p in c.tag.split("."))), reverse=True))


def _fact(e: Entry, key: str, grade_key: str = "") -> Optional[Fact]:
    value = e.get(key, read_str, required=False)
    grade = e.get(grade_key or f"{key}_grade", read_grade, required=value is not None)
    return Fact(value, grade) if value is not None else None
