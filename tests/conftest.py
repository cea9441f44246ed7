from __future__ import annotations

import os
import socket
import stat
import sys
import textwrap
from pathlib import Path

import pytest
import responses

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures"


_DATA_DAY = 1_796_342_400  # 2026-12-04 00:00 UTC: the newest data_date in matrices/


@pytest.fixture(scope="session")
def _shared_cache(tmp_path_factory):
    """One data cache for the whole run: its key follows the data and code, so every test still
    sees its own data, and each CLI test no longer re-parses the matrices (~120 ms)."""
    return tmp_path_factory.mktemp("cudafit-cache")


@pytest.fixture(autouse=True)
def _isolated(tmp_path_factory, monkeypatch, _shared_cache):
    """No test reaches the network or the real home directory."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("CUDAFIT_CACHE_DIR", str(_shared_cache))
    # "Today" for the staleness note: the data's own date, so outputs do not change with the calendar.
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(_DATA_DAY))

    def no_network(self, *args, **kwargs):
        raise AssertionError(f"a test tried to open a network connection to {args[0] if args else '?'}")

    # requests is mocked by `responses` below; this catches every other client, and a script
    # that forgot to go through requests.
    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket.socket, "connect_ex", no_network)
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX", "CUDAFIT_DATA_DIR", "CUDAFIT_NO_CACHE", "CUDAFIT_DATA_HOME"):
        monkeypatch.delenv(var, raising=False)
    # This machine's own PCI bus and KFD topology never leak into a test: an empty tree stands for /
    # (tests of AMD and Intel detection point it at trees copied from real machines).
    monkeypatch.setenv("CUDAFIT_SYSFS_ROOT", str(tmp_path_factory.mktemp("no-sysfs")))
    with responses.RequestsMock(assert_all_requests_are_fired=False):
        yield


@pytest.fixture(scope="session")
def matrices():
    from cudafit.loader import load

    return load(use_cache=False)


@pytest.fixture
def fake_smi(tmp_path, monkeypatch):
    """Put a fake nvidia-smi on PATH that replays a case file of tests/fixtures/nvidia-smi/."""

    def install(case: str, *, hang: bool = False) -> Path:
        bindir = tmp_path / "bin"
        bindir.mkdir(exist_ok=True)
        script = bindir / "nvidia-smi"
        script.write_text(_script(FIXTURES / "nvidia-smi" / f"{case}.toml", hang))
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
        monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
        return script

    return install


def _script(case: Path, hang: bool) -> str:
    return textwrap.dedent(f"""\
        #!{sys.executable}
        import sys, time
        if sys.version_info >= (3, 11):
            import tomllib
        else:
            import tomli as tomllib
        if {hang!r}:
            time.sleep(60)
        case = tomllib.load(open({str(case)!r}, "rb"))
        args = sys.argv[1:]
        if not args:
            part = case.get("banner", {{"rc": 0, "stdout": ""}})
        elif "compute_cap" in " ".join(args):
            part = case["query"]
        else:
            part = case.get("query_old", case["query"])
        sys.stdout.write(part["stdout"])
        sys.exit(part["rc"])
        """)
