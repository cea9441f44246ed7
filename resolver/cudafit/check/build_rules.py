"""The rule on what an isolated build compiles against: `[build-system] requires` bringing a torch of
another release line than the one the project pins (CF014), whose extension will not load. Only a
project that compiles against torch is judged (check/extension.py reads the evidence)."""

from __future__ import annotations

from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from cudafit.check.environments import PLATFORMS, PYTHONS, Environment, admitted, holds_in
from cudafit.check.model import BUILD_SYSTEM, Document, Finding, Pin
from cudafit.check.rules import finding
from cudafit.records import Matrices, TorchRelease


def build_torch_differs(doc: Document, matrices: Matrices, releases: dict[str, TorchRelease]) -> list:
    """An extension compiled in an isolated build links the torch `[build-system] requires` brings
    (the newest PyPI has that matches). torch's C++ ABI changes with every minor release, so an
    extension built against one release line does not load in another: an error where no torch the
    project's own requirement admits is of the build's line (an exact pin of another line, or a
    range that ends before it). A pure-Python project runs with any build torch: nothing is said."""
    out: list[Finding] = []
    if not doc.extension or not matrices.torch:
        return out
    built = [p for p in doc.pins if p.group == BUILD_SYSTEM and p.name == "torch"]
    declared = [p for p in doc.pins if p.group == "" and p.name == "torch" and not p.constraint and not p.override]
    # A pyproject that lists no dependencies leaves them to setup.py or a setuptools dynamic file
    declared = declared or list(doc.extension_torch)
    # one requirement written twice is one
    unmarked = list({p.specifier: p for p in reversed(declared) if not p.marker}.values())
    if len(built) != 1 or len(unmarked) > 1:
        return out
    # A marked requirement holds where its marker does (`torch==2.4.1; sys_platform == 'linux'`):
    # judged there, unless no platform and Python the file admits satisfies it (Megatron's 'never')
    told = admitted(doc.requires_python) or PYTHONS
    marked = [
        p
        for p in {(p.specifier, p.marker): p for p in reversed(declared) if p.marker}.values()
        if any(holds_in(p.marker or "", Environment(platform, python, "")) for platform in PLATFORMS for python in told)
    ]
    known = sorted(r.version for r in matrices.torch if not r.version.is_prerelease)
    # A release line after the data's newest: PyPI may already have it
    after = Version(f"{known[-1].major}.{known[-1].minor + 1}.0")
    build_line, build_after = _lines(built[0], known, after)
    if not build_line:
        return out  # a release the data does not know: nothing to compare with
    # The build takes the newest that matches: the newest known line or, where the spec admits
    # one, a later line; either way the extension loads only where the runtime can be of it. Each
    # requirement is judged alone: one that admits no torch of that line keeps the runtime off it
    # wherever it holds, whatever the others allow.
    newest = max(build_line)
    runtime = next((p for p in unmarked + marked if _keeps_off(p, newest, build_after, known, after)), None)
    if runtime is None:
        return out
    exact = runtime.version
    said = f"pins torch {exact}" if exact else f"requires '{runtime.span.text}', which admits no torch {newest[0]}.{newest[1]}"
    if runtime.span.path != built[0].span.path:  # declared where setuptools reads it
        said += f" ({Path(runtime.span.path).name}, line {runtime.span.line})"
    if runtime.marker:
        said += f" where {runtime.marker}"
    out.append(
        finding(
            "CF014",
            built[0].span,
            f"the isolated build compiles against torch {newest[0]}.{newest[1]} ('{built[0].span.text}' takes the newest that matches), "
            f"but the project {said} and {doc.extension}: torch's C++ ABI changes between release lines, so the extension will not load",
            (f"require torch=={exact}" if exact else "bound torch to the release lines the project runs with")
            + " in [build-system] requires, or build with --no-build-isolation (uv: [tool.uv] extra-build-dependencies with match-runtime = true)",
        )
    )
    return out


def _keeps_off(pin: Pin, line: tuple[int, ...], build_after: bool, known: list[Version], after: Version) -> bool:
    """Whether no torch the requirement admits is of the build's release line (nor, where the
    build may take a line after the data's, of a later one); False where the data knows none of it."""
    run_lines, run_after = _lines(pin, known, after)
    return bool(run_lines) and line not in run_lines and not (build_after and run_after)


def _lines(pin: Pin, known: list[Version], after: Version) -> tuple[set[tuple[int, ...]], bool]:
    """The known torch release lines a requirement admits, and whether it admits a later one."""
    if pin.version is not None:  # an exact pin, local tag and all (==2.5.1+cu124 is a 2.5.1)
        try:
            line = Version(pin.version).release[:2]
        except InvalidVersion:
            return set(), False
        return ({line} if any(v.release[:2] == line for v in known) else set()), False
    try:
        spec = SpecifierSet(pin.specifier)
    except InvalidSpecifier:
        return set(), False
    return {v.release[:2] for v in known if spec.contains(v)}, spec.contains(after)
