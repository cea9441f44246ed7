from __future__ import annotations

import json
import re

from cudafit.answers import Resolution
from cudafit.emit import EmitOptions, cuda_from_conda, environment, header, install_groups
from cudafit.emit.conda import channel_packages, check_env_name

# A plain YAML scalar that reads back as this very string; anything else (`yes`, `null`, `1.0`,
# `*x`, `'a`) is written double-quoted, which JSON's string syntax is valid for.
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
_YAML_WORDS = {"y", "n", "yes", "no", "on", "off", "true", "false", "null"}


def yaml_name(name: str) -> str:
    plain = _PLAIN.fullmatch(name) and name.lower() not in _YAML_WORDS
    return name if plain else json.dumps(name)


def render(resolution: Resolution, options: EmitOptions) -> str:
    python = resolution.machine.python
    name = yaml_name(check_env_name(options.env_name))
    route = channel_packages(resolution)
    lines = [f"# {header(resolution, options.described, options.title)}", f"name: {name}", "channels:"]
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
    variables = environment(resolution)
    if variables:  # conda sets these on `conda activate`
        lines.append("variables:")
        lines += [f"  {name}: {yaml_name(value)}" for name, value in variables.items()]
    return "\n".join(lines) + "\n"
