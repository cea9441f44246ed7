from __future__ import annotations

from cudafit.emit import EmitOptions, by_index, header
from cudafit.emit.conda import channel_packages
from cudafit.errors import InputError
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
    groups = by_index(resolution.packages)
    indexes = [url for url, _ in groups if url]
    if len(indexes) > 1:
        raise InputError("this set needs packages from several indexes; one pip section cannot pin them safely")
    if indexes:
        lines.append(f"      - --index-url {indexes[0]}")
    lines += [f"      - {p.requirement}" for _, pins in groups for p in pins]
    return "\n".join(lines) + "\n"
