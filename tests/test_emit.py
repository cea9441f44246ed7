"""Every emitter against golden files (tests/golden/SCENARIO/FORMAT). Scenarios are solver cases
from tests/cases/resolve, so the goldens show real answers. Regenerate after a deliberate change:
CUDAFIT_REGEN=1 python -m pytest tests/test_emit.py (CUDAFIT_REGEN_GOLDEN=1 too), then read the diff."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest
from test_resolve_cases import run_case

from cudafit.cli import flag
from cudafit.emit import FORMATS, EmitOptions, render
from cudafit.errors import InputError

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

HERE = Path(__file__).parent
SCENARIOS = {
    # 2.5.1 with CUDA 12.4: the pytorch/nvidia conda channels still had it.
    "companions-paired": "conda channel route",
    # 2.8.0: after the pytorch channel ended, conda gets the wheels.
    "rtx3090-minor-compat": "wheels in conda",
    "macos-arm64-pypi": "PyPI, no index",
    "no-driver-linux-cpu-index": "CPU index",
    # torch from its index, TensorFlow from PyPI, shared nvidia-* pins.
    "joint-torch-tensorflow": "two frameworks",
    # JAX's old CUDA wheels come from a find-links page.
    "jax-old-find-links": "find-links",
    # TensorFlow on native Windows: CUDA from conda.
    "tf-native-windows-conda-route": "conda CUDA",
}


def scenario(name, matrices):
    case = tomllib.loads((HERE / "cases" / "resolve" / f"{name}.toml").read_text())
    return run_case(case, matrices)


@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_golden(name, fmt, matrices):
    try:
        text = render(fmt, scenario(name, matrices), EmitOptions(env_name="demo"))
    except InputError as exc:  # a form that cannot hold this set says why; that message is the golden
        text = f"cudafit: error: {exc.worded(flag)}\n"  # as the command line words it
    golden = HERE / "golden" / name / fmt.replace(".", "_")
    if os.environ.get("CUDAFIT_REGEN") or os.environ.get("CUDAFIT_REGEN_GOLDEN"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text)
        # A regenerating run compares nothing: it must not pass as a test run.
        pytest.skip(f"regenerated {golden}; review the diff and run again without CUDAFIT_REGEN")
    assert text == golden.read_text()


def test_uv_project_merges_into_existing_pyproject(matrices):
    existing = (
        '[project]\nname = "mine"\nversion = "1.0"\ndependencies = ["numpy>=1.26", "torch>=2.0"]\n\n'
        '[tool.uv.sources]\nmylib = { path = "../mylib" }\n'
    )
    text = render("uv-project", scenario("companions-paired", matrices), EmitOptions(existing=existing))
    doc = tomllib.loads(text)
    assert doc["project"]["name"] == "mine"
    # the user's `torch>=2.0` still serves the other platforms; this Linux answer is Linux's alone
    linux = "; sys_platform == 'linux'"
    assert doc["project"]["dependencies"] == [
        "numpy>=1.26", "torch==2.5.1+cu124" + linux, "torch>=2.0; sys_platform != 'linux'", "torchvision==0.20.1+cu124" + linux, "torchaudio==2.5.1+cu124" + linux]
    assert doc["tool"]["uv"]["sources"]["mylib"] == {"path": "../mylib"}
    assert doc["tool"]["uv"]["sources"]["torch"] == [{"index": "pytorch-cu124", "marker": "sys_platform == 'linux'"}]
    assert doc["tool"]["uv"]["index"] == [
        {"name": "pytorch-cu124", "url": "https://download.pytorch.org/whl/cu124", "explicit": True}]


HAND_KEPT = """\
# my project, hand-kept
[project]
name = "x"  # the name
version = "1.0"
dependencies = [
    "numpy>=1.26",  # numbers
    "torch==2.1.0+cu121",  # old pin
]

[tool.ruff]
line-length = 100  # wide

[[tool.uv.index]]
name = "pytorch-cu121"
url = "https://download.pytorch.org/whl/cu121"
explicit = true

[[tool.uv.index]]
name = "internal"  # ours
url = "https://pypi.example.invalid/simple"

[tool.uv.sources]
torch = { index = "pytorch-cu121" }
mylib = { path = "../mylib" }  # local
"""


@pytest.mark.parametrize("name", ["rtx3090-minor-compat", "joint-torch-tensorflow"])
def test_uv_project_keeps_comments_and_layout(name, matrices):
    """Issue 9: the writer edits in place; every line that is not ours comes back byte for byte,
    and a second run over its own output changes nothing."""
    text = render("uv-project", scenario(name, matrices), EmitOptions(existing=HAND_KEPT))
    dropped = {'    "torch==2.1.0+cu121",  # old pin', 'name = "pytorch-cu121"',
               'url = "https://download.pytorch.org/whl/cu121"', 'explicit = true', 'torch = { index = "pytorch-cu121" }'}
    for line in HAND_KEPT.splitlines():
        if line and line not in dropped:
            assert line in text.splitlines(), line
    assert "\n\n\n" not in text and "]\n[" not in text and "true\n[" not in text
    doc = tomllib.loads(text)
    variant = scenario(name, matrices).candidates[0].tag
    assert [i["name"] for i in doc["tool"]["uv"]["index"]] == ["internal", f"pytorch-{variant}"]
    assert doc["tool"]["uv"]["sources"]["mylib"] == {"path": "../mylib"}
    assert render("uv-project", scenario(name, matrices), EmitOptions(existing=text)) == text


def test_uv_project_reads_the_layout_it_used_to_write(matrices):
    """Before tomlkit, cudafit wrote the index as an inline array and each source as a sub-table."""
    old = (
        "# torch 2.5.1+cu124 (CUDA 12.4, cuDNN 9.1.0) for linux-x86_64, Python 3.12; generated by cudafit\n"
        '[project]\nname = "demo"\nversion = "0.1.0"\ndependencies = [\n    "torch==2.5.1+cu124",\n]\n\n'
        '[tool.uv]\nindex = [\n    { name = "pytorch-cu124", url = "https://download.pytorch.org/whl/cu124", explicit = true },\n]\n\n'
        '[tool.uv.sources.torch]\nindex = "pytorch-cu124"\n'
    )
    text = render("uv-project", scenario("rtx3090-minor-compat", matrices), EmitOptions(existing=old))
    doc = tomllib.loads(text)
    assert doc["tool"]["uv"]["index"] == [{"name": "pytorch-cu128", "url": "https://download.pytorch.org/whl/cu128", "explicit": True}]
    assert doc["tool"]["uv"]["sources"] == {"torch": {"index": "pytorch-cu128"}}
    # Our header line describes the new set, once.
    assert text.startswith("# torch 2.8.0+cu128 ") and text.count("generated by cudafit") == 1


def test_never_extra_index_url(matrices):
    for name in SCENARIOS:
        for fmt in FORMATS:
            try:
                text = render(fmt, scenario(name, matrices), EmitOptions())
            except InputError as exc:  # a form that cannot hold the set refuses, and names the forms that can
                assert "use the uv-project, pip or uv format" in str(exc) or "container" in str(exc) or "conda base image" in str(exc)
                continue
            assert "--extra-index-url" not in text


@pytest.mark.parametrize(
    "existing, message",
    [
        ('[project]\nname = "x"\ndependencies = "torch"\n', "dependencies is not a list of strings"),
        ("project = 1\n", "[project] is not a table"),
        ('[project]\nname = "x"\n[tool]\nuv = 1\n', "[tool.uv] is not a table"),
        ('[project]\nname = "x"\ndependencies = ["torchvision==0.19.0+cu121"]\n', "add torchvision to the specs"),
        ("[project\n", "not valid TOML"),
    ],
)
def test_uv_project_rejects_what_it_cannot_merge(existing, message, matrices):
    from cudafit.errors import InputError

    with pytest.raises(InputError, match=re.escape(message)):
        render("uv-project", scenario("rtx3090-minor-compat", matrices), EmitOptions(existing=existing))


def test_uv_project_drops_only_unused_pytorch_indexes(matrices):
    existing = (
        '[project]\nname = "x"\ndependencies = ["torch==2.1.0+cu121"]\n'
        '[[tool.uv.index]]\nname = "pytorch-cu121"\nurl = "https://download.pytorch.org/whl/cu121"\nexplicit = true\n'
        '[[tool.uv.index]]\nname = "internal"\nurl = "https://pypi.example.invalid/simple"\n'
        '[tool.uv.sources]\ntorch = { index = "pytorch-cu121" }\n'
    )
    doc = tomllib.loads(render("uv-project", scenario("rtx3090-minor-compat", matrices), EmitOptions(existing=existing)))
    assert [i["name"] for i in doc["tool"]["uv"]["index"]] == ["internal", "pytorch-cu128"]
    assert doc["tool"]["uv"]["sources"] == {"torch": {"index": "pytorch-cu128"}}


@pytest.mark.parametrize("spec, machine", [
    ("tensorflow==2.13.1", ["--os", "linux", "--arch", "x86_64", "--python", "3.11", "--driver", "535.104.05",
                            "--gpu", "NVIDIA A100-SXM4-80GB"]),
    ("tensorflow==2.10.1", ["--os", "windows", "--arch", "x86_64", "--python", "3.10", "--driver", "566.36",
                            "--gpu", "NVIDIA GeForce RTX 3090"]),
])
def test_no_format_loses_the_conda_step(spec, machine):
    """Issue 7, item 15: a CUDA runtime pip cannot bring is named in every output form."""
    from click.testing import CliRunner

    from cudafit.cli import main
    from cudafit.emit import FORMATS, MACHINE_FORMATS

    for fmt in set(FORMATS) - MACHINE_FORMATS:
        result = CliRunner().invoke(main, ["resolve", spec, *machine, "--format", fmt])
        if fmt == "dockerfile":  # it refuses, and names the form that holds the conda step
            assert result.exit_code == 2 and ("environment.yml" in result.stderr or "a container runs Linux" in result.stderr), result.output
            continue
        assert result.exit_code == 0, (fmt, result.output)
        assert "cudatoolkit=" in result.stdout, (fmt, result.stdout)


def test_uv_project_pins_go_where_the_project_keeps_them(matrices):
    """An extra (or dependency group) that names torch gets the pins; the main list is left alone."""
    existing = (
        '[project]\nname = "x"\nversion = "1"\nrequires-python = ">=3.8"\ndependencies = ["numpy"]\n\n'
        '[project.optional-dependencies]\ngpu = ["torch>=2.4", "einops"]\n\n'
        '[dependency-groups]\ndev = ["pytest", {include-group = "lint"}]\nlint = ["ruff"]\n'
    )
    doc = tomllib.loads(render("uv-project", scenario("rtx3090-minor-compat", matrices), EmitOptions(existing=existing)))
    assert doc["project"]["dependencies"] == ["numpy"]
    # where torch was; the range still serves the other platforms
    assert doc["project"]["optional-dependencies"]["gpu"] == ["torch==2.8.0+cu128; sys_platform == 'linux'", "torch>=2.4; sys_platform != 'linux'", "einops"]
    assert doc["dependency-groups"]["dev"] == ["pytest", {"include-group": "lint"}]
    # torch 2.8.0 has wheels from Python 3.9: uv could not lock for 3.8.
    assert doc["project"]["requires-python"] == ">=3.9"


def test_uv_project_refuses_a_family_pin_in_a_group(matrices):
    from cudafit.errors import InputError

    existing = '[project]\nname = "x"\nversion = "1"\ndependencies = ["torch==2.8.0"]\n[dependency-groups]\ngpu = ["torchvision==0.23.0"]\n'
    with pytest.raises(InputError, match=re.escape("[dependency-groups] gpu has 'torchvision==0.23.0'")):
        render("uv-project", scenario("rtx3090-minor-compat", matrices), EmitOptions(existing=existing))


def test_uv_project_keeps_the_other_platforms_routes(matrices):
    existing = (
        '[project]\nname = "x"\nversion = "1"\n'
        'dependencies = ["torch==2.5.1; sys_platform == \'darwin\'", "torch==2.5.1+cu121; sys_platform == \'linux\'"]\n\n'
        '[[tool.uv.index]]\nname = "pytorch-cu121"\nurl = "https://download.pytorch.org/whl/cu121"\nexplicit = true\n\n'
        '[tool.uv.sources]\ntorch = [{ index = "pytorch-cu121", marker = "sys_platform == \'linux\'" }, { index = "mine", marker = "sys_platform == \'darwin\'" }]\n'
    )
    doc = tomllib.loads(render("uv-project", scenario("rtx3090-minor-compat", matrices), EmitOptions(existing=existing)))
    assert doc["project"]["dependencies"] == ["torch==2.5.1; sys_platform == 'darwin'", "torch==2.8.0+cu128; sys_platform == 'linux'"]
    assert doc["tool"]["uv"]["sources"]["torch"] == [
        {"index": "mine", "marker": "sys_platform == 'darwin'"},
        {"index": "pytorch-cu128", "marker": "sys_platform == 'linux'"},
    ]
    assert [i["name"] for i in doc["tool"]["uv"]["index"]] == ["pytorch-cu128"]


def test_uv_project_replaces_a_line_in_place_keeping_extras_and_comment(matrices):
    existing = '[project]\nname = "x"\nversion = "1"\ndependencies = [\n    "numpy",  # math\n    "torch[opt-einsum]>=2.6",  # the framework\n    "pandas",\n]\n'
    text = render("uv-project", scenario("rtx3090-minor-compat", matrices), EmitOptions(existing=existing))
    kept = "\n    \"torch[opt-einsum]>=2.6; sys_platform != 'linux'\","
    assert '    "torch[opt-einsum]==2.8.0+cu128; sys_platform == \'linux\'",  # the framework' + kept + '\n    "pandas",' in text
    assert render("uv-project", scenario("rtx3090-minor-compat", matrices), EmitOptions(existing=text)) == text


MULTI_PLATFORM = """\
[project]
name = "demo"
version = "0.1.0"
requires-python = ">=3.10"
dependencies = [
    "torch>=2.4",  # the model
    "torchvision",
    "numpy",
]

[tool.uv.sources]
torch = [
    { index = "pytorch-cpu", marker = "sys_platform == 'darwin'" },
]

[[tool.uv.index]]
name = "pytorch-cpu"
url = "https://download.pytorch.org/whl/cpu"
explicit = true
"""


def _cli(*args: str, cwd: Path):
    from click.testing import CliRunner

    from cudafit.cli import main

    old = Path.cwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(main, list(args), catch_exceptions=False)
    finally:
        os.chdir(old)


def test_a_single_machine_answer_keeps_what_the_pyproject_says_for_other_platforms(tmp_path):
    """Issue 23: `torch>=2.4` and a bare `torchvision` stay for the platforms the answer is not for
    (never a silent drop), a per-platform source array keeps its layout, the file passes check,
    and a second run changes nothing."""
    (tmp_path / "pyproject.toml").write_text(MULTI_PLATFORM)
    machine = ["--driver", "570.86.10", "--gpu", "H100", "--python", "3.12"]
    result = _cli("resolve", "torch", "torchvision", *machine, "--format", "uv-project", "-o", "pyproject.toml", cwd=tmp_path)
    assert result.exit_code == 0, result.output
    text = (tmp_path / "pyproject.toml").read_text()
    doc = tomllib.loads(text)
    deps = doc["project"]["dependencies"]
    assert "torch>=2.4; sys_platform != 'linux'" in deps and "torchvision; sys_platform != 'linux'" in deps and "numpy" in deps
    assert all(d.endswith("; sys_platform == 'linux'") for d in deps if "+cu" in d) and len(deps) == 5
    assert 'torch = [\n    { index = "pytorch-cpu", marker = "sys_platform == \'darwin\'" },\n    {index = "pytorch-cu' in text
    assert "  # the model" in text
    checked = _cli("check", "pyproject.toml", cwd=tmp_path)
    assert checked.exit_code == 0, checked.output
    again = _cli("resolve", "torch", "torchvision", *machine, "--format", "uv-project", "-o", "pyproject.toml", cwd=tmp_path)
    assert again.exit_code == 0 and (tmp_path / "pyproject.toml").read_text() == text


def test_the_fleet_pyproject_for_linux_macos_and_windows_passes_check(tmp_path):
    """Issue 23: what `fleet resolve --format uv-project -o` writes for a mixed fleet is a file
    `cudafit check` passes, environment by environment."""
    import json

    nodes = [
        {"name": "gpu", "machine": {"os": "linux", "arch": "x86_64", "driver": "570.86.10", "gpus": ["NVIDIA H100 80GB HBM3"]}},
        {"name": "mac", "machine": {"os": "macos", "arch": "arm64", "driver": None, "gpus": []}},
        {"name": "win", "machine": {"os": "windows", "arch": "x86_64", "driver": "560.94", "gpus": ["NVIDIA GeForce RTX 4090"]}},
    ]
    (tmp_path / "inventory.json").write_text(json.dumps(nodes))
    for specs in (["torch"], ["torch", "torchvision", "torchaudio"]):
        (tmp_path / "pyproject.toml").unlink(missing_ok=True)
        result = _cli("fleet", "resolve", *specs, "--inventory", "inventory.json", "--python", "3.12", "--format", "uv-project", "-o", "pyproject.toml", cwd=tmp_path)
        assert result.exit_code == 0, result.output
        checked = _cli("check", "pyproject.toml", cwd=tmp_path)
        assert checked.exit_code == 0, (specs, checked.output, (tmp_path / "pyproject.toml").read_text())
        first = (tmp_path / "pyproject.toml").read_text().splitlines()[0]
        assert first.startswith("# the fleet, one set per platform (linux-x86_64: torch ") and "macos-arm64: torch " in first and "windows-x86_64: " in first


def test_a_fleet_file_says_every_platform_its_set_is_for(tmp_path):
    """A Slurm cluster with a GH200 (aarch64) class beside x86_64 ones: the header names both."""
    inventory = str(Path(__file__).parent / "fixtures" / "fleet" / "slurm-gpu-cluster.txt")
    result = _cli("fleet", "resolve", "--inventory", inventory, "--driver-feature", "nvdriver_(.+)", "--python", "3.12", "--format", "requirements", "-o", "r.txt", cwd=tmp_path)
    assert result.exit_code == 0, result.output
    assert "for the fleet's linux-aarch64, linux-x86_64 nodes, Python 3.12; generated by cudafit" in (tmp_path / "r.txt").read_text().splitlines()[0]


def test_a_platform_marked_line_is_kept_for_the_platforms_it_still_serves(tmp_path):
    """`torch>=2.4; sys_platform != 'win32'` serves macOS too: a Linux answer keeps it there."""
    text = '[project]\nname = "a"\nversion = "1"\ndependencies = [\n    "torch>=2.4; sys_platform != \'win32\'",\n    "torchvision>=0.19",\n]\n'
    (tmp_path / "pyproject.toml").write_text(text)
    machine = ["--os", "linux", "--arch", "x86_64", "--driver", "550.54.14", "--gpu", "NVIDIA GeForce RTX 3090", "--python", "3.12"]
    result = _cli("resolve", "torch", "torchvision", *machine, "--format", "uv-project", "-o", "pyproject.toml", cwd=tmp_path)
    assert result.exit_code == 0, result.output
    deps = tomllib.loads((tmp_path / "pyproject.toml").read_text())["project"]["dependencies"]
    assert any(d.startswith("torch>=2.4; ") and "win32" in d and "sys_platform != 'linux'" in d for d in deps), deps
    # a line for this platform alone is replaced, not kept under a marker that never holds
    linux_only = text.replace("sys_platform != \'win32\'", "sys_platform == \'linux\'")
    (tmp_path / "pyproject.toml").write_text(linux_only)
    assert _cli("resolve", "torch", "torchvision", *machine, "--format", "uv-project", "-o", "pyproject.toml", cwd=tmp_path).exit_code == 0
    deps = tomllib.loads((tmp_path / "pyproject.toml").read_text())["project"]["dependencies"]
    assert not any(d.startswith("torch>=2.4") for d in deps), deps
