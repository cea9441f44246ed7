"""The matrix as JSON: every cell of every group, with the fields `resolve --json` gives a build
(variant, index_url, requirement, evidence) and, for a cell that does not run, the rule and reason."""

from __future__ import annotations

from typing import Any

from cudafit.matrix.model import Cell, Matrix
from cudafit.records import SCHEMA_VERSION


def matrix_json(matrix: Matrix) -> dict[str, Any]:
    from cudafit.machine import machine_json

    return {
        "schema_version": SCHEMA_VERSION,
        "framework": matrix.family,
        "spec": matrix.spec,
        "data_date": matrix.data_date,
        "releases": list(matrix.releases),
        "builds": list(matrix.tags),
        "groups": [
            {
                "label": g.label,
                "machine": machine_json(g.machine),
                **({"nodes": g.nodes} if g.nodes else {}),
                "best": {"version": g.best[0], "variant": g.best[1]} if g.best else None,
                "last_lines": list(g.last_lines),
                "rows": [{"version": release, **_cell(cell)} for release, cell in g.rows.items() if release in matrix.releases],
                "cells": [
                    {"version": release, "variant": tag, "best": g.best == (release, tag), **_cell(cell)}
                    for release in matrix.releases
                    for tag in matrix.tags
                    if (cell := g.cells.get((release, tag))) is not None
                ],
            }
            for g in matrix.groups
        ],
        "left_out": [{"class": key, "why": why} for key, why in matrix.left_out],
    }


def _cell(cell: Cell) -> dict[str, Any]:
    out: dict[str, Any] = {"status": cell.status, "reason": cell.reason}
    if cell.constraint:
        out["constraint"] = cell.constraint
    if cell.requirement:
        out.update(requirement=cell.requirement, index_url=cell.index_url)
    if cell.graded:
        out["evidence"] = cell.graded
    elif cell.evidence:
        out["evidence_text"] = cell.evidence
    if cell.driver_floor:
        out["driver_min"] = cell.driver_floor
    return out
