"""--format constraints: a pip/uv constraints file that holds a resolved set in place.

A later `pip install some-lib` may swap torch's +cu126 build for PyPI's or a CPU one; with this
file as `-c FILE`, `PIP_CONSTRAINT` or `UV_CONSTRAINT`, no install may move the set. Constraints
name versions only (pip refuses extras, URLs and index options in them), so each line is a name
and an exact version, with a comment saying why; the header says how the set itself is installed
(which index), since a constraint chooses among what an index serves, it points to none."""

from __future__ import annotations

from cudafit.answers import Candidate, PackagePin, Resolution
from cudafit.emit import EmitOptions, header
from cudafit.emit.pip import commands
from cudafit.held import INSTALL_LEAD


def render(resolution: Resolution, options: EmitOptions) -> str:
    lines = [f"# {header(resolution, options.described, options.title)}"]
    lines += ["# Keeps this set in place: pip install -c THIS_FILE ..., or export PIP_CONSTRAINT=THIS_FILE (uv: UV_CONSTRAINT)."]
    steps = commands(resolution)
    # what pip cannot do (a conda CUDA runtime first; an environment variable where it runs) stays a remark
    lines += [step for step in steps if step.startswith("# first")]
    lines += [f"{INSTALL_LEAD} (a constraint names versions, not where they come from):"]
    lines += [f"#   {step}" for step in steps if not step.startswith("#")]
    lines += [step for step in steps if step.startswith("# then")]
    for candidate in resolution.candidates:
        for pin in candidate.packages:
            # a wheel named by URL carries its full version (NVIDIA's Jetson builds: 2.5.0a0+872d972e41...)
            version = str(candidate.version) if pin.url else _version(pin)
            lines.append(f"{pin.name}=={version}  # {_why(candidate, pin)}")
        # what the build installs beside its own requirement, at versions it fixes (jaxlib, JAX's plugins)
        lines += [f"{name}{spec}  # installed with {candidate.packages[0].requirement}" for name, spec in candidate.held]
    # an upgrade of the set itself stays on the GPU's last release line (the pins above hold it now)
    for last in resolution.last_lines:
        lines.append(f"{last.family}{last.bound}  # {last.family} {last.line} is the last release line {last.reach}")
    named = {pin.name for c in resolution.candidates for pin in c.packages}
    for dist, spec in sorted(resolution.shared_pins.items()):
        if dist in named:
            continue
        users = [c.shown for c in resolution.candidates if dist in c.pins] or [c.shown for c in resolution.candidates if c.requires.get(dist)]
        why = (
            "required by " + ", ".join(users)
            if users
            else "a build of this set was made against NumPy 1.x, which NumPy 2 breaks"
            if dist == "numpy"
            else "the build the libraries are made against"
        )
        lines.append(f"{dist}{spec}  # {why}")
    return "\n".join(lines) + "\n"


def _version(pin: PackagePin) -> str:
    """The exact version pip sees: a local tag kept (torch==2.14.1+cu126 is that build only)."""
    return f"{pin.version}+{pin.local}" if pin.local else pin.version


def _why(candidate: Candidate, pin: PackagePin) -> str:
    if pin.supports:
        return f"installed for {candidate.shown}"
    if pin.url:
        return f"installed from {pin.url}"
    where = f"from {pin.index_url}" if pin.index_url else "from PyPI"
    build = f"the {pin.local} build" if pin.local else "this release"
    return f"{build} cudafit chose, {where}"
