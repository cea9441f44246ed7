"""Render a Resolution for people (text) and for scripts (the JSON of the CLI contract)."""

from __future__ import annotations

from cudafit.emit.pip import commands
from cudafit.machine import machine_json
from cudafit.records import Resolution


def resolution_json(res: Resolution) -> dict:
    if not res.ok:
        return {"ok": False, "machine": machine_json(res.machine), "conflicts": list(res.conflicts),
                "warnings": list(res.warnings)}
    cuda = next((c for c in res.candidates if c.cuda), None)
    return {
        "ok": True,
        "machine": machine_json(res.machine),
        "packages": [
            {"name": p.name, "version": p.version, "variant": p.variant, "index_url": p.index_url,
             "requirement": p.requirement}
            for p in res.packages
        ],
        "cuda": cuda.cuda if cuda else None,
        "cudnn": cuda.cudnn if cuda else None,
        "pins": dict(sorted(res.shared_pins.items())),
        "commands": {"pip": " && ".join(commands(res)), "uv": " && ".join(commands(res, "uv pip install"))},
        "notes": list(res.notes),
        "warnings": list(res.warnings),
    }


def describe_machine(res: Resolution) -> str:
    m = res.machine
    gpus = ", ".join(
        f"{g.name or 'GPU'} (sm_{g.compute_capability[0]}{g.compute_capability[1]})" if g.compute_capability else f"{g.name or 'GPU'} (unknown sm)"
        for g in m.gpus
    )
    if not m.driver_known:
        driver = "driver not given"
    else:
        driver = f"driver {m.driver}" if m.driver else "no NVIDIA driver"
    parts = [m.platform or "unknown platform", f"Python {m.python}" if m.python else "Python unknown", driver]
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
            stack = f"CUDA {c.cuda}, cuDNN {c.cudnn or 'unknown'}" if c.cuda else "CPU"
            lines.append(f"chosen: {', '.join(p.requirement for p in c.packages)}  ({stack})")
        lines.append("install:")
        lines += [f"  {cmd}" for cmd in commands(res)]
        lines.append("why:")
        lines += [f"  - {n}" for n in res.notes]
    if res.warnings:
        lines.append("warnings:")
        lines += [f"  - {w}" for w in res.warnings]
    return "\n".join(lines) + "\n"
