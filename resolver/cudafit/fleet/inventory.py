"""Inventories, recognised by their content, read into Node records.

- cudafit's own JSON: a list (or {"nodes": [...]}) of the `machine` object of `resolve --json`
  ({"os", "arch", "driver", "gpus": [{"name", "compute_capability"}]}) plus "count", "pool" and
  an optional "name";
- `kubectl get nodes -o json` (a List of Nodes): NVIDIA GPU Feature Discovery labels, the current
  `nvidia.com/cuda.driver-version.*` and the deprecated `nvidia.com/cuda.driver.*` (a driver may
  have two parts, with an empty revision), `nvidia.com/gpu.product`, `nvidia.com/gpu.compute.*`;
  the arch and OS from the `kubernetes.io/*` labels or `status.nodeInfo`;
- NDJSON: one such node object per line (a kubectl Node, or a {"name", "labels"} pair), read
  line by line so a large cluster's dump never sits in memory whole;
- Slurm: `scontrol show nodes --json`, and `scontrol show nodes -o` text; GRES types are site
  names, mapped to GPU names with `gres_map`, and the driver comes from a node feature matching
  `driver_feature` (a regex with one group) or from `default_driver`.

A node that cannot be read as a machine (no GPU product, labels that disagree) becomes a Node with
`problem` set: it is reported, never silently dropped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import IO, NamedTuple, Optional

from cudafit.errors import InputError

# Labels naming a node's pool, most specific first (the cluster's own label can be given instead).
POOL_LABELS = (
    "cudafit.io/pool",
    "cloud.google.com/gke-nodepool",
    "eks.amazonaws.com/nodegroup",
    "karpenter.sh/nodepool",
    "kubernetes.azure.com/agentpool",
    "node.kubernetes.io/instance-type",
)
_ARCH = {"amd64": "x86_64", "x86_64": "x86_64", "arm64": "aarch64", "aarch64": "aarch64"}
# GFD appends how a GPU is shared or partitioned to the product name; the chip is what remains.
_PRODUCT_SUFFIX = re.compile(r"-(SHARED|MIG-.*)$", re.IGNORECASE)
MAX_LINE = 1 << 20  # one node's JSON; a longer line is not a node
NO_GPU = "no NVIDIA GPU on the node (no GPU labels or GRES; or GPU Feature Discovery not running)"


class Node(NamedTuple):
    name: str
    pool: str = "default"
    nodes: int = 1  # how many nodes this entry stands for
    os: str = "linux"
    arch: str = "x86_64"
    driver: Optional[str] = None  # None: no NVIDIA driver on the node
    gpus: tuple[str, ...] = ()  # GPU names as nvidia-smi (or GFD, dashes for spaces) prints them
    compute_capabilities: tuple[str, ...] = ()  # where no name is known
    problem: Optional[str] = None  # why the node cannot be read as a machine


class Options(NamedTuple):
    pool_label: Optional[str] = None
    gres_map: dict[str, str] = {}
    driver_feature: Optional[str] = None
    default_driver: Optional[str] = None


DEFAULTS = Options()


def read(stream: IO[bytes], label: str, options: Options = DEFAULTS) -> Iterator[Node]:
    """The nodes of an inventory, whatever its format; InputError naming `label` when none fits."""
    head = stream.read(4096)
    text_head = _decode(head, label, 1)
    first = text_head.lstrip()[:1]
    if text_head.lstrip().startswith("NodeName="):
        return _slurm_text(_lines(head, stream, label), label, options)
    if first in ("{", "["):
        rest_is_ndjson = first == "{" and _looks_like_ndjson(head)
        if rest_is_ndjson:
            return _ndjson(_lines(head, stream, label), label, options)
        body = head + stream.read()
        try:
            doc = json.loads(_decode(body, label, 1))
        except json.JSONDecodeError as exc:
            raise InputError(f"{label}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg})") from None
        return iter(list(_json_document(doc, label, options)))
    raise InputError(f"{label}: not an inventory cudafit reads (cudafit JSON, kubectl get nodes -o json, NDJSON, or Slurm scontrol output)")


def _decode(blob: bytes, label: str, line: int) -> str:
    try:
        return blob.decode("utf-8-sig") if line == 1 else blob.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start >= len(blob) - 4 and len(blob) >= 4096:
            return blob[: exc.start].decode("utf-8-sig" if line == 1 else "utf-8")  # a character cut by the 4 KiB read
        raise InputError(f"{label}:{line}: not UTF-8 text (byte {exc.start})") from None


def _looks_like_ndjson(head: bytes) -> bool:
    # A first line that is a whole JSON object and is followed by another line: one node per line.
    first, newline, _ = head.partition(b"\n")
    if not newline:
        return False
    try:
        return isinstance(json.loads(first), dict)
    except ValueError:
        return False


def _lines(head: bytes, stream: IO[bytes], label: str) -> Iterator[tuple[int, str]]:
    buffer = head
    number = 0
    while True:
        newline = buffer.find(b"\n")
        if newline < 0:
            more = stream.read(65536)
            if not more:
                break
            buffer += more
            if len(buffer) > MAX_LINE:
                raise InputError(f"{label}:{number + 1}: a line longer than {MAX_LINE} bytes is not a node")
            continue
        raw, buffer = buffer[:newline], buffer[newline + 1 :]
        number += 1
        yield number, _decode(raw, label, number)
    if buffer.strip():
        yield number + 1, _decode(buffer, label, number + 1)


def _json_document(doc: object, label: str, options: Options) -> Iterable[Node]:
    if isinstance(doc, dict) and isinstance(doc.get("items"), list):  # kubectl: a List of Nodes
        for i, item in enumerate(doc["items"]):
            yield kube_node(item, f"{label}: items[{i}]", options)
        return
    if isinstance(doc, dict) and isinstance(doc.get("nodes"), list) and any(isinstance(n, dict) and "gres" in n for n in doc["nodes"]):
        for i, item in enumerate(doc["nodes"]):
            yield slurm_json_node(item, f"{label}: nodes[{i}]", options)
        return
    items = doc.get("nodes") if isinstance(doc, dict) else doc
    if not isinstance(items, list):
        raise InputError(f'{label}: a JSON inventory is a list of nodes, {{"nodes": [...]}}, or kubectl\'s List of Nodes')
    for i, item in enumerate(items):
        yield cudafit_node(item, f"{label}: node {i + 1}")


def _ndjson(lines: Iterator[tuple[int, str]], label: str, options: Options) -> Iterator[Node]:
    for number, text in lines:
        if not text.strip():
            continue
        try:
            item = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"{label}:{number}: not a JSON object ({exc.msg})") from None
        where = f"{label}:{number}"
        if isinstance(item, dict) and ("metadata" in item or "labels" in item):
            yield kube_node(item, where, options)
        else:
            yield cudafit_node(item, where)


# --- cudafit's own inventory -----------------------------------------------------------------


def cudafit_node(item: object, where: str) -> Node:
    if not isinstance(item, dict):
        raise InputError(f"{where}: expected an object with os, arch, driver, gpus (and count, pool)")
    machine = item.get("machine", item)
    if not isinstance(machine, dict):
        raise InputError(f"{where}: 'machine' is not an object")
    count = item.get("count", 1)
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise InputError(f"{where}: field 'count': expected a positive integer, got {count!r}")
    gpus, ccs = [], []
    for gpu in machine.get("gpus") or []:
        if isinstance(gpu, str):
            gpus.append(gpu)
        elif isinstance(gpu, dict) and isinstance(gpu.get("name"), str):
            gpus.append(gpu["name"])
        elif isinstance(gpu, dict) and isinstance(gpu.get("compute_capability"), str):
            ccs.append(gpu["compute_capability"])
        else:
            raise InputError(f'{where}: field \'gpus\': expected names or {{"name", "compute_capability"}} objects, got {gpu!r}')
    driver = machine.get("driver")
    if driver is not None and not isinstance(driver, str):
        raise InputError(f"{where}: field 'driver': expected a string like \"535.104.05\" or null, got {driver!r}")
    return Node(
        name=str(item.get("name") or where),
        pool=str(item.get("pool") or "default"),
        nodes=count,
        os=str(machine.get("os") or "linux"),
        arch=_ARCH.get(str(machine.get("arch") or "x86_64"), str(machine.get("arch"))),
        driver=driver,
        gpus=tuple(gpus),
        compute_capabilities=tuple(ccs),
    )


# --- Kubernetes (GPU Feature Discovery labels) ------------------------------------------------


def kube_node(item: object, where: str, options: Options) -> Node:
    if not isinstance(item, dict):
        raise InputError(f"{where}: expected a Node object")
    metadata: dict = item["metadata"] if isinstance(item.get("metadata"), dict) else {}
    labels = item.get("labels") if isinstance(item.get("labels"), dict) else (metadata.get("labels") or {})
    if not isinstance(labels, dict):
        raise InputError(f"{where}: labels are not an object")
    labels = {str(k): str(v) for k, v in labels.items()}
    name = str(metadata.get("name") or item.get("name") or labels.get("kubernetes.io/hostname") or where)
    status: dict = item["status"] if isinstance(item.get("status"), dict) else {}
    info: dict = status["nodeInfo"] if isinstance(status.get("nodeInfo"), dict) else {}
    arch = labels.get("kubernetes.io/arch") or info.get("architecture") or "amd64"
    os_name = labels.get("kubernetes.io/os") or info.get("operatingSystem") or "linux"
    pool = next((labels[k] for k in ([options.pool_label] if options.pool_label else POOL_LABELS) if k in labels), "default")
    base = Node(name=name, pool=pool, os=str(os_name).lower(), arch=_ARCH.get(str(arch).lower(), str(arch)))
    if labels.get("nvidia.com/gpu.present") == "false" or not any(k.startswith("nvidia.com/") for k in labels):
        return base._replace(problem=NO_GPU)
    driver, problem = _kube_driver(labels)
    if problem:
        return base._replace(problem=problem)
    product = labels.get("nvidia.com/gpu.product", "")
    product = _PRODUCT_SUFFIX.sub("", product)
    major, minor = labels.get("nvidia.com/gpu.compute.major"), labels.get("nvidia.com/gpu.compute.minor")
    cc = f"{major}.{minor}" if major and minor and major.isdigit() and minor.isdigit() else None
    if not product and cc is None:
        return base._replace(driver=driver, problem="no nvidia.com/gpu.product or gpu.compute labels")
    return base._replace(driver=driver, gpus=(product,) if product else (), compute_capabilities=(cc,) if cc and not product else ())


def _kube_driver(labels: dict[str, str]) -> tuple[Optional[str], Optional[str]]:
    """The driver from the current and the deprecated GFD labels; a problem where they disagree."""
    found = []
    full = labels.get("nvidia.com/cuda.driver-version.full")
    if full:
        found.append(full)
    for prefix, last in (("nvidia.com/cuda.driver-version.", "revision"), ("nvidia.com/cuda.driver.", "rev")):
        major, minor = labels.get(prefix + "major"), labels.get(prefix + "minor")
        if major and minor:
            revision = labels.get(prefix + last, "")
            found.append(f"{major}.{minor}" + (f".{revision}" if revision else ""))
    if not found:
        return None, "no driver labels (nvidia.com/cuda.driver-version.*)"
    if len(set(found)) > 1:
        return None, f"driver labels disagree ({', '.join(sorted(set(found)))})"
    return found[0], None


# --- Slurm -------------------------------------------------------------------------------------


def _gres_gpus(gres: str, where: str, options: Options) -> tuple[list[str], Optional[str]]:
    """GPU names from a GRES string ('gpu:a100:4(S:0-1),gpu:v100:2'); a problem for unmapped types."""
    names: list[str] = []
    for part in gres.split(","):
        fields = part.split("(")[0].split(":")
        if fields[0] != "gpu":
            continue
        kind = fields[1] if len(fields) >= 3 or (len(fields) == 2 and not fields[1].isdigit()) else ""
        if not kind:
            return [], "a GRES gpu without a type; name the GPU with --gres-map or describe the nodes in cudafit's JSON"
        if kind not in options.gres_map:
            return [], f"GRES type {kind!r} is not mapped to a GPU name (--gres-map {kind}='NVIDIA ...')"
        names.append(options.gres_map[kind])
    return names, None


def _slurm_driver(features: str, options: Options) -> tuple[Optional[str], Optional[str]]:
    if options.driver_feature:
        for feature in re.split(r"[,&|\s]+", features):
            match = re.fullmatch(options.driver_feature, feature)
            if match and match.groups():
                return match.group(1), None
    if options.default_driver:
        return options.default_driver, None
    return None, "no driver: give --driver-feature PATTERN (a node feature holding it) or --default-driver"


def _slurm_node(name: str, gres: str, features: str, arch: str, partitions: str, where: str, options: Options) -> Node:
    node = Node(name=name, pool=partitions.split(",")[0] if partitions else "default", arch=_ARCH.get(arch.lower(), arch or "x86_64"))
    gpus, problem = _gres_gpus(gres, where, options)
    if problem:
        return node._replace(problem=problem)
    if not gpus:
        return node._replace(problem=NO_GPU)
    driver, problem = _slurm_driver(features, options)
    return node._replace(driver=driver, gpus=tuple(dict.fromkeys(gpus)), problem=problem)


def slurm_json_node(item: object, where: str, options: Options) -> Node:
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
        where,
        options,
    )


def _slurm_text(lines: Iterator[tuple[int, str]], label: str, options: Options) -> Iterator[Node]:
    for number, text in lines:
        if not text.strip():
            continue
        fields = dict(part.split("=", 1) for part in text.split() if "=" in part)
        if "NodeName" not in fields:
            raise InputError(f"{label}:{number}: expected `scontrol show nodes -o` lines (NodeName=...)")
        yield _slurm_node(
            fields["NodeName"],
            fields.get("Gres", ""),
            fields.get("ActiveFeatures") or fields.get("AvailableFeatures", ""),
            fields.get("Arch", "x86_64"),
            fields.get("Partitions", ""),
            f"{label}:{number}",
            options,
        )
