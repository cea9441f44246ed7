"""`cudafit fleet resolve`: inventories of real shapes (GFD labels old and new, a two-part driver,
Slurm JSON and text with site GRES names, NDJSON), classes, the fleet answer, blocking classes,
pools, and bad input."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudafit.cli import main
from cudafit.errors import InputError
from cudafit.fleet import inventory
from cudafit.fleet.classes import group
from cudafit.fleet.node import DEFAULTS, NO_GPU, Node, Options
from cudafit.fleet.read_kubernetes import kube_node
from cudafit.loader import load

FIXTURES = Path(__file__).parent / "fixtures" / "fleet"
KUBE = FIXTURES / "kubectl-mixed.json"
SLURM_MAP = ["--gres-map", "a100=NVIDIA A100-SXM4-80GB", "--gres-map", "v100=Tesla V100-SXM2-16GB", "--gres-map", "h200=NVIDIA H200", "--driver-feature", "nvdriver_(.+)"]


def fleet(*args: str, stdin: str | None = None):
    return CliRunner().invoke(main, ["fleet", "resolve", "--python", "3.12", *args], input=stdin)


def nodes_of(path: Path, options: Options = DEFAULTS) -> list[Node]:
    with open(path, "rb") as fh:
        return list(inventory.read(fh, str(path), options))


def test_gfd_labels_old_new_and_a_two_part_driver():
    nodes = {n.name: n for n in nodes_of(KUBE)}
    assert nodes["a100-0"].driver == "535.104.05" and nodes["a100-0"].pool == "train-a100"
    assert nodes["v100-0"].driver == "470.256.02"  # only the deprecated nvidia.com/cuda.driver.* labels
    assert nodes["l4-0"].driver == "550.120" and nodes["l4-0"].gpus == ("NVIDIA-L4",)  # empty revision; -SHARED dropped
    assert nodes["cpu-0"].problem == NO_GPU


def test_kubectl_fleet_answer_blocking_and_pools():
    result = fleet("--inventory", str(KUBE), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["ok"] is True
    assert [p["requirement"] for p in data["fleet"]["packages"]] == ["torch==2.7.1+cu118"]
    assert data["blocking"] == [
        {"class": "v100-sxm2-16gb-470.256.02", "count": 2, "reason": "driver 470.256.02 < 525.60.13 (CUDA 12.x minor-version compatibility floor)", "gain": "torch==2.14.1+cu126"}
    ]
    assert data["pools"]["train-a100"]["packages"][0]["requirement"] == "torch==2.14.1+cu126"
    first = data["classes"][0]
    assert first["key"] == "a100-sxm4-80gb-535.104.05" and first["count"] == 6 and first["sample_nodes"] == ["a100-0", "a100-1", "a100-2"]
    assert first["machine"]["gpus"] == [{"name": "NVIDIA A100-SXM4-80GB", "compute_capability": "8.0"}]
    assert any("no-gpu" in n for n in data["notes"])  # reported, not dropped silently
    text = fleet("--inventory", str(KUBE)).stdout
    assert text.splitlines()[1] == "every class runs: torch==2.7.1+cu118" and "holding the fleet back:" in text


def test_ndjson_and_cudafit_inventories_give_the_same_answer(tmp_path):
    items = json.loads(KUBE.read_text())["items"]
    ndjson = "\n".join(json.dumps(i) for i in items) + "\n"
    a = json.loads(fleet("--inventory", "-", "--json", stdin=ndjson).stdout)
    own = [
        {"name": "a100", "pool": "train", "count": 6, "machine": {"os": "linux", "arch": "x86_64", "driver": "535.104.05", "gpus": [{"name": "NVIDIA A100-SXM4-80GB"}]}},
        {"name": "v100", "pool": "legacy", "count": 2, "os": "linux", "arch": "x86_64", "driver": "470.256.02", "gpus": ["Tesla V100-SXM2-16GB"]},
    ]
    (tmp_path / "own.json").write_text(json.dumps({"nodes": own}))
    b = json.loads(fleet("--inventory", str(tmp_path / "own.json"), "--json").stdout)
    assert a["fleet"]["packages"][0]["requirement"] == b["fleet"]["packages"][0]["requirement"] == "torch==2.7.1+cu118"
    assert [c["count"] for c in b["classes"]] == [6, 2]


def test_ndjson_is_read_line_by_line():
    lines = (json.dumps({"name": f"n{i}", "labels": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/cuda.driver-version.full": "535.104.05"}}) for i in range(3))
    stream = io.BytesIO(("\n".join(lines) + "\n").encode())
    nodes = inventory.read(stream, "s", Options())
    assert next(iter(nodes)).name == "n0"  # a generator: the stream is not read whole first


def test_slurm_json_and_text_with_site_gres_names():
    options = Options(gres_map={"a100": "NVIDIA A100-SXM4-80GB", "v100": "Tesla V100-SXM2-16GB"}, driver_feature="nvdriver_(.+)")
    classes = group(nodes_of(FIXTURES / "slurm-nodes.json", options))
    assert [(c.key, c.nodes) for c in classes] == [("a100-sxm4-80gb-535.104.05", 4), ("no-gpu", 1), ("v100-sxm2-16gb-470.256.02", 1)]
    assert classes[0].pools == {"gpu": 4}
    text = fleet("--inventory", str(FIXTURES / "slurm-nodes.txt"), *SLURM_MAP, "--default-driver", "570.133.20", "--json")
    data = json.loads(text.stdout)
    keys = {c["key"]: c for c in data["classes"]}
    assert "h200-570.133.20" in keys  # no driver feature: the default driver
    by_default = json.loads(fleet("--inventory", str(FIXTURES / "slurm-nodes.txt"), "--driver-feature", "nvdriver_(.+)", "--json").stdout)
    assert "a100-535.104.05" in {c["key"] for c in by_default["classes"]}  # a family's name needs no --gres-map
    unmapped = Options(driver_feature="nvdriver_(.+)")  # no GPU table: only --gres-map names a type
    assert any("GRES type 'a100' is not mapped" in (n.problem or "") for n in nodes_of(FIXTURES / "slurm-nodes.txt", unmapped))


def test_labels_that_disagree_and_a_driver_that_cannot_drive_its_gpu(tmp_path):
    items = [
        {"metadata": {"name": "x", "labels": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/cuda.driver-version.full": "535.104.05",
                                               "nvidia.com/cuda.driver.major": "550", "nvidia.com/cuda.driver.minor": "54", "nvidia.com/cuda.driver.rev": "15"}}},
        {"metadata": {"name": "b200", "labels": {"nvidia.com/gpu.product": "NVIDIA-B200", "nvidia.com/cuda.driver-version.full": "535.104.05"}}},
        {"metadata": {"name": "ok", "labels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/cuda.driver-version.full": "570.133.20"}}},
    ]
    (tmp_path / "k.json").write_text(json.dumps({"kind": "List", "items": items}))
    result = fleet("--inventory", str(tmp_path / "k.json"), "--json")
    data = json.loads(result.stdout)
    problems = {c["key"]: c.get("problem") for c in data["classes"]}
    assert any(p and p.startswith("driver labels disagree") for p in problems.values())
    assert problems["b200-535.104.05"].startswith("broken: driver 535.104.05 predates Blackwell")
    assert result.exit_code == 1 and data["ok"] is False and data["partial"] is True and len(data["notes"]) == 2  # two nodes left out
    assert data["fleet"]["packages"][0]["requirement"] == "torch==2.14.1+cu126"  # the answer for the rest is still given
    assert json.loads(fleet("--inventory", str(tmp_path / "k.json"), "--json", "--allow-partial").stdout)["ok"] is True


def test_no_set_runs_everywhere_exits_1(tmp_path):
    own = [{"name": "new", "driver": "570.133.20", "gpus": ["NVIDIA GeForce RTX 5090"]}, {"name": "old", "driver": "470.256.02", "gpus": ["Tesla K80"]}]
    (tmp_path / "i.json").write_text(json.dumps(own))
    result = fleet("--inventory", str(tmp_path / "i.json"), "--json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["ok"] is False and data["fleet"] is None and "no torch build runs on every node class" in data["notes"][0]


@pytest.mark.parametrize(
    "content, message",
    [
        (b"hello world\n", "not an inventory cudafit reads"),
        (b"\xff\xfe\x00garbage", "not UTF-8"),
        (b'{"kind": "List", "items": [', "not valid JSON"),
        (b'[{"driver": "535.104.05", "gpus": ["Tesla T4"], "count": 0}]', "field 'count'"),
        (b'[{"driver": 535, "gpus": ["Tesla T4"]}]', "field 'driver'"),
        (b'{"name": "a", "driver": "535.104.05", "gpus": ["Tesla T4"]}\n{"name": \n', ":2: not a JSON object"),
        (b'{"a": 1}\n{"b": 2}\n', ":1: not a node"),
        (b'{"apiVersion": "v1", "kind": "List", "items": []}\n', "no nodes"),
        (b'{"nodes": 5}\n', "not an inventory cudafit reads"),
        (b"[" * 100000 + b"]" * 100000, "nested too deeply"),
        (b"NodeName=a Gres=gpu:a100:1\nthis is not a node\n", ":2: expected `scontrol show nodes` output"),
    ],
)
def test_bad_inventories_are_one_line(tmp_path, content, message):
    path = tmp_path / "inv"
    path.write_bytes(content)
    result = fleet("--inventory", str(path))
    assert result.exit_code == 2, result.output
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.output


def test_unknown_gpu_is_a_class_problem_not_a_crash(tmp_path):
    (tmp_path / "i.json").write_text(json.dumps([{"driver": "535.104.05", "gpus": ["NVIDIA Imaginary 9000"]}, {"driver": "535.104.05", "gpus": ["Tesla T4"]}]))
    data = json.loads(fleet("--inventory", str(tmp_path / "i.json"), "--json", "--allow-partial").stdout)
    assert data["ok"] is True and data["partial"] is True and any("not in cudafit's GPU table" in (c.get("problem") or "") for c in data["classes"])


def test_missing_inventory_and_bad_gres_map():
    assert "No such file" in fleet("--inventory", "/nonexistent/inv.json").stderr
    result = fleet("--inventory", str(KUBE), "--gres-map", "a100")
    assert result.exit_code == 2 and "expected TYPE=GPU NAME" in result.stderr


def test_read_raises_on_empty_nodes_list(tmp_path):
    with pytest.raises(InputError):
        list(inventory.read(io.BytesIO(b"{}"), "x", Options()))


def test_joint_specs_blocking_gain_is_the_whole_set():
    data = json.loads(fleet("torch", "tensorflow", "--inventory", str(KUBE), "--json").stdout)
    assert data["ok"] is False and data["notes"][0] == "no tensorflow build runs on class(es) v100-sxm2-16gb-470.256.02"
    assert data["blocking"][0]["gain"] == "torch==2.14.1+cu126, tensorflow[and-cuda]==2.21.0"
    assert data["pools"]["legacy"] is None and data["pools"]["infer"]["packages"][1]["requirement"] == "tensorflow[and-cuda]==2.21.0"


def test_readme_example_is_the_fixtures_output():
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    start = readme.index("$ cudafit fleet resolve --inventory nodes.json --python 3.12\n")
    shown = readme[start:].split("\n", 1)[1].split("```", 1)[0]
    assert fleet("--inventory", str(KUBE)).stdout == shown


def test_advice_only_for_limits_a_driver_lifts(tmp_path):
    own = [
        {"name": "a100", "count": 10, "driver": "535.104.05", "gpus": ["NVIDIA A100-SXM4-80GB"]},
        {"name": "b200", "count": 2, "driver": "580.65.06", "gpus": ["NVIDIA B200"]},  # no cu126 kernels: no driver helps
        {"name": "v100", "count": 1, "driver": "470.256.02", "gpus": ["Tesla V100-SXM2-16GB"]},
    ]
    (tmp_path / "i.json").write_text(json.dumps(own))
    data = json.loads(fleet("--inventory", str(tmp_path / "i.json"), "--json").stdout)
    assert [b["class"] for b in data["blocking"]] == ["v100-sxm2-16gb-470.256.02"]
    assert "needs driver >= 525.60.13" in data["blocking"][0]["reason"] or "525.60.13" in data["blocking"][0]["reason"]
    # what every node runs after the upgrade, solved with the upgraded driver: the B200 still rules cu126 out
    assert "cu126" not in data["blocking"][0]["gain"]


def test_pinned_line_gain_carries_the_gpu(tmp_path):
    # torch==2.11.*: cu128 dropped Volta, so an upgraded V100 gets cu126, and so does the advice.
    data = json.loads(fleet("torch==2.11.*", "--inventory", str(KUBE), "--json").stdout)
    for b in data["blocking"]:
        assert b["gain"] == "torch==2.11.0+cu126"


def test_class_without_an_answer_says_why():
    data = json.loads(fleet("torch", "tensorflow", "--inventory", str(KUBE), "--json").stdout)
    v100 = next(c for c in data["classes"] if c["key"].startswith("v100"))
    assert v100["best"] is None and v100["problem"].startswith("no answer of its own")


def test_product_and_compute_labels_that_disagree(tmp_path):
    labels = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/cuda.driver-version.full": "535.104.05"}
    items = [
        {"metadata": {"name": "good", "labels": {**labels, "nvidia.com/gpu.compute.major": "8", "nvidia.com/gpu.compute.minor": "0"}}},
        {"metadata": {"name": "bad", "labels": {**labels, "nvidia.com/gpu.compute.major": "7", "nvidia.com/gpu.compute.minor": "0"}}},
        {"metadata": {"name": "new", "labels": {**labels, "nvidia.com/gpu.product": "NVIDIA-Foo-9000", "nvidia.com/gpu.compute.major": "8", "nvidia.com/gpu.compute.minor": "9"}}},
    ]
    (tmp_path / "k.json").write_text(json.dumps({"kind": "List", "items": items}))
    data = json.loads(fleet("--inventory", str(tmp_path / "k.json"), "--json").stdout)
    problems = {c["sample_nodes"][0]: c.get("problem") for c in data["classes"]}
    assert problems["bad"].startswith("labels disagree") and problems["good"] is None
    assert problems["new"] is None  # an unknown product runs on its compute labels


def test_dcgm_exporter_metrics():
    path = FIXTURES / "dcgm-metrics.txt"
    nodes = {n.name: n for n in nodes_of(path)}
    assert nodes["ip-172-31-16-106"].gpus == ("Tesla T4",) and nodes["ip-172-31-16-106"].driver == "535.183.06"
    assert nodes["della-l01g1"].gpus == ("NVIDIA A100 80GB PCIe",)  # a MIG slice's samples name the whole GPU
    assert "older dcgm-exporter" in (nodes["old-exporter-host"].problem or "")
    fixed = {n.name: n for n in nodes_of(path, Options(default_driver="550.127.05"))}
    assert fixed["old-exporter-host"].driver == "550.127.05"
    data = json.loads(fleet("--inventory", str(path), "--json", "--allow-partial").stdout)  # old-exporter-host has no driver
    assert data["ok"] is True and data["partial"] is True and data["fleet"]["packages"][0]["requirement"] == "torch==2.14.1+cu126"
    bad = io.BytesIO(b'# HELP DCGM_FI_DEV_GPU_TEMP x\nDCGM_FI_DEV_GPU_TEMP{gpu="0",modelName="Tesla T4"} 4\n')
    with pytest.raises(InputError, match=":2: a sample without a Hostname"):
        list(inventory.read(bad, "m", DEFAULTS))


# --- fleet doctor, with stand-in sinfo / srun / kubectl -----------------------------------------

A100 = {"os": "linux", "arch": "x86_64", "python": "3.12", "driver": "535.104.05", "gpus": [{"name": "NVIDIA A100-SXM4-80GB", "compute_capability": "8.0"}]}
V100 = {**A100, "driver": "470.256.02", "gpus": [{"name": "Tesla V100-SXM2-16GB", "compute_capability": "7.0"}]}
CPU_TORCH = {"code": "DR010", "severity": "error", "message": "torch 2.9.0+cpu is a CPU build on a machine with a GPU", "fix": "pip install --index-url https://download.pytorch.org/whl/cu126 torch==2.9.0+cu126", "commands": []}


def _stand_in(folder: Path, name: str, body: str) -> None:
    import os
    import sys

    script = folder / name
    script.write_text(f"#!{sys.executable}\nimport json, sys\n{body}\n")
    os.chmod(script, 0o755)


@pytest.fixture
def cluster_bin(tmp_path, monkeypatch):
    import os

    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return folder


def test_fleet_doctor_over_slurm(cluster_bin):
    docs = {"gpu001": {"ok": False, "machine": A100, "findings": [CPU_TORCH]}, "gpu002": {"ok": False, "machine": A100, "findings": [CPU_TORCH]},
            "old001": {"ok": True, "machine": V100, "findings": []}}
    _stand_in(cluster_bin, "sinfo", "print('gpu001\\ngpu002\\nold001\\nbare001\\nlost001')")
    lines = []
    for task, (node, doc) in enumerate(docs.items()):
        lines.append(f"{task}: @@cudafit-node {node}")
        lines += [f"{task}: {x}" for x in json.dumps(doc, indent=1).splitlines()]
    lines += ["3: @@cudafit-node bare001", "3: sh: 1: exec: cudafit: not found"]
    _stand_in(cluster_bin, "srun", f"assert sys.argv[1:5] == ['--partition', 'gpu', '--nodes', '5'], sys.argv\nprint({chr(10).join(lines)!r})\nsys.stderr.write('srun: error: lost001: task 4: Exited with exit code 1\\n'); sys.exit(1)")
    result = CliRunner().invoke(main, ["fleet", "doctor", "--slurm", "gpu", "--json"])
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    first = data["classes"][0]
    assert first["key"] == "a100-sxm4-80gb-535.104.05" and first["count"] == 2 and first["ok"] is False
    assert first["findings"] == [
        {"code": "DR010", "severity": "error", "message": CPU_TORCH["message"], "fix": CPU_TORCH["fix"], "commands": [], "nodes": 2, "node_names": ["gpu001", "gpu002"]}
    ]
    assert data["classes"][1]["ok"] is True
    unreachable = {r["node"]: r["error"] for r in data["unreachable"]}
    assert "is cudafit installed" in unreachable["bare001"]
    assert unreachable["lost001"] == "srun: error: lost001: task 4: Exited with exit code 1"  # a node srun lost is listed
    text = CliRunner().invoke(main, ["fleet", "doctor", "--slurm", "gpu"]).stdout
    assert "DR010 error (2 node(s): gpu001, gpu002)" in text and "no report from bare001" in text


def test_fleet_doctor_over_kubernetes(cluster_bin):
    docs = {"a100-0": {"ok": True, "machine": A100, "findings": []}, "v100-0": {"ok": True, "machine": V100, "findings": []}}
    body = f"""
args = sys.argv[1:]
if args[:2] == ["get", "nodes"]:
    assert args[2:4] == ["-l", "pool=gpu"]
    sys.stdout.write(open({str(KUBE)!r}).read())
elif args[0] == "run":
    spec = json.loads(next(a for a in args if a.startswith("--overrides="))[len("--overrides="):])["spec"]
    assert spec["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"
    docs = {docs!r}
    if spec["nodeName"] in docs:
        print(json.dumps(docs[spec["nodeName"]]))
    else:
        sys.stderr.write("error: pod failed: ImagePullBackOff\\n"); sys.exit(1)
"""
    _stand_in(cluster_bin, "kubectl", body)
    result = CliRunner().invoke(main, ["fleet", "doctor", "--kubernetes", "pool=gpu", "--image", "registry.example/cudafit:1", "--json"])
    data = json.loads(result.stdout)
    assert [c["key"] for c in data["classes"]] == ["a100-sxm4-80gb-535.104.05", "v100-sxm2-16gb-470.256.02"]
    assert {r["node"] for r in data["unreachable"]} == {"h100-0", "l4-0"}  # one pod per class: its sample node
    assert all("ImagePullBackOff" in r["error"] for r in data["unreachable"]) and result.exit_code == 1


def test_fleet_doctor_usage_errors(cluster_bin):
    assert CliRunner().invoke(main, ["fleet", "doctor"]).exit_code == 2
    assert "needs --image" in CliRunner().invoke(main, ["fleet", "doctor", "--kubernetes", "a=b"]).stderr
    _stand_in(cluster_bin, "sinfo", "sys.stderr.write('sinfo: error: invalid partition specified: nope\\n'); sys.exit(1)")
    result = CliRunner().invoke(main, ["fleet", "doctor", "--slurm", "nope"])
    assert result.exit_code == 2 and "invalid partition specified" in result.stderr


# --- several platforms: one pyproject ------------------------------------------------------------

PROJECT = """[project]
name = "team"
version = "0.1.0"
requires-python = ">=3.11"
dependencies = ["numpy"]  # ours

[[tool.cudafit.targets]]
name = "a100"
driver = "535.104.05"
gpu = "NVIDIA A100-SXM4-80GB"

[[tool.cudafit.targets]]
name = "laptop"
os = "macos"
arch = "arm64"
"""


def test_targets_of_a_pyproject_become_one_lockable_project(tmp_path):
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    path = tmp_path / "pyproject.toml"
    path.write_text(PROJECT)
    data = json.loads(fleet("--inventory", str(path), "--json").stdout)
    assert data["ok"] is True and data["fleet"] is None
    assert data["platforms"]["linux"]["packages"][0]["requirement"] == "torch==2.14.1+cu126"
    newest_mac = max(r.version for r in load().torch if "macos-arm64" in r.platforms)
    assert data["platforms"]["macos"]["packages"][0]["requirement"] == f"torch=={newest_mac}"
    result = fleet("--inventory", str(path), "--format", "uv-project", "-o", str(path))
    assert result.exit_code == 0, result.output
    text = path.read_text()
    doc = tomllib.loads(text)
    assert doc["project"]["dependencies"] == ["numpy", "torch==2.14.1+cu126; sys_platform == 'linux'", f"torch=={newest_mac}; sys_platform == 'darwin'"]
    assert doc["tool"]["uv"]["sources"]["torch"] == [{"index": "pytorch-cu126", "marker": "sys_platform == 'linux'"}]
    assert doc["tool"]["uv"]["index"] == [{"name": "pytorch-cu126", "url": "https://download.pytorch.org/whl/cu126", "explicit": True}]
    assert "# ours" in text and doc["tool"]["cudafit"]["targets"][1]["name"] == "laptop"
    assert fleet("--inventory", str(path), "--format", "uv-project", "-o", str(path)).exit_code == 0
    assert path.read_text() == text  # a second run changes nothing
    refused = fleet("--inventory", str(path), "--format", "pip")
    assert refused.exit_code == 2 and "only --format uv-project" in refused.stderr


def test_single_platform_fleet_prints_any_format():
    result = fleet("--inventory", str(KUBE), "--format", "pip")
    assert result.exit_code == 0 and result.stdout == "pip install --index-url https://download.pytorch.org/whl/cu118 torch==2.7.1+cu118\n"
    assert fleet("--inventory", str(KUBE), "--format", "pip", "--json").exit_code == 2


def test_targets_mean_what_check_reads(tmp_path):
    project = tmp_path / "targets.txt"  # recognised by content, not by name
    project.write_text(
        '[[tool.cudafit.targets]]\nname = "old-mac"\nos = "macos"\narch = "arm64"\nmacos = "13.6"\npython = "3.10"\n\n'
        '[[tool.cudafit.targets]]\nname = "t4"\ngpu = "Tesla T4"\n'  # no driver: unknown, not "none"
    )
    data = json.loads(fleet("--inventory", str(project), "--json").stdout)
    assert data["platforms"]["macos"]["packages"][0]["requirement"] == "torch==2.11.0"  # macOS 13.6 and Python 3.10
    t4 = next(c for c in data["classes"] if c["key"] == "t4")
    assert "+cu" in t4["best"][0]["requirement"]  # a CUDA build for the driver floor, not the CPU build
    typo = tmp_path / "typo.toml"
    typo.write_text('[[tool.cudafit.targets]]\nname = "a"\ndriverr = "535.104.05"\n')
    result = fleet("--inventory", str(typo))
    assert result.exit_code == 2 and "[[tool.cudafit.targets]] #1 (a): unknown key driverr" in result.stderr
    bad_os = tmp_path / "os.toml"
    bad_os.write_text('[[tool.cudafit.targets]]\nname = "p9"\nos = "plan9"\n')
    assert fleet("--inventory", str(bad_os)).exit_code == 2
    not_table = tmp_path / "t.toml"
    not_table.write_text("[tool]\ncudafit = 3\n")
    result = fleet("--inventory", str(not_table))
    assert result.exit_code == 2 and "Traceback" not in result.output


def test_wsl_counts_as_linux_and_one_set_is_written_once(tmp_path):
    project = tmp_path / "pyproject.toml"
    project.write_text(
        '[tool.cudafit]\n[[tool.cudafit.targets]]\nname = "v100"\ndriver = "470.82.01"\ngpu = "Tesla V100-SXM2-16GB"\n\n'
        '[[tool.cudafit.targets]]\nname = "desk"\nos = "wsl"\ndriver = "566.36"\ngpu = "NVIDIA GeForce RTX 4090"\n'
    )
    data = json.loads(fleet("--inventory", str(project), "--json").stdout)
    assert data["fleet"]["packages"][0]["requirement"] == "torch==2.7.1+cu118" and data["platforms"] == {}
    assert fleet("--inventory", str(project), "--format", "pip").exit_code == 0
    assert fleet("--inventory", str(project), "--format", "uv-project", "-o", str(project)).exit_code == 0
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    doc = tomllib.loads(project.read_text())
    assert doc["project"]["dependencies"] == ["torch==2.7.1+cu118"] and doc["project"]["name"] == "cudafit"  # lockable: a name and a version


def test_slurm_doctor_keeps_what_answered_before_a_timeout():
    from cudafit.fleet import doctor

    def runner(argv, timeout):
        if argv[0] == "sinfo":
            return 0, "n1\nn2\n", ""
        doc = json.dumps({"ok": True, "machine": A100, "findings": []})
        return doctor.TIMED_OUT, f"0: @@cudafit-node n1\n0: {doc}\n", "\nsrun: stopped after 3 s"

    reports = doctor.slurm("gpu", [], runner=runner, timeout=3)
    assert [(r.node, r.doc is not None) for r in reports] == [("n1", True), ("n2", False)]
    assert reports[1].error == "no answer in 3 s"


def test_dcgm_scrape_with_other_metrics_and_escapes():
    scrape = (
        b"\n# HELP go_gc_duration_seconds x\n# TYPE go_gc_duration_seconds summary\ngo_gc_duration_seconds{quantile=\"0\"} 1\n"
        b'DCGM_FI_DEV_GPU_TEMP{gpu="0",modelName="Tesla T4",Hostname="a\\"b",DCGM_FI_DRIVER_VERSION="535.183.06"} 40\n'
        b'DCGM_FI_DEV_GPU_TEMP{gpu="0",Hostname="x" 41\n'
    )
    with pytest.raises(InputError, match=":6: a DCGM sample without its"):
        list(inventory.read(io.BytesIO(scrape), "m", DEFAULTS))
    nodes = list(inventory.read(io.BytesIO(scrape.rsplit(b"\n", 2)[0] + b"\n"), "m", DEFAULTS))
    assert nodes[0].name == 'a"b' and nodes[0].gpus == ("Tesla T4",)


# --- a GPU cluster is never answered with a CPU build (issue 23, item 1) -----------------------

CLUSTER = FIXTURES / "slurm-gpu-cluster.txt"  # a100 x2, h100 x2, gh200 (aarch64), one CPU login node
DRIVERS = ["--driver-feature", "nvdriver_(.+)"]


def test_gres_types_that_name_a_gpu_family_are_read_by_default():
    result = fleet("--inventory", str(CLUSTER), *DRIVERS)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[1] == "every class runs: torch==2.14.1+cu126"
    data = json.loads(fleet("--inventory", str(CLUSTER), *DRIVERS, "--json").stdout)
    assert data["ok"] is True and data["partial"] is False
    assert data["fleet"]["packages"][0]["requirement"] == "torch==2.14.1+cu126"
    classes = {c["key"]: c for c in data["classes"]}
    assert set(classes) == {"a100-535.104.05", "h100-550.54.15", "gh200-560.35.03-linux-aarch64", "no-gpu"}
    assert classes["h100-550.54.15"]["machine"]["gpus"] == [{"name": "NVIDIA H100", "compute_capability": "9.0"}]
    assert classes["gh200-560.35.03-linux-aarch64"]["machine"]["gpus"][0]["compute_capability"] == "9.0"
    assert classes["no-gpu"]["best"] is None  # the login node has its own class and decides nothing
    assert "GRES type 'h100' read as NVIDIA H100 (sm_90); --gres-map overrides" in data["notes"]
    assert "GRES type 'a100' read as NVIDIA A100 (sm_80); --gres-map overrides" in data["notes"]
    assert any(n.startswith("GRES type 'gh200' read as NVIDIA GH200 (sm_90") for n in data["notes"])


def test_gres_map_overrides_the_default_reading():
    data = json.loads(fleet("--inventory", str(CLUSTER), *DRIVERS, "--gres-map", "h100=NVIDIA H100 PCIe", "--json").stdout)
    assert "h100-pcie-550.54.15" in {c["key"] for c in data["classes"]}
    assert not any("GRES type 'h100'" in n for n in data["notes"]) and any("GRES type 'a100'" in n for n in data["notes"])


def test_a_gpu_cluster_whose_gpu_nodes_cannot_be_placed_gets_no_cpu_answer():
    result = fleet("--inventory", str(CLUSTER))  # no driver: every GPU node is set aside
    assert result.exit_code == 1, result.output
    assert "+cpu" not in result.stdout and "every class runs" not in result.stdout
    data = json.loads(fleet("--inventory", str(CLUSTER), "--json").stdout)
    assert data["ok"] is False and data["fleet"] is None
    assert "5 GPU node(s)" in data["notes"][0] and "no driver" in data["notes"][0]


@pytest.mark.parametrize(
    "kind, name, cc",
    [
        ("a100", "NVIDIA A100", "8.0"),
        ("h100", "NVIDIA H100", "9.0"),
        ("h200", "NVIDIA H200", "9.0"),
        ("gh200", "NVIDIA GH200", "9.0"),  # no table entry of that name: every GH200 the table has is sm_90
        ("l40s", "NVIDIA L40S", "8.9"),
        ("v100", "NVIDIA V100", "7.0"),
        ("t4", "Tesla T4", "7.5"),
        ("a10", "NVIDIA A10", "8.6"),
        ("rtx3090", "NVIDIA GeForce RTX 3090", "8.6"),
        ("H100", "NVIDIA H100", "9.0"),
        ("nvidia_h100_80gb_hbm3", "NVIDIA H100 80GB HBM3", "9.0"),  # Slurm's AutoDetect=nvml names
        ("tesla_v100-sxm2-16gb", "Tesla V100-SXM2-16GB", "7.0"),
        ("rtx", None, "differ in compute capability"),
        ("rtx6000", None, "differ in compute capability"),  # Quadro RTX 6000 (sm_75) or the Ada one (sm_89)
        ("gpu", None, "names no GPU in cudafit's GPU table"),
        ("mystery", None, "names no GPU in cudafit's GPU table"),
    ],
)
def test_default_gres_reading(matrices, kind, name, cc):
    from cudafit.fleet.gres import read_gres_type

    reading = read_gres_type(matrices.gpus, kind)
    if name is None:
        assert reading.name is None and cc in (reading.problem or "") and f"--gres-map {kind}=" in (reading.problem or "")
    else:
        assert (reading.name, reading.compute_capability, reading.problem) == (name, cc, None)


def test_nodes_that_cannot_be_placed_make_the_answer_partial(tmp_path):
    inv = tmp_path / "nodes.txt"
    inv.write_text(
        CLUSTER.read_text()
        + "NodeName=odd-01 Arch=x86_64 ActiveFeatures=nvdriver_550.54.15 Gres=gpu:rtx:4 Partitions=gpu\n"
        + "NodeName=arm-login Arch=aarch64 Gres=(null) Partitions=cpu\n"  # a CPU node on another arch decides nothing either
    )
    result = fleet("--inventory", str(inv), *DRIVERS)
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert lines[1].startswith("partial answer: 1 GPU node(s) could not be placed") and "--allow-partial" in lines[1]
    assert lines[2] == "every placed class runs: torch==2.14.1+cu126"
    data = json.loads(fleet("--inventory", str(inv), *DRIVERS, "--json").stdout)
    assert data["ok"] is False and data["partial"] is True and data["fleet"]["packages"][0]["requirement"] == "torch==2.14.1+cu126"
    odd = next(c for c in data["classes"] if c["sample_nodes"] == ["odd-01"])
    assert "GRES type 'rtx'" in odd["problem"] and "differ in compute capability" in odd["problem"]
    allowed = fleet("--inventory", str(inv), *DRIVERS, "--allow-partial", "--json")
    assert allowed.exit_code == 0 and json.loads(allowed.stdout)["ok"] is True
    refused = fleet("--inventory", str(inv), *DRIVERS, "--format", "pip")
    assert refused.exit_code == 1 and refused.stdout == "" and "--allow-partial" in refused.stderr and "Traceback" not in refused.output
    written = fleet("--inventory", str(inv), *DRIVERS, "--format", "pip", "--allow-partial")
    assert written.exit_code == 0 and "torch==2.14.1+cu126" in written.stdout


def test_a_cpu_cluster_is_still_answered_with_a_cpu_build(tmp_path):
    inv = tmp_path / "cpu.txt"
    inv.write_text("NodeName=c1 Arch=x86_64 Gres=(null) Partitions=cpu\nNodeName=c2 Arch=x86_64 Gres=(null) Partitions=cpu\n")
    result = fleet("--inventory", str(inv))
    assert result.exit_code == 0 and re.search(r"every class runs: torch==[\d.]+\+cpu\n", result.stdout), result.stdout


def test_default_driver_for_kubernetes_nodes_without_driver_labels(tmp_path):
    items = [{"metadata": {"name": f"l40s-{i}", "labels": {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-L40S"}}} for i in range(2)]
    (tmp_path / "k.json").write_text(json.dumps({"kind": "List", "items": items}))
    without = fleet("--inventory", str(tmp_path / "k.json"), "--json")
    assert without.exit_code == 1 and "no driver labels" in json.loads(without.stdout)["classes"][0]["problem"]
    assert "--default-driver" in json.loads(without.stdout)["classes"][0]["problem"]
    result = fleet("--inventory", str(tmp_path / "k.json"), "--default-driver", "550.54.15", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [c["key"] for c in data["classes"]] == ["l40s-550.54.15"] and data["fleet"]["packages"][0]["requirement"] == "torch==2.14.1+cu126"
    labelled = {"nvidia.com/gpu.product": "NVIDIA-L40S", "nvidia.com/cuda.driver-version.full": "535.104.05"}
    node = kube_node({"metadata": {"name": "x", "labels": labelled}}, "x", Options(default_driver="550.54.15"))
    assert node.driver == "535.104.05"  # the node's own labels win


def test_a_gres_map_to_an_unknown_gpu_is_bad_input():
    """A typo in --gres-map is the user's input, refused as --gpu refuses it: never a partial answer."""
    from click.testing import CliRunner

    from cudafit.cli import main

    inventory = str(Path(__file__).parent / "fixtures" / "fleet" / "slurm-gpu-cluster.txt")
    result = CliRunner().invoke(main, ["fleet", "resolve", "--inventory", inventory, "--gres-map", "a100=banana"])
    assert result.exit_code == 2 and "a100='banana'" in result.stderr


def test_scontrol_show_nodes_in_its_default_form_is_the_same_inventory(tmp_path):
    # `scontrol show nodes` without -o: each node's fields on indented lines under NodeName=, a blank line between nodes
    one_line = (FIXTURES / "slurm-nodes.txt").read_text().splitlines()
    blocks = []
    for line in one_line:
        words = line.split(" ")
        blocks.append("\n".join([" ".join(words[:3]) + " ", *("   " + " ".join(words[i : i + 3]) for i in range(3, len(words), 3))]) + "\n")
    multi = tmp_path / "scontrol.txt"
    multi.write_text("\n".join(blocks))
    args = ("--driver-feature", "nvdriver_(.+)", "--json")
    a = json.loads(fleet("--inventory", str(FIXTURES / "slurm-nodes.txt"), *args).stdout)
    b = json.loads(fleet("--inventory", str(multi), *args).stdout)
    assert a == b and a["fleet"]
    bad = tmp_path / "bad.txt"
    bad.write_text("NodeName=a Gres=gpu:a100:1\nPartitions=gpu\n")
    result = fleet("--inventory", str(bad), *args)
    assert result.exit_code == 2 and "bad.txt:2:" in result.stderr
