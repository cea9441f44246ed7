"""The wheel carries the data: cudafit works from a wheel installed in a fresh venv, outside the
repository, with no network. Slow (builds a wheel and a venv), so it runs once per session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    pytest.importorskip("setuptools", reason="building the wheel offline needs setuptools in the test environment")
    work = tmp_path_factory.mktemp("wheel")
    dist = work / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                    "-w", str(dist), str(ROOT)], check=True, capture_output=True, timeout=300)
    wheel = next(dist.glob("cudafit-*.whl"))
    env = work / "venv"
    venv.create(env, with_pip=True)
    python = env / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    # The dependencies come from this test environment (no network); cudafit itself only from the wheel.
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    deps = sorted({str(Path(m.__file__).resolve().parent.parent) for m in _dependency_modules()})
    Path(site, "test-deps.pth").write_text("\n".join(deps) + "\n")
    subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", str(wheel)],
                   check=True, capture_output=True, timeout=300)
    return env, wheel


def _dependency_modules():
    import click
    import packaging
    import platformdirs
    import tomlkit

    mods = [click, packaging, platformdirs, tomlkit]
    if sys.version_info < (3, 11):
        import tomli

        mods.append(tomli)
    return mods


def test_wheel_contains_the_data(installed):
    import zipfile

    _env, wheel = installed
    names = zipfile.ZipFile(wheel).namelist()
    assert "cudafit/matrices/nvidia.toml" in names
    assert "cudafit/matrices/pytorch/index.toml" in names
    assert any(n.startswith("cudafit/matrices/pytorch/torch-2.") for n in names)


def test_installed_cudafit_resolves_offline_outside_the_repo(installed, tmp_path):
    env, _wheel = installed
    exe = env / ("Scripts/cudafit.exe" if os.name == "nt" else "bin/cudafit")
    environ = {**os.environ, "CUDAFIT_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": ""}
    environ.pop("CUDAFIT_DATA_DIR", None)
    proc = subprocess.run([str(exe), "resolve", "torch<2.9", "--os", "linux", "--arch", "x86_64", "--python", "3.12",
                           "--driver", "535.104.05", "--gpu", "NVIDIA GeForce RTX 3090", "--json"],
                          capture_output=True, text=True, cwd=tmp_path, env=environ, timeout=60)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["packages"][0]["requirement"] == "torch==2.8.0+cu128"
    where = subprocess.run([str(env / "bin" / "python"), "-c", "import cudafit.loader as l; print(l.data_dir())"],
                           capture_output=True, text=True, cwd=tmp_path, env=environ).stdout
    assert str(env) in where and str(ROOT) not in where


def test_every_package_is_listed_for_the_wheel():
    # setuptools ships only the packages pyproject.toml lists; an editable install finds the rest
    # on disk, so a forgotten one shows only in a built wheel (and a stale build/ folder hides it).
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    on_disk = {".".join(("cudafit", *p.parent.relative_to(ROOT / "resolver" / "cudafit").parts)) for p in (ROOT / "resolver" / "cudafit").rglob("__init__.py")}
    assert on_disk <= listed, f"add to [tool.setuptools] packages: {sorted(on_disk - listed)}"
