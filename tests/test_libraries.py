"""The libraries built against torch (issue 13): xformers, flash-attn, vllm and torchao solved
with torch, the pairs that cannot work refused with their cause, and the commands that install
what was solved and nothing else."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudafit.cli import main
from cudafit.errors import DataError
from cudafit.loader import load

LINUX = ["--os", "linux", "--arch", "x86_64", "--python", "3.12"]
H100_580 = [*LINUX, "--driver", "580.65.06", "--gpu", "NVIDIA H100 80GB HBM3"]
RTX4090_550 = [*LINUX, "--driver", "550.54.15", "--gpu", "NVIDIA GeForce RTX 4090"]
T4_580 = [*LINUX, "--driver", "580.65.06", "--gpu", "Tesla T4"]


def resolve(*args):
    result = CliRunner().invoke(main, ["resolve", *args, "--json"], catch_exceptions=False)
    return result.exit_code, json.loads(result.stdout)


def chosen(data) -> dict[str, str]:
    return {p["name"]: p["requirement"] for p in data["packages"]}


# --- xformers -------------------------------------------------------------------------------


def test_xformers_comes_from_the_index_of_torchs_cuda_variant():
    # Every xformers wheel on PyPI links libcudart.so.12 (measured); its release workflow copies a
    # cu130 build to the PyTorch index (declared): a CUDA 13 torch takes that one.
    code, data = resolve("torch==2.11.0", "xformers", *H100_580)
    assert code == 0, data
    assert chosen(data)["torch"] == "torch==2.11.0+cu130"
    # one command: both from that index, torch pinned beside xformers so pip cannot swap it
    assert data["commands"]["pip"] == "pip install --index-url https://download.pytorch.org/whl/cu130 torch==2.11.0+cu130 xformers==0.0.35"
    # on a CUDA 12 driver, the PyPI wheel with a CUDA 12 build of torch
    code, data = resolve("torch==2.11.0", "xformers", *RTX4090_550)
    assert code == 0 and chosen(data)["torch"].startswith("torch==2.11.0+cu12")
    assert f"pip install xformers==0.0.35 {chosen(data)['torch']}" in data["commands"]["pip"]


def test_a_library_beside_a_torch_of_another_cuda_major_or_version_is_refused_with_that_cause():
    code, data = resolve("torch==2.10.0+cu130", "vllm==0.19.1", *H100_580)
    assert code == 1
    assert any("CUDA 13 and CUDA 12 (vllm 0.19.1+cu12)" in c for c in data["conflicts"]), data["conflicts"]
    # the cause named is the version, not a CUDA major some other build would have matched
    code, data = resolve("torch==2.11.0+cu130", "xformers==0.0.34", *H100_580)
    assert code == 1
    assert any("needs torch==2.10.0" in c for c in data["conflicts"]), data["conflicts"]


def test_xformers_needs_a_cuda_torch():
    code, data = resolve("torch", "xformers", *LINUX, "--driver", "none")
    assert code == 1
    assert any("without an NVIDIA GPU" in c for c in data["conflicts"])


# --- vllm -----------------------------------------------------------------------------------


def test_vllm_decides_torch_exactly_and_needs_cuda_13_from_0_20():
    code, data = resolve("vllm", *H100_580)
    assert code == 0
    assert chosen(data)["vllm"] == "vllm==0.34.0"
    assert chosen(data)["torch"].startswith("torch==2.14.0+cu13")  # 0.34.0 pins torch==2.14.0, though 2.14.1 exists


def test_vllm_on_a_cuda_12_driver_takes_the_cuda_12_9_wheel_of_its_github_release():
    # PyPI's vllm is CUDA 13 from 0.20; each release's CUDA 12.9 build is a GitHub release asset,
    # named as third parties name it, beside torch's cu129 build and torchvision from that index.
    code, data = resolve("vllm", *RTX4090_550)
    assert code == 0
    assert chosen(data)["vllm"] == (
        "vllm @ https://github.com/vllm-project/vllm/releases/download/v0.31.0/vllm-0.31.0+cu129-cp38-abi3-manylinux_2_28_x86_64.whl"
    )
    assert chosen(data)["torch"] == "torch==2.13.0+cu129" and chosen(data)["torchvision"] == "torchvision==0.28.0+cu129"
    # PyPI's wheel stays first where it runs, and 0.19.1 is PyPI's last CUDA 12 one
    code, data = resolve("vllm<0.20", *RTX4090_550)
    assert code == 0 and chosen(data)["vllm"] == "vllm==0.19.1" and chosen(data)["torch"].startswith("torch==2.10.0+cu12")


def test_vllm_refuses_a_gpu_below_its_floor_and_windows():
    code, data = resolve("vllm>=0.20", *[*LINUX, "--driver", "580.65.06", "--gpu", "Tesla V100-SXM2-16GB"])
    assert code == 1
    assert any("compute capability 7.5 and newer" in c for c in data["conflicts"]), data["conflicts"]
    code, data = resolve("vllm", "--os", "windows", "--python", "3.12", "--driver", "581.57", "--gpu", "NVIDIA GeForce RTX 4090")
    assert code == 1 and any("no vllm wheels for windows-x86_64" in c for c in data["conflicts"])


def test_vllm_with_a_torch_it_does_not_pin_is_refused():
    code, data = resolve("vllm==0.33.0", "torch==2.14.1", *H100_580)
    assert code == 1
    assert any("torch==2.14.0" in c for c in data["conflicts"]), data["conflicts"]


# --- flash-attn -----------------------------------------------------------------------------


def test_flash_attn_first_takes_a_prebuilt_release_asset_named_by_its_fields():
    code, data = resolve("flash-attn", *H100_580)
    assert code == 0
    req = chosen(data)["flash-attn"]
    assert req == (
        "flash-attn @ https://github.com/Dao-AILab/flash-attention/releases/download/v2.8.3.post1/"
        "flash_attn-2.8.3.post1+cu12torch2.8cxx11abiTRUE-cp312-cp312-linux_x86_64.whl"
    )
    assert chosen(data)["torch"].startswith("torch==2.8.0+cu12")


def test_flash_attn_after_the_newest_torch_builds_from_source_without_isolation():
    code, data = resolve("torch", "flash-attn", *H100_580)
    assert code == 0
    torch = chosen(data)["torch"]
    # the setup.py of every release compiles with C++17, which torch 2.14's headers refuse (reported)
    assert torch.startswith("torch==2.13."), torch
    assert f"pip install --no-build-isolation flash-attn==2.8.3.post2 {torch}" in data["commands"]["pip"]
    assert any("compiles from source" in w and "nvcc" in w for w in data["warnings"])
    # the pip format says, before the build, which nvcc it needs and how to select one
    text = CliRunner().invoke(main, ["resolve", "torch", "flash-attn", *H100_580, "--format", "pip"]).stdout.splitlines()
    assert text[1] == (
        "# flash-attn compiles against torch here: first put a CUDA 13 nvcc (13.0 or newer) on PATH, "
        "e.g. cudafit env-script --toolkit 13 -o env.sh && . ./env.sh"
    )
    assert text[2].startswith("pip install --no-build-isolation flash-attn==")


def test_flash_attn_refuses_turing_with_its_stated_floor():
    code, data = resolve("torch", "flash-attn", *T4_580)
    assert code == 1
    assert any("compute capability 8.0 and newer" in c and "Tesla T4" in c for c in data["conflicts"])


def test_a_source_build_cannot_be_written_into_a_requirements_file():
    result = CliRunner().invoke(main, ["resolve", "torch", "flash-attn", *H100_580, "--format", "requirements"])
    assert result.exit_code == 2
    assert "--no-build-isolation" in result.stderr and "Traceback" not in result.output


def test_uv_project_gives_the_source_build_the_running_torch():
    result = CliRunner().invoke(main, ["resolve", "torch", "flash-attn", *H100_580, "--format", "uv-project"])
    assert result.exit_code == 0, result.output
    assert '[tool.uv.extra-build-dependencies]\nflash-attn = [{requirement = "torch", match-runtime = true}]' in result.stdout


# --- torchao --------------------------------------------------------------------------------


def test_torchao_on_a_cuda_12_driver_comes_from_torchs_index_without_dependencies():
    code, data = resolve("torch", "torchao", *RTX4090_550)
    assert code == 0
    assert chosen(data)["torchao"] == "torchao==0.18.0+cu126"
    assert chosen(data)["torch"].endswith("+cu126")
    assert "pip install --no-deps --index-url https://download.pytorch.org/whl/cu126 torchao==0.18.0+cu126" in data["commands"]["pip"]


def test_torchao_kernels_that_miss_the_gpu_are_a_warning_and_macos_gets_the_python_wheel():
    code, data = resolve("torch", "torchao", *T4_580)
    assert code == 0 and chosen(data)["torchao"] == "torchao==0.18.0"
    assert any("no compiled kernels for this GPU" in w for w in data["warnings"])
    code, data = resolve("torch", "torchao", "--os", "macos", "--arch", "arm64", "--python", "3.12", "--macos", "15.0")
    assert code == 0 and chosen(data)["torchao"] == "torchao==0.18.0"


def test_torchao_version_gate_decides_torch():
    code, data = resolve("torchao==0.16.0", "torch", *H100_580)
    assert code == 0
    assert chosen(data)["torch"].startswith("torch==2.10.0+")


# --- data errors ----------------------------------------------------------------------------


def _copy(tmp_path: Path) -> Path:
    import shutil

    from cudafit.loader import data_dir

    target = tmp_path / "matrices"
    shutil.copytree(data_dir(), target)
    return target


@pytest.mark.parametrize(
    ("file", "old", "new", "message"),
    [
        ("flash-attn/flash-attn-2.8.toml", 'asset = "https://github.com', 'asset = "http://example.com', "flash-attn-2.8.toml: [[release]] #1 (2.8.0.post2): field 'asset'"),
        ("torchao/torchao-0.16.toml", 'pins = { torch = "==2.10.0" }', "pins = {}", "field 'pins': name the torch this build goes with"),
        ("vllm/vllm-0.33.toml", 'gpu_min = { cc = "7.5"', 'gpu_min = { cc = "seven"', "field 'gpu_min'"),
        ("flash-attn/flash-attn-2.8.toml", 'pins = { torch = "==2.8.*" }', 'pins = { torch = ">=2.8" }', "a release asset is built for one torch minor"),
    ],
)
def test_broken_library_data_names_file_entry_and_field(tmp_path, file, old, new, message):
    root = _copy(tmp_path)
    path = root / file
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(DataError) as err:
        load(root, use_cache=False)
    assert message in str(err.value)


# --- check ----------------------------------------------------------------------------------


def _check(tmp_path: Path, text: str, *target: str):
    (tmp_path / "requirements.txt").write_text(text)
    return CliRunner().invoke(main, ["check", str(tmp_path / "requirements.txt"), *target])


def test_check_reads_a_plain_torch_pin_as_pypis_build_beside_a_library(tmp_path):
    result = _check(tmp_path, "torch==2.11.0\nxformers==0.0.35\n")
    assert result.exit_code == 1 and "CF005" in result.output and "from PyPI" in result.output
    # naming a CUDA 12 index in the file makes it fine
    result = _check(tmp_path, "--index-url https://download.pytorch.org/whl/cu128\ntorch==2.11.0\nxformers==0.0.35\n")
    assert result.exit_code == 0, result.output


def test_check_flags_vllm_beside_a_torch_it_does_not_pin(tmp_path):
    result = _check(tmp_path, "torch==2.10.0\nvllm==0.33.0\n")
    assert result.exit_code == 1 and "needs torch==2.14.0" in result.output
    assert _check(tmp_path, "torch==2.14.0\nvllm==0.33.0\n").exit_code == 0


# --- doctor ---------------------------------------------------------------------------------


H100_DOCTOR = ["--os", "linux", "--arch", "x86_64", "--driver", "580.65.06", "--gpu", "NVIDIA H100 80GB HBM3"]  # doctor reads the Python from the environment


def _doctor(env, *machine):
    result = CliRunner().invoke(main, ["doctor", "--env", str(env.prefix), *machine, "--json"], catch_exceptions=False)
    assert "Traceback" not in result.output
    return json.loads(result.stdout)


@pytest.fixture
def fake_env(tmp_path, monkeypatch):
    from doctor_env import FakeEnv

    from cudafit import detection as detect
    from cudafit import toolkits

    for var in ("CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES"):
        monkeypatch.delenv(var, raising=False)
    (tmp_path / "usr-local").mkdir()
    monkeypatch.setattr(toolkits, "USR_LOCAL", tmp_path / "usr-local")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setattr("cudafit.doctor.libraries.DEFAULT_DIRS", ())
    real = detect.run_command
    monkeypatch.setattr(detect, "run_command", lambda cmd, timeout: detect.RunResult(0, "") if cmd[0].endswith("ldconfig") else real(cmd, timeout))
    return FakeEnv(tmp_path / "venv")


def _xformers(env, version: str, torch: str, cuda: int, requires: str):
    from doctor_env import elf

    env.dist("xformers", version, (requires,))
    env.file("xformers/cpp_lib.json", json.dumps({"version": {"cuda": cuda, "hip": None, "torch": torch, "python": "3.10.11"}}))
    env.file("xformers/_C.so", elf(["libc10_cuda.so", f"libcudart.so.{cuda // 100}", "libtorch_cuda.so"]))


def test_doctor_reads_xformers_build_record_and_flags_a_cuda_13_torch(fake_env):
    fake_env.torch("2.11.0", "13.0")
    _xformers(fake_env, "0.0.35", "2.10.0+cu128", 1208, "torch>=2.10")
    data = _doctor(fake_env, *H100_DOCTOR)
    assert data["environment"]["libraries"][0]["built_for"] == "2.10.0+cu128"
    found = [f for f in data["findings"] if f["code"] == "DR033"]
    assert found and "links CUDA 12, but torch 2.11.0 brings CUDA 13" in found[0]["message"]
    # the fix removes the wrong build (pip would keep an installed 0.0.35) and installs the
    # resolver's set: xformers from the index of torch's CUDA 13
    commands = found[0]["commands"]
    assert commands[0].endswith("-m pip uninstall -y xformers"), commands
    assert any("whl/cu130" in c and "xformers==0.0.35" in c for c in commands[1:]), commands


def test_doctor_flags_torchao_beside_a_torch_its_gate_refuses(fake_env):
    from doctor_env import elf

    fake_env.torch("2.11.0+cu126", "12.6")
    fake_env.dist("torchao", "0.16.0")
    fake_env.file("torchao/_C_cutlass_90a.abi3.so", elf(["libcudart.so.12", "libtorch_cuda.so"]))
    data = _doctor(fake_env, *H100_DOCTOR)
    found = [f for f in data["findings"] if f["code"] == "DR033"]
    assert found and found[0]["severity"] == "warning" and "goes with torch==2.10.0" in found[0]["message"]


def test_doctor_is_quiet_when_the_library_fits(fake_env):
    fake_env.torch("2.10.0+cu128", "12.8")
    _xformers(fake_env, "0.0.34", "2.10.0+cu128", 1208, "torch==2.10.0")
    data = _doctor(fake_env, *H100_DOCTOR)
    assert not [f for f in data["findings"] if f["code"] == "DR033"], data["findings"]


# --- found by a newcomer's test ---------------------------------------------------------------


def test_check_reads_a_library_on_a_pytorch_index_as_any_build_of_its_version(tmp_path):
    # `--index-url .../cu132` made vllm==0.33.0 read as a +cu132 build, which matched nothing, so
    # the pair passed. vllm is not on the PyTorch index at all; with PyPI too, vllm 0.33.0 needs
    # torch==2.14.0.
    result = _check(tmp_path, "--index-url https://download.pytorch.org/whl/cu132\ntorch==2.15.0+cu132\nvllm==0.33.0\n")
    assert result.exit_code == 1 and "CF002" in result.output and "vllm 0.33.0 has no build on the index" in result.output
    text = "--index-url https://download.pytorch.org/whl/cu132\n--extra-index-url https://pypi.org/simple\ntorch==2.15.0+cu132\nvllm==0.33.0\n"
    result = _check(tmp_path, text)
    assert result.exit_code == 1 and "needs torch==2.14.0" in result.output, result.output


def test_the_refusal_names_the_torch_requirement_not_a_cuda_major_another_build_shares():
    code, data = resolve("torch==2.15.0", "flash-attn", *H100_580)
    assert code == 1
    assert any("needs torch>=2.2,<2.14" in c for c in data["conflicts"]), data["conflicts"]


def test_no_cpu_hint_when_a_library_has_no_cpu_build():
    code, data = resolve("torch==2.4.0", "vllm", *H100_580)
    assert code == 1
    assert not any("--cpu" in c for c in data["conflicts"]), data["conflicts"]


# --- the data against the wheels' own METADATA ----------------------------------------------

WHEELS = Path(__file__).parent / "fixtures" / "wheels"  # METADATA headers of real PyPI wheels (read 2026-12-01)


def _requires(path: Path) -> dict[str, str]:
    from packaging.metadata import parse_email
    from packaging.requirements import Requirement

    raw, _ = parse_email(path.read_bytes())
    out = {}
    for text in raw.get("requires_dist", []):
        req = Requirement(text)
        if req.marker is None:  # extras' requirements are not installed by default
            out[req.name] = str(req.specifier)
    return out


@pytest.mark.parametrize("fixture", sorted(p.name for p in WHEELS.glob("*.METADATA")))
def test_library_pins_are_the_wheels_requires_dist(fixture, matrices):
    from packaging.utils import parse_wheel_filename

    from cudafit.frameworks import BY_FAMILY

    name, version, _build, _tags = parse_wheel_filename(fixture.removesuffix(".METADATA"))
    release = next(r for r in BY_FAMILY[name].releases(matrices) if r.version == version)
    build = next(b for b in release.builds if "linux-x86_64" in b.platforms and not b.index_url and not b.route)
    declared = _requires(WHEELS / fixture)
    if name == "torchao":
        # torchao's wheels declare no torch: its pin is the version gate of its __init__.py
        assert "torch" not in declared and build.pins["torch"] == "==2.10.0"
        assert build.evidence["pins"].source == ("wheel-torchao",)
        return
    assert build.pins == {dist: declared[dist] for dist in build.pins}
    assert {d for d in declared if d in ("torch", "torchvision", "torchaudio")} <= set(build.pins)


# --- found by a second newcomer's test --------------------------------------------------------


def test_every_library_line_pins_the_torch_it_is_built_against():
    result = CliRunner().invoke(main, ["resolve", "torch", "vllm", "xformers", *H100_580, "--format", "pip"])
    lines = result.stdout.splitlines()
    torch = next(w for w in lines[0].split() if w.startswith("torch=="))
    for line in lines[1:]:
        assert torch in line.split(), line


def test_flash_attn_source_build_on_aarch64_says_there_are_no_wheels_there_and_takes_the_highest_cuda():
    code, data = resolve("flash-attn", "--os", "linux", "--arch", "aarch64", "--python", "3.12", "--driver", "580.65.06", "--gpu", "NVIDIA GH200 480GB")
    assert code == 0 and chosen(data)["torch"].endswith("+cu132")
    assert any("no prebuilt wheels for linux-aarch64" in w for w in data["warnings"]), data["warnings"]


def test_check_names_the_torch_a_library_requires_before_a_cuda_major(tmp_path):
    result = _check(tmp_path, "torch==2.11.0\nxformers==0.0.34\n")
    assert result.exit_code == 1 and "needs torch==2.10.0" in result.output


def test_doctor_reads_damaged_records_as_unknown_not_as_another_build(fake_env):
    fake_env.torch("2.11.0", "13.0")
    fake_env.file("torch/version.py", "")  # emptied
    _xformers(fake_env, "0.0.35", "2.10.0+cu128", 1208, "torch>=2.10")
    data = _doctor(fake_env, *H100_DOCTOR)
    assert data["environment"]["frameworks"][0]["kind"] == "unknown"
    assert not [f for f in data["findings"] if f["code"] in ("DR010", "DR033")], data["findings"]
    assert any("names no __version__" in f["message"] for f in data["findings"] if f["code"] == "DR090")


@pytest.mark.parametrize("record", ["[]", '"text"', "", '{"version": null}', '{"version": {"cuda": "abc", "torch": 5}}', '{"version": {"cuda": 99999999999, "torch": "x"}}'])
def test_doctor_says_when_xformers_build_record_is_not_one(fake_env, record):
    fake_env.torch("2.10.0+cu128", "12.8")
    _xformers(fake_env, "0.0.34", "2.10.0+cu128", 1208, "torch==2.10.0")
    (fake_env.site / "xformers" / "cpp_lib.json").write_text(record)
    data = _doctor(fake_env, *H100_DOCTOR)
    assert any("cpp_lib.json" in f["message"] for f in data["findings"] if f["code"] == "DR090"), data["findings"]
    assert data["environment"]["libraries"][0]["built_for"] is None


def test_doctor_fix_keeps_the_installed_torch_and_changes_the_library(fake_env):
    fake_env.torch("2.11.0", "13.0")
    fake_env.dist("torchao", "0.16.0")  # its gate pairs it with torch 2.10.0
    data = _doctor(fake_env, *H100_DOCTOR)
    found = next(f for f in data["findings"] if f["code"] == "DR033")
    assert "may fail to import or run" in found["message"]  # no compiled code here: no kernels to speak of
    assert not any("torch==2.10" in c for c in found["commands"]), found["commands"]
    # torchao 0.18 goes with torch >= 2.11 (its gate); it installs with --no-deps, so torch stays
    assert any("--no-deps torchao==0.18.0" in c for c in found["commands"]), found["commands"]


# --- bitsandbytes -----------------------------------------------------------------------------


def test_bitsandbytes_goes_with_torchs_cuda_major_and_with_a_cpu_torch():
    code, data = resolve("torch", "bitsandbytes", *H100_580)
    assert code == 0 and chosen(data)["bitsandbytes"] == "bitsandbytes==0.50.2"
    assert data["commands"]["pip"].endswith(f"pip install bitsandbytes==0.50.2 {chosen(data)['torch']}")
    code, data = resolve("torch", "bitsandbytes", *LINUX, "--driver", "none")
    assert code == 0 and chosen(data)["torch"].endswith("+cpu") and chosen(data)["bitsandbytes"] == "bitsandbytes==0.50.2"


def test_bitsandbytes_refuses_a_torch_older_than_its_requirement():
    # 0.50.x carries CUDA 11, 12 and 13 libraries, so torch 2.3.1's cu121 fits by CUDA, but its
    # Requires-Dist asks torch >= 2.4 (an unpinned bitsandbytes now falls back to 0.49.2, torch >= 2.3)
    code, data = resolve("torch==2.3.1", "bitsandbytes>=0.50", *RTX4090_550)
    assert code == 1
    assert any("bitsandbytes 0.50.2+cu12 needs torch<3,>=2.4" in c for c in data["conflicts"]), data["conflicts"]


# --- install ----------------------------------------------------------------------------------


def test_install_refuses_a_source_build_without_a_toolkit_of_torchs_major_before_running_anything(tmp_path, monkeypatch):
    import subprocess
    import sys

    from cudafit import installer as install
    from cudafit.toolkits import ToolkitInstall

    calls = []
    monkeypatch.setattr(install.subprocess, "call", lambda argv: calls.append(argv) or 0)
    cuda12 = [ToolkitInstall("12.4.131", tmp_path / "cuda-12.4", ("PATH",), True)]
    monkeypatch.setattr("cudafit.toolkits.find_toolkits", lambda environ, **kw: cuda12)
    env = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    result = CliRunner().invoke(main, ["install", "torch", "flash-attn", "--env", str(env), *H100_DOCTOR])
    assert result.exit_code == 1, result.output
    assert "needs a CUDA 13 nvcc" in result.stderr and "CUDA 12.4.131" in result.stderr and "env-script --toolkit 13" in result.stderr
    assert calls == []  # nothing ran
    # with a CUDA 13 toolkit where the build looks, the install runs
    cuda13 = [ToolkitInstall("13.0.88", tmp_path / "cuda-13.0", ("PATH",), True)]
    monkeypatch.setattr("cudafit.toolkits.find_toolkits", lambda environ, **kw: cuda13)
    CliRunner().invoke(main, ["install", "torch", "flash-attn", "--env", str(env), *H100_DOCTOR])
    assert any("--no-build-isolation" in argv for argv in calls), calls


# --- found by a third newcomer's test ---------------------------------------------------------


def test_a_library_named_first_takes_its_highest_cuda():
    code, data = resolve("bitsandbytes", *RTX4090_550)
    assert code == 0 and chosen(data)["torch"].startswith("torch==2.14.1+cu12"), chosen(data)
    code, data = resolve("bitsandbytes", "vllm", *H100_580)
    assert code == 0 and chosen(data)["vllm"] == "vllm==0.34.0"


def test_check_flags_a_library_no_named_index_serves_and_a_github_only_build(tmp_path):
    result = _check(tmp_path, "--index-url https://download.pytorch.org/whl/cu129\ntorch==2.13.0+cu129\nvllm==0.31.0\n")
    assert result.exit_code == 1 and "CF002" in result.output and "vllm 0.31.0 has no build on the index" in result.output
    # `vllm==0.31.0` from PyPI is its CUDA 13 wheel: the CUDA 12.9 one is a GitHub asset, reached by URL only
    result = _check(tmp_path, "vllm==0.31.0\n", "--os", "linux", "--driver", "550.54.15", "--gpu", "Tesla T4")
    assert result.exit_code == 1 and "CF010" in result.output and "< 580" in result.output


def test_vllm_says_when_its_torchaudio_pin_comes_from_pypi_built_for_another_cuda():
    code, data = resolve("vllm", *RTX4090_550)
    assert any("pins torchaudio==2.11.0, which pip takes from PyPI, built there for CUDA 13" in w for w in data["warnings"]), data["warnings"]


def test_install_advice_when_no_toolkit_of_the_major_is_installed_and_dry_run_says_it(tmp_path, monkeypatch):
    import subprocess
    import sys

    from cudafit.toolkits import ToolkitInstall

    cuda13 = [ToolkitInstall("13.0.88", tmp_path / "cuda-13.0", ("PATH",), True)]
    monkeypatch.setattr("cudafit.toolkits.find_toolkits", lambda environ, **kw: cuda13)
    env = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    machine = ["--os", "linux", "--arch", "x86_64", "--driver", "550.54.15", "--gpu", "NVIDIA H100 80GB HBM3"]
    result = CliRunner().invoke(main, ["install", "torch", "flash-attn", "--env", str(env), *machine, "--dry-run"])
    assert result.exit_code == 1 and "the install would stop here" in result.stderr
    assert "no CUDA 12 toolkit is installed here" in result.stderr


# --- found by a code review -------------------------------------------------------------------


def test_torchs_command_comes_before_the_library_built_against_it():
    # `resolve xformers` names xformers first; on a Pascal card its PyPI line (the CUDA 12.6 build,
    # linked against torch+cu126) pins torch==...+cu126, which only torch's own cu126 command can
    # install: that command must come first.
    pascal = ["--os", "linux", "--arch", "x86_64", "--python", "3.12", "--driver", "580.65.06", "--gpu", "NVIDIA GeForce GTX 1080"]
    result = CliRunner().invoke(main, ["resolve", "xformers", *pascal, "--format", "pip"])
    lines = result.stdout.splitlines()
    assert lines[0].startswith("pip install --index-url https://download.pytorch.org/whl/cu126 torch=="), lines
    assert lines[1].startswith("pip install xformers==") and "+cu126" in lines[1]


def test_xformers_pairs_only_with_the_torch_of_its_variant():
    # its extension is linked against one torch build: a cu130 xformers beside a cu132 torch loads
    # none of its kernels, so the set keeps one variant (here the cu130 index's torch and xformers)
    result = CliRunner().invoke(main, ["resolve", "torch", "xformers", *H100_580, "--json"])
    packages = {p["name"]: p for p in json.loads(result.stdout)["packages"]}
    assert packages["torch"]["variant"] == packages["xformers"]["variant"] == "cu130"


def test_check_reads_reachability_per_pin(tmp_path):
    # torch from an explicit cu130 index, xformers from PyPI (its CUDA 12 wheel): uv installs that
    # pair, which cannot load; xformers' cu130 index build is not what this file asks for.
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\nversion = "0"\ndependencies = ["torch==2.9.0", "xformers==0.0.33.post1"]\n\n'
        '[[tool.uv.index]]\nname = "pytorch-cu130"\nurl = "https://download.pytorch.org/whl/cu130"\nexplicit = true\n\n'
        '[tool.uv.sources]\ntorch = { index = "pytorch-cu130" }\n'
    )
    result = CliRunner().invoke(main, ["check", str(tmp_path / "pyproject.toml")])
    assert result.exit_code == 1 and "CF005" in result.output, result.output


def test_check_drops_a_library_it_reported_as_unreachable(tmp_path):
    result = _check(tmp_path, "--index-url https://download.pytorch.org/whl/cu132\ntorch==2.15.0+cu132\nvllm==0.33.0\n")
    assert "CF002" in result.output and "CF005" not in result.output and "CF010" not in result.output


def test_bitsandbytes_cpu_library_is_not_chosen_beside_a_cuda_torch():
    code, data = resolve("torch", "bitsandbytes", *H100_580)
    assert code == 0 and [c for c in data["packages"] if c["name"] == "bitsandbytes"][0]["variant"].startswith("cu")


GTX1080_550 = ["--os", "linux", "--arch", "x86_64", "--python", "3.12", "--driver", "550.54.14", "--gpu", "NVIDIA GeForce GTX 1080"]


def test_bitsandbytes_pairs_each_library_with_the_torch_cuda_that_loads_it():
    """bitsandbytes 0.50 loads the library of torch's CUDA version: cuda121-126 carry sm_60 (read
    from their fatbinaries), cuda128 does not. A Pascal GPU gets the newest torch whose CUDA loads a
    library with its code (cu126), not a CUDA 11 one; a build for 12.8 stands for 12.8 on only."""
    code, data = resolve("torch", "bitsandbytes", *GTX1080_550)
    assert code == 0 and chosen(data)["torch"] == "torch==2.14.1+cu126", chosen(data)
    # an RTX 4090 has code in both: beside torch 2.14.1+cu126 the cu128 library is never loaded
    result = CliRunner().invoke(main, ["resolve", "torch==2.14.1+cu126", "bitsandbytes", *RTX4090_550, "--why", "bitsandbytes==0.50.2+cu128"])
    assert "loads its library for torch's CUDA version and stands for CUDA <13,>=12.8 only, not CUDA 12.6" in result.stdout, result.stdout


RTX3090_550 = [*LINUX, "--driver", "550.54.14", "--gpu", "NVIDIA GeForce RTX 3090"]


@pytest.mark.parametrize(
    ("torch", "bnb", "variant"),
    [
        # bitsandbytes before 0.50 loads libbitsandbytes_cuda<torch.version.cuda> and no other
        # (cextension.py / cuda_setup/main.py in the wheels): each library pairs with its own CUDA
        ("torch==2.3.1+cu118", "bitsandbytes==0.43.3", "cu118"),
        ("torch==2.3.1+cu121", "bitsandbytes==0.43.3", "cu121"),
        ("torch==2.5.1+cu124", "bitsandbytes==0.43.3", "cu124"),
        # 0.43.0's wheels carry cuda117-123, no cuda124: nothing loads beside a CUDA 12.4 torch
        ("torch==2.5.1+cu124", "bitsandbytes==0.43.0", None),
    ],
)
def test_bitsandbytes_before_050_pairs_only_with_the_torch_cuda_of_a_library_it_carries(torch, bnb, variant):
    code, data = resolve(torch, bnb, *RTX3090_550)
    if variant is None:
        assert code != 0 and any("library for CUDA 12.0 loads beside a torch of CUDA 12.0 only, not CUDA 12.4" in c for c in data["conflicts"]), data
        return
    assert code == 0, data
    packages = {p["name"]: p for p in data["packages"]}
    assert packages["bitsandbytes"]["requirement"] == bnb and packages["bitsandbytes"]["variant"] == variant


def test_bitsandbytes_named_first_still_lets_torch_pick_the_cuda_version():
    """Its per-version libraries rank alike: named before torch, it must not pull torch back to
    the CUDA of its first-listed library (a second read found torch 2.5.1+cu121 here)."""
    first = resolve("bitsandbytes<0.47", "torch", *RTX4090_550)
    second = resolve("torch", "bitsandbytes<0.47", *RTX4090_550)
    assert first[0] == second[0] == 0
    assert chosen(first[1]) == chosen(second[1]) and chosen(first[1])["torch"].startswith("torch==2.14.1+cu126"), chosen(first[1])


def test_a_torchao_release_whose_kernels_never_load_is_passed_over():
    # 0.14.0's load gate admits no torch release (matrices/torchao/torchao-0.14.toml): for torch 2.8
    # the release built for it, 0.13.0, whose kernels load, comes first
    from click.testing import CliRunner

    from cudafit.cli import main

    args = ["resolve", "torch==2.8.0", "torchao", "--gpu", "NVIDIA H100 80GB HBM3", "--driver", "575.57.08", "--os", "linux", "--arch", "x86_64", "--python", "3.12"]
    out = CliRunner().invoke(main, args).stdout
    assert "chosen: torchao==0.13.0" in out
    pinned = CliRunner().invoke(main, [*args[:2], "torchao==0.14.0", *args[3:]])
    assert "compiled kernels never load" in pinned.stdout + pinned.stderr
