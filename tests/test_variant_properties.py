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


def test_an_a100_beside_an_h100_admits_torchs_labels_with_sass_for_both():
    # no SASS runs on both, so an intersection would admit no label; a label's values are alternatives
    doc = properties("--gpu", "NVIDIA A100-SXM4-80GB", "--gpu", "NVIDIA H100 80GB HBM3", "--driver", "550.54.15")
    arch = doc["provider"][0]["properties"]["sm_arch"]
    assert arch[0] == "80_real" and "90_real" not in arch
    text = CliRunner().invoke(main, ["resolve", "torch", *LINUX, "--gpu", "NVIDIA A100-SXM4-80GB", "--gpu", "NVIDIA H100 80GB HBM3", "--driver", "550.54.15", "--format", "variant-properties"]).stdout
    assert "the GPUs span compute capabilities 8.0, 9.0" in text


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
    # the V100 class's driver 470 (CUDA 11.4) bounds the lower bounds, and its sm_70 is the lowest GPU
    assert nvidia["cuda_version_lower_bound"][0] == "11.4"
    assert nvidia["sm_arch"][0] == "70_real" and "80_real" not in nvidia["sm_arch"] and "70_virtual" in nvidia["sm_arch"]
    assert "the GPUs span compute capabilities 7.0, 8.0, 8.9, 9.0" in result.stdout


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


# --- uv's preview, through the provider's override variables (--format variant-env) ------------

import base64  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import zipfile  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from cudafit.loader import load  # noqa: E402

UV = shutil.which("uv")
needs_uv = pytest.mark.skipif(UV is None, reason="uv is not on PATH (pip install -e '.[test]' brings it)")


def _wheel(folder: Path, label: str, variant: dict, common: dict) -> None:
    """A one-module wheel `demo` whose module says which variant it is, labelled as PEP 825 says."""
    files = {
        "demo.py": f"LABEL = {label!r}\n".encode(),
        "demo-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n",
        "demo-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: cudafit-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        "demo-1.0.dist-info/variant.json": json.dumps({**common, "variants": {label: variant}}).encode(),
    }
    record = [f"{n},sha256={base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b'=').decode()},{len(d)}" for n, d in files.items()]
    with zipfile.ZipFile(folder / f"demo-1.0-py3-none-any-{label}.whl", "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
        z.writestr("demo-1.0.dist-info/RECORD", "\n".join([*record, "demo-1.0.dist-info/RECORD,,"]) + "\n")


LABELS = sorted((v for v in load().torch_variant_labels if v.torch == "2.10.0" and v.cuda_lower), key=lambda v: v.tag)
# uv 0.13.9 refuses the static `priority` provider PyTorch's variants.json ranks its labels with,
# so each label is offered alone: uv takes it, or finds nothing it may install. Offline, uv runs
# its built-in copy of NVIDIA's provider only where `requires` admits that copy's version (0.0.1):
# PyTorch's own file asks >=0.0.2, which sends uv to PyPI for the plugin.
COMMON = {
    "$schema": "https://variants-schema.wheelnext.dev/v0.0.3.json",
    "default-priorities": {"namespace": ["nvidia"]},
    "providers": {"nvidia": {"plugin-api": "nvidia_variant_provider.plugin:NvidiaVariantPlugin", "requires": ["nvidia-variant-provider>=0.0.1,<1.0.0"]}},
}


def _nvidia(label) -> dict:
    sm = [f"{a}{b}_real" for a, b in sorted(label.sm_real)] + [f"{a}{b}_virtual" for a, b in sorted(label.sm_virtual)]
    return {"nvidia": {"cuda_version_lower_bound": [label.cuda_lower], "sm_arch": sm}}


@pytest.fixture(scope="module")
def variant_index(tmp_path_factory) -> dict[str, Path]:
    """Per label of torch 2.10.0's CUDA variants as the data holds them, a folder serving a demo
    wheel of that label and the release's variants.json."""
    out = {}
    for label in LABELS:
        folder = tmp_path_factory.mktemp(label.label)
        _wheel(folder, label.label, _nvidia(label), COMMON)
        (folder / "demo-1.0-variants.json").write_text(json.dumps({**COMMON, "variants": {label.label: _nvidia(label)}}))
        out[label.label] = folder
    return out


def _uv_takes(index: Path, env_file: str, tmp_path: Path) -> bool:
    forced = dict(line.split("=", 1) for line in env_file.splitlines() if line and not line.startswith("#"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NV_VARIANT", "UV_", "VIRTUAL_ENV"))} | forced
    target = tmp_path / "site"
    proc = subprocess.run(
        [UV, "pip", "install", "--preview-features", "wheel-variants", "--no-index", "--find-links", str(index), "--offline",
         "--python", sys.executable, "--target", str(target), "--no-cache", "--quiet", "demo"],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert proc.returncode == 0 or "unsatisfiable" in proc.stderr, proc.stderr
    return proc.returncode == 0


def _admits(nvidia: dict, label) -> bool:
    """PEP 825: a variant fits where each of its features has a value the platform supports."""
    return all(set(values) & set(nvidia.get(feature, ())) for feature, values in _nvidia(label)["nvidia"].items())


# (GPU, driver), old and new: the labels uv takes under the env file are those the static
# properties admit, and among them is the build cudafit resolves
MACHINES = [
    ("NVIDIA GeForce GTX 1080", "580.65.06"),  # Pascal: only the CUDA 12.6 label has sm_60 SASS
    ("Tesla V100-SXM2-16GB", "580.65.06"),  # Volta on a CUDA 13 driver: 13.0 dropped sm_70
    ("NVIDIA A100-SXM4-80GB", "535.104.05"),  # a CUDA 12.2 driver: no CUDA 13 label
    ("NVIDIA GeForce RTX 4090", "580.65.06"),
    ("NVIDIA GeForce RTX 5090", "575.57.08"),  # Blackwell on a CUDA 12.9 driver
    ("NVIDIA H100 80GB HBM3", "550.54.15"),
    ("Tesla K80", "470.82.01"),  # Kepler: no label at all
]


@needs_uv
@pytest.mark.parametrize(("gpu", "driver"), MACHINES)
def test_uvs_preview_under_the_env_file_takes_what_the_properties_admit(variant_index: dict[str, Path], tmp_path: Path, gpu: str, driver: str):
    machine = [*LINUX, "--gpu", gpu, "--driver", driver]
    env_file = CliRunner().invoke(main, ["resolve", "torch", *machine, "--format", "variant-env"])
    assert env_file.exit_code == 0, env_file.stderr
    nvidia = properties("--gpu", gpu, "--driver", driver)["provider"][0]["properties"]
    taken = {label.label for label in LABELS if _uv_takes(variant_index[label.label], env_file.stdout, tmp_path / label.label)}
    assert taken == {label.label for label in LABELS if _admits(nvidia, label)}
    answer = CliRunner().invoke(main, ["resolve", "torch==2.10.0", *machine, "--json"])
    if taken:
        variant = next(p["variant"] for p in json.loads(answer.stdout)["packages"] if p["name"] == "torch")
        assert variant in {label.tag for label in LABELS if label.label in taken}
    else:
        assert answer.exit_code == 1  # cudafit has no CUDA build of 2.10 for it either


def test_the_env_file_says_when_one_gpu_cannot_stand_for_all():
    result = CliRunner().invoke(main, ["resolve", "torch", *LINUX, "--gpu", "NVIDIA GeForce RTX 4090", "--gpu", "Tesla V100-SXM2-16GB", "--driver", "535.104.05", "--format", "variant-env"])
    assert result.exit_code == 0, result.stderr
    assert "NV_VARIANT_PROVIDER_FORCE_SM_ARCH=7.0" in result.stdout and "NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION=12.2" in result.stdout
    assert "may lack SASS for the others" in result.stdout
    none = CliRunner().invoke(main, ["resolve", "torch", *LINUX, "--driver", "none", "--format", "variant-env"])
    assert none.exit_code == 0 and "NV_VARIANT" not in none.stdout.replace("# ", "").split("\n", 3)[-1]


def test_every_name_and_value_is_one_pep_825_allows():
    import re

    # PEP 825: namespaces and feature names of [a-z0-9_], values of [a-z0-9_.]
    for args in (("--gpu", "NVIDIA GeForce RTX 4090", "--driver", "580.65.06"), ("--gpu", "Tesla K80", "--driver", "470.82.01")):
        (provider,) = properties(*args)["provider"]
        assert re.fullmatch(r"[a-z0-9_]+", provider["namespace"])
        for feature, values in provider["properties"].items():
            assert re.fullmatch(r"[a-z0-9_]+", feature) and values
            assert all(re.fullmatch(r"[a-z0-9_.]+", v) for v in values) and len(set(values)) == len(values)
