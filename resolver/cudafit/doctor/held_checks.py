"""The set `cudafit install --constrain` held in place: what has moved off it since (DR034), read
from the constraints file it left in the environment against what is installed now."""

from __future__ import annotations

from cudafit import held
from cudafit.doctor.context import Context, finding
from cudafit.doctor.model import Finding


def held_set(ctx: Context) -> list[Finding]:
    path = held.path_in(ctx.env.prefix)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []  # no file: nothing was held (an unreadable one is no evidence either way)
    constraints, problems = held.read(text)
    installed = {name: d.version for name, d in ctx.env.distributions.items()}
    out = []
    for item in held.moved(constraints, installed):
        now = f"{item.installed} is installed" if item.installed else "it is no longer installed"
        out.append(
            finding(
                "DR034",
                f"{item.name}: {path} (written by cudafit install --constrain) holds {item.name}{item.specifier}, and {now}.",
                f"Something installed since moved it (an install without -c {path} or PIP_CONSTRAINT). Reinstall the held set, then keep using the file:",
                held.install_commands(text) + (f"export PIP_CONSTRAINT={path} UV_CONSTRAINT={path}",),
                severity="warning",
            )
        )
    out += [finding("DR090", f"{path}: {problem}.", severity="warning") for problem in problems]
    return out
