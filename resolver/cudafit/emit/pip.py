from __future__ import annotations

import shlex

from cudafit.emit import EmitOptions, cuda_from_conda, install_groups
from cudafit.records import Resolution


def commands(resolution: Resolution, installer: str = "pip install") -> list[str]:
    lines = []
    runtime = cuda_from_conda(resolution)
    if runtime is not None:
        # pip cannot install this CUDA runtime; say where it comes from, first.
        lines.append(f"# first, in a conda environment: conda install {' '.join(runtime[0])} -c {runtime[1]}")
    for group in install_groups(resolution):
        flags = "".join(f" {option}" for option in group.options)
        flags += f" --index-url {group.index_url}" if group.index_url else ""
        flags += f" -f {group.find_links}" if group.find_links else ""
        lines.append(f"{installer}{flags} " + " ".join(shlex.quote(r) for r in group.requirements))
    return lines


def render(resolution: Resolution, options: EmitOptions) -> str:
    return "\n".join(commands(resolution)) + "\n"
