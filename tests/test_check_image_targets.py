"""CF020 (issue 29): a Dockerfile's image that does not start on a target's driver. NVIDIA's
nvidia/cuda images set NVIDIA_REQUIRE_CUDA (matrices/cuda-images.toml, from NVIDIA's Dockerfiles),
which the NVIDIA Container Toolkit enforces at `docker run`: a driver older than the image's CUDA
is refused unless its branch is excepted for the GPU's brand (GeForce is not, from CUDA 12.5's
images); an NGC image needs its release's driver, or forward compatibility on a data-center GPU.
Only a refusal the data states for sure is an error."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from cudafit.cli import main

LINUX = ["--os", "linux", "--arch", "x86_64", "--python", "3.12"]


def codes(tmp_path: Path, image: str, *target: str) -> tuple[list[str], str]:
    (tmp_path / "Dockerfile").write_text(f"FROM {image}\nRUN pip install numpy\n")
    result = CliRunner().invoke(main, ["check", str(tmp_path / "Dockerfile"), *target, "--output-format", "text"])
    assert result.exit_code in (0, 1) and "Traceback" not in result.output, result.output
    found = sorted({word for line in result.stdout.splitlines() for word in line.split() if word.startswith("CF0")})
    return found, result.stdout


@pytest.mark.parametrize(
    "image, driver, gpu, fires",
    [
        ("nvidia/cuda:13.2.1-devel-ubuntu24.04", "580.65.06", "NVIDIA GeForce RTX 4090", True),  # R580 excepted, but not for GeForce
        ("nvidia/cuda:13.2.1-devel-ubuntu24.04", "580.65.06", "NVIDIA H100 80GB HBM3", False),  # excepted for its brand: not for sure
        ("nvidia/cuda:13.2.1-devel-ubuntu24.04", "595.45.04", "NVIDIA GeForce RTX 4090", False),  # CUDA 13.2's own driver
        ("nvidia/cuda:12.9.1-runtime-ubuntu22.04", "545.29.06", "NVIDIA A100-SXM4-80GB", True),  # R545 is not among its branches
        ("nvidia/cuda:12.4.1-runtime-ubuntu22.04", "535.104.05", "NVIDIA GeForce RTX 3090", False),  # 12.4's images except R535 for GeForce too
        ("nvidia/cuda:12.8.1-cudnn-devel-ubuntu24.04", "570.124.06", "NVIDIA GeForce RTX 5090", False),
        ("nvidia/cuda:13.3.0-devel-ubuntu24.04", "535.104.05", "NVIDIA GeForce RTX 3090", False),  # its NVIDIA_REQUIRE_CUDA is not in the data
    ],
)
def test_an_nvidia_cuda_image_against_the_targets_driver(tmp_path: Path, image, driver, gpu, fires):
    found, text = codes(tmp_path, image, "--driver", driver, "--gpu", gpu, *LINUX)
    assert ("CF020" in found) is fires, text


def test_the_finding_names_the_driver_the_image_asks_and_the_target(tmp_path: Path):
    _found, text = codes(tmp_path, "nvidia/cuda:13.2.1-devel-ubuntu24.04", "--driver", "580.65.06", "--gpu", "NVIDIA GeForce RTX 4090", *LINUX)
    assert "CUDA 13.2's driver (595.45.04)" in text and "docker run refuses driver 580.65.06" in text


@pytest.mark.parametrize(
    "image, driver, gpu, fires",
    [
        ("nvcr.io/nvidia/pytorch:25.12-py3", "535.104.05", "NVIDIA GeForce RTX 4090", True),  # CUDA 13.1: forward compatibility is not for GeForce
        ("nvcr.io/nvidia/pytorch:25.12-py3", "535.104.05", "NVIDIA A100-SXM4-80GB", False),  # a data-center GPU may run it: unknown
        ("nvcr.io/nvidia/pytorch:24.10-py3", "560.35.03", "NVIDIA GeForce RTX 4090", False),  # its notes: 560 or later
    ],
)
def test_an_ngc_image_against_the_targets_driver(tmp_path: Path, image, driver, gpu, fires):
    found, text = codes(tmp_path, image, "--driver", driver, "--gpu", gpu, *LINUX)
    assert ("CF020" in found) is fires, text


def test_targets_from_the_project_and_no_driver_no_claim(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\nversion = "0"\n[[tool.cudafit.targets]]\nname = "lab-4090"\ndriver = "580.65.06"\ngpu = "NVIDIA GeForce RTX 4090"\n'
        '[[tool.cudafit.targets]]\nname = "unknown-driver"\ngpu = "NVIDIA GeForce RTX 4090"\n'
    )
    (tmp_path / "Dockerfile").write_text("FROM nvidia/cuda:13.2.1-devel-ubuntu24.04\n")
    result = CliRunner().invoke(main, ["check", str(tmp_path / "Dockerfile"), "--config", str(tmp_path / "pyproject.toml")])
    assert result.exit_code == 1 and "CF020" in result.stdout and "lab-4090" in result.stdout and "unknown-driver" not in result.stdout
