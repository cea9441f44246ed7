"""Run the install a Resolution calls for, into the active environment or --env, then read back
what got installed. Commands are argument lists (no shell), printed before they run."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Callable, Mapping, NamedTuple, Optional

from cudafit import detection as detect
from cudafit.answers import Resolution
from cudafit.emit import compiled_here, cuda_from_conda, install_groups
from cudafit.emit.conda import channel_packages
from cudafit.errors import CudafitError, InputError


class Target(NamedTuple):
    python: str  # interpreter of the environment
    prefix: Path


def find_target(env: Optional[str]) -> Target:
    if env:
        path = Path(env)
        if path.is_file():
            # An interpreter: python, python3, python3.12, python.exe; any other file is not one.
            if not re.fullmatch(r"python(\d+(\.\d+)?)?(\.exe)?", path.name.lower()) or not os.access(path, os.X_OK):
                raise InputError("a file, but not a Python interpreter (give the environment's folder or its bin/python)", field="env", value=env)
            prefix = path.parent.parent if path.parent.name in ("bin", "Scripts") else path.parent
            return Target(str(path), prefix)
        if path.is_dir():
            for exe in (path / "bin" / "python", path / "Scripts" / "python.exe", path / "python.exe"):
                if exe.exists():
                    return Target(str(exe), path)
                if exe.is_symlink():
                    raise InputError(f"{exe} is a broken link (the Python it pointed to is gone); recreate the environment", field="env", value=env)
        raise InputError("not an environment folder (no bin/python inside) or a Python interpreter", field="env", value=env)
    active = detect.target_prefix()
    if active is not None:
        return find_target(str(active))
    raise InputError("no target environment: activate one ($VIRTUAL_ENV or $CONDA_PREFIX), have python on PATH, or give --env")


def check_description(
    target: Target, target_python: Optional[str], python: Optional[str], os_name: Optional[str], arch: Optional[str], host_os: str, host_arch: Optional[str]
) -> Optional[str]:
    """The Python to resolve for: the target environment's. `install` installs here, so a
    description of another machine (its Python, OS or arch) would install a wrong build."""
    if python and target_python and python != target_python:
        raise InputError(
            f"--python {python}: the target environment ({target.prefix}) runs Python {target_python}; "
            "install resolves for the environment it installs into (describe other machines with resolve)"
        )
    family = {"wsl": "linux"}
    if os_name and family.get(os_name, os_name) != family.get(host_os, host_os):
        raise InputError(f"install runs on this machine ({host_os}); describe other machines with resolve", field="os", value=os_name)
    if arch and host_arch and arch != host_arch:
        raise InputError(f"install runs on this machine ({host_arch}); describe other machines with resolve", field="arch", value=arch)
    return target_python or python


class InstallFailed(CudafitError):
    """An install command exited non-zero (its own output says why)."""

    exit_code = 1

    def __init__(self, argv: list[str], code: int) -> None:
        self.argv = argv
        self.code = code
        super().__init__(f"the install command failed (exit {code}): {shlex.join(argv)}")


def plan(
    res: Resolution, target: Target, *, conda: bool = False, dry_run: bool = False, which: Callable = shutil.which, installer: Optional[str] = None
) -> list[list[str]]:
    """The commands, with the installer asked for (pip, uv) or uv where present, else pip."""
    if conda and not (Path(target.prefix) / "conda-meta").is_dir():
        raise InputError(
            f"{target.prefix} is not a conda environment (no conda-meta folder); use pip or uv for a virtual environment", field="format", value="conda"
        )
    if installer == "uv" and not which("uv"):
        raise InputError("uv is not on PATH (install it, or use pip)", field="format", value="uv")
    tool = None
    if conda and (channel_packages(res) is not None or cuda_from_conda(res) is not None):
        tool = which("mamba") or which("conda") or ("conda" if dry_run else None)
        if tool is None:
            raise InputError("neither mamba nor conda is on PATH", field="format", value="conda")
    uv = None if installer == "pip" else which("uv")
    return commands(res, installer="uv" if uv else "pip", python=target.python, uv=uv or "uv", conda=tool if conda else None, prefix=str(target.prefix))


def commands(
    res: Resolution, *, installer: str = "pip", python: Optional[str] = None, uv: str = "uv", conda: Optional[str] = None, prefix: Optional[str] = None
) -> list[list[str]]:
    """The install commands of a set as argument lists: with `conda` (the conda or mamba to run),
    the set's conda route first where it has one; the rest with the installer (pip or uv), into
    `prefix`'s environment with its `python`, or the active one."""
    out = []
    if conda is not None:
        route = channel_packages(res)
        runtime = cuda_from_conda(res)
        if route is not None or runtime is not None:
            if route is not None:
                pkgs, channels = route
            else:
                assert runtime is not None  # one of the two, by the test above
                pkgs, channels = runtime[0], [runtime[1]]
            argv = [conda, "install", "-y", *(["-p", prefix] if prefix else []), *pkgs]
            for channel in channels:
                argv += ["-c", channel]
            out.append(argv)
            if route is not None:
                return out
    for group in install_groups(res):
        if installer == "uv":
            argv = [uv, "pip", "install", *(["--python", python] if python else [])]
        else:
            argv = [python or "python", "-m", "pip", "install"]
        argv += group.options
        if group.index_url:
            argv += ["--index-url", group.index_url]
        if group.find_links:
            argv += ["--find-links", group.find_links]
        out.append(argv + list(group.requirements))
    return out


def compiler_problem(res: Resolution, environ: Mapping[str, str], toolkits: Optional[list] = None) -> Optional[str]:
    """Why a library that compiles against torch here (flash-attn from its sdist) cannot build with
    the toolkit torch's extension builder would use, or None: better said before the install than
    after an hour of compiling."""
    from cudafit.toolkits import extension_toolkit, find_toolkits

    needs = compiled_here(res)
    if not needs:
        return None
    found = find_toolkits(environ) if toolkits is None else toolkits
    used = extension_toolkit(environ, found)
    for c, major in needs:
        have = used.version if used is not None else None
        if have is None or have.split(".")[0] != major:
            where = f"CUDA {have} at {used.root}" if used is not None and have else "no CUDA toolkit"
            installed = [t for t in found if t.version and t.version.split(".")[0] == major]
            how = (
                f"select it with `cudafit env-script --toolkit {major} -o env.sh && . ./env.sh` and run again"
                if installed
                else f"no CUDA {major} toolkit is installed here (`cudafit toolkits`): install one, then select it with "
                f"`cudafit env-script --toolkit {major} -o env.sh && . ./env.sh`"
            )
            what = f"{c.packages[0].name} {c.version} compiles against torch here and needs a CUDA {major} nvcc"
            what += f" ({c.cuda} or newer compiles every GPU architecture)"
            return f"{what}; the build would use {where}: {how}"
    return None


def run(commands: list[list[str]], echo: Callable[[str], None] = lambda _line: None) -> None:
    """Run the commands in order, each shown to `echo` first; the installers' own output goes to
    this process's. Raises InstallFailed at the first that fails, InputError where one cannot start."""
    for argv in commands:
        echo("$ " + shlex.join(argv))
        try:
            code = subprocess.call(argv)
        except OSError as exc:
            raise InputError(f"cannot run {argv[0]}: {exc.strerror}") from None
        if code != 0:
            raise InstallFailed(argv, code)


def verify(res: Resolution, target: Target) -> list[tuple[str, str, Optional[str]]]:
    """(name, wanted, installed) for every package of the set."""
    installed = detect.installed_distributions(target.prefix)
    rows = []
    for pin in res.packages:
        wanted = f"{pin.version}+{pin.local}" if pin.local else pin.version
        rows.append((pin.name, wanted, installed.get(pin.name)))
    return rows


def matches(wanted: str, got: Optional[str]) -> bool:
    if got is None:
        return False
    # A pin without a local tag accepts any local build (PEP 440), as pip does.
    return got == wanted or ("+" not in wanted and got.split("+")[0] == wanted)


def hold(resolution: Resolution, target: Target) -> Path:
    """Write the set's constraints file into the environment (held.FILE_NAME), so that later
    installs given it (-c, PIP_CONSTRAINT, UV_CONSTRAINT) cannot move the set; doctor reads it."""
    from cudafit import held
    from cudafit.emit import render
    from cudafit.fileio import write_atomic

    path = held.path_in(target.prefix)
    write_atomic(path, render("constraints", resolution))
    return path
