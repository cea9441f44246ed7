"""The hook as pre-commit runs it: the real `pre-commit try-repo` installs cudafit from this
checkout into its own environment and runs `cudafit-check` on a sample repository. Offline: pip
gets cudafit's dependencies from wheels rebuilt out of this test environment, never an index."""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEPENDENCIES = ("click", "packaging", "platformdirs", "tomlkit", "tomli", "ruamel.yaml", "setuptools", "requests", "urllib3", "idna", "charset-normalizer", "certifi")


def _wheel_from_installed(name: str, into: Path) -> None:
    """Zip an installed pure-Python distribution back into a wheel (its RECORD lists the files)."""
    dist = importlib.metadata.distribution(name)
    stem = f"{dist.metadata['Name'].replace('-', '_').replace('.', '_')}-{dist.version}"
    with zipfile.ZipFile(into / f"{stem}-py3-none-any.whl", "w") as whl:
        for file in dist.files or []:
            path = Path(str(file.locate()))
            if file.parts[0] == ".." or "__pycache__" in file.parts or not path.is_file():
                continue
            whl.write(path, str(file))


@pytest.mark.skipif(shutil.which("git") is None, reason="pre-commit needs git")
def test_hook_runs_in_real_pre_commit(tmp_path):
    pytest.importorskip("pre_commit")
    for name in DEPENDENCIES:
        try:
            importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            pytest.skip(f"{name} is not installed here: the hook's offline install needs it")
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for name in DEPENDENCIES:
        _wheel_from_installed(name, wheels)
    repo = tmp_path / "sample"
    repo.mkdir()
    (repo / "requirements.txt").write_text("torch==2.5.1+cu124\n")
    (repo / "README.md").write_text("not a dependency file\n")
    env = {
        **os.environ,
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(wheels),
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "CUDAFIT_CACHE_DIR": str(tmp_path / "cache"),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    env.pop("PIP_EXTRA_INDEX_URL", None)
    env.pop("VIRTUAL_ENV", None)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, env=env)
    subprocess.run(["git", "add", "."], cwd=repo, check=True, env=env)
    proc = subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "cudafit-check", "--all-files"],
        cwd=repo,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, output
    assert "requirements.txt:1:1: CF001" in output and "README.md" not in output.split("cudafit check")[-1]
    (repo / "requirements.txt").write_text("--index-url https://download.pytorch.org/whl/cu124\ntorch==2.5.1+cu124\n")
    subprocess.run(["git", "add", "."], cwd=repo, check=True, env=env)
    proc = subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "cudafit-check", "--all-files"], cwd=repo, capture_output=True, text=True, env=env, timeout=600
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
