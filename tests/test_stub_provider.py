"""A new framework is a provider module, its reader, its data folder and one line in the registry:
nothing else in cudafit names a framework. The drill: a copy of the package with a stub family
(`stubfw`, made from the ONNX Runtime provider with every name changed) and a copy of the data
with its files, then every command run over it in a fresh process."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
STUB = "stubfw"
MACHINE = ["--os", "linux", "--arch", "x86_64", "--python", "3.12", "--driver", "580.65.06", "--gpu", "NVIDIA GeForce RTX 3090"]


def _renamed(text: str) -> str:
    return text.replace("onnxruntime-gpu", STUB).replace("onnxruntime/onnxruntime-", f"{STUB}/{STUB}-")


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("stub")
    package = root / "cudafit"
    shutil.copytree(ROOT / "resolver" / "cudafit", package, ignore=shutil.ignore_patterns("__pycache__"))
    frameworks = package / "frameworks"
    for part in ("", "_data"):
        (frameworks / f"{STUB}{part}.py").write_text(_renamed((frameworks / f"onnxruntime{part}.py").read_text()))
    registry = (frameworks / "__init__.py").read_text()
    line = f'    ("{STUB}", "{STUB}", ("{STUB}",)),\n'
    registry, count = re.subn(r"(REGISTRY: tuple\[.*?\] = \(\n)", lambda m: m.group(1) + line, registry, count=1)
    assert count == 1, "the registry's first line was not found"
    (frameworks / "__init__.py").write_text(registry)
    data = root / "matrices"
    shutil.copytree(ROOT / "matrices", data)
    (data / STUB).mkdir()
    for path in sorted((ROOT / "matrices" / "onnxruntime").glob("*.toml")):
        (data / STUB / path.name.replace("onnxruntime", STUB)).write_text(_renamed(path.read_text()))
    env = root / "venv"
    site = env / "lib" / "python3.12" / "site-packages"
    (env / "bin").mkdir(parents=True)
    (env / "bin" / "python").write_text("")
    (env / "bin" / "python").chmod(0o755)
    (env / "pyvenv.cfg").write_text("version = 3.12.3\n")
    info = site / f"{STUB}-1.31.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {STUB}\nVersion: 1.31.1\n")
    (root / "requirements.txt").write_text(f"{STUB}==1.31.1\ntorch==2.14.1\n")
    return root


def cudafit(tree: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(tree),
        "CUDAFIT_DATA_DIR": str(tree / "matrices"),
        "CUDAFIT_CACHE_DIR": str(tree / "cache"),
        "PATH": "/usr/bin:/bin",  # no nvidia-smi, no uv: the machine is described
    }
    code = "import sys; from cudafit.cli import run; sys.exit(run(sys.argv[1:]))"
    result = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, cwd=tree, timeout=120)
    assert "Traceback" not in result.stderr, result.stderr
    return result


def test_the_copy_knows_the_stub(tree: Path) -> None:
    result = cudafit(tree, "data", "check", "--dir", str(tree / "matrices"))
    assert result.returncode == 0 and f"{STUB}" in result.stdout, result.stderr
    status = cudafit(tree, "data", "status", "--json")
    assert status.returncode == 0 and json.loads(status.stdout)["newest"][STUB] == "1.31.1", status.stdout
    (tree / "bundles").mkdir(exist_ok=True)
    bundle = cudafit(tree, "data", "bundle", "--dir", str(tree / "matrices"), "-o", str(tree / "bundles") + "/")
    assert bundle.returncode == 0 and any((tree / "bundles").iterdir()), bundle.stderr


def test_resolve_answers_the_stub_in_every_form(tree: Path) -> None:
    result = cudafit(tree, "resolve", STUB, *MACHINE, "--json")
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert [p["name"] for p in answer["packages"]] == [STUB] and answer["packages"][0]["version"] == "1.31.1"
    for fmt in ("pip", "uv", "uv-project", "requirements", "conda", "environment.yml"):
        result = cudafit(tree, "resolve", STUB, *MACHINE, "--format", fmt)
        assert result.returncode == 0 and re.search(rf"{STUB}(\[[a-z,]+\])?==1\.31\.1", result.stdout), (fmt, result.stdout, result.stderr)
    joint = cudafit(tree, "resolve", "torch", STUB, *MACHINE)
    assert joint.returncode == 0 and "torch==" in joint.stdout and f"chosen: {STUB}" in joint.stdout
    why = cudafit(tree, "resolve", STUB, *MACHINE, "--why", f"{STUB}==1.30.0")
    assert why.returncode == 0 and "why not" in why.stdout
    unknown = cudafit(tree, "resolve", "stubfx", *MACHINE)
    assert unknown.returncode == 2 and STUB in unknown.stderr  # the registry's names are the known ones


def test_install_check_doctor_detect_fleet_and_coverage_run_over_it(tree: Path) -> None:
    install = cudafit(tree, "install", STUB, "--env", str(tree / "venv"), "--dry-run", "--format", "pip", "--driver", "580.65.06", "--gpu", "NVIDIA GeForce RTX 3090")
    assert install.returncode == 0 and re.search(rf"{STUB}(\[[a-z,]+\])?==1\.31\.1", install.stdout), install.stderr
    check = cudafit(tree, "check", "requirements.txt", "--output-format", "json")
    assert check.returncode in (0, 1), check.stderr
    json.loads(check.stdout)
    doctor = cudafit(tree, "doctor", "--env", str(tree / "venv"), *MACHINE, "--json")
    assert doctor.returncode in (0, 1) and json.loads(doctor.stdout)["schema_version"] == 1
    detect = cudafit(tree, "detect", "--env", str(tree / "venv"), *MACHINE, "--json")
    assert {"name": STUB, "version": "1.31.1"} in json.loads(detect.stdout)["frameworks"]
    coverage = cudafit(tree, "data", "coverage", "--framework", STUB, "--json")
    rows = json.loads(coverage.stdout)["rows"]
    assert rows and {r["framework"] for r in rows} == {STUB}
    inventory = ROOT / "tests" / "fixtures" / "fleet" / "kubectl-mixed.json"
    fleet = cudafit(tree, "fleet", "resolve", STUB, "--inventory", str(inventory), "--python", "3.12", "--json", "--allow-partial")
    assert fleet.returncode == 0 and STUB in fleet.stdout, fleet.stderr
