"""scripts/publish_data.py: the maintainers' one command that builds and checks the bundle
`cudafit data update` installs from PyPI. The upload never runs here: every test hands the script a
runner that records the commands instead of running them."""

from __future__ import annotations

import shutil
import zipfile

import pytest
from test_read_wheels import _script

from cudafit import bundle
from cudafit.loader import data_dir

publish_data = _script("publish_data")


@pytest.fixture
def ran() -> list[list[str]]:
    """The commands the script asked to run (none is run)."""
    return []


def recorder(calls: list[list[str]], code: int = 0):
    return lambda argv: calls.append(argv) or code


def test_builds_checks_and_prints_the_upload(tmp_path, capsys, monkeypatch, ran):
    monkeypatch.setattr(publish_data, "twine", lambda: None)
    assert publish_data.main(["--dist", str(tmp_path / "dist")], run=recorder(ran)) == 0
    wheel = next((tmp_path / "dist").glob("cudafit_matrices-*-py3-none-any.whl"))
    out = capsys.readouterr().out
    assert f"to publish it (the last step), run: twine upload {wheel}" in out
    assert "every check `cudafit data update` makes" in out and "--sha256" in out
    assert ran == []  # nothing run, nothing uploaded
    # The wheel is the one `cudafit data bundle` writes: the same bytes.
    _name, blob = bundle.build(data_dir(), bundle.open_bundle(wheel)[0].data_date)
    assert wheel.read_bytes() == blob


def test_twine_checks_then_uploads_only_when_asked(tmp_path, capsys, monkeypatch, ran):
    fake = ["python", "-m", "twine"]
    monkeypatch.setattr(publish_data, "twine", lambda: fake)
    assert publish_data.main(["--dist", str(tmp_path)], run=recorder(ran)) == 0
    wheel = str(next(tmp_path.glob("*.whl")))
    assert ran == [[*fake, "check", wheel]]
    ran.clear()
    assert publish_data.main(["--dist", str(tmp_path), "--upload"], run=recorder(ran)) == 0
    assert ran == [[*fake, "check", wheel], [*fake, "upload", wheel]]
    assert "published cudafit-matrices" in capsys.readouterr().out


@pytest.mark.parametrize(
    "twine, code, expected",
    [
        (None, 0, "--upload needs twine: pip install twine"),
        (["twine"], 1, "`twine check` failed"),
    ],
)
def test_upload_refused_without_twine_or_after_a_failed_check(tmp_path, capsys, monkeypatch, ran, twine, code, expected):
    monkeypatch.setattr(publish_data, "twine", lambda: twine)
    assert publish_data.main(["--dist", str(tmp_path), "--upload"], run=recorder(ran, code)) == 2
    err = capsys.readouterr().err
    assert err.startswith("publish_data: error: ") and expected in err and len(err.splitlines()) == 1
    assert all("upload" not in argv for argv in ran)


def test_broken_data_is_not_built(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(publish_data, "twine", lambda: None)
    broken = tmp_path / "matrices"
    shutil.copytree(data_dir(), broken)
    (broken / "nvidia.toml").write_text("data_date = 1\n")
    assert publish_data.main(["--dir", str(broken), "--dist", str(tmp_path / "dist")]) == 2
    assert "does not validate" in capsys.readouterr().err
    assert not (tmp_path / "dist").exists()


def test_a_wheel_whose_record_disagrees_is_refused(tmp_path):
    name, blob = bundle.build(data_dir(), "2026-12-01")
    (tmp_path / "good").mkdir()
    good = tmp_path / "good" / name
    good.write_bytes(blob)
    manifest = bundle.open_bundle(good)[0]
    publish_data.check_wheel(good, manifest)
    bad = tmp_path / name
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(bad, "w") as out:
        for info in src.infolist():
            data = src.read(info)
            out.writestr(info, data + b"#" if info.filename.endswith("__init__.py") else data)
    with pytest.raises(publish_data.InputError, match="RECORD: cudafit_matrices/__init__.py"):
        publish_data.check_wheel(bad, manifest)
    renamed = tmp_path / "good" / "renamed.whl"
    renamed.write_bytes(blob)
    with pytest.raises(publish_data.InputError, match="the file name should be"):
        publish_data.check_wheel(renamed, manifest)
