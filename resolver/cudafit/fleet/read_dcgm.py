"""dcgm-exporter's metrics text (Prometheus format): each `DCGM_*{...}` sample names its `Hostname`,
`modelName` and (newer exporters) `DCGM_FI_DRIVER_VERSION`; a node is a Hostname."""

from __future__ import annotations

import re
from collections.abc import Iterator

from cudafit.errors import InputError
from cudafit.fleet.node import NO_GPU, Node, Options, driver_problem

_SAMPLE_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def dcgm_nodes(lines: Iterator[tuple[int, str]], label: str, options: Options) -> Iterator[Node]:
    """Nodes from a metrics scrape: the samples are per GPU and per metric, so a node is known only
    once every line is read; memory grows with the nodes, not with the samples."""
    hosts: dict[str, dict[str, set[str]]] = {}
    for number, text in lines:
        if text.startswith("#") or not text.strip() or not text.startswith("DCGM_"):
            continue  # comments, and the other exporters' metrics of a whole scrape
        if "{" not in text or "}" not in text:
            raise InputError(f"{label}:{number}: a DCGM sample without its {{labels}}")
        labels = {k: _unescape(v) for k, v in _SAMPLE_LABEL.findall(text[text.index("{") : text.rindex("}") + 1])}
        host = labels.get("Hostname")
        if not host:
            raise InputError(f"{label}:{number}: a sample without a Hostname label; cannot tell its node")
        entry = hosts.setdefault(host, {"models": set(), "drivers": set()})
        if labels.get("modelName"):
            entry["models"].add(labels["modelName"])
        if labels.get("DCGM_FI_DRIVER_VERSION"):
            entry["drivers"].add(labels["DCGM_FI_DRIVER_VERSION"])
    if not hosts:
        raise InputError(f"{label}: a metrics scrape without DCGM_ samples (not dcgm-exporter's)")
    for host, entry in hosts.items():
        node = Node(name=host)
        drivers = entry["drivers"] or ({options.default_driver} if options.default_driver else set())
        if not entry["models"]:
            yield node._replace(problem=NO_GPU)
        elif not drivers:
            yield node._replace(problem="no DCGM_FI_DRIVER_VERSION label (an older dcgm-exporter): give --default-driver")
        elif len(drivers) > 1:
            yield node._replace(problem=f"samples disagree on the driver ({', '.join(sorted(drivers))})")
        else:
            driver = next(iter(drivers))
            yield node._replace(driver=driver, gpus=tuple(sorted(entry["models"])), problem=driver_problem(driver, "driver label"))


def _unescape(value: str) -> str:
    return value.replace("\\\\", "\0").replace('\\"', '"').replace("\\n", "\n").replace("\0", "\\")
