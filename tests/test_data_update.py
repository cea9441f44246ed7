"""Data bundles, `cudafit data update / rollback / status / bundle`, and the loader's choice of data.

Every HTTP exchange goes through `responses`; the data home is a temporary folder."""

from __future__ import annotations

import hashlib
import io
import json
import re
import shutil
import threading
import zipfile
from pathlib import Path

import pytest
import requests
import responses
from click.testing import CliRunner
from packaging.version import Version

from cudafit import bundle, datahome, fetch, loader, staleness
from cudafit.cli import main
from cudafit.errors import DataError, InputError
from cudafit.loader import data_dir
from cudafit.update import rollback, update

MACHINE = ["--os", "linux", "--arch", "x86_64", "--python", "3.12", "--driver", "580.65.06", "--gpu", "NVIDIA H100 80GB HBM3"]
API = fetch.PYPI_JSON


def cli(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture(autouse=True)
def _spring_2027(monkeypatch):
    # The test bundles are dated early 2027; a bundle dated after "today" is refused.
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1806883200")  # 2027-04-05


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "data-home"
    monkeypatch.setenv("CUDAFIT_DATA_HOME", str(folder))
    return folder


def newer_tree(tmp_path: Path, date: str = "2027-01-10", release: str = "2.15.1") -> Path:
    """A copy of the embedded data, dated `date`, that knows torch `release` (a copy of 2.15.0)."""
    root = tmp_path / f"matrices-{date}"
    shutil.copytree(data_dir(), root)
    path = root / "pytorch" / "torch-2.15.toml"
    text = path.read_text()
    text = re.sub(r'^data_date = ".*"$', f'data_date = "{date}"', text, count=1, flags=re.M)
    start = text.index("[[release]]")
    end = min(i for i in (text.find("[[build]]", start), text.find("[[release]]", start + 1)) if i > 0)
    block = text[start:end].replace('version = "2.15.0"', f'version = "{release}"').replace('date = "2026-10-28"', f'date = "{date}"')
    path.write_text(text[:start] + block + text[start:])
    return root


def make_bundle(tmp_path: Path, root: Path) -> Path:
    name, blob = bundle.build(root, loader.load(root, use_cache=False).data_date)
    out = tmp_path / name
    out.write_bytes(blob)
    return out


def rewrite(src: Path, dst: Path, change) -> Path:
    """A copy of the bundle `src` with members changed by change(name, bytes) -> bytes | None."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            blob = change(info.filename, zin.read(info.filename))
            if blob is not None:
                zout.writestr(info, blob)
    return dst


# --- bundles ---------------------------------------------------------------------------------


def test_bundle_is_reproducible_and_a_valid_wheel(tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(data_dir(), copy)  # other paths and modification times, same data
    a = bundle.build(data_dir(), "2026-12-01")
    b = bundle.build(copy, "2026-12-01")
    assert a == b
    name, blob = a
    assert name == "cudafit_matrices-2026.12.1-py3-none-any.whl"
    with zipfile.ZipFile(io.BytesIO(blob)) as archive:
        names = archive.namelist()
        record = archive.read("cudafit_matrices-2026.12.1.dist-info/RECORD").decode()
        for line in record.splitlines():
            member, digest, size = line.rsplit(",", 2)
            if digest:  # RECORD lists itself without a hash
                data = archive.read(member)
                assert int(size) == len(data)
                assert digest == "sha256=" + bundle._b64_sha256(data)
        manifest = json.loads(archive.read(bundle.MANIFEST))
    assert names[-1].endswith("RECORD")
    assert manifest["schema"] == bundle.SCHEMA and manifest["data_date"] == "2026-12-01"
    assert set(manifest["files"]) == {p.relative_to(data_dir()).as_posix() for p in bundle.data_files(data_dir())}


def test_cli_bundle_writes_into_a_folder_and_refuses_broken_data(tmp_path):
    result = cli("data", "bundle", "-o", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert list(tmp_path.glob("cudafit_matrices-*-py3-none-any.whl"))
    broken = tmp_path / "broken"
    shutil.copytree(data_dir(), broken)
    (broken / "nvidia.toml").write_text("data_date = 1\n")
    result = cli("data", "bundle", "--dir", str(broken), "-o", str(tmp_path / "x.whl"))
    assert result.exit_code == 2
    assert "does not validate" in result.stderr and not (tmp_path / "x.whl").exists()
    # An existing folder named with a trailing slash is written into.
    (tmp_path / "dist").mkdir()
    assert cli("data", "bundle", "-o", str(tmp_path / "dist") + "/").exit_code == 0
    assert list((tmp_path / "dist").glob("cudafit_matrices-*.whl"))


@pytest.mark.parametrize(
    "args, expected",
    [
        # Issue 23, item 7: `-o` into a folder that does not exist is refused as `resolve -o` refuses
        # it (one line, exit 2), before any work, and no folder is created (a typo stays visible).
        (["data", "bundle", "-o", "missing/x.whl"], "cannot write missing/x.whl: the folder missing does not exist"),
        (["data", "bundle", "-o", "missing/"], "cannot write into missing/: the folder does not exist"),
        (["data", "bundle", "-o", "missing/deeper/"], "cannot write into missing/deeper/: the folder does not exist"),
        (["data", "bundle", "-o", ""], "cannot write '': an empty path"),
        (["resolve", "torch", *MACHINE, "--format", "pip", "-o", "missing/x.txt"], "cannot write"),
        # a trailing slash names a folder: never a file called `missing`
        (["resolve", "torch", *MACHINE, "--format", "pip", "-o", "missing/"], "cannot write into missing/: the folder does not exist"),
    ],
)
def test_output_into_a_folder_that_does_not_exist_is_refused(tmp_path, monkeypatch, args, expected):
    from cudafit import update as update_module

    monkeypatch.chdir(tmp_path)
    built = []
    monkeypatch.setattr(update_module, "build_bundle", lambda *a: built.append(a) or ("x.whl", b"x"))
    result = cli(*args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"cudafit: error: {expected}"), lines
    assert not built and list(tmp_path.iterdir()) == []


# --- update from a file, the loader's choice, rollback ---------------------------------------


def test_update_from_a_file_then_resolve_uses_a_release_only_the_bundle_knows(tmp_path, home):
    wheel = make_bundle(tmp_path, newer_tree(tmp_path))
    before = cli("resolve", "torch==2.15.1", *MACHINE, "--json")
    assert before.exit_code == 1
    result = cli("data", "update", "--from", str(wheel))
    assert result.exit_code == 0, result.output
    assert "installed data of 2027-01-10" in result.output
    after = cli("resolve", "torch==2.15.1", *MACHINE, "--json")
    assert after.exit_code == 0, after.output
    assert json.loads(after.stdout)["packages"][0]["version"] == "2.15.1"
    status = json.loads(cli("data", "status", "--json").stdout)
    assert status["source"] == "updated" and status["data_date"] == "2027-01-10"
    newest = max([r.version for r in loader.load(data_dir()).torch] + [Version("2.15.1")])  # a later release line may be known too
    assert status["path"].startswith(str(home)) and status["newest"]["torch"] == str(newest)
    # rollback returns to the embedded data, and a second rollback goes forward again
    assert cli("data", "rollback").exit_code == 0
    assert json.loads(cli("data", "status", "--json").stdout)["source"] == "embedded"
    assert cli("resolve", "torch==2.15.1", *MACHINE, "--json").exit_code == 1
    assert cli("data", "rollback").exit_code == 0
    assert json.loads(cli("data", "status", "--json").stdout)["source"] == "updated"


def test_second_update_keeps_one_previous_and_prunes_older(tmp_path, home):
    first = update(str(make_bundle(tmp_path, newer_tree(tmp_path, "2027-01-10"))))
    second = update(str(make_bundle(tmp_path, newer_tree(tmp_path, "2027-02-10", "2.15.2"))))
    third = update(str(make_bundle(tmp_path, newer_tree(tmp_path, "2027-03-10", "2.15.3"))))
    assert second.previous == first.name and third.previous == second.name
    assert sorted(p.name for p in home.iterdir() if p.is_dir()) == sorted([second.name, third.name])
    rollback()
    assert loader.active()[0].data_date == "2027-02-10"


def test_an_older_bundle_changes_nothing(tmp_path, home):
    old = make_bundle(tmp_path, newer_tree(tmp_path, "2026-01-01", "2.15.1"))
    result = cli("data", "update", "--from", str(old))
    assert result.exit_code == 0 and "already up to date" in result.output
    assert not (home / datahome.STATE).exists()


def test_broken_update_falls_back_to_embedded_and_says_so_once(tmp_path, home, capsys):
    update(str(make_bundle(tmp_path, newer_tree(tmp_path))))
    current = datahome.current_root()
    assert current is not None
    (current / "nvidia.toml").write_text("this is not toml = = =\n")
    loader._warned.clear()
    matrices, source = loader.active()
    loader.active()
    assert source.kind == "embedded" and matrices.data_date != "2027-01-10"
    err = capsys.readouterr().err
    assert err.count("the installed data update is broken") == 1
    result = cli("resolve", "torch", *MACHINE, "--json")
    assert result.exit_code == 0


def test_an_update_that_lost_a_file_is_not_used_and_data_check_says_so(tmp_path, home, capsys):
    """A release file deleted from the installed update after it was checked would silently drop
    those releases: the manifest names it, so the update counts as broken."""
    update(str(make_bundle(tmp_path, newer_tree(tmp_path))))
    current = datahome.current_root()
    assert current is not None
    (current / "pytorch" / "torch-2.1.toml").unlink()
    loader._warned.clear()
    matrices, source = loader.active()
    assert source.kind == "embedded" and any(str(r.version).startswith("2.1.") for r in matrices.torch)
    assert "missing pytorch/torch-2.1.toml" in capsys.readouterr().err
    result = cli("data", "check")
    assert result.exit_code == 2 and "missing pytorch/torch-2.1.toml" in result.stderr


def test_half_written_update_is_never_used(tmp_path, home):
    # A folder that state.json does not name (an update that died while unpacking) is ignored.
    (home / ".incoming-123" / "tree" / "matrices").mkdir(parents=True)
    (home / "2027.1.10-deadbeef" / "matrices").mkdir(parents=True)
    assert loader.active()[1].kind == "embedded"


def test_rollback_without_an_update_is_an_error(home):
    result = cli("data", "rollback")
    assert result.exit_code == 2 and "no data update to roll back" in result.stderr


# --- bad bundles: one line, exit 2, the data in use unchanged ---------------------------------


def bad_bundle_cases(tmp_path: Path) -> dict[str, Path]:
    good = make_bundle(tmp_path, newer_tree(tmp_path))
    cases = {}
    blob = good.read_bytes()
    (tmp_path / "truncated.whl").write_bytes(blob[: len(blob) // 2])
    cases["truncated"] = tmp_path / "truncated.whl"

    def altered(name, data):
        return data.replace(b"2.15.1", b"2.15.9") if name.endswith("torch-2.15.toml") else data

    cases["sha256 does not match"] = rewrite(good, tmp_path / "altered.whl", altered)

    def newer_schema(name, data):
        return data.replace(b'"schema": 2', b'"schema": 3') if name == bundle.MANIFEST else data

    cases["newer schema"] = rewrite(good, tmp_path / "schema.whl", newer_schema)

    def invalid_data(name, data):
        if name == bundle.MANIFEST:
            doc = json.loads(data)
            broken = b'data_date = "2027-01-10"\nbogus_field = 1\n'
            doc["files"]["gpus.toml"] = hashlib.sha256(broken).hexdigest()
            return json.dumps(doc).encode()
        return b'data_date = "2027-01-10"\nbogus_field = 1\n' if name.endswith("/gpus.toml") else data

    cases["does not validate"] = rewrite(good, tmp_path / "invalid.whl", invalid_data)

    def escape(name, data):
        return data

    evil = rewrite(good, tmp_path / "evil.whl", escape)
    with zipfile.ZipFile(evil, "a") as archive:
        archive.writestr("../../outside.toml", b"x = 1\n")
    cases["points outside"] = evil
    (tmp_path / "text.whl").write_text("not a zip\n")
    cases["not a readable zip"] = tmp_path / "text.whl"
    return cases


def test_bad_bundles_are_refused_with_one_line(tmp_path, home):
    for expected, path in bad_bundle_cases(tmp_path).items():
        result = cli("data", "update", "--from", str(path))
        assert result.exit_code == 2, (expected, result.output)
        assert expected in result.stderr, (expected, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1
        assert "Traceback" not in result.output
        assert not (home / datahome.STATE).exists()
        assert not any(p.name.startswith(".incoming") for p in home.iterdir())


def test_check_bundle_refuses_what_update_refuses_and_installs_nothing(tmp_path, home):
    # What scripts/publish_data.py runs before an upload: the same checks, no data home touched.
    from cudafit.errors import CudafitError
    from cudafit.update import check_bundle

    for expected, path in bad_bundle_cases(tmp_path).items():
        with pytest.raises(CudafitError, match=expected):
            check_bundle(path)
    good = tmp_path / "good"
    good.mkdir()
    assert check_bundle(make_bundle(good, newer_tree(good))).data_date == "2027-01-10"
    assert not home.exists()


def test_sha256_given_by_hand_is_checked(tmp_path, home):
    wheel = make_bundle(tmp_path, newer_tree(tmp_path))
    result = cli("data", "update", "--from", str(wheel), "--sha256", "0" * 64)
    assert result.exit_code == 2 and "is not the expected" in result.stderr
    assert cli("data", "update", "--from", str(wheel), "--sha256", "xyz").exit_code == 2
    right = hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert cli("data", "update", "--from", str(wheel), "--sha256", right).exit_code == 0


def test_missing_file_folder_scheme_and_a_held_lock(tmp_path, home):
    assert "no such bundle file" in cli("data", "update", "--from", str(tmp_path / "nope.whl")).stderr
    assert "a folder; give the bundle file" in cli("data", "update", "--from", str(tmp_path)).stderr
    assert "expected a bundle file" in cli("data", "update", "--from", "ftp://example.org/b.whl").stderr
    wheel = make_bundle(tmp_path, newer_tree(tmp_path))
    with datahome.Lock(home):  # another update holds the OS lock
        result = cli("data", "update", "--from", str(wheel))
        assert result.exit_code == 2 and "another cudafit data update is running" in result.stderr
        assert cli("data", "rollback").exit_code == 2
    # The lock file stays behind, unlocked: the next update goes ahead (an OS lock is never stale).
    assert (home / datahome.LOCK).exists()
    assert cli("data", "update", "--from", str(wheel)).exit_code == 0


def test_unwritable_data_home_is_one_line(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("CUDAFIT_DATA_HOME", str(blocker / "home"))
    wheel = make_bundle(tmp_path, newer_tree(tmp_path))
    result = cli("data", "update", "--from", str(wheel))
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.output


def test_unlockable_lock_file_is_one_line(tmp_path, home, monkeypatch):
    home.mkdir(parents=True)
    real_open = datahome.os.open

    def read_only(path, *args, **kwargs):
        if str(path).endswith(datahome.LOCK):
            raise OSError(30, "Read-only file system")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(datahome.os, "open", read_only)
    result = cli("data", "update", "--from", str(make_bundle(tmp_path, newer_tree(tmp_path))))
    assert result.exit_code == 2 and "Read-only file system" in result.stderr and "Traceback" not in result.output


def test_reinstalling_the_update_in_use_keeps_the_rollback_target(tmp_path, home):
    wheel = make_bundle(tmp_path, newer_tree(tmp_path))
    first = update(str(wheel))
    current = datahome.current_root()
    assert current is not None
    (current / "nvidia.toml").write_text("broken = = =\n")  # damaged: the embedded data is in use again
    loader._warned.clear()
    repaired = update(str(wheel))
    assert repaired.changed and repaired.name == first.name and repaired.previous is None
    assert datahome.read_state() == datahome.State(current=first.name, previous=None)
    rollback()
    assert loader.active()[1].kind == "embedded"


def test_a_corrected_bundle_of_the_same_date_replaces_the_first(tmp_path, home):
    tree = newer_tree(tmp_path)
    update(str(make_bundle(tmp_path, tree)))
    name, blob = bundle.build(tree, "2027-01-10", "2027.1.10.post1")
    (tmp_path / name).write_bytes(blob)
    done = update(str(tmp_path / name))
    assert done.changed and done.manifest.version == "2027.1.10.post1"
    assert loader.active()[1].path.parent.name == done.name


def test_a_bundle_dated_in_the_future_is_refused(tmp_path, home):
    wheel = make_bundle(tmp_path, newer_tree(tmp_path, "2207-01-10"))
    result = cli("data", "update", "--from", str(wheel))
    assert result.exit_code == 2 and "dated after today" in result.stderr


def test_status_says_a_broken_update_is_not_used(tmp_path, home):
    update(str(make_bundle(tmp_path, newer_tree(tmp_path))))
    current = datahome.current_root()
    assert current is not None
    (current / "gpus.toml").write_text("nope = = =\n")
    loader._warned.clear()
    info = json.loads(cli("data", "status", "--json").stdout)
    assert info["source"] == "embedded" and info["update"]["state"].startswith("broken, not used")
    assert cli("data", "check").exit_code == 2  # the installed update is checked too


def test_leftovers_of_a_killed_update_are_removed(tmp_path, home):
    (home / ".incoming-dead" / "tree").mkdir(parents=True)
    update(str(make_bundle(tmp_path, newer_tree(tmp_path))))
    assert not (home / ".incoming-dead").exists()


def test_two_updates_at_once_one_waits_out(tmp_path, home):
    wheel = make_bundle(tmp_path, newer_tree(tmp_path))
    outcomes: list[str] = []
    gate = threading.Event()
    original = bundle.open_bundle

    def slow_open(*args, **kwargs):
        gate.wait(5)
        return original(*args, **kwargs)

    def run():
        try:
            update(str(wheel))
            outcomes.append("ok")
        except InputError as exc:
            outcomes.append(str(exc))

    import cudafit.update as update_module

    update_module.bundle.open_bundle = slow_open  # type: ignore[assignment]
    # Each thread opens the lock file itself: flock excludes a second open file description.
    try:
        first = threading.Thread(target=run)
        first.start()
        for _ in range(200):
            if (home / datahome.LOCK).exists():
                break
            threading.Event().wait(0.01)
        run()  # the second update finds the lock held
        gate.set()
        first.join()
    finally:
        update_module.bundle.open_bundle = original  # type: ignore[assignment]
    assert outcomes.count("ok") == 1
    assert any("another cudafit data update is running" in o for o in outcomes)


# --- the network (responses) -----------------------------------------------------------------


def pypi_json(*entries: tuple[str, Path, str]) -> dict:
    releases = {}
    for version, path, url in entries:
        releases[version] = [{"filename": path.name, "url": url, "digests": {"sha256": hashlib.sha256(path.read_bytes()).hexdigest()}, "size": path.stat().st_size, "yanked": False}]
    return {"info": {"name": "cudafit-matrices"}, "releases": releases}


@responses.activate
def test_update_from_pypi_takes_the_newest_bundle_it_reads(tmp_path, home):
    readable = make_bundle(tmp_path, newer_tree(tmp_path, "2027-01-10"))
    too_new = rewrite(
        make_bundle(tmp_path, newer_tree(tmp_path, "2027-05-01", "2.15.5")),
        tmp_path / "cudafit_matrices-2027.5.1-py3-none-any.whl.tmp",
        lambda name, data: data.replace(b'"schema": 2', b'"schema": 3') if name == bundle.MANIFEST else data,
    )
    too_new = too_new.rename(tmp_path / "cudafit_matrices-2027.5.1-py3-none-any.whl")
    files = "https://files.example/"
    responses.get(API, json=pypi_json(("2027.1.10", readable, files + readable.name), ("2027.5.1", too_new, files + too_new.name)))
    responses.get(files + readable.name, body=readable.read_bytes())
    responses.get(files + too_new.name, body=too_new.read_bytes())
    result = cli("data", "update")
    assert result.exit_code == 0, result.output
    assert "installed data of 2027-01-10" in result.output


@responses.activate
def test_update_before_the_bundle_project_is_published_says_what_to_do_today(home):
    # Issue 23, item 8: until the maintainers publish cudafit-matrices, PyPI answers 404 for it.
    responses.get(API, status=404)
    result = cli("data", "update")
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1, lines
    assert "cudafit-matrices is not published on PyPI yet" in lines[0]
    assert "--from FILE|URL" in lines[0] and "cudafit data bundle" in lines[0]
    assert not (home / datahome.STATE).exists()
    # A mirror that lacks it is the mirror's problem: no word about PyPI.
    mirror = "https://mirror.example/pypi/cudafit-matrices/json"
    responses.get(mirror, status=404)
    result = cli("data", "update", "--from", mirror)
    assert result.exit_code == 2 and "PyPI" not in result.stderr and mirror in result.stderr


@responses.activate
def test_pypi_digest_mismatch_is_refused(tmp_path, home):
    wheel = make_bundle(tmp_path, newer_tree(tmp_path))
    doc = pypi_json(("2027.1.10", wheel, "https://files.example/b.whl"))
    doc["releases"]["2027.1.10"][0]["digests"]["sha256"] = "1" * 64
    responses.get(API, json=doc)
    responses.get("https://files.example/b.whl", body=wheel.read_bytes())
    result = cli("data", "update")
    assert result.exit_code == 2 and "altered or damaged in transit" in result.stderr


@responses.activate
def test_network_failures_are_one_line(tmp_path, home):
    responses.get(API, body=requests.exceptions.ConnectionError("Name or service not known"))
    result = cli("data", "update")
    assert result.exit_code == 2 and "cannot reach" in result.stderr and "--from PATH" in result.stderr
    responses.replace(responses.GET, API, body=requests.exceptions.ProxyError("407 Proxy Authentication Required"))
    result = cli("data", "update")
    assert result.exit_code == 2 and "proxy" in result.stderr
    responses.replace(responses.GET, API, status=404)
    result = cli("data", "update")
    assert result.exit_code == 2 and "HTTP 404" in result.stderr
    responses.replace(responses.GET, API, body="<html>")
    assert "not PyPI's JSON API" in cli("data", "update").stderr
    assert not (home / datahome.STATE).exists()


@responses.activate
def test_truncated_download_from_a_url(tmp_path, home):
    wheel = make_bundle(tmp_path, newer_tree(tmp_path))
    url = "https://mirror.example/cudafit_matrices-2027.1.10-py3-none-any.whl"
    blob = wheel.read_bytes()
    responses.get(url, body=blob[:1000], headers={"Content-Length": str(len(blob))}, auto_calculate_content_length=False)
    result = cli("data", "update", "--from", url)
    assert result.exit_code == 2
    assert "truncated" in result.stderr or "not a readable zip" in result.stderr
    responses.replace(responses.GET, url, body=blob)
    assert cli("data", "update", "--from", url).exit_code == 0


def test_disk_full_leaves_the_data_unchanged(tmp_path, home, monkeypatch):
    wheel = make_bundle(tmp_path, newer_tree(tmp_path))
    real = Path.write_bytes

    def full(self, data):
        if "incoming" in str(self):
            raise OSError(28, "No space left on device")
        return real(self, data)

    monkeypatch.setattr(Path, "write_bytes", full)
    result = cli("data", "update", "--from", str(wheel))
    assert result.exit_code == 2 and "No space left on device" in result.stderr
    assert not (home / datahome.STATE).exists()


def test_update_never_imports_requests_for_other_commands():
    import subprocess
    import sys

    code = "import sys; from cudafit.cli import run; run(['resolve', 'torch', " + ", ".join(repr(a) for a in MACHINE) + ", '--json']); print('requests' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().endswith("False")


# --- staleness ---------------------------------------------------------------------------------


def test_stale_data_adds_one_note_and_fresh_data_none(monkeypatch):
    import datetime

    assert staleness.note("2026-12-01", datetime.date(2027, 2, 1)) is None
    text = staleness.note("2026-12-01", datetime.date(2027, 3, 15))
    assert text is not None and "104 days old" in text and "cudafit data update" in text
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(int(datetime.datetime(2027, 6, 1, tzinfo=datetime.timezone.utc).timestamp())))
    result = cli("resolve", "torch", *MACHINE, "--json")
    notes = json.loads(result.stdout)["notes"]
    assert sum("days old" in n for n in notes) == 1
    assert "days old" in cli("resolve", "torch", *MACHINE).stdout


def test_manifest_errors_name_the_field(tmp_path):
    good = make_bundle(tmp_path, data_dir())
    for field, value, message in [("data_date", "yesterday", "field 'data_date'"), ("readers", ">=99", "not by this cudafit"), ("files", [], "field 'files'")]:

        def change(name, data, field=field, value=value):
            if name != bundle.MANIFEST:
                return data
            doc = json.loads(data)
            doc[field] = value
            return json.dumps(doc).encode()

        with pytest.raises(DataError, match=re.escape(message)):
            bundle.open_bundle(rewrite(good, tmp_path / f"{field}.whl", change))


def test_stale_note_also_beside_no_answer(monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1817251200")  # 2027-08-03
    result = cli("resolve", "torch==9.9", *MACHINE, "--json")
    assert result.exit_code == 1
    assert sum("days old" in w for w in json.loads(result.stdout)["warnings"]) == 1


@responses.activate
def test_sha256_picks_the_listed_bundle_and_404_says_nothing_is_published(tmp_path, home):
    older = make_bundle(tmp_path, newer_tree(tmp_path, "2027-01-10"))
    newer = make_bundle(tmp_path, newer_tree(tmp_path, "2027-03-01", "2.15.3"))
    files = "https://files.example/"
    responses.get(API, json=pypi_json(("2027.1.10", older, files + older.name), ("2027.3.1", newer, files + newer.name)))
    responses.get(files + older.name, body=older.read_bytes())
    result = cli("data", "update", "--sha256", hashlib.sha256(older.read_bytes()).hexdigest())
    assert result.exit_code == 0 and "data of 2027-01-10" in result.output
    result = cli("data", "update", "--sha256", "2" * 64)
    assert result.exit_code == 2 and "no listed bundle has sha256" in result.stderr
    responses.replace(responses.GET, API, status=404)
    assert "cudafit-matrices is not published on PyPI yet" in cli("data", "update").stderr


@responses.activate
def test_a_bundle_url_without_a_hash_is_installed_with_a_warning(tmp_path, home):
    wheel = make_bundle(tmp_path, newer_tree(tmp_path))
    url = "https://mirror.example/" + wheel.name
    responses.get(url, body=wheel.read_bytes())
    result = cli("data", "update", "--from", url)
    assert result.exit_code == 0 and "no --sha256 given" in result.stderr
