"""The wheel carries the data: cudafit works from a wheel installed in a fresh venv, outside the
repository, with no network. Slow (builds a wheel and a venv), so it runs once per session."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


# What a release archive holds that the build reads (pyproject.toml names the rest of the tree nowhere).
SOURCES = ("pyproject.toml", "README.md", "resolver", "matrices")


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """A copy of the sources the wheel is built from, so that what the build leaves behind shows."""
    src = tmp_path_factory.mktemp("checkout")
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copyfile(ROOT / name, src / name)
    return src


@pytest.fixture(scope="module")
def built(checkout, tmp_path_factory):
    """The checkout's files before the build, and the wheel `pip wheel .` builds from it."""
    pytest.importorskip("hatchling", reason="building the wheel offline needs the build backend (hatchling) in the test environment")
    before = _files(checkout)
    dist = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                    "-w", str(dist), str(checkout)], check=True, capture_output=True, timeout=300)
    return before, next(dist.glob("cudafit-*.whl"))


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}


@pytest.fixture(scope="module")
def installed(built, tmp_path_factory):
    _before, wheel = built
    work = tmp_path_factory.mktemp("wheel")
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


def test_building_leaves_the_checkout_as_it_was(built, checkout):
    # `pip install .` from a release archive or a checkout must not leave build/ or *.egg-info
    # behind (setuptools wrote both into the source tree; a stale build/ even hid files from later
    # wheels). Issue 23, item 5.
    before, _wheel = built
    assert _files(checkout) == before, sorted(_files(checkout) ^ before)


def test_every_package_and_data_file_ships_in_the_wheel(built):
    import zipfile

    _before, wheel = built
    names = set(zipfile.ZipFile(wheel).namelist())
    code = ROOT / "resolver" / "cudafit"
    packages = {"/".join(("cudafit", *p.relative_to(code).parts)) for p in code.rglob("*.py") if "__pycache__" not in p.parts}
    data = {"cudafit/matrices/" + p.relative_to(ROOT / "matrices").as_posix() for p in (ROOT / "matrices").rglob("*") if p.suffix in (".toml", ".md")}
    assert packages <= names, f"missing from the wheel: {sorted(packages - names)}"
    assert data <= names, f"missing from the wheel: {sorted(data - names)}"
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
