"""`cudafit data update / rollback / status / bundle`: fresh data without a new cudafit release.

An update is taken only when all of it holds: the bundle's bytes (PyPI's sha256, or the one the
user gives), its manifest (schema, readers, every file's sha256) and the data itself (the loader's
full validation). It is unpacked beside the data in use, and the switch is one rename of
state.json, under a lock; the bundle before it stays for `data rollback`. Offline by default: only
`data update` touches the network, and `--from PATH` needs none.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Callable, NamedTuple, Optional

from packaging.version import InvalidVersion, Version

from cudafit import bundle, datahome, staleness
from cudafit.errors import DataError, InputError
from cudafit.records import Matrices

if TYPE_CHECKING:
    from cudafit.loader import Source

# What `data update` says while PyPI has no cudafit-matrices project: what works today.
NOT_PUBLISHED = (
    "{distribution} is not published on PyPI yet ({url}: HTTP 404), so `cudafit data update` has no default source until the maintainers publish it; "
    "install a bundle with `cudafit data update --from FILE|URL` (a checkout builds one with `cudafit data bundle -o DIR/`)"
)


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


def check_bundle(path: Path, label: Optional[str] = None) -> bundle.Manifest:
    """Every check `data update` makes on a bundle before installing it (member names and sizes,
    the manifest, each file's sha256, a date no later than today, the loader's validation of the
    unpacked data), without installing it: what a maintainer runs before publishing one."""
    where = label or str(path)
    manifest, blobs = bundle.open_bundle(path, label)
    _refuse_future(manifest, where)
    with tempfile.TemporaryDirectory(prefix="cudafit-bundle-check-") as tmp:
        _unpack(Path(tmp), manifest, blobs, where)
    return manifest


def update(source: Optional[str] = None, sha256: Optional[str] = None, home: Optional[Path] = None, say: Optional[Callable[[str], None]] = None) -> Installed:
    """Fetch (PyPI's JSON API by default; a mirror's JSON API, a bundle URL or a file with
    `source`), check and install the newest bundle this cudafit reads. `say` receives warnings."""
    from cudafit.loader import active

    say = say or (lambda text: None)
    base = home or datahome.home()
    try:
        base.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the data folder {base}: {exc.strerror}") from None
    with datahome.Lock(base):
        _forget_dead_work(base)
        in_use, in_use_source = active()
        work = Path(tempfile.mkdtemp(prefix=".incoming-", dir=base))
        try:
            path, label, manifest, blobs = _obtain(source, sha256, work, say)
            _refuse_future(manifest, label)
            state = datahome.read_state(base)
            if _key(manifest.data_date, manifest.version) <= _in_use_key(in_use.data_date, in_use_source, base, state):
                damaged = datahome.state_problem(base)
                if damaged:
                    # nothing newer to install: the damaged state names no update cudafit can use, so
                    # it goes, and the data cudafit shipped with is the one in use, without a warning
                    damaged_path = base / datahome.STATE
                    shutil.rmtree(damaged_path) if damaged_path.is_dir() else damaged_path.unlink(missing_ok=True)
                    say(f"removed the damaged update state ({damaged}); the data cudafit shipped with is in use")
                return Installed(manifest, "", label, None, False)
            name = f"{manifest.version}-{_sha256(path)[:8]}"
            unpacked = _unpack(work / "tree", manifest, blobs, label)
            target = base / name
            if target.exists():
                shutil.rmtree(target)
            unpacked.rename(target)
            # Reinstalling the bundle in use (a repair) keeps what came before it for rollback.
            previous = state.previous if state.current == name else state.current
            datahome.write_state(base, datahome.State(current=name, previous=previous))
            _prune(base, keep={name, previous})
            return Installed(manifest, name, label, previous, True)
        except OSError as exc:
            raise InputError(f"cannot install the data update under {base}: {exc.strerror or exc}; the data in use is unchanged") from None
        finally:
            shutil.rmtree(work, ignore_errors=True)


def _key(data_date: str, version: str) -> tuple[str, Version]:
    """How new a bundle is: its data date, then its version (2027.1.10.post1 corrects 2027.1.10)."""
    try:
        return data_date, Version(version)
    except InvalidVersion:
        return data_date, Version("0")


def _in_use_key(data_date: str, source: Source, base: Path, state: datahome.State) -> tuple[str, Version]:
    if source.kind == "updated" and state.current:
        manifest = datahome.read_manifest(base / state.current)
        if manifest is not None:
            return _key(data_date, str(manifest.get("version", "0")))
    return _key(data_date, bundle.version_of(data_date))


def _refuse_future(manifest: bundle.Manifest, label: str) -> None:
    # A date ahead of the clock would win over every honest bundle that follows, for years.
    if staleness.age_days(manifest.data_date) < -2:
        raise DataError(f"{label}: data of {manifest.data_date} is dated after today ({staleness.today()}); check this machine's clock or the bundle")


def _forget_dead_work(base: Path) -> None:
    # Under the lock no other update runs, so an unpacking folder left here belongs to a dead one.
    for child in base.glob(".incoming-*"):
        shutil.rmtree(child, ignore_errors=True)


def _obtain(source: Optional[str], sha256: Optional[str], work: Path, say: Callable[[str], None]) -> tuple[Path, str, bundle.Manifest, dict[str, bytes]]:
    """(bundle file, where it came from, its manifest, its data files)."""
    if source and "://" in source and not source.startswith(("http://", "https://", "file://")):
        raise InputError(f"--from {source}: expected a bundle file, a file:// path, or an http(s) URL")
    if source and not source.startswith(("http://", "https://")):
        path = Path(source[len("file://") :] if source.startswith("file://") else source)
        if path.is_dir():
            raise InputError(f"--from {source}: a folder; give the bundle file in it (cudafit_matrices-*.whl)")
        if not path.is_file():
            raise InputError(f"--from {source}: no such bundle file")
        if sha256:
            _check_sha256(path, sha256, str(path))
        return (path, str(path), *bundle.open_bundle(path))
    from cudafit import fetch

    if source and source.split("?")[0].endswith(".whl"):
        if not sha256:
            say(f"{source}: no --sha256 given, so only the bundle's own manifest vouches for it; pin it with --sha256 HEX")
        path = fetch.download(source, work / "bundle.whl", sha256)
        return (path, source, *bundle.open_bundle(path, source))
    try:
        listed = fetch.candidates(source or fetch.PYPI_JSON)
    except fetch.NotPublished:
        if source:
            raise
        # The default source is PyPI's cudafit-matrices project, which works once the maintainers
        # publish it (scripts/publish_data.py); until then, say what works today.
        raise InputError(NOT_PUBLISHED.format(distribution=bundle.DISTRIBUTION, url=fetch.PYPI_JSON)) from None
    if sha256:
        listed = [r for r in listed if r.sha256 and r.sha256.lower() == sha256.lower()]
        if not listed:
            raise InputError(f"{source or fetch.PYPI_JSON}: no listed bundle has sha256 {sha256.lower()}")
    refused: list[str] = []
    for remote in listed:
        if remote.sha256 is None:
            say(f"{remote.url}: the index gives no sha256, so only the bundle's own manifest vouches for it")
        path = fetch.download(remote.url, work / "bundle.whl", remote.sha256)
        try:
            opened = bundle.open_bundle(path, remote.url)
        except bundle.NotForThisCudafit as exc:
            refused.append(f"{remote.version}: {exc}")  # too new for this cudafit: try an older one
            continue
        if refused:
            say(f"newer data needs a newer cudafit ({refused[0]}); installing the newest bundle this one reads")
        return (path, remote.url, *opened)
    raise InputError(f"no bundle that this cudafit reads: {refused[0] if refused else 'none listed'}")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _check_sha256(path: Path, expected: str, label: str) -> None:
    found = _sha256(path)
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
        # Name the file as the bundle holds it, not as this temporary folder does.
        problem = (problems[0] if problems else "unreadable").replace(f"{data}{os.sep}", "").replace(str(data), "matrices")
        raise DataError(f"{label}: the bundle's data does not validate: {problem}")
    if matrices.data_date != manifest.data_date:
        raise DataError(f"{label}: the manifest says data of {manifest.data_date}, the files say {matrices.data_date}")
    return tree


def _manifest_json(manifest: bundle.Manifest) -> str:
    import json

    return json.dumps(manifest._asdict(), indent=2, sort_keys=True) + "\n"


def _prune(base: Path, keep: set[Optional[str]]) -> None:
    from cudafit.loader import forget_cache

    for child in base.iterdir():
        if child.is_dir() and not child.name.startswith(".") and child.name not in keep:
            forget_cache(child / "matrices")
            shutil.rmtree(child, ignore_errors=True)


def rollback(home: Optional[Path] = None) -> datahome.State:
    """Swap the data in use with the one before it (an update, or the embedded data)."""
    base = home or datahome.home()
    if not (base / datahome.STATE).exists():
        raise InputError(f"no data update to roll back ({base} holds none); cudafit uses the data it shipped with")
    with datahome.Lock(base):
        problem = datahome.state_problem(base)
        if problem:
            raise InputError(f"the data update's state is damaged ({problem}); `cudafit data update` installs the newest data afresh")
        state = datahome.read_state(base)
        if state.current is None and state.previous is None:
            raise InputError(f"no data update to roll back ({base} holds none); cudafit uses the data it shipped with")
        if state.previous is not None and not (base / state.previous / "matrices").is_dir():
            raise InputError(f"the previous data ({base / state.previous}) is gone; nothing to roll back to")
        swapped = datahome.State(current=state.previous, previous=state.current)
        datahome.write_state(base, swapped)
    return swapped


def status() -> dict:
    """Which data a run uses, how old it is, and the newest release it knows per framework."""
    from cudafit.loader import active
    from cudafit.version import __version__

    matrices, source = active()
    state = datahome.read_state()
    return {
        "source": source.kind,
        "data_date": matrices.data_date,
        "age_days": max(0, staleness.age_days(matrices.data_date)),
        "path": str(source.path),
        "schema": bundle.SCHEMA,
        "cudafit": __version__,
        "newest": newest_releases(matrices),
        "update": {"home": str(datahome.home()), "current": state.current, "previous": state.previous, "state": _update_state(source, matrices)},
    }


def _update_state(source: Source, in_use: Matrices) -> str:
    """What became of the installed update: none, in use, broken, or older than the embedded data."""
    from cudafit.loader import load

    root = datahome.current_root()
    if root is None:
        problem = datahome.state_problem()
        return f"broken, not used: {problem}" if problem else "none"
    if source.kind == "updated":
        return "in use"
    try:
        load(root)
    except DataError as exc:
        return f"broken, not used: {exc}"
    return "older than the data cudafit shipped with, not used"


def newest_releases(matrices: Matrices) -> dict[str, Optional[str]]:
    return {family: (str(max(r.version for r in releases)) if releases else None) for family, releases in matrices.frameworks.items()}
