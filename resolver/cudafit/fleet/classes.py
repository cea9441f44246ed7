"""Nodes that look alike to the solver (same OS, arch, driver and GPU models) form one class: the
solver runs once per class, not once per node."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple, Optional

from cudafit.fleet.node import NO_GPU, Node
from cudafit.gpus import normalize_gpu_name
from cudafit.records import Machine

SAMPLES = 3  # node names kept per class, to point at


class NodeClass(NamedTuple):
    key: str  # "a100-sxm4-80gb-535.104.05"
    nodes: int
    pools: dict[str, int]  # pool -> nodes of this class in it
    samples: tuple[str, ...]
    os: str
    arch: str
    driver: Optional[str]
    gpus: tuple[str, ...]
    compute_capabilities: tuple[str, ...]
    problem: Optional[str]  # the inventory could not read these nodes as a machine
    machine: Optional[Machine] = None  # described and checked already (a pyproject target)
    readings: tuple[str, ...] = ()  # how its nodes' GRES types were read without --gres-map


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-")


def class_key(node: Node) -> str:
    if node.machine is not None:  # a named target is its own class
        return _slug(node.name)
    hardware = "+".join(_slug(normalize_gpu_name(g)) for g in node.gpus) or "+".join(f"cc{c}" for c in node.compute_capabilities) or "no-gpu"
    platform = "" if (node.os, node.arch) == ("linux", "x86_64") else f"-{node.os}-{node.arch}"
    if node.problem == NO_GPU:
        return f"no-gpu{platform}"
    if node.problem:
        return f"unreadable-{'-'.join(_slug(node.problem).split('-')[:6]).strip('.-')}{platform}"
    return f"{hardware}-{node.driver or 'no-driver'}{platform}"


def group(nodes: Iterable[Node]) -> list[NodeClass]:
    """Classes, largest first (then by key); counts and pools summed over their nodes."""
    # Nodes whose labels give the same names but different compute capabilities stay apart, so
    # that a product label contradicting the compute labels is seen on its own nodes.
    found: dict[tuple[str, tuple[str, ...]], dict] = {}
    for node in nodes:
        group_key = (class_key(node), node.compute_capabilities)
        entry = found.get(group_key)
        if entry is None:
            entry = found[group_key] = {"node": node, "count": 0, "pools": {}, "samples": [], "readings": {}}
        entry["count"] += node.nodes
        entry["readings"].update(dict.fromkeys(node.readings))
        entry["pools"][node.pool] = entry["pools"].get(node.pool, 0) + node.nodes
        if len(entry["samples"]) < SAMPLES:
            entry["samples"].append(node.name)
    shown = [k for k, _ccs in found]
    classes = [
        NodeClass(
            key=key if shown.count(key) == 1 else f"{key}-cc{'+'.join(ccs) or 'none'}",
            nodes=e["count"],
            pools=dict(sorted(e["pools"].items())),
            samples=tuple(e["samples"]),
            os=e["node"].os,
            arch=e["node"].arch,
            driver=e["node"].driver,
            gpus=tuple(dict.fromkeys(e["node"].gpus)),
            compute_capabilities=e["node"].compute_capabilities,
            problem=e["node"].problem,
            machine=e["node"].machine,
            readings=tuple(e["readings"]),
        )
        for (key, ccs), e in found.items()
    ]
    return sorted(classes, key=lambda c: (-c.nodes, c.key))
