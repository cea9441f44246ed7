"""The containers' verdicts, worded: a table of at most 100 columns, or JSON (the CLI contract)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

from cudafit.containers.judge import Verdict
from cudafit.records import SCHEMA_VERSION, Machine

_RUNS = {True: "yes", False: "no", None: "?"}
TITLES = {"pytorch": "PyTorch", "tensorflow": "TensorFlow", "jax": "JAX"}
# the distribution whose version names each framework's containers (Container.version)
MEMBERS = {"pytorch": "torch", "tensorflow": "tensorflow", "jax": "jax"}


def text(verdicts: list[Verdict], described: str, data_date: str, framework: str = "pytorch", notes: Sequence[str] = ()) -> str:
    title = f"NGC {TITLES.get(framework, framework)} containers on {described}"
    lines = [*textwrap.wrap(title, 100, subsequent_indent="  "), f"data of {data_date}"]
    lines.append(f"{'tag':<7}{'CUDA':<9}{MEMBERS.get(framework, framework):<23}{'driver >=':<12}runs")
    for v in verdicts:
        c = v.container
        version = c.version.value if c.version else "?"
        row = f"{c.tag:<7}{(c.cuda.value if c.cuda else '?'):<9}{version:<22} {(v.driver_min or '?'):<12}{_RUNS[v.runs]}"
        lines.append(row)
        lines += textwrap.wrap(v.why, 100, initial_indent="       ", subsequent_indent="       ")
    runs = [v for v in verdicts if v.runs]
    lines.append("")
    for note in notes:
        lines += textwrap.wrap(note, 100, subsequent_indent="  ")
    if runs:
        newest = runs[0].container
        lines.append(f"newest that runs: {newest.image}" + (" (through forward compatibility)" if runs[0].forward_compat else ""))
    else:
        lines.append("none is known to run here")
    lines.append("? not in cudafit's data; --json gives each fact's grade (declared, reported)")
    return "\n".join(lines) + "\n"


def as_json(verdicts: list[Verdict], machine: Machine, framework: str = "pytorch", notes: Sequence[str] = ()) -> dict[str, Any]:
    from cudafit.machine import machine_json

    return {
        "schema_version": SCHEMA_VERSION,
        "machine": machine_json(machine),
        "framework": framework,
        "containers": [_one(v) for v in verdicts],
        "notes": list(notes),
    }


def _one(v: Verdict) -> dict[str, Any]:
    c = v.container
    facts = {
        "cuda": c.cuda,
        "torch": c.torch,
        "tensorflow": c.tensorflow,
        "jax": c.jax,
        "python": c.python,
        "driver_branch": c.driver_branch,
        "min_compute_capability": c.min_cc,
    }
    return {
        "tag": c.tag,
        "image": c.image,
        "framework": c.framework,
        "version": c.version.value if c.version else None,  # the framework's own: torch, tensorflow or jax
        "cuda": c.cuda.value if c.cuda else None,
        "torch": c.torch.value if c.torch else None,
        "python": c.python.value if c.python else None,
        "driver_min": v.driver_min or None,
        "runs": v.runs,
        "forward_compatibility": v.forward_compat,
        "why": v.why,
        "pip_constraint": c.pip_constraint,
        "evidence": {name: {"grade": fact.grade} for name, fact in facts.items() if fact is not None},
        "sources": list(c.sources),
    }
