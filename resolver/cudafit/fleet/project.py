"""One pyproject.toml for a fleet of several platforms: each operating system's answer, written in
turn by the uv-project writer with its platform's marker on every pin and index route (CUDA builds
for Linux and Windows, the CPU/MPS build for macOS), so that `uv lock` resolves one lockfile."""

from __future__ import annotations

from typing import Optional

from cudafit.answers import Resolution
from cudafit.emit import FORMATS, MACHINE_FORMATS, EmitOptions, render, summary
from cudafit.errors import InputError
from cudafit.fleet.solve import FleetAnswer


def answers_to_write(answer: FleetAnswer) -> list[Resolution]:
    """The answers the project holds: the fleet's one set where every class runs it, else one per
    operating system."""
    if answer.fleet is not None or not answer.platforms:
        if answer.fleet is None:
            raise InputError(f"no set runs on every node class ({answer.why_none}); nothing to write")
        return [answer.fleet]
    missing = [os_name for os_name, res in answer.platforms.items() if res is None]
    if missing:
        raise InputError(f"no set runs on every {', '.join(missing)} class; nothing to write for that platform")
    return [res for res in answer.platforms.values() if res is not None]


def write(fmt: str, answer: FleetAnswer, existing: Optional[str], env_name: str) -> str:
    if fmt in MACHINE_FORMATS:
        from importlib import import_module

        machines = tuple(a.machine for a in answer.classes if a.machine is not None)
        return str(import_module(FORMATS[fmt]).render_machines(machines, f"the fleet's {len(machines)} GPU node classes (what every one supports)"))
    resolutions = answers_to_write(answer)
    if len(resolutions) > 1 and fmt != "uv-project":
        raise InputError(f"--format {fmt}: the fleet spans {len(resolutions)} operating systems; only --format uv-project holds one answer per platform")
    text = existing
    # The file's first line says what the answer is for: the fleet's platforms, not the one
    # machine a set was solved on (a GH200 class beside x86_64 ones is still in it).
    platforms = sorted({a.machine.platform for a in answer.classes if a.res is not None and a.machine is not None and a.machine.platform})
    python = resolutions[0].machine.python or "any"
    described, title = f"the fleet's {', '.join(platforms) or resolutions[0].machine.platform} nodes, Python {python}", ""
    if len(resolutions) > 1:
        each = "; ".join(f"{r.machine.platform}: {summary(r)}" for r in resolutions)
        title = f"the fleet, one set per platform ({each}), Python {python}"
    for res in resolutions:
        options = EmitOptions(env_name=env_name, existing=text, per_platform=len(resolutions) > 1, described=described, title=title)
        text = render(fmt, res, options)
    assert text is not None
    return text
