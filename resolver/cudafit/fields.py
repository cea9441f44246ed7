"""The field readers and validators every data file uses: one table of a file (Entry) with the
context for an error naming file, entry and field; readers for versions, Pythons, platforms,
compute capabilities, pins and evidence grades; the one way to say unknown (UNKNOWN)."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Any, Callable, Optional

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from cudafit.errors import DataError
from cudafit.records import CC, GRADES, PLATFORMS, Evidence, parse_cc

SCHEMA = 2
UNKNOWN = "unknown"
PYTHON_RE = re.compile(r"^3\.\d{1,2}$")
CUDA_TAG_RE = re.compile(r"^cu(\d+)$")


class Entry:
    """One table of a data file, with the context needed for a precise error message."""

    def __init__(self, file: str, where: str, raw: Any, sources: Optional[set[str]] = None):
        if not isinstance(raw, dict):
            raise DataError(f"{file}: {where}: expected a table, got {raw!r}")
        self.file, self.where, self.raw, self.sources = file, where, raw, sources
        self.used: set[str] = set()

    def fail(self, key: str, problem: str) -> DataError:
        value = self.raw.get(key, None)
        shown = f" (got {value!r})" if key in self.raw else ""
        return DataError(f"{self.file}: {self.where}: field '{key}': {problem}{shown}")

    def get(self, key: str, check: Callable[[Any], Any], *, required: bool = True, default: Any = None) -> Any:
        self.used.add(key)
        if key not in self.raw:
            if required:
                raise self.fail(key, "missing")
            return default
        try:
            return check(self.raw[key])
        except (ValueError, TypeError, InvalidVersion, InvalidSpecifier) as exc:
            raise self.fail(key, str(exc)) from None

    def finish(self) -> None:
        self.used.update(("notes", "source"))
        unknown = sorted(set(self.raw) - self.used)
        if unknown:
            raise DataError(f"{self.file}: {self.where}: unknown field(s) {', '.join(unknown)}")
        if self.sources is not None:
            src = self.raw.get("source")
            if src is None:
                raise self.fail("source", "missing: every fact names its source")
            if not isinstance(src, list) or not src or not all(isinstance(s, str) for s in src):
                raise self.fail("source", "expected a non-empty list of keys of [sources]")
            for key in src:
                if key not in self.sources:
                    raise self.fail("source", f"names {key!r}, which is not in this file's [sources]")
        notes = self.raw.get("notes")
        if notes is not None and not isinstance(notes, str):
            raise self.fail("notes", "expected a string")


def read_bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError("expected true or false")
    return value


def read_str(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise TypeError("expected a non-empty string")
    return value


def read_version(value: Any) -> Version:
    return Version(read_str(value))


_DRIVER = re.compile(r"^\d{3,}(\.\d+){0,2}$")


def read_driver_or_unknown(value: Any) -> Optional[str]:
    if value == UNKNOWN:
        return None
    if not isinstance(value, str) or not _DRIVER.match(value):
        raise ValueError('expected a driver version like "525.60.13", a branch like "570", or "unknown"')
    return value


def read_str_list(value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise TypeError("expected a list of strings")
    return value


def read_cc_set(value: Any) -> frozenset[CC]:
    return frozenset(parse_cc(v) for v in read_str_list(value))


def read_cc_set_or_unknown(value: Any) -> Optional[frozenset[CC]]:
    return None if value == UNKNOWN else read_cc_set(value)


def read_pythons(value: Any) -> frozenset[str]:
    items = read_str_list(value)
    for item in items:
        if not PYTHON_RE.match(item):
            raise ValueError(f"{item!r} is not a Python version like 3.12")
    if not items:
        raise ValueError("expected at least one Python version")
    return frozenset(items)


def read_platforms(value: Any) -> frozenset[str]:
    items = read_str_list(value)
    for item in items:
        if item not in PLATFORMS:
            raise ValueError(f"{item!r} is not one of {', '.join(PLATFORMS)}")
    return frozenset(items)


def read_date(value: Any) -> str:
    import datetime

    text = read_str(value)
    datetime.date.fromisoformat(text)
    return text


def read_pins(value: Any) -> dict[str, str]:
    from packaging.utils import canonicalize_name

    if not isinstance(value, dict):
        raise TypeError("expected a table of distribution = specifier")
    pins: dict[str, str] = {}
    for name, spec in value.items():
        if not isinstance(spec, str):
            raise TypeError(f'{name}: expected a specifier string ("" for any version)')
        SpecifierSet(spec)
        pins[str(canonicalize_name(name))] = spec
    return pins


def read_pins_or_unknown(value: Any) -> Optional[dict[str, str]]:
    return None if value == UNKNOWN else read_pins(value)


def read_exact_pins(value: Any) -> dict[str, str]:
    pins = read_pins(value)
    for name, spec in pins.items():
        if not spec.startswith("==") or "," in spec or "*" in spec:
            raise ValueError(f"{name}: expected an exact pin ==VERSION (got {spec!r})")
    return pins


def read_header(file: str, doc: dict) -> set[str]:
    top = Entry(file, "top level", {k: v for k, v in doc.items() if not isinstance(v, (dict, list)) or k == "sources"})
    schema = top.get("schema", lambda v: v)
    if schema != SCHEMA:
        raise top.fail("schema", f"this cudafit reads schema {SCHEMA}")
    top.get("data_date", read_date)
    sources = doc.get("sources")
    if not isinstance(sources, dict) or not sources:
        raise DataError(f"{file}: top level: a [sources] table naming every source is required")
    for key, text in sources.items():
        if not isinstance(text, str) or not text.strip():
            raise DataError(f"{file}: [sources]: '{key}' needs a description of the source")
    return set(sources)


def entries(file: str, doc: dict, key: str, label: str) -> list[dict]:
    items = doc.get(key, [])
    if not isinstance(items, list):
        raise DataError(f"{file}: '{key}' must be an array of tables ([[{key}]])")
    return items


def table_entries(file: str, doc: dict, table: str, name_key: str, dates: list[str], also: tuple[str, ...] = ()) -> Iterator[Entry]:
    """Each [[table]] of a file that holds that table alone (besides its header, and the tables
    `also` names, read apart), as an Entry named by its `name_key`; the caller finishes each. The
    file's date joins `dates`."""
    only_keys(file, doc, {table, *also})
    sources = read_header(file, doc)
    dates.append(doc["data_date"])
    for i, raw in enumerate(entries(file, doc, table, table), 1):
        yield Entry(file, f"[[{table}]] #{i} ({raw.get(name_key, '?') if isinstance(raw, dict) else '?'})", raw, sources)


def read_grade(value: Any) -> str:
    """A whole entry's grade: measured, declared or reported (an unknown fact has no entry)."""
    if value not in GRADES:
        raise ValueError("expected measured, declared or reported")
    return str(value)


def only_keys(file: str, doc: dict, allowed: set[str]) -> None:
    unknown = sorted(set(doc) - allowed - {"schema", "data_date", "sources", "notes"})
    if unknown:
        raise DataError(f"{file}: top level: unknown field(s) {', '.join(unknown)}")


def read_positive_number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ValueError("expected a positive number")
    return value


def read_macos_fields(e: Entry, platforms: frozenset[str]) -> dict[str, dict[str, str]]:
    return {
        "macos_min": e.get("macos_min", functools.partial(_macos_map, platforms=platforms), required=False, default={}),
        "macos_min_by_python": e.get("macos_min_by_python", _macos_by_python, required=False, default={}),
    }


def _macos_version(value: Any) -> str:
    text = read_str(value)
    if not re.fullmatch(r"\d{2}\.\d{1,2}", text):
        raise ValueError(f"{text!r} is not a macOS version like 14.0")
    return text


def _macos_map(value: Any, platforms: frozenset[str]) -> dict[str, str]:
    if not isinstance(value, dict):
        raise TypeError("expected a table of macOS platform = minimum macOS")
    for platform, version in value.items():
        if platform not in platforms or not platform.startswith("macos"):
            raise ValueError(f"{platform!r} is not a macOS platform of this release")
        _macos_version(version)
    return dict(value)


def _macos_by_python(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        raise TypeError("expected a table of Python = minimum macOS")
    read_pythons(list(value))
    return {python: _macos_version(version) for python, version in value.items()}


def read_cuda_tags(value: Any) -> list[str]:
    tags = read_str_list(value)
    for tag in tags:
        if not CUDA_TAG_RE.match(tag):
            raise ValueError(f"{tag!r} is not a CUDA build tag like cu134")
    return tags


def read_companion(value: Any) -> str:
    return str(read_version(value))


def read_python_map(value: Any) -> dict[str, frozenset[str]]:
    if not isinstance(value, dict):
        raise TypeError("expected a table of platform = [Python versions]")
    out = {}
    for platform, pythons in value.items():
        if platform not in PLATFORMS:
            raise ValueError(f"{platform!r} is not one of {', '.join(PLATFORMS)}")
        out[platform] = read_pythons(pythons)
    return out


def read_evidence(e: Entry, known: dict[str, bool], optional: set[str]) -> dict[str, Evidence]:
    """The grade and sources of each known fact. A fact is unknown in one way only: its value is
    "unknown" and it has no evidence; a known fact without evidence, or evidence for an unknown
    fact, is an error. `optional` facts take the grade of `exists` when they have none."""
    raw = e.get("evidence", lambda v: v if isinstance(v, dict) else fail_type("a table of fact = { grade, source }"))
    out: dict[str, Evidence] = {}
    for fact, item in raw.items():
        where = f"evidence.{fact}"
        if fact not in known:
            raise e.fail(where, f"names {fact!r}, which is not a fact of this build (expected one of {', '.join(known)})")
        if not known[fact]:
            raise e.fail(where, f'{fact} is "unknown"; an unknown fact has no evidence (remove it, or give the value)')
        if not isinstance(item, dict) or set(item) - {"grade", "source"}:
            raise e.fail(where, 'expected { grade = "measured"|"declared"|"reported", source = [keys] }')
        grade = item.get("grade")
        if grade not in GRADES:
            raise e.fail(where, f'grade must be one of {", ".join(GRADES)} (got {grade!r}); an unknown fact is written "unknown"')
        source = item.get("source")
        if not isinstance(source, list) or not source or not all(isinstance(k, str) for k in source):
            raise e.fail(where, "source: expected a non-empty list of keys of [sources]")
        for key in source:
            if e.sources is not None and key not in e.sources:
                raise e.fail(where, f"source names {key!r}, which is not in this file's [sources]")
        out[fact] = Evidence(grade, tuple(source))
    for fact, is_known in known.items():
        if is_known and fact not in out:
            if fact in optional and "exists" in out:
                out[fact] = out["exists"]
            else:
                raise e.fail(f"evidence.{fact}", f"{fact} is known but has no grade: add evidence.{fact} = {{ grade, source }}")
    return out


def fail_type(expected: str) -> Any:
    raise TypeError(f"expected {expected}")


def line_header(file: str, doc: dict, prefix: str, allowed: set[str], dates: list[str]) -> tuple[set[str], str]:
    only_keys(file, doc, {"line", *allowed})
    sources = read_header(file, doc)
    dates.append(doc["data_date"])
    line = doc.get("line")
    expected = file.removeprefix(prefix).removesuffix(".toml")
    if line != expected:
        raise DataError(f"{file}: top level: field 'line': expected {expected!r} to match the file name (got {line!r})")
    return sources, line


def line_releases(file: str, doc: dict, sources: set[str], line: str) -> Iterator[tuple[int, Entry, Version]]:
    """(index, entry, version) of each [[release]] of a release-line file, its version checked."""
    for i, raw in enumerate(entries(file, doc, "release", "release"), 1):
        e = Entry(file, f"[[release]] #{i} ({raw.get('version', '?') if isinstance(raw, dict) else '?'})", raw, sources)
        version = e.get("version", read_version)
        if f"{version.major}.{version.minor}" != line:
            raise e.fail("version", f"does not belong to release line {line}")
        yield i, e, version


def read_cuda(e: Entry, key: str, toolkits: dict, *, required: bool = True) -> Optional[Version]:
    cuda = e.get(key, lambda v: None if v == UNKNOWN else read_version(v), required=required)
    if cuda is not None:
        if len(cuda.release) != 2:
            raise e.fail(key, "expected MAJOR.MINOR")
        if (cuda.major, cuda.minor) not in toolkits:
            raise e.fail(key, "names a CUDA version with no [[toolkit]] in nvidia.toml")
    return cuda


def read_arch_lists(e: Entry, cuda: Optional[Version], toolkits: dict, *, any_minor: bool = False, required: bool = False) -> tuple:
    """sass/ptx, checked against what the toolkit can target. With any_minor (JAX: cuda is the
    oldest runtime it accepts, the build itself used a newer one) any toolkit of the major counts."""
    sass = e.get("sass", read_cc_set_or_unknown, required=required)
    ptx = e.get("ptx", read_cc_set_or_unknown, required=required)
    if cuda is None:
        return sass, ptx
    if any_minor:
        chosen = [t for k, t in toolkits.items() if k[0] == cuda.major and t.targets is not None]
        targets = frozenset().union(*(t.targets for t in chosen)) if chosen else None
        where = f"any CUDA {cuda.major}.x"
    else:
        toolkit = toolkits.get((cuda.major, cuda.minor))
        targets = toolkit.targets if toolkit is not None else None
        where = f"CUDA {cuda}"
    for field, ccs in (("sass", sass), ("ptx", ptx)):
        if ccs and targets is not None:
            impossible = sorted(ccs - targets)
            if impossible:
                shown = ", ".join(f"{a}.{b}" for a, b in impossible)
                raise e.fail(field, f"{where} cannot target {shown} (nvidia.toml [[toolkit]] targets)")
    return sass, ptx
