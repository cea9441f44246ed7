"""The data loads, and every kind of inconsistency is rejected with file, entry and field."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cudafit.errors import DataError
from cudafit.loader import data_dir, load

DATA = data_dir()


def test_embedded_data_loads(matrices):
    assert matrices.torch, "no torch releases"
    assert list(matrices.torch) == sorted(matrices.torch, key=lambda r: r.version, reverse=True)
    assert (12, 4) in matrices.toolkits and 12 in matrices.compat
    assert matrices.torch_index.format(variant="cu124") == "https://download.pytorch.org/whl/cu124"


def test_every_release_line_from_1_12_is_present(matrices):
    lines = {f"{r.version.major}.{r.version.minor}" for r in matrices.torch}
    assert {"1.12", "1.13", "2.0", "2.5", "2.8"} <= lines


def test_cache_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDAFIT_CACHE_DIR", str(tmp_path / "cache"))
    first = load()
    assert list((tmp_path / "cache").glob("matrices-*.pickle"))
    assert load() == first


def test_the_cache_shares_equal_values_and_only_those():
    """Equal strings, versions, frozensets and records are written once; values that are equal
    but of another type (1 and True, 2.0 and 2) stay apart."""
    from packaging.version import Version

    from cudafit.loader import _shared

    value = ("cu128", "".join(["cu", "128"]), 1, True, (1,), (True,), 2.0, 2, frozenset({"a"}), frozenset({"a"}), Version("2.1"), Version("2.1"), {"k": ["x"]})
    out = _shared(value, {})
    assert out == value and [type(v) for v in out] == [type(v) for v in value]
    assert [type(v) for v in out[4] + out[5]] == [int, bool]
    assert out[0] is out[1] and out[8] is out[9] and out[10] is out[11]
    assert out[4] is not out[5]


def test_the_cache_keeps_one_build_shared_by_patch_releases_one_object(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDAFIT_CACHE_DIR", str(tmp_path / "cache"))
    fresh = load()
    cached = load()

    def distinct(matrices) -> tuple[int, int]:
        builds = [b for family in matrices.frameworks for r in matrices.frameworks[family] for b in r.builds]
        return len(builds), len({id(b) for b in builds})

    assert distinct(cached) == distinct(fresh)
    assert distinct(fresh)[1] < distinct(fresh)[0]  # the data does share builds


def test_cache_follows_data_changes(tmp_path, monkeypatch):
    copy = tmp_path / "m"
    shutil.copytree(DATA, copy)
    monkeypatch.setenv("CUDAFIT_CACHE_DIR", str(tmp_path / "cache"))
    before = load(copy)
    path = copy / "pytorch" / "index.toml"
    path.write_text(path.read_text().replace("download.pytorch.org/whl/{variant}", "example.invalid/{variant}"))
    assert load(copy).torch_index != before.torch_index


def test_unwritable_cache_is_skipped(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("CUDAFIT_CACHE_DIR", str(blocker / "cache"))
    assert load().torch


# (file, text to replace, replacement, expected message fragment)
# triton's place among wheels.toml's distributions (the messages number them; the file is sorted by name)
_TRITON = 1 + [line for line in (DATA / "wheels.toml").read_text().splitlines() if line.startswith("name = ")].index('name = "triton"')

BROKEN = [
    ("pytorch/torch-2.14.toml", '"cuda-toolkit[cublas,cudart,', '"cuda-toolkit[cublas,cudarrt,',
     "pytorch/torch-2.14.toml: [[build]] cu126 of 2.14.0: field 'pins': cuda-toolkit extra(s) cudarrt not in [toolkit_wheel_extras] of nvidia.toml"),
    ("nvidia.toml", 'nvtx = "nvidia-nvtx"\ngrade = "measured"\nsource = ["pypi-cuda-toolkit"]', 'nvtx = "nvidia-nvtx"\ngrade = "measured"\nsource = ["no-such"]',
     "nvidia.toml: [toolkit_wheel_extras]: field 'source': names 'no-such'"),
    ("nvidia.toml", 'nvtx = "nvidia-nvtx"\ngrade = "measured"', 'nvtx = "nvidia-nvtx"\ngrade = "guessed"',
     "nvidia.toml: [toolkit_wheel_extras]: field 'grade'"),
    ("nvidia.toml", 'version = "13.0.3"\ngrade = "measured"', 'version = "13.0.9"\ngrade = "measured"',
     "pytorch/torch-2.13.toml: [[build]] cu130 of 2.13.0: field 'pins': cuda-toolkit ==13.0.3 has no [[toolkit_wheel]] in nvidia.toml"),
    ("nvidia.toml", 'version = "13.2.2"\ngrade = "measured"', 'version = "13.2.2"\ngrade = "guessed"',
     "nvidia.toml: [[toolkit_wheel]] #7 (13.2.2): field 'grade'"),
    ("nvidia.toml", 'version = "12.4"\nlinux_driver_min = "550.54.14"', 'version = "12.4"\nlinux_driver_min = "550.x"',
     "nvidia.toml: [[toolkit]] #15 (12.4): field 'linux_driver_min': expected a driver version"),
    ("nvidia.toml", 'version = "12.4"\n', 'version = "12.4"\nlinux_drvier_min = "1"\n',
     "nvidia.toml: [[toolkit]] #15 (12.4): unknown field(s) linux_drvier_min"),
    ("gpus.toml", 'name = "NVIDIA GeForce RTX 3090"\ncompute_capability = "8.6"', 'name = "NVIDIA GeForce RTX 3090"\ncompute_capability = "8.66x"',
     "field 'compute_capability': not a compute capability"),
    ("gpus.toml", 'name = "NVIDIA GeForce RTX 3090"\ncompute_capability = "8.6"', 'name = "NVIDIA GeForce RTX 3090"\ncompute_capability = "4.2"',
     "field 'compute_capability': belongs to no [[architecture]] in nvidia.toml"),
    ("gpus.toml", 'name = "NVIDIA GeForce RTX 3090"\n', 'name = "NVIDIA GeForce RTX 3090"\naliases = ["nvidia geforce rtx 3090"]\n',
     "is already listed as 'NVIDIA GeForce RTX 3090'"),
    ("pytorch/torch-2.5.toml", 'version = "2.5.1"', 'version = "2.6.1"', "field 'version': does not belong to release line 2.5"),
    ("pytorch/torch-2.5.toml", 'tag = "cu124"\nplatforms = ["linux-x86_64"]\ncuda = "12.4"', 'tag = "cu124"\nplatforms = ["linux-x86_64"]\ncuda = "12.1"',
     "field 'cuda': does not match the tag 'cu124'"),
    ("pytorch/torch-2.5.toml", 'tag = "cu124"\nplatforms = ["linux-x86_64"]\ncuda = "12.4"', 'tag = "cu124"\nplatforms = ["linux-x86_64"]\ncuda = "12.4"\nreleases = ["2.5.7"]',
     "field 'releases': names 2.5.7, which has no [[release]] in this file"),
    ("pytorch/torch-2.5.toml", 'sass = ["5.0", "6.0", "7.0", "7.5", "8.0", "8.6", "9.0"]', 'sass = ["5.0", "12.0"]',
     "field 'sass': CUDA 12.4 cannot target 12.0"),
    ("pytorch/torch-2.5.toml", 'linux-x86_64 = "cu124"', 'linux-x86_64 = "cu999"',
     "field 'pypi_variant': linux-x86_64 = 'cu999' names no [[build]] of torch"),
    ("pytorch/torch-2.5.toml", 'platforms = ["linux-x86_64", "linux-aarch64", "windows-x86_64", "macos-arm64"]',
     'platforms = ["linux-x86_64", "solaris-sparc"]', "'solaris-sparc' is not one of"),
    ("pytorch/torch-2.5.toml", 'python = ["3.9", "3.10", "3.11", "3.12", "3.13"]', 'python = ["3.9", "three"]',
     "'three' is not a Python version like 3.12"),
    ("pytorch/torch-2.5.toml", 'source = ["pypi-torch-2.5.1"', 'source = ["no-such-source"',
     "field 'source': names 'no-such-source', which is not in this file's [sources]"),
    ("pytorch/torch-2.5.toml", 'line = "2.5"', 'line = "2.4"', "field 'line': expected '2.5' to match the file name"),
    ("pytorch/torch-2.5.toml", "schema = 2", "schema = 9", "field 'schema': this cudafit reads schema 2"),
    ("pytorch/torch-2.5.toml", 'line = "2.5"', 'line = "2.5', "pytorch/torch-2.5.toml: not valid TOML"),
    ("nvidia.toml", "[compat.13]", "[compatt.13]", "nvidia.toml: top level: unknown field(s) compatt"),
    # schema 2: one [[build]] model, read alike for every framework
    ("tensorflow/tensorflow-2.18.toml", 'tag = "cu12"\nplatforms = ["linux-x86_64"]', 'tag = "cu12"\nplatforms = ["linux-x86_64", "windows-arm64"]',
     "tensorflow/tensorflow-2.18.toml: [[build]] #1 (cu12): field 'platforms': names windows-arm64, not among the platforms of release 2.18.0"),
    ("tensorflow/tensorflow-2.18.toml", 'tag = "cu12"\nplatforms = ["linux-x86_64"]\ncuda = "12.5"', 'tag = "cu12"\nplatforms = ["linux-x86_64"]\ncuda = "11.8"',
     "[[build]] #1 (cu12): field 'cuda': is not a CUDA 12.x version, as the tag 'cu12' says"),
    ("tensorflow/tensorflow-2.18.toml", 'tag = "cu12"\nplatforms = ["linux-x86_64"]', 'tag = "cu12"\nreleases = []\nplatforms = ["linux-x86_64"]',
     "[[build]] #1 (cu12): field 'releases': is empty"),
    ("tensorflow/tensorflow-2.18.toml", 'tag = "cu12"\nplatforms = ["linux-x86_64"]', 'tag = "cu12"\npython = ["3.12"]\nplatforms = ["linux-x86_64"]',
     "[[build]] #1 (cu12): unknown field(s) python"),
    ("tensorflow/tensorflow-2.18.toml", 'tag = "cu12"\nplatforms = ["linux-x86_64"]\ncuda = "12.5"', 'tag = "cu99"\nplatforms = ["linux-x86_64"]\ncuda = "unknown"',
     "[[build]] #1 (cu99): field 'tag': names a CUDA major with no [[toolkit]] in nvidia.toml"),
    ("pytorch/torch-2.5.toml", 'tag = "cu124"\nplatforms = ["linux-x86_64"]\ncuda = "12.4"', 'tag = "cu124"\nplatforms = ["linux-x86_64"]\ncuda = "unknown"',
     "field 'cuda': a build tagged with its CUDA version (cu124) knows it: give it"),
    ("pytorch/torch-2.5.toml", 'tag = "cu124"\nplatforms = ["linux-x86_64"]\ncuda = "12.4"', 'tag = "cu124"\nplatforms = ["linux-x86_64"]\npython = ["3.6"]\ncuda = "12.4"',
     "field 'python': names 3.6, not among the Pythons of release 2.5.0"),
    ("jax/jax-0.5.toml", 'extras = ["cuda12"]\nplatforms', 'extras = ["cuda14"]\nplatforms',
     "jax/jax-0.5.toml: [[build]] #1 (cu12): field 'extras': cuda14 is not among the extras of every release it names"),
    ("onnxruntime/onnxruntime-1.22.toml", 'tag = "cu12"\npackage = "onnxruntime-gpu"\n', 'tag = "cu12"\n',
     "onnxruntime/onnxruntime-1.22.toml: [[build]] #1 (cu12): field 'package': missing"),
    ("onnxruntime/onnxruntime-1.22.toml", 'cudnn = "9"\n', 'cudnn = "9"\nreleases = ["1.22.9"]\n',
     "[[build]] #1 (cu12): field 'releases': names 1.22.9, which has no [[release]] in this file"),
    ("pytorch/torch-2.5.toml", 'tag = "cu124"\nplatforms = ["linux-x86_64"]\ncuda = "12.4"', 'tag = "cu124"\nplatforms = ["linux-x86_64"]\ncuda = "12.4"\nreleases = ["not-a-version"]',
     "field 'releases': Invalid version"),
    ("pytorch/index.toml", 'whl/{variant}"', 'whl/{tag}"', "field 'url': expected an https URL template containing {variant}"),
    # wheels.toml: PyPI's file lists of the binary distributions (CF015)
    ("wheels.toml", 'name = "triton"', 'name = "Triton"', f"wheels.toml: [[distribution]] #{_TRITON} (Triton): field 'name': expected the normalized name 'triton'"),
    ("wheels.toml", 'name = "triton"\nsource = ["pypi-files"]\ngrade = "measured"', 'name = "triton"\nsource = ["pypi-files"]\ngrade = "guessed"',
     f"[[distribution]] #{_TRITON} (triton): field 'grade': expected one of measured, declared, reported"),
    ("wheels.toml", 'versions = ["0.4.0"', 'versions = ["0.4.0", "two"', "[[distribution.files]] #1: field 'versions': Invalid version"),
    ("wheels.toml", "sdist = false\nlinux-x86_64", 'sdist = "no"\nlinux-x86_64', "field 'sdist': expected true or false"),
    ("wheels.toml", "sdist = false\nlinux-x86_64", "sdist = false\nsolaris = []\nlinux-x86_64", "unknown field(s) solaris"),
    ("wheels.toml", 'linux-x86_64 = ["3.7"', 'linux-x86_64 = ["py37"', "'py37' is not a Python version like 3.12"),
]


@pytest.mark.parametrize("file, old, new, message", BROKEN, ids=[f"{b[0]}:{b[3][:40]}" for b in BROKEN])
def test_broken_data_is_rejected_precisely(tmp_path, file, old, new, message):
    copy = tmp_path / "m"
    shutil.copytree(DATA, copy)
    path = copy / file
    text = path.read_text()
    assert old in text, f"fixture text not found in {file}: {old!r}"
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(DataError) as info:
        load(copy, use_cache=False)
    assert message in str(info.value)


def test_a_build_that_asks_for_some_toolkit_extras_gets_those_wheels_only(matrices):
    """torch 2.14's cu126 asks cuda-toolkit 12.6.3 for ten extras, not nvjitlink, which it requires
    with a range of its own: that range is its pin, not 12.6.3's ==12.6.85.* beside it."""
    release = next(r for r in matrices.torch if str(r.version) == "2.14.1")
    build = next(b for b in release.builds if b.tag == "cu126" and "linux-x86_64" in b.platforms)
    assert build.pins["cuda-toolkit"] == "==12.6.3" and build.pins["nvidia-nvjitlink-cu12"] == ">=12.6.85,<13"
    assert build.pins["nvidia-cublas-cu12"] == "==12.6.4.1.*" and build.pins["nvidia-nvtx-cu12"] == "==12.6.77.*"
    older = next(r for r in matrices.torch if str(r.version) == "2.13.0")
    whole = next(b for b in older.builds if b.tag == "cu126" and "linux-x86_64" in b.platforms)
    assert whole.pins["nvidia-nvjitlink-cu12"] == "==12.6.85.*"  # all eleven extras


def test_a_file_named_for_another_line_is_rejected(tmp_path):
    copy = tmp_path / "m"
    shutil.copytree(DATA, copy)
    (copy / "pytorch" / "torch-2.4.toml").unlink()
    shutil.copy(copy / "pytorch" / "torch-2.5.toml", copy / "pytorch" / "torch-2.4.toml")
    with pytest.raises(DataError, match="torch-2.4.toml: top level: field 'line'"):
        load(copy, use_cache=False)


def test_a_release_listed_twice_is_rejected(tmp_path):
    """A release belongs to the file of its line, so a duplicate can only sit in one file."""
    copy = tmp_path / "m"
    shutil.copytree(DATA, copy)
    path = copy / "pytorch" / "torch-2.5.toml"
    text = path.read_text()
    first = text.index("[[release]]")
    second = text.index("[[release]]", first + 1)
    path.write_text(text[:second] + text[first:second] + text[second:])
    with pytest.raises(DataError, match=r"torch-2.5.toml: \[\[release\]\] #2 \(2.5.0\): field 'version': is listed twice in this file"):
        load(copy, use_cache=False)


def test_missing_file(tmp_path):
    copy = tmp_path / "m"
    shutil.copytree(DATA, copy)
    (copy / "gpus.toml").unlink()
    with pytest.raises(DataError, match="missing data file gpus.toml"):
        load(copy, use_cache=False)


def test_every_entry_names_a_source():
    """Belt and braces over the loader: no [[...]] entry in any data file lacks `source`."""
    import sys

    tomllib = __import__("tomllib") if sys.version_info >= (3, 11) else __import__("tomli")
    for path in sorted(Path(DATA).rglob("*.toml")):
        doc = tomllib.loads(path.read_text())
        for key, value in doc.items():
            if isinstance(value, list) and all(isinstance(v, dict) for v in value):
                for i, entry in enumerate(value, 1):
                    assert entry.get("source"), f"{path.name}: [[{key}]] #{i} has no source"


def test_caches_of_two_data_folders_live_side_by_side(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDAFIT_CACHE_DIR", str(tmp_path / "cache"))
    copy = tmp_path / "m"
    shutil.copytree(DATA, copy)
    load()
    load(copy)
    assert len(list((tmp_path / "cache").glob("matrices-*.pickle"))) == 2


def test_two_installs_reading_one_data_folder_keep_their_own_caches(tmp_path, monkeypatch):
    """The update in the user's data home is read by every install of cudafit (two venvs, two
    Pythons): each keeps its own cache, and only its own stale ones are replaced."""
    import os

    from cudafit import loader

    monkeypatch.setenv("CUDAFIT_CACHE_DIR", str(tmp_path / "cache"))
    copy = tmp_path / "m"
    shutil.copytree(DATA, copy)
    load(copy)
    monkeypatch.setattr(loader, "_INSTALL", "0ther000")
    load(copy)
    caches = sorted((tmp_path / "cache").glob("matrices-*.pickle"))
    assert len(caches) == 2
    path = copy / "gpus.toml"
    path.write_text(path.read_text() + "\n")  # the data changes: this install's cache is replaced
    load(copy)
    now = sorted((tmp_path / "cache").glob("matrices-*.pickle"))
    assert len(now) == 2 and [c.name.split("-")[2] for c in now].count("0ther000") == 1
    ours = next(c for c in caches if "-0ther000-" not in c.name)
    assert ours in now  # the first install's cache stays
    os.utime(ours, (0, 0))  # ... until it looks abandoned
    path.write_text(path.read_text() + "\n")
    load(copy)
    assert ours not in sorted((tmp_path / "cache").glob("matrices-*.pickle"))


def test_a_data_file_that_cannot_be_read_is_an_error_not_a_gap(tmp_path):
    """A dangling link in place of a release file is named, by load and by data check, rather than
    left out (which would quietly drop the releases it holds)."""
    from cudafit.loader import check

    copy = tmp_path / "m"
    shutil.copytree(DATA, copy)
    target = copy / "pytorch" / "torch-2.1.toml"
    target.unlink()
    target.symlink_to(tmp_path / "gone.toml")
    with pytest.raises(DataError, match="torch-2.1.toml: cannot read data file"):
        load(copy, use_cache=False)
    _matrices, problems = check(copy)
    assert any("torch-2.1.toml: cannot read data file" in p for p in problems)
    other = copy / "jax" / "jax-0.4.toml"
    other.unlink()
    other.symlink_to(tmp_path / "gone-too.toml")
    _matrices, problems = check(copy)  # every unreadable file is named, and nothing else blamed
    assert [p.split(": ")[0].rsplit("/", 2)[-2:] for p in problems] == [["jax", "jax-0.4.toml"], ["pytorch", "torch-2.1.toml"]]


@pytest.mark.parametrize("damage", ["bytes", "none", "missing"])
def test_a_damaged_framework_in_the_cache_is_read_again_from_the_data(tmp_path, monkeypatch, damage):
    """Garbled bytes, a blob that unpickles to something else, a family left out: the data files
    answer, and the cache is written sound again."""
    import pickle

    monkeypatch.setenv("CUDAFIT_CACHE_DIR", str(tmp_path / "cache"))
    first = load()
    cache = next((tmp_path / "cache").glob("matrices-*.pickle"))
    head, blobs, wheel_blobs, tables = pickle.loads(cache.read_bytes())
    if damage == "bytes":
        blobs["jax"] = b"\x00\x01" + blobs["jax"][2:]
        wheel_blobs["triton"] = b"\x00\x01" + wheel_blobs["triton"][2:]
        tables["ngc_containers"] = b"\x00\x01" + tables["ngc_containers"][2:]
    elif damage == "none":
        blobs["jax"] = pickle.dumps(None)
        wheel_blobs["triton"] = pickle.dumps(None)
        tables["ngc_containers"] = pickle.dumps(None)
    else:
        del blobs["jax"]
    cache.write_bytes(pickle.dumps((head, blobs, wheel_blobs, tables)))
    again = load()
    assert tuple(again.frameworks["jax"]) == tuple(first.frameworks["jax"])
    assert again.wheel_files["triton"] == first.wheel_files["triton"]
    assert tuple(again.ngc_containers) == tuple(first.ngc_containers)  # a deferred table too
    head, blobs, wheel_blobs, tables = pickle.loads(next((tmp_path / "cache").glob("matrices-*.pickle")).read_bytes())
    assert tuple(pickle.loads(blobs["jax"])) == tuple(first.frameworks["jax"])  # the cache is sound again


def test_a_tensorflow_wheel_is_one_build_per_platform(tmp_path):
    """A second CUDA build on the same platform would leave the provider to pick one silently."""
    copy = tmp_path / "m"
    shutil.copytree(DATA, copy)
    path = copy / "tensorflow" / "tensorflow-2.18.toml"
    text = path.read_text()
    start = text.index("[[build]]")
    second = text[start:].replace('tag = "cu12"', 'tag = "cu12"\nreleases = ["2.18.0"]', 1).replace('extras = ["and-cuda"]', "extras = []", 1)
    path.write_text(text + "\n" + second)
    with pytest.raises(DataError, match=r"tensorflow-2.18.toml: \[\[build\]\] #2 \(cu12\): field 'platforms': release 2.18.0 already has build cu12 on linux-x86_64"):
        load(copy)


def test_cuda_toolkit_pins_bring_their_library_wheels():
    """torch from 2.12 requires cuda-toolkit[...]==X; the wheels X pins are compared with other
    frameworks' nvidia-* pins (measured from the cuda-toolkit wheels' METADATA)."""
    m = load()
    build = next(b for r in m.torch if str(r.version) == "2.12.1" for b in r.builds if b.tag == "cu126" and "linux-x86_64" in b.platforms)
    assert build.pins is not None and build.pins["cuda-toolkit"] == "==12.6.3"
    assert build.pins["nvidia-cublas-cu12"] == "==12.6.4.1.*" and build.pins["nvidia-cuda-runtime-cu12"] == "==12.6.77.*"


def test_wheel_files_are_optional_data(tmp_path):
    """An update bundle made before matrices/wheels.toml has no such facts: CF015 then judges nothing."""
    copy = tmp_path / "m"
    shutil.copytree(DATA, copy)
    (copy / "wheels.toml").unlink()
    assert dict(load(copy, use_cache=False).wheel_files) == {}


def test_wheel_files_record_every_release_with_its_platforms_and_pythons(matrices):
    """PyPI's file lists (2026-12-02): bitsandbytes is py3-none everywhere up to 0.42.0 (with an
    sdist), wheels only from 0.43.0, linux-aarch64 from 0.46.0 and macOS arm64 from 0.49.0."""
    by_version = {str(r.version): r for r in matrices.wheel_files["bitsandbytes"]}
    assert by_version["0.42.0"].sdist and "any" in by_version["0.42.0"].wheels
    assert not by_version["0.45.5"].sdist and set(by_version["0.45.5"].wheels) == {"linux-x86_64", "windows-x86_64"}
    assert "linux-aarch64" in by_version["0.46.0"].wheels and "macos-arm64" not in by_version["0.48.2"].wheels
    assert "3.12" in by_version["0.49.0"].pythons("macos-arm64")
    assert [r.version for r in matrices.wheel_files["bitsandbytes"]] == sorted(by_version[v].version for v in by_version)[::-1]
