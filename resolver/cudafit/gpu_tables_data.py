"""Reading matrices/amd.toml and matrices/intel.toml: AMD and Intel GPUs by name and PCI id, and
what the data knows of each AMD target (matrices/README.md)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from cudafit.fields import Entry, entries, fail_type, only_keys, read_grade, read_header, read_positive_number, read_str, read_str_list, table_entries
from cudafit.gpu_tables import AmdModel, AmdTfBuild, AmdTorchBuild, GfxTarget, IntelModel, JetsonWheel, is_gfx, normalize_name, short_names

AMD_FILE = "amd.toml"
INTEL_FILE = "intel.toml"
JETSON_FILE = "jetson.toml"
AMD_TORCH_FILE = "amd-torch.toml"
AMD_TF_FILE = "amd-tensorflow.toml"
AMD_SEGMENTS = frozenset(("radeon", "radeon-pro", "instinct", "apu"))
INTEL_SEGMENTS = frozenset(("arc", "datacenter", "igpu"))
INTEL_DEVICES = frozenset(("dg2", "bmg", "pvc", "mtl-h", "mtl-u", "arl-h", "lnl-m", "ptl-h", "ptl-u"))
# Names the builds' lists use for several device codes (the compiler's family names and aliases)
AOT_ALIASES = {
    "mtl": frozenset(("mtl-u",)),
    "ptl": frozenset(("ptl-h", "ptl-u")),
    "xe-lpg": frozenset(("mtl-h", "mtl-u")),
    "xe2-lpg": frozenset(("lnl-m",)),
    "xe2-hpg": frozenset(("bmg",)),
    "ats-m150": frozenset(),  # Data Center GPU Flex, not in intel.toml
}
_PCI_ID = re.compile(r"[0-9a-f]{4}")
_OVERRIDE = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+")


def read_gfx(value: Any) -> str:
    text = read_str(value)
    if not is_gfx(text):
        raise ValueError("expected an LLVM target like gfx1100 or gfx90a")
    return text


def read_gfx_list(value: Any) -> frozenset[str]:
    targets = read_str_list(value)
    for target in targets:
        read_gfx(target)
    if len(set(targets)) != len(targets):
        raise ValueError("names a target twice")
    return frozenset(targets)


def _pci_ids(value: Any) -> tuple[str, ...]:
    ids = read_str_list(value)
    for item in ids:
        if not _PCI_ID.fullmatch(item):
            raise ValueError(f"{item!r} is not a PCI device id of four lower-case hex digits")
    return tuple(ids)


def _gpu_entries(file: str, doc: dict, tables: set[str], segments: frozenset[str], dates: list[str]) -> Iterator[tuple[Entry, str]]:
    """Each [[gpu]] of a vendor's table with its checked segment (the entry is finished by the caller)."""
    only_keys(file, doc, tables)
    sources = read_header(file, doc)
    dates.append(doc["data_date"])
    for i, raw in enumerate(entries(file, doc, "gpu", "gpu"), 1):
        e = Entry(file, f"[[gpu]] #{i} ({raw.get('name', '?') if isinstance(raw, dict) else '?'})", raw, sources)
        segment = e.get("segment", read_str)
        if segment not in segments:
            raise e.fail("segment", f"expected one of {', '.join(sorted(segments))}")
        yield e, segment


def read_amd(doc: dict, dates: list[str]) -> tuple[dict[str, AmdModel], dict[str, GfxTarget]]:
    table: dict[str, AmdModel] = {}
    for e, segment in _gpu_entries(AMD_FILE, doc, {"gpu", "gfx"}, AMD_SEGMENTS, dates):
        model = AmdModel(
            name=e.get("name", read_str),
            gfx=e.get("gfx", read_gfx),
            pci_ids=e.get("pci_ids", _pci_ids),
            segment=segment,
            memory_gb=e.get("memory_gb", read_positive_number, required=False),
        )
        _add_names(e, table, model, model.name)
        e.finish()
    sources = read_header(AMD_FILE, doc)
    targets: dict[str, GfxTarget] = {}
    for i, raw in enumerate(entries(AMD_FILE, doc, "gfx", "gfx"), 1):
        e = Entry(AMD_FILE, f"[[gfx]] #{i} ({raw.get('target', '?') if isinstance(raw, dict) else '?'})", raw, sources)
        target = e.get("target", read_gfx)
        if target in targets:
            raise e.fail("target", "is listed twice")
        override = e.get("override", _override, required=False)
        grade = e.get("override_grade", read_str, required=override is not None, default="")
        if override is None and grade:
            raise e.fail("override_grade", "grades an override, and there is none")
        if grade and grade != "reported":
            raise e.fail("override_grade", "an override is a users' workaround: its grade is 'reported'")
        warn = e.get("warn", lambda v: v if isinstance(v, bool) else fail_type("true or false"), required=False, default=False)
        fails = tuple(e.get("override_fails", read_str_list, required=False, default=[]))
        if fails and override is None:
            raise e.fail("override_fails", "names builds an override fails with, and there is none")
        targets[target] = GfxTarget(target, override, grade, tuple(raw.get("source", ())), e.raw.get("notes", ""), warn, fails)
        e.finish()
    return table, targets


def read_intel(doc: dict, dates: list[str]) -> dict[str, IntelModel]:
    table: dict[str, IntelModel] = {}
    for e, segment in _gpu_entries(INTEL_FILE, doc, {"gpu", "pci"}, INTEL_SEGMENTS, dates):
        model = IntelModel(name=e.get("name", read_str), device=e.get("device", _device), pci_ids=e.get("pci_ids", _pci_ids), segment=segment)
        _add_names(e, table, model, model.name)
        e.finish()
    # PCI ids whose driver name is generic: detection finds the device code by id alone
    sources = read_header(INTEL_FILE, doc)
    for i, raw in enumerate(entries(INTEL_FILE, doc, "pci", "pci"), 1):
        e = Entry(INTEL_FILE, f"[[pci]] #{i}", raw, sources)
        device = e.get("device", _device)
        ids = e.get("pci_ids", _pci_ids)
        key = f"pci {device}"
        if key in table:
            raise e.fail("device", "has a [[pci]] entry already")
        table[key] = IntelModel(name=f"Intel GPU ({device})", device=device, pci_ids=ids, segment="igpu" if device not in ("dg2", "bmg", "pvc") else "arc")
        e.finish()
    return table


def read_jetson(doc: dict, dates: list[str], jetpacks: set[str]) -> tuple[JetsonWheel, ...]:
    from packaging.version import Version

    out = []
    for e in table_entries(JETSON_FILE, doc, "wheel", "torch", dates):
        raw = e.raw
        lines = tuple(e.get("jetpack", read_str_list))
        unknown = [j for j in lines if j not in jetpacks]
        if unknown:
            raise e.fail("jetpack", f"names {', '.join(unknown)}, which has no [[jetpack]] in nvidia.toml")
        torch = e.get("torch", lambda v: read_str(v) if Version(read_str(v)) else "")  # kept as the file name spells it
        url = e.get("url", read_str)
        if not url.startswith("https://") or not url.endswith(".whl"):
            raise e.fail("url", "expected the https URL of a .whl file")
        grade = e.get("grade", read_grade)
        python = e.get("python", read_str)
        cuda = e.get("cuda", read_str)
        out.append(JetsonWheel(lines, torch, python, cuda, url, grade, tuple(raw.get("source", ())), raw.get("notes", "")))
        e.finish()
    return tuple(out)


def read_amd_torch(doc: dict, dates: list[str], platforms: frozenset[str]) -> tuple[AmdTorchBuild, ...]:
    from packaging.version import Version

    out = []
    for e in table_entries(AMD_TORCH_FILE, doc, "build", "torch", dates):
        raw = e.raw
        versions = {key: e.get(key, lambda v: str(Version(read_str(v)))) for key in ("torch", "torchvision", "torchaudio")}
        index = e.get("index", read_str)
        if not index.startswith("https://") or not index.endswith("/"):
            raise e.fail("index", "expected the https URL of a package index, ending in /")
        gfx = e.get("gfx", _targets_by_platform)
        strays = sorted(set(gfx) - platforms)
        if strays:
            raise e.fail("gfx", f"names {', '.join(strays)}, expected platforms like linux-x86_64")
        grade = e.get("grade", read_grade)
        out.append(
            AmdTorchBuild(
                torch=versions["torch"],
                local=e.get("local", read_str),
                rocm=e.get("rocm", read_str),
                index_url=index,
                torchvision=versions["torchvision"],
                torchaudio=versions["torchaudio"],
                python=frozenset(e.get("python", read_str_list)),
                gfx=gfx,
                grade=grade,
                sources=tuple(raw.get("source", ())),
                notes=e.get("notes", read_str, required=False, default=""),
            )
        )
        e.finish()
    return tuple(sorted(out, key=lambda b: (Version(b.torch), Version(b.rocm)), reverse=True))


def read_amd_tensorflow(doc: dict, dates: list[str]) -> tuple[AmdTfBuild, ...]:
    from packaging.version import Version

    out = []
    for e in table_entries(AMD_TF_FILE, doc, "build", "version", dates):
        raw = e.raw
        tensorflow, version = (e.get(key, lambda v: str(Version(read_str(v)))) for key in ("tensorflow", "version"))
        if Version(version).release[:3] != Version(tensorflow).release[:3]:
            raise e.fail("version", f"is not a build of TensorFlow {tensorflow}")
        links = e.get("find_links", read_str, required=False, default="")
        if links and not links.startswith("https://"):
            raise e.fail("find_links", "expected an https URL")
        grade = e.get("grade", read_grade)
        rocm = e.get("rocm", lambda v: str(Version(read_str(v))))
        python = frozenset(e.get("python", read_str_list))
        notes = e.get("notes", read_str, required=False, default="")
        out.append(AmdTfBuild(tensorflow, version, rocm, links, python, grade, tuple(raw.get("source", ())), notes))
        e.finish()
    return tuple(sorted(out, key=lambda b: (Version(b.tensorflow), Version(b.rocm)), reverse=True))


def _targets_by_platform(value: Any) -> dict[str, frozenset[str]]:
    if not isinstance(value, dict):
        raise ValueError("expected a table of platform = [targets]")
    return {str(platform): frozenset(read_gfx(t) for t in read_str_list(targets)) for platform, targets in value.items()}


def _add_names(e: Entry, table: dict, model: Any, name: str) -> None:
    spellings = [name, *e.get("aliases", read_str_list, required=False, default=[])]
    for spelling in spellings:
        key = normalize_name(spelling)
        if key in table and table[key] != model:
            raise e.fail("name", f"{spelling!r} is already listed as {table[key].name!r}")
        table[key] = model
    for short in (s for spelling in spellings for s in short_names(spelling)):
        table.setdefault(short, model)  # a short name never displaces a full one


def _override(value: Any) -> str:
    text = read_str(value)
    if not _OVERRIDE.fullmatch(text):
        raise ValueError("expected a version like 10.3.0 (the form HSA_OVERRIDE_GFX_VERSION takes)")
    return text


def _device(value: Any) -> str:
    text = read_str(value)
    if text not in INTEL_DEVICES:
        raise ValueError(f"expected one of {', '.join(sorted(INTEL_DEVICES))}")
    return text
