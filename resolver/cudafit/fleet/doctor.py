"""`cudafit fleet doctor`: run `cudafit doctor --json` on the nodes of a cluster and gather the
findings per node class.

On Slurm, one `srun` over the partition runs the doctor on every node at once (a task per node,
each printing its host name and then its JSON). On Kubernetes, one pod per node class (a sample
node of each class read from its GPU Feature Discovery labels, pinned there with `nodeName`) runs
the doctor in the image given. Either way the nodes' own doctor does the diagnosis; this module
only launches it and groups what comes back by the machine each node reported.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable, Sequence
from typing import NamedTuple, Optional

from cudafit.errors import InputError
from cudafit.fleet.classes import class_key
from cudafit.fleet.node import Node

Runner = Callable[[Sequence[str], int], tuple[int, str, str]]  # argv, timeout -> (code, stdout, stderr)
MARK = "@@cudafit-node "  # the line each Slurm task prints before its JSON: which node it is


class NodeReport(NamedTuple):
    node: str
    doc: Optional[dict]  # the node's `doctor --json` output
    error: Optional[str]  # why there is none
    stands_for: int = 1  # nodes of its class it speaks for (Kubernetes: one pod per class)


TIMED_OUT = 124  # the code `run` gives a command it stopped, as timeout(1) does


def run(argv: Sequence[str], timeout: int) -> tuple[int, str, str]:
    """(exit code, stdout, stderr); past `timeout` the command is stopped and what it printed is kept."""
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError:
        raise InputError(f"{argv[0]}: not found on PATH") from None
    except subprocess.TimeoutExpired as exc:
        return TIMED_OUT, _text(exc.stdout), _text(exc.stderr) + f"\n{argv[0]}: stopped after {timeout} s"
    return done.returncode, done.stdout, done.stderr


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value if isinstance(value, str) else ""


def slurm(partition: str, doctor_args: Sequence[str], runner: Runner = run, timeout: int = 600) -> list[NodeReport]:
    """One srun over the partition's nodes; every node sinfo lists has a report or a reason."""
    code, out, err = runner(["sinfo", "--noheader", "--partition", partition, "--Node", "--format", "%N"], timeout)
    if code != 0:
        raise InputError(f"sinfo --partition {partition}: {_last(err or out) or f'exit {code}'}")
    names = list(dict.fromkeys(out.split()))
    if not names:
        raise InputError(f"partition {partition!r}: no nodes (sinfo lists none)")
    command = f'printf "{MARK}%s\\n" "${{SLURMD_NODENAME:-$(hostname)}}"; exec cudafit doctor --json "$@"'
    argv = [
        "srun",
        "--partition",
        partition,
        "--nodes",
        str(len(names)),
        "--nodelist",
        ",".join(names),
        "--ntasks-per-node",
        "1",
        "--label",
        "sh",
        "-c",
        command,
        "sh",
        *doctor_args,
    ]
    code, out, err = runner(argv, timeout)
    reports = parse_labelled(out)
    if not reports and code not in (0, TIMED_OUT):
        raise InputError(f"srun --partition {partition}: no node answered ({_last(err) or f'exit {code}'})")
    answered = {r.node for r in reports}
    for name in names:
        if name not in answered:
            said = [line.strip() for line in err.splitlines() if name in line]
            why = said[-1] if said else (f"no answer in {timeout} s" if code == TIMED_OUT else f"no answer (srun exited {code})")
            reports.append(NodeReport(name, None, why[:200]))
    return reports


def _last(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1].strip()[:200] if lines else ""


def parse_labelled(out: str) -> list[NodeReport]:
    """srun --label output ("3: line") split back into each task's host name and JSON."""
    tasks: dict[str, list[str]] = {}
    for line in out.splitlines():
        task, sep, text = line.partition(": ")
        if sep and task.strip().isdigit():
            tasks.setdefault(task.strip(), []).append(text)
    reports = []
    for task in sorted(tasks, key=int):
        lines = tasks[task]
        node = next((x[len(MARK) :].strip() for x in lines if x.startswith(MARK)), f"task {task}")
        body = "\n".join(x for x in lines if not x.startswith(MARK))
        reports.append(_report(node, body))
    return reports


def _report(node: str, body: str) -> NodeReport:
    try:
        doc = json.loads(body)
    except ValueError:
        tail = body.strip().splitlines()[-1] if body.strip() else "no output"
        return NodeReport(node, None, f"no doctor JSON ({tail[:160]}); is cudafit installed on the node?")
    if not isinstance(doc, dict) or "findings" not in doc:
        return NodeReport(node, None, "the output is not `cudafit doctor --json`")
    return NodeReport(node, doc, None)


def kubernetes(
    selector: str, image: str, samples: dict[str, tuple[str, int]], doctor_args: Sequence[str], runner: Runner = run, timeout: int = 600
) -> list[NodeReport]:
    """One pod per class (`samples`: class key -> a node of it and the class's size), pinned to that
    node; `timeout` applies to each pod."""
    import secrets

    run_id = secrets.token_hex(3)  # two runs, or a pod left by an earlier one, never share a name
    reports = []
    for key, (node, size) in samples.items():
        name = f"cudafit-doctor-{re.sub(r'[^a-z0-9-]+', '-', key.lower())[:40].strip('-')}-{run_id}"
        container = {
            "name": "doctor",
            "image": image,
            "command": ["cudafit", "doctor", "--json", *doctor_args],
            "resources": {"limits": {"nvidia.com/gpu": "1"}},
        }
        overrides = {"apiVersion": "v1", "spec": {"nodeName": node, "restartPolicy": "Never", "containers": [container]}}
        argv = [
            "kubectl",
            "run",
            name,
            "--image",
            image,
            "--restart=Never",
            "--rm",
            "-i",
            "--quiet",
            f"--pod-running-timeout={timeout}s",
            f"--overrides={json.dumps(overrides)}",
        ]
        code, out, err = runner(argv, timeout)
        report = _report(node, out)._replace(stands_for=size)
        if report.doc is None and code == TIMED_OUT:
            report = report._replace(error=f"kubectl run on {node}: no answer in {timeout} s (pod {name} may need deleting)")
        elif report.doc is None and code != 0 and err.strip():
            report = report._replace(error=f"kubectl run on {node}: {_last(err)}")
        reports.append(report)
    return reports


class ClassFindings(NamedTuple):
    key: str
    nodes: list[str]  # the nodes that reported
    size: int  # the nodes they speak for
    ok: bool
    findings: list[dict]  # code, severity, message, fix, commands, nodes (how many), node_names (a few)


def aggregate(reports: list[NodeReport]) -> tuple[list[ClassFindings], list[NodeReport]]:
    """Findings per machine class (the machine each node's doctor reported), and the nodes with no report."""
    groups: dict[str, list[NodeReport]] = {}
    for r in reports:
        if r.doc is not None:
            groups.setdefault(_key(r.doc.get("machine") or {}), []).append(r)
    classes = []
    for key, members in sorted(groups.items(), key=lambda item: (-sum(r.stands_for for r in item[1]), item[0])):
        seen: dict[tuple[str, str], dict] = {}
        for r in members:
            assert r.doc is not None
            for f in r.doc.get("findings") or []:
                fields = {k: f.get(k) for k in ("code", "severity", "message", "fix")}
                entry = seen.setdefault(
                    (str(f.get("code", "?")), str(f.get("message", ""))), {**fields, "commands": list(f.get("commands") or []), "nodes": 0, "node_names": []}
                )
                entry["nodes"] += r.stands_for
                if len(entry["node_names"]) < 5:
                    entry["node_names"].append(r.node)
        ok = all(r.doc is not None and r.doc.get("ok", False) for r in members)
        # The nodes with a problem first, so that a class marked "problems" points at them.
        ordered = sorted(members, key=lambda r: bool(r.doc and r.doc.get("ok", False)))
        findings = sorted(seen.values(), key=lambda f: (f["severity"] != "error", str(f["code"])))
        classes.append(ClassFindings(key, [r.node for r in ordered], sum(r.stands_for for r in members), ok, findings))
    return classes, [r for r in reports if r.doc is None]


def _key(machine: dict) -> str:
    gpus = machine.get("gpus") or []
    node = Node(
        name="",
        os=str(machine.get("os") or "linux"),
        arch=str(machine.get("arch") or "x86_64"),
        driver=machine.get("driver"),
        gpus=tuple(str(g.get("name")) for g in gpus if isinstance(g, dict) and g.get("name")),
    )
    return class_key(node)
