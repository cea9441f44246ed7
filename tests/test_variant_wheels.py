"""Wheel-variant files (PEP 825) in what `check` reads: a variant wheel's name ends in a label
after its platform tag, and PyTorch's variant index (whl/variant) serves every variant. Both were
read as nothing (a false "no wheel" and a false "index of another variant") before (issue 27)."""

from __future__ import annotations

from pathlib import Path

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
