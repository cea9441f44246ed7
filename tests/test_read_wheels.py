"""scripts/read_wheels.py against fake wheels served through range requests (no network)."""

from __future__ import annotations

import io
import json
import random
import re
import textwrap
import zipfile
from types import SimpleNamespace

import pytest
import responses
from maint_scripts import script
from packaging.version import Version

from cudafit.binaries import parse_arch_string

_script = script


read_wheels = _script("read_wheels")
pypi_wheels = _script("pypi_wheels")

INDEX = "https://pypi.org/pypi/torch/json"

METADATA = """\
Metadata-Version: 2.1
Name: torch
Version: 2.13.0
Requires-Dist: filelock
Requires-Dist: cuda-toolkit[cublas,cudart]==13.0.3; platform_system == "Linux"
Requires-Dist: nvidia-cudnn-cu13==9.20.0.48; platform_system == "Linux"
Requires-Dist: nvidia-nccl-cu13==2.29.7; platform_system == "Linux" and platform_machine == "x86_64"
Requires-Dist: cuda-bindings<14,>=13.0.3; platform_system == "Linux" and python_version < "3.15"
Requires-Dist: nvidia-old-cu12==1.0; python_version < "3.10"
Requires-Dist: nvidia-extra-cu13==1.0; extra == "cuda"
Requires-Dist: opt-einsum>=3.3; extra == "opt-einsum"

"""

CUDA_INIT = """\
import torch
raise SystemExit("executed")  # parsing must never run this file
DEVICE_REQUIREMENT = {75: 75}
PYTORCH_RELEASES_CODE_CC: dict[str, dict[str, set[int]]] = {
    "13.0": {
        "x86_64": {75, 80, 86},
        "aarch64": {80, 90},
    },
}
"""


def version_py(version: str, cuda: str | None) -> str:
    return textwrap.dedent(f"""\
        from typing import Optional

        __all__ = ['__version__', 'debug', 'cuda']
        __version__ = {version!r}
        debug = False
        cuda: Optional[str] = {cuda!r}
        """)


def junk(n: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(n)


def make_wheel(version: str, cuda: str | None, arch: bytes, library: str = "torch/lib/libtorch_python.so") -> bytes:
    """A small wheel laid out like torch's, with a large member that read_wheels must not read."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("torch/__init__.py", "")
        zf.writestr("torch/version.py", version_py(version, cuda))
        zf.writestr("torch/cuda/__init__.py", CUDA_INIT)
        zf.writestr(library, junk(150_000, 1) + b"\0" + arch + b"\0" + junk(50_000, 2))
        zf.writestr("torch/lib/libtorch_cuda.so", junk(1_500_000, 3))
        zf.writestr("torch-2.13.0.dist-info/WHEEL", "Wheel-Version: 1.0\n")
        zf.writestr("torch-2.13.0.dist-info/METADATA", METADATA)
    return buffer.getvalue()


WHEELS = {
    "torch-2.13.0-cp312-cp312-manylinux_2_28_x86_64.whl": make_wheel("2.13.0+cu130", "13.0", b"sm_75 sm_80 sm_86 compute_90"),
    "torch-2.13.0-cp312-cp312-manylinux_2_28_aarch64.whl": make_wheel("2.13.0+cu130", "13.0", b"sm_80 sm_90"),
    # No cp312 wheel for Windows: the newest CPython (cp313, not the free-threaded cp314t) is read.
    "torch-2.13.0-cp313-cp313-win_amd64.whl": make_wheel("2.13.0+cpu", None, b"sm_50 sm_60", "torch/lib/torch_python.dll"),
    "torch-2.13.0-cp311-cp311-win_amd64.whl": b"not read",
    "torch-2.13.0-cp314-cp314t-win_amd64.whl": b"not read",
    "torch-2.13.0-cp311-cp311-manylinux_2_28_x86_64.whl": b"not read",
    "torch-2.13.0-cp312-cp312-macosx_14_0_arm64.whl": b"not read",
}


def pypi_json() -> dict:
    files = [{"filename": name, "size": len(blob), "url": f"../../packages/ab/cd/{name}", "yanked": False}
             for name, blob in WHEELS.items()]
    return {"info": {"version": "2.13.0"}, "releases": {"2.12.0": [], "2.13.0": files, "2.14.0rc1": files}}


def wheel_url(name: str) -> str:
    return f"https://pypi.org/packages/ab/cd/{name}"


class FakePyPI:
    """Serves the JSON API and the wheels, honouring Range; records every wheel request."""

    def __init__(self, mock: responses.RequestsMock, honour_range: bool = True):
        self.served: list[tuple[str, str | None, int]] = []  # (wheel, Range header, bytes)
        self.honour_range = honour_range
        mock.add(responses.GET, INDEX, json=pypi_json())
        for name in WHEELS:
            mock.add_callback(responses.GET, wheel_url(name), callback=self._serve(name))

    def _serve(self, name: str):
        blob = WHEELS[name]

        def callback(request):
            header = request.headers.get("Range")
            match = re.fullmatch(r"bytes=(\d+)-(\d+)", header or "")
            if match is None or not self.honour_range:
                self.served.append((name, header, 0))  # the body is never read by the client
                return 200, {}, blob
            start, end = int(match.group(1)), min(int(match.group(2)), len(blob) - 1)
            body = blob[start: end + 1]
            self.served.append((name, header, len(body)))
            return 206, {"Content-Range": f"bytes {start}-{end}/{len(blob)}"}, body

        return callback


@pytest.fixture
def pypi():
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield FakePyPI(mock)


def cc(*texts: str) -> frozenset[tuple[int, int]]:
    return frozenset(tuple(int(p) for p in t.split(".")) for t in texts)  # type: ignore[misc]


# The fake METADATA's pins as the data writes them: cuda-toolkit keeps the extras its wheel names.
PINS = {"cuda-toolkit[cublas,cudart]": "==13.0.3", "nvidia-cudnn-cu13": "==9.20.0.48", "nvidia-nccl-cu13": "==2.29.7",
        "cuda-bindings": ">=13.0.3,<14"}


def variant(tag: str, platforms: list[str], **fields) -> SimpleNamespace:
    base = {"tag": tag, "platforms": frozenset(platforms), "cuda": None, "cudnn": None, "sass": None, "ptx": None,
            "pins": None}
    return SimpleNamespace(**{**base, **fields})


def agreeing_release() -> SimpleNamespace:
    """cudafit's data as the fake wheels have it (only the attributes read_wheels reads)."""
    aarch64_pins = {k: v for k, v in PINS.items() if k != "nvidia-nccl-cu13"}
    return SimpleNamespace(
        version=Version("2.13.0"),
        pypi_variant={"linux-x86_64": "cu130", "linux-aarch64": "cu130", "windows-x86_64": "cpu"},
        builds=(
            variant("cu130", ["linux-x86_64"], cuda=Version("13.0"), cudnn="9.20.0", sass=cc("7.5", "8.0", "8.6"),
                    ptx=cc("9.0"), pins=dict(PINS)),
            variant("cu130", ["linux-aarch64"], cuda=Version("13.0"), cudnn="9.20.0.48", sass=cc("8.0", "9.0"),
                    ptx=frozenset(), pins=aarch64_pins),
            variant("cpu", ["linux-x86_64", "linux-aarch64", "windows-x86_64"], pins={}),
        ),
    )


# --- the pure readers -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "blob, expected",
    [
        (b"\x7fELF\0junk sm_7\0sm_75 sm_80 sm_86 compute_90\0more", (cc("7.5", "8.0", "8.6"), cc("9.0"))),
        (b"\0sm_100 sm_120 sm_90a\0", (cc("9.0", "10.0", "12.0"), frozenset())),
        (b"\0compute_50 compute_60\0", (frozenset(), cc("5.0", "6.0"))),
        (b"\0sm_50 sm_60\0usage: sm_35 sm_50 sm_60 sm_70\0", (cc("3.5", "5.0", "6.0", "7.0"), frozenset())),  # the longest
        (b"\0sm_80\0no list here\0", None),  # one code alone is not an arch list
    ],
)
def test_parse_arch_string(blob, expected):
    assert parse_arch_string(blob) == expected


def test_parse_code_cc_reads_literals_without_running_the_file():
    assert read_wheels.parse_code_cc(CUDA_INIT) == {"13.0": {"x86_64": {75, 80, 86}, "aarch64": {80, 90}}}
    assert read_wheels.parse_code_cc("import torch\nX = 1\n") is None


FLAT_TABLE = """\
# TORCH_CUDA_ARCH_LIST for PyTorch releases (2.11, 2.12: one list for every host)
PYTORCH_RELEASES_CODE_CC: dict[str, set[int]] = {
    "12.6": {50, 60, 70, 80, 86, 90},
    "13.0": {75, 80, 86, 90, 100, 110, 120},
}
"""


def test_parse_code_cc_reads_the_flat_table_of_2_11_as_one_list_for_all_hosts():
    assert read_wheels.parse_code_cc(FLAT_TABLE) == {
        "12.6": {"*": {50, 60, 70, 80, 86, 90}}, "13.0": {"*": {75, 80, 86, 90, 100, 110, 120}}}


def test_a_flat_table_is_held_against_the_union_of_the_linux_builds_as_a_note_only():
    code_cc = read_wheels.parse_code_cc(FLAT_TABLE)
    facts = read_wheels.WheelFacts("2.13.0", "linux-x86_64", "w.whl", 1, version="2.13.0+cu130", tag="cu130",
                                   cuda="13.0", arch_list="sm_75 sm_80 sm_86", sass=cc("7.5", "8.0", "8.6"),
                                   code_cc=code_cc)
    release = agreeing_release()  # cu130: x86_64 7.5 8.0 8.6, aarch64 8.0 9.0; no cu126
    assert [d for d in read_wheels.differences(facts, release) if "CODE_CC" in d] == [
        "PYTORCH_RELEASES_CODE_CC['12.6'] = 5.0 6.0 7.0 8.0 8.6 9.0: the data has no cu126 variant on Linux"]
    assert read_wheels.notes(facts, release) == [
        "PYTORCH_RELEASES_CODE_CC['13.0'] (one list for all hosts) = 7.5 8.0 8.6 9.0 10.0 11.0 12.0; "
        "the data's cu130 Linux SASS lists together: 7.5 8.0 8.6 9.0"]


@pytest.mark.parametrize("source", ["PYTORCH_RELEASES_CODE_CC = make()\n", "PYTORCH_RELEASES_CODE_CC = [1]\n",
                                    "PYTORCH_RELEASES_CODE_CC = {'13.0': {'x86_64': {'75'}}}\n"])
def test_parse_code_cc_rejects_what_is_not_a_literal_table(source):
    with pytest.raises((TypeError, ValueError)):
        read_wheels.parse_code_cc(source)


@pytest.mark.parametrize("version, cuda", [("2.13.0+cu130", "13.0"), ("2.13.0+cpu", None), ("2.13.0", None)])
def test_parse_version_py(version, cuda):
    assert read_wheels.parse_version_py(version_py(version, cuda)) == (version, cuda)


@pytest.mark.parametrize(
    "platform, python, expected",
    [
        ("linux-x86_64", "3.12", PINS),
        ("linux-aarch64", "3.12", {k: v for k, v in PINS.items() if k != "nvidia-nccl-cu13"}),
        ("linux-x86_64", "3.15", {k: v for k, v in PINS.items() if k != "cuda-bindings"}),
        ("windows-x86_64", "3.12", {}),
    ],
)
def test_cuda_pins_follow_the_platform_markers(platform, python, expected):
    expected = {k: str(read_wheels.SpecifierSet(v)) for k, v in expected.items()}
    assert read_wheels.written_cuda_pins(METADATA, platform, python) == expected


def test_flattened_pins_drop_the_extras_written_pins_keep_them():
    assert pypi_wheels.cuda_pins(METADATA)["cuda-toolkit"] == "==13.0.3"
    assert pypi_wheels.written_cuda_pins(METADATA)["cuda-toolkit[cublas,cudart]"] == "==13.0.3"


TOOLKIT = "cuda-toolkit[cudart,cufft,cufile,cupti,curand,cusolver,cusparse,nvjitlink,nvrtc,nvtx]"


@pytest.mark.parametrize(
    "data, wheel, expected",
    [
        # torch 2.12.1 as written: equal, whatever the order of the extras or of a range's parts
        ({TOOLKIT: "==13.0.2", "nvidia-cublas": ">=13.1.0.3,<=13.1.1.3"}, {TOOLKIT: "==13.0.2", "nvidia-cublas": "<=13.1.1.3,>=13.1.0.3"}, []),
        ({"cuda-toolkit[nvtx,cudart,cufft,cufile,cupti,curand,cusolver,cusparse,nvjitlink,nvrtc]": "==13.0.2"}, {TOOLKIT: "==13.0.2"}, []),
        ({"Nvidia_CUDNN_cu13": "==9.20.0.48"}, {"nvidia-cudnn-cu13": "==9.20.0.48"}, []),
        # a plain pin where the wheel names extras: the subset the loader would not see
        ({"cuda-toolkit": "==13.0.2"}, {TOOLKIT: "==13.0.2"}, [f"cuda-toolkit: data cuda-toolkit==13.0.2, wheel {TOOLKIT}==13.0.2"]),
        # one extra more than the wheel asks for (2.15.0 has no curand)
        ({"cuda-toolkit[cublas,curand]": "==13.2.2"}, {"cuda-toolkit[cublas]": "==13.2.2"},
         ["cuda-toolkit: data cuda-toolkit[cublas,curand]==13.2.2, wheel cuda-toolkit[cublas]==13.2.2"]),
        ({"nvidia-cublas": "==13.1.0.3"}, {}, ["nvidia-cublas: data nvidia-cublas==13.1.0.3, wheel none"]),
        ({}, {"nvidia-cublas": "<=13.1.1.3,>=13.1.0.3"}, ["nvidia-cublas: data none, wheel nvidia-cublas<=13.1.1.3,>=13.1.0.3"]),
        ({"nvidia-nccl-cu13": "==2.29.7"}, {"nvidia-nccl-cu13": "==2.28.9"}, ["nvidia-nccl-cu13: data nvidia-nccl-cu13==2.29.7, wheel nvidia-nccl-cu13==2.28.9"]),
    ],
)
def test_pin_differences_compare_as_written_extras_included(data, wheel, expected):
    assert pypi_wheels.pin_differences(data, wheel) == expected


@pytest.mark.parametrize(
    "pins, cudnn",
    [
        ({"nvidia-cudnn-cu13": "==9.20.0.48"}, "9.20.0"),
        ({"nvidia-cudnn-cu12": "==9.1.0.70", "nvidia-nccl-cu12": "==2.21.5"}, "9.1.0"),
        ({"nvidia-cudnn-cu12": ">=9.1,<10"}, None),
        ({"nvidia-nccl-cu12": "==2.21.5"}, None),
    ],
)
def test_cudnn_version(pins, cudnn):
    assert read_wheels.cudnn_version(pins) == cudnn


@pytest.mark.parametrize(
    "platform, expected",
    [
        ("linux-x86_64", "torch-2.13.0-cp312-cp312-manylinux_2_28_x86_64.whl"),
        ("windows-x86_64", "torch-2.13.0-cp313-cp313-win_amd64.whl"),
        ("linux-armv7l", None),
    ],
)
def test_pick_wheel(platform, expected):
    wheel = pypi_wheels.pick_wheel(pypi_json()["releases"]["2.13.0"], platform)
    assert (wheel and wheel["filename"]) == expected


def test_select_releases():
    releases = {"2.5.1": [{}], "2.6.0": [{}], "2.10.0": [{}], "2.11.0rc1": [{}], "2.12.0": []}
    assert read_wheels.select_releases(releases, "2.6", []) == ["2.6.0", "2.10.0"]
    assert read_wheels.select_releases(releases, "2.6", ["2.5.1"]) == ["2.5.1"]


# --- the whole script against the fake PyPI -------------------------------------------------


def test_measures_the_facts_through_range_requests(pypi, capsys):
    assert read_wheels.main(["--json"], torch_data=[agreeing_release()]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["differences"] == []
    wheels = {w["platform"]: w for w in document["wheels"]}
    assert [w["release"] for w in document["wheels"]] == ["2.13.0"] * 3  # not the rc, not the empty 2.12.0
    x86 = wheels["linux-x86_64"]
    assert (x86["version"], x86["tag"], x86["cuda"], x86["cudnn"]) == ("2.13.0+cu130", "cu130", "13.0", "9.20.0")
    assert x86["arch_list"] == "sm_75 sm_80 sm_86 compute_90"
    assert (x86["sass"], x86["ptx"]) == (["7.5", "8.0", "8.6"], ["9.0"])
    assert x86["pins"]["nvidia-nccl-cu13"] == "==2.29.7"
    assert x86["code_cc"] == {"13.0": {"x86_64": ["7.5", "8.0", "8.6"], "aarch64": ["8.0", "9.0"]}}
    assert wheels["linux-aarch64"]["sass"] == ["8.0", "9.0"] and wheels["linux-aarch64"]["ptx"] == []
    assert "nvidia-nccl-cu13" not in wheels["linux-aarch64"]["pins"]
    win = wheels["windows-x86_64"]
    assert (win["filename"], win["tag"], win["cuda"], win["pins"]) == ("torch-2.13.0-cp313-cp313-win_amd64.whl", "cpu", None, {})
    assert win["arch_list"] is None  # a CPU build's python library is not read


def test_never_fetches_a_whole_wheel(pypi, capsys):
    read_wheels.main([], torch_data=[agreeing_release()])
    assert pypi.served
    for name, header, _ in pypi.served:
        assert header is not None, name
    for name in {name for name, _, _ in pypi.served}:
        total = sum(size for n, _, size in pypi.served if n == name)
        assert total < len(WHEELS[name]) / 2, (name, total, len(WHEELS[name]))
    assert not {name for name, _, _ in pypi.served} & {n for n, blob in WHEELS.items() if blob == b"not read"}


def test_text_report_agrees(pypi, capsys):
    assert read_wheels.main(["--platform", "linux-x86_64"], torch_data=[agreeing_release()]) == 0
    out = capsys.readouterr().out
    assert "arch list: sm_75 sm_80 sm_86 compute_90 -> SASS 7.5 8.0 8.6; PTX 9.0" in out
    assert "PYTORCH_RELEASES_CODE_CC (x86_64): 13.0: 7.5 8.0 8.6" in out
    assert "DIFFERENCE" not in out and "0 difference(s)" in out


def _with(release: SimpleNamespace, index: int, **fields) -> SimpleNamespace:
    variants = list(release.builds)
    variants[index] = SimpleNamespace(**{**vars(variants[index]), **fields})
    return SimpleNamespace(**{**vars(release), "builds": tuple(variants)})


def _drop(release: SimpleNamespace, index: int) -> SimpleNamespace:
    variants = [v for i, v in enumerate(release.builds) if i != index]
    return SimpleNamespace(**{**vars(release), "builds": tuple(variants)})


@pytest.mark.parametrize(
    "change, expected",
    [
        (lambda r: _with(r, 0, sass=cc("7.5", "8.0")), "cu130: sass: data 7.5 8.0, wheel 7.5 8.0 8.6"),
        (lambda r: _with(r, 0, ptx=frozenset()), "cu130: ptx: data none, wheel 9.0"),
        (lambda r: _with(r, 1, sass=None), "cu130: sass: data unknown, wheel 8.0 9.0"),
        (lambda r: _with(r, 0, cudnn="9.10.2"), "cu130: cudnn: data 9.10.2, wheel 9.20.0"),
        (lambda r: _with(r, 0, cuda=Version("13.2")), "cu130: cuda: data 13.2, wheel 13.0"),
        (lambda r: _with(r, 0, pins={**PINS, "nvidia-nccl-cu13": "==2.28.9"}), "nvidia-nccl-cu13==2.28.9"),
        # the loader's expansion is not what the wheel writes: the data's pins as written are compared
        (lambda r: _with(r, 0, pins={**PINS, "nvidia-cublas": "==13.1.1.3.*"}, written_pins=dict(PINS)), None),
        (lambda r: _with(r, 0, written_pins={"cuda-toolkit": "==13.0.3", **{k: v for k, v in PINS.items() if "[" not in k}}),
         "cu130: pins: data cuda-bindings<14,>=13.0.3, cuda-toolkit==13.0.3"),
        (lambda r: _with(r, 0, pins={k.replace("cublas,", ""): v for k, v in PINS.items()}), "cuda-toolkit[cudart]==13.0.3"),
        # pypi_pins, where recorded, are the PyPI wheel's (2.0, 2.1)
        (lambda r: _with(r, 0, pypi_pins={"nvidia-cudnn-cu13": "==9.20.0.48"}), "cu130: pins: data nvidia-cudnn-cu13==9.20.0.48, wheel"),
        (lambda r: _with(r, 0, pins={}, pypi_pins=dict(PINS)), None),
        (lambda r: _with(r, 1, pins=None), "cu130: pins: data unknown, wheel"),
        (lambda r: _with(r, 2, pins={"nvidia-cudnn-cu13": "==9.20.0.48"}), "cpu: pins: data nvidia-cudnn-cu13"),
        (lambda r: _with(r, 0, platforms=frozenset({"windows-x86_64"})), "variant missing: no cu130 variant on linux-x86_64"),
        (lambda r: _drop(r, 1), "PYTORCH_RELEASES_CODE_CC['13.0']['aarch64'] = 8.0 9.0: the data has no cu130 variant"),
        (lambda r: SimpleNamespace(**{**vars(r), "pypi_variant": {"windows-x86_64": "cu130"}}),
         "pypi_variant: data cu130, wheel cpu"),
        (lambda r: SimpleNamespace(**{**vars(r), "version": Version("2.12.0")}), "torch 2.13.0 is on PyPI but not in the data"),
    ],
)
def test_a_difference_with_the_data_exits_1(pypi, capsys, change, expected):
    """Each change makes one difference (expected: a part of its line), or none (None)."""
    assert read_wheels.main([], torch_data=[change(agreeing_release())]) == (0 if expected is None else 1)
    out = capsys.readouterr().out
    assert ("DIFFERENCE" not in out) if expected is None else (expected in out)


def test_table_sass_that_differs_is_reported(pypi, capsys):
    # The table says 7.5 8.0 8.6 for x86_64; data and arch string say 7.5 8.0 8.6 too, so change both.
    release = _with(agreeing_release(), 0, sass=cc("8.0", "8.6"))
    assert read_wheels.main(["--platform", "linux-x86_64"], torch_data=[release]) == 1
    out = capsys.readouterr().out
    assert "PYTORCH_RELEASES_CODE_CC['13.0']['x86_64'] = 7.5 8.0 8.6: data cu130 sass 8.0 8.6" in out


def test_the_loader_supplies_the_data_by_default(pypi, capsys, monkeypatch):
    monkeypatch.setattr(read_wheels, "load", lambda use_cache: SimpleNamespace(torch=(agreeing_release(),)))
    assert read_wheels.main(["--release", "2.13.0"]) == 0


def test_a_server_that_ignores_range_is_an_error_not_a_download(capsys):
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        fake = FakePyPI(mock, honour_range=False)
        assert read_wheels.main(["--platform", "linux-x86_64"], torch_data=[agreeing_release()]) == 2
    assert "RangeNotSupported" in capsys.readouterr().out
    assert len(fake.served) == 1


def test_pypi_unreachable_is_one_line_and_exit_2(capsys):
    with responses.RequestsMock() as mock:
        mock.add(responses.GET, INDEX, status=503)
        assert read_wheels.main([], torch_data=[]) == 2
    assert capsys.readouterr().err.startswith("error: https://pypi.org/pypi/torch/json")


def test_verify_pypi_reads_requirements_through_the_shared_helpers(pypi):
    verify_pypi = _script("verify_pypi")
    assert verify_pypi.requirements is pypi_wheels.requirements
    wheel = next(f for f in pypi_json()["releases"]["2.13.0"] if f["filename"].endswith("cp312-manylinux_2_28_x86_64.whl"))
    assert verify_pypi.written_cuda_requirements(verify_pypi.requests.Session(), INDEX, wheel) == {
        k: str(read_wheels.SpecifierSet(v)) for k, v in PINS.items()}
    assert verify_pypi.linux_wheel(pypi_json()["releases"]["2.13.0"])["filename"].endswith("_x86_64.whl")


def test_macos_minimums_per_python_from_wheel_tags():
    files = [{"filename": name} for name in (
        "torch-2.10.0-cp312-none-macosx_11_0_arm64.whl",
        "torch-2.10.0-cp314-cp314-macosx_14_0_arm64.whl",
        "torch-2.10.0-cp314-cp314t-macosx_15_0_arm64.whl",  # free-threaded: not a target
        "torch-2.10.0-cp312-cp312-manylinux_2_28_x86_64.whl",
        "torch-2.2.2-cp311-none-macosx_10_9_x86_64.whl",
    )]
    assert pypi_wheels.macos_minimums(files) == {"macos-arm64": {"3.12": "11.0", "3.14": "14.0"},
                                                 "macos-x86_64": {"3.11": "10.9"}}


@pytest.mark.parametrize(
    "change, expected",
    [
        (lambda r: r, []),
        # the loader's expansion beside the pins as written is not compared
        (lambda r: _with(r, 0, pins={**PINS, "nvidia-cublas": "==13.1.1.3.*"}, written_pins=dict(PINS)), []),
        (lambda r: _with(r, 0, pins={"cuda-toolkit" if "[" in k else k: v for k, v in PINS.items()}),
         ["torch 2.13.0+cu130 linux-x86_64 pins: cuda-toolkit: data cuda-toolkit==13.0.3, wheel cuda-toolkit[cublas,cudart]==13.0.3"]),
        (lambda r: _with(r, 1, pins={**PINS, "nvidia-nccl-cu13": "==2.29.7"}),
         ["torch 2.13.0+cu130 linux-aarch64 pins: nvidia-nccl-cu13: data nvidia-nccl-cu13==2.29.7, wheel none"]),
    ],
)
def test_verify_pypi_compares_the_pins_as_written_on_both_linux_platforms(pypi, capsys, change, expected):
    verify_pypi = _script("verify_pypi")
    matrices = SimpleNamespace(torch=[change(agreeing_release())])
    assert verify_pypi.check_pins(matrices, pypi_json()["releases"]) == len(expected)
    out = capsys.readouterr().out.splitlines()
    assert [line.rpartition(" (")[0] for line in out if " match " not in line] == expected
    assert len(out) == 2
