"""`resolve --inside IMAGE` (issue 29): library builds that fit the torch an NGC image carries,
installed beside it. The image's torch is NVIDIA's build of a pre-release that the libraries'
exact torch pins do not admit; uv, with the image's torch family as overrides, installs them and
keeps it: the oracle test below runs the emitted steps against a stand-in image.

The emitted uv line carries --break-system-packages: NGC images from 25.01 (Ubuntu 24.04, Python
3.12) keep the PEP 668 EXTERNALLY-MANAGED marker and set PIP_BREAK_SYSTEM_PACKAGES=1, which pip
reads and uv does not. Sources: NVIDIA/bionemo-framework's Dockerfile at 915dd66c (search-index id
28175609883), FROM nvcr.io/nvidia/pytorch:25.06-py3, sets UV_BREAK_SYSTEM_PACKAGES "since the
pytorch base image has made the decision not to use a virtual environment and UV does not respect
the PIP_BREAK_SYSTEM_PACKAGES environment variable set in the base dockerfile", while its pip lines
need no flag; a runbook on nvcr.io/nvidia/pytorch:26.05-py3 (id 55589472064) sets it for `uv pip
install --system` (PEP-668); ai-dynamo/dynamo pull request 2569 tests `uv pip install --system
--break-system-packages` in the NGC container. No source here was run in an image by this project."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from dockerfile_parse import DockerfileParser
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cudafit.cli import main
from cudafit.containers import image
from cudafit.containers.inside import resolve_inside, torch_builds
from cudafit.errors import InputError
from cudafit.loader import load

A100 = ["--gpu", "NVIDIA A100-SXM4-80GB", "--arch", "x86_64"]
NGC_2505 = "nvcr.io/nvidia/pytorch:25.05-py3"  # torch 2.8.0a0+5228986c39, CUDA 12.9 (matrices/ngc-containers.toml)
DESCRIBED = "torch=2.8.0a0+5228986c39.nv25.5,cuda=12.9,python=3.12"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["resolve", *args])
    return result.exit_code, result.stdout, result.stderr


def test_the_pin_a_library_wheel_carries_does_not_admit_the_images_torch():
    # the fact the answer rests on (PEP 440): a pre-release meets neither an exact pin nor a floor of its release
    ngc = Version("2.8.0a0+5228986c39.nv25.5")
    assert not SpecifierSet("==2.8.0").contains(ngc, prereleases=True)
    assert not SpecifierSet(">=2.8").contains(ngc, prereleases=True)
    assert SpecifierSet("==2.8.0a0").contains(ngc)  # a public pin matches any local label (the overrides need no label)


@pytest.mark.parametrize(
    "given, torch, cuda, python",
    [
        (NGC_2505, "2.8.0a0+5228986c39", "12.9", None),
        ("nvidia/pytorch:25.12-py3", "2.10.0a0+b4e4ee81d3", "13.1.0", "3.12"),
        (DESCRIBED, "2.8.0a0+5228986c39.nv25.5", "12.9", "3.12"),
    ],
)
def test_an_image_is_read_from_the_data_or_its_description(given, torch, cuda, python):
    try:
        found = image.read(given, load(), "3.12")
    except InputError:
        pytest.fail(f"{given} was not read")
    assert (str(found.torch), str(found.cuda), found.python) == (torch, cuda, python or found.python)
    assert found.torch_release == Version(Version(torch).base_version)


@pytest.mark.parametrize(
    "given, said",
    [
        ("ubuntu:22.04", "expected an NGC PyTorch image"),
        ("nvcr.io/nvidia/pytorch:19.01-py3", "not an NGC PyTorch release cudafit's data knows"),
        ("torch=2.8.0a0,cuda=12.9", "needs python= too"),
        ("torch=2.8.0a0,cuda=banana,python=3.12", "cuda=banana: not a version"),
        ("torch=2.8.0a0,gpu=h100,cuda=12.9,python=3.12", "'gpu=h100': expected torch=VALUE"),
        ("torch=2.8,cuda=12.9,python=3.12,python=3.11", "python given twice"),
    ],
)
def test_an_image_it_cannot_read_is_refused_with_the_reason(given, said):
    code, out, err = run("--inside", given, "xformers", "--python", "3.12")
    assert code != 0 and said in err and "Traceback" not in err, err


def test_a_release_whose_python_the_data_lacks_takes_the_one_given():
    data = load()
    record = next(c for c in data.ngc_containers if c.framework == "pytorch" and c.tag == "25.05")._replace(python=None)
    lacking = data._replace(ngc_containers=(record,))
    with pytest.raises(InputError, match="lacks its Python; give it with --python"):
        image.read(NGC_2505, lacking)
    given = image.read(NGC_2505, lacking, "3.11")
    assert given.python == "3.11" and dict(given.grades)["python"] == "given"


def test_a_torch_the_data_holds_only_as_a_line_is_not_taken_for_a_build():
    data = load()
    record = next(c for c in data.ngc_containers if c.framework == "pytorch" and c.tag == "25.05")
    vague = data._replace(ngc_containers=(record._replace(torch=record.torch._replace(value="2.8")),))
    with pytest.raises(InputError, match="holds only '2.8' for its torch"):
        image.read(NGC_2505, vague, "3.12")


@pytest.mark.parametrize(
    "release, cuda, tags",
    [
        ("2.8.0", "12.9", ["cu129", "cu128", "cu126"]),
        ("2.8.0", "12.9.1", ["cu129", "cu128", "cu126"]),
        ("2.8.0", "12.7", ["cu126", "cu128", "cu129"]),
        ("2.8.0", "12.1", ["cu126", "cu128", "cu129"]),
        ("2.8.0", "13.0", []),
        ("2.10.0", "13.1", ["cu130"]),
        ("2.13.0", "13.3", ["cu132", "cu130"]),
    ],
)
def test_the_torch_builds_that_may_stand_for_the_images_are_of_its_cuda_major(release, cuda, tags):
    # the image's minor, then those below it newest first, then those above it oldest first; never another major
    assert torch_builds(Version(release), Version(cuda), load()) == tags


def test_a_stand_in_that_fits_no_set_gives_way_to_the_next():
    # 26.06 carries CUDA 13.3: torch 2.13.0+cu132 comes first, but xformers has no cu132 build, while
    # 26.01 (13.1) and 26.03 (13.2) were matched to cu130 and fit: the CUDA minor no longer decides it
    code, out, _err = run("--inside", "nvcr.io/nvidia/pytorch:26.06-py3", "xformers", *A100, "--driver", "610.43.02")
    assert code == 0, out
    assert "chosen: xformers==0.0.35  (CUDA 13.0; fits torch 2.13.0+cu130)" in out
    assert "standing for the image's torch (its own build, against its CUDA 13.3.0); tried before it, fitting no set: torch 2.13.0+cu132" in out
    doc = json.loads(run("--inside", "nvcr.io/nvidia/pytorch:26.06-py3", "xformers", *A100, "--driver", "610.43.02", "--json")[1])
    assert doc["inside"]["matched_build"] == "torch==2.13.0+cu130"
    assert doc["inside"]["stand_ins_tried"] == ["torch==2.13.0+cu132", "torch==2.13.0+cu130"]
    # the stand-in's CUDA minor is not the image's: what the data says of xformers' loader is said
    assert "xformers 0.0.35+cu130: cudafit's data says it loads its compiled code for torch's CUDA version and stands for CUDA ==13.0.* only" in out
    for tag in ("26.01", "26.03"):
        doc = json.loads(run("--inside", f"nvcr.io/nvidia/pytorch:{tag}-py3", "xformers", *A100, "--json")[1])
        assert doc["ok"] and doc["inside"]["matched_build"].endswith("+cu130"), tag


def test_when_no_stand_in_fits_each_tried_is_named_and_none_is_matched():
    code, out, _err = run("--inside", "nvcr.io/nvidia/pytorch:25.06-py3", "vllm")
    assert code == 1
    assert "tried in turn for the image's torch (its own build, against its CUDA 12.9.1): torch 2.8.0+cu129, torch 2.8.0+cu128, torch 2.8.0+cu126; none fits" in out
    doc = json.loads(run("--inside", "nvcr.io/nvidia/pytorch:25.06-py3", "vllm", "--json")[1])
    assert doc["inside"]["matched_build"] is None and len(doc["inside"]["stand_ins_tried"]) == 3


@pytest.mark.parametrize(
    "tag, library, said",
    [
        # xformers 0.0.28 (the data's oldest) pins torch 2.4.1; releases for torch 2.3 and 2.1 are on PyPI, not in the data
        ("24.03", "xformers", "cudafit's data holds xformers 0.0.28 (2024-09-12) to "),
        ("23.10", "xformers", "cudafit's data holds xformers 0.0.28 (2024-09-12) to "),
        ("25.06", "vllm", "cudafit's data holds vllm 0.19.0 (2026-04-03) to "),
    ],
)
def test_a_gap_in_the_data_is_said_as_the_datas_coverage(tag, library, said):
    code, out, _err = run("--inside", f"nvcr.io/nvidia/pytorch:{tag}-py3", library)
    assert code == 1
    line = next(x for x in out.splitlines() if x.startswith(said))
    release = str(image.read(f"nvcr.io/nvidia/pytorch:{tag}-py3", load()).torch_release)
    assert f"none of those is built for torch {release} (released " in line
    assert f"and later, so an older {library} release may be built for it, but none is in the data" in line
    doc = json.loads(run("--inside", f"nvcr.io/nvidia/pytorch:{tag}-py3", library, "--json")[1])
    assert doc["inside"]["coverage"] == [line]


def test_coverage_says_a_later_release_only_where_the_data_stops_before_the_torch():
    code, out, _err = run("--inside", "torch=2.15.0a0+1,cuda=13.2,python=3.12", "vllm")
    assert code == 1
    assert "none of those is built for torch 2.15.0 (released 2026-10-28): they are built for torch 2.14.0 and earlier, so a later vllm release" in out
    assert "an older vllm release" not in out


def test_a_library_with_a_build_for_the_torch_is_not_called_a_gap():
    # flash-attn 2.7.3 is built for torch 2.3: whatever else refuses it, the data holds one for it
    _code, out, _err = run("--inside", "nvcr.io/nvidia/pytorch:24.03-py3", "xformers", "flash-attn")
    assert "cudafit's data holds xformers" in out and "cudafit's data holds flash-attn" not in out


def test_forward_compatibility_answers_the_libraries_for_the_images_own_driver():
    # an A100 on driver 535 may run 25.12 (CUDA 13.1) through forward compatibility: the image's
    # forward-compatibility libcuda is what the libraries load, so "driver < 580" refuses nothing
    args = ["--inside", "nvcr.io/nvidia/pytorch:25.12-py3", "xformers", *A100, "--driver", "535.104.05"]
    code, out, _err = run(*args)
    assert code == 0, out
    assert "whether the image runs here is not known" in out and "< 580" not in out
    assert "should a data-center GPU run the image through forward compatibility" in out and "answered for driver 590.44.01" in out
    doc = json.loads(run(*args, "--json")[1])
    assert doc["host"]["runs"] is None and doc["assumed_driver"] == "590.44.01" and "forward compatibility" in doc["assumed_driver_why"]


def test_a_host_that_runs_the_image_through_forward_compatibility_gets_the_images_driver():
    data = load()
    record = next(c for c in data.ngc_containers if c.framework == "pytorch" and c.tag == "25.12")
    listed = data._replace(ngc_containers=(record._replace(forward_compat=("R535 >= 535.54",)),))
    from cudafit.machine import MachineOptions, build_machine
    from cudafit.records import Policy

    machine = build_machine(MachineOptions(driver="535.104.05", gpus=("NVIDIA A100-SXM4-80GB",), os="linux", arch="x86_64"), listed)
    answer = resolve_inside(["xformers"], image.read("nvcr.io/nvidia/pytorch:25.12-py3", listed), machine, listed, Policy())
    assert answer.host is not None and answer.host.runs is True and answer.host.forward_compat
    assert answer.ok and answer.assumed_driver == "590.44.01" and answer.resolution.machine.driver == "590.44.01"
    assert answer.assumed_why == "inside the image, its CUDA forward-compatibility libraries stand in for the host driver's"


def test_an_explicit_python_other_than_the_images_is_refused():
    code, _out, err = run("--inside", "nvcr.io/nvidia/pytorch:25.06-py3", "xformers", "--python", "3.10")
    assert code == 2 and "Python is 3.12 (reported in cudafit's data)" in err and "Traceback" not in err
    code, _out, err = run("--inside", DESCRIBED, "xformers", "--python", "3.11")
    assert code == 2 and "the described image's Python is 3.12" in err
    code, _out, _err = run("--inside", "nvcr.io/nvidia/pytorch:25.06-py3", "xformers", "--python", "3.12", *A100)
    assert code == 0


@pytest.mark.parametrize(
    "described, said",
    [
        ("torch=2.8.0a0+abc,cuda=13.0,python=3.12", "torch 2.8.0a0+abc is a pre-release of 2.8.0, which precedes that release"),
        ("torch=2.8.0,cuda=13.0,python=3.12", "torch 2.8.0 is the release 2.8.0"),
        ("torch=2.8.0.post1,cuda=13.0,python=3.12", "torch 2.8.0.post1 is a post-release of 2.8.0, which follows that release"),
    ],
)
def test_the_image_torchs_relation_to_its_release_is_worded_from_its_version(described, said):
    code, out, _err = run("--inside", described, "xformers")
    assert code == 1 and "cudafit's data has no torch 2.8.0 build of CUDA 13" in out and said in out
    assert ("precedes" in out) == ("a0" in described)


def test_a_described_torch_line_is_matched_to_the_datas_release_as_written():
    code, out, _err = run("--inside", "torch=2.8,cuda=12.9,python=3.12", "xformers", *A100)
    assert code == 0 and "fits torch 2.8.0+cu129" in out and "2.8+cu129" not in out


def test_a_stand_in_of_the_images_own_cuda_minor_needs_no_word():
    _code, out, _err = run("--inside", "nvcr.io/nvidia/pytorch:25.06-py3", "xformers", *A100, "--driver", "575.51.03")  # CUDA 12.9.1
    assert "fits torch 2.8.0+cu129" in out and "matched against" not in out and "its compiled code for torch" not in out


def test_the_answer_keeps_the_images_torch_and_fits_its_release():
    code, out, _err = run("--inside", DESCRIBED, "xformers", *A100, "--driver", "575.51.03")
    assert code == 0, out
    assert "chosen: xformers==0.0.32.post2" in out and "fits torch 2.8.0+cu129" in out  # the xformers of torch 2.8.0, CUDA 12.9
    assert "uv pip install --system --break-system-packages --override /tmp/cudafit-image.txt" in out
    assert "pip list --format=freeze" in out and "torch==2.8.0" not in out.split("install, in the image")[1].split("notes:")[0]
    assert "does not meet" in out and "undefined symbol" in out


def test_json_names_the_image_the_host_and_the_steps():
    code, out, _err = run("--inside", "nvcr.io/nvidia/pytorch:25.12-py3", "xformers", "flash-attn", *A100, "--driver", "590.44.01", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["ok"] is True
    assert doc["inside"]["torch"] == "2.10.0a0+b4e4ee81d3" and doc["inside"]["matched_build"] == "torch==2.10.0+cu130"
    assert doc["inside"]["grades"]["torch"] == "declared" and doc["host"]["runs"] is True
    assert {p["name"] for p in doc["packages"]} == {"xformers", "flash-attn"}  # torch is the image's: not installed
    assert not any(k.startswith("torch") for k in doc["pins"])
    assert doc["commands"][0] == "python -m pip install uv" and all("--override" in c for c in doc["commands"][2:])


def test_a_host_that_cannot_run_the_image_is_said_first():
    code, out, _err = run("--inside", "nvcr.io/nvidia/pytorch:25.12-py3", "xformers", "--gpu", "NVIDIA GeForce RTX 4090", "--driver", "535.104.05")
    assert code == 1
    assert "the image does not run here" in out and "forward compatibility is for data-center GPUs only" in out


def test_a_host_without_a_given_driver_is_answered_for_the_images_cuda():
    code, out, _err = run("--inside", "nvcr.io/nvidia/pytorch:25.12-py3", "xformers", "--os", "linux", "--arch", "x86_64")
    assert code == 0 and "answered for driver 590.44.01, the one CUDA 13.1 needs" in out


def test_torch_is_the_images_and_pip_forms_cannot_keep_it():
    code, _out, err = run("--inside", DESCRIBED, "torch==2.9.0", "xformers")
    assert code != 0 and "carries its own torch" in err
    code, _out, err = run("--inside", DESCRIBED, "xformers", "--format", "pip")
    assert code == 2 and "use uv or dockerfile" in err
    code, _out, err = run("--inside", DESCRIBED, "xformers", "--format", "dockerfile")
    assert code == 2 and "starts FROM the image" in err


def test_the_dockerfile_starts_from_the_image_and_parses(tmp_path: Path):
    code, out, _err = run("--inside", "nvcr.io/nvidia/pytorch:25.12-py3", "xformers", "flash-attn", *A100, "--driver", "590.44.01", "--format", "dockerfile")
    assert code == 0
    parser = DockerfileParser(path=str(tmp_path))
    parser.content = out
    assert parser.baseimage == "nvcr.io/nvidia/pytorch:25.12-py3"
    runs = [i["value"] for i in parser.structure if i["instruction"] == "RUN"]
    assert runs[0] == "python -m pip install uv" and runs[1].startswith("python -m pip list --format=freeze")
    assert any("--no-build-isolation flash-attn==" in r for r in runs)  # compiled in the image, against its own torch
    assert all("--constraint /etc/pip/constraint.txt" in r for r in runs[2:])  # NVIDIA's pins from 25.03 (data)


# --- the oracle: uv keeps a stand-in image's pre-release torch while it installs a library ------

UV = shutil.which("uv")


def _wheel(folder: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> None:
    dist = f"{name}-{version}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(f"Requires-Dist: {r}\n" for r in requires)
    files = {
        f"{name}.py": f"VERSION = {version!r}\n".encode(),
        f"{dist}/METADATA": meta.encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: cudafit-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [f"{n},sha256={base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b'=').decode()},{len(d)}" for n, d in files.items()]
    with zipfile.ZipFile(folder / f"{name}-{version}-py3-none-any.whl", "w") as z:
        for n, d in files.items():
            z.writestr(n, d)
        z.writestr(f"{dist}/RECORD", "\n".join([*record, f"{dist}/RECORD,,"]) + "\n")


@pytest.mark.skipif(UV is None, reason="uv is not on PATH (pip install -e '.[test]' brings it)")
def test_uv_runs_the_steps_and_keeps_the_images_torch(tmp_path: Path):
    code, out, _err = run("--inside", DESCRIBED, "xformers", *A100, "--driver", "575.51.03", "--format", "uv")
    assert code == 0
    steps = out.splitlines()
    # the stand-in image: NVIDIA's torch and torchvision; the index: PyPI's torch and the library
    image_wheels, index = tmp_path / "image", tmp_path / "index"
    image_wheels.mkdir(), index.mkdir()
    _wheel(image_wheels, "torch", "2.8.0a0+5228986c39.nv25.5")
    _wheel(image_wheels, "torchvision", "0.23.0a0+428a54c", ("torch",))
    _wheel(index, "torch", "2.8.0")
    _wheel(index, "torchvision", "0.23.0", ("torch==2.8.0",))
    _wheel(index, "numpy", "2.1.0")
    _wheel(index, "xformers", "0.0.32.post2", ("torch==2.8.0", "numpy"))  # its pins as on PyPI
    env = tmp_path / "img"
    subprocess.run([sys.executable, "-m", "venv", str(env)], check=True, timeout=120)
    python = env / ("Scripts" if os.name == "nt" else "bin") / "python"
    local = [UV, "pip", "install", "--python", str(python), "--no-index", "--offline", "--no-cache", "--quiet"]
    subprocess.run([*local, "--find-links", str(image_wheels), "torch==2.8.0a0+5228986c39.nv25.5", "torchvision"], check=True, timeout=120)
    # the steps as emitted; offline, the stand-in interpreter stands for the system one and a folder for the index
    assert steps[0] == "python -m pip install uv"
    read = steps[1].replace("python -m pip", f"{python} -m pip").replace("/tmp/cudafit-image.txt", str(tmp_path / "image.txt"))
    subprocess.run(read, shell=True, check=True, timeout=120)
    assert (tmp_path / "image.txt").read_text().splitlines() == ["torch==2.8.0a0+5228986c39.nv25.5", "torchvision==0.23.0a0+428a54c"]
    install = steps[2].split()
    assert install[:7] == ["uv", "pip", "install", "--system", "--break-system-packages", "--override", "/tmp/cudafit-image.txt"]
    url = install.index("--index-url")
    # the flag as emitted (uv accepts it here, where no marker makes it needed)
    args = [*local, install[4], "--find-links", str(index), "--override", str(tmp_path / "image.txt"), *install[7:url], *install[url + 2 :]]
    subprocess.run(args, check=True, timeout=120)
    listed = subprocess.run([UV, "pip", "list", "--python", str(python), "--format", "json"], capture_output=True, text=True, check=True, timeout=120)
    versions = {p["name"]: p["version"] for p in json.loads(listed.stdout)}
    assert versions["torch"] == "2.8.0a0+5228986c39.nv25.5" and versions["torchvision"] == "0.23.0a0+428a54c"
    assert versions["xformers"] == "0.0.32.post2" and versions["numpy"] == "2.1.0"
    # and without the overrides uv would replace the image's torch: what the answer guards against
    dry = subprocess.run([*local[:-1], "--find-links", str(index), "--dry-run", "xformers==0.0.32.post2"], capture_output=True, text=True, timeout=120)
    assert "torch==2.8.0" in dry.stderr and "- torch==2.8.0a0+5228986c39.nv25.5" in dry.stderr
