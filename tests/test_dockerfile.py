"""--format dockerfile (issue 29): a Dockerfile that installs the answer, on a base image chosen
for what the set needs of the system (tags from matrices/cuda-images.toml), read back with a
Dockerfile parser from PyPI; its install lines, as requirement files, pass `cudafit check`."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner
from dockerfile_parse import DockerfileParser

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
        path.write_text("\n".join([*options, *reqs]) + "\n")
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


# --- check reads Dockerfiles ---------------------------------------------------------------------


def check_text(tmp_path: Path, text: str, name: str = "Dockerfile") -> tuple[int, str]:
    path = tmp_path / name
    path.write_text(text)
    result = CliRunner().invoke(main, ["check", str(path)])
    return result.exit_code, result.stdout


def test_check_finds_an_extension_built_with_another_cuda_major(tmp_path: Path):
    text = (
        "FROM nvidia/cuda:11.8.0-devel-ubuntu22.04\n"
        "RUN pip install --index-url https://download.pytorch.org/whl/cu128 torch==2.8.0+cu128 && \\\n"
        "    pip install --no-build-isolation flash-attn==2.8.3\n"
    )
    code, out = check_text(tmp_path, text)
    assert code == 1 and "Dockerfile:1:6: CF019 the image's nvcc is CUDA 11.8" in out
    same = text.replace("11.8.0-devel-ubuntu22.04", "12.8.1-devel-ubuntu24.04")
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
