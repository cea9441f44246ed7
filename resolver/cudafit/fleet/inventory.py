"""Inventories, recognised by their content, read into Node records.

- (pyproject.toml targets are read by `targets.py`, which needs the data to check them);
- cudafit's own JSON: a list (or {"nodes": [...]}) of the `machine` object of `resolve --json`
  ({"os", "arch", "driver", "gpus": [{"name", "compute_capability"}]}) plus "count", "pool" and
  an optional "name";
- `kubectl get nodes -o json` (a List of Nodes): NVIDIA GPU Feature Discovery labels, the current
  `nvidia.com/cuda.driver-version.*` and the deprecated `nvidia.com/cuda.driver.*` (a driver may
  have two parts, with an empty revision), `nvidia.com/gpu.product`, `nvidia.com/gpu.compute.*`;
  the arch and OS from the `kubernetes.io/*` labels or `status.nodeInfo`; a node without driver
  labels takes `default_driver`;
- NDJSON: one such node object per line (a kubectl Node, or a {"name", "labels"} pair), read
  line by line so a large cluster's dump never sits in memory whole;
- dcgm-exporter's metrics text (Prometheus format): each `DCGM_*{...}` sample names its
  `Hostname`, `modelName` and (newer exporters) `DCGM_FI_DRIVER_VERSION`; a node is a Hostname;
- Slurm: `scontrol show nodes --json`, and `scontrol show nodes -o` text; GRES types are site
  names, mapped to GPU names with `gres_map`, else read from `gpu_table` where they name a GPU
  family (gres.py), and the driver comes from a node feature matching `driver_feature` (a regex
  with one group) or from `default_driver`.

A node that cannot be read as a machine (no GPU product, labels that disagree) becomes a Node with
`problem` set: it is reported, never silently dropped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import IO, NamedTuple, Optional

from cudafit.errors import InputError
from cudafit.fleet.gres import GresReading, read_gres_type
from cudafit.records import GpuModel, Machine

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
NO_GPU = "no NVIDIA GPU on the node"


def driver_problem(text: str, what: str) -> Optional[str]:
    """Why `text` (from `what`) is no NVIDIA driver version, or None: read as `--driver` is."""
    from cudafit.machine import parse_driver

    try:
        if parse_driver(text) is not None:
            return None
    except InputError:
        pass
    return f"{what} {text!r} is not an NVIDIA driver version (like 535.104.05)"


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
    machine: Optional[Machine] = None  # already described and checked (a pyproject target)
    readings: tuple[str, ...] = ()  # how GRES types no --gres-map names were read ("GRES type 'h100' read as ...")


class Options(NamedTuple):
    pool_label: Optional[str] = None
    gres_map: dict[str, str] = {}
    driver_feature: Optional[str] = None
    default_driver: Optional[str] = None
    gpu_table: dict[str, GpuModel] = {}  # reads GRES types that name a GPU family; empty: only gres_map


DEFAULTS = Options()


def read(stream: IO[bytes], label: str, options: Options = DEFAULTS) -> Iterator[Node]:
    """The nodes of an inventory, whatever its format; InputError naming `label` when none fits."""
    first_line = _first_line(stream, label)
    skipped = 0
    while first_line and not first_line.strip():  # blank lines before the content
        skipped += 1
        first_line = _first_line(stream, label)
    _decode(first_line, label, 1)
    text = first_line.lstrip(b"\xef\xbb\xbf").lstrip()
    if text.startswith((b"# HELP ", b"# TYPE ", b"DCGM_")):  # Prometheus text: a dcgm-exporter scrape
        return _dcgm(_lines(first_line, stream, label, skipped + 1), label, options)
    if text.startswith(b"NodeName="):
        return _slurm_text(_lines(first_line, stream, label, skipped + 1), label, options)
    if text.startswith(b"{") and _ndjson_start(first_line, stream):
        return _ndjson(_lines(first_line, stream, label, skipped + 1), label, options)
    if text.startswith((b"{", b"[")):
        body = first_line + stream.read()
        try:
            doc = json.loads(_decode(body, label, 1))
        except json.JSONDecodeError as exc:
            raise InputError(f"{label}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg})") from None
        except RecursionError:
            raise InputError(f"{label}: JSON nested too deeply to be an inventory") from None
        return iter(list(_json_document(doc, label, options)))
    raise InputError(
        f"{label}: not an inventory cudafit reads (kubectl get nodes -o json or NDJSON, Slurm scontrol output, "
        "dcgm-exporter metrics, a pyproject.toml with targets, or cudafit JSON)"
    )


def _first_line(stream: IO[bytes], label: str) -> bytes:
    """The first line, whole (a kubectl Node on one line is often longer than any fixed peek)."""
    line = stream.readline(MAX_LINE + 1)
    if len(line) > MAX_LINE:
        line += stream.read()  # one long line: a JSON document, not NDJSON
    return line


def _ndjson_start(first_line: bytes, stream: IO[bytes]) -> bool:
    """One JSON object per line: the first line is a whole object and another non-empty line follows."""
    try:
        if not isinstance(json.loads(first_line), dict):
            return False
    except (ValueError, RecursionError):
        return False
    peek = getattr(stream, "peek", None)
    if peek is not None:
        ahead = peek(256)
    elif stream.seekable():
        where = stream.tell()
        ahead = stream.read(256)
        stream.seek(where)
    else:
        ahead = b""
    return bool(ahead.strip())


def _decode(blob: bytes, label: str, line: int) -> str:
    try:
        return blob.decode("utf-8-sig") if line == 1 else blob.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A whole document is one blob: count its lines up to the bad byte.
        at = line + blob.count(b"\n", 0, exc.start)
        column = exc.start - (blob.rfind(b"\n", 0, exc.start) + 1) + 1
        raise InputError(f"{label}:{at}:{column}: not UTF-8 text") from None


def _lines(first: bytes, stream: IO[bytes], label: str, number: int = 1) -> Iterator[tuple[int, str]]:
    if first.strip():
        yield number, _decode(first.rstrip(b"\r\n"), label, number)
    while True:
        raw = stream.readline(MAX_LINE + 1)
        if not raw:
            return
        number += 1
        if len(raw) > MAX_LINE:
            raise InputError(f"{label}:{number}: a line longer than {MAX_LINE} bytes is not a node")
        if raw.strip():
            yield number, _decode(raw.rstrip(b"\r\n"), label, number)


def _is_kube(item: object) -> bool:
    return isinstance(item, dict) and (item.get("kind") == "Node" or "metadata" in item or "labels" in item)


def _json_document(doc: object, label: str, options: Options) -> Iterable[Node]:
    if isinstance(doc, dict) and isinstance(doc.get("items"), list):  # kubectl: a List of Nodes
        for i, item in enumerate(doc["items"]):
            yield kube_node(item, f"{label}: items[{i}]", options)
        return
    if _is_kube(doc):  # one Node: kubectl get node NAME -o json
        yield kube_node(doc, label, options)
        return
    if isinstance(doc, dict) and isinstance(doc.get("nodes"), list) and any(isinstance(n, dict) and "gres" in n for n in doc["nodes"]):
        seen: dict[str, GresReading] = {}
        for i, item in enumerate(doc["nodes"]):
            yield slurm_json_node(item, f"{label}: nodes[{i}]", options, seen)
        return
    items = doc.get("nodes") if isinstance(doc, dict) else doc
    if not isinstance(items, list):
        raise InputError(f'{label}: not an inventory cudafit reads: a JSON inventory is a list of nodes, {{"nodes": [...]}}, or kubectl\'s List of Nodes')
    for i, item in enumerate(items):
        if _is_kube(item):  # kubectl get nodes -o json | jq .items
            yield kube_node(item, f"{label}: [{i}]", options)
        else:
            yield cudafit_node(item, f"{label}: node {i + 1}")


def _ndjson(lines: Iterator[tuple[int, str]], label: str, options: Options) -> Iterator[Node]:
    for number, text in lines:
        try:
            item = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"{label}:{number}: not a JSON object ({exc.msg})") from None
        except RecursionError:
            raise InputError(f"{label}:{number}: JSON nested too deeply to be a node") from None
        where = f"{label}:{number}"
        if _is_kube(item):
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
    if not {"driver", "gpus", "os"} & set(machine):
        raise InputError(f"{where}: not a node: expected the machine fields os, arch, driver and gpus (and count, pool)")
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
    if driver is not None and driver_problem(driver, "driver"):
        raise InputError(f"{where}: field 'driver': {driver_problem(driver, 'driver')}")
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
    # A bare labels stream may leave these out; GPU nodes are Linux, and x86_64 unless a label says.
    arch = labels.get("kubernetes.io/arch") or labels.get("beta.kubernetes.io/arch") or info.get("architecture") or "amd64"
    os_name = labels.get("kubernetes.io/os") or labels.get("beta.kubernetes.io/os") or info.get("operatingSystem") or "linux"
    pool = next((labels[k] for k in ([options.pool_label] if options.pool_label else POOL_LABELS) if k in labels), "default")
    base = Node(name=name, pool=pool, os=str(os_name).lower(), arch=_ARCH.get(str(arch).lower(), str(arch)))
    if labels.get("nvidia.com/gpu.present") == "false" or not any(k.startswith("nvidia.com/") for k in labels):
        return base._replace(problem=NO_GPU)
    driver, problem = _kube_driver(labels)
    if problem:
        return base._replace(problem=problem)
    if driver is None:
        if not options.default_driver:
            return base._replace(problem="no driver labels (nvidia.com/cuda.driver-version.*): give --default-driver")
        driver = options.default_driver  # checked like --driver when the option was read
    problem = driver_problem(driver, "driver label") if driver else None
    if problem:
        return base._replace(problem=problem)
    product = labels.get("nvidia.com/gpu.product", "")
    product = _PRODUCT_SUFFIX.sub("", product)
    major, minor = labels.get("nvidia.com/gpu.compute.major"), labels.get("nvidia.com/gpu.compute.minor")
    cc = f"{major}.{minor}" if major and minor and major.isdigit() and minor.isdigit() else None
    if not product and cc is None:
        return base._replace(driver=driver, problem="no nvidia.com/gpu.product or gpu.compute labels")
    return base._replace(driver=driver, gpus=(product,) if product else (), compute_capabilities=(cc,) if cc else ())


def _kube_driver(labels: dict[str, str]) -> tuple[Optional[str], Optional[str]]:
    """The driver from the current and the deprecated GFD labels (None where there are none); a
    problem where they disagree."""
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
        return None, None
    if len(set(found)) > 1:
        return None, f"driver labels disagree ({', '.join(sorted(set(found)))})"
    return found[0], None


# --- Slurm -------------------------------------------------------------------------------------


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
    node = Node(name=name, pool=partitions.split(",")[0] if partitions else "default", arch=_ARCH.get(arch.lower(), arch or "x86_64"))
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


def _slurm_text(lines: Iterator[tuple[int, str]], label: str, options: Options) -> Iterator[Node]:
    seen: dict[str, GresReading] = {}
    for number, text in lines:
        if not text.strip():
            continue
        fields = dict(part.split("=", 1) for part in text.split() if "=" in part)
        if "NodeName" not in fields:
            raise InputError(f"{label}:{number}: expected `scontrol show nodes -o` lines (NodeName=...)")
        yield _slurm_node(
            fields["NodeName"],
            fields.get("Gres", ""),
            _slurm_value(fields.get("ActiveFeatures")) or _slurm_value(fields.get("AvailableFeatures")),
            fields.get("Arch", "x86_64"),
            fields.get("Partitions", ""),
            options,
            seen,
        )


# --- dcgm-exporter metrics --------------------------------------------------------------------

_SAMPLE_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def _dcgm(lines: Iterator[tuple[int, str]], label: str, options: Options) -> Iterator[Node]:
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
