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
CORPUS = ROOT / "tests" / "corpus"
# cudafit's dependencies, and the build backend's (hatchling: pathspec, pluggy, trove-classifiers).
DEPENDENCIES = ("click", "packaging", "platformdirs", "tomlkit", "rtoml", "tomli", "dockerfile-parse", "ruamel.yaml", "hatchling", "pathspec", "pluggy", "trove-classifiers", "requests", "urllib3", "idna", "charset-normalizer", "certifi")


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
# try-repo reads the hook repository with git (`git ls-remote`): a release archive has no .git.
@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="pre-commit try-repo needs this checkout's git repository; a release archive has none")
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
    # Every valid file of the corpus, where uv's oracle recorded it: the hook passes, and shows its advice.
    files = valid_corpus_files()
    corpus = tmp_path / "corpus"
    for local in files:
        (corpus / local).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(CORPUS / local, corpus / local)
    subprocess.run(["git", "init", "-q"], cwd=corpus, check=True, env=env)
    subprocess.run(["git", "add", "."], cwd=corpus, check=True, env=env)
    proc = subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "cudafit-check", "--all-files"], cwd=corpus, capture_output=True, text=True, env=env, timeout=600
    )
    output = proc.stdout + proc.stderr
    assert len(files) >= 50 and proc.returncode == 0, output
    assert "CF008" in output and "Traceback" not in output  # warnings are shown (verbose), never block


def valid_corpus_files() -> list[str]:
    """Corpus files uv installs in every environment its oracle recorded, that cudafit's data finds
    nothing wrong with (a CUDA-major clash uv cannot see) and pip does not refuse, less those with an error in environments
    the oracle was not asked about alone (yolov5's export extra on Python 3.13: tensorflow <= 2.19
    has no wheel there; the oracle asked 3.12). An error in an environment uv installs keeps its
    file here: the hook must not block it."""
    import test_corpus

    # confirmed by a fact uv cannot see, or by pip (an include loop, which uv reads through)
    by_data = {local for local, _f, why in test_corpus.classify()["confirmed"] if why in ("data", "pip")}
    out = []
    for entry in test_corpus.MANIFEST:
        local = entry["local"]
        verdicts = test_corpus._verdicts(local)
        if not verdicts or any(v != "ok" for v in verdicts.values()) or local in by_data:
            continue
        errors = [f for f in test_corpus.findings()[local] if f.severity == "error"]
        if any(f.environments and not any(k in verdicts for k in _keys(f)) for f in errors):
            continue
        out.append(local)
    return out


def _keys(finding) -> list[str]:
    """The oracle's keys (platform/python/selection) a finding's environments name."""
    out = []
    for key in finding.environments:
        platform, python, selection = key.split("/", 2)
        out.append(f"{platform}/{'3.12' if python == '*' else python}/{selection}")
    return out
