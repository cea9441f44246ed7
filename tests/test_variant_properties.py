"""--format variant-properties (issue 27): the static wheel-variant properties of a described
machine, in the file uv's wheel-variants preview reads from UV_VARIANT_LOCK; the `nvidia`
namespace as NVIDIA's provider words the driver, and every GPU counted (the provider sees only the
highest)."""

from __future__ import annotations

import tomlkit
from click.testing import CliRunner

from cudafit.cli import main

LINUX = ["--os", "linux", "--arch", "x86_64", "--python", "3.12"]


def properties(*args: str) -> dict:
    result = CliRunner().invoke(main, ["resolve", "torch", *LINUX, *args, "--format", "variant-properties"])
    assert result.exit_code == 0, result.stderr
    return tomlkit.parse(result.stdout).unwrap()


def test_the_file_has_the_shape_uvs_preview_reads():
    doc = properties("--gpu", "NVIDIA GeForce RTX 4090", "--driver", "580.65.06")
    assert doc["metadata"]["version"] == "0.1" and doc["metadata"]["created-by"].startswith("cudafit ")
    (provider,) = doc["provider"]
    assert provider["namespace"] == "nvidia" and provider["resolved"] == []
    assert set(provider["properties"]) == {"cuda_version_lower_bound", "cuda_version_upper_bound", "sm_arch"}


def test_the_driver_bounds_the_cuda_versions_as_nvidias_provider_does():
    nvidia = properties("--gpu", "NVIDIA GeForce RTX 4090", "--driver", "580.65.06")["provider"][0]["properties"]
    lower, upper = nvidia["cuda_version_lower_bound"], nvidia["cuda_version_upper_bound"]
    # driver 580 runs CUDA 13.0: every version up to it is a lower bound it meets, every one above an upper bound
    assert lower[:3] == ["13.0", "13", "12.20"] and lower[-2:] == ["11.0", "11"] and "13.1" not in lower
    assert upper[0] == "15.20" and upper[-1] == "13.1" and "13.0" not in upper and "13" not in upper and "14" in upper


def test_every_gpu_counts_not_only_the_highest():
    mixed = properties("--gpu", "NVIDIA GeForce RTX 4090", "--gpu", "NVIDIA GeForce RTX 3090", "--driver", "580.65.06")
    arch = mixed["provider"][0]["properties"]["sm_arch"]
    assert arch[0] == "86_real" and "89_real" not in arch and "80_real" in arch
    assert "86_virtual" in arch and "89_virtual" not in arch and "50_virtual" in arch


def test_a_machine_without_an_nvidia_gpu_declares_no_provider():
    assert properties("--gfx", "gfx1100")["provider"] == []
    assert properties("--driver", "none")["provider"] == []


def test_the_driver_must_be_known():
    result = CliRunner().invoke(main, ["resolve", "torch", *LINUX, "--gpu", "NVIDIA GeForce RTX 4090", "--format", "variant-properties"])
    assert result.exit_code == 2 and "variant properties need the driver" in result.stderr


def test_a_fleet_declares_what_every_gpu_class_supports():
    from pathlib import Path

    inventory = Path(__file__).parent / "fixtures" / "fleet" / "kubectl-mixed.json"
    result = CliRunner().invoke(main, ["fleet", "resolve", "--inventory", str(inventory), "--format", "variant-properties"])
    assert result.exit_code == 0, result.stderr
    nvidia = tomlkit.parse(result.stdout).unwrap()["provider"][0]["properties"]
    # the V100 class's driver 470 (CUDA 11.4) bounds the lower bounds; no SASS is shared by sm_70 and sm_80+
    assert nvidia["cuda_version_lower_bound"][0] == "11.4"
    assert nvidia["sm_arch"][0] == "70_virtual" and not any(v.endswith("_real") for v in nvidia["sm_arch"])


# --- PyTorch's own variant labels, read as declared evidence -----------------------------------------


def test_labels_that_promise_more_than_a_platforms_build_carries_are_named():
    import json

    result = CliRunner().invoke(main, ["data", "variants", "--json"])
    assert result.exit_code == 0
    found = {(m["torch"], m["label"], m["platform"]): m["claims"] for m in json.loads(result.stdout)["mislabels"]}
    # one label for every platform: the aarch64 cu126 build has SASS for sm_80 and sm_90 only
    assert found[("2.10.0", "cuda12.6", "linux-aarch64")] == ["kernels for sm_50", "kernels for sm_60", "kernels for sm_70", "kernels for sm_75"]
    assert found[("2.10.0", "cuda13.0", "windows-x86_64")] == ["compute_120 PTX"]
    # sm_86 runs sm_80's code: no claim about it; the x86_64 builds carry what their labels say
    assert not any("sm_86" in claim for claims in found.values() for claim in claims)
    assert ("2.10.0", "cuda12.6", "linux-x86_64") not in found
    # an AMD label that names targets whose rocBLAS has no kernels
    assert found[("2.10.0", "rocm7.0", "linux-x86_64")] == ["gfx900 rocBLAS kernels", "gfx906 rocBLAS kernels"]
