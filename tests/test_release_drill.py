"""scripts/release_drill.py: the next release line it writes is the newest one with every version raised."""

from __future__ import annotations

import shutil
import sys

from maint_scripts import script

from cudafit.loader import data_dir, load

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib


def test_the_next_line_is_the_newest_raised(tmp_path):
    drill = script("release_drill")
    matrices = tmp_path / "matrices"
    shutil.copytree(data_dir(), matrices)
    newest = max(r.version for r in load().torch)
    added = drill.next_line(matrices)
    assert added.name == f"torch-{newest.major}.{newest.minor + 1}.toml"
    doc = tomllib.loads(added.read_text())
    assert doc["line"] == f"{newest.major}.{newest.minor + 1}"
    assert all(r["version"].startswith(doc["line"] + ".") for r in doc["release"])
    assert all(all(v.startswith(doc["line"] + ".") for v in b.get("releases", [])) for b in doc["build"])
    drilled = load(matrices, use_cache=False)
    assert max(r.version for r in drilled.torch).release[:2] == (newest.major, newest.minor + 1)
