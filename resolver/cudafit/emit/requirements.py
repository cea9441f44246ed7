from __future__ import annotations

from cudafit.emit import EmitOptions, by_index, header
from cudafit.errors import InputError
from cudafit.records import Resolution


def render(resolution: Resolution, options: EmitOptions) -> str:
    groups = by_index(resolution.packages)
    indexes = [url for url, _ in groups if url]
    if len(indexes) > 1:
        # A second index would need --extra-index-url, which invites dependency confusion.
        raise InputError("this set needs packages from several indexes; one requirements file cannot pin them safely")
    lines = [f"# {header(resolution)}"]
    if indexes:
        lines.append(f"--index-url {indexes[0]}")
    lines.extend(p.requirement for _, pins in groups for p in pins)
    return "\n".join(lines) + "\n"
