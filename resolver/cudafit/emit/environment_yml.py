from __future__ import annotations

from cudafit.emit import EmitOptions, header, single_index
from cudafit.emit.conda import channel_packages
from cudafit.records import Resolution


def render(resolution: Resolution, options: EmitOptions) -> str:
    python = resolution.machine.python
    route = channel_packages(resolution)
    lines = [f"# {header(resolution)}", f"name: {options.env_name}", "channels:"]
    if route is not None:
        pkgs, channels = route
        lines += [f"  - {c}" for c in channels]
        lines.append("dependencies:")
        if python:
            lines.append(f"  - python={python}")
        lines += [f"  - {p.replace('==', '=')}" for p in pkgs]
        return "\n".join(lines) + "\n"
    lines += ["  - conda-forge", "dependencies:"]
    if python:
        lines.append(f"  - python={python}")
    lines += ["  - pip", "  - pip:"]
    index = single_index(resolution.packages, "environment.yml")
    if index:
        lines.append(f"      - --index-url {index}")
    lines += [f"      - {p.requirement}" for p in resolution.packages]
    return "\n".join(lines) + "\n"
