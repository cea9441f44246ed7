"""The Python API: the command line's answers as values, with a surface that does not move."""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from doctor_env import FakeEnv

import cudafit
from cudafit import detection
from cudafit.cli import main

ROOT = Path(__file__).resolve().parent.parent
LINUX = dict(os="linux", arch="x86_64", python="3.12")

# (description for the API, the same machine as command-line options, specs)
ON_LINUX = ["--os", "linux", "--arch", "x86_64", "--python", "3.12"]
REQUESTS = [
    (dict(LINUX, driver="570.86.15", gpus=["NVIDIA GeForce RTX 3090"]), [*ON_LINUX, "--driver", "570.86.15", "--gpu", "NVIDIA GeForce RTX 3090"], ["torch"]),
    (
        dict(LINUX, driver="580.65.06", gpus=["NVIDIA H100 80GB HBM3"]),
        [*ON_LINUX, "--driver", "580.65.06", "--gpu", "NVIDIA H100 80GB HBM3"],
        ["torch", "torchvision", "tensorflow"],
    ),
    (
        dict(LINUX, driver="535.104.05", compute_capability="7.0"),
        [*ON_LINUX, "--driver", "535.104.05", "--compute-capability", "7.0"],
        ["torch==2.9.1", "jax[cuda12]"],
    ),
    (
        dict(os="windows", arch="x86_64", python="3.11", driver="566.36", gpus=["NVIDIA GeForce RTX 4090"]),
        ["--os", "windows", "--arch", "x86_64", "--python", "3.11", "--driver", "566.36", "--gpu", "NVIDIA GeForce RTX 4090"],
        ["torch", "onnxruntime-gpu"],
    ),
    (dict(os="macos", arch="aarch64", python="3.12", macos="14.5"), ["--os", "macos", "--arch", "aarch64", "--python", "3.12", "--macos", "14.5"], ["torch"]),
    (dict(LINUX, driver="none"), [*ON_LINUX, "--driver", "none"], ["torch"]),
]


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout


@pytest.fixture(autouse=True)
def no_nvidia_smi(monkeypatch):
    """A described machine never reads this one's GPU side."""

    def boom(*_a, **_k):
        raise AssertionError("this machine's driver was read for a described one")

    monkeypatch.setattr(detection, "read_driver", boom)


@pytest.mark.parametrize("described,flags,specs", REQUESTS)
def test_to_dict_is_resolve_json(described, flags, specs):
    code, out = cli("resolve", *specs, *flags, "--json")
    assert code == 0, out
    plan = cudafit.resolve(specs, cudafit.describe(**described))
    assert plan.to_dict() == json.loads(out)
    assert plan.to_dict()["schema_version"] == cudafit.SCHEMA_VERSION == 1
    assert [p.requirement for p in plan.packages] == [p["requirement"] for p in json.loads(out)["packages"]]


def test_a_machine_described_without_a_driver_is_answered_per_driver_floor():
    # the command line would read this machine's driver; the API never does for a described one
    machine = cudafit.describe(**LINUX)
    assert not machine.driver_known and not machine.gpus_known and not machine.detected
    floors = cudafit.resolve(["torch"], machine).to_dict()["by_driver_floor"]
    assert [row["cuda_major"] for row in floors] == sorted({row["cuda_major"] for row in floors}, reverse=True) and any(row["chosen"] for row in floors)


@pytest.mark.parametrize("fmt", ["pip", "uv", "requirements", "uv-project", "conda", "environment.yml"])
def test_render_is_resolve_format(fmt):
    described, flags, specs = REQUESTS[0]
    code, out = cli("resolve", *specs, *flags, "--format", fmt, "--name", "demo")
    assert code == 0
    assert cudafit.resolve(specs, cudafit.describe(**described)).render(fmt, name="demo") == out


def test_commands_are_argument_lists():
    plan = cudafit.resolve(["torch", "torchvision"], cudafit.describe(**REQUESTS[0][0]))
    index = "https://download.pytorch.org/whl/cu126"
    assert plan.commands() == [["python", "-m", "pip", "install", "--index-url", index, "torch==2.14.1+cu126", "torchvision==0.29.1+cu126"]]
    assert plan.commands("uv", python="/env/bin/python") == [
        ["uv", "pip", "install", "--python", "/env/bin/python", "--index-url", index, "torch==2.14.1+cu126", "torchvision==0.29.1+cu126"]
    ]
    with pytest.raises(cudafit.InputError) as err:
        plan.commands("poetry")  # type: ignore[arg-type]
    assert err.value.field == "installer"


def test_conda_commands_take_the_conda_route_first():
    machine = cudafit.describe(os="windows", arch="x86_64", python="3.10", driver="566.36", gpus=["NVIDIA GeForce RTX 3090"])
    plan = cudafit.resolve(["tensorflow<2.11"], machine)
    first, *rest = plan.commands("conda")
    assert first[:3] == ["conda", "install", "-y"] and any(arg.startswith("cudatoolkit=") for arg in first)
    assert rest and rest[-1][:4] == ["python", "-m", "pip", "install"]


def test_packages_carry_their_evidence():
    plan = cudafit.resolve(["torch"], cudafit.describe(**REQUESTS[0][0]))
    torch = plan.packages[0]
    assert torch.name == "torch" and torch.local == "cu126" and torch.variant == "cu126"
    assert torch.evidence["sass"].grade in ("measured", "declared", "reported")
    assert plan.cuda == "12.6" and plan.reasons and plan.machine.gpus[0].compute_capability == "8.6"


@pytest.mark.parametrize(
    "kwargs,field,value",
    [
        (dict(driver="abc"), "driver", "abc"),
        (dict(gpus=["RTX 9999 Ultra"]), "gpus", "RTX 9999 Ultra"),
        (dict(compute_capability="9.9"), "compute_capability", "9.9"),
        (dict(os="beos"), "os", "beos"),
        (dict(arch="sparc"), "arch", "sparc"),
        (dict(python="4.0"), "python", "4.0"),
        (dict(os="linux", macos="14.5"), "macos", "14.5"),
        (dict(os="macos", driver="550.54.14"), "os", "macos"),
        (dict(jetson=True, os="windows"), "jetson", True),
        (dict(os="windows", wsl=True), "wsl", True),
    ],
)
def test_input_errors_name_the_argument(kwargs, field, value):
    with pytest.raises(cudafit.InputError) as err:
        cudafit.describe(**{**LINUX, **kwargs})
    assert err.value.field == field and err.value.value == value
    assert not str(err.value).startswith("--")  # the API's words, not the command line's


def test_a_contradiction_names_both_arguments():
    with pytest.raises(cudafit.InputError) as err:
        cudafit.describe(os="windows", arch="x86_64", python="3.12", driver="535.104.05")
    assert err.value.field == "driver" and err.value.others == (("os", "windows"),)
    assert str(err.value).startswith("driver '535.104.05' with os windows: ")
    result = CliRunner().invoke(main, ["resolve", "--os", "windows", "--arch", "x86_64", "--python", "3.12", "--driver", "535.104.05"])
    assert result.exit_code == 2 and "--driver '535.104.05' with --os windows: " in result.stderr


def test_a_bad_spec_names_the_spec():
    with pytest.raises(cudafit.InputError) as err:
        cudafit.resolve(["torch>>2"], cudafit.describe(**LINUX))
    assert err.value.field == "spec" and err.value.value == "torch>>2" and "column 6" in err.value.reason


def test_no_solution_carries_its_causes():
    machine = cudafit.describe(**LINUX, driver="470.82.01", gpus=["Tesla K80"])
    with pytest.raises(cudafit.NoSolution) as err:
        cudafit.resolve(["torch==2.15.0"], machine)
    causes = err.value.causes
    assert causes and all(isinstance(c, cudafit.Cause) for c in causes)
    assert {c.constraint for c in causes} >= {"driver"} and all(c.family == "torch" and c.version == "2.15.0" for c in causes)
    # what the machine lacks, as values a launcher can act on
    driver = next(c.shortfall for c in causes if c.constraint == "driver")
    assert driver == cudafit.Shortfall(quantity="driver", needs="580", has="470.82.01")
    code, out = cli("resolve", "torch==2.15.0", *ON_LINUX, "--driver", "470.82.01", "--gpu", "Tesla K80", "--json")
    assert code == 1 and err.value.to_dict() == json.loads(out)


def test_the_library_prints_nothing_and_leaves_the_environment(capsys):
    before = dict(os.environ)
    plan = cudafit.resolve(["torch", "tensorflow"], cudafit.describe(**REQUESTS[1][0]))
    plan.render("uv-project")
    plan.commands("uv")
    assert capsys.readouterr() == ("", "")
    assert dict(os.environ) == before


def test_import_costs_nothing_and_never_imports_click():
    code = (
        "import sys, cudafit; assert 'cudafit.api' not in sys.modules; "
        "m = cudafit.describe(os='linux', arch='x86_64', python='3.12', driver='570.86.15', gpus=['NVIDIA GeForce RTX 3090']); "
        "cudafit.resolve(['torch'], m).render('uv-project'); assert 'click' not in sys.modules, 'click imported'; "
        "assert 'requests' not in sys.modules, 'requests imported'"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "resolver")})
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""


def test_inspect_and_diagnose_read_an_environment(tmp_path, monkeypatch):
    monkeypatch.setattr("cudafit.doctor.libraries.DEFAULT_DIRS", ())
    monkeypatch.setattr(detection, "run_command", lambda cmd, timeout: detection.RunResult(0, ""))
    env = FakeEnv(tmp_path / "venv")
    env.torch("2.9.0+cpu", None)
    found = cudafit.inspect(env.prefix)
    assert [(b.family, b.version, b.kind) for b in found.builds] == [("torch", "2.9.0+cpu", "cpu")]
    assert found.distributions["torch"] == "2.9.0+cpu"
    machine = cudafit.describe(**LINUX, driver="535.104.05", gpus=["NVIDIA GeForce RTX 3090"])
    report = cudafit.diagnose(env.prefix, machine)
    assert not report.ok and report.findings[0].severity == "error"
    assert any(f.commands for f in report.findings)  # the fix, as doctor prints it
    assert report.fix is not None and report.fix.packages[0].requirement.startswith("torch==2.9.0+cu")  # and as a Plan
    assert report.fix.commands("pip", python="/env/bin/python")[0][:4] == ["/env/bin/python", "-m", "pip", "install"]


def test_check_paths_is_check_json():
    path = ROOT / "tests/corpus/allenai__open-instruct/requirements.txt"
    report = cudafit.check_paths([path])
    code, out = cli("check", str(path), "--output-format", "json")
    assert code == 1 and not report.ok and report.files == 1
    assert [(f.path, f.line, f.col, f.code, f.message, f.severity) for f in report.findings] == [
        (f["path"], f["line"], f["col"], f["code"], f["message"], f["severity"]) for f in json.loads(out)
    ]


def test_install_dry_run_returns_the_commands(tmp_path):
    env = FakeEnv(tmp_path / "venv")
    plan = cudafit.resolve(["torch"], cudafit.describe(**REQUESTS[0][0]))
    commands = cudafit.install(plan, env.prefix, dry_run=True, installer="pip")
    assert commands == [
        [str(env.prefix / "bin" / "python"), "-m", "pip", "install", "--index-url", "https://download.pytorch.org/whl/cu126", "torch==2.14.1+cu126"]
    ]


def test_the_launcher_example_runs():
    example = ROOT / "docs" / "examples" / "launcher.py"
    result = subprocess.run(
        [sys.executable, str(example)], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "resolver")}, timeout=120
    )
    assert result.returncode in (0, 1), result.stderr
    assert "Traceback" not in result.stderr
    if result.returncode == 0:
        assert "torch==" in result.stdout and "$ " in result.stdout


# The public surface, frozen: a change here is a change of the API's promise (docs/api.md).
SURFACE = {
    "__all__": [
        "__version__",
        "describe",
        "detect",
        "resolve",
        "inspect",
        "diagnose",
        "check_paths",
        "install",
        "Plan",
        "NoSolution",
        "InputError",
        "CudafitError",
        "InstallFailed",
        "Machine",
        "Gpu",
        "Package",
        "Evidence",
        "Cause",
        "Shortfall",
        "Environment",
        "InstalledBuild",
        "Finding",
        "Report",
        "SCHEMA_VERSION",
    ],
    "describe": "(*, os=None, arch=None, python=None, driver=None, gpus=(), compute_capability=None, jetson=False, macos=None, wsl=False, gfx=None, jetpack=None, rocm=None)",
    "detect": "()",
    "resolve": "(specs=('torch',), machine=None, *, cpu=False, strict_driver=False, mixed_cuda=False)",
    "inspect": "(env=None)",
    "diagnose": "(env=None, machine=None)",
    "check_paths": "(paths, *, targets=(), select=(), ignore=(), strict=False)",
    "install": "(plan, env=None, *, dry_run=False, installer=None, constrain=False)",
    "Plan.commands": "(self, installer='pip', *, python=None)",
    "Plan.render": "(self, format, *, name='cudafit', existing=None)",
    "Plan.to_dict": "(self)",
    "Machine": ["os", "arch", "python", "driver", "driver_known", "gpus", "gpus_known", "jetson", "macos", "jetpack", "rocm", "amdgpu", "cuda_driver_max", "warnings", "detected"],
    "Gpu": ["name", "compute_capability", "memory_mib", "vendor", "target", "integrated"],
    "Package": ["name", "version", "local", "variant", "index_url", "requirement", "extras", "find_links", "url", "evidence"],
    "Evidence": ["grade", "sources"],
    "Cause": ["family", "version", "build", "constraint", "reason", "evidence", "shortfall"],
    "Shortfall": ["quantity", "needs", "has"],
    "Environment": ["prefix", "python", "builds", "libraries", "distributions", "problems"],
    "InstalledBuild": ["family", "dist", "version", "kind", "cuda", "cudnn"],
    "Finding": ["code", "severity", "message", "fix", "commands", "path", "line", "col", "environments"],
    "Report": ["ok", "findings", "machine", "errors", "files", "fix"],
    "Plan": ["machine", "packages", "cuda", "cudnn", "pins", "reasons", "notes", "warnings", "_resolution", "environment", "_request"],
}


def _signature(obj: object) -> str:
    # annotations are strings under `from __future__ import annotations`: compare names and defaults
    sig = inspect.signature(obj)  # type: ignore[arg-type]
    return str(
        sig.replace(parameters=[p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()], return_annotation=inspect.Signature.empty)
    )


def test_the_public_surface_is_frozen():
    assert cudafit.__all__ == SURFACE["__all__"]
    for name, expected in SURFACE.items():
        if name == "__all__":
            continue
        owner, _, attribute = name.partition(".")
        obj = getattr(cudafit, owner)
        if attribute:
            assert _signature(getattr(obj, attribute)) == expected, name
        elif isinstance(expected, list):
            assert [f.name for f in dataclasses.fields(obj)] == expected, name
            assert obj.__dataclass_params__.frozen, name
        else:
            assert _signature(obj) == expected, name


def test_records_are_frozen_and_built_with_keywords():
    gpu = cudafit.Gpu(name="NVIDIA GeForce RTX 3090", compute_capability="8.6")
    machine = cudafit.Machine(os="linux", arch="x86_64", python="3.12", driver="570.86.15", gpus=(gpu,))
    with pytest.raises(dataclasses.FrozenInstanceError):
        machine.driver = "1"  # type: ignore[misc]
    with pytest.raises(TypeError):
        cudafit.Gpu("NVIDIA GeForce RTX 3090", "8.6")  # type: ignore[misc]
    # a machine built by hand answers as a described one
    assert cudafit.resolve(["torch"], machine).to_dict() == cudafit.resolve(["torch"], cudafit.describe(**REQUESTS[0][0])).to_dict()


def test_the_package_is_typed():
    assert (ROOT / "resolver" / "cudafit" / "py.typed").is_file()


@pytest.mark.parametrize(
    "call,field",
    [
        (lambda: cudafit.describe(**{**LINUX, "driver": 535}), "driver"),
        (lambda: cudafit.describe(**{**LINUX, "python": 3.10}), "python"),  # the float 3.1: never guessed
        (lambda: cudafit.describe(**{**LINUX, "compute_capability": 8.6}), "compute_capability"),
        (lambda: cudafit.describe(**{**LINUX, "gpus": [3090]}), "gpus"),
        (lambda: cudafit.resolve(["torch", 5], cudafit.describe(**LINUX)), "spec"),
        (lambda: cudafit.resolve("torch", "linux"), "machine"),  # type: ignore[arg-type]
        (lambda: cudafit.resolve("torch; python_version < '3'", cudafit.describe(**LINUX)), "spec"),
        (lambda: cudafit.install("torch", dry_run=True), "plan"),  # type: ignore[arg-type]
        (lambda: cudafit.check_paths(["requirements.txt"], select=["CF999"]), "select"),
    ],
    ids=["driver-int", "python-float", "cc-float", "gpu-int", "spec-int", "machine-str", "spec-markers", "plan-str", "select-unknown"],
)
def test_wrong_types_and_values_are_input_errors(call, field):
    with pytest.raises(cudafit.InputError) as err:
        call()
    assert err.value.field == field


def test_gpus_none_is_none_given_and_a_single_path_is_one_path(tmp_path):
    assert cudafit.describe(**LINUX, driver="none", gpus=None).gpus == ()
    (tmp_path / "requirements.txt").write_text("torch==2.5.1+cu124\n")
    report = cudafit.check_paths(str(tmp_path / "requirements.txt"))  # one path, not its characters
    assert report.files == 1 and [f.code for f in report.findings] == ["CF001"]


def test_install_names_its_installer_argument(tmp_path):
    env = FakeEnv(tmp_path / "venv")
    plan = cudafit.resolve(["torch"], cudafit.describe(**REQUESTS[0][0]))
    with pytest.raises(cudafit.InputError) as err:
        cudafit.install(plan, env.prefix, dry_run=True, installer="poetry")  # type: ignore[arg-type]
    assert err.value.field == "installer"
    with pytest.raises(cudafit.InputError) as err:
        cudafit.install(plan, env.prefix, dry_run=True, installer="conda")  # a venv, not a conda environment
    assert err.value.field == "installer" and str(err.value).startswith("installer 'conda': ")


def test_render_names_a_broken_existing_pyproject():
    plan = cudafit.resolve(["torch==2.15.0"], cudafit.describe(**LINUX))
    with pytest.raises(cudafit.InputError) as err:
        plan.render("uv-project", existing="[project\n")
    assert err.value.field == "existing" and str(err.value).startswith("existing: not valid TOML")


@pytest.mark.skipif(os.name == "nt", reason="a POSIX shell script stands in for the environment's Python")
def test_install_raises_install_failed_with_the_command(tmp_path):
    env = tmp_path / "venv"
    (env / "bin").mkdir(parents=True)
    python = env / "bin" / "python"
    python.write_text("#!/bin/sh\nexit 3\n")  # an installer that fails as pip does: a non-zero exit
    python.chmod(0o755)
    plan = cudafit.resolve(["torch"], cudafit.describe(**REQUESTS[0][0]))
    with pytest.raises(cudafit.InstallFailed) as err:
        cudafit.install(plan, env, installer="pip")
    assert err.value.code == 3 and err.value.argv[:4] == [str(python), "-m", "pip", "install"]
    assert isinstance(err.value, cudafit.CudafitError) and "exit 3" in str(err.value)


def test_describe_takes_amd_and_intel_gpus():
    plan = cudafit.resolve(["torch"], cudafit.describe(**LINUX, gpus=["AMD Radeon RX 7900 XTX"]))
    assert plan.packages[0].variant == "rocm7.14" and plan.machine.gpus[0].target == "gfx1100" and plan.machine.gpus[0].vendor == "amd"
    plan = cudafit.resolve(["torch"], cudafit.describe(**LINUX, gfx="gfx1031"))
    assert plan.to_dict()["environment"] == plan.environment == {"HSA_OVERRIDE_GFX_VERSION": "10.3.0"}
    plan = cudafit.resolve(["torch"], cudafit.describe(**LINUX, gpus=["Intel(R) Arc(TM) B580 Graphics"]))
    assert plan.packages[0].variant == "xpu"
    with pytest.raises(cudafit.InputError) as err:
        cudafit.describe(**LINUX, gfx="gfx9999")
    assert err.value.field == "gfx"


def test_diagnose_refuses_a_machine_that_is_not_one(tmp_path):
    import pytest

    with pytest.raises(cudafit.InputError) as caught:
        cudafit.diagnose(str(tmp_path), "linux")  # type: ignore[arg-type]
    assert caught.value.field == "machine"
