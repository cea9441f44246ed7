"""scripts/refresh.py against a fake PyPI (responses; the wheel's METADATA through range requests)."""

from __future__ import annotations

import re
import sys

import pytest
import responses
from packaging.version import Version
from test_read_wheels import _script, make_wheel

from cudafit.loader import load

refresh = _script("refresh")

# A release line past every one the data knows (a data-only release must not make it known).
_NEWEST = max(r.version for r in load().torch)
NEW = f"{_NEWEST.major}.{_NEWEST.minor + 1}.0"
YANKED = f"{_NEWEST.major}.{_NEWEST.minor + 1}.1"
PRE = f"{_NEWEST.major}.{_NEWEST.minor + 2}.0rc1"
NEW_WHEEL = f"torch-{NEW}-cp312-cp312-manylinux_2_28_x86_64.whl"
BLOB = make_wheel(f"{NEW}+cu132", "13.2", b"sm_75 sm_80")


def serve_ranges(request):
    match = re.fullmatch(r"bytes=(\d+)-(\d+)", request.headers.get("Range", ""))
    if match is None:
        return 200, {}, BLOB
    start, end = int(match.group(1)), min(int(match.group(2)), len(BLOB) - 1)
    return 206, {"Content-Range": f"bytes {start}-{end}/{len(BLOB)}"}, BLOB[start : end + 1]


def files(*names: str, yanked: bool = False) -> list[dict]:
    return [{"filename": n, "url": f"https://files.example/{n}", "size": len(BLOB), "yanked": yanked, "upload_time_iso_8601": "2027-01-20T10:00:00Z"} for n in names]


def fake_pypi(mock: responses.RequestsMock, matrices, extra: dict[str, dict[str, list[dict]]]) -> None:
    """Every distribution lists exactly what the data knows, plus `extra`."""
    for name, (_folder, _stem, known) in refresh.FAMILIES.items():
        releases: dict[str, list[dict]] = {str(v): files(f"{name.replace('-', '_')}-{v}-py3-none-any.whl") for v in known(matrices)}
        releases.update(extra.get(name, {}))
        mock.add(responses.GET, refresh.PYPI.format(name), json={"releases": releases})
    mock.add_callback(responses.GET, f"https://files.example/{NEW_WHEEL}", callback=serve_ranges)


@pytest.fixture(scope="module")
def matrices():
    return load()


def test_nothing_missing_exits_0(matrices, capsys):
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        fake_pypi(mock, matrices, {})
        lines: list[str] = []
        assert refresh.refresh(refresh.requests.Session(), matrices, None, "2027-01-21", lines.append) == 0
    assert lines == []


def test_a_new_torch_release_is_drafted_with_measured_pins(matrices, tmp_path):
    extra = {
        "torch": {
            f"{NEW}": files(NEW_WHEEL, f"torch-{NEW}-cp313-cp313-manylinux_2_28_x86_64.whl", f"torch-{NEW}-cp312-cp312-macosx_14_0_arm64.whl"),
            PRE: files(f"torch-{PRE}-cp312-cp312-manylinux_2_28_x86_64.whl"),  # a pre-release: not a gap
            YANKED: files(f"torch-{YANKED}-cp312-cp312-manylinux_2_28_x86_64.whl", yanked=True),  # yanked: not a gap
        },
        # jaxlib between known ones, paired with no jax release, is no gap; a newer one is.
        "jaxlib": {"0.4.35": files("jaxlib-0.4.35-cp312-cp312-manylinux2014_x86_64.whl"), "9.0.0": files("jaxlib-9.0.0-cp312-cp312-manylinux2014_x86_64.whl")},
    }
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        fake_pypi(mock, matrices, extra)
        lines: list[str] = []
        lacking = refresh.refresh(refresh.requests.Session(), matrices, tmp_path, "2027-01-21", lines.append)
    assert lacking == 2
    assert lines[0] == f"torch {NEW}: on PyPI (2027-01-20) but not in matrices/pytorch/"
    assert "jaxlib 9.0.0: on PyPI" in lines[-1] and not any("0.4.35" in line for line in lines)
    text = (tmp_path / f"torch-{NEW}.draft.toml").read_text()
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    doc = tomllib.loads(text)
    release = doc["release"][0]
    assert release["version"] == f"{NEW}" and release["date"] == "2027-01-20"
    assert release["python"] == ["3.12", "3.13"] and release["platforms"] == ["linux-x86_64", "macos-arm64"]
    assert release["python_by_platform"] == {"macos-arm64": ["3.12"]} and release["macos_min"] == {"macos-arm64": "14.0"}
    build = doc["build"][0]
    assert build["pins"]["nvidia-cudnn-cu13"] == "==9.20.0.48" and build["evidence"]["pins"]["grade"] == "measured"
    assert build["tag"] == "unknown"


def test_main_exits_2_without_network(monkeypatch, capsys):
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        mock.add(responses.GET, refresh.PYPI.format("torch"), body=refresh.requests.ConnectionError("no route"))
        assert refresh.main([]) == 2
    assert "cannot read PyPI" in capsys.readouterr().err


def test_a_new_library_release_is_listed_not_drafted(matrices, tmp_path):
    extra = {"vllm": {"0.35.0": files("vllm-0.35.0-cp38-abi3-manylinux_2_28_x86_64.whl")}}
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        fake_pypi(mock, matrices, extra)
        lines: list[str] = []
        assert refresh.refresh(refresh.requests.Session(), matrices, tmp_path, "2027-01-21", lines.append) == 1
    assert lines == ["vllm 0.35.0: on PyPI (2027-01-20) but not in matrices/vllm/"]
    assert not list(tmp_path.iterdir())


def _between(matrices, name: str) -> str:
    """A version between the oldest and newest the data knows of `name`, which it lacks."""
    known = sorted(refresh.FAMILIES[name][2](matrices))
    version = Version(f"{known[0]}.99")  # 1.12.0.99: past the oldest, short of the next
    assert known[0] < version < known[-1] and version not in known
    return str(version)


@pytest.mark.parametrize(
    "name, wheel, listed",
    [
        # a library's release below its newest known one is a gap (torchao 0.14.0 beside 0.14.1)
        ("torchao", "torchao-{v}-py3-none-any.whl", True),
        ("bitsandbytes", "bitsandbytes-{v}-py3-none-manylinux_2_24_x86_64.whl", True),
        # a companion is recorded on torch's releases: one between them that pairs with none is no gap
        ("torchvision", "torchvision-{v}-cp312-cp312-manylinux_2_28_x86_64.whl", False),
    ],
)
def test_a_release_below_the_newest_known_is_listed(matrices, tmp_path, name, wheel, listed):
    version = _between(matrices, name)
    extra = {name: {version: files(wheel.format(v=version))}}
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        fake_pypi(mock, matrices, extra)
        lines: list[str] = []
        lacking = refresh.refresh(refresh.requests.Session(), matrices, tmp_path, "2027-01-21", lines.append)
    expected = [f"{name} {version}: on PyPI (2027-01-20) but not in matrices/{refresh.FAMILIES[name][0]}/"] if listed else []
    assert (lacking, lines) == (len(expected), expected)


def test_a_torch_release_below_the_newest_is_drafted(matrices, tmp_path):
    version = _between(matrices, "torch")
    extra = {"torch": {version: files(NEW_WHEEL)}}
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        fake_pypi(mock, matrices, extra)
        lines: list[str] = []
        assert refresh.refresh(refresh.requests.Session(), matrices, tmp_path, "2027-01-21", lines.append) == 1
    assert lines[0] == f"torch {version}: on PyPI (2027-01-20) but not in matrices/pytorch/"
    assert (tmp_path / f"torch-{version}.draft.toml").exists()


def test_a_draft_writes_the_pins_as_the_wheel_does(matrices, tmp_path):
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        fake_pypi(mock, matrices, {"torch": {f"{NEW}": files(NEW_WHEEL)}})
        refresh.refresh(refresh.requests.Session(), matrices, tmp_path, "2027-01-21", lambda line: None)
    text = (tmp_path / f"torch-{NEW}.draft.toml").read_text()
    assert '"cuda-toolkit[cublas,cudart]" = "==13.0.3"' in text and 'nvidia-cudnn-cu13 = "==9.20.0.48"' in text
