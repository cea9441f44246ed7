"""Reading matrices/pytorch/torch-X.Y.toml: releases, their builds per platform (variants), and
the evidence grade of every fact of a build (matrices/README.md)."""

from __future__ import annotations

from typing import Any

from packaging.version import Version

from cudafit.errors import DataError
from cudafit.fields import (
    CUDA_TAG_RE,
    UNKNOWN,
    Entry,
    entries,
    only_keys,
    read_cc_set_or_unknown,
    read_companion,
    read_cuda_tags,
    read_date,
    read_evidence,
    read_header,
    read_macos_fields,
    read_pins,
    read_pins_or_unknown,
    read_platforms,
    read_python_map,
    read_pythons,
    read_str,
    read_str_list,
    read_version,
)
from cudafit.records import PLATFORMS, Evidence, TorchRelease, TorchVariant

DATA_PREFIX = "pytorch/torch-"


def read_file(file: str, doc: dict, toolkits: dict, dates: list[str]) -> list[TorchRelease]:
    sources = read_header(file, doc)
    dates.append(doc["data_date"])
    line = doc.get("line")
    expected_line = file.removeprefix("pytorch/torch-").removesuffix(".toml")
    if line != expected_line:
        raise DataError(f"{file}: top level: field 'line': expected {expected_line!r} to match the file name (got {line!r})")
    only_keys(file, doc, {"line", "release", "variant"})

    releases: list[dict[str, Any]] = []
    for i, raw in enumerate(entries(file, doc, "release", "release"), 1):
        e = Entry(file, f"[[release]] #{i} ({raw.get('version', '?') if isinstance(raw, dict) else '?'})", raw, sources)
        version = e.get("version", read_version)
        if f"{version.major}.{version.minor}" != line:
            raise e.fail("version", f"does not belong to release line {line}")
        platforms = e.get("platforms", read_platforms)
        pypi_variant = e.get("pypi_variant", _variant_map, required=False, default={})
        for platform in pypi_variant:
            if platform not in platforms:
                raise e.fail("pypi_variant", f"names platform {platform!r}, which is not in this release's platforms")
        releases.append(
            dict(
                entry=e,
                version=version,
                date=e.get("date", read_date),
                python=e.get("python", read_pythons),
                platforms=platforms,
                torchvision=e.get("torchvision", read_companion, required=False),
                torchaudio=e.get("torchaudio", read_companion, required=False),
                conda_cuda=tuple(e.get("conda_cuda", read_str_list, required=False, default=[])),
                python_by_platform=e.get("python_by_platform", read_python_map, required=False, default={}),
                **read_macos_fields(e, platforms),
                pypi_variant=pypi_variant,
                not_shipped=tuple(e.get("not_shipped", read_cuda_tags, required=False, default=[])),
                source=tuple(raw.get("source", ())),
            )
        )
        e.finish()
    if not releases:
        raise DataError(f"{file}: no [[release]] entries")
    by_version = {r["version"]: r for r in releases}
    if len(by_version) != len(releases):
        raise DataError(f"{file}: a torch release is listed twice")

    variants: dict[Version, list[TorchVariant]] = {v: [] for v in by_version}
    for i, raw in enumerate(entries(file, doc, "variant", "variant"), 1):
        e = Entry(file, f"[[variant]] #{i} ({raw.get('tag', '?') if isinstance(raw, dict) else '?'})", raw, sources)
        variant, applies = _variant(e, by_version, toolkits)
        e.finish()
        for version in applies:
            for other in variants[version]:
                if other.tag == variant.tag and other.platforms & variant.platforms:
                    raise e.fail("platforms", f"torch {version}+{variant.tag} is already defined for {sorted(other.platforms & variant.platforms)}")
            variants[version].append(variant)

    out = []
    for version, r in by_version.items():
        e = r["entry"]
        pypi_only = []
        for platform, tag in r["pypi_variant"].items():
            if any(v.tag == tag and platform in v.platforms for v in variants[version]):
                continue
            if tag != "cpu":
                raise e.fail("pypi_variant", f"{platform} = {tag!r} names no [[variant]] of torch {version} on that platform")
            # A CPU build that only PyPI serves (macOS, older aarch64): the entry itself is the fact.
            pypi_only.append(platform)
        for tag in r["not_shipped"]:
            if any(v.tag == tag for v in variants[version]):
                raise e.fail("not_shipped", f"names {tag!r}, which is a [[variant]] of torch {version}")
        if pypi_only:
            variants[version].append(TorchVariant(tag="cpu", kind="cpu", platforms=frozenset(pypi_only), notes="served by PyPI",
                                                  evidence={"exists": Evidence("measured", r["source"])}))
        out.append(
            TorchRelease(
                version=version,
                date=r["date"],
                python=r["python"],
                platforms=r["platforms"],
                torchvision=r["torchvision"],
                torchaudio=r["torchaudio"],
                conda_cuda=r["conda_cuda"],
                pypi_variant=r["pypi_variant"],
                python_by_platform=r["python_by_platform"],
                macos_min=r["macos_min"],
                macos_min_by_python=r["macos_min_by_python"],
                variants=tuple(variants[version]),
                source=r["source"],
                not_shipped=r["not_shipped"],
            )
        )
    return out


def _variant_map(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        raise TypeError("expected a table of platform = variant tag")
    for platform, tag in value.items():
        if platform not in PLATFORMS:
            raise ValueError(f"{platform!r} is not one of {', '.join(PLATFORMS)}")
        read_str(tag)
    return dict(value)


def _variant(e: Entry, by_version: dict[Version, Any], toolkits: dict) -> tuple[TorchVariant, list[Version]]:
    tag = e.get("tag", read_str)
    releases = e.get("releases", lambda v: [Version(x) for x in read_str_list(v)], required=False)
    if releases is None:
        applies = list(by_version)
    else:
        applies = []
        for version in releases:
            if version not in by_version:
                raise e.fail("releases", f"names torch {version}, which has no [[release]] in this file")
            applies.append(version)
    platforms = e.get("platforms", read_platforms)
    python = e.get("python", read_pythons, required=False)
    notes = e.raw.get("notes", "")
    match = CUDA_TAG_RE.match(tag)
    if match:
        cuda = e.get("cuda", read_version)
        if len(cuda.release) != 2:
            raise e.fail("cuda", "expected MAJOR.MINOR")
        if match.group(1) != f"{cuda.major}{cuda.minor}":
            raise e.fail("cuda", f"does not match the tag {tag!r}")
        toolkit = toolkits.get((cuda.major, cuda.minor))
        if toolkit is None:
            raise e.fail("cuda", "names a CUDA version with no [[toolkit]] in nvidia.toml")
        cudnn = e.get("cudnn", read_str)
        sass = e.get("sass", read_cc_set_or_unknown)
        ptx = e.get("ptx", read_cc_set_or_unknown)
        for field, ccs in (("sass", sass), ("ptx", ptx)):
            if ccs and toolkit.targets is not None:
                impossible = sorted(ccs - toolkit.targets)
                if impossible:
                    shown = ", ".join(f"{a}.{b}" for a, b in impossible)
                    raise e.fail(field, f"CUDA {cuda} cannot target {shown} (nvidia.toml [[toolkit]] {cuda} targets)")
        pins = e.get("pins", read_pins_or_unknown)
        pypi_pins = e.get("pypi_pins", read_pins, required=False)
        known = {"exists": True, "cuda": True, "cudnn": cudnn != UNKNOWN, "sass": sass is not None,
                 "ptx": ptx is not None, "pins": pins is not None, "pypi_pins": pypi_pins is not None}
        evidence = read_evidence(e, known, optional={"cuda"})
        variant = TorchVariant(
            tag=tag, kind="cuda", platforms=platforms, cuda=cuda,
            cudnn=None if cudnn == UNKNOWN else cudnn, sass=sass, ptx=ptx, python=python, pins=pins, notes=notes,
            pypi_pins=pypi_pins, evidence=evidence,
        )
    else:
        evidence = read_evidence(e, {"exists": True}, optional=set())
        if tag == "cpu":
            variant = TorchVariant(tag=tag, kind="cpu", platforms=platforms, python=python, notes=notes, evidence=evidence)
        elif tag.startswith("rocm"):
            rocm = e.get("rocm", read_str)
            if tag != f"rocm{rocm}":
                raise e.fail("rocm", f"does not match the tag {tag!r}")
            variant = TorchVariant(tag=tag, kind="rocm", platforms=platforms, rocm=rocm, python=python, notes=notes,
                                   evidence=evidence)
        else:
            variant = TorchVariant(tag=tag, kind="other", platforms=platforms, python=python, notes=notes, evidence=evidence)
    return variant, applies
