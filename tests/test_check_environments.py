"""`cudafit check` evaluates each environment a file describes on its own (issue 22): markers,
uv's per-extra and per-group sources, uv.lock forks and conflict extras, pylock markers; plain
versions are PyPI's builds on each platform; notes fail nothing unless asked; files that are not
files are refused before reading."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from test_check import check, codes, findings

from cudafit.check.environments import Environment, describe, environments, view
from cudafit.check.model import Document, Pin, Route, Span


def _json(tmp_path, files, *args):
    result = check(tmp_path, files, "--output-format", "json", *args)
    assert result.exit_code in (0, 1), result.stderr
    return result.exit_code, json.loads(result.stdout)


# -- environments and views ---------------------------------------------------------------------


def _pin(name, spec="", marker=None, group="", routes=(), version=None):
    return Pin(name, spec, Span("f", 1, 1, name), version=version, marker=marker, group=group, routes=routes)


def test_a_file_without_framework_pins_describes_no_environment(tmp_path):
    assert environments(Document("f", "requirements", pins=())) == []
    assert codes(tmp_path, {"requirements.txt": "numpy==2.0\n"}) == []


def test_extras_and_groups_are_selections_and_python_splits_only_where_a_marker_asks():
    doc = Document("f", "pyproject", pins=(_pin("torch"), _pin("jax", group="extra tpu"), _pin("tensorflow", group="group dev")))
    envs = environments(doc)
    assert {e.selection for e in envs} == {"", "extra tpu", "group dev"} and {e.python for e in envs} == {None}
    marked = doc._replace(pins=(_pin("torch", marker="python_version < '3.12'"),), requires_python=">=3.11")
    assert {e.python for e in environments(marked)} == {"3.11", "3.12", "3.13"}


def test_a_view_keeps_the_pins_of_its_selection_and_platform_and_takes_the_route_that_applies():
    routes = (Route("https://download.pytorch.org/whl/cpu", "extra cpu"), Route("https://download.pytorch.org/whl/cu128", "extra cuda"))
    doc = Document(
        "f",
        "pyproject",
        pins=(_pin("torch", routes=routes), _pin("xformers", group="extra cuda"), _pin("torchvision", marker="sys_platform == 'linux'")),
    )
    cuda = view(doc, Environment("linux-x86_64", None, "extra cuda"))
    assert [(p.name, p.from_index) for p in cuda.pins] == [("torch", "https://download.pytorch.org/whl/cu128"), ("xformers", None), ("torchvision", None)]
    mac = view(doc, Environment("macos-arm64", None, "extra cpu"))
    assert [(p.name, p.from_index) for p in mac.pins] == [("torch", "https://download.pytorch.org/whl/cpu")]
    # no route applies in the base set: the default index
    assert view(doc, Environment("linux-x86_64", None, "")).pins[0].from_index is None


def test_describe_names_only_what_is_not_everywhere():
    every = [Environment(p, None, s) for s in ("", "extra cuda") for p in ("linux-x86_64", "linux-aarch64", "windows-x86_64", "macos-arm64")]
    assert describe(every, every) == ""
    assert describe([every[0]], every) == "linux-x86_64"
    assert describe(every[4:], every) == "extra cuda"


# -- real shapes of files -----------------------------------------------------------------------

# InvokeAI's shape: torch routed per extra to the cpu, cuda and rocm indexes (uv sources with
# `extra`), and the extras declared as conflicting.
INVOKEAI_STYLE = """
[project]
name = "app"
requires-python = ">=3.10"
dependencies = ["torch==2.7.1", "torchvision==0.22.1"]
[project.optional-dependencies]
cpu = ["torch==2.7.1", "torchvision==0.22.1"]
cuda = ["torch==2.7.1", "torchvision==0.22.1"]
rocm = ["torch==2.7.1", "torchvision==0.22.1"]
[tool.uv]
conflicts = [[{ extra = "cpu" }, { extra = "cuda" }, { extra = "rocm" }]]
[[tool.uv.index]]
name = "torch-cpu"
url = "https://download.pytorch.org/whl/cpu"
explicit = true
[[tool.uv.index]]
name = "torch-cuda"
url = "https://download.pytorch.org/whl/cu128"
explicit = true
[[tool.uv.index]]
name = "torch-rocm"
url = "https://download.pytorch.org/whl/rocm6.3"
explicit = true
[tool.uv.sources]
torch = [
  { index = "torch-cpu", extra = "cpu" },
  { index = "torch-cuda", extra = "cuda" },
  { index = "torch-rocm", extra = "rocm", marker = "sys_platform == 'linux'" },
]
torchvision = [
  { index = "torch-cpu", extra = "cpu" },
  { index = "torch-cuda", extra = "cuda" },
  { index = "torch-rocm", extra = "rocm", marker = "sys_platform == 'linux'" },
]
"""


def test_torch_routed_per_extra_is_each_extras_build_and_clean(tmp_path):
    assert codes(tmp_path, {"pyproject.toml": INVOKEAI_STYLE}) == []


def test_a_route_to_an_index_without_the_release_names_its_extra(tmp_path):
    text = INVOKEAI_STYLE.replace('url = "https://download.pytorch.org/whl/cu128"', 'url = "https://download.pytorch.org/whl/cu121"')
    code, found = _json(tmp_path, {"pyproject.toml": text})
    assert code == 1 and {f["code"] for f in found} == {"CF003"}
    assert all(f["environments"] == "extra cuda" and f["message"].startswith("on extra cuda: ") for f in found)


UV_LOCK_FORKS = """
version = 1
revision = 2
requires-python = ">=3.10,<3.13"
resolution-markers = [
    "sys_platform == 'darwin'",
    "sys_platform != 'darwin'",
]

[[package]]
name = "torch"
version = "2.5.1"
source = { registry = "https://pypi.org/simple" }
resolution-markers = [
    "sys_platform == 'darwin'",
]

[[package]]
name = "torch"
version = "2.5.1+cu124"
source = { registry = "https://download.pytorch.org/whl/cu124" }
resolution-markers = [
    "sys_platform != 'darwin'",
]

[[package]]
name = "torchvision"
version = "0.20.1"
source = { registry = "https://pypi.org/simple" }
resolution-markers = [
    "sys_platform == 'darwin'",
]

[[package]]
name = "torchvision"
version = "0.20.1+cu124"
source = { registry = "https://download.pytorch.org/whl/cu124" }
resolution-markers = [
    "sys_platform != 'darwin'",
]
"""


def test_a_uv_lock_with_per_platform_forks_is_clean(tmp_path):
    assert codes(tmp_path, {"uv.lock": UV_LOCK_FORKS}) == []


def test_a_uv_lock_fork_whose_companion_is_of_another_variant_is_named_on_its_platforms(tmp_path):
    fork = 'version = "0.20.1+cu124"\nsource = { registry = "https://download.pytorch.org/whl/cu124" }'
    text = UV_LOCK_FORKS.replace(fork, fork.replace("cu124", "cu121"))
    code, found = _json(tmp_path, {"uv.lock": text})
    assert code == 1 and [f["code"] for f in found] == ["CF004"]
    assert found[0]["environments"] == "linux-x86_64, linux-aarch64, windows-x86_64"


def test_uv_lock_conflict_extras_are_selections_of_their_own(tmp_path):
    text = """
    version = 1
    requires-python = ">=3.10"

    [[package]]
    name = "torch"
    version = "2.5.1+cpu"
    source = { registry = "https://download.pytorch.org/whl/cpu" }
    resolution-markers = ["extra == 'extra-3-app-cpu'"]

    [[package]]
    name = "torch"
    version = "2.5.1+cu124"
    source = { registry = "https://download.pytorch.org/whl/cu124" }
    resolution-markers = ["extra == 'extra-3-app-cuda'"]

    [[package]]
    name = "torchvision"
    version = "0.20.1+cpu"
    source = { registry = "https://download.pytorch.org/whl/cpu" }
    resolution-markers = ["extra == 'extra-3-app-cpu'"]

    [[package]]
    name = "torchvision"
    version = "0.20.1+cu124"
    source = { registry = "https://download.pytorch.org/whl/cu124" }
    resolution-markers = ["extra == 'extra-3-app-cuda'"]
    """
    assert codes(tmp_path, {"uv.lock": text}) == []


def test_pylock_markers_split_environments(tmp_path):
    text = """
    lock-version = "1.0"
    created-by = "uv"
    requires-python = ">=3.10,<3.13"

    [[packages]]
    name = "torch"
    version = "2.5.1"
    marker = "sys_platform == 'darwin'"
    index = "https://pypi.org/simple"

    [[packages]]
    name = "torch"
    version = "2.5.1+cu124"
    marker = "sys_platform == 'linux'"
    index = "https://download.pytorch.org/whl/cu124"

    [[packages]]
    name = "torchvision"
    version = "0.20.1+cu124"
    marker = "sys_platform == 'linux'"
    index = "https://download.pytorch.org/whl/cu124"

    [[packages]]
    name = "torchvision"
    version = "0.20.1"
    marker = "sys_platform == 'darwin'"
    index = "https://pypi.org/simple"
    """
    assert codes(tmp_path, {"pylock.toml": text}) == []


def test_a_lockfile_version_that_is_not_pep_440_is_an_error_naming_its_line(tmp_path):
    text = 'version = 1\nrequires-python = ">=3.10"\n\n[[package]]\nname = "torch"\nversion = "2.5.1-cu124!!"\nsource = { registry = "https://pypi.org/simple" }\n'
    code, found = _json(tmp_path, {"uv.lock": text})
    assert code == 1 and [(f["code"], f["line"]) for f in found] == [("CF000", 5)] and "2.5.1-cu124!!" in found[0]["message"]


# -- plain versions are PyPI's builds; pins are what the wheel asks for --------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        # torch 2.12's wheels ask cuda-toolkit for ten extras and pin cuBLAS as a range of their own
        ("torch==2.12.1\nnvidia-cublas==13.1.1.3\n", []),
        ("torch==2.12.1\nnvidia-cublas==13.2.0.9\n", ["CF005"]),
        # PyPI's torch 2.13 is CUDA 13 on Linux; TensorFlow's [and-cuda] is CUDA 12
        ("torch==2.13.0\ntensorflow[and-cuda]==2.20.0\n", ["CF005"]),
        ("--index-url https://download.pytorch.org/whl/cu126\n--extra-index-url https://pypi.org/simple\ntorch==2.13.0\ntensorflow[and-cuda]==2.20.0\n", []),
        ("torch==2.9.0\nnvidia-cudnn-cu12==8.9.7.29; sys_platform == 'linux' and platform_machine == 'x86_64'\n", ["CF005"]),
        ("torch==2.9.0\nnvidia-cudnn-cu12==9.10.2.21; sys_platform == 'linux'\n", []),
        # onnxruntime-gpu 1.31 is CUDA 13; without its cuda extra it runs on the CUDA libraries beside
        # it: PyPI's torch 2.5.1 brings CUDA 12's, torch 2.13 CUDA 13's (and no macOS wheel: CF015)
        ("onnxruntime-gpu==1.31.1\ntorch==2.5.1\n", ["CF005", "CF015"]),
        ("onnxruntime-gpu==1.31.1\ntorch==2.13.0\n", ["CF015"]),
    ],
)
def test_plain_versions_are_pypis_builds_with_the_pins_their_wheels_name(tmp_path, text, expected):
    assert codes(tmp_path, {"requirements.txt": text}) == expected


def test_a_clash_names_pypis_build_and_the_platform(tmp_path):
    _code, found = _json(tmp_path, {"requirements.txt": "torch==2.13.0\ntensorflow[and-cuda]==2.20.0\n"})
    assert found[0]["environments"] == "linux-x86_64"
    assert "torch==2.13.0 from PyPI is its cu130 build" in found[0]["message"] and "CUDA 13 and CUDA 12" in found[0]["message"]


@pytest.mark.parametrize("line", ["torch==2.16.0.dev20261101+cu132", "torch==2.6.0rc1+cu126", "torch==1.12.1+cu113", "torchvision==0.13.1+cu113"])
def test_a_local_pin_without_an_index_is_cf001_whatever_its_release(tmp_path, line):
    assert "CF001" in codes(tmp_path, {"requirements.txt": line + "\n"})


def test_a_local_pin_from_a_mirror_is_not_cudafits_to_judge(tmp_path):
    assert "CF001" not in codes(tmp_path, {"requirements.txt": "--index-url https://mirror.example.com/pytorch/cu124\ntorch==2.5.1+cu124\n"})


# -- severity ----------------------------------------------------------------------------------


def test_a_note_is_shown_but_fails_only_when_strict(tmp_path):
    files = {"requirements.txt": "torch==2.99.0\ntensorflow==2.20.0\n"}
    result = check(tmp_path, files)
    assert result.exit_code == 0 and "CF013" in result.stdout and "1 note" in result.stdout
    assert check(tmp_path, files, "--strict").exit_code == 1
    code, found = _json(tmp_path, files)
    assert code == 0 and [f["severity"] for f in found] == ["note"]
    strict = {**files, "pyproject.toml": "[tool.cudafit]\nstrict = true\n"}
    assert check(tmp_path, strict, "requirements.txt").exit_code == 1
    bad = check(tmp_path, {**files, "pyproject.toml": '[tool.cudafit]\nstrict = "yes"\n'}, "requirements.txt")
    assert bad.exit_code == 2 and "strict" in bad.stderr


def test_fail_on_sets_the_least_severe_finding_that_fails(tmp_path):
    """The pre-commit hook runs with --fail-on error: advice (a warning) is shown, never blocks a commit."""
    files = {"requirements.txt": "torch\n"}  # CF008: PyPI's CUDA 13 build on Linux, driver >= 580
    assert check(tmp_path, files).exit_code == 1
    passing = check(tmp_path, files, "--fail-on", "error")
    assert passing.exit_code == 0 and "CF008" in passing.stdout
    assert check(tmp_path, {"requirements.txt": "torch==2.5.1+cu124\n"}, "--fail-on", "error").exit_code == 1  # CF001
    configured = {**files, "pyproject.toml": '[tool.cudafit]\nfail-on = "error"\n'}
    assert check(tmp_path, configured, "requirements.txt").exit_code == 0
    for wrong, said in (('fail-on = "never"', "fail-on"), ('strict = true\nfail-on = "error"', "strict")):
        bad = check(tmp_path, {**files, "pyproject.toml": f"[tool.cudafit]\n{wrong}\n"}, "requirements.txt")
        assert bad.exit_code == 2 and said in bad.stderr and "Traceback" not in bad.stderr
    both = check(tmp_path, files, "--strict", "--fail-on", "error")
    assert both.exit_code == 2 and "--strict" in both.stderr


def test_the_hook_fails_on_errors_only_and_shows_the_rest():
    from ruamel.yaml import YAML

    hook = YAML(typ="safe").load((Path(__file__).parents[1] / ".pre-commit-hooks.yaml").read_text())[0]
    assert hook["entry"] == "cudafit check --fail-on error" and hook["verbose"] is True


# -- files that are not files ------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["fifo", "device", "link-to-device"])
def test_a_fifo_or_device_is_one_line_and_exit_2_before_reading(tmp_path, kind):
    target = tmp_path / "requirements.txt"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "link-to-device":
        target.symlink_to("/dev/zero")
    else:
        target = "/dev/zero"
    result = check(tmp_path, {}, str(target))
    assert result.exit_code == 2 and "not a dependency file" in result.stderr and "Traceback" not in result.stderr


# -- speed: readers are linear --------------------------------------------------------------------


def test_the_pyproject_reader_places_every_value_of_a_large_file(tmp_path):
    extras = "\n".join(f'e{i} = ["pkg{i}>=1", "torch>=2.4"]' for i in range(3000))
    text = f'[project]\nname = "x"\ndependencies = ["torch>=2.4"]\n[project.optional-dependencies]\n{extras}\n'
    path = tmp_path / "pyproject.toml"
    path.write_text(text)
    from cudafit.check.pyproject import read

    doc = read(path)
    torch = [p.span.line for p in doc.pins if p.name == "torch"]
    assert torch == [3] + list(range(5, 3005)) and all(p.span.col == len(f"e{p.name[3:]} = [\"") + 1 for p in doc.pins if p.name.startswith("pkg"))


# -- what a folder walk finds -------------------------------------------------------------------


def test_a_folder_walk_finds_conda_yaml_and_hidden_ci_folders_but_not_tool_caches(tmp_path):
    from cudafit.check.files import discover

    for name in ("conda.yaml", "conda-extras.yaml", ".runpod/requirements.txt", ".github/requirements-ci.txt", ".venv/requirements.txt", ".tox/requirements.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("numpy\n")
    found = sorted(str(p.relative_to(tmp_path)) for p, _r in discover([tmp_path]))
    assert found == [".github/requirements-ci.txt", ".runpod/requirements.txt", "conda-extras.yaml", "conda.yaml"]


def test_conda_versions_compare_padded_with_zeros(tmp_path):
    env = "channels: [pytorch, nvidia]\ndependencies:\n  - pytorch::pytorch=2.0.0\n  - pytorch::pytorch-cuda=11.7.0\n"
    assert codes(tmp_path, {"environment.yml": env}) == []
    assert codes(tmp_path, {"environment.yml": env.replace("11.7.0", "11.6")}) == ["CF007"]


# -- [build-system] requires torch --------------------------------------------------------------


@pytest.mark.parametrize(
    "build, runtime, expected",
    [
        ('"torch==2.3.1"', '"torch==2.3.1"', []),
        ('"torch==2.3.1"', '"torch==2.5.1"', ["CF014"]),
        ('"torch"', '"torch==2.5.1"', ["CF014"]),  # the isolated build takes the newest torch
        ('"torch>=2.5,<2.6"', '"torch==2.5.1"', []),
        ('"torch"', '"torch>=2.4"', ["CF008"]),  # the runtime may take the build's line: not certain
        ('"torch"', '"torch>=2.4,<2.6"', ["CF014"]),  # the build's newest line is one the runtime never takes
        ('"torch==2.4.1"', '"torch>=2.5"', ["CF008", "CF014"]),
        ('"torch==2.5.1"', '"torch>=2.4,<2.6"', []),  # the runtime can be a 2.5
        ('"torch==2.5.1+cu124"', '"torch==2.5.1+cu124"', ["CF001"]),  # local tags name the same line
        ('"torch>=2.4"', '"torch>=2.5"', ["CF008"]),  # both take the newest
        ('"torch"', '"torch==2.5.1; platform_machine == \'x86_64\'"', ["CF014"]),  # where the marker holds
        ('"torch"', '"torch>=2.4", "torch<2.6; sys_platform == \'linux\'"', ["CF008", "CF014"]),  # the marked bound keeps Linux off 2.15
    ],
)
def test_an_extension_built_against_another_torch_line_is_cf014(tmp_path, build, runtime, expected):
    text = f'[build-system]\nrequires = ["setuptools", {build}]\n[project]\nname = "ext"\ndependencies = [{runtime}]\n'
    assert codes(tmp_path, {"pyproject.toml": text, "setup.py": TORCH_EXTENSION_SETUP}) == expected


# How PyTorch extensions are built (state-spaces/mamba's and torch-spyre's setup.py, in this shape)
TORCH_EXTENSION_SETUP = """
import torch.utils.cpp_extension as cpp
from setuptools import setup
setup(name="ext", ext_modules=[cpp.CUDAExtension("ext._C", ["csrc/ext.cu"])], cmdclass={"build_ext": cpp.BuildExtension})
"""


@pytest.mark.parametrize(
    "backend, setup_py, fires",
    [
        ("setuptools.build_meta", None, False),  # YOLO-World: torch in build requires, pure Python
        ("setuptools.build_meta", "from setuptools import setup\nimport torch\nsetup(name='ext', version=torch.__version__)\n", False),
        ("setuptools.build_meta", "from torch.utils.cpp_extension import BuildExtension, CUDAExtension\n", True),
        (None, "from torch.utils import cpp_extension\n", True),  # no backend: setuptools' legacy one
        ("setuptools.build_meta", "def broken(:\n", False),  # a setup.py Python cannot read says nothing
        ("hatchling.build", "from torch.utils.cpp_extension import CUDAExtension\n", False),  # hatchling never runs setup.py
        ("scikit_build_core.build", None, True),  # CMake compiles it
    ],
)
def test_cf014_only_where_the_build_compiles_against_torch(tmp_path, backend, setup_py, fires):
    """A pure-Python project runs with whatever torch its isolated build brought: CF014 needs the
    evidence of an extension (torch's cpp_extension in setup.py, a compiling backend, ext-modules)."""
    said = f'build-backend = "{backend}"\n' if backend else ""
    files = {"pyproject.toml": f'[build-system]\nrequires = ["setuptools", "torch"]\n{said}[project]\nname = "ext"\ndependencies = ["torch==2.5.1"]\n'}
    if setup_py is not None:
        files["setup.py"] = setup_py
    assert ("CF014" in codes(tmp_path, files)) is fires


@pytest.mark.parametrize(
    "uv",
    [
        '[tool.uv]\nno-build-isolation-package = ["Ext"]\n',
        "[tool.uv]\nno-build-isolation = true\n",
        '[tool.uv.extra-build-dependencies]\next = [{ requirement = "torch", match-runtime = true }]\n',
    ],
)
def test_cf014_leaves_a_project_uv_builds_against_its_runtime_torch(tmp_path, uv):
    text = '[build-system]\nrequires = ["setuptools", "torch"]\n[project]\nname = "ext"\ndependencies = ["torch==2.5.1"]\n' + uv
    assert "CF014" not in codes(tmp_path, {"pyproject.toml": text, "setup.py": TORCH_EXTENSION_SETUP})
    other = text.replace('"Ext"', '"other"').replace("ext = [", "other = [").replace("no-build-isolation = true", "no-build-isolation = false")
    assert "CF014" in codes(tmp_path / "b", {"pyproject.toml": other, "setup.py": TORCH_EXTENSION_SETUP})


def test_cf014_names_its_evidence(tmp_path):
    text = '[build-system]\nrequires = ["setuptools", "torch"]\n[project]\nname = "ext"\ndependencies = ["torch==2.5.1"]\n[tool.setuptools]\next-modules = [{name = "ext._C", sources = ["ext.c"]}]\n'
    result = check(tmp_path, {"pyproject.toml": text}, "--output-format", "text")
    assert "pins torch 2.5.1 and [tool.setuptools] ext-modules compiles it" in result.stdout


def test_an_extra_naming_the_project_itself_installs_that_extras_pins_too(tmp_path):
    """sglang's `all = ["sglang[srt]", ...]` and a group's {include-group}: the pins they bring are
    judged in the including selection as well, under its marker, and said once."""
    text = (
        '[project]\nname = "My_Proj"\nversion = "1"\n'
        '[project.optional-dependencies]\nsrt = ["sgl-kernel==0.3.7"]\n'
        "all = [\"my-proj[srt]; sys_platform == 'linux'\"]\n"
        '[dependency-groups]\nkernels = ["triton>=3.0"]\ndev = [{include-group = "kernels"}]\n'
    )
    found = [f for f in json.loads(check(tmp_path, {"pyproject.toml": text}, "--output-format", "json").stdout) if f["code"] == "CF015"]
    assert sorted((f["line"], f["environments"]) for f in found) == [
        (5, "linux-aarch64, windows-x86_64, macos-arm64 (extra srt); linux-aarch64 (extra all)"),
        (8, "windows-x86_64, macos-arm64 (groups kernels, dev)"),
    ]


# --- uv's overrides and where a requirement is written (real files: NVIDIA/Megatron-LM) -------------


def test_an_override_that_holds_nowhere_leaves_the_package_out(tmp_path: Path):
    # Megatron-LM's shape: torch comes from the base image; uv is told never to install it
    text = """
    [project]
    name = "m"
    version = "1"
    keywords = ["torch", "deep learning"]
    dependencies = []

    [dependency-groups]
    build = ["setuptools", "torch"]

    [tool.uv]
    override-dependencies = ["torch; sys_platform == 'never'"]
    """
    result = check(tmp_path, {"pyproject.toml": text})
    assert result.exit_code == 0 and "CF009" not in result.stdout and "CF008" not in result.stdout, result.stdout
    without = check(tmp_path, {"pyproject.toml": text.replace("""override-dependencies = ["torch; sys_platform == 'never'"]""", "")})
    assert "CF008" in without.stdout and "pyproject.toml:8:25: CF008" in without.stdout, without.stdout  # the group's torch, not the keyword


def test_an_override_replaces_the_requirements_of_its_name(tmp_path: Path):
    # uv installs the override's build wherever the project asks for torch: +cu121 with no index is CF001 there
    text = """
    [project]
    name = "m"
    version = "1"
    dependencies = ["torch>=2.0"]

    [tool.uv]
    override-dependencies = ["torch==2.5.1+cu121"]
    """
    result = check(tmp_path, {"pyproject.toml": text})
    assert "pyproject.toml:7:27: CF001" in result.stdout, result.stdout


def test_a_requirement_is_found_in_its_own_list(tmp_path: Path):
    from cudafit.check.pyproject import read

    path = tmp_path / "pyproject.toml"
    path.write_text(
        '[project]  # the package\nname = "m"\nversion = "1"\nclassifiers = ["torch==2.5.1"]\n'
        'description = """\nnot [a table\n"""\n'
        'optional-dependencies = { gpu = ["torch==2.5.1"] }\n'
        '[build-system]\nrequires = ["torch==2.5.1"]\n'
    )
    doc = read(path)
    assert sorted((p.group, p.span.line) for p in doc.pins) == [("build-system", 10), ("extra gpu", 8)]


# --- a newcomer's hunt for false errors on real files (volcengine/verl, NVIDIA/NeMo) ------------------


def test_an_nvidia_pin_is_judged_against_pinned_releases_only(tmp_path: Path):
    # flash-attn compiles against whichever torch is there: the torch the solver picks for it is no
    # evidence against a cuDNN pin (uv resolves this set with another torch)
    result = check(tmp_path, {"requirements.txt": "flash_attn==2.8.1\nnvidia-cudnn-cu12==9.16.0.29 ; sys_platform == 'linux'\n"})
    assert "CF005" not in result.stdout, result.stdout
    pinned = check(tmp_path, {"requirements.txt": "torch==2.9.0\nnvidia-cudnn-cu12==8.9.7.29 ; sys_platform == 'linux' and platform_machine == 'x86_64'\n"})
    assert "CF005 on linux-x86_64: nvidia-cudnn-cu12 8.9.7.29 does not satisfy torch 2.9.0+cu128" in pinned.stdout, pinned.stdout


def test_a_library_from_a_pypi_mirror_is_not_said_missing(tmp_path: Path):
    text = "--index-url https://mirrors.aliyun.com/pypi/simple/\ntorch==2.8.0\nflash_attn==2.7.4.post1\n"
    result = check(tmp_path, {"requirements.txt": text})
    assert "CF002" not in result.stdout, result.stdout


def test_a_conda_export_is_created_on_its_own_platform_only(tmp_path: Path):
    text = """
    name: agent
    channels: [defaults]
    dependencies:
      - _libgcc_mutex=0.1=main
      - ld_impl_linux-64=2.40=h12ee557_0
      - python=3.10.14=h955ad1f_1
      - pip:
        - decord==0.6.0
    """
    assert "CF015" not in check(tmp_path, {"environment.yml": text}).stdout
    hand_written = "name: agent\ndependencies:\n  - python=3.10\n  - pip:\n    - decord==0.6.0\n"
    assert "CF015 on linux-aarch64, macos-arm64" in check(tmp_path, {"environment.yml": hand_written}).stdout


def test_a_resolver_output_for_one_platform_is_judged_there(tmp_path: Path):
    # uv pip compile's header, no --universal: what one Linux machine resolved (triton: Linux wheels only)
    header = "# This file was autogenerated by uv via the following command:\n#    uv pip compile requirements.in -o requirements.txt\n"
    pins = "triton==3.3.1\n    # via torch\nnumpy==2.2.6\n"
    assert "CF015" not in check(tmp_path, {"requirements.txt": header + pins}).stdout
    universal = header.replace("-o requirements.txt", "--universal -o requirements.txt")
    assert "CF015 on linux-aarch64, windows-x86_64, macos-arm64" in check(tmp_path, {"requirements.txt": universal + pins}).stdout
    assert "CF015 on linux-aarch64, windows-x86_64, macos-arm64" in check(tmp_path, {"requirements.txt": pins}).stdout  # written by hand: every platform


# A setuptools project whose pyproject lists no dependencies declares its torch where setuptools
# reads it (fairseq's and detectron2's setup.py write install_requires out in the setup() call)
SETUP_WITH_REQUIRES = TORCH_EXTENSION_SETUP.replace('setup(name="ext",', "setup(name=\"ext\", install_requires=REQUIRES,").replace(
    "from setuptools import setup\n", "from setuptools import setup\nREQUIRES = ['numpy', {runtime}]\n"
)


@pytest.mark.parametrize(
    "project, runtime, fires",
    [
        ("", "'torch==2.1.2'", True),  # no [project] table: setup.py's list is the project's
        ('[project]\nname = "ext"\ndynamic = ["dependencies"]\n', "'torch>=2.0,<2.4'", True),
        ("", "'torch>=2.0'", False),  # the runtime can be of the build's line
        ("", "'torch==2.1.2', 'torch==2.1.2'", True),  # one requirement written twice (megablocks' setup.py did)
        ("", "'torch==2.1.2', 'torch==2.2.2'", False),  # two that disagree: pip refuses them, CF014 says nothing
        ("", "'torch==2.1.2; sys_platform == \"linux\"'", True),  # judged where its marker holds: on Linux
        ("", "'torch==2.1.2; sys_platform == \"never\"'", False),  # holds nowhere (Megatron-LM's way to leave torch out)
        ("", "f'torch=={torch.__version__}'", False),  # computed from the build's own torch: no constant
        ('[project]\nname = "ext"\ndependencies = ["numpy"]\n', "'torch==2.1.2'", False),  # the pyproject's list wins
    ],
)
def test_cf014_reads_the_torch_setup_py_declares(tmp_path, project, runtime, fires):
    text = '[build-system]\nrequires = ["setuptools", "torch"]\nbuild-backend = "setuptools.build_meta"\n' + project
    found = findings(tmp_path, {"pyproject.toml": text, "setup.py": SETUP_WITH_REQUIRES.replace("{runtime}", runtime)})
    assert (("pyproject.toml", 2, 28, "CF014") in found) is fires


def test_cf014_setup_py_bound_twice_or_added_to_says_nothing(tmp_path):
    """A list bound again (in a branch) or added to is not certain: only a name bound once is read."""
    again = SETUP_WITH_REQUIRES.replace("{runtime}", "'torch==2.1.2'") + "if True:\n    REQUIRES = ['torch']\n"
    text = '[build-system]\nrequires = ["setuptools", "torch"]\n'
    assert "CF014" not in codes(tmp_path, {"pyproject.toml": text, "setup.py": again})


def test_cf014_reads_a_setuptools_dynamic_dependencies_file(tmp_path):
    text = (
        '[build-system]\nrequires = ["setuptools", "torch"]\n[project]\nname = "ext"\ndynamic = ["dependencies"]\n'
        '[tool.setuptools.dynamic]\ndependencies = {file = ["requirements/runtime.txt"]}\n'
    )
    files = {"pyproject.toml": text, "setup.py": TORCH_EXTENSION_SETUP, "requirements/runtime.txt": "numpy\ntorch==2.3.1  # tested\n"}
    result = check(tmp_path, files, "pyproject.toml")
    assert "CF014" in result.stdout and "pins torch 2.3.1 (runtime.txt, line 2)" in result.stdout
    files["requirements/runtime.txt"] = "numpy\ntorch>=2.3\n"
    assert "CF014" not in check(tmp_path / "b", files, "pyproject.toml").stdout
    # a file that is not there declares nothing
    assert "CF014" not in check(tmp_path / "c", {"pyproject.toml": text, "setup.py": TORCH_EXTENSION_SETUP}, "pyproject.toml").stdout


def test_a_changed_setup_py_checks_the_pyproject_beside_it(tmp_path):
    """pre-commit passes only changed files: a bump of setup.py's torch (megablocks' branch) is
    checked with its pyproject.toml; a setup.py with none beside it checks nothing; both given are one."""
    import re

    from ruamel.yaml import YAML

    text = '[build-system]\nrequires = ["setuptools", "torch==2.4.0"]\nbuild-backend = "setuptools.build_meta"\n'
    files = {"pkg/pyproject.toml": text, "pkg/setup.py": SETUP_WITH_REQUIRES.replace("{runtime}", "'torch==2.5.1'"), "alone/setup.py": "print('hi')\n"}
    result = check(tmp_path, files, "pkg/setup.py")
    assert result.exit_code == 1 and "pkg/pyproject.toml:2:" in result.stdout and "CF014" in result.stdout
    assert "1 file checked" in result.stdout
    assert check(tmp_path, files, "pkg/setup.py", "pkg/pyproject.toml").stdout.count("CF014") == 1
    alone = check(tmp_path, files, "alone/setup.py")
    assert alone.exit_code == 0 and "CF000" not in alone.stdout  # not read as a requirements file
    hook = YAML(typ="safe").load((Path(__file__).parents[1] / ".pre-commit-hooks.yaml").read_text())[0]
    assert re.search(hook["files"], "pkg/setup.py") and not re.search(hook["files"], "pkg/setup.cfg")


def test_a_changed_dynamic_requirements_file_checks_its_project(tmp_path):
    """A hook given only the requirements file a pyproject's [tool.setuptools.dynamic] names (a
    torch bump there) checks that project too; an include in it is no requirement to setuptools."""
    text = (
        '[build-system]\nrequires = ["setuptools", "torch"]\n[project]\nname = "ext"\ndynamic = ["dependencies"]\n'
        '[tool.setuptools.dynamic]\ndependencies = {file = ["requirements/runtime.txt"]}\n'
    )
    files = {"pyproject.toml": text, "setup.py": TORCH_EXTENSION_SETUP, "requirements/runtime.txt": "numpy\ntorch==2.4.1\n", "requirements/dev.txt": "torch==2.4.1\n"}
    named = check(tmp_path, files, "requirements/runtime.txt")
    assert named.exit_code == 1 and "pyproject.toml:2:" in named.stdout and "CF014" in named.stdout
    assert "CF014" not in check(tmp_path, files, "requirements/dev.txt").stdout  # not the project's
    files["requirements/runtime.txt"] = "-r dev.txt\nnumpy\n"
    assert "CF014" not in check(tmp_path / "b", files, "pyproject.toml").stdout
