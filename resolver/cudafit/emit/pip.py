from __future__ import annotations

import shlex

from cudafit.answers import Resolution
from cudafit.emit import EmitOptions, compiled_here, cuda_from_conda, environment, install_groups


def commands(resolution: Resolution, installer: str = "pip install") -> list[str]:
    lines = []
    runtime = cuda_from_conda(resolution)
    if runtime is not None:
        # pip cannot install this CUDA runtime; say where it comes from, first.
        lines.append(f"# first, in a conda environment: conda install {' '.join(runtime[0])} -c {runtime[1]}")
    for group in install_groups(resolution):
        if "--no-build-isolation" in group.options:
            lines += _compiler_needed(resolution)
        flags = "".join(f" {option}" for option in group.options)
        flags += f" --index-url {group.index_url}" if group.index_url else ""
        flags += f" -f {group.find_links}" if group.find_links else ""
        lines.append(f"{installer}{flags} " + " ".join(shlex.quote(r) for r in group.requirements))
    for name, value in environment(resolution).items():
        lines.append(f"# then, wherever it runs: export {name}={shlex.quote(value)}")
    return lines


def _compiler_needed(resolution: Resolution) -> list[str]:
    """What a build from source needs before its command: an nvcc of the CUDA major of the torch it
    compiles against (`cudafit env-script` selects an installed one)."""
    return [
        f"# {c.packages[0].name} compiles against torch here: first put a CUDA {major} nvcc ({c.cuda} or newer) on PATH, "
        f"e.g. cudafit env-script --toolkit {major} -o env.sh && . ./env.sh"
        for c, major in compiled_here(resolution)
    ]


def render(resolution: Resolution, options: EmitOptions) -> str:
    return "\n".join(commands(resolution)) + "\n"
