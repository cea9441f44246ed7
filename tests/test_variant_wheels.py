"""Wheel-variant files (PEP 825) in what `check` reads: a variant wheel's name ends in a label
after its platform tag, and PyTorch's variant index (whl/variant) serves every variant. Both were
read as nothing (a false "no wheel" and a false "index of another variant") before (issue 27)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from cudafit.cli import main
from cudafit.wheel_tags import parse_wheel_name

INDEX = "https://download.pytorch.org/whl/variant"


def test_a_variant_wheels_name_is_read_without_its_label():
    name, version, _build, tags = parse_wheel_name("torch-2.10.0-cp312-cp312-manylinux_2_28_x86_64-cuda12.6.whl")
    assert (name, str(version)) == ("torch", "2.10.0") and {t.platform for t in tags} == {"manylinux_2_28_x86_64"}
    assert parse_wheel_name("torch-2.10.0-1-cp312-cp312-win_amd64-null.whl") is not None  # with a build tag
    assert parse_wheel_name("torch-2.10.0-cp312-cp312-win_amd64-Not_A_Label.whl") is None
    assert parse_wheel_name("not-a-wheel.tar.gz") is None


def test_a_lock_of_variant_wheels_from_pytorchs_variant_index_is_read(tmp_path: Path):
    wheels = ",\n".join(
        f'  {{ name = "torch-2.10.0-cp312-cp312-{platform}-{label}.whl", url = "{INDEX}/torch-2.10.0-cp312-cp312-{platform}-{label}.whl", '
        'hashes = { sha256 = "00" } }'
        for platform in ("manylinux_2_28_x86_64", "manylinux_2_28_aarch64", "win_amd64", "macosx_11_0_arm64")
        for label in ("cuda12.6", "null")
    )
    lock = tmp_path / "pylock.toml"
    lock.write_text(
        'lock-version = "1.0"\ncreated-by = "uv"\nrequires-python = "==3.12.*"\n\n'
        f'[[packages]]\nname = "torch"\nversion = "2.10.0"\nindex = "{INDEX}"\nwheels = [\n{wheels},\n]\n\n'
        f'[packages.variants-json]\nurl = "{INDEX}/torch-2.10.0-variants.json"\nhashes = {{ sha256 = "00" }}\n'
    )
    result = CliRunner().invoke(main, ["check", str(lock)])
    assert result.exit_code == 0, result.stdout


def test_a_variant_wheels_label_is_read_from_its_name():
    from cudafit.wheel_tags import variant_label

    assert variant_label("torch-2.10.0-cp312-cp312-manylinux_2_28_x86_64-cuda12.8.whl") == "cuda12.8"
    assert variant_label("torch-2.10.0-1-cp312-cp312-win_amd64-null.whl") == "null"
    assert variant_label("torch-2.10.0-cp312-cp312-manylinux_2_28_x86_64.whl") is None
    assert variant_label("torch-2.10.0+cu128-cp312-cp312-manylinux_2_28_x86_64.whl") is None


TARGETS = {
    "v100": ("Tesla V100-SXM2-16GB", "580.65.06"),
    "gtx1080": ("NVIDIA GeForce GTX 1080", "580.65.06"),
    "a100-r535": ("NVIDIA A100-SXM4-80GB", "535.104.05"),
}


def _check_lock(tmp_path: Path, monkeypatch, target: str, labels: tuple[str, ...]) -> str:
    """A pylock of torch 2.10.0's Linux x86_64 variant wheels with these labels, checked for one target."""
    monkeypatch.chdir(tmp_path)  # the targets are the project's own
    gpu, driver = TARGETS[target]
    (tmp_path / "pyproject.toml").write_text(
        f'[project]\nname = "demo"\nversion = "0.1"\nrequires-python = ">=3.12"\n\n'
        f'[[tool.cudafit.targets]]\nname = "{target}"\ngpu = "{gpu}"\ndriver = "{driver}"\nos = "linux"\n'
    )
    wheels = ",\n".join(
        f'  {{ name = "torch-2.10.0-cp312-cp312-manylinux_2_28_x86_64-{label}.whl", '
        f'url = "{INDEX}/torch-2.10.0-cp312-cp312-manylinux_2_28_x86_64-{label}.whl", hashes = {{ sha256 = "00" }} }}'
        for label in labels
    )
    lock = tmp_path / "pylock.toml"
    lock.write_text(
        'lock-version = "1.0"\ncreated-by = "uv"\nrequires-python = "==3.12.*"\n\n'
        f'[[packages]]\nname = "torch"\nversion = "2.10.0"\nmarker = "sys_platform == \'linux\' and platform_machine == \'x86_64\'"\n'
        f'index = "{INDEX}"\nwheels = [\n{wheels},\n]\n\n'
        f'[packages.variants-json]\nurl = "{INDEX}/torch-2.10.0-variants.json"\nhashes = {{ sha256 = "00" }}\n'
    )
    return CliRunner().invoke(main, ["check", str(lock)]).stdout


@pytest.mark.parametrize(
    "target, labels, runs",
    [
        ("v100", ("cuda13.0",), False),  # 13.0 dropped sm_70: the only variant has no kernels for the target
        ("v100", ("cuda12.8",), True),
        ("v100", ("cuda12.6", "cuda12.8", "cuda13.0", "null"), True),  # the installer takes 12.8 there
        ("gtx1080", ("cuda12.8", "cuda13.0"), False),  # neither has sm_60/61, and no null variant to fall back on
        ("gtx1080", ("cuda12.8", "cuda13.0", "null"), True),  # the null variant, which the data does not describe: no claim
        ("a100-r535", ("cuda13.0", "cuda12.8"), True),  # a CUDA 12.2 driver: the installer passes 13.0 over
        ("a100-r535", ("cuda13.0",), False),  # ... and with only 13.0 has nothing that loads
    ],
)
def test_the_variant_an_installer_takes_is_judged_on_the_target(tmp_path: Path, monkeypatch, target, labels, runs):
    out = _check_lock(tmp_path, monkeypatch, target, labels)
    assert ("CF010" not in out) == runs, out
