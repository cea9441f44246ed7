"""Reading matrices/jax/jax-X.Y.toml (matrices/README.md): releases and their CUDA builds, one
per extra (jax[cuda12], jax[cuda13], the older find-links jax[cuda12_pip])."""

from __future__ import annotations

from typing import Any

from packaging.version import Version

from cudafit.fields import Entry, read_str, read_str_list
from cudafit.frameworks.build_data import read_line
from cudafit.frameworks.jax import JaxRelease
from cudafit.records import Build

DATA_PREFIX = "jax/jax-"
FIELDS = frozenset(("extras", "python", "gfx", "gfx_no_blas", "rocm_libraries"))


def read_file(file: str, doc: dict, toolkits: dict, dates: list[str]) -> list[JaxRelease]:
    return [
        JaxRelease(version=version, builds=tuple(builds), **fields)
        for version, _e, fields, builds in read_line(file, doc, toolkits, dates, DATA_PREFIX, _release, fields=FIELDS, more=_build, cuda_is_floor=True)
    ]


def _release(e: Entry, version: Version) -> dict[str, Any]:
    extras = tuple(e.get("extras", read_str_list))
    aliases = e.get("aliases", _read_aliases, required=False, default={})
    for alias, target in aliases.items():
        if alias not in extras or target not in extras or alias == target:
            raise e.fail("aliases", f"{alias} = {target}: both must be other extras of the release ({list(extras)})")
    requires = tuple(e.get("requires", _read_requirements, required=False, default=()))
    return dict(jaxlib=e.get("jaxlib", read_str, required=False), extras=extras, aliases=aliases, requires=requires)


def _read_requirements(value: Any) -> tuple[str, ...]:
    """The release's own Requires-Dist lines cudafit checks files against (numpy's), as written."""
    from packaging.requirements import InvalidRequirement, Requirement

    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("expected a list of requirement strings")
    for text in value:
        try:
            Requirement(text)
        except InvalidRequirement as exc:
            raise ValueError(f"{text!r} is not a PEP 508 requirement ({exc})") from None
    return tuple(value)


def _read_aliases(value: Any) -> dict[str, str]:
    """{extra: the extra it requires exactly the same as} (jax[cuda] is jax[cuda12] from 0.4.30)."""
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ValueError("expected a table of extra = extra")
    return dict(value)


def _build(e: Entry, build: Build, releases: list[dict[str, Any]]) -> dict[str, Any]:
    """JAX's own facts of a build: the extra that selects it, the distributions it brings, the
    find-links page of the older jaxlib CUDA wheels."""
    from packaging.utils import canonicalize_name

    if build.kind == "rocm":
        return _rocm_build(e, build, releases)
    if build.kind != "cuda" or len(build.tag) != 4:
        raise e.fail("tag", "a JAX build is a CUDA flavour like cu12, or a ROCm one like rocm7")
    if len(build.extras) != 1:
        raise e.fail("extras", "a JAX build is selected by one extra, like cuda12")
    for release in releases:
        if build.extra not in release["extras"]:
            raise e.fail("extras", f"{build.extra} is not among the extras of every release it names ({list(release['extras'])})")
    packages = tuple(e.get("packages", read_str_list))
    for name in packages:
        if str(canonicalize_name(name)) != name:
            raise e.fail("packages", f"{name!r} is not a normalised distribution name")
    return dict(
        packages=packages, local=e.get("local", read_str, required=False, default=""), find_links=e.get("find_links", read_str, required=False, default="")
    )


def _rocm_build(e: Entry, build: Build, releases: list[dict[str, Any]]) -> dict[str, Any]:
    """A ROCm plugin build (jax[rocm7-local]): the ROCm release it was built against, its GPU
    targets, where it finds the ROCm libraries, and AMD's rocm wheels that can serve them."""
    from cudafit.gpu_tables_data import read_gfx_list

    for release in releases:
        if build.extra not in release["extras"]:
            raise e.fail("extras", f"{build.extra} is not among the extras of every release it names ({list(release['extras'])})")
    rocm = e.get("rocm", read_str)
    if not build.tag.startswith(f"rocm{rocm.split('.')[0]}"):
        raise e.fail("rocm", f"is not a ROCm release of the tag {build.tag!r}")
    libraries = e.get("rocm_libraries", read_str)
    if libraries not in ("host", "host-or-wheels"):
        raise e.fail("rocm_libraries", "expected 'host' (the host's ROCm) or 'host-or-wheels' (or AMD's rocm wheels in the environment)")
    wheels = e.get("rocm_wheels", read_str, required=libraries == "host-or-wheels", default="")
    index = e.get("rocm_index", read_str, required=libraries == "host-or-wheels", default="")
    if wheels and not wheels.startswith(rocm):
        raise e.fail("rocm_wheels", f"is not a release of ROCm {rocm}")
    return dict(
        packages=tuple(e.get("packages", read_str_list)),
        rocm=rocm,
        gfx=e.get("gfx", read_gfx_list),
        gfx_no_blas=e.get("gfx_no_blas", read_gfx_list, required=False, default=frozenset()),
        rocm_libraries=libraries,
        rocm_wheels=wheels,
        rocm_index=index,
    )
