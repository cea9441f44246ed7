"""`cudafit data update / rollback / status / bundle`: fresh data without a new cudafit release.

An update is taken only when all of it holds: the bundle's bytes (PyPI's sha256, or the one the
user gives), its manifest (schema, readers, every file's sha256) and the data itself (the loader's
full validation). It is unpacked beside the data in use, and the switch is one rename of
state.json, under a lock; the bundle before it stays for `data rollback`. Offline by default: only
`data update` touches the network, and `--from PATH` needs none.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from pathlib import Path
from typing import NamedTuple, Optional

from cudafit import bundle, datahome, staleness
from cudafit.errors import DataError, InputError
from cudafit.records import Matrices


class Installed(NamedTuple):
    manifest: bundle.Manifest
    name: str  # the folder under the data home
    source: str  # where the bundle came from
    previous: Optional[str]  # what state.json named before (None: the embedded data)
    changed: bool  # False where the data in use was already as new


def build_bundle(root: Optional[Path], version: Optional[str] = None) -> tuple[str, bytes]:
    """A bundle of the matrices folder `root` (default: the embedded data), validated first."""
    from cudafit.loader import check, data_dir

    root = root or data_dir()
    matrices, problems = check(root)
    if problems or matrices is None:
        raise DataError(f"{root}: the data does not validate, no bundle built: {problems[0] if problems else 'unreadable'}")
    return bundle.build(root, matrices.data_date, version)


def update(source: Optional[str] = None, sha256: Optional[str] = None, home: Optional[Path] = None) -> Installed:
    """Fetch (PyPI's JSON API by default; a mirror's JSON API, a bundle URL or a file with
    `source`), check and install the newest bundle this cudafit reads."""
    from cudafit.loader import active

    base = home or datahome.home()
    try:
        base.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the data folder {base}: {exc.strerror}") from None
    with datahome.Lock(base):
        in_use, _ = active()
        work = Path(tempfile.mkdtemp(prefix=".incoming-", dir=base))
        try:
            path, label, manifest, blobs = _obtain(source, sha256, work)
            if manifest.data_date <= in_use.data_date:
                return Installed(manifest, "", label, None, False)
            name = f"{manifest.version}-{hashlib.sha256(path.read_bytes()).hexdigest()[:8]}"
            unpacked = _unpack(work / "tree", manifest, blobs, label)
            state = datahome.read_state(base)
            target = base / name
            if target.exists():
                shutil.rmtree(target)
            unpacked.rename(target)
            datahome.write_state(base, datahome.State(current=name, previous=state.current))
            _prune(base, keep={name, state.current})
            return Installed(manifest, name, label, state.current, True)
        except OSError as exc:
            raise InputError(f"cannot install the data update under {base}: {exc.strerror or exc}; the data in use is unchanged") from None
        finally:
            shutil.rmtree(work, ignore_errors=True)


def _obtain(source: Optional[str], sha256: Optional[str], work: Path) -> tuple[Path, str, bundle.Manifest, dict[str, bytes]]:
    """(bundle file, where it came from, its manifest, its data files)."""
    if source and not source.startswith(("http://", "https://")):
        path = Path(source[len("file://") :] if source.startswith("file://") else source)
        if not path.is_file():
            raise InputError(f"--from {source}: no such bundle file")
        if sha256:
            _check_sha256(path, sha256, str(path))
        return (path, str(path), *bundle.open_bundle(path))
    from cudafit import fetch

    if source and source.split("?")[0].endswith(".whl"):
        path = fetch.download(source, work / "bundle.whl", sha256)
        return (path, source, *bundle.open_bundle(path, source))
    refused = []
    for remote in fetch.candidates(source or fetch.PYPI_JSON):
        path = fetch.download(remote.url, work / "bundle.whl", sha256 or remote.sha256)
        try:
            return (path, remote.url, *bundle.open_bundle(path, remote.url))
        except bundle.NotForThisCudafit as exc:
            refused.append(f"{remote.version}: {exc}")  # too new for this cudafit: try an older one
    raise InputError(f"no bundle that this cudafit reads: {refused[0] if refused else 'none listed'}")


def _check_sha256(path: Path, expected: str, label: str) -> None:
    found = hashlib.sha256(path.read_bytes()).hexdigest()
    if found != expected.lower():
        raise InputError(f"{label}: sha256 {found} is not the expected {expected.lower()}")


def _unpack(tree: Path, manifest: bundle.Manifest, blobs: dict[str, bytes], label: str) -> Path:
    from cudafit.loader import check

    data = tree / "matrices"
    for rel, blob in blobs.items():
        target = data / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(blob)
    (tree / "manifest.json").write_text(_manifest_json(manifest), encoding="utf-8")
    matrices, problems = check(data)
    if problems or matrices is None:
        raise DataError(f"{label}: the bundle's data does not validate: {problems[0] if problems else 'unreadable'}")
    if matrices.data_date != manifest.data_date:
        raise DataError(f"{label}: the manifest says data of {manifest.data_date}, the files say {matrices.data_date}")
    return tree


def _manifest_json(manifest: bundle.Manifest) -> str:
    import json

    return json.dumps(manifest._asdict(), indent=2, sort_keys=True) + "\n"


def _prune(base: Path, keep: set[Optional[str]]) -> None:
    for child in base.iterdir():
        if child.is_dir() and not child.name.startswith(".") and child.name not in keep:
            shutil.rmtree(child, ignore_errors=True)


def rollback(home: Optional[Path] = None) -> datahome.State:
    """Swap the data in use with the one before it (an update, or the embedded data)."""
    base = home or datahome.home()
    state = datahome.read_state(base)
    if state.current is None and state.previous is None:
        raise InputError(f"no data update to roll back ({base} holds none); cudafit uses the data it shipped with")
    if state.previous is not None and not (base / state.previous / "matrices").is_dir():
        raise InputError(f"the previous data ({base / state.previous}) is gone; nothing to roll back to")
    with datahome.Lock(base):
        swapped = datahome.State(current=state.previous, previous=state.current)
        datahome.write_state(base, swapped)
    return swapped


def status() -> dict:
    """Which data a run uses, how old it is, and the newest release it knows per framework."""
    from cudafit import __version__
    from cudafit.loader import active

    matrices, source = active()
    state = datahome.read_state()
    return {
        "source": source.kind,
        "data_date": matrices.data_date,
        "age_days": staleness.age_days(matrices.data_date),
        "path": str(source.path),
        "schema": bundle.SCHEMA,
        "cudafit": __version__,
        "newest": newest_releases(matrices),
        "update": {"home": str(datahome.home()), "current": state.current, "previous": state.previous},
    }


def newest_releases(matrices: Matrices) -> dict[str, Optional[str]]:
    return {family: (str(max(r.version for r in releases)) if releases else None) for family, releases in matrices.frameworks.items()}
