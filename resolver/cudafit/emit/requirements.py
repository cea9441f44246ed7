from __future__ import annotations

from cudafit.emit import EmitOptions, header, single_index
from cudafit.records import Resolution


def render(resolution: Resolution, options: EmitOptions) -> str:
    index = single_index(resolution.packages, "requirements")
    lines = [f"# {header(resolution)}"]
    if index:
        lines.append(f"--index-url {index}")
    lines.extend(p.requirement for p in resolution.packages)
    return "\n".join(lines) + "\n"
