"""The repository stands on its own: no file points outside it, and every document it names is in it
(issue 23, item 6: the README, matrices/README.md, docstrings and tests pointed at a folder beside
the checkout that no user or contributor has)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Written so that this file does not match itself.
OUTSIDE = re.compile(r"(\.\.|/work)/shared\b")
# What a walk of a release archive (no .git) leaves out: the folders .gitignore names.
IGNORED = {".git", "build", "dist", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis", ".whl"}
# A path to a document of this repository, as prose and docstrings write it.
DOC_MENTION = re.compile(r"(?<![\w/.-])((?:docs|matrices)/[\w.-]+\.md|(?:ARCHITECTURE|CONTRIBUTING|DEVELOPERS|CHANGELOG)\.md)\b")
MARKDOWN_LINK = re.compile(r"\]\(([^)\s]+)\)")


def tracked_files() -> list[Path]:
    """The files git tracks; in a release archive (no .git), every file but the ignored folders."""
    if (ROOT / ".git").exists() and shutil.which("git"):
        listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True).stdout.decode()
        return [ROOT / name for name in listed.split("\0") if name and (ROOT / name).is_file()]
    return [
        p
        for p in ROOT.rglob("*")
        if p.is_file() and not any(part in IGNORED or part.startswith(".venv") or part.endswith(".egg-info") for part in p.relative_to(ROOT).parts)
    ]


def text_of(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None  # a binary file (a wheel fixture) names no path


@pytest.fixture(scope="module")
def texts() -> dict[str, str]:
    found = {p.relative_to(ROOT).as_posix(): text_of(p) for p in tracked_files()}
    return {name: text for name, text in found.items() if text is not None}


def test_no_file_points_outside_the_repository(texts):
    assert len(texts) > 100
    hits = [f"{name}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}" for name, text in texts.items() for m in OUTSIDE.finditer(text)]
    assert not hits, "bring what these point at into the repository and link there:\n" + "\n".join(hits)


def test_every_document_named_is_in_the_repository(texts):
    # Prose and code only: real projects' files in tests/corpus, and the data's sources (matrices/,
    # docs/sources.md), name other projects' documents (jax's installation page), not ours.
    ours = {name: text for name, text in texts.items() if not name.startswith("tests/corpus/") and name.endswith((".md", ".py"))}
    missing = []
    for name, text in ours.items():
        # CHANGELOG.md is history: it names files as they were called then (a renamed document).
        for m in DOC_MENTION.finditer(text) if name not in ("docs/sources.md", "CHANGELOG.md") else ():
            if not (ROOT / m.group(1)).is_file():
                missing.append(f"{name}: {m.group(1)}")
        if name.endswith(".md"):
            for m in MARKDOWN_LINK.finditer(text):
                target = m.group(1).split("#")[0]
                if target and "://" not in target and not target.startswith("mailto:") and not (ROOT / name).parent.joinpath(target).exists():
                    missing.append(f"{name}: link {m.group(1)}")
    assert not missing, "named but not in the repository:\n" + "\n".join(missing)


def test_the_contributor_documents_exist():
    for name in ("ARCHITECTURE.md", "docs/cli.md", "docs/sources.md", "matrices/README.md"):
        assert (ROOT / name).is_file(), name
