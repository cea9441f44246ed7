"""An inventory, recognised by its content and handed to the reader of its format; each reader
turns its nodes into Node records (node.py):

- cudafit's own JSON (read_cudafit.py);
- `kubectl get nodes -o json`, a List of Nodes read from their GPU Feature Discovery labels
  (read_kubernetes.py);
- NDJSON: one such node object per line (a kubectl Node, or a {"name", "labels"} pair), read
  line by line so a large cluster's dump never sits in memory whole;
- dcgm-exporter's metrics text (read_dcgm.py);
- Slurm: `scontrol show nodes --json`, and its text, default or `-o` (read_slurm.py, gres.py);
- (pyproject.toml targets are read by `targets.py`, which needs the data to check them).

A node that cannot be read as a machine (no GPU product, labels that disagree) becomes a Node with
`problem` set: it is reported, never silently dropped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import IO

from cudafit.errors import InputError
from cudafit.fleet.gres import GresReading
from cudafit.fleet.node import DEFAULTS, Node, Options
from cudafit.fleet.read_cudafit import cudafit_node
from cudafit.fleet.read_dcgm import dcgm_nodes
from cudafit.fleet.read_kubernetes import kube_node
from cudafit.fleet.read_slurm import slurm_json_node, slurm_text_nodes

MAX_LINE = 1 << 20  # one node's JSON; a longer line is not a node


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
        return dcgm_nodes(_lines(first_line, stream, label, skipped + 1), label, options)
    if text.startswith(b"NodeName="):
        return slurm_text_nodes(_lines(first_line, stream, label, skipped + 1), label, options)
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
