"""A fleet answer as the contract's JSON and as text that leads with the answer (or why there is
none) and the classes holding the fleet back. An answer that leaves GPU nodes out is partial: it
says so first, and it is no success (exit 1) unless the caller accepts it (`--allow-partial`)."""

from __future__ import annotations

from typing import Optional

from cudafit.answers import Resolution
from cudafit.emit.pip import commands
from cudafit.fleet.solve import FleetAnswer
from cudafit.machine import machine_json
from cudafit.records import SCHEMA_VERSION
from cudafit.report import resolution_json


def _packages(res: Optional[Resolution]) -> Optional[list[dict]]:
    # Per class and per pool the builds only; their evidence is in the fleet answer and `resolve`.
    if res is None or not res.ok:
        return None
    return [{k: v for k, v in p.items() if k != "evidence"} for p in resolution_json(res)["packages"]]


def _requirements(res: Optional[Resolution]) -> str:
    return ", ".join(p.requirement for c in res.candidates for p in c.packages) if res is not None else ""


def accepted(answer: FleetAnswer, allow_partial: bool) -> bool:
    """The command succeeds (exit 0): an answer, for every GPU node unless a partial one is allowed."""
    return answer.ok and (allow_partial or not answer.partial)


def _partial_line(answer: FleetAnswer, allow_partial: bool) -> str:
    left = sum(a.cls.nodes for a in answer.left_out)
    placed = sum(a.cls.nodes for a in answer.classes if a.res is not None)
    if allow_partial:
        return f"partial answer (--allow-partial): {left} GPU node(s) could not be placed (see classes); the answer is for the other {placed}"
    return f"partial answer: {left} GPU node(s) could not be placed (see classes); --allow-partial accepts the answer for the other {placed}"


def fleet_json(answer: FleetAnswer, allow_partial: bool = False) -> dict:
    fleet = None
    if answer.fleet is not None:
        whole = resolution_json(answer.fleet)
        fleet = {"packages": whole["packages"], "commands": whole["commands"], "cuda": whole["cuda"], "cudnn": whole["cudnn"]}
    return {
        "schema_version": SCHEMA_VERSION,
        "ok": accepted(answer, allow_partial),
        "partial": answer.partial,
        "classes": [
            {
                "key": a.cls.key,
                "count": a.cls.nodes,
                "pools": a.cls.pools,
                "sample_nodes": list(a.cls.samples),
                "machine": machine_json(a.machine) if a.machine is not None else None,
                "best": _packages(a.res),
                **({"problem": a.problem} if a.problem else {}),
            }
            for a in answer.classes
        ],
        "fleet": fleet,
        "pools": {name: ({"packages": _packages(res)} if res is not None else None) for name, res in answer.pools.items()},
        "platforms": {name: ({"packages": _packages(res)} if res is not None else None) for name, res in answer.platforms.items()},
        "blocking": [{"class": b.cls.key, "count": b.cls.nodes, "reason": b.reason, "gain": b.gain} for b in answer.blocking],
        "notes": ([answer.why_none] if answer.why_none else []) + answer.notes,
    }


def fleet_text(answer: FleetAnswer, allow_partial: bool = False) -> str:
    nodes = sum(a.cls.nodes for a in answer.classes)
    lines = [f"fleet: {nodes} node(s) in {len(answer.classes)} class(es)"]
    if answer.partial and answer.ok:
        lines.append(_partial_line(answer, allow_partial))
    if answer.fleet is not None:
        lines.append(f"every {'placed ' if answer.partial else ''}class runs: {_requirements(answer.fleet)}")
        lines.append("install:")
        lines += [f"  {c}" for c in commands(answer.fleet)]
    elif answer.ok:
        lines.append(f"one answer per operating system ({', '.join(answer.platforms)}): their builds differ")
    else:
        lines.append(f"no set runs on every class: {answer.why_none}")
    if answer.blocking:
        lines.append("holding the fleet back:")
        lines += [f"  - {b.cls.key} ({b.cls.nodes} node(s)): {b.reason}" for b in answer.blocking]
    if answer.platforms:
        lines.append("per operating system:")
        lines += [f"  - {name}: {_requirements(res) or 'no common set'}" for name, res in answer.platforms.items()]
    if answer.pools:
        lines.append("per pool:")
        lines += [f"  - {name}: {_requirements(res) or 'no common set'}" for name, res in answer.pools.items()]
    lines.append("classes:")
    for a in answer.classes:
        best = _requirements(a.res) if a.res is not None and a.res.ok else (a.problem or "no answer")
        lines.append(f"  - {a.cls.key}: {a.cls.nodes} node(s), e.g. {', '.join(a.cls.samples)}; alone: {best}")
    if answer.notes:
        lines.append("notes:")
        lines += [f"  - {n}" for n in answer.notes]
    return "\n".join(lines) + "\n"
