"""scripts/migrate_schema2.py: schema-1 files (copies of the shipped data before the change) become
schema-2 files that load, with the copies of one build merged and the TensorFlow and JAX facts
graded from the sources each entry cited."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from maint_scripts import script
from packaging.version import Version

from cudafit.loader import data_dir, load

ROOT = Path(__file__).resolve().parent.parent
SCHEMA1 = Path(__file__).parent / "fixtures" / "schema1"


def _script():
    return script("migrate_schema2")


@pytest.fixture(scope="module")
def migrated(tmp_path_factory):
    """The shipped data with four files swapped for their schema-1 copies, then migrated."""
    root = tmp_path_factory.mktemp("m") / "matrices"
    shutil.copytree(data_dir(), root)
    for name, folder in (("tensorflow-2.15.toml", "tensorflow"), ("onnxruntime-1.21.toml", "onnxruntime"),
                         ("jax-0.9.toml", "jax"), ("torch-2.8.toml", "pytorch")):
        shutil.copy(SCHEMA1 / name, root / folder / name)
    assert _script().main(["--data", str(root)]) == 0
    return root


def test_every_file_is_schema_2_and_loads(migrated):
    assert all("schema = 2" in p.read_text() for p in migrated.rglob("*.toml"))
    assert load(migrated).torch


def test_nothing_to_do_the_second_time(migrated, capsys):
    before = {p: p.read_text() for p in migrated.rglob("*.toml")}
    assert _script().main(["--data", str(migrated)]) == 0
    assert {p: p.read_text() for p in migrated.rglob("*.toml")} == before


def test_patch_releases_share_one_build(migrated):
    text = (migrated / "jax" / "jax-0.9.toml").read_text()
    assert text.count("[[build]]") == 2  # cu12 and cu13, each once for 0.9.0 to 0.9.2
    releases = {r.version: r for r in load(migrated).frameworks["jax"]}
    first, last = releases[Version("0.9.0")], releases[Version("0.9.2")]
    assert [b.tag for b in first.builds] == ["cu12", "cu13"]
    assert first.builds[0] is last.builds[0] or first.builds[0] == last.builds[0]


def test_tensorflow_facts_are_graded_from_their_sources(migrated):
    releases = {str(r.version): r for r in load(migrated).frameworks["tensorflow"]}
    (build,) = releases["2.15.1"].builds
    assert build.tag == "cu12" and build.platforms == {"linux-x86_64"} and build.extras == ("and-cuda",)
    assert build.grade("sass") == "measured" and "wheel-tensorflow-2-15-1" in build.evidence["sass"].source
    assert build.grade("pins") == "measured" and build.grade("cudnn") == "measured"  # cuDNN 8.9 is the pinned wheel's
    (old,) = releases["2.15.0"].builds
    assert old.pins_python == frozenset() and old.cuda_wheels and "tensorrt" not in old.cuda_wheels


def test_jax_flavours_keep_their_extras_and_grades(migrated):
    release = next(r for r in load(migrated).frameworks["jax"] if str(r.version) == "0.9.2")
    cu12 = next(b for b in release.builds if b.tag == "cu12")
    assert cu12.extra == "cuda12" and cu12.packages == ("jax-cuda12-plugin", "jax-cuda12-pjrt")
    assert cu12.grade("cuda") == "measured" and cu12.grade("sass") == "measured"


def test_onnxruntime_builds_move_to_the_top_level(migrated):
    release = next(r for r in load(migrated).frameworks["onnxruntime-gpu"] if str(r.version) == "1.21.1")
    assert {(b.tag, b.package) for b in release.builds} == {("cu12", "onnxruntime-gpu")}
    assert all(b.grade("pins") == "measured" for b in release.builds)

