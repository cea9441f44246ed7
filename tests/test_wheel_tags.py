"""Where a wheel installs, read from its file name (cudafit.wheel_tags): what CF015 and the data's
PyPI file lists (scripts/wheel_inventory.py) rest on. File names are real PyPI wheels'."""

from __future__ import annotations

import pytest
from packaging.specifiers import SpecifierSet

from cudafit.wheel_tags import platforms_of_tag, python_minors, where


@pytest.mark.parametrize("tag, platforms", [
    ("manylinux_2_28_x86_64", ("linux-x86_64",)),
    ("manylinux2014_aarch64", ("linux-aarch64",)),
    ("win_amd64", ("windows-x86_64",)),
    ("macosx_14_0_arm64", ("macos-arm64",)),
    ("macosx_11_0_universal2", ("macos-arm64", "macos-x86_64")),  # onnxruntime's macOS wheels
    ("any", ("any",)),
    ("musllinux_1_2_x86_64", ()),  # not the glibc Linux cudafit names
    ("win32", ()),
])
def test_platforms_of_a_tag(tag, platforms):
    assert platforms_of_tag(tag) == platforms


@pytest.mark.parametrize("interpreter, abi, requires, minors", [
    ("cp312", "cp312", None, {"3.12"}),
    ("cp39", "abi3", None, {f"3.{m}" for m in range(9, 16)}),
    ("cp313", "cp313t", None, set()),  # free-threaded
    ("py3", "none", SpecifierSet(">=3.10,<3.13"), {"3.10", "3.11", "3.12"}),
    ("pp310", "pypy310_pp73", None, set()),
    ("cp27", "cp27mu", None, set()),
])
def test_python_minors_of_a_wheel(interpreter, abi, requires, minors):
    assert python_minors(interpreter, abi, requires) == minors


def test_where_a_set_of_wheels_installs():
    found = where(
        [
            ("bitsandbytes-0.45.5-py3-none-manylinux_2_24_x86_64.whl", SpecifierSet(">=3.9")),
            ("bitsandbytes-0.45.5-py3-none-win_amd64.whl", SpecifierSet(">=3.9")),
            ("torch_cluster-1.6.3+pt28cu128-cp312-cp312-linux_x86_64.whl", None),
            ("not-a-wheel.tar.gz", None),
        ]
    )
    assert set(found) == {"linux-x86_64", "windows-x86_64"}
    assert "3.9" in found["linux-x86_64"] and "3.9" in found["windows-x86_64"]
