from __future__ import annotations

from cudafit.answers import Resolution
from cudafit.emit import EmitOptions
from cudafit.emit.pip import commands


def render(resolution: Resolution, options: EmitOptions) -> str:
    return "\n".join(commands(resolution, "uv pip install")) + "\n"
