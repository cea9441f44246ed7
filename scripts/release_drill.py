"""The data-release drill (CONTRIBUTING.md): in a copy of this checkout, add the next torch release
line as data only (the newest line's file with every version raised), regenerate the snapshots
(CUDAFIT_REGEN=1) and run the whole suite. It passes when no test depends on which release is the
newest except the snapshots, which follow the data.

    python scripts/release_drill.py            # exit 0: the drill passes
    python scripts/release_drill.py --keep     # keep the copy to read its diff

Offline; it takes as long as the suite twice over."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOTS = ["tests/test_resolve_cases.py", "tests/test_emit.py", "tests/test_readme.py"]


def next_line(matrices: Path) -> Path:
    """Write torch-X.(Y+1).toml from the newest line's file; return its path."""
    files = sorted(matrices.glob("pytorch/torch-*.toml"), key=lambda p: tuple(int(x) for x in p.stem.split("-")[1].split(".")))
    newest = files[-1]
    major, minor = (int(x) for x in newest.stem.split("-")[1].split("."))
    old, new = f"{major}.{minor}", f"{major}.{minor + 1}"
    text = newest.read_text()
    text = text.replace(f'line = "{old}"', f'line = "{new}"')
    text = re.sub(rf'"{re.escape(old)}\.(\d+)"', lambda m: f'"{new}.{m.group(1)}"', text)
    # the companions move on a line too, or they would name two torch releases
    text = re.sub(r'^(torchvision = ")0\.(\d+)\.\d+"', lambda m: f'{m.group(1)}0.{int(m.group(2)) + 1}.0"', text, flags=re.M)
    target = newest.with_name(f"torch-{new}.toml")
    target.write_text(text)
    return target


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep the copy and print where it is")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="cudafit-drill-"))
    copy = work / "repo"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(".git", ".venv*", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"))
    added = next_line(copy / "matrices")
    print(f"drill: added {added.relative_to(copy)} as data only", file=sys.stderr)
    env = {**os.environ, "PYTHONPATH": str(copy / "resolver")}
    pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    subprocess.run([*pytest, *SNAPSHOTS], cwd=copy, env={**env, "CUDAFIT_REGEN": "1"}, check=False)
    code = subprocess.run([*pytest, "tests"], cwd=copy, env=env, check=False).returncode
    print(f"drill: the suite {'passes' if code == 0 else 'fails'} after a data-only release and regeneration", file=sys.stderr)
    if args.keep:
        print(f"drill: the copy is {copy}", file=sys.stderr)
    else:
        shutil.rmtree(work)
    return 0 if code == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
