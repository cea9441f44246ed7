"""Find the data a run uses (the embedded matrices/, an installed update, a folder given) and
load its typed Matrices record.

Parsing and validating the TOML (cudafit.matrices_reader) takes tens of milliseconds, which would
dominate a pre-commit run, so the built record is cached (pickled) under a key made of the data
files and this package's code; any change to either rebuilds it. A cache that cannot be read or
written is skipped, and a damaged one is rebuilt. The key is a CRC-32 of the files' names, sizes
and modification times, like Python's bytecode cache: reading and hashing every data file on each
run would cost more than the cached load.
"""

from __future__ import annotations

import os
import pickle
import sys
import time
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, Optional

from packaging.version import Version

from cudafit.errors import DataError
from cudafit.frameworks import families, reader_files
from cudafit.records import Matrices
from cudafit.version import __version__


def data_dir() -> Path:
    """Where the data lives: $CUDAFIT_DATA_DIR, else the cudafit.matrices package (the wheel and
    editable installs map matrices/ there), else the source checkout."""
    override = os.environ.get("CUDAFIT_DATA_DIR")
    if override:
        return Path(override)
    inside = Path(__file__).with_name("matrices")
    if inside.is_dir():  # the wheel's layout, found without the import system's search
        return inside
    import importlib.util

    spec = importlib.util.find_spec("cudafit.matrices")
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    return Path(__file__).resolve().parents[2] / "matrices"


def data_files(root: Path) -> list[str]:
    """The data files under `root`, as paths relative to it: *.toml, then */*.toml, each level
    sorted (as the glob patterns read; os.scandir and strings, so that a cache hit builds no Path
    per file). An entry is taken by its name: one that cannot be read (a dangling link) is then
    reported by whoever reads it, never skipped; a folder that cannot be listed is an error."""
    try:
        with os.scandir(root) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        entries = []  # no such folder: said below, as for an empty one
    top = [e.name for e in entries if e.name.endswith(".toml")]
    below = []
    for folder in entries:
        if folder.is_dir():
            try:
                with os.scandir(folder.path) as it:
                    below += sorted(f"{folder.name}/{e.name}" for e in it if e.name.endswith(".toml"))
            except OSError as exc:
                raise DataError(f"{folder.path}: cannot list the data folder: {exc.strerror}") from None
    if not top and not below:
        raise DataError(f"{root}: no data files (*.toml) found")
    return top + sorted(below)


def _cache_dir() -> Optional[Path]:
    if os.environ.get("CUDAFIT_NO_CACHE"):
        return None
    override = os.environ.get("CUDAFIT_CACHE_DIR")
    if override:
        return Path(override)
    import platformdirs

    return Path(platformdirs.user_cache_dir("cudafit", appauthor=False))


class Source(NamedTuple):
    """Which data a run uses: "embedded" (shipped with cudafit, or $CUDAFIT_DATA_DIR, or a folder
    given), or "updated" (installed by `cudafit data update`)."""

    kind: str
    path: Path


_warned: set[str] = set()


def load(root: Optional[Path] = None, *, use_cache: bool = True) -> Matrices:
    return active(root, use_cache=use_cache)[0]


def active(root: Optional[Path] = None, *, use_cache: bool = True) -> tuple[Matrices, Source]:
    """The data a run uses: `root` where given; else the newer of the embedded data and the
    installed update. A broken update never stops a run: the embedded data is used, and stderr
    says so once."""
    if root is not None or os.environ.get("CUDAFIT_DATA_DIR"):
        root = data_dir() if root is None else root
        return _load(root, use_cache), Source("embedded", root)
    embedded_root = data_dir()
    embedded = _load(embedded_root, use_cache)
    from cudafit import datahome

    updated_root = datahome.current_root()
    if updated_root is None:
        problem = datahome.state_problem() if (datahome.home() / datahome.STATE).exists() else None
        if problem and problem not in _warned:
            _warned.add(problem)
            print(
                f"cudafit: warning: the data update's state is damaged ({problem}); using the data cudafit shipped with. `cudafit data update` repairs it",
                file=sys.stderr,
            )
        return embedded, Source("embedded", embedded_root)
    try:
        files = data_files(updated_root)
        differs = datahome.unlike_manifest(updated_root, files)
        if differs:
            raise DataError(differs)
        updated = _load(updated_root, use_cache, files)
    except DataError as exc:
        if str(updated_root) not in _warned:
            _warned.add(str(updated_root))
            repair = "`cudafit data rollback` or `cudafit data update` repairs it"
            print(f"cudafit: warning: the installed data update is broken ({exc}); using the data cudafit shipped with. {repair}", file=sys.stderr)
        return embedded, Source("embedded", embedded_root)
    if updated.data_date >= embedded.data_date:  # same date: a corrected bundle (2027.1.10.post1)
        return updated, Source("updated", updated_root)
    return embedded, Source("embedded", embedded_root)


def _load(root: Path, use_cache: bool, files: Optional[list[str]] = None) -> Matrices:
    files = data_files(root) if files is None else files
    cache = _cache_dir() if use_cache else None
    cache_file = None
    if cache is not None:
        # One cache per data folder (an updated copy, a test's copy) and install of cudafit, each
        # replacing only its own stale entries.
        cache_file = cache / f"matrices-{_root_key(root)}-{_INSTALL}-{_cache_key(root, files)}.pickle"
        try:
            with open(cache_file, "rb") as fh:
                head, blobs, wheel_blobs, tables = pickle.load(fh)
            # A cache of another shape (edited, or written by code that knew other families) is rebuilt.
            if (
                isinstance(head, Matrices)
                and isinstance(blobs, dict)
                and set(blobs) == set(families())
                and isinstance(wheel_blobs, dict)
                and isinstance(tables, dict)
                and set(tables) == set(DEFERRED)
            ):
                rebuild = lambda: _build(root, files, cache_file)  # noqa: E731
                lazy: dict[str, Any] = {name: Table(blob, rebuild, name) for name, blob in tables.items()}
                return head._replace(
                    frameworks=Families(blobs, rebuild),
                    wheel_files=Families(wheel_blobs, rebuild, "wheel_files"),
                    cuda_images=lazy["cuda_images"],
                    ubuntu_pythons=lazy["ubuntu_pythons"],
                    image_repositories=lazy["image_repositories"],
                    ngc_containers=lazy["ngc_containers"],
                    torch_variant_labels=lazy["torch_variant_labels"],
                )
        except Exception:
            pass  # missing, stale or unreadable cache: rebuild below
    return _build(root, files, cache_file)


def _build(root: Path, files: list[str], cache_file: Optional[Path]) -> Matrices:
    from cudafit.matrices_reader import build, read_all

    paths = [root / rel for rel in files]
    matrices = build(root, paths, read_all(paths))
    if cache_file is not None:
        _write_cache(cache_file, matrices)
    return matrices


class Families(Mapping[str, tuple]):
    """Each family's releases (or, as `wheel_files`, each distribution's files), unpickled from the
    cache the first time they are asked for. A blob that does not unpickle (a damaged cache) is read
    again from the data files, which also writes a sound cache."""

    def __init__(self, blobs: dict[str, bytes], rebuild: Callable[[], Matrices], field: str = "frameworks") -> None:
        self._blobs = blobs
        self._rebuild = rebuild
        self._field = field
        self._loaded: dict[str, tuple] = {}

    def __getitem__(self, family: str) -> tuple:
        try:
            return self._loaded[family]
        except KeyError:
            blob = self._blobs[family]
        try:
            releases = pickle.loads(blob)
        except Exception:
            releases = None
        if not isinstance(releases, tuple):
            releases = tuple(getattr(self._rebuild(), self._field)[family])
        self._loaded[family] = releases
        return releases

    def __contains__(self, family: object) -> bool:
        # asked of every pin a check reads: a look-up, not a KeyError raised and caught
        return family in self._blobs

    def __iter__(self) -> Iterator[str]:
        return iter(self._blobs)

    def __len__(self) -> int:
        return len(self._blobs)

    def __reduce__(self) -> tuple:
        return dict, (dict(self.items()),)


# Tables only some commands read (containers, Dockerfiles, wheel variants): unpickled when first
# read, so a resolve does not import their record classes at start-up
DEFERRED = ("cuda_images", "ubuntu_pythons", "image_repositories", "ngc_containers", "torch_variant_labels")


class Table(Sequence[Any]):
    """One of the DEFERRED tables, unpickled from the cache the first time it is read (a damaged
    blob is read again from the data files)."""

    def __init__(self, blob: bytes, rebuild: Callable[[], Matrices], field: str) -> None:
        self._blob = blob
        self._rebuild = rebuild
        self._field = field
        self._rows: Optional[tuple] = None

    def _loaded(self) -> tuple:
        if self._rows is None:
            try:
                rows = pickle.loads(self._blob)
            except Exception:
                rows = None
            self._rows = rows if isinstance(rows, tuple) else tuple(getattr(self._rebuild(), self._field))
        return self._rows

    def __getitem__(self, index: Any) -> Any:
        return self._loaded()[index]

    def __len__(self) -> int:
        return len(self._loaded())

    def __iter__(self) -> Iterator[Any]:
        return iter(self._loaded())

    def __eq__(self, other: object) -> bool:
        return self._loaded() == (tuple(other) if isinstance(other, Table) else other)

    def __hash__(self) -> int:
        return hash(self._loaded())

    def __reduce__(self) -> tuple:
        return tuple, (self._loaded(),)


def forget_cache(root: Path) -> None:
    """Drop the cached records of a data folder that is going away (a pruned update)."""
    cache = _cache_dir()
    if cache is not None:
        for old in cache.glob(f"matrices-{_root_key(root)}-*.pickle"):
            old.unlink(missing_ok=True)


def _root_key(root: Path) -> str:
    return f"{zlib.crc32(str(root.resolve()).encode()):08x}"


# This install of cudafit: installs that read one data folder (the update in the user's data
# home, a shared $CUDAFIT_DATA_DIR) each keep their own cache instead of replacing each other's.
_INSTALL = f"{zlib.crc32(os.path.dirname(os.path.abspath(__file__)).encode()):08x}"
# Another install's cache of the same folder unwritten this long is taken as left behind; an
# install still in use writes its own again on its next run.
_ABANDONED_S = 30 * 24 * 3600


def _cache_key(root: Path, files: list[str]) -> str:
    """What the built record depends on, as Python's own bytecode cache does it: each file's name,
    size and modification time (no file is read), cudafit's version and the interpreter's. The
    code that shapes the record counts too: the loader and the readers, the record types (the
    providers define their own), the GPU-name keys."""
    here = os.path.dirname(__file__)
    import packaging

    # The pickle holds packaging's Version objects: another packaging may not read them back.
    parts = [__version__, sys.version, packaging.__version__]
    readers = (
        *("loader.py", "matrices_reader.py", "wheels_data.py", "records.py", "gpus.py", "fields.py"),
        *(
            "frameworks/build_data.py",
            "gpu_tables.py",
            "gpu_tables_data.py",
            "variant_labels.py",
            "cuda_images.py",
            "containers/data.py",
            "kernel_data.py",
            "kernel_fit.py",
        ),
    )
    code = [os.path.join(here, n) for n in readers]
    folder = str(root)
    for name, path in [*((rel, os.path.join(folder, rel)) for rel in files), *((os.path.basename(c), c) for c in [*code, *reader_files()])]:
        try:
            st = os.stat(path)
        except OSError as exc:
            raise DataError(f"{path}: cannot read data file: {exc.strerror}") from None
        parts.append(f"{name}:{st.st_size}:{st.st_mtime_ns}")
    text = "\0".join(parts).encode()
    return f"{zlib.crc32(text):08x}-{len(files)}"


def _drop_stale(cache_file: Path) -> None:
    """This install's other caches of the same data folder go; another install's only once abandoned."""
    root_key = cache_file.name.split("-")[1]
    now = time.time()
    for old in cache_file.parent.glob(f"matrices-{root_key}-*.pickle"):
        try:
            if old.name.startswith(f"matrices-{root_key}-{_INSTALL}-") or now - old.stat().st_mtime > _ABANDONED_S:
                old.unlink()
        except OSError:
            pass  # gone already (another run's cleanup), or not ours to remove


def _write_cache(cache_file: Path, matrices: Matrices) -> None:
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        _drop_stale(cache_file)
        tmp = cache_file.with_suffix(f".{os.getpid()}.tmp")
        # Each family is pickled apart, so a run unpickles only the frameworks it asks about.
        blobs = {family: pickle.dumps(_shared(tuple(releases), {}), protocol=pickle.HIGHEST_PROTOCOL) for family, releases in matrices.frameworks.items()}
        wheel_blobs = {name: pickle.dumps(tuple(files), protocol=pickle.HIGHEST_PROTOCOL) for name, files in matrices.wheel_files.items()}
        tables = {name: pickle.dumps(tuple(getattr(matrices, name)), protocol=pickle.HIGHEST_PROTOCOL) for name in DEFERRED}
        head = _shared(
            matrices._replace(
                frameworks={}, wheel_files={}, cuda_images=(), ubuntu_pythons=(), image_repositories=(), ngc_containers=(), torch_variant_labels=()
            ),
            {},
        )
        tmp.write_bytes(pickle.dumps((head, blobs, wheel_blobs, tables), protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(tmp, cache_file)
    except OSError:
        pass  # a read-only home costs speed, not correctness


def check(root: Optional[Path] = None) -> tuple[Optional[Matrices], list[str]]:
    """Validate every data file: (the record, or None when a shared file is broken; every problem)."""
    root = data_dir() if root is None else root
    from cudafit.matrices_reader import build, read_all

    files = [root / rel for rel in data_files(root)]
    problems: list[str] = []
    try:
        matrices = build(root, files, read_all(files, problems), problems)
    except DataError as exc:
        problems.append(str(exc))
        if not str(exc).startswith(f"{root}: the release-line files were not checked"):
            problems.append(f"{root}: the release-line files were not checked: they need the shared files above to load first")
        return None, problems
    return matrices, problems


def _shared(value: Any, seen: dict) -> Any:
    """`value` with its equal immutable parts (strings, versions, frozensets, tuples, records) made
    one object each, and what was one object (a build that patch releases share, with its dicts)
    kept one. Pickle writes an object it has seen as a back-reference, so loading then builds each
    value once: half the time and a third less cache for the torch releases. Parts are told apart
    by type and by the identity of their own (already shared) parts, so 1 and True, or (1,) and
    (True,), are never merged; dicts and lists are never merged, only kept as they were shared."""
    by_id = ("id", id(value))
    if by_id in seen:
        return seen[by_id]
    kind = type(value)
    if kind is str or kind is Version:
        result = seen.setdefault((kind, str(value)), value)
    elif kind is frozenset:
        items = frozenset(_shared(item, seen) for item in value)
        result = seen.setdefault((kind, frozenset(map(id, items))), items)
    elif isinstance(value, tuple):
        parts = [_shared(item, seen) for item in value]
        made = kind(*parts) if hasattr(kind, "_fields") else kind(parts)
        result = seen.setdefault((kind, tuple(map(id, parts))), made)
    elif kind is dict:
        result = {_shared(k, seen): _shared(v, seen) for k, v in value.items()}
    elif kind is list:
        result = [_shared(item, seen) for item in value]
    else:
        return value
    seen[by_id] = result
    seen[("alive", id(value))] = value  # the original outlives the walk, so its id is not reused
    return result
