"""Slurm nodes, from `scontrol show nodes --json`, and its text (`-o`, one line a node, or the
default form, a node's lines indented under its NodeName= line). GRES types are
site names, mapped to GPU names with `gres_map`, else read from `gpu_table` where they name a GPU
family (gres.py); the driver comes from a node feature matching `driver_feature` (a regex with one
group) or from `default_driver`. A node's pool is its first partition."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import NamedTuple, Optional

from cudafit.errors import InputError
from cudafit.fleet.gres import GresReading, read_gres_type
from cudafit.fleet.node import ARCH, NO_GPU, Node, Options, driver_problem
from cudafit.records import GpuModel


class _Gres(NamedTuple):
    gpus: tuple[str, ...] = ()
    compute_capabilities: tuple[str, ...] = ()
    readings: tuple[str, ...] = ()
    problem: Optional[str] = None


def _gres_gpus(gres: str, options: Options, seen: dict[str, GresReading]) -> _Gres:
    """GPU names from a GRES string ('gpu:a100:4(S:0-1),gpu:v100:2'): `gres_map` first, then the
    GPU table's reading of the type (each type read once per inventory, in `seen`: a cluster names
    a few types on many nodes); a problem for a type neither names."""
    names: list[str] = []
    family: list[tuple[str, str]] = []  # (name, compute capability) of readings the table has no name for
    readings: list[str] = []
    for part in gres.split(","):
        fields = part.split("(")[0].split(":")
        if fields[0] != "gpu":
            continue
        kind = fields[1] if len(fields) >= 3 or (len(fields) == 2 and not fields[1].isdigit()) else "gpu"  # untyped: gpu:4
        if kind in options.gres_map:
            names.append(options.gres_map[kind])
            continue
        if not options.gpu_table:
            return _Gres(problem=f"GRES type {kind!r} is not mapped to a GPU name (--gres-map {kind}='NVIDIA ...')")
        reading = seen.get(kind) or seen.setdefault(kind, read_gres_type(options.gpu_table, kind))
        if reading.problem or reading.name is None or reading.compute_capability is None:
            return _Gres(problem=reading.problem)
        readings.append(f"GRES type {kind!r} {reading.note}")
        if reading.in_table:
            names.append(reading.name)
        else:
            family.append((reading.name, reading.compute_capability))
    if not family:
        return _Gres(tuple(dict.fromkeys(names)), (), tuple(readings))
    if not names and len(set(family)) == 1:
        # "NVIDIA GH200" is no table name: the solver takes the GPU by the compute capability every
        # GH200 of the table shares, and the class keeps the family's name.
        return _Gres((family[0][0],), (family[0][1],), tuple(readings))
    # A node of several types: the solver reads compute labels as every named GPU's, so a family
    # stands as the first GPU of the table in it (they agree on what the answer needs).
    table_names = [_first_of_family(options.gpu_table, name) for name, _cc in family]
    return _Gres(tuple(dict.fromkeys(names + table_names)), (), tuple(readings))


def _first_of_family(table: dict[str, GpuModel], family: str) -> str:
    wanted = family.lower().split()
    return next(m.name for m in table.values() if m.name.lower().replace("-", " ").split()[: len(wanted)] == wanted)


def _slurm_driver(features: str, options: Options) -> tuple[Optional[str], Optional[str]]:
    if options.driver_feature:
        for feature in re.split(r"[,&|\s]+", features):
            match = re.fullmatch(options.driver_feature, feature)
            if match and match.groups():
                return match.group(1), driver_problem(match.group(1), f"node feature {feature!r}: driver")
    if options.default_driver:
        return options.default_driver, None
    return None, "no driver: give --driver-feature PATTERN (a node feature holding it) or --default-driver"


def _slurm_node(name: str, gres: str, features: str, arch: str, partitions: str, options: Options, seen: dict[str, GresReading]) -> Node:
    node = Node(name=name, pool=partitions.split(",")[0] if partitions else "default", arch=ARCH.get(arch.lower(), arch or "x86_64"))
    found = _gres_gpus(gres, options, seen)
    if found.problem:
        return node._replace(problem=found.problem)
    if not found.gpus:
        return node._replace(problem=NO_GPU)
    node = node._replace(gpus=found.gpus, compute_capabilities=found.compute_capabilities, readings=found.readings)
    driver, problem = _slurm_driver(features, options)
    return node._replace(driver=driver, problem=problem)


def slurm_json_node(item: object, where: str, options: Options, seen: Optional[dict[str, GresReading]] = None) -> Node:
    if not isinstance(item, dict):
        raise InputError(f"{where}: expected a node object")
    features = item.get("active_features") or item.get("features") or ""
    partitions = item.get("partitions") or []
    return _slurm_node(
        str(item.get("name") or item.get("hostname") or where),
        str(item.get("gres") or ""),
        ",".join(features) if isinstance(features, list) else str(features),
        str(item.get("architecture") or "x86_64"),
        ",".join(partitions) if isinstance(partitions, list) else str(partitions),
        options,
        {} if seen is None else seen,
    )


def _slurm_value(text: Optional[str]) -> str:
    return "" if text in (None, "(null)") else str(text)


def _records(lines: Iterator[tuple[int, str]], label: str) -> Iterator[tuple[int, str]]:
    """Each node's text with the line it starts on: one line each (`scontrol show nodes -o`), or
    a NodeName= line and the indented lines under it, a blank line after each node (the default
    `scontrol show nodes` output)."""
    start = 0
    parts: list[str] = []
    for number, text in lines:
        if text[:1].isspace() and text.strip() and parts:
            parts.append(text)  # the default form: a node's further lines are indented
            continue
        if parts:
            yield start, " ".join(parts)
            start, parts = 0, []
        if not text.strip():
            continue
        if not text.startswith("NodeName="):
            raise InputError(f"{label}:{number}: expected `scontrol show nodes` output (a NodeName=... line per node)")
        start, parts = number, [text]
    if parts:
        yield start, " ".join(parts)


def slurm_text_nodes(lines: Iterator[tuple[int, str]], label: str, options: Options) -> Iterator[Node]:
    seen: dict[str, GresReading] = {}
    for _number, text in _records(lines, label):
        fields = dict(part.split("=", 1) for part in text.split() if "=" in part)
        yield _slurm_node(
            fields["NodeName"],
            fields.get("Gres", ""),
            _slurm_value(fields.get("ActiveFeatures")) or _slurm_value(fields.get("AvailableFeatures")),
            fields.get("Arch", "x86_64"),
            fields.get("Partitions", ""),
            options,
            seen,
        )
