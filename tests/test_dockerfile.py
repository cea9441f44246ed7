"""--format dockerfile (issue 29): a Dockerfile that installs the answer, on a base image chosen
for what the set needs of the system (tags from matrices/cuda-images.toml), read back with a
Dockerfile parser from PyPI; its install lines, as requirement files, pass `cudafit check`."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner
from dockerfile_parse import DockerfileParser
from packaging.version import Version

from cudafit.cli import main
from cudafit.loader import load

LINUX = ["--os", "linux", "--arch", "x86_64", "--python", "3.12"]

# (specs, machine): a dozen described machines, old and new drivers, NVIDIA, AMD, Intel, no GPU, ARM
MACHINES = [
    (["torch"], ["--gpu", "NVIDIA GeForce RTX 4090", "--driver", "550.54.15", *LINUX]),
    (["torch"], ["--gpu", "Tesla V100-SXM2-16GB", "--driver", "535.104.05", *LINUX]),
    (["torch"], ["--gpu", "Tesla K80", "--driver", "470.82.01", "--os", "linux", "--arch", "x86_64", "--python", "3.10"]),
    (["torch"], ["--gpu", "NVIDIA GeForce RTX 5090", "--driver", "580.65.06", *LINUX]),
    (["torch", "torchvision", "torchaudio"], ["--gpu", "NVIDIA H100 80GB HBM3", "--driver", "580.65.06", *LINUX]),
    (["torch", "flash-attn"], ["--gpu", "NVIDIA H100 80GB HBM3", "--driver", "580.65.06", *LINUX]),
    (["torch", "xformers"], ["--gpu", "NVIDIA A100-SXM4-80GB", "--driver", "550.54.15", *LINUX]),
    (["tensorflow"], ["--gpu", "NVIDIA A100-SXM4-80GB", "--driver", "550.54.15", *LINUX]),
    (["jax[cuda12]"], ["--gpu", "NVIDIA A100-SXM4-80GB", "--driver", "550.54.15", *LINUX]),
    (["torch"], ["--gfx", "gfx1100", *LINUX]),
    (["torch"], ["--driver", "none", *LINUX]),
    (["torch"], ["--gpu", "NVIDIA GH200 480GB", "--driver", "570.86.15", "--os", "linux", "--arch", "aarch64", "--python", "3.12"]),
]


def dockerfile(specs: list[str], machine: list[str]) -> str:
    result = CliRunner().invoke(main, ["resolve", *specs, *machine, "--format", "dockerfile"])
    assert result.exit_code == 0, result.output
    return result.stdout


def parsed(text: str, tmp_path: Path) -> DockerfileParser:
    parser = DockerfileParser(path=str(tmp_path))
    parser.content = text
    return parser


@pytest.mark.parametrize(("specs", "machine"), MACHINES, ids=lambda v: " ".join(v[:2]))
def test_the_dockerfile_parses_and_its_installs_pass_check(specs, machine, tmp_path: Path, monkeypatch):
    text = dockerfile(specs, machine)
    parser = parsed(text, tmp_path)
    instructions = [i["instruction"] for i in parser.structure if i["instruction"] != "COMMENT"]
    assert instructions[0] == "FROM" and "RUN" in instructions
    base = parser.baseimage
    images = {f"nvidia/cuda:{i.tag(f, os)}" for i in load().cuda_images for os, fl in i.flavours.items() for f in fl}
    assert base.startswith("python:3.") or base in images, base  # a tag the data holds, never a made-up one
    monkeypatch.chdir(tmp_path)
    installed: set[str] = set()  # a pin an earlier line installed is there already (pip keeps it)
    for n, run in enumerate(i["value"] for i in parser.structure if i["instruction"] == "RUN"):
        words = shlex.split(run)
        if words[:2] != ["pip", "install"] and words[:3] != ["uv", "pip", "install"]:
            continue
        args = words[2:] if words[0] == "pip" else words[3:]
        options, reqs = [], []
        it = iter(args)
        for a in it:
            if a in ("--index-url", "-f", "--extra-index-url"):
                options.append(f"{a} {next(it)}")
            elif a.startswith("-"):
                continue  # --no-deps, --no-build-isolation: how to install, not what
            elif a not in installed:
                reqs.append(a)
        installed.update(reqs)
        if not reqs or reqs == ["setuptools", "wheel", "packaging", "ninja"]:
            continue
        path = tmp_path / f"requirements-{n}.txt"
        # a RUN line installs in the image, which is Linux: the file says so, as a Dockerfile does
        path.write_text("\n".join([*options, *(f"{r}; sys_platform == 'linux'" for r in reqs)]) + "\n")
        check = CliRunner().invoke(main, ["check", str(path)])
        assert check.exit_code == 0, (run, check.stdout)


def test_wheels_that_bring_cuda_get_a_slim_python_and_the_host_is_said():
    text = dockerfile(["torch"], ["--gpu", "NVIDIA GeForce RTX 4090", "--driver", "550.54.15", *LINUX])
    assert "FROM python:3.12-slim" in text
    assert "# host: an NVIDIA driver >= 525.60.13 and the NVIDIA Container Toolkit" in text
    assert "has kernels (SASS) for sm_50, sm_60, sm_70, sm_75, sm_80, sm_86, sm_90" in text
    assert "ENV PIP_CONSTRAINT=/etc/cudafit-constraints.txt" in text and "'torch==2.14.1+cu126" in text


def test_a_source_build_gets_the_devel_image_of_torchs_cuda():
    text = dockerfile(["torch", "flash-attn"], ["--gpu", "NVIDIA H100 80GB HBM3", "--driver", "580.65.06", *LINUX])
    torch_cuda = next(line for line in text.splitlines() if line.startswith("# torch ")).split("(CUDA ")[1].split(",")[0]
    (base,) = [line for line in text.splitlines() if line.startswith("FROM ")]
    assert base.startswith(f"FROM nvidia/cuda:{torch_cuda}.") and base.endswith("-devel-ubuntu24.04")
    assert "COPY --from=ghcr.io/astral-sh/uv:" in text and "RUN uv venv --python 3.12 /opt/venv" in text
    assert "RUN uv pip install setuptools wheel packaging ninja" in text
    assert text.index("setuptools wheel") < text.index("--no-build-isolation")


def test_an_amd_answer_says_what_the_container_needs():
    text = dockerfile(["torch"], ["--gfx", "gfx1100", *LINUX])
    assert "--device /dev/kfd --device /dev/dri" in text and "FROM python:3.12-slim" in text


@pytest.mark.parametrize(
    "machine, said",
    [
        (["--gpu", "NVIDIA GeForce RTX 4090", "--driver", "566.36", "--os", "windows", "--arch", "x86_64", "--python", "3.12"], "a container runs Linux"),
        (["--os", "macos", "--arch", "aarch64", "--python", "3.12"], "a container runs Linux"),
    ],
)
def test_a_machine_a_container_cannot_be(machine, said):
    result = CliRunner().invoke(main, ["resolve", "torch", *machine, "--format", "dockerfile"])
    assert result.exit_code == 2 and said in result.stderr


def test_the_image_data_picks_a_supported_release_before_an_end_of_life_one():
    from cudafit import cuda_images

    images = load().cuda_images
    image, os_name = cuda_images.pick(images, "12.8", "devel", "x86_64")
    assert image.status == "supported" and image.tag("devel", os_name) == "12.8.2-devel-ubuntu24.04"
    # 12.8.2 has no cuDNN images: the cudnn flavour falls back to 12.8.1's, which says it is end-of-life
    image, os_name = cuda_images.pick(images, "12.8", "cudnn-runtime", "x86_64")
    assert image.cuda == "12.8.1" and image.status == "eol"
    image, os_name = cuda_images.pick(images, "12.2", "cudnn-runtime", "x86_64")
    assert image.tag(cuda_images.cudnn_flavour(image, "cudnn-runtime", os_name), os_name) == "12.2.2-cudnn8-runtime-ubuntu22.04"
    assert cuda_images.pick(images, "10.2", "devel", "x86_64") is None


# --- the base and the host a build needs of the system (issue: wrong answers in --format dockerfile) ---

T4 = ["--gpu", "Tesla T4", "--driver", "535.104.05", "--os", "linux", "--arch", "x86_64", "--python", "3.10"]
H100 = ["--gpu", "NVIDIA H100 80GB HBM3", "--os", "linux", "--arch", "x86_64", "--python", "3.11"]


def header_lines(text: str) -> list[str]:
    return [line.removeprefix("# ") for line in text.splitlines() if line.startswith("# ")]


def base_image(text: str):
    """The CudaImage and Ubuntu the FROM line names, looked up in the data."""
    (base,) = [line.split()[1] for line in text.splitlines() if line.startswith("FROM ")]
    repository, tag = base.split(":")
    assert repository == "nvidia/cuda", base
    for image in load().cuda_images:
        for os_name, flavours in image.flavours.items():
            if any(image.tag(f, os_name) == tag for f in flavours):
                return image, os_name
    raise AssertionError(f"{base} is not in matrices/cuda-images.toml")


def toolkit_driver(cuda: str) -> str:
    from packaging.version import Version

    toolkit = load().toolkit(Version(cuda))
    assert toolkit is not None and toolkit.linux_driver_min
    return toolkit.linux_driver_min


@pytest.mark.parametrize(
    "spec, cuda, cudnn",
    [("onnxruntime-gpu==1.17.1", "11.8", "8.2"), ("tensorflow==2.12.0", "11.8", "8.6")],
)
def test_a_build_that_brings_no_cuda_gets_a_cudnn_image_of_its_cuda(spec, cuda, cudnn, tmp_path: Path):
    """The answer warns that the build loads the system's CUDA and cuDNN; the image must hold them."""
    result = CliRunner().invoke(main, ["resolve", spec, *T4, "--format", "dockerfile"])
    assert result.exit_code == 0, result.output
    assert "must be installed on the system" in result.stderr or "installed on the system" in result.stderr
    text = result.stdout
    assert "python:3.10-slim" not in text and "bring their own CUDA" not in text
    image, os_name = base_image(text)
    assert image.cuda.startswith(cuda + ".") and "-cudnn" in text.split("FROM ")[1].split()[0]
    assert image.cudnn.split(".")[0] == cudnn.split(".")[0] and Version(image.cudnn) >= Version(cudnn)  # same major, no older
    assert f"loads the system's CUDA {cuda} and cuDNN {cudnn} (cuDNN {image.cudnn} in the image)" in text
    assert "RUN uv venv --python 3.10 /opt/venv" in text  # Python from uv: the image has none
    assert parsed(text, tmp_path).baseimage == text.split("FROM ")[1].split()[0]
    if spec.startswith("tensorflow"):  # (onnxruntime-gpu 1.17.1 has no aarch64 wheel, which check judges too)
        assert check_text(tmp_path, text)[0] == 0
    # the image's NVIDIA_REQUIRE_CUDA, which the data holds for this image
    requirement = image.requirement(os_name, "x86_64")
    assert requirement is not None and requirement.cuda == cuda
    lines = header_lines(text)
    assert f"host: an NVIDIA driver >= {toolkit_driver(cuda)} and the NVIDIA Container Toolkit (docker run --gpus all)" in lines
    assert f"host: the image sets NVIDIA_REQUIRE_CUDA=cuda>={cuda}: docker run refuses a driver older than CUDA {cuda}'s ({toolkit_driver(cuda)})" in lines


def test_a_build_that_brings_no_cuda_and_whose_cuda_minor_is_unknown_is_refused():
    result = CliRunner().invoke(main, ["resolve", "onnxruntime-gpu==1.19.2", *T4, "--format", "dockerfile"])
    assert result.exit_code == 2 and result.stdout == ""
    assert "brings no CUDA libraries" in result.stderr and "CUDA minor it was built with is unknown" in result.stderr


def test_without_the_image_in_the_tag_data_the_answer_is_refused(monkeypatch):
    import cudafit.loader

    data = load()
    without = data._replace(cuda_images=tuple(i for i in data.cuda_images if not i.cuda.startswith("11.8.")))
    monkeypatch.setattr(cudafit.loader, "load", lambda *args, **kwargs: without)
    result = CliRunner().invoke(main, ["resolve", "onnxruntime-gpu==1.17.1", *T4, "--format", "dockerfile"])
    assert result.exit_code == 2 and result.stdout == ""
    assert "no nvidia/cuda cudnn-runtime image of CUDA 11.8 with a cuDNN 8.x of 8.2 or newer for x86_64" in result.stderr


def test_a_jetson_answer_is_refused():
    result = CliRunner().invoke(main, ["resolve", "torch", "--jetpack", "6.2", "--python", "3.10", "--format", "dockerfile"])
    assert result.exit_code == 2 and result.stdout == ""
    assert "L4T/JetPack base image" in result.stderr and "no tag data" in result.stderr
    assert "links JetPack's CUDA in /usr/local/cuda" in result.stderr


@pytest.mark.parametrize("driver", ["550.54.15", "580.65.06"])
def test_an_nvidia_cuda_base_says_the_driver_its_require_cuda_asks_for(driver):
    """NVIDIA_REQUIRE_CUDA=cuda>=X.Y refuses an older driver at docker run, whatever the set's own
    floor (minor-version compatibility: 525.60.13 for 12.x, 580 for 13.x); only the branches its
    brand terms name start it, on those brands."""
    from cudafit.records import driver_key

    text = dockerfile(["torch", "flash-attn"], ["--driver", driver, *H100])
    torch_cuda = next(line for line in text.splitlines() if line.startswith("# torch ")).split("(CUDA ")[1].split(",")[0]
    image, os_name = base_image(text)
    assert image.cuda.startswith(torch_cuda + ".")  # torch's CUDA, not a newer one: the lowest the image can ask
    own = toolkit_driver(torch_cuda)
    lines = header_lines(text)
    assert f"host: an NVIDIA driver >= {own} and the NVIDIA Container Toolkit (docker run --gpus all)" in lines
    assert not any(line.startswith("host: an NVIDIA driver >= 525.60.13") for line in lines)
    requirement = image.requirement(os_name, "x86_64")
    assert requirement is not None
    said = f"host: the image sets NVIDIA_REQUIRE_CUDA=cuda>={requirement.cuda}: docker run refuses a driver older than CUDA {torch_cuda}'s ({own})"
    assert said in lines
    (brands,) = [line for line in lines if line.startswith("host: it also starts on ")]
    shown = [b.removeprefix("R") for b in brands.removeprefix("host: it also starts on ").split(" drivers")[0].split(", ")]
    assert shown and set(shown) <= set(requirement.branches) and all(525 <= int(b) < int(own.split(".")[0]) for b in shown)
    assert ", ".join(requirement.brands) in brands and "GeForce is not among them" in brands
    assert driver_key(driver) < driver_key(own)  # these drivers run the set, not the image everywhere: said
    assert f"host: the described driver {driver} is older: docker run refuses this image there unless the GPU's brand" in text


def test_without_the_requirement_in_the_data_the_header_says_it_is_unknown(monkeypatch):
    import cudafit.loader

    data = load()
    bare = data._replace(cuda_images=tuple(i._replace(require=()) for i in data.cuda_images))
    monkeypatch.setattr(cudafit.loader, "load", lambda *args, **kwargs: bare)
    text = dockerfile(["torch", "flash-attn"], ["--driver", "575.57.08", *H100])  # cu129: a 12.9 image, 575.51.03
    lines = header_lines(text)
    assert not any("also starts on" in line or "NVIDIA_REQUIRE_CUDA=cuda>=" in line for line in lines)
    assert "host: NVIDIA's images make docker run refuse a driver older than their CUDA, here CUDA 12.9's (575.51.03); " in text
    assert any("NVIDIA_REQUIRE_CUDA excepts is not in cudafit's data" in line for line in lines)
    assert not any("described driver" in line for line in lines)  # 575.57.08 is new enough


def test_without_a_driver_the_host_floor_is_what_the_gpu_needs():
    """An RTX 5090 needs an R570 driver (Blackwell), above the cu12x build's own 525.60.13."""
    from cudafit.records import driver_key

    result = CliRunner().invoke(main, ["resolve", "torch", "--gpu", "NVIDIA GeForce RTX 5090", "--os", "linux", "--arch", "x86_64", "--python", "3.11", "--format", "dockerfile"])
    assert result.exit_code == 0 and "R570 branch or newer" in result.stderr
    (host,) = [line for line in header_lines(result.stdout) if line.startswith("host: an NVIDIA driver >= ")]
    floor = host.split(">= ")[1].split()[0]
    assert floor == "570.26" and driver_key(floor) >= driver_key("570")  # the R570 branch's oldest driver a toolkit names
    text = dockerfile(["torch", "flash-attn"], ["--gpu", "NVIDIA GeForce RTX 5090", "--os", "linux", "--arch", "x86_64", "--python", "3.11"])
    lines = header_lines(text)
    assert not any(line.startswith("host: an NVIDIA driver >= 525.60.13") for line in lines)
    branches = next((line for line in lines if line.startswith("host: it also starts on ")), "")
    assert "R535" not in branches and "R550" not in branches  # below what the GPU needs: not worth saying


def test_each_compiled_librarys_kernels_are_listed():
    text = dockerfile(["torch", "flash-attn"], ["--driver", "550.54.15", *H100])
    assert "# flash-attn 2.8.3.post2+source-cu12 has kernels (SASS) for sm_80, sm_90, sm_100, sm_120" in text
    assert "# torch 2.13.0+cu129 has kernels (SASS) for" in text
    # an older nvcc than the one the data's list is for compiles fewer: not said as if it were known
    older = dockerfile(["torch==2.13.0+cu126", "flash-attn"], ["--driver", "550.54.15", *H100])
    assert "flash-attn 2.8.3.post2+source-cu12 compiles with nvcc 12.6 here, whose kernels are not in cudafit's data (nvcc 12.8+:" in older
    assert "flash-attn 2.8.3.post2+source-cu12 has kernels" not in older


def test_a_fleets_header_says_the_image_and_the_set_not_one_class_machine(tmp_path: Path):
    """A fleet's answer carries one node class's machine; its GPU and driver stand for no other."""
    import json

    def node(name: str, product: str, cc: str) -> dict:
        labels = {
            "kubernetes.io/arch": "amd64",
            "kubernetes.io/os": "linux",
            "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.product": product,
            "nvidia.com/gpu.compute.major": cc[0],
            "nvidia.com/gpu.compute.minor": cc[1],
            "nvidia.com/cuda.driver-version.full": "550.54.15",
        }
        return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}, "status": {"nodeInfo": {"architecture": "amd64"}}}

    inventory = tmp_path / "nodes.json"
    inventory.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [node("h100-0", "NVIDIA-H100-80GB-HBM3", "90"), node("a100-0", "NVIDIA-A100-SXM4-80GB", "80")]}))
    result = CliRunner().invoke(main, ["fleet", "resolve", "torch", "flash-attn", "--inventory", str(inventory), "--python", "3.11", "--format", "dockerfile"])
    assert result.exit_code == 0, result.output
    lines = header_lines(result.stdout)
    assert any(line.startswith("host: the image sets NVIDIA_REQUIRE_CUDA=cuda>=") for line in lines)
    assert not any("described driver" in line for line in lines)


def test_a_requirement_that_is_not_the_images_own_cuda_is_a_data_error():
    from cudafit import cuda_images
    from cudafit.errors import DataError

    doc = {
        "schema": 2,
        "data_date": "2026-12-03",
        "sources": {"s": "a source"},
        "image": [
            {
                "cuda": "12.9.2",
                "status": "supported",
                "grade": "declared",
                "source": ["s"],
                "flavours": {"ubuntu24.04": ["base"]},
                "require": [{"ubuntu": ["ubuntu24.04"], "arch": ["x86_64"], "cuda": "12.8", "branches": [], "brands": [], "grade": "declared", "source": ["s"]}],
            }
        ],
    }
    with pytest.raises(DataError, match="expected 12.9, the image's own CUDA"):
        cuda_images.read(doc, [])
    doc["image"][0]["require"][0].update(cuda="12.9", ubuntu=["ubuntu22.04"])
    with pytest.raises(DataError, match="expected Ubuntus the image has flavours for"):
        cuda_images.read(doc, [])
    doc["image"][0]["require"][0].update(ubuntu=["ubuntu24.04"], branches=["535"])
    with pytest.raises(DataError, match="branches and brands go together"):
        cuda_images.read(doc, [])
    doc["image"][0]["require"][0].update(brands=["tesla"])
    (image,) = cuda_images.read(doc, [])
    assert image.requirement("ubuntu24.04", "x86_64").branches == ("535",) and image.requirement("ubuntu24.04", "aarch64") is None


# --- check reads Dockerfiles ---------------------------------------------------------------------


def check_text(tmp_path: Path, text: str, name: str = "Dockerfile") -> tuple[int, str]:
    path = tmp_path / name
    path.write_text(text)
    result = CliRunner().invoke(main, ["check", str(path)])
    return result.exit_code, result.stdout


def test_check_finds_an_extension_built_with_another_cuda_major(tmp_path: Path):
    text = (
        "FROM nvidia/cuda:12.8.1-devel-ubuntu24.04\n"
        "RUN pip install --index-url https://download.pytorch.org/whl/cu118 torch==2.7.1+cu118 && \\\n"
        "    pip install --no-build-isolation flash-attn==2.8.3\n"  # its assets are CUDA 12 builds only: it compiles
    )
    code, out = check_text(tmp_path, text)
    assert code == 1 and "Dockerfile:1:6: CF019 the image's nvcc is CUDA 12.8" in out
    same = text.replace("12.8.1-devel-ubuntu24.04", "11.8.0-devel-ubuntu22.04")
    code, out = check_text(tmp_path, same)
    assert "CF019" not in out
    isolated = text.replace("--no-build-isolation ", "")
    assert "CF019" not in check_text(tmp_path, isolated)[1]


def test_check_reads_args_stages_and_each_installs_own_index(tmp_path: Path):
    text = (
        "ARG TORCH=2.8.0\n"
        "FROM python:3.11-slim AS build\n"
        "RUN pip install torch==9.9.9+cu999\n"  # an earlier stage: not the image that runs
        "FROM python:3.12-slim\n"
        "ARG TORCH\n"
        "ARG UNSET\n"
        "RUN python -m pip install --index-url https://download.pytorch.org/whl/cu128 torch==${TORCH}+cu128 \\\n"
        '      "torchvision==${UNSET}" && uv pip install numpy\n'
    )
    code, out = check_text(tmp_path, text)
    assert code == 0, out  # +cu128 read from its own index; the stage before is not the image; ${UNSET} passed over
    bad = text.replace("--index-url https://download.pytorch.org/whl/cu128 ", "")
    code, out = check_text(tmp_path, bad)
    assert code == 1 and "CF001" in out and "Dockerfile:7:" in out


def test_pip_install_torch_over_a_pytorch_image_is_not_judged(tmp_path: Path):
    code, out = check_text(tmp_path, "FROM pytorch/pytorch:2.6.0-cuda12.4-cudnn9-devel\nRUN pip install torch torchvision\n")
    assert code == 0 and "CF008" not in out
    code, out = check_text(tmp_path, "FROM python:3.12-slim\nRUN pip install torch\n")
    assert "CF008" in out  # from PyPI on Linux: the CUDA 13 build, a warning


def test_a_dockerfile_under_another_name_is_known_by_its_content(tmp_path: Path):
    code, out = check_text(tmp_path, "# syntax=docker/dockerfile:1\nFROM python:3.12-slim\nRUN pip install torch==2.8.0+cu999\n", "build.docker")
    assert "CF002" in out or "CF001" in out, out


def test_every_dockerfile_cudafit_writes_passes_check(tmp_path: Path):
    for n, (specs, machine) in enumerate(MACHINES):
        code, out = check_text(tmp_path, dockerfile(specs, machine), f"Dockerfile.{n}")
        assert code == 0, (specs, machine, out)


def test_the_running_stage_holds_what_the_stages_it_is_built_from_installed(tmp_path: Path):
    """vllm's shape: `FROM nvidia/cuda... AS vllm-base`, `FROM vllm-base AS vllm-openai-base`,
    `FROM vllm-openai-base AS vllm-openai`; a build stage beside them is not the image."""
    text = (
        "ARG CUDA_VERSION=12.8.1\n"
        "FROM nvidia/cuda:${CUDA_VERSION}-devel-ubuntu20.04 AS build\n"
        "RUN pip install torch==9.9.9+cu999\n"
        "FROM nvidia/cuda:${CUDA_VERSION}-devel-ubuntu22.04 AS vllm-base\n"
        "ARG CUDA_VERSION\n"
        "RUN if [ \"$TARGETPLATFORM\" = \"linux/arm64\" ]; then \\\n"
        "      uv pip install --system --index-url https://download.pytorch.org/whl/nightly/cu$(echo $CUDA_VERSION | cut -d. -f1,2 | tr -d '.') \\\n"
        "        \"torch==2.8.0.dev20250318+cu128\"; fi\n"
        "RUN uv pip install --system --index-url https://download.pytorch.org/whl/cu128 torch==2.7.1+cu128\n"
        "FROM vllm-base AS vllm-openai-base\n"
        "RUN uv pip install --system accelerate 'bitsandbytes>=0.45.3'\n"
        "FROM vllm-openai-base AS vllm-openai\n"
    )
    from cudafit.check.dockerfile import read

    path = tmp_path / "Dockerfile"
    path.write_text(text)
    doc = read(path)
    assert {p.name for p in doc.pins} == {"torch", "accelerate", "bitsandbytes"}
    (torch,) = [p for p in doc.pins if p.name == "torch"]
    assert torch.specifier == "==2.7.1+cu128"  # not the build stage's, nor the one from an index the shell computes
    assert doc.images[-1][0] == "nvidia/cuda:12.8.1-devel-ubuntu22.04"
    code, out = check_text(tmp_path, text)
    assert code == 0, out


def test_buildkits_ignore_file_beside_a_dockerfile_is_not_read(tmp_path: Path):
    import re

    from ruamel.yaml import YAML

    ignore = tmp_path / "Dockerfile.dockerignore"
    ignore.write_text("*.pyc\n.git\n")
    result = CliRunner().invoke(main, ["check", str(ignore)])
    assert result.exit_code == 0 and "CF000" not in result.stdout
    hook = YAML(typ="safe").load((Path(__file__).parents[1] / ".pre-commit-hooks.yaml").read_text())[0]
    pattern = re.compile(hook["files"])
    assert not pattern.search("docker/Dockerfile.dockerignore")
    assert all(pattern.search(n) for n in ("Dockerfile", "docker/Dockerfile.cuda", "gpu.Dockerfile", "Containerfile"))


def test_an_index_from_the_environment_serves_the_pins(tmp_path: Path):
    text = "FROM python:3.12-slim\nENV PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cu124\nRUN pip install torch==2.5.1+cu124\n"
    code, out = check_text(tmp_path, text)
    assert "CF001" not in out, out
    as_arg = "FROM python:3.12-slim\nARG PIP_INDEX_URL=https://download.pytorch.org/whl/cu124\nRUN pip install torch==2.5.1+cu124\n"
    code, out = check_text(tmp_path, as_arg)
    assert code == 0, out
    unset = "FROM python:3.12-slim\nARG PIP_INDEX_URL\nRUN pip install torch==2.5.1+cu124\n"
    assert "CF001" in check_text(tmp_path, unset)[1]


def test_a_find_links_page_is_no_extra_index(tmp_path: Path):
    # khlam/docker-pytorch's shape: +cu113 builds from torch_stable.html
    text = (
        "FROM nvidia/cuda:11.6.0-base-ubuntu20.04 as base\n"
        "RUN apt-get update && apt-get install -y python3-pip && \\\n"
        "    pip3 install torch==1.10.1+cu113 torchvision==0.11.2+cu113 torchaudio==0.10.1+cu113 -f https://download.pytorch.org/whl/cu113/torch_stable.html && \\\n"
        "    pip3 install numpy\n"
    )
    code, out = check_text(tmp_path, text)
    assert code == 0 and "CF006" not in out, out


def test_a_cuda_image_base_takes_the_builds_the_drivers_own_cuda_runs():
    # R580 runs CUDA 13.0 itself; an image of CUDA 13.2 would ask for 595 at docker run (NVIDIA_REQUIRE_CUDA)
    args = ["resolve", "torch", "flash-attn", "--gpu", "NVIDIA GeForce RTX 4090", "--driver", "580.65.06", *LINUX]
    result = CliRunner().invoke(main, [*args, "--format", "dockerfile"])
    assert result.exit_code == 0, result.output
    base = next(line for line in result.stdout.splitlines() if line.startswith("FROM "))
    assert base.startswith("FROM nvidia/cuda:13.0.") and "refuses the described" not in result.stdout
    assert "chose builds whose CUDA driver 580.65.06 runs itself" in result.stderr
    plain = CliRunner().invoke(main, [*args, "--format", "pip"])  # other forms keep minor-version compatibility
    assert plain.exit_code == 0 and "chose builds whose CUDA" not in plain.stderr
    # the Python API renders what the command prints
    import cudafit

    machine = cudafit.describe(gpus=["NVIDIA GeForce RTX 4090"], driver="580.65.06", os="linux", arch="x86_64", python="3.12")
    assert cudafit.resolve(["torch", "flash-attn"], machine).render("dockerfile") == result.stdout
