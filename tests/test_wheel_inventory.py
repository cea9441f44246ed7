"""scripts/wheel_inventory.py against a fake PyPI (no network): file lists per release, and the
Requires-Dist of the distributions whose own requirements decide where they install."""

from __future__ import annotations

import io
import re
import zipfile

import pytest
import requests
import responses
from maint_scripts import script

wheel_inventory = script("wheel_inventory")

INDEX = "https://pypi.org/pypi/liger-kernel/json"


def wheel(version: str, requires: list[str]) -> bytes:
    metadata = "Metadata-Version: 2.1\nName: liger_kernel\nVersion: " + version + "\n" + "".join(f"Requires-Dist: {r}\n" for r in requires)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr(f"liger_kernel-{version}.dist-info/METADATA", metadata)
        zf.writestr("liger_kernel/__init__.py", "")
    return buffer.getvalue()


# liger-kernel's METADATA as 0.3.1 and 0.5.2 write it (PyPI), and an extra's line every install skips
WHEELS = {
    "0.3.1": wheel("0.3.1", ["torch>=2.1.2", "triton>=2.3.0", 'transformers>=4.0; extra == "dev"']),
    "0.5.2": wheel("0.5.2", ["torch>=2.1.2", "triton>=2.3.1", 'transformers>=4.0; extra == "dev"']),
}


def files(version: str) -> list[dict]:
    name = f"liger_kernel-{version}-py3-none-any.whl"
    # PyPI's JSON API answers here with URLs relative to itself
    return [
        {"filename": name, "url": f"../../packages/ab/{name}", "size": len(WHEELS[version]), "requires_python": ">=3.8", "yanked": False},
        {"filename": f"liger_kernel-{version}.tar.gz", "url": f"../../packages/ab/liger_kernel-{version}.tar.gz", "size": 10, "yanked": False},
    ]


def serve(version: str):
    return ranged(WHEELS[version])


def ranged(blob: bytes):
    def callback(request):
        match = re.fullmatch(r"bytes=(\d+)-(\d+)", request.headers.get("Range") or "")
        if match is None:
            return 200, {}, blob
        start, end = int(match.group(1)), min(int(match.group(2)), len(blob) - 1)
        return 206, {"Content-Range": f"bytes {start}-{end}/{len(blob)}"}, blob[start : end + 1]

    return callback


@pytest.fixture
def pypi():
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        mock.add(responses.GET, INDEX, json={"releases": {v: files(v) for v in WHEELS}})
        for version in WHEELS:
            mock.add_callback(responses.GET, f"https://pypi.org/packages/ab/liger_kernel-{version}-py3-none-any.whl", callback=serve(version))
        yield mock


def test_the_requirements_every_install_gets_are_recorded_for_the_distributions_that_ask(pypi):
    releases = wheel_inventory.releases_of(requests.Session(), "liger-kernel")
    assert [(str(v), f["sdist"], f["requires"]) for v, f in releases] == [
        ("0.3.1", True, ["torch>=2.1.2", "triton>=2.3.0"]),
        ("0.5.2", True, ["torch>=2.1.2", "triton>=2.3.1"]),
    ]
    # releases whose requirements differ are two entries
    assert [versions for versions, _facts in wheel_inventory.runs(releases)] == [["0.3.1"], ["0.5.2"]]


def test_the_written_file_reads_back_with_its_requirements(pypi, tmp_path):
    from cudafit.wheels_data import read

    releases = wheel_inventory.releases_of(requests.Session(), "liger-kernel")
    text = wheel_inventory.tomlkit.dumps(wheel_inventory.document({"liger-kernel": releases}, "2026-12-03"))
    read_back = read("wheels.toml", wheel_inventory.tomllib.loads(text), [])
    newest, oldest = read_back["liger-kernel"]
    assert (str(newest.version), newest.sdist, newest.requires) == ("0.5.2", True, ("torch>=2.1.2", "triton>=2.3.1"))
    assert oldest.requires == ("torch>=2.1.2", "triton>=2.3.0")


def test_a_framework_the_data_holds_is_kept_from_a_library_s_requirements():
    """orbax-checkpoint 0.11.22 asks jax>=0.5.0 among lines of packages the data does not list
    (part of its METADATA on PyPI): the jax line is kept, as it floors a jax[cuda12] beside it."""
    metadata = "Metadata-Version: 2.1\nName: orbax-checkpoint\nVersion: 0.11.22\n" + "".join(
        f"Requires-Dist: {r}\n" for r in ["absl-py", "jax>=0.5.0", "numpy", 'pytest; extra == "testing"']
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("orbax_checkpoint-0.11.22.dist-info/METADATA", metadata)
    blob = buffer.getvalue()
    name = "orbax_checkpoint-0.11.22-py3-none-any.whl"
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        mock.add_callback(responses.GET, f"https://pypi.org/packages/cd/{name}", callback=ranged(blob))
        listed = wheel_inventory.listed_requirements(
            requests.Session(), "https://pypi.org/pypi/orbax-checkpoint/json", [{"filename": name, "url": f"../../packages/cd/{name}", "size": len(blob)}]
        )
    assert listed == ["jax>=0.5.0"]


@pytest.mark.parametrize("requires, wrong", [
    (["triton>="], "not a PEP 508 requirement"),
    (['transformers; extra == "dev"'], "not what every install gets"),
])
def test_a_requirement_the_data_cannot_use_is_refused_with_its_place(requires, wrong):
    from cudafit.errors import DataError
    from cudafit.wheels_data import read

    doc = {
        "schema": 2,
        "data_date": "2026-12-03",
        "sources": {"pypi-files": "PyPI"},
        "distribution": [{"name": "liger-kernel", "source": ["pypi-files"], "grade": "measured", "files": [{"versions": ["0.5.2"], "sdist": True, "requires": requires}]}],
    }
    with pytest.raises(DataError, match=wrong) as caught:
        read("wheels.toml", doc, [])
    assert "liger-kernel" in str(caught.value) and "requires" in str(caught.value)
