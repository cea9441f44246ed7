"""Read matrices/wheels.toml: where each release of the GPU ecosystem's binary distributions
installs, per PyPI's file lists (scripts/wheel_inventory.py writes it). Optional: data without it
(an update bundle of an older cudafit) simply has no such facts."""

from __future__ import annotations

from typing import Any

from packaging.utils import canonicalize_name
from packaging.version import Version

from cudafit.errors import DataError
from cudafit.fields import Entry, entries, only_keys, read_bool, read_header, read_pythons, read_str, read_str_list
from cudafit.records import GRADES, PLATFORMS, PURE, WheelFiles

FILE = "wheels.toml"


def read_grade(value: Any) -> str:
    if value not in GRADES:
        raise ValueError(f"expected one of {', '.join(GRADES)}")
    return str(value)


def read_requirements(value: Any) -> list[str]:
    """Requires-Dist lines: PEP 508 requirements without an `extra` marker (what every install gets)."""
    from packaging.requirements import InvalidRequirement, Requirement

    out = read_str_list(value)
    for text in out:
        try:
            wanted = Requirement(text)
        except InvalidRequirement as exc:
            raise ValueError(f"{text!r} is not a PEP 508 requirement: {exc}") from None
        if wanted.marker is not None and "extra" in str(wanted.marker):
            raise ValueError(f"{text!r}: a requirement of an extra is not what every install gets")
    return out


def read_rows(value: Any) -> list[Any]:
    if not isinstance(value, list) or not value:
        raise TypeError("expected a non-empty array of tables ([[distribution.files]])")
    return value


def read(file: str, doc: dict, dates: list[str]) -> dict[str, tuple[WheelFiles, ...]]:
    """distribution -> its releases' files, newest first."""
    only_keys(file, doc, {"distribution"})
    sources = read_header(file, doc)
    dates.append(doc["data_date"])
    out: dict[str, tuple[WheelFiles, ...]] = {}
    for i, raw in enumerate(entries(file, doc, "distribution", "distribution"), 1):
        label = raw.get("name", "?") if isinstance(raw, dict) else "?"
        e = Entry(file, f"[[distribution]] #{i} ({label})", raw, sources)
        name = e.get("name", read_str)
        if name != canonicalize_name(name):
            raise e.fail("name", f"expected the normalized name {canonicalize_name(name)!r}")
        if name in out:
            raise e.fail("name", "listed twice")
        e.get("grade", read_grade)
        rows = e.get("files", read_rows)
        e.finish()
        releases: dict[Version, WheelFiles] = {}
        for j, row in enumerate(rows, 1):
            r = Entry(file, f"[[distribution]] {name}, [[distribution.files]] #{j}", row)
            versions = r.get("versions", lambda value: [Version(v) for v in read_str_list(value)])
            sdist = r.get("sdist", read_bool)
            wheels = {p: r.get(p, read_pythons) for p in (*PLATFORMS, PURE) if p in row}
            requires = tuple(r.get("requires", read_requirements, required=False) or ())
            r.finish()
            for version in versions:
                if version in releases:
                    raise r.fail("versions", f"{version} is listed twice")
                releases[version] = WheelFiles(version, sdist, wheels, requires)
        out[name] = tuple(sorted(releases.values(), key=lambda w: w.version, reverse=True))
    if not out:
        raise DataError(f"{file}: no [[distribution]] entries")
    return out
