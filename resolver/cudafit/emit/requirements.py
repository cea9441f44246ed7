from __future__ import annotations

from cudafit.answers import Resolution
from cudafit.emit import EmitOptions, cuda_from_conda, environment, header, install_groups


def render(resolution: Resolution, options: EmitOptions) -> str:
    lines = [f"# {header(resolution, options.described, options.title)}"]
    runtime = cuda_from_conda(resolution)
    if runtime is not None:
        lines.append(f"# needs, from conda first: {' '.join(runtime[0])} -c {runtime[1]}")
    for group in install_groups(resolution, single=True, fmt="requirements"):
        if group.index_url:
            lines.append(f"--index-url {group.index_url}")
        if group.find_links:
            lines.append(f"--find-links {group.find_links}")
        lines.extend(group.requirements)
    lines += [f"# then, wherever it runs: export {name}={value}" for name, value in environment(resolution).items()]
    return "\n".join(lines) + "\n"
