"""The rule on what an isolated build compiles against: `[build-system] requires` bringing a torch of
another release line than the one the project pins (CF014), whose extension will not load."""

from __future__ import annotations

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from cudafit.check.model import BUILD_SYSTEM, Document, Finding
from cudafit.check.rules import finding
from cudafit.records import Matrices, TorchRelease


def build_torch_differs(doc: Document, matrices: Matrices, releases: dict[str, TorchRelease]) -> list:
    """An extension compiled in an isolated build links the torch `[build-system] requires` brings
    (the newest PyPI has that matches, where it names no version). torch's C++ ABI changes with
    every minor release, so an extension built against one release line does not load in another:
    an error where the build's torch is of another line than the one the project pins exactly."""
    out: list[Finding] = []
    built = [p for p in doc.pins if p.group == BUILD_SYSTEM and p.name == "torch"]
    pinned = [p for p in doc.pins if p.group == "" and p.name == "torch" and p.version is not None and not p.marker]
    if len(built) != 1 or len(pinned) != 1 or not matrices.torch:
        return out
    try:
        spec, runtime = SpecifierSet(built[0].specifier), Version(pinned[0].version or "")
    except (InvalidSpecifier, InvalidVersion):
        return out
    line = runtime.release[:2]
    known = [r.version for r in matrices.torch if spec.contains(r.version)]
    newest = max(known, default=None)
    if newest is None or line not in {r.version.release[:2] for r in matrices.torch}:
        return out  # a release line the data does not know: nothing to compare with
    # The build takes the newest that matches; a newer one on PyPI than the data's newest is of
    # another line still, so only a newest of the pinned line leaves any doubt (and passes).
    if newest.release[:2] != line:
        out.append(
            finding(
                "CF014",
                built[0].span,
                f"the isolated build compiles against torch {newest.major}.{newest.minor} ('{built[0].span.text}' takes the newest that matches), "
                f"but the project pins torch {pinned[0].version}: torch's C++ ABI changes between release lines, so the extension will not load",
                f"require torch=={pinned[0].version} in [build-system] requires, or build with --no-build-isolation "
                "(uv: [tool.uv] extra-build-dependencies with match-runtime = true)",
            )
        )
    return out
