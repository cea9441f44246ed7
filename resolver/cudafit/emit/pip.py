from __future__ import annotations

from cudafit.emit import EmitOptions, by_index
from cudafit.records import Resolution


def commands(resolution: Resolution, installer: str = "pip install") -> list[str]:
    lines = []
    for index_url, pins in by_index(resolution.packages):
        flag = f" --index-url {index_url}" if index_url else ""
        lines.append(f"{installer}{flag} " + " ".join(p.requirement for p in pins))
    return lines


def render(resolution: Resolution, options: EmitOptions) -> str:
    return "\n".join(commands(resolution)) + "\n"
