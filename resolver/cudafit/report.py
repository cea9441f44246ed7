"""Render a Resolution for people (text) and for scripts (the JSON of the CLI contract)."""

from __future__ import annotations

from cudafit.answers import Candidate, Rejection, Resolution
from cudafit.emit import environment, stack_versions
from cudafit.emit.pip import commands
from cudafit.evidence import graded_facts
from cudafit.explain import said
from cudafit.kernel_words import kernels_json, kernels_text
from cudafit.last_line import LastLine
from cudafit.machine import machine_json
from cudafit.records import SCHEMA_VERSION, Machine


def resolution_json(res: Resolution) -> dict:
    if not res.ok:
        # The text leads with the cause and folds the rest; the JSON keeps every rejection.
        return {
            "schema_version": SCHEMA_VERSION,
            "ok": False,
            "machine": machine_json(res.machine),
            "conflicts": list(res.conflicts),
            "warnings": list(res.warnings),
            **_floors_json(res),
            "rejected": [_rejected_json(r) for r in res.rejections if r.constraint != "spec"],
        }
    cuda, cudnn = stack_versions(res)
    return {
        "schema_version": SCHEMA_VERSION,
        "ok": True,
        "machine": machine_json(res.machine),
        "packages": [
            {
                "name": p.name,
                "version": p.version,
                "variant": p.variant,
                "index_url": p.index_url,
                "requirement": p.requirement,
                **evidence_json(c, p.name),
                **({"supports": p.supports} if p.supports else {}),
                **({"find_links": p.find_links} if p.find_links else {}),
            }
            for c in res.candidates
            for p in c.packages
        ],
        "cuda": cuda,
        "cudnn": cudnn,
        **({"driver_min": res.driver_min} if res.driver_min else {}),
        **({"last_lines": [_last_json(last) for last in res.last_lines]} if res.last_lines else {}),
        **({"kernels": kernels_json(res.kernels)} if res.kernels else {}),
        "pins": dict(sorted(res.shared_pins.items())),
        "commands": {
            "pip": " && ".join(c for c in commands(res) if not c.startswith("#")),
            "uv": " && ".join(c for c in commands(res, "uv pip install") if not c.startswith("#")),
        },
        "notes": list(res.notes),
        "warnings": list(res.warnings),
        **_floors_json(res),
        **({"environment": environment(res)} if environment(res) else {}),
    }


def _rejected_json(r: Rejection) -> dict:
    out: dict = {"build": r.subject, "constraint": r.constraint, "reason": said(r)}
    if r.shortfall is not None:
        out["shortfall"] = r.shortfall._asdict()  # what the machine lacks, as values: a script acts on it
    return out


def _floors_json(res: Resolution) -> dict:
    """With the driver unknown: the answer for each CUDA major's driver floor."""
    if not res.by_driver_floor:
        return {}
    return {
        "by_driver_floor": [
            {
                "cuda_major": a.cuda_major,
                "driver_min": a.driver_min,
                "ok": a.ok,
                "requirements": list(a.requirements),
                "cause": a.cause or None,
                "chosen": a.chosen,
                "build_cuda_majors": list(a.built_for),
            }
            for a in res.by_driver_floor
        ]
    }


def floors_text(res: Resolution) -> list[str]:
    if not res.by_driver_floor:
        return []
    width = max(len(a.driver_min) for a in res.by_driver_floor)
    lines = ["driver unknown: the newest set per driver floor (give --driver to pick):"]
    for a in res.by_driver_floor:
        what = ", ".join(a.requirements) if a.ok else f"none: {a.reason}"
        if a.ok and a.built_for and a.cuda_major not in a.built_for:
            # the row is the drivers', not the builds': none of this major runs here
            what += f"  (CUDA {'/'.join(map(str, a.built_for))} builds: no CUDA {a.cuda_major} build runs here)"
        mark = "  (this answer)" if a.chosen else ""
        lines.append(f"  driver >= {a.driver_min:<{width}}  CUDA {a.cuda_major}  {what}{mark}")
    return lines


def evidence_json(candidate: Candidate, name: str) -> dict:
    """How each fact of the build is known, on the package that is the build (torch, not torchvision)."""
    if name != candidate.family or not candidate.evidence:
        return {}  # data without grades (TensorFlow, JAX) says nothing here
    graded = graded_facts(candidate.evidence, candidate.kind == "cuda")
    unknown = {"grade": "unknown"}
    return {"evidence": {fact: unknown if ev.grade == "unknown" else {"grade": ev.grade, "source": list(ev.source)} for fact, ev in graded.items()}}


def _stack(c: Candidate) -> str:
    """What a build without CUDA runs on: ROCm 7.2, Intel XPU, or the CPU."""
    if c.kind == "rocm":
        return f"ROCm {c.rocm or c.tag.removeprefix('rocm')}"
    return "Intel XPU" if c.tag == "xpu" else "CPU"  # emit.other_stack says it of a whole set


def describe_machine(res: Resolution) -> str:
    return describe(res.machine)


def describe(m: Machine) -> str:
    gpus = ", ".join(
        f"{g.name or 'GPU'} (sm_{g.compute_capability[0]}{g.compute_capability[1]})"
        if g.compute_capability
        else f"{g.name or g.vendor.upper() + ' GPU'} ({g.target})"
        if g.target
        else f"{g.name or 'GPU'} (unknown sm)"
        for g in m.gpus
    )
    if m.jetpack and not m.driver_known:
        driver = f"JetPack {m.jetpack}"
    elif not m.driver_known:
        driver = "driver did not answer" if m.detected else "driver not given"
    else:
        driver = f"driver {m.driver}" if m.driver else "no NVIDIA driver"
    where = (m.platform or "unknown platform") + (f" (macOS {m.macos})" if m.macos else "") + (" (WSL2)" if m.os == "wsl" else "")
    parts = [where, f"Python {m.python}" if m.python else "Python unknown", driver]
    if gpus:
        parts.append(gpus)
    if m.jetson:
        parts.append("Jetson")
    return ", ".join(parts)


def resolution_text(res: Resolution) -> str:
    lines = [f"machine: {describe_machine(res)}"]
    if not res.ok:
        lines.append("no consistent set of builds runs here:")
        lines += [f"  - {c}" for c in res.conflicts]
    else:
        for c in res.candidates:
            stack = (f"CUDA {c.cuda}, cuDNN {c.cudnn or 'unknown'}" if c.loads_cudnn else f"CUDA {c.cuda}, no cuDNN") if c.cuda else _stack(c)
            wheels = [p for p in c.packages if p.supports]
            shown = ", ".join(p.requirement for p in c.packages if not p.supports)
            if wheels and c.kind == "rocm":
                shown += " with " + ", ".join(p.requirement for p in wheels)
            elif wheels:
                shown += f" with {len(wheels)} CUDA wheels ({wheels[0].name}, ...)"
            lines.append(f"chosen: {shown}  ({stack})")
        lines += floors_text(res)
        lines += kernels_text(res.kernels)
        lines.append("install:")
        lines += [f"  {cmd}" for cmd in commands(res)]
        lines.append("why:")
        lines += [f"  - {n}" for n in res.notes]
    if res.warnings:
        lines.append("warnings:")
        lines += [f"  - {w}" for w in res.warnings]
    return "\n".join(lines) + "\n"


def _last_json(last: LastLine) -> dict:
    return {
        "family": last.family,
        "gpu": last.gpu,
        "arch": last.arch,
        "last": last.last,
        "dropped": last.dropped,
        "spec": f"{last.family}{last.bound}",
        "evidence": last.evidence,
        "cause": last.cause,
    }
