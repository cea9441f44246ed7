#!/usr/bin/env python3
"""Maintainer tool: convert matrices/ from schema 1 to schema 2 (matrices/README.md).

Schema 2 has one model of a build for every framework: a top-level `[[build]]` that names the
releases it belongs to (`releases`, default every release of the file), its platforms, CUDA,
cuDNN, SASS/PTX and pins, each fact graded in `evidence`. Schema 1 modelled a build three more
ways (TensorFlow's flat fields on each release, JAX's `[[release.cuda]]`, ONNX Runtime's
`[[release.build]]`) and copied it into every patch release; this script moves those into
`[[build]]`, merges the copies of one build, and grades the TensorFlow and JAX facts from the kind
of source each entry already cites (a wheel read is measured, a document is declared).

    python scripts/migrate_schema2.py [--data DIR] [--dry-run]

Files already at schema 2 are left alone; every file is rewritten atomically.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


# --- writing TOML -----------------------------------------------------------------------------


def _key(key: str) -> str:
    return key if BARE_KEY.match(key) else json.dumps(key, ensure_ascii=False)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }" if value else "{}"
    raise TypeError(f"cannot write {value!r}")


# Tables written as [sub.tables] under their entry (long ones); every other dict stays inline.
SUB_TABLES = {"pins", "pypi_pins", "pypi_variant", "cuda_wheels", "conda", "evidence"}


def _table(lines: list[str], header: str, table: dict[str, Any]) -> None:
    lines.append(header)
    subs = []
    for key, value in table.items():
        if isinstance(value, dict) and key in SUB_TABLES and value:
            subs.append((key, value))
        else:
            lines.append(f"{_key(key)} = {_value(value)}")
    name = header.strip("[]")
    for key, value in subs:
        lines.append("")
        lines.append(f"[{name}.{key}]")
        for k, v in value.items():
            lines.append(f"{_key(k)} = {_value(v)}")
    lines.append("")


def dumps(doc: dict[str, Any]) -> str:
    lines: list[str] = []
    for key, value in doc.items():
        if not isinstance(value, (dict, list)) or (isinstance(value, list) and not any(isinstance(v, dict) for v in value)):
            lines.append(f"{_key(key)} = {_value(value)}")
    lines.append("")
    if "sources" in doc:
        _table(lines, "[sources]", doc["sources"])
    for key, value in doc.items():
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for item in value:
                _table(lines, f"[[{key}]]", item)
    return "\n".join(lines).rstrip("\n") + "\n"


def write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(tmp, path)


# --- grading schema-1 TensorFlow and JAX facts ---------------------------------------------------


def _keys(sources: list[str], pattern: str) -> list[str]:
    return [k for k in sources if re.match(pattern, k)]


def _floor(spec: str) -> str | None:
    """The lower bound of a specifier: '>=12.1.105' -> '12.1.105', '==9.3.0.75' -> '9.3.0.75'."""
    for s in SpecifierSet(spec):
        if s.operator in (">=", "==", "~="):
            return s.version
    return None


def _same_prefix(short: str, full: str | None) -> bool:
    return full is not None and (full == short or full.startswith(short + "."))


def _pin(pins: dict[str, str] | None, prefix: str, exact: bool = False) -> str | None:
    """The version a pin installs (exact) or allows at least (not exact); None when it says neither."""
    for dist, spec in (pins or {}).items():
        if str(canonicalize_name(dist)).startswith(prefix):
            if exact and not (spec.startswith("==") and "," not in spec):
                return None
            return _floor(spec)
    return None


def grade_tensorflow(release: dict, pins: dict | None) -> dict[str, dict]:
    src = release["source"]
    pypi = _keys(src, r"^pypi-(tensorflow-)?\d")
    wheel = _keys(src, r"^wheel-")
    docs = _keys(src, r"^tested-configs")
    rules = _keys(src, r"^(cuda-configure|tf-cuda-build-rules)$")
    if not pypi or not wheel:
        raise SystemExit(f"tensorflow {release['version']}: expected a pypi-* and a wheel-* source, got {src}")
    ev = {"exists": {"grade": "measured", "source": pypi}}
    if release.get("cuda", "unknown") != "unknown":
        ev["cuda"] = {"grade": "measured", "source": wheel}
    cudnn = release.get("cudnn", "unknown")
    if cudnn != "unknown":
        # TensorFlow's cuDNN is the tested build's: only an exact pin states it (a range's floor does not)
        if _same_prefix(cudnn, _pin(pins, "nvidia-cudnn", exact=True)):
            ev["cudnn"] = {"grade": "measured", "source": pypi}
        else:
            # the wheel's build_info holds the cuDNN major only; the minor is the tested configuration
            ev["cudnn"] = {"grade": "declared", "source": docs or wheel}
    for fact in ("sass", "ptx"):
        if release.get(fact, "unknown") != "unknown":
            ev[fact] = {"grade": "measured", "source": wheel + rules}
    if pins is not None:
        ev["pins"] = {"grade": "measured", "source": pypi}
    return ev


def grade_jax(release: dict, cuda: dict) -> dict[str, dict]:
    src = cuda["source"]
    pypi = _keys(src, r"^pypi-jax-(cuda\d+-(plugin|pjrt)-)?\d") or _keys(src, r"^pypi-jax-\d")
    plugin = _keys(src, r"^pypi-jax-cuda\d+-(plugin|pjrt)-\d")
    wheel = _keys(src, r"^wheel-")
    docs = _keys(src, r"^(installation|readme|changelog|bazelrc|jaxlib-setup)")
    pins = cuda.get("pins")
    ev: dict[str, dict] = {}
    if cuda.get("find_links"):
        ev["exists"] = {"grade": "declared", "source": docs}  # JAX's own find-links page, not readable here
    else:
        ev["exists"] = {"grade": "measured", "source": plugin or pypi}
    # Before 0.4.30 the plugin declared no nvidia-* requirements: the pins are jax's own extra's.
    own = _keys(src, r"^pypi-jax-\d")
    plugin_pins = _keys(src, r"^pypi-jax-cuda\d+-plugin-\d")
    pins_from = own if own and Version(release["version"]) < Version("0.4.30") else (plugin_pins or own)
    for fact, field, prefix in (("cuda", "cuda_min", "nvidia-cuda-runtime"), ("cudnn", "cudnn_min", "nvidia-cudnn")):
        value = cuda.get(field, "unknown")
        if value == "unknown":
            continue
        if _same_prefix(value, _pin(pins, prefix)):
            ev[fact] = {"grade": "measured", "source": pins_from}
        else:
            ev[fact] = {"grade": "declared", "source": docs}
    fat = wheel or [k for k in plugin if "plugin" in k]
    for fact in ("sass", "ptx"):
        if cuda.get(fact, "unknown") != "unknown":
            if not fat:
                raise SystemExit(f"jax {release['version']} {cuda['extra']}: {fact} known, but no wheel read is cited")
            ev[fact] = {"grade": "measured", "source": fat}
    if pins is not None:
        ev["pins"] = {"grade": "measured", "source": pins_from}
    for fact, item in ev.items():
        if not item["source"]:
            raise SystemExit(f"jax {release['version']} {cuda['extra']}: no source to grade {fact} with ({src})")
    return ev


# --- one file -----------------------------------------------------------------------------------


def _versions_out(text: str, versions: list[str]) -> str:
    for v in versions:
        text = text.replace(v, "{V}").replace(v.replace(".", "-"), "{V}")
    return text


def merge_builds(builds: list[dict], release_order: list[str]) -> list[dict]:
    """One [[build]] for copies that differ only in the release they belong to and its sources."""
    merged: list[dict] = []
    index: dict[str, dict] = {}
    for build in builds:
        release = build["releases"][0]
        facts = {k: v for k, v in build.items() if k not in ("releases", "source", "notes", "evidence")}
        key = json.dumps([facts, {f: e["grade"] for f, e in build.get("evidence", {}).items()}], sort_keys=True)
        same = index.get(key)
        if same is None:
            index[key] = build
            build["_notes"] = {release: build.get("notes", "")}
            merged.append(build)
            continue
        same["releases"].append(release)
        same["source"] += [s for s in build["source"] if s not in same["source"]]
        for fact, item in build.get("evidence", {}).items():
            target = same["evidence"][fact]["source"]
            target += [s for s in item["source"] if s not in target]
        same["_notes"][release] = build.get("notes", "")
    for build in merged:
        notes = build.pop("_notes")
        releases = build["releases"]
        first = releases[0]
        if len(releases) > 1:
            if len({_versions_out(n, [r]) for r, n in notes.items()}) == 1:
                rest = ", ".join(releases[1:])
                if notes[first]:
                    build["notes"] = f"As read for {first} ({rest} read alike, with their own version numbers): {notes[first]}"
            else:
                build["notes"] = " ".join(f"[{r}] {n}" for r, n in notes.items() if n)
        if not build.get("notes"):
            build.pop("notes", None)
        if releases == release_order:
            del build["releases"]
        else:
            build["releases"] = sorted(releases, key=release_order.index)
        # keep `notes` last, as every other entry
        if "notes" in build:
            build["notes"] = build.pop("notes")
    return merged


def _order(build: dict, first: list[str]) -> dict:
    out = {k: build[k] for k in first if k in build}
    out.update({k: v for k, v in build.items() if k not in out and k not in ("source", "notes", "evidence")})
    for k in ("source", "notes", "evidence"):
        if k in build:
            out[k] = build[k]
    return out


def migrate_pytorch(doc: dict) -> dict:
    out = {k: v for k, v in doc.items() if k not in ("variant",)}
    out["build"] = doc.get("variant", [])
    return out


def migrate_onnxruntime(doc: dict) -> dict:
    releases, builds = [], []
    order = [r["version"] for r in doc["release"]]
    for r in doc["release"]:
        for b in r.get("build", []):
            b = dict(b)
            b["tag"] = b.pop("flavour")
            b["releases"] = [r["version"]]
            if not b.get("index_url"):
                b.pop("index_url", None)
            builds.append(_order(b, ["tag", "releases", "package", "index_url", "platforms"]))
        releases.append({k: v for k, v in r.items() if k != "build"})
    return {**{k: v for k, v in doc.items() if k != "release"}, "release": releases, "build": merge_builds(builds, order)}


def migrate_tensorflow(doc: dict) -> dict:
    releases, builds = [], []
    order = [r["version"] for r in doc["release"]]
    build_fields = ("gpu_platforms", "cuda", "cudnn", "sass", "ptx", "and_cuda", "and_cuda_python", "cuda_wheels", "conda")
    for r in doc["release"]:
        if r["gpu_platforms"]:
            cuda = r.get("cuda", "unknown")
            pins: Any = r.get("and_cuda")
            if pins is None:
                pins = "unknown" if "and-cuda" in r["extras"] else {}
            b: dict[str, Any] = {
                "tag": f"cu{cuda.split('.')[0]}" if cuda != "unknown" else "cuda",
                "releases": [r["version"]],
                "platforms": r["gpu_platforms"],
                "cuda": cuda,
                "cudnn": r.get("cudnn", "unknown"),
                "sass": r.get("sass", "unknown"),
                "ptx": r.get("ptx", "unknown"),
                "extras": ["and-cuda"] if "and-cuda" in r["extras"] else [],
                "pins": pins,
            }
            if "and_cuda_python" in r:
                b["pins_python"] = r["and_cuda_python"]
            for key in ("cuda_wheels", "conda"):
                if key in r:
                    b[key] = r[key]
            b["evidence"] = grade_tensorflow(r, pins if isinstance(pins, dict) else None)
            # the build cites what states its facts; the release keeps its wheel lists (CPU, macOS)
            cited = [k for item in b["evidence"].values() for k in item["source"]]
            extra = [k for k in r["source"] if re.match(r"^(pip-md|pr-|pypi-tensorrt|gpu-hardware|pypi-tensorflow-gpu)", k)]
            b["source"] = list(dict.fromkeys(cited + extra))
            builds.append(b)
        releases.append({k: v for k, v in r.items() if k not in build_fields})
    return {**{k: v for k, v in doc.items() if k != "release"}, "release": releases, "build": merge_builds(builds, order)}


def migrate_jax(doc: dict) -> dict:
    releases, builds = [], []
    order = [r["version"] for r in doc["release"]]
    for r in doc["release"]:
        for c in r.get("cuda", []):
            packages = []
            local = ""
            for text in c["packages"]:
                req = Requirement(text)
                (spec,) = list(req.specifier)
                version, _, tag = spec.version.partition("+")
                if version not in (r["jaxlib"], r["version"]):
                    raise SystemExit(f"jax {r['version']}: {text} is at neither the release's version nor its jaxlib")
                packages.append(req.name)
                local = tag or local
            b: dict[str, Any] = {
                "tag": c["flavour"],
                "releases": [r["version"]],
                "extras": [c["extra"]],
                "platforms": c["platforms"],
                "cuda": c.get("cuda_min", "unknown"),
                "cudnn": c.get("cudnn_min", "unknown"),
                "sass": c.get("sass", "unknown"),
                "ptx": c.get("ptx", "unknown"),
                "packages": packages,
            }
            if local:
                b["local"] = local
            if c.get("find_links"):
                b["find_links"] = c["find_links"]
            b["pins"] = c.get("pins", "unknown")
            b["source"] = list(c["source"])
            if c.get("notes"):
                b["notes"] = c["notes"]
            b["evidence"] = grade_jax(r, c)
            builds.append(b)
        releases.append({k: v for k, v in r.items() if k != "cuda"})
    return {**{k: v for k, v in doc.items() if k != "release"}, "release": releases, "build": merge_builds(builds, order)}


MIGRATE = {
    "pytorch/torch-": migrate_pytorch,
    "tensorflow/tensorflow-": migrate_tensorflow,
    "jax/jax-": migrate_jax,
    "onnxruntime/onnxruntime-": migrate_onnxruntime,
}


def migrate_file(path: Path, rel: str) -> str | None:
    text = path.read_text(encoding="utf-8")
    doc = tomllib.loads(text)
    if doc.get("schema") != 1:
        return None
    for prefix, migrate in MIGRATE.items():
        if rel.startswith(prefix):
            doc["schema"] = 2
            return dumps(migrate(doc))
    # nvidia.toml, gpus.toml, pytorch/index.toml: only the schema number changes (comments kept)
    return re.sub(r"(?m)^schema = 1$", "schema = 2", text, count=1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT / "matrices")
    parser.add_argument("--dry-run", action="store_true", help="print what would change; write nothing")
    args = parser.parse_args(argv)
    before = after = 0
    for path in sorted(args.data.rglob("*.toml")):
        rel = path.relative_to(args.data).as_posix()
        new = migrate_file(path, rel)
        if new is None:
            continue
        old_size = path.stat().st_size
        before += old_size
        after += len(new.encode())
        print(f"{rel}: {old_size} -> {len(new.encode())} bytes")
        if not args.dry_run:
            write_atomic(path, new)
    print(f"total: {before} -> {after} bytes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
