"""`cudafit matrix` (issue 28): releases by builds for a machine, a driver, several GPUs or a
fleet, as a table, JSON, an HTML page and CI matrices. The cells are the solver's own judgment:
the marked build is the one `cudafit resolve` picks, on every machine of the table below."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudafit.cli import main

LINUX = ["--os", "linux", "--arch", "x86_64", "--python", "3.12"]
FLEET = Path(__file__).parent / "fixtures" / "fleet" / "kubectl-mixed.json"

# old and new drivers, Maxwell to Blackwell, Windows, WSL, macOS, Jetson, AMD, no GPU
MACHINES = [
    ["--gpu", "Tesla V100-SXM2-16GB", "--driver", "535.104.05", *LINUX],
    ["--gpu", "NVIDIA GeForce GTX 1080", "--driver", "580.65.06", *LINUX],
    ["--gpu", "Tesla K80", "--driver", "470.82.01", *LINUX],
    ["--gpu", "NVIDIA GeForce GTX 970", "--driver", "550.54.15", *LINUX],
    ["--gpu", "NVIDIA GeForce RTX 5090", "--driver", "575.57.08", *LINUX],
    ["--gpu", "NVIDIA H100 80GB HBM3", "--driver", "580.65.06", *LINUX],
    ["--gpu", "NVIDIA GeForce RTX 4090", "--driver", "566.36", "--os", "windows", "--arch", "x86_64", "--python", "3.12"],
    ["--gpu", "NVIDIA GeForce RTX 3060", "--driver", "560.94", "--os", "wsl", "--arch", "x86_64", "--python", "3.11"],
    ["--os", "macos", "--arch", "aarch64", "--python", "3.12", "--macos", "14.5"],
    ["--jetpack", "6.2", "--python", "3.10"],
    ["--gfx", "gfx1100", *LINUX],
    ["--driver", "none", *LINUX],
    ["--gpu", "NVIDIA GeForce RTX 3090", *LINUX],  # driver not given: every cell says its driver floor
]


def run(*args: str):
    return CliRunner().invoke(main, ["matrix", *args])


def as_json(*args: str) -> dict:
    result = run(*args, "--json")
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize("machine", MACHINES, ids=lambda m: " ".join(m[:2]))
def test_the_marked_cell_is_the_build_resolve_picks(machine):
    doc = as_json(*machine)
    (group,) = doc["groups"]
    answer = CliRunner().invoke(main, ["resolve", "torch", *machine, "--json"])
    resolved = json.loads(answer.stdout)
    if not resolved["ok"]:
        assert group["best"] is None
        return
    torch = next(p for p in resolved["packages"] if p["name"] == "torch")
    assert group["best"] == {"version": torch["version"].split("+")[0], "variant": torch["variant"]}  # Jetson's carry a local part
    best = [c for c in group["cells"] if c["best"]]
    assert len(best) == 1 and best[0]["status"] == "runs" and torch["version"] in best[0]["requirement"]


@pytest.mark.parametrize("machine", MACHINES, ids=lambda m: " ".join(m[:2]))
def test_the_table_fits_100_columns(machine):
    result = run(*machine)
    assert result.exit_code in (0, 1), result.output
    assert "\x1b[" not in result.stdout  # colour only on a terminal
    lines = result.stdout.splitlines()
    table = [line for line in lines if line.startswith(("release ", "driver>=")) or re.match(r"\d+\.\d+", line)]
    assert len(table) >= 2 and max(len(line) for line in table) <= 100, table
    assert all(len(line) <= 100 for line in lines)  # the title and the notes wrap


def test_a_v100_on_a_cuda_12_driver():
    result = run("--gpu", "Tesla V100-SXM2-16GB", "--driver", "535.104.05", *LINUX, "--since", "2.0")
    assert result.exit_code == 0
    rows = {line.split()[0]: line.split()[1:] for line in result.stdout.splitlines() if re.match(r"\d+\.\d+\.\d+ ", line)}
    header = next(line for line in result.stdout.splitlines() if line.startswith("release ")).split()[1:]
    cell = dict(zip(header, rows["2.14.1"], strict=True))
    assert cell["cu126"] == "*ok" and cell["cu130"] == "xd" and cell["cpu"] == "cpu"
    assert dict(zip(header, rows["2.13.0"], strict=True))["cu129"] == "xk"  # no sm_70 kernels in its cu129 build
    assert set(rows["2.1.0"]) <= {"xp", "."}  # no wheel for Python 3.12
    assert "rocm6.4" not in header  # another vendor's builds are not columns here
    assert "torch 2.14.x is the last release line with kernels for sm_70" in result.stdout
    assert "xd the driver, e.g. 2.15.0 cu132: driver 535.104.05 < 580" in result.stdout


def test_without_a_driver_each_build_says_the_driver_it_needs():
    result = run("--gpu", "Tesla T4", *LINUX, "--since", "2.12")
    lines = result.stdout.splitlines()
    at = next(n for n, line in enumerate(lines) if line.startswith("release "))
    header, floors = lines[at].split(), lines[at + 1].split()
    assert floors[0] == "driver>=" and dict(zip(header[1:], floors[1:], strict=False))["cu126"] == "525.60.13"
    assert dict(zip(header[1:], floors[1:], strict=False))["cu130"] == "580"


def test_since_and_a_spec_bound_the_rows():
    assert as_json("--gpu", "Tesla T4", "--driver", "580.65.06", *LINUX, "--since", "2.12")["releases"][-1] == "2.12.0"
    doc = as_json("torch>=2.10,<2.13", "--gpu", "Tesla T4", "--driver", "580.65.06", *LINUX)
    assert doc["releases"][0] == "2.12.1" and doc["releases"][-1] == "2.10.0" and doc["spec"] == "torch>=2.10,<2.13"


def test_several_gpus_get_a_column_each_on_one_driver():
    result = run("--driver", "470.82.01", "--gpu", "Tesla K80", "--gpu", "Tesla T4", *LINUX, "--since", "2.6")
    assert result.exit_code == 0
    assert "A: linux-x86_64, Python 3.12, driver 470.82.01, Tesla K80 (sm_37)" in result.stdout
    row = next(line for line in result.stdout.splitlines() if line.startswith("2.7.1"))
    assert row.split() == ["2.7.1", "cu118*", "cu118*"]
    row = next(line for line in result.stdout.splitlines() if line.startswith("2.15.0"))
    assert row.split() == ["2.15.0", "xd", "xd"]  # R470 runs CUDA 11 at most


def test_a_slurm_inventory_reads_as_fleet_resolve_reads_it():
    slurm = Path(__file__).parent / "fixtures" / "fleet" / "slurm-nodes.txt"
    flags = ["--gres-map", "a100=NVIDIA A100-SXM4-80GB", "--gres-map", "v100=Tesla V100-SXM2-16GB", "--driver-feature", "nvdriver_(.+)"]
    doc = as_json("--inventory", str(slurm), "--python", "3.12", *flags)
    assert doc["groups"] and all(g["machine"]["gpus"] for g in doc["groups"])


def test_a_fleet_gets_a_group_per_node_class():
    doc = as_json("--inventory", str(FLEET), "--python", "3.12")
    assert len(doc["groups"]) >= 3 and all(g["nodes"] >= 1 for g in doc["groups"])
    fleet = json.loads(CliRunner().invoke(main, ["fleet", "resolve", "--inventory", str(FLEET), "--python", "3.12", "--json"]).stdout)
    # each class's marked build is that class's own answer
    answers = {c["key"]: c for c in fleet["classes"]}
    for group in doc["groups"]:
        own = answers[group["label"]].get("answer") or {}
        torch = next((p for p in own.get("packages", []) if p["name"] == "torch"), None)
        if torch is not None:
            assert group["best"] == {"version": torch["version"], "variant": torch["variant"]}


@pytest.mark.parametrize("framework", ["tensorflow", "jax", "onnxruntime-gpu", "xformers"])
def test_other_frameworks(framework):
    machine = ["--gpu", "NVIDIA A100-SXM4-80GB", "--driver", "580.65.06", *LINUX]
    doc = as_json("--framework", framework, *machine)
    assert doc["framework"] == framework and doc["releases"]
    resolved = json.loads(CliRunner().invoke(main, ["resolve", framework, *machine, "--json"]).stdout)
    if resolved["ok"] and doc["groups"][0]["best"]:
        mine = next(p for p in resolved["packages"] if p["name"] in (framework, "jax", "tensorflow"))
        assert doc["groups"][0]["best"]["version"] == mine["version"]


def test_github_matrix_lists_builds_that_run_on_every_target():
    result = run("--gpu", "Tesla V100-SXM2-16GB", "--gpu", "NVIDIA A100-SXM4-80GB", "--driver", "580.65.06", *LINUX, "--since", "2.12", "--format", "github")
    assert result.exit_code == 0 and result.stdout.count("\n") == 1  # one line, for $GITHUB_OUTPUT
    include = json.loads(result.stdout)["include"]
    assert include[0] == {
        "python": "3.12",
        "torch": "2.14.1",
        "variant": "cu126",
        "index_url": "https://download.pytorch.org/whl/cu126",
        "requirement": "torch==2.14.1+cu126",
        "driver_min": "525.60.13",
    }
    assert "2.15.0" not in {e["torch"] for e in include}  # no sm_70 kernels: not on every target


def test_github_matrix_adds_the_oldest_driver_build_of_the_newest_release():
    include = json.loads(run("--gpu", "NVIDIA A100-SXM4-80GB", "--driver", "580.65.06", *LINUX, "--since", "2.14", "--format", "github").stdout)["include"]
    oldest = [e for e in include if e.get("oldest_driver")]
    assert len(oldest) <= 1
    for e in oldest:
        assert e["torch"] == include[0]["torch"] and e["driver_min"] < include[0]["driver_min"]


def test_gitlab_matrix_is_a_job_template():
    from ruamel.yaml import YAML

    result = run("--gpu", "Tesla T4", "--driver", "580.65.06", *LINUX, "--since", "2.14", "--format", "gitlab")
    doc = YAML(typ="safe").load(result.stdout)
    rows = doc[".cudafit-matrix"]["parallel"]["matrix"]
    assert rows and all(isinstance(v, str) for row in rows for v in row.values())
    assert rows[0]["TORCH"] == "2.15.0" and rows[0]["PYTHON"] == "3.12"


@pytest.mark.parametrize("fmt", ["github", "gitlab"])
def test_no_build_on_every_machine_is_an_error_not_an_empty_matrix(fmt, tmp_path: Path):
    """GitHub Actions and GitLab reject an empty matrix: exit 1, nothing on stdout, why on stderr."""
    result = run("--inventory", str(FLEET), "--since", "2.12", "--format", fmt)
    assert result.exit_code == 1 and result.stdout == ""
    assert "no torch build of 2.12.0 to 2.15.0 runs on every machine, and a CI matrix cannot be empty" in result.stderr
    # the class that runs none of them, and why (a build the others take fails there)
    assert "none runs on v100-sxm2-16gb-470.256.02: e.g. 2.14.1 cu126: driver 470.256.02 < 525.60.13" in result.stderr
    out = tmp_path / "matrix.out"
    result = run("--inventory", str(FLEET), "--since", "2.12", "--format", fmt, "-o", str(out))
    assert result.exit_code == 1 and not out.exists()  # no file a CI system would reject
    one = run("torch>=2.15", "--gpu", "Tesla V100-SXM2-16GB", "--driver", "580.65.06", *LINUX, "--format", fmt)
    assert one.exit_code == 1 and one.stdout == "" and "runs on the machine" in one.stderr and "no kernel image" in one.stderr


def test_the_fleet_still_gets_a_matrix_where_its_builds_meet():
    result = run("--inventory", str(FLEET), "--since", "2.6", "--format", "github")
    assert result.exit_code == 0, result.output
    include = json.loads(result.stdout)["include"]
    assert include and all(e["variant"] == "cu118" for e in include)  # R470 on one class: CUDA 11 only


@pytest.mark.parametrize(
    "args, said",
    [
        (["--since", "two"], "'two' is not a version"),
        (["--inventory", str(FLEET), "--gpu", "Tesla T4"], "of the machine options only --python goes with it"),
        (["--default-driver", "535.104.05", *LINUX], "are for --inventory"),
        (["--inventory", str(FLEET), "--gres-map", "a100"], "expected TYPE=GPU NAME"),
        (["--format", "html", "--json"], "two different outputs"),
        (["nosuchframework", *LINUX], "nosuchframework"),
        (["torch", "tensorflow", *LINUX], "a matrix shows one framework"),
        (["--inventory", "/nonexistent/inventory.json"], "/nonexistent/inventory.json"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, said):
    result = run(*args)
    assert result.exit_code == 2 and said in result.stderr and "Traceback" not in result.output


def test_no_release_in_the_bounds():
    result = run("torch>=9", "--gpu", "Tesla T4", "--driver", "580.65.06", *LINUX)
    assert result.exit_code == 1 and "no release of the data matches" in result.stdout


# --- the HTML page -------------------------------------------------------------------------------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (apt-get install chromium)")


def page(tmp_path: Path, *args: str) -> Path:
    out = tmp_path / "matrix.html"
    result = run(*args, "--format", "html", "-o", str(out))
    assert result.exit_code == 0, result.output
    return out


def test_the_page_is_self_contained(tmp_path: Path):
    text = page(tmp_path, "--gpu", "Tesla V100-SXM2-16GB", "--driver", "535.104.05", *LINUX).read_text()
    assert text.startswith("<!doctype html>") and 'name="viewport"' in text and "@media print" in text
    for outside in ("<link", "<img", "src=", "@import", "url(", "<iframe"):
        assert outside not in text
    assert "data of 2026-" in text and "Tesla V100-SXM2-16GB" in text


def _browser(*args: str, timeout: int = 90) -> subprocess.CompletedProcess:
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", *args],
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


@needs_chromium
def test_chromium_renders_the_table_and_the_marked_cell(tmp_path: Path):
    html = page(tmp_path, "--gpu", "Tesla V100-SXM2-16GB", "--driver", "535.104.05", *LINUX, "--since", "2.4")
    dom = _browser("--dump-dom", html.as_uri()).stdout
    assert "<table>" in dom and dom.count('<tr data-release="') == 18  # 2.4.0 to 2.15.0
    marked = re.findall(r'<td class="runs best"[^>]*data-where="([^"]+)"', dom)
    assert marked == ["2.14.1 cu126"]
    shot = tmp_path / "matrix.png"
    _browser(f"--screenshot={shot}", "--window-size=1000,1300", html.as_uri())
    assert shot.stat().st_size > 20_000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_projects_workflow_runs_the_suite_over_a_matrix_cudafit_produced():
    import shlex

    from ruamel.yaml import YAML

    workflow = YAML(typ="safe").load((Path(__file__).parent.parent / ".github" / "workflows" / "tests.yml").read_text())
    step = next(s for s in workflow["jobs"]["matrix"]["steps"] if s.get("id") == "cudafit")
    command = shlex.split(re.search(r"\$\((cudafit matrix [^)]*)\)", step["run"])[1])
    result = run(*command[2:])
    assert result.exit_code == 0, result.output
    include = json.loads(result.stdout)["include"]
    assert include and all(e["variant"] == "cpu" for e in include)
    used = set(re.findall(r"\bmatrix\.(\w+)", json.dumps({k: v for k, v in workflow["jobs"]["suite"].items() if k != "strategy"})))
    assert used <= set(include[0]), used - set(include[0])


# The README's pictures: three described machines and a fleet, taken by this browser run
# (CUDAFIT_SCREENSHOTS=docs/images pytest tests/test_matrix.py -k screenshots writes them there).
PICTURES = {
    "matrix-v100": ["--gpu", "Tesla V100-SXM2-16GB", "--driver", "535.104.05", *LINUX, "--since", "2.6"],
    "matrix-rtx5090-windows": ["--gpu", "NVIDIA GeForce RTX 5090", "--driver", "576.02", "--os", "windows", "--arch", "x86_64", "--python", "3.12", "--since", "2.6"],
    "matrix-rx7900xtx": ["--gpu", "AMD Radeon RX 7900 XTX", *LINUX, "--since", "2.6"],
    "matrix-fleet": ["--inventory", str(FLEET), "--python", "3.12", "--since", "2.6"],
}


@needs_chromium
@pytest.mark.parametrize("name", sorted(PICTURES))
def test_screenshots_of_the_pages(tmp_path: Path, name: str):
    import os

    html = page(tmp_path, *PICTURES[name])
    dom = _browser("--dump-dom", html.as_uri()).stdout
    assert 1 <= dom.count('class="runs best"') <= dom.count("<table>")  # at most one marked cell per table
    folder = Path(os.environ.get("CUDAFIT_SCREENSHOTS") or tmp_path)
    shot = folder / f"{name}.png"
    _browser(f"--screenshot={shot}", "--window-size=900,1100", "--hide-scrollbars", html.as_uri())
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@needs_chromium
def test_the_release_filter_takes_whole_version_parts(tmp_path: Path):
    # "2.1" is the 2.1 line: not 2.10 to 2.15, as a plain prefix would have it
    html = page(tmp_path, "--gpu", "Tesla V100-SXM2-16GB", "--driver", "535.104.05", *LINUX, "--since", "2.0")
    typed = tmp_path / "typed.html"
    typing = "<script>var f=document.getElementById('filter');f.value='2.1';f.dispatchEvent(new Event('input'));</script>"
    typed.write_text(html.read_text().replace("</body>", typing + "</body>"))
    dom = _browser("--dump-dom", typed.as_uri()).stdout
    shown = re.findall(r'<tr data-release="([^"]+)"(?![^>]*hidden)', dom)
    assert shown and all(v == "2.1" or v.startswith("2.1.") for v in shown), shown
    assert re.search(r'<tr data-release="2\.10\.0"[^>]*hidden', dom)
