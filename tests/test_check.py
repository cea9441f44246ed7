"""`cudafit check`: every rule with a file that triggers it and one that does not, the readers'
positions, suppression and settings, targets, output forms, fixes, and bad input."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudafit.cli import main


def check(tmp_path: Path, files: dict[str, str], *args: str):
    """Write the files under tmp_path and run `cudafit check ARGS` there (as pre-commit does, from
    the repository root)."""
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    old = Path.cwd()
    os.chdir(tmp_path)
    try:
        return CliRunner().invoke(main, ["check", *args], catch_exceptions=False)
    finally:
        os.chdir(old)


def findings(tmp_path, files, *args):
    result = check(tmp_path, files, "--output-format", "json", *args)
    assert result.exit_code in (0, 1), result.stderr
    return [(f["path"], f["line"], f["col"], f["code"]) for f in json.loads(result.stdout)]


def codes(tmp_path, files, *args):
    return sorted({c for _p, _l, _c, c in findings(tmp_path, files, *args)})


# -- each rule: a file that triggers it, and one that does not ---------------------------------

CASES = {
    "CF000": ("requirements.txt", "torch==2.5.1\ntorch>=>2\n", "torch==2.5.1\n"),
    "CF001": (
        "requirements.txt",
        "torch==2.5.1+cu124\n",
        "--index-url https://download.pytorch.org/whl/cu124\ntorch==2.5.1+cu124\n",
    ),
    "CF002": (
        "requirements.txt",
        "--index-url https://download.pytorch.org/whl/cu121\ntorch==2.7.0+cu121\n",
        "--index-url https://download.pytorch.org/whl/cu126\ntorch==2.7.0+cu126\n",
    ),
    "CF003": (
        "requirements.txt",
        "--index-url https://download.pytorch.org/whl/cu118\ntorch==2.5.1+cu124\n",
        "--index-url https://download.pytorch.org/whl/cu124\ntorch==2.5.1+cu124\n",
    ),
    "CF004": (
        "requirements.txt",
        "--index-url https://download.pytorch.org/whl/cu124\ntorch==2.5.1+cu124\ntorchvision==0.20.0+cu124\n",
        "--index-url https://download.pytorch.org/whl/cu124\ntorch==2.5.1+cu124\ntorchvision==0.20.1+cu124\n",
    ),
    "CF005": (
        "requirements.txt",
        "--index-url https://download.pytorch.org/whl/cu118\n--extra-index-url https://pypi.org/simple\ntorch==2.5.1+cu118\ntensorflow[and-cuda]==2.18.0\n",
        "--index-url https://download.pytorch.org/whl/cu124\n--extra-index-url https://pypi.org/simple\ntorch==2.5.1+cu124\ntensorflow==2.18.0\n",
    ),
    "CF006": (
        "requirements.txt",
        "--extra-index-url https://download.pytorch.org/whl/cu124\ntorch==2.5.1+cu124\n",
        "--index-url https://download.pytorch.org/whl/cu124\ntorch==2.5.1+cu124\n",
    ),
    "CF007": (
        "environment.yml",
        "channels:\n  - pytorch\n  - nvidia\ndependencies:\n  - pytorch::pytorch=2.6.0\n",
        "channels:\n  - pytorch\n  - nvidia\ndependencies:\n  - pytorch::pytorch=2.5.1\n  - pytorch-cuda=12.4\n",
    ),
    "CF008": ("requirements.txt", "torch>=2.4\n", "torch>=2.4,<2.9\n"),
    "CF009": ("requirements.txt", "torch==2.5.1; sys_platform == 'darwin' and platform_machine == 'x86_64'\n", "torch==2.5.1; sys_platform == 'darwin'\n"),
    "CF011": ("requirements.txt", "-r missing.txt\n", "torch==2.5.1\n"),
    "CF015": (
        "pyproject.toml",
        '[project]\nname = "a"\nversion = "1"\nrequires-python = ">=3.8"\ndependencies = ["torch==2.1.2"]\n',
        '[project]\nname = "a"\nversion = "1"\nrequires-python = ">=3.8,<3.12"\ndependencies = ["torch==2.1.2"]\n',
    ),
    "CF017": ("requirements.txt", "numpy==1.24.4\nnumpy>=1.26\n", "numpy==1.26.4\nnumpy>=1.26\n"),
}


@pytest.mark.parametrize("code", sorted(CASES))
def test_rule_triggers_and_stays_quiet(tmp_path, code):
    name, bad, good = CASES[code]
    (tmp_path / "bad").mkdir()
    (tmp_path / "good").mkdir()
    assert code in codes(tmp_path / "bad", {name: bad})
    assert code not in codes(tmp_path / "good", {name: good})


def _json(tmp_path, files):
    result = check(tmp_path, files, "--output-format", "json")
    return json.loads(result.stdout)


# PyPI's file lists (the data's release records): torch 2.1.2 has cp38-cp311 wheels; torch 2.5.1
# cp313 only for Linux x86_64; onnxruntime-gpu 1.22.0 Linux x86_64 and Windows only; neither has an sdist.
@pytest.mark.parametrize("name, text, expected", [
    # requires-python admits Pythons the release has no wheel for: those Pythons, on every platform
    ("pyproject.toml", '[project]\nname = "a"\nversion = "1"\nrequires-python = ">=3.8"\ndependencies = ["torch==2.1.2"]\n', {"Python 3.12, 3.13"}),
    # the platforms without a cp313 wheel
    ("pyproject.toml", '[project]\nname = "a"\nversion = "1"\nrequires-python = ">=3.10"\ndependencies = ["torch==2.5.1"]\n', {"linux-aarch64, windows-x86_64, macos-arm64 (Python 3.13)"}),
    # a platform with no wheel at all, whatever the Python; a requirements file states no Python
    ("requirements.txt", "onnxruntime-gpu==1.22.0\n", {"linux-aarch64, macos-arm64"}),
])
def test_cf015_names_the_environments_without_a_wheel(tmp_path, name, text, expected):
    found = [f for f in _json(tmp_path, {name: text}) if f["code"] == "CF015"]
    assert {f["environments"] for f in found} == expected
    assert all(f["severity"] == "error" for f in found)


@pytest.mark.parametrize("name, text", [
    # a file that states no Python: its user picks one the pin has wheels for
    ("requirements.txt", "torch==2.1.2\n"),
    # a marker that keeps the pin where its wheels are
    ("requirements.txt", "onnxruntime-gpu==1.22.0; platform_machine == 'x86_64' or platform_machine == 'AMD64'\n"),
    # a +local build is the index's (the index rules judge it); a range may pick a release that fits
    ("requirements.txt", "--index-url https://download.pytorch.org/whl/cu121\ntorch==2.1.2+cu121; sys_platform == 'linux'\n"),
    ("pyproject.toml", '[project]\nname = "a"\nversion = "1"\nrequires-python = ">=3.8"\ndependencies = ["torch>=2.1"]\n'),
    # libraries with an sdist build where no wheel fits (xformers), and jax itself is pure Python
    ("requirements.txt", "xformers==0.0.28.post3\njax==0.4.30\n"),
])
def test_cf015_stays_quiet(tmp_path, name, text):
    assert "CF015" not in codes(tmp_path, {name: text})


# matrices/wheels.toml (PyPI's file lists, 2026-12-02): triton has wheels for Linux only; bitsandbytes
# 0.43-0.45 for Linux x86_64 and Windows, 0.46-0.48 Linux aarch64 too, macOS arm64 from 0.49, an
# sdist up to 0.42; nvidia-cudnn-cu12 8.9.7.29 Linux x86_64 and Windows; torch 2.1.x cp38-cp311.
@pytest.mark.parametrize("name, text, expected", [
    # a range none of whose releases has a wheel here; an unpinned name is every release
    ("requirements.txt", "bitsandbytes>=0.43,<0.46\n", {"linux-aarch64, macos-arm64"}),
    ("requirements.txt", "triton\n", {"windows-x86_64, macos-arm64"}),
    ("pyproject.toml", '[project]\nname = "a"\nversion = "1"\nrequires-python = ">=3.10"\ndependencies = ["torch>=2.0,<2.2"]\n', {"Python 3.12, 3.13"}),
    # a CUDA library beside a framework, pinned without the marker the framework's own wheel gives it
    ("requirements.txt", "nvidia-cudnn-cu12==8.9.7.29\n", {"linux-aarch64, macos-arm64"}),
])
def test_cf015_judges_every_release_a_range_admits(tmp_path, name, text, expected):
    found = [f for f in _json(tmp_path, {name: text}) if f["code"] == "CF015"]
    assert {f["environments"] for f in found} == expected


@pytest.mark.parametrize("text", [
    # a newer release in the range has the wheel (bitsandbytes 0.49 on macOS)
    "bitsandbytes>=0.43\n",
    # a release in the range has an sdist (0.42.0), or a pure wheel (0.41.1)
    "bitsandbytes>=0.42,<0.44\n",
    "bitsandbytes==0.41.1\n",
    # kept by a marker to the platforms with wheels
    "triton>=3.0; sys_platform == 'linux'\n",
    # another index serves it (Jetson's index has aarch64 builds); a release the data does not know
    "--extra-index-url https://pypi.jetson-ai-lab.io/jp6/cu126\nonnxruntime-gpu==1.22.0\n",
    "triton==99.0\n",
])
def test_cf015_stays_quiet_on_ranges_that_install(tmp_path, text):
    assert "CF015" not in codes(tmp_path, {"requirements.txt": text})


# jax-cuda12-plugin has wheels for Linux only (PyPI's file lists): what jax[cuda12] brings fails
# on macOS and Windows though jax itself installs there; uv says "jax-cuda12-plugin has no wheels
# with a matching platform tag" (google-deepmind/mujoco_playground's cuda extra, where orbax's
# jax>=0.5.0 floors it). An unpinned jax[cuda12], or a range reaching below the data's releases,
# installs there: uv 0.13.9 takes jax 0.4.21 on macOS, whose cuda12 extra asks for no plugin.
@pytest.mark.parametrize("text, expected", [
    ("jax[cuda12]==0.5.0\n", ("jax[cuda12] 0.5.0 installs jax-cuda12-plugin", "windows-x86_64, macos-arm64")),
    ("jax[cuda]>=0.6\n", ("jax[cuda] installs jax-cuda12-plugin", "windows-x86_64, macos-arm64")),
    ("jax[cuda,cuda12]==0.5.0\n", ("jax[cuda] 0.5.0 installs jax-cuda12-plugin", "windows-x86_64, macos-arm64")),  # one plugin, said once
    ("jax[cuda12]\n", None),
    ("jax[cuda12]>=0.4\n", None),
    ("jax[cuda12]<0.6\n", None),
    # what installs beside it floors it: another jax pin, or orbax-checkpoint 0.11.22's jax>=0.5.0 (its METADATA)
    ("jax[cuda12]\njax>=0.6\n", ("jax[cuda12] installs jax-cuda12-plugin", "windows-x86_64, macos-arm64")),
    ("jax[cuda12]\norbax-checkpoint>=0.11.22\n", ("jax[cuda12] installs jax-cuda12-plugin", "windows-x86_64, macos-arm64")),
    ("jax[cuda12]\norbax-checkpoint\n", None),  # its oldest releases ask no jax
    ("jax[cuda12]\norbax-checkpoint>=0.11.22; sys_platform == 'linux'\n", None),
    ("jax[cuda12]; sys_platform == 'linux'\njax; sys_platform != 'linux'\n", None),
    ("jax[cuda12-local]==0.5.0; platform_system == 'Linux'\n", None),
    ("jax==0.5.0\n", None),
])
def test_cf015_follows_what_a_jax_extra_brings(tmp_path, text, expected):
    found = [f for f in _json(tmp_path, {"requirements.txt": text}) if f["code"] == "CF015"]
    if expected is None:
        assert found == []
    else:
        assert [(f["message"].split(";")[0].split(": ", 1)[1], f["environments"]) for f in found] == [expected]
        assert "environment marker" in found[0]["fix"]


def test_a_projects_main_dependencies_floor_the_jax_of_each_extra(tmp_path):
    """mujoco_playground's shape: orbax-checkpoint>=0.11.22 in the dependencies, jax[cuda12] in the
    cuda extra; uv 0.13.9 finds no solution for that extra on macOS and Windows."""
    text = '[project]\nname = "a"\nversion = "1"\ndependencies = ["orbax-checkpoint>=0.11.22"]\n[project.optional-dependencies]\ncuda = ["jax[cuda12]"]\nother = ["jax"]\n'
    found = [f for f in _json(tmp_path, {"pyproject.toml": text}) if f["code"] == "CF015"]
    assert [f["environments"] for f in found] == ["windows-x86_64, macos-arm64 (extra cuda)"]


def test_what_a_line_brings_is_left_to_an_override_and_to_a_resolver_s_output(tmp_path):
    """uv's override-dependencies decide the plugin's version and marker; pip-compile lists what it
    brought on its own lines (and was run on the platform it is for)."""
    text = '[project]\nname = "a"\nversion = "1"\ndependencies = ["jax[cuda12]==0.5.0"]\n[tool.uv]\noverride-dependencies = ["jax-cuda12-plugin==0.5.0; sys_platform == \'linux\'"]\n'
    assert "CF015" not in codes(tmp_path / "a", {"pyproject.toml": text})
    compiled = "#\n# This file is autogenerated by pip-compile with Python 3.12\n#\njax[cuda12]==0.5.0\njax-cuda12-plugin==0.5.0\n"
    assert "CF015" not in codes(tmp_path / "b", {"requirements.txt": compiled})


def test_a_python_gap_is_worded_by_where_the_file_s_python_comes_from(tmp_path):
    head = "# onnxruntime-gpu 1.16.0 for linux-x86_64, Python 3.13; generated by cudafit\n"
    [found] = [f for f in _json(tmp_path, {"requirements.txt": head + "onnxruntime-gpu==1.16.0\n"}) if f["code"] == "CF015"]
    assert found["message"].endswith("the Python the file was generated for") and "requires-python" not in found["message"]
    assert found["fix"].startswith("generate the file again for a Python onnxruntime-gpu 1.16.0 has wheels for")


# liger-kernel requires triton in every release's METADATA (matrices/wheels.toml, measured), and
# triton has wheels for Linux only: uv says "liger-kernel==0.5.2 depends on triton>=2.3.1" and
# "triton>=2.3.1 has no wheels with a matching platform tag (win_amd64)" (hpcaitech/Open-Sora).
@pytest.mark.parametrize("text, expected", [
    ("liger-kernel==0.5.2\n", ("liger-kernel 0.5.2 installs triton", "windows-x86_64, macos-arm64")),
    ("liger-kernel>=0.7.0; platform_system != 'Darwin'\n", ("liger-kernel installs triton", "windows-x86_64")),
    ("liger-kernel; sys_platform == 'linux'\n", None),
    ("liger-kernel==99.0\n", None),  # a release the data does not know: nothing it requires is known
])
def test_cf015_follows_a_library_s_own_requirements(tmp_path, text, expected):
    found = [f for f in _json(tmp_path, {"requirements.txt": text}) if f["code"] == "CF015"]
    if expected is None:
        assert found == []
    else:
        assert [(f["message"].split(";")[0].split(": ", 1)[1], f["environments"]) for f in found] == [expected]


def test_what_a_library_brings_is_not_read_as_the_file_s_own_pin(tmp_path):
    """liger-kernel's torch>=2.1.2 is no unpinned torch of the file's (CF008 is about what it pins)."""
    assert codes(tmp_path, {"requirements.txt": "liger-kernel==0.5.2; sys_platform == 'linux'\n"}) == []


@pytest.mark.parametrize(
    "index, spec, fires",
    [
        ("--extra-index-url https://download.pytorch.org/whl/cu118", "torch", True),  # its newest is 2.7.1: PyPI's 2.15.0 is higher
        ("--extra-index-url https://download.pytorch.org/whl/cu118", "torch<2.8", False),  # 2.7.1+cu118 ranks above PyPI's 2.7.1
        ("--extra-index-url https://download.pytorch.org/whl/cu130", "torch", False),  # the index has 2.15.0+cu130
        ("--index-url https://download.pytorch.org/whl/cu118", "torch", False),  # PyPI is not read
        ("--extra-index-url https://download.pytorch.org/whl/nightly/cu130", "torch", False),  # builds the data does not know
    ],
)
def test_cf008_with_pytorch_as_an_extra_index_where_pypi_has_the_higher_version(tmp_path, index, spec, fires):
    """pip takes the highest version from any index: beside the cu118 index (coqui TTS's Dockerfile),
    an unpinned torch is still PyPI's CUDA 13 build."""
    result = check(tmp_path, {"requirements.txt": f"{index}\n{spec}\n"}, "--output-format", "text")
    assert ("CF008" in result.stdout) is fires, result.stdout
    if fires:
        assert "installs torch 2.15.0 from PyPI on Linux (pip takes the highest version from any index: the cu118 index's newest is 2.7.1)" in result.stdout


def test_a_set_cudafit_wrote_for_one_machine_is_judged_on_that_machine(tmp_path):
    """`resolve --format requirements` writes the set for the machine it resolved, and says so in
    its first line: jax[cuda13] for Linux is no error on macOS, as a uv pip compile output is not."""
    head = "# jax 0.10.2+cu13 (CUDA 13.0, cuDNN 9.12) for linux-x86_64, Python 3.11; generated by cudafit\n"
    assert "CF015" not in codes(tmp_path / "a", {"requirements.txt": head + "jax[cuda13]==0.10.2\n"})
    # without the line, or for a platform the plugin has no wheel for, it is judged as written
    assert "CF015" in codes(tmp_path / "b", {"requirements.txt": "jax[cuda13]==0.10.2\n"})
    assert "CF015" in codes(tmp_path / "c", {"requirements.txt": head.replace("linux-x86_64", "macos-arm64") + "jax[cuda13]==0.10.2\n"})


def test_cf015_leaves_what_a_lock_brought_to_the_lock(tmp_path):
    lock = '''version = 1
requires-python = ">=3.12"

[[package]]
name = "jax"
version = "0.5.0"
source = { registry = "https://pypi.org/simple" }
wheels = [{ url = "https://files.pythonhosted.org/jax-0.5.0-py3-none-any.whl" }]

[package.optional-dependencies]
cuda12 = [{ name = "jax-cuda12-plugin", marker = "sys_platform == 'linux'" }]
'''
    assert "CF015" not in codes(tmp_path, {"uv.lock": lock})


def test_cf015_leaves_a_constraint_alone(tmp_path):
    """A constraint limits versions and installs nothing: through -c, and a constraints*.txt
    handed over on its own (pre-commit passes it by name)."""
    assert "CF015" not in codes(tmp_path, {"requirements.txt": "-c constraints.txt\nnumpy\n", "constraints.txt": "triton==3.1.0\n"})
    assert "CF015" in codes(tmp_path / "r", {"requirements.txt": "-r more.txt\n", "more.txt": "triton==3.1.0\n"})


def test_cf015_in_a_file_split_by_python_markers_names_a_marker_as_the_fix(tmp_path):
    text = "torch==2.1.2; python_version < '3.12'\ntorch==2.5.1; python_version >= '3.12'\n"
    found = [f for f in _json(tmp_path, {"requirements.txt": text}) if f["code"] == "CF015"]
    assert [(f["line"], f["environments"]) for f in found] == [(2, "linux-aarch64, windows-x86_64, macos-arm64 (Python 3.13)")]
    assert found[0]["fix"].startswith("limit it with a marker")


def test_cf015_in_a_lockfile_follows_its_forks(tmp_path):
    """A uv.lock that takes torch 2.1.2 below Python 3.12 and 2.5.1 from it installs everywhere."""
    lock = """
    version = 1
    revision = 2
    requires-python = ">=3.10,<3.13"

    [[package]]
    name = "app"
    version = "0.1.0"
    source = { editable = "." }
    dependencies = [
        { name = "torch", version = "2.1.2", source = { registry = "https://pypi.org/simple" }, marker = "python_full_version < '3.12'" },
        { name = "torch", version = "2.5.1", source = { registry = "https://pypi.org/simple" }, marker = "python_full_version >= '3.12'" },
    ]

    [package.optional-dependencies]
    onnx = [{ name = "onnxruntime-gpu", marker = "sys_platform == 'linux' and platform_machine == 'x86_64'" }]

    [[package]]
    name = "onnxruntime-gpu"
    version = "1.22.0"
    source = { registry = "https://pypi.org/simple" }

    [[package]]
    name = "torch"
    version = "2.1.2"
    source = { registry = "https://pypi.org/simple" }
    resolution-markers = ["python_full_version < '3.12'"]

    [[package]]
    name = "torch"
    version = "2.5.1"
    source = { registry = "https://pypi.org/simple" }
    resolution-markers = ["python_full_version >= '3.12'"]
    """
    assert "CF015" not in codes(tmp_path, {"uv.lock": lock})
    # torch 2.1.1 from 3.12 on has no wheel; onnxruntime-gpu through an extra that allows every
    # platform has none on aarch64 or macOS
    wrong = lock.replace('version = "2.5.1"', 'version = "2.1.1"').replace("    onnx = [", '    onnx-anywhere = [{ name = "onnxruntime-gpu" }]\n    onnx = [')
    found = sorted((f["message"].split(":")[0], f["line"]) for f in _json(tmp_path / "c", {"uv.lock": wrong}) if f["code"] == "CF015")
    assert found == [
        ("on Python 3.12", 30),
        ("on linux-aarch64, macos-arm64 (extra onnx-anywhere)", 19),
    ]


def test_cf007_pytorch_cuda_the_channel_never_built(tmp_path):
    env = "channels:\n  - pytorch\n  - nvidia\ndependencies:\n  - pytorch=2.5.1\n  - pytorch-cuda=12.6\n"
    assert findings(tmp_path, {"environment.yml": env}) == [("environment.yml", 6, 5, "CF007")]


@pytest.mark.parametrize(
    ("env", "found"),
    [
        # before 1.13 the pytorch channel's builds were picked by cudatoolkit: 1.12.1 had 10.2, 11.3, 11.6
        ("channels:\n  - pytorch\ndependencies:\n  - pytorch=1.12.1\n  - cudatoolkit=11.7\n", [("environment.yml", 5, 5, "CF007")]),
        ("channels:\n  - pytorch\ndependencies:\n  - pytorch=1.12.1\n  - cudatoolkit=11.3\n", []),
        ("channels:\n  - pytorch\ndependencies:\n  - pytorch=1.12\n  - cudatoolkit=11.3.1\n", []),  # conda: 11.3.1 is a build of 11.3
        # from 1.13 pytorch-cuda picks them; a cudatoolkit beside is another package, not the build's CUDA
        ("channels:\n  - pytorch\n  - nvidia\ndependencies:\n  - pytorch=2.1.0\n  - pytorch-cuda=11.8\n  - cudatoolkit=11.7\n", []),
        # no pytorch-cuda picks a 1.12 build; conda's `|`; the CPU build asked for (cpuonly, a build string)
        ("channels:\n  - pytorch\n  - nvidia\ndependencies:\n  - pytorch=1.12.1\n  - pytorch-cuda=11.7\n", [("environment.yml", 6, 5, "CF007")]),
        ("channels:\n  - pytorch\ndependencies:\n  - pytorch=1.12.1\n  - cudatoolkit=11.3|11.6\n", []),
        ("channels:\n  - pytorch\ndependencies:\n  - pytorch=1.12.1\n  - cpuonly\n  - cudatoolkit=11.7\n", []),
        ("channels:\n  - pytorch\ndependencies:\n  - pytorch=1.12.1=py3.9_cpu_0\n  - cudatoolkit=11.7\n", []),
    ],
)
def test_cf007_cudatoolkit_picks_the_channels_build_before_1_13(tmp_path, env, found):
    assert findings(tmp_path, {"environment.yml": env}) == found


def test_a_torch_that_was_never_released_is_cf002_once_and_one_before_the_data_is_cf013(tmp_path):
    """torch 2.3.2 lies among the lines the data covers: never released (CF002), and not also
    "not in the data". torch 1.0 was released before the data begins: only unknown (CF013)."""
    machine = ("--os", "linux", "--arch", "x86_64", "--python", "3.11", "--driver", "550.54.15", "--gpu", "NVIDIA GeForce RTX 4090")
    found = findings(tmp_path, {"a/requirements.txt": "torch==2.3.2\n", "b/requirements.txt": "torch==1.0\n"}, *machine)
    # torch 1.0 also had wheels for Linux x86_64 and macOS x86_64 only (PyPI): CF015 elsewhere
    assert [(path, code) for path, _l, _c, code in found] == [("a/requirements.txt", "CF002"), ("b/requirements.txt", "CF013"), ("b/requirements.txt", "CF015")]


@pytest.mark.parametrize("line", ["torchvision==0.99.0", "torchaudio==0.0.1", "torchvision==0.18.5+cu121", "jaxlib==0.4.99", "torch==2.3.1rc1", "torch==2.3.1rc1+cu121"])
def test_a_companion_or_prerelease_the_data_lacks_is_cf013_not_a_pass(tmp_path, line):
    machine = ("--os", "linux", "--arch", "x86_64", "--python", "3.11", "--driver", "550.54.15", "--gpu", "NVIDIA GeForce RTX 4090")
    # A local version is CF001 as well, whatever the release: PyPI serves none (issue 22).
    assert codes(tmp_path, {"requirements.txt": line + "\n"}, *machine) == (["CF001", "CF013"] if "+" in line else ["CF013"])


def test_cf002_a_build_missing_on_the_only_platform_its_marker_allows(tmp_path):
    """version x variant x platform: cu118 builds of 2.5.1 exist for Linux x86_64 and Windows, not macOS."""
    reqs = (
        "--index-url https://download.pytorch.org/whl/cu118\n"
        "torch==2.5.1+cu118; sys_platform == 'darwin'\n"
        "torch==2.5.1+cu118; sys_platform == 'win32'\n"
        "torch==2.5.1+cu118; platform_machine == 'aarch64'\n"
        "torch==2.5.1+cu118; sys_platform == 'linux'\n"
    )
    assert [(line, code) for _p, line, _c, code in findings(tmp_path, {"requirements.txt": reqs})] == [(2, "CF002"), (4, "CF002")]


@pytest.mark.parametrize("line, fires", [
    ("tensorflow==2.18.0; sys_platform == 'win32' and platform_machine == 'ARM64'", True),
    ("tensorflow==2.18.0; sys_platform == 'linux'", False),
    ("jax[cuda12]==0.4.38; python_version < '3.9'", True),
    ("jax[cuda12]==0.4.38; python_version >= '3.10'", False),
    ("onnxruntime-gpu==1.20.2; sys_platform == 'darwin'", True),
    ("onnxruntime-gpu==1.20.2; sys_platform == 'win32'", False),
])
def test_cf009_for_every_framework(tmp_path, line, fires):
    assert ("CF009" in codes(tmp_path, {"requirements.txt": line + "\n"})) is fires


def test_cf010_a_target_with_an_old_driver(tmp_path):
    files = {
        "requirements.txt": "--index-url https://download.pytorch.org/whl/cu124\ntorch==2.5.1+cu124\n",
        "pyproject.toml": """
            [project]
            name = "x"
            version = "0"
            [[tool.cudafit.targets]]
            name = "v100-470"
            driver = "470.82.01"
            gpu = "Tesla V100-SXM2-16GB"
            [[tool.cudafit.targets]]
            name = "h100-570"
            driver = "570.86.10"
            gpu = "NVIDIA H100 80GB HBM3"
        """,
    }
    result = check(tmp_path, files, "requirements.txt")
    assert result.exit_code == 1
    assert "CF010" in result.stdout and "'v100-470'" in result.stdout and "'h100-570'" not in result.stdout
    assert "525" in result.stdout  # the driver floor it needs


def test_cf010_machine_options_are_a_target(tmp_path):
    req = {"requirements.txt": "--index-url https://download.pytorch.org/whl/cu126\ntorch==2.7.0+cu126\n"}
    assert codes(tmp_path, req, "--driver", "470.82.01", "--gpu", "Tesla V100-SXM2-16GB") == ["CF010"]
    assert codes(tmp_path, req, "--driver", "570.86.10", "--gpu", "NVIDIA GeForce RTX 5090") == ["CF010"]  # no sm_120 in cu126
    assert codes(tmp_path, req, "--driver", "570.86.10", "--gpu", "NVIDIA GeForce RTX 3090") == []


def test_cf012_include_cycle_and_includes_resolve_relative_to_the_file(tmp_path):
    files = {"requirements.txt": "-r reqs/base.txt\n", "reqs/base.txt": "-c ../requirements.txt\ntorch==2.7.0+cu121\n"}
    found = findings(tmp_path, files, "requirements.txt")
    assert ("reqs/base.txt", 1, 1, "CF012") in found and ("reqs/base.txt", 2, 1, "CF002") in found


def test_cf012_a_file_two_includes_reach_is_no_cycle(tmp_path):
    """lint.txt includes requirements.txt and test.txt, which includes requirements.txt too: pip
    reads it twice and installs (pip 24.3 called it a loop: pypa/pip#13046, fixed in 24.3.1)."""
    files = {"lint.txt": "-r requirements.txt\n-r test.txt\nruff\n", "test.txt": "-r requirements.txt\npytest\n", "requirements.txt": "numpy\n"}
    assert [f for f in findings(tmp_path, files, "lint.txt") if f[3] == "CF012"] == []
    cycle = {"a.txt": "-r b.txt\n", "b.txt": "-r c.txt\n", "c.txt": "-r a.txt\nnumpy\n"}
    assert [f for f in findings(tmp_path, cycle, "a.txt") if f[3] == "CF012"] == [("c.txt", 1, 1, "CF012")]


def test_cf005_nvidia_pin_against_the_framework(tmp_path):
    req = "--index-url https://download.pytorch.org/whl/cu124\n--extra-index-url https://pypi.org/simple\ntorch==2.5.1+cu124\nnvidia-cudnn-cu12==8.9.2.26\n"
    assert ("requirements.txt", 4, 1, "CF005") in findings(tmp_path, {"requirements.txt": req}, "--driver", "550.54.14", "--gpu", "NVIDIA GeForce RTX 3090")


# -- the readers keep exact positions ---------------------------------------------------------


def test_requirements_positions_continuations_hashes_and_comments(tmp_path):
    req = "# a comment\n   torch==2.5.1+cu124 \\\n    --hash=sha256:abc  # trailing\n\ttorchvision==0.19.0+cu124 ; python_version >= '3.9'\n"
    found = findings(tmp_path, {"requirements.txt": req})
    assert ("requirements.txt", 2, 4, "CF001") in found
    assert ("requirements.txt", 4, 2, "CF004") in found


def test_pyproject_positions_uv_sources_and_groups(tmp_path):
    pyproject = """
        [project]
        name = "x"
        version = "0"
        dependencies = ["numpy", "torch==2.5.1+cu124"]

        [dependency-groups]
        gpu = ["torchvision==0.19.1+cu124"]

        [tool.uv.sources]
        torch = [{ index = "pytorch" }]

        [[tool.uv.index]]
        name = "pytorch"
        url = "https://download.pytorch.org/whl/cu124"
        explicit = true
    """
    found = findings(tmp_path, {"pyproject.toml": pyproject})
    assert ("pyproject.toml", 4, 27, "CF001") not in found  # the uv source serves torch
    assert ("pyproject.toml", 7, 9, "CF004") in found
    assert ("pyproject.toml", 7, 9, "CF001") in found  # but not torchvision: uv looks for it on PyPI


def test_poetry_sources_and_exact_versions(tmp_path):
    pyproject = """
        [tool.poetry.dependencies]
        python = "^3.11"
        torch = { version = "2.5.1+cu124", source = "pytorch" }
        torchvision = "0.19.0"

        [[tool.poetry.source]]
        name = "pytorch"
        url = "https://download.pytorch.org/whl/cu118"
        priority = "explicit"
    """
    found = findings(tmp_path, {"pyproject.toml": pyproject})
    assert ("pyproject.toml", 3, 22, "CF003") in found and ("pyproject.toml", 4, 16, "CF004") in found


def test_uv_lock_and_pylock(tmp_path):
    lock = """
        version = 1
        revision = 2

        [[package]]
        name = "torch"
        version = "2.5.1+cu124"
        source = { registry = "https://download.pytorch.org/whl/cu118" }

        [[package]]
        name = "torchvision"
        version = "0.20.1+cu124"
        source = { registry = "https://download.pytorch.org/whl/cu124" }
    """
    pylock = """
        lock-version = "1.0"
        created-by = "pip"

        [[packages]]
        name = "torch"
        version = "2.7.0+cu121"
        index = "https://download.pytorch.org/whl/cu121"
    """
    found = findings(tmp_path, {"uv.lock": lock, "pylock.toml": pylock})
    assert found == [("pylock.toml", 5, 9, "CF002"), ("uv.lock", 5, 9, "CF003")]


def test_environment_yml_pip_section(tmp_path):
    env = """
        name: gpu
        channels: [conda-forge]
        dependencies:
          - python=3.11
          - pip:
            - --extra-index-url https://download.pytorch.org/whl/cu124
            - torch==2.5.1+cu124
            - torchvision==0.19.0+cu124
    """
    assert findings(tmp_path, {"environment.yml": env}) == [
        ("environment.yml", 6, 25, "CF006"),  # the URL itself, as in a requirements file
        ("environment.yml", 8, 7, "CF004"),
    ]


def test_files_by_name_in_a_folder_and_by_content_when_named(tmp_path):
    files = {"requirements/gpu.txt": "torch==2.5.1+cu124\n", "deps.lock": 'version = 1\n\n[[package]]\nname = "torch"\nversion = "2.7.0+cu121"\n', "notes.txt": "torch==2.5.1+cu124\n"}
    assert [f[:1] + f[3:] for f in findings(tmp_path, files)] == [("requirements/gpu.txt", "CF001")]
    assert ("deps.lock", 4, 9, "CF002") in findings(tmp_path, files, "deps.lock")


# -- suppression, selection, settings ---------------------------------------------------------


def test_per_line_suppression(tmp_path):
    req = "torch==2.5.1+cu124  # cudafit: ignore[CF001]\ntorch==2.4.1+cu124  # cudafit: ignore\ntorch==2.4.0+cu124  # cudafit: ignore[CF006]\n"
    assert findings(tmp_path, {"requirements.txt": req}) == [("requirements.txt", 3, 1, "CF001")]


def test_select_and_ignore_from_options_and_pyproject(tmp_path):
    files = {"requirements.txt": "--extra-index-url https://download.pytorch.org/whl/cu124\ntorch==2.5.1+cu124\ntorchvision==0.19.0+cu124\n"}
    assert codes(tmp_path, files) == ["CF004", "CF006"]
    assert codes(tmp_path, files, "--select", "CF004") == ["CF004"]
    assert codes(tmp_path, files, "--ignore", "cf00") == []
    files["pyproject.toml"] = '[tool.cudafit]\nignore = ["CF006"]\n'
    assert codes(tmp_path, files, "requirements.txt") == ["CF004"]


@pytest.mark.parametrize(
    "config, expected",
    [
        ('[tool.cudafit]\nselect = ["CF999"]\n', "pyproject.toml: [tool.cudafit] select: unknown rule code CF999"),
        ('[tool.cudafit]\nsilence = ["CF001"]\n', "unknown key silence"),
        ('[[tool.cudafit.targets]]\nname = "a"\ngpu = "GeForce Nonexistent 9999"\n', "[[tool.cudafit.targets]] #1 (a)"),
        ('[[tool.cudafit.targets]]\ndrivr = "535"\n', "unknown key drivr"),
        ("[tool.cudafit\n", "pyproject.toml: not valid TOML"),
    ],
)
def test_bad_settings_exit_2_naming_file_and_key(tmp_path, config, expected):
    result = check(tmp_path, {"pyproject.toml": config, "requirements.txt": "torch\n"}, "requirements.txt")
    assert result.exit_code == 2 and expected in result.stderr and "Traceback" not in result.stderr


def test_unknown_code_option_is_a_usage_error(tmp_path):
    result = check(tmp_path, {"requirements.txt": "torch\n"}, "--select", "XX1")
    assert result.exit_code == 2 and "unknown rule code XX1" in result.stderr


# -- output forms and exit codes --------------------------------------------------------------


def test_text_output_and_exit_codes(tmp_path):
    bad = check(tmp_path, {"requirements.txt": "torch==2.5.1+cu124\n"})
    assert bad.exit_code == 1
    assert bad.stdout.splitlines()[0].startswith("requirements.txt:1:1: CF001 ")
    assert bad.stdout.splitlines()[-1].startswith("Found 1 error and 0 warnings in 1 file")
    good = check(tmp_path, {"requirements.txt": "numpy\n"})
    assert good.exit_code == 0 and good.stdout == "All checks passed (1 file).\n"


def test_json_output_fields(tmp_path):
    result = check(tmp_path, {"requirements.txt": "torch==2.5.1+cu124\n"}, "--output-format", "json")
    (row,) = json.loads(result.stdout)
    assert {"path", "line", "col", "code", "message", "severity"} <= set(row) and row["severity"] == "error"


def test_github_annotations(tmp_path):
    result = check(tmp_path, {"requirements.txt": "--extra-index-url https://download.pytorch.org/whl/cu124\ntorch==2.5.1+cu124\n"}, "--output-format", "github")
    assert result.stdout.startswith("::warning file=requirements.txt,line=1,col=19,title=CF006::the PyTorch index")


# -- fixes ------------------------------------------------------------------------------------


def test_fix_rewrites_only_what_is_unambiguous_and_keeps_layout(tmp_path):
    text = "# pinned for the cluster\r\n--index-url https://download.pytorch.org/whl/cu124\r\ntorch==2.5.1+cu124\r\ntorchvision==0.19.0+cu118  # vision\r\n"
    (tmp_path / "requirements.txt").write_bytes(text.encode())
    diff = check(tmp_path, {}, "--diff")
    assert "-torchvision==0.19.0+cu118  # vision" in diff.stdout and "+torchvision==0.20.1+cu118  # vision" in diff.stdout
    assert (tmp_path / "requirements.txt").read_bytes() == text.encode()  # --diff changes nothing
    check(tmp_path, {}, "--fix")
    once = (tmp_path / "requirements.txt").read_bytes()
    check(tmp_path, {}, "--fix")
    fixed = (tmp_path / "requirements.txt").read_bytes()
    assert fixed == text.replace("0.19.0+cu118", "0.20.1+cu124").encode()  # version, then variant: CRLF and the comment kept
    assert once != text.encode()
    assert check(tmp_path, {}).exit_code == 0


def test_fix_moves_the_index_to_the_pinned_variant(tmp_path):
    files = {"requirements.txt": "--index-url https://download.pytorch.org/whl/cu118\ntorch==2.5.1+cu124\n"}
    check(tmp_path, files, "--fix")
    assert (tmp_path / "requirements.txt").read_text() == "--index-url https://download.pytorch.org/whl/cu124\ntorch==2.5.1+cu124\n"


def test_fix_moves_a_uv_index_table_its_sources_route_the_pin_to(tmp_path):
    text = (
        '[project]\nname = "app"\nversion = "1"\ndependencies = ["torch==2.5.1+cu124"]\n\n'
        '[[tool.uv.index]]\nname = "pytorch"  # the cluster\'s CUDA\nurl = "https://download.pytorch.org/whl/cu118"\nexplicit = true\n\n'
        '[tool.uv.sources]\ntorch = { index = "pytorch" }\n'
    )
    found = json.loads(check(tmp_path, {"pyproject.toml": text}, "--output-format", "json").stdout)
    assert [f["code"] for f in found] == ["CF003"]
    check(tmp_path, {}, "--fix")
    assert (tmp_path / "pyproject.toml").read_text() == text.replace("/whl/cu118", "/whl/cu124")
    assert check(tmp_path, {}).exit_code == 0


def test_lockfiles_are_never_rewritten(tmp_path):
    lock = 'version = 1\n\n[[package]]\nname = "torch"\nversion = "2.5.1+cu124"\nsource = { registry = "https://download.pytorch.org/whl/cu124" }\n\n[[package]]\nname = "torchvision"\nversion = "0.19.0+cu124"\nsource = { registry = "https://download.pytorch.org/whl/cu124" }\n'
    check(tmp_path, {"uv.lock": lock}, "--fix")
    assert (tmp_path / "uv.lock").read_text() == lock


# -- bad input: a finding or one line naming the file, never a traceback, others still checked ----


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("requirements.txt", b"\x7fELF\x00\x00binary", "a binary file"),
        ("requirements.txt", b"torch==2.5.1\n\xff\xfe\n", "requirements.txt:2: not valid UTF-8"),
        ("pyproject.toml", b"[project\n", "pyproject.toml: not valid TOML"),
        ("uv.lock", b"version = 7\n", "uv.lock:1: uv.lock version 7"),
        ("pylock.toml", b'lock-version = "2.0"\n', "pylock lock-version '2.0'"),
        ("environment.yml", b"dependencies: [\n", "environment.yml:2: not valid YAML"),
        ("environment.yml", b"- just\n- a list\n", "not an environment file"),
    ],
)
def test_unreadable_files_exit_2_and_others_are_still_checked(tmp_path, name, content, message):
    (tmp_path / name).write_bytes(content)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "requirements.txt").write_text("torch==2.5.1+cu124\n")
    result = check(tmp_path, {})
    assert result.exit_code == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert "sub/requirements.txt:1:1: CF001" in result.stdout


def test_a_huge_file_is_refused(tmp_path):
    (tmp_path / "requirements.txt").write_text("numpy\n" * 500_000)
    result = check(tmp_path, {})
    assert result.exit_code == 2 and "too large" in result.stderr


def test_yaml_alias_bomb_costs_nothing(tmp_path):
    bomb = 'a: &a ["x","x","x","x","x","x","x","x","x"]\n'
    for i in range(1, 12):
        bomb += f"{chr(97 + i)}: &{chr(97 + i)} [" + ",".join(f"*{chr(96 + i)}" for _ in range(9)) + "]\n"
    bomb += "dependencies: *l\n"
    result = check(tmp_path, {"environment.yml": bomb})
    assert result.exit_code in (0, 1, 2) and "Traceback" not in result.stderr


def test_no_http_client_on_the_check_path(tmp_path):
    import subprocess
    import sys

    (tmp_path / "requirements.txt").write_text("torch==2.5.1+cu124\n")
    code = "import sys; from cudafit.cli import run; run(['check', '.']); print('requests' in sys.modules, 'urllib3' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60).stdout
    assert out.strip().splitlines()[-1] == "False False"


# -- newcomer-test findings (issue 9 review) ---------------------------------------------------


def test_torch_stable_find_links_page_serves_every_variant(tmp_path):
    reqs = "-f https://download.pytorch.org/whl/torch_stable.html\ntorch==1.13.1+cu117\ntorchvision==0.14.1+cu117\n"
    assert codes(tmp_path, {"requirements.txt": reqs}) == []


def test_the_index_decides_the_variant_of_a_plain_pin(tmp_path):
    reqs = "--index-url https://download.pytorch.org/whl/cu124\ntorch==2.5.1\n"
    v100 = ("--os", "linux", "--arch", "x86_64", "--driver", "470.82.01", "--gpu", "Tesla V100-SXM2-16GB")
    assert "CF010" in codes(tmp_path, {"requirements.txt": reqs}, *v100)
    fine = "--index-url https://download.pytorch.org/whl/cu118\ntorch==2.5.1\n"
    (tmp_path / "ok").mkdir()
    assert "CF010" not in codes(tmp_path / "ok", {"requirements.txt": fine}, *v100)


def test_companions_from_indexes_of_two_variants(tmp_path):
    pyproject = """
        [project]
        name = "x"
        version = "0"
        dependencies = ["torch==2.5.1", "torchvision==0.20.1"]
        [[tool.uv.index]]
        name = "cu124"
        url = "https://download.pytorch.org/whl/cu124"
        explicit = true
        [[tool.uv.index]]
        name = "cu118"
        url = "https://download.pytorch.org/whl/cu118"
        explicit = true
        [tool.uv.sources]
        torch = { index = "cu124" }
        torchvision = { index = "cu118" }
        """
    assert "CF004" in codes(tmp_path, {"pyproject.toml": pyproject})
    (tmp_path / "ok").mkdir()
    assert "CF004" not in codes(tmp_path / "ok", {"pyproject.toml": pyproject.replace('index = "cu118" }', 'index = "cu124" }')})


def test_a_cuda_pin_on_a_macos_target(tmp_path):
    reqs = "--index-url https://download.pytorch.org/whl/cu124\ntorch==2.5.1+cu124\n"
    assert "CF010" in codes(tmp_path, {"requirements.txt": reqs}, "--os", "macos", "--arch", "aarch64")


def test_cf009_with_a_local_pin(tmp_path):
    reqs = "--index-url https://download.pytorch.org/whl/cu121\ntorch==2.5.1+cu121; python_version < '3.8'\n"
    assert "CF009" in codes(tmp_path, {"requirements.txt": reqs})


def test_cf005_an_nvidia_pin_beside_one_framework(tmp_path):
    reqs = "tensorflow[and-cuda]==2.20.0\nnvidia-cudnn-cu12==8.9.7.29\n"
    assert "CF005" in codes(tmp_path, {"requirements.txt": reqs})
    (tmp_path / "ok").mkdir()
    assert "CF005" not in codes(tmp_path / "ok", {"requirements.txt": "tensorflow[and-cuda]==2.20.0\n"})


def test_a_release_the_data_does_not_know_hides_nothing(tmp_path):
    reqs = (
        "--index-url https://download.pytorch.org/whl/cu118\n--extra-index-url https://pypi.org/simple\n"
        "torch==2.5.1+cu118\ntensorflow[and-cuda]==2.18.0\nonnxruntime-gpu==1.20.1\n"
    )
    found = codes(tmp_path, {"requirements.txt": reqs})
    assert "CF013" in found and "CF005" in found


def test_a_fact_the_data_lacks_is_a_warning_not_an_error(tmp_path):
    reqs = "--index-url https://download.pytorch.org/whl/cu121\n--extra-index-url https://pypi.org/simple\ntorch==2.5.1+cu121\njax[cuda12]==0.4.35\n"
    found = codes(tmp_path, {"requirements.txt": reqs})
    assert "CF005" not in found and "CF013" in found


def test_nightly_pins_are_not_called_never_released(tmp_path):
    reqs = "--index-url https://download.pytorch.org/whl/nightly/cu128\ntorch==2.9.0.dev20250801+cu128\n"
    assert "CF002" not in codes(tmp_path, {"requirements.txt": reqs})


def test_fix_reports_what_is_left_and_exits_0(tmp_path):
    reqs = "--index-url https://download.pytorch.org/whl/cu124\ntorch==2.5.1+cu121  # pinned\ntorchvision==0.20.1+cu121\n"
    result = check(tmp_path, {"requirements.txt": reqs}, "--fix")
    assert result.exit_code == 0, result.output
    assert "whl/cu121" in (tmp_path / "requirements.txt").read_text()
    assert "CF003" not in result.stdout


def test_no_fix_on_a_hashed_line(tmp_path):
    reqs = (
        "--index-url https://download.pytorch.org/whl/cu124\ntorch==2.5.1+cu124\n"
        "torchvision==0.20.0+cu124 \\\n    --hash=sha256:" + "0" * 64 + "\n"
    )
    result = check(tmp_path, {"requirements.txt": reqs}, "--fix")
    assert result.exit_code == 1 and "CF004" in result.stdout
    assert "0.20.0" in (tmp_path / "requirements.txt").read_text()


def test_a_file_that_cannot_be_written_stops_no_other_fix(tmp_path, monkeypatch):
    from cudafit import fileio
    from cudafit.errors import InputError

    real = fileio.write_atomic

    def write(path, text):
        if path.name == "a.txt":
            raise InputError(f"cannot write {path}: Read-only file system")
        real(path, text)

    monkeypatch.setattr(fileio, "write_atomic", write)
    bad = "--index-url https://download.pytorch.org/whl/cu124\ntorch==2.5.1+cu124\ntorchvision==0.20.0+cu124\n"
    result = check(tmp_path, {"a.txt": bad, "b.txt": bad}, "--fix", "a.txt", "b.txt")
    assert result.exit_code == 2 and "Read-only file system" in result.stderr
    assert "0.20.1" in (tmp_path / "b.txt").read_text() and "0.20.0" in (tmp_path / "a.txt").read_text()
    assert "a.txt:3:1: CF004" in result.stdout


def test_poetry_extras_and_markers_are_read(tmp_path):
    pyproject = """
        [tool.poetry]
        name = "x"
        version = "0"
        [tool.poetry.dependencies]
        python = "^3.11"
        torch = { version = "2.5.1+cu118", source = "pytorch" }
        tensorflow = { version = "2.18.0", extras = ["and-cuda"] }
        onnxruntime-gpu = [{ version = "1.20.2", markers = "sys_platform == 'darwin'" }]
        [[tool.poetry.source]]
        name = "pytorch"
        url = "https://download.pytorch.org/whl/cu118"
        priority = "explicit"
        """
    found = codes(tmp_path, {"pyproject.toml": pyproject})
    assert "CF005" in found and "CF009" in found


def test_a_companion_that_does_not_pair_hides_no_target_finding(tmp_path):
    reqs = "--index-url https://download.pytorch.org/whl/cu124\ntorch==2.5.1+cu124\ntorchvision==0.20.0+cu124\n"
    v100 = ("--os", "linux", "--arch", "x86_64", "--driver", "470.82.01", "--gpu", "Tesla V100-SXM2-16GB")
    assert {"CF004", "CF010"} <= set(codes(tmp_path, {"requirements.txt": reqs}, *v100))


def test_a_target_finding_points_at_the_framework_that_fails(tmp_path):
    reqs = "--index-url https://download.pytorch.org/whl/cpu\n--extra-index-url https://pypi.org/simple\ntorch==2.5.1+cpu\nonnxruntime-gpu==1.20.2\n"
    found = findings(tmp_path, {"requirements.txt": reqs}, "--os", "macos", "--arch", "aarch64", "--python", "3.12")
    assert ("requirements.txt", 4, 1, "CF010") in found


@pytest.mark.parametrize("value", ['"torch"', "[1, { a = 1 }]"])
def test_dependencies_of_the_wrong_shape(tmp_path, value):
    found = findings(tmp_path, {"pyproject.toml": f'[project]\nname = "x"\nversion = "0"\ndependencies = {value}\n'})
    assert ("pyproject.toml", 4, 1, "CF000") in found


def test_plain_pypi_torch_pin_is_pypis_build_on_each_target(tmp_path):
    # torch==2.11.0 from PyPI is the CUDA 13 build on Linux and the CPU build on Windows.
    linux = ["--os", "linux", "--arch", "x86_64", "--python", "3.12", "--driver", "580.65.06", "--gpu", "NVIDIA GeForce RTX 3090"]
    assert codes(tmp_path, {"requirements.txt": "torch==2.11.0\nxformers==0.0.35\n"}, *linux) == ["CF010"]  # xformers links CUDA 12
    assert codes(tmp_path / "ok", {"requirements.txt": "torch==2.10.0\nxformers==0.0.34\n"}, *linux) == []
    windows = ["--os", "windows", "--arch", "x86_64", "--python", "3.12", "--driver", "566.36", "--gpu", "NVIDIA GeForce RTX 4090"]
    assert codes(tmp_path / "win", {"requirements.txt": "torch==2.11.0\n"}, *windows) == ["CF010"]  # a CPU build on a GPU machine


_LOCK_WHEELS = """
version = 1
revision = 2
requires-python = "==3.12.*"
SUPPORTED

[[package]]
name = "app"
version = "0.1.0"
source = { editable = "." }
dependencies = [{ name = "pyrealsense2"MARKER }]

[[package]]
name = "pyrealsense2"
version = "2.56.5.9235"
source = { registry = "https://pypi.org/simple" }
SDIST
wheels = [
    { url = "https://files.pythonhosted.org/packages/aa/pyrealsense2-2.56.5.9235-cp312-cp312-manylinux1_x86_64.whl", hash = "sha256:00" },
    { url = "https://files.pythonhosted.org/packages/bb/pyrealsense2-2.56.5.9235-cp312-cp312-win_amd64.whl", hash = "sha256:00" },
]
"""


@pytest.mark.parametrize("supported, marker, sdist, expected", [
    # the lock's own wheel list (lerobot's pyrealsense2: Linux x86_64 and Windows only), any package
    ("", "", "", {"linux-aarch64, macos-arm64"}),
    # its edge marker keeps it where its wheels are; an sdist builds; the lock is for Linux x86_64 only
    ("", ", marker = \"platform_machine == 'x86_64' or sys_platform == 'win32'\"", "", set()),
    ("", "", 'sdist = { url = "https://files.pythonhosted.org/packages/cc/pyrealsense2-2.56.5.9235.tar.gz", hash = "sha256:00" }', set()),
    ("supported-markers = [\"platform_machine == 'x86_64' and sys_platform == 'linux'\"]", "", "", set()),
])
def test_cf015_reads_a_lockfiles_own_wheel_list(tmp_path, supported, marker, sdist, expected):
    lock = _LOCK_WHEELS.replace("SUPPORTED", supported).replace("MARKER", marker).replace("SDIST", sdist)
    found = [f for f in _json(tmp_path, {"uv.lock": lock}) if f["code"] == "CF015"]
    assert {f["environments"] for f in found} == expected
    line = lock.lstrip("\n").splitlines().index('name = "pyrealsense2"') + 1
    assert all("in the lock" in f["message"] and f["line"] == line for f in found)


def test_cf015_reads_a_pylocks_own_wheel_list(tmp_path):
    pylock = (
        'lock-version = "1.0"\ncreated-by = "uv"\nrequires-python = "==3.12.*"\n\n'
        '[[packages]]\nname = "torch-cluster"\nversion = "1.6.3"\n'
        'wheels = [{ url = "https://data.pyg.org/whl/torch-2.8.0%2Bcu128/torch_cluster-1.6.3%2Bpt28cu128-cp312-cp312-linux_x86_64.whl" }]\n'
    )
    found = [f for f in _json(tmp_path, {"pylock.toml": pylock}) if f["code"] == "CF015"]
    assert [f["environments"] for f in found] == ["linux-aarch64, windows-x86_64, macos-arm64"]


def test_a_requirement_with_escaped_quotes_is_found_where_it_is_written(tmp_path):
    text = '[project]\nname = "a"\nversion = "1"\ndependencies = [\n  "numpy",\n  "torch==2.5.1+cu124; sys_platform == \\"linux\\"",\n]\n'
    found = findings(tmp_path, {"pyproject.toml": text})
    assert [(line, col, code) for _p, line, col, code in found] == [(6, 4, "CF001")]


def test_a_marker_in_pep_345s_dotted_names_is_judged_on_the_environment_not_this_machine(tmp_path):
    """Poetry keeps markers as written; packaging reads `sys.platform` as sys_platform."""
    text = (
        '[tool.poetry.dependencies]\npython = "^3.10"\n'
        'torch = { version = "2.5.1+cu124", markers = "sys.platform == \'win32\'" }\n'
        'torchvision = { version = "0.19.0+cu118", markers = "sys.platform == \'win32\'" }\n'
    )
    found = _json(tmp_path, {"pyproject.toml": text})
    assert sorted((f["code"], f["environments"]) for f in found) == [("CF001", "windows-x86_64"), ("CF001", "windows-x86_64"), ("CF004", "windows-x86_64")]


def test_jax_cuda_is_checked_as_the_extra_it_repeats(tmp_path):
    """jax[cuda] is jax's own alias of jax[cuda12] (its METADATA): check reads it so, as resolve does."""
    alias = codes(tmp_path, {"requirements.txt": "jax[cuda]==0.10.2\ntorch==2.15.0\n"})
    named = codes(tmp_path, {"requirements.txt": "jax[cuda12]==0.10.2\ntorch==2.15.0\n"})
    assert alias == named and "CF005" in alias


@pytest.mark.parametrize("line", [
    "bitsandbytes==0.41.1; platform_system == 'Windows'",  # a py3-none-any wheel installs there (PyPI's files)
    "torch>=0.0.0.dev0; platform_machine == 's390x'",  # llama.cpp's line for s390x: no platform the data knows
])
def test_cf009_claims_only_where_the_data_knows_the_platform(tmp_path, line):
    assert "CF009" not in codes(tmp_path, {"requirements.txt": line + "\n"})


def test_a_requirements_folder_one_level_deeper_is_walked(tmp_path):
    # Lightning's requirements/pytorch/base.txt: pre-commit's pattern passes it, and a folder walk finds it too
    files = {"requirements/pytorch/base.txt": "torch==2.5.1+cu124\n", "docs/pytorch/notes.txt": "torch==2.5.1+cu124\n"}
    assert [f[:1] + f[3:] for f in findings(tmp_path, files)] == [("requirements/pytorch/base.txt", "CF001")]


def test_a_target_without_a_gpu_asks_nothing_of_a_driver(tmp_path):
    # a CUDA torch installs and runs on a CPU-only runner's CPU: `--python 3.12` there, or
    # `--driver none`, is no reason for CF010 (a newcomer's CI runner failed every file with torch)
    for reqs in ("torch\n", "torch==2.9.1\n"):
        assert "CF010" not in codes(tmp_path, {"requirements.txt": reqs}, "--driver", "none", "--os", "linux", "--arch", "x86_64", "--python", "3.12")
    # what holds without a driver is still said: no CUDA build of it for a Mac
    reqs = "--index-url https://download.pytorch.org/whl/cu124\ntorch==2.5.1+cu124\n"
    assert "CF010" in codes(tmp_path, {"requirements.txt": reqs}, "--driver", "none", "--os", "macos", "--arch", "aarch64")


@pytest.mark.parametrize("line", ["-e", "--index-url", "--extra-index-url ", "-f", "--trusted-host"])
def test_an_option_without_its_value_is_cf000(tmp_path, line):
    # pip 26: "error: --index-url option requires 1 argument", before it reads any other line
    assert codes(tmp_path, {"requirements.txt": f"{line}\ntorch==2.5.1\n"}) == ["CF000"]
    assert codes(tmp_path / "ok", {"requirements.txt": "--no-index\n--pre\n-e .\ntorch==2.5.1\n"}) == []


def test_a_file_or_folder_that_cannot_be_read_is_reported_and_the_others_checked(tmp_path, monkeypatch):
    """pre-commit and CI name many files: one without read permission is one error (exit 2), not
    a refusal of the whole command line (root reads anything, so the refusal is simulated)."""
    import cudafit.check.files as files_module

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "requirements.txt").write_text("torch==2.5.1\n")
    (tmp_path / "b-requirements.txt").write_text("torch==2.5.1+cu124\n")
    real_walk = os.walk

    def walk(top, onerror=None, **kwargs):
        if Path(top).name == "a":
            onerror(PermissionError(13, "Permission denied", str(top)))
            return iter(())
        return real_walk(top, onerror=onerror, **kwargs)

    def listdir(path):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(files_module.os, "walk", walk)
    monkeypatch.setattr(files_module.os, "listdir", listdir)
    result = check(tmp_path, {}, "a", "b-requirements.txt")
    assert result.exit_code == 2 and "CF001" in result.stdout
    assert "a: cannot read the folder: Permission denied" in result.stderr


def test_a_folder_without_dependency_files_passes_with_a_warning(tmp_path):
    result = check(tmp_path, {"notes.txt": "torch\n"}, ".")
    assert result.exit_code == 0 and "no dependency files found" in result.stderr and "0 files" in result.stdout
    assert "no dependency files" not in check(tmp_path / "b", {"requirements.txt": "numpy\n"}, ".").stderr


def test_a_broken_pyproject_read_for_settings_says_so(tmp_path):
    files = {"pyproject.toml": "[project\nname = 1\n", "requirements.txt": "numpy\n"}
    named = check(tmp_path, files, "requirements.txt")
    assert named.exit_code == 2 and "read for its [tool.cudafit] settings" in named.stderr
    walked = check(tmp_path, files, ".")  # checked itself: its own error, said once
    assert walked.exit_code == 2 and walked.stderr.count("not valid TOML") == 1 and "settings" not in walked.stderr


def test_a_cpu_torch_the_index_serves_can_share_an_environment_with_jax_on_the_gpu(tmp_path):
    # PyPI's torch 2.5 to 2.10 are CPU wheels on linux-aarch64: jax[cuda12] beside `torch>=2.5.1`
    # installs there (uv resolves it), as on x86_64 where those releases are CUDA 12 builds.
    assert "CF005" not in codes(tmp_path, {"requirements.txt": "jax[cuda12]==0.5.0\ntorch>=2.5.1\n"})
    # Only CUDA 13 torch reachable: the rule still speaks, on both Linux machines.
    found = findings(tmp_path / "13", {"requirements.txt": "jax[cuda12]==0.5.0\ntorch>=2.11\n"})
    assert ("requirements.txt", 1, 1, "CF005") in found


def test_the_projects_platforms_are_the_ones_judged(tmp_path):
    # DeepSpeed's requirements-triton.txt: triton 2.1.0 has Linux x86_64 wheels alone
    assert "CF015" in codes(tmp_path, {"requirements.txt": "triton==2.1.0\n"})
    linux = '[tool.cudafit]\nplatforms = ["linux-x86_64"]\n'
    assert codes(tmp_path / "linux", {"requirements.txt": "triton==2.1.0\n", "pyproject.toml": linux}) == []
    # a platform of the project's keeps its findings
    both = '[tool.cudafit]\nplatforms = ["linux-x86_64", "windows-x86_64"]\n'
    found = check(tmp_path / "both", {"requirements.txt": "triton==2.1.0\n", "pyproject.toml": both})
    assert found.exit_code == 1 and "CF015 on windows-x86_64:" in found.stdout, found.stdout


@pytest.mark.parametrize("value", ['["linux"]', "[]", '"linux-x86_64"'])
def test_platforms_the_setting_does_not_know_are_bad_input(tmp_path, value):
    result = check(tmp_path, {"requirements.txt": "torch\n", "pyproject.toml": f"[tool.cudafit]\nplatforms = {value}\n"})
    assert result.exit_code == 2 and "[tool.cudafit] platforms" in result.stderr, result.stderr


def test_a_release_built_against_numpy_1_beside_numpy_2(tmp_path):
    # tensorflow 2.10.1 asks numpy>=1.20 and pip takes NumPy 2: its import fails (numpy-abi.toml)
    found = check(tmp_path, {"requirements.txt": "tensorflow==2.10.1\n"}, "--output-format", "json")
    cf021 = [f for f in json.loads(found.stdout) if f["code"] == "CF021"]
    assert cf021 and cf021[0]["severity"] == "warning" and "importing it fails" in cf021[0]["message"]
    # a numpy that admits no 2.x keeps it
    assert "CF021" not in codes(tmp_path / "capped", {"requirements.txt": "tensorflow==2.10.1\nnumpy<2\n"})
    assert "CF021" not in codes(tmp_path / "one", {"requirements.txt": "tensorflow==2.10.1\nnumpy==1.26.4\n"})
    # torch asks for no numpy: only a numpy the file names brings NumPy 2
    assert "CF021" not in codes(tmp_path / "torch", {"requirements.txt": "torch==2.1.2\n"})
    assert "CF021" in codes(tmp_path / "torch-np", {"requirements.txt": "torch==2.1.2\nnumpy>=1.25\n"})
    # a release built against NumPy 2 is none of this
    assert "CF021" not in codes(tmp_path / "new", {"requirements.txt": "tensorflow==2.18.0\n"})
