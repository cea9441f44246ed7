"""torch's cuda-toolkit pins as the wheels write them (issue 24): the data keeps the extras list of
each Requires-Dist, the loader brings exactly those extras' library wheels, and `check` holds a
user's nvidia-* pin against what the wheel asks for, not against extras it never named."""

from __future__ import annotations

import shutil

import pytest
from test_check import codes

from cudafit.errors import DataError
from cudafit.loader import data_dir, load

ELEVEN = "cuda-toolkit[cublas,cudart,cufft,cufile,cupti,curand,cusolver,cusparse,nvjitlink,nvrtc,nvtx]"

# (release, build tag, the cuda-toolkit requirement of the Linux x86_64 and aarch64 PyPI wheels, the
# nvidia-cublas range beside it). Source: each release's cp312 manylinux_2_28 wheels' METADATA on
# PyPI, read on 2026-12-02 with scripts/pypi_wheels.py (range requests); both platforms agree.
PYPI_WHEELS = [
    ("2.11.0", "cu130", f"{ELEVEN}==13.0.2", None),
    ("2.12.0", "cu130", "cuda-toolkit[cudart,cufft,cufile,cupti,curand,cusolver,cusparse,nvjitlink,nvrtc,nvtx]==13.0.2", "<=13.1.1.3,>=13.1.0.3"),
    ("2.12.1", "cu130", "cuda-toolkit[cudart,cufft,cufile,cupti,curand,cusolver,cusparse,nvjitlink,nvrtc,nvtx]==13.0.2", "<=13.1.1.3,>=13.1.0.3"),
    ("2.13.0", "cu130", f"{ELEVEN}==13.0.3", None),
    ("2.14.0", "cu130", f"{ELEVEN}==13.0.3", None),
    ("2.14.1", "cu130", f"{ELEVEN}==13.0.3", None),
    ("2.15.0", "cu132", "cuda-toolkit[cublas,cudart,cufft,cufile,cupti,cusolver,cusparse,nvjitlink,nvrtc,nvtx]==13.2.2", None),
]


@pytest.fixture(scope="module")
def torch():
    return {str(r.version): r for r in load().torch}


def _build(torch, version, tag, platform="linux-x86_64"):
    return next(b for b in torch[version].builds if b.tag == tag and platform in b.platforms)


@pytest.mark.parametrize("version, tag, requirement, cublas", PYPI_WHEELS)
@pytest.mark.parametrize("platform", ["linux-x86_64", "linux-aarch64"])
def test_the_data_writes_the_pypi_wheels_cuda_toolkit_requirement(torch, version, tag, requirement, cublas, platform):
    build = _build(torch, version, tag, platform)
    written = [f"{name}{spec}" for name, spec in build.written_pins.items() if name.startswith("cuda-toolkit")]
    assert written == [requirement]
    assert build.written_pins.get("nvidia-cublas") == cublas


def test_every_cuda_toolkit_pin_names_its_extras(torch):
    for release in torch.values():
        for build in release.builds:
            for name in build.written_pins or {}:
                assert name != "cuda-toolkit", f"{release.version} {build.tag}: a plain cuda-toolkit pin"


@pytest.mark.parametrize(
    "version, tag, absent, kept",
    [
        # 2.15's wheels leave out curand: no cuRAND pin comes with cuda-toolkit 13.2.2
        ("2.15.0", "cu132", "nvidia-curand", {"nvidia-cublas": "==13.4.1.3.*", "nvidia-nvjitlink": "<14,>=13.2.86"}),
        # 2.12's leave out cublas: the wheel's own range is the only cuBLAS pin (13.1.1.3 allowed)
        ("2.12.1", "cu130", None, {"nvidia-cublas": "<=13.1.1.3,>=13.1.0.3", "nvidia-curand": "==10.4.0.35.*"}),
        ("2.13.0", "cu130", None, {"nvidia-cublas": "==13.1.1.3.*", "nvidia-curand": "==10.4.0.35.*"}),
    ],
)
def test_the_loader_brings_exactly_the_extras_the_wheel_names(torch, version, tag, absent, kept):
    build = _build(torch, version, tag)
    assert build.pins is not None
    if absent:
        assert absent not in build.pins
    for name, spec in kept.items():
        assert build.pins[name] == spec
    assert build.pins["cuda-toolkit"] == build.written_pins[next(k for k in build.written_pins if k.startswith("cuda-toolkit"))]


def test_a_plain_cuda_toolkit_pin_is_refused(tmp_path):
    copy = tmp_path / "m"
    shutil.copytree(data_dir(), copy)
    path = copy / "pytorch" / "torch-2.13.toml"
    text = path.read_text()
    assert f'"{ELEVEN}" = "==13.0.3"' in text
    path.write_text(text.replace(f'"{ELEVEN}" = "==13.0.3"', 'cuda-toolkit = "==13.0.3"', 1))
    with pytest.raises(DataError, match=r"torch-2.13.toml: \[\[build\]\] cu130 of 2.13.0: field 'pins': cuda-toolkit ==13.0.3 names no extra"):
        load(copy, use_cache=False)


@pytest.mark.parametrize(
    "text, expected",
    [
        # torch 2.12.1's cuBLAS is its own range, 13.1.0.3 to 13.1.1.3 (uv resolves 13.1.1.3 beside it)
        ("torch==2.12.1\nnvidia-cublas==13.1.1.3\n", []),
        ("torch==2.12.0\nnvidia-cublas==13.1.0.3\n", []),
        ("torch==2.12.1\nnvidia-cublas==13.4.1.3\n", ["CF005"]),
        # torch 2.15.0 asks for no cuRAND: any nvidia-curand goes beside it; its cuBLAS is 13.2.2's
        ("torch==2.15.0\nnvidia-curand==10.4.0.35\n", []),
        ("torch==2.15.0\nnvidia-cublas==13.1.1.3\n", ["CF005"]),
        # torch 2.13.0 asks for all eleven: cuRAND is 13.0.3's
        ("torch==2.13.0\nnvidia-curand==10.4.2.66\n", ["CF005"]),
    ],
)
def test_check_holds_nvidia_pins_against_the_extras_the_wheel_names(tmp_path, text, expected):
    assert codes(tmp_path, {"requirements.txt": text}) == expected
