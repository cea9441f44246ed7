"""`cudafit check` as a function: paths and settings in, findings and read errors out. Each file
is read alone, so one unreadable file is reported and the others are still checked."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable, NamedTuple, Optional

from cudafit.check.environments import PLATFORMS, environments
from cudafit.check.evaluate import check_document, file_environments
from cudafit.check.files import discover
from cudafit.check.model import SEVERITIES, Document, Finding
from cudafit.check.rules import BY_CODE, RULES, Target
from cudafit.errors import InputError
from cudafit.records import Matrices

_SUPPRESS = re.compile(r"#\s*cudafit:\s*ignore(?:\[(?P<codes>[A-Za-z0-9_,\s]+)\])?")


class Settings(NamedTuple):
    """`[tool.cudafit]`: which rules run (codes or prefixes, as ruff's select/ignore) and targets."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    targets: tuple[dict, ...] = ()
    source: str = ""  # the file they came from, for messages
    # The least severe finding that fails the run: "warning" (errors and warnings), "error" (a
    # hook that lets advice pass), "note" (--strict: what cudafit cannot check fails too).
    fail_on: str = "warning"
    resolve: bool = False  # ask uv about each environment too (CF016); needs uv and the network
    uv: str = ""  # the uv that --resolve runs
    # the platforms the project installs on ("linux-x86_64", ...): the others are not judged; () all
    platforms: tuple[str, ...] = ()

    def wants(self, code: str) -> bool:
        if self.select and not any(code.startswith(s) for s in self.select):
            return False
        return not any(code.startswith(s) for s in self.ignore)


class Report(NamedTuple):
    findings: tuple[Finding, ...]
    errors: tuple[str, ...]  # files that could not be read, one line each
    files: int  # files checked


def settings_from(table: Optional[dict[str, Any]], source: str) -> Settings:
    """Validate `[tool.cudafit]`, naming the file and key of anything wrong."""
    if not table:
        return Settings(source=source)

    def codes(key: str) -> tuple[str, ...]:
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise InputError(f'{source}: [tool.cudafit] {key}: expected a list of rule codes like ["CF006"]')
        unknown = [v for v in value if not any(code.startswith(v.upper()) for code in BY_CODE)]
        if unknown:
            raise InputError(f"{source}: [tool.cudafit] {key}: unknown rule code {', '.join(unknown)} (known: {RULES[0].code}-{RULES[-1].code})")
        return tuple(v.upper() for v in value)

    targets = table.get("targets", [])
    if not isinstance(targets, list) or not all(isinstance(t, dict) for t in targets):
        raise InputError(f"{source}: [tool.cudafit] targets: expected an array of tables ([[tool.cudafit.targets]])")
    unknown_keys = sorted(set(table) - {"select", "ignore", "targets", "strict", "fail-on", "resolve", "platforms"})
    if unknown_keys:
        raise InputError(
            f"{source}: [tool.cudafit]: unknown key {', '.join(unknown_keys)} (known: select, ignore, strict, fail-on, resolve, platforms, targets)"
        )
    platforms = table.get("platforms", [])
    if not isinstance(platforms, list) or not platforms and "platforms" in table or any(p not in PLATFORMS for p in platforms):
        raise InputError(f"{source}: [tool.cudafit] platforms: expected a list of some of {', '.join(PLATFORMS)}, got {platforms!r}")
    flags = {}
    for key in ("strict", "resolve"):
        flags[key] = table.get(key, False)
        if not isinstance(flags[key], bool):
            raise InputError(f"{source}: [tool.cudafit] {key}: expected true or false, got {flags[key]!r}")
    fail_on = table.get("fail-on", "note" if flags["strict"] else "warning")
    if fail_on not in SEVERITIES:
        raise InputError(f'{source}: [tool.cudafit] fail-on: expected "error", "warning" or "note", got {fail_on!r}')
    if flags["strict"] and fail_on != "note":
        raise InputError(f'{source}: [tool.cudafit]: strict = true is fail-on = "note"; give one of them')
    return Settings(codes("select"), codes("ignore"), tuple(targets), source, fail_on, flags["resolve"], platforms=tuple(platforms))


_TARGET_KEYS = {"name", "driver", "gpu", "gpus", "compute-capability", "gfx", "os", "arch", "python", "jetson", "jetpack", "macos"}


def _key(field: str) -> str:
    return field.replace("_", "-")


def targets_from(settings: Settings, matrices: Matrices) -> tuple[Target, ...]:
    """Each `[[tool.cudafit.targets]]` as a described machine: os and arch default to Linux x86_64,
    and a Python left out is not checked (never this machine's)."""
    from cudafit.machine import MachineOptions, build_machine

    out = []
    for number, table in enumerate(settings.targets, 1):
        name = str(table.get("name", f"target {number}"))
        where = f"{settings.source}: [[tool.cudafit.targets]] #{number} ({name})"
        extra = sorted(set(table) - _TARGET_KEYS)
        if extra:
            raise InputError(f"{where}: unknown key {', '.join(extra)} (known: {', '.join(sorted(_TARGET_KEYS))})")
        gpus = table.get("gpus", table.get("gpu", []))
        ccs = table.get("compute-capability", [])
        jetpack = _text(table.get("jetpack"), where, "jetpack")
        jetson = bool(table.get("jetson", False)) or jetpack is not None
        opts = MachineOptions(
            driver=_text(table.get("driver"), where, "driver"),
            gpus=tuple(_texts(gpus, where, "gpu")),
            compute_capabilities=tuple(_texts(ccs, where, "compute-capability")),
            os=_text(table.get("os"), where, "os") or "linux",
            arch=_text(table.get("arch"), where, "arch") or ("aarch64" if jetson else "x86_64"),
            python=_text(table.get("python"), where, "python"),
            jetson=jetson,
            macos=_text(table.get("macos"), where, "macos"),
            gfx=tuple(_texts(table.get("gfx", []), where, "gfx")),
            jetpack=jetpack,
        )
        try:
            machine = build_machine(opts, matrices)
        except InputError as exc:
            raise InputError(f"{where}: {exc.worded(_key)}") from None  # each field named as the table names it
        if opts.python is None:
            machine = machine._replace(python=None)
        out.append(Target(name, machine))
    return tuple(out)


def _text(value: Any, where: str, key: str) -> Optional[str]:
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise InputError(f"{where}: {key}: expected text, got {value!r}")
    return value


def _texts(value: Any, where: str, key: str) -> list[str]:
    values = value if isinstance(value, list) else [value]
    return [t for t in (_text(v, where, key) for v in values) if t]


def suppressed(finding: Finding, doc: Document) -> bool:
    lines = doc.lines.get(finding.path, ())
    if not 0 < finding.line <= len(lines):
        return False
    match = _SUPPRESS.search(lines[finding.line - 1])
    if match is None:
        return False
    codes = match["codes"]
    return codes is None or finding.code in {c.strip().upper() for c in codes.split(",")}


def check_paths(
    paths: list[Path], matrices: Matrices, settings: Settings, targets: tuple[Target, ...], asking: Optional[Callable[[Path], None]] = None
) -> Report:
    """Every file `paths` names or holds, checked; `asking` is told of each file before uv is asked
    about it (--resolve takes seconds per file: the CLI says where it is)."""
    findings: dict[tuple, Finding] = {}
    errors: list[str] = []
    files = 0
    for path, reader in discover(paths):
        try:
            doc = reader(path)
        except InputError as exc:
            errors.append(str(exc))
            continue
        except RecursionError:
            errors.append(f"{path}: nested too deeply to read; not checked")
            continue
        files += 1
        if settings.platforms:
            # the project's own platforms: no other is the file's to answer for; a file that says
            # its own (a Dockerfile: Linux) keeps them where none of the project's is among them
            doc = doc._replace(platforms=tuple(p for p in (doc.platforms or PLATFORMS) if p in settings.platforms) or doc.platforms)
        found_here = check_document(doc, matrices, targets)
        if settings.resolve and settings.uv:
            # imported here: a check without --resolve starts no thread pool and no subprocess module
            from cudafit.check.resolve import KINDS, held, resolve_findings

            # a file without a GPU pin is still asked: on every platform, in each of its selections
            every = file_environments(doc, matrices) or environments(doc)
            if asking is not None and doc.kind in KINDS:
                asking(path)
            found_here += resolve_findings(doc, every, matrices, settings.uv, held(found_here, every))
        for found in found_here:
            if settings.wants(found.code) and not suppressed(found, doc):
                # An included file is read with each file that includes it: report each finding once.
                findings.setdefault((found.path, found.line, found.col, found.code, found.message), found)
    return Report(tuple(sorted(findings.values(), key=Finding.sort_key)), tuple(errors), files)
