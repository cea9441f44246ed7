from __future__ import annotations

from cudafit.emit import EmitOptions, header, install_groups
from cudafit.emit.conda import channel_packages, cuda_from_conda
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
    runtime = cuda_from_conda(resolution)
    channels = ["conda-forge"] if runtime is None or runtime[1] == "conda-forge" else [runtime[1], "conda-forge"]
    lines += [f"  - {c}" for c in channels] + ["dependencies:"]
    if python:
        lines.append(f"  - python={python}")
    if runtime is not None:
        lines += [f"  - {p}" for p in runtime[0]]
    lines += ["  - pip", "  - pip:"]
    for group in install_groups(resolution, single=True, fmt="environment.yml"):
        if group.index_url:
            lines.append(f"      - --index-url {group.index_url}")
        if group.find_links:
            lines.append(f"      - --find-links {group.find_links}")
        lines += [f"      - {r}" for r in group.requirements]
    return "\n".join(lines) + "\n"
