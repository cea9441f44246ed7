"""conda commands. Releases up to 2.5 come from the pytorch and nvidia channels when that channel
built the chosen CUDA version; the channel ended with 2.5 (pytorch/pytorch#138506), so later
releases, and builds the channel never had, are installed as the PyTorch wheels into the conda
environment."""

from __future__ import annotations

import shlex
from typing import Optional

from packaging.version import Version

from cudafit.answers import Candidate, Resolution
from cudafit.emit import EmitOptions, cuda_from_conda, environment
from cudafit.emit.pip import commands
from cudafit.errors import InputError

LAST_CHANNEL_RELEASE = Version("2.5.99")

# conda's own rule for an environment name (conda/core/prefix_data.py, PrefixData.validate_name and
# from_name; conda/base/constants.py): none of PREFIX_NAME_DISALLOWED_CHARS {"/", " ", ":", "#"},
# no path separator ("\\" as well), not a RESERVED_ENV_NAMES name ("base", "root"). cudafit adds:
# not empty and nothing unprintable (a newline would end the YAML line or the shell command).
CONDA_NAME_DISALLOWED = frozenset("/ :#\\")
CONDA_RESERVED_NAMES = ("base", "root")


def check_env_name(name: str) -> str:
    """The name, or an InputError saying why conda would refuse it."""
    bad = sorted(CONDA_NAME_DISALLOWED.intersection(name))
    if not name:
        why = "it is empty"
    elif name in CONDA_RESERVED_NAMES:
        why = "conda reserves it"
    elif bad:
        why = "conda names cannot contain " + ", ".join(repr(c) for c in bad)
    elif not name.isprintable():
        why = "it contains a control character"
    elif name.startswith("-"):
        why = "it starts with '-', which conda would read as an option"
    else:
        return name
    raise InputError(f"not a conda environment name: {why}", field="name", value=name)


CHANNEL_PLATFORMS = ("linux-x86_64", "windows-x86_64", "macos-x86_64", "macos-arm64")


def channel_packages(resolution: Resolution) -> Optional[tuple[list[str], list[str]]]:
    """(packages, channels) for the pytorch channel, or None where it has no such build."""
    torch: Optional[Candidate] = next((c for c in resolution.candidates if c.family == "torch"), None)
    if torch is None or len(resolution.candidates) != 1 or torch.version > LAST_CHANNEL_RELEASE:
        return None
    # The channel's CUDA packages were built for linux-64 and win-64 only; its CPU packages also
    # for macOS. Elsewhere (linux-aarch64) the wheels are the route.
    platform = resolution.machine.platform
    if platform not in CHANNEL_PLATFORMS or (torch.kind == "cuda" and platform.startswith("macos")):
        return None
    names = {"torch": "pytorch", "torchvision": "torchvision", "torchaudio": "torchaudio"}
    pkgs = [f"{names[p.name]}=={p.version}" for p in torch.packages]
    if torch.kind == "cpu":
        if resolution.machine.os != "macos":
            pkgs.append("cpuonly")
        return pkgs, ["pytorch"]
    if torch.kind != "cuda" or torch.cuda not in torch.conda_channel_cuda:
        return None
    if torch.version < Version("1.13"):
        # Before 1.13 the CUDA runtime came as cudatoolkit, partly from conda-forge.
        return pkgs + [f"cudatoolkit={torch.cuda}"], ["pytorch", "conda-forge"]
    return pkgs + [f"pytorch-cuda={torch.cuda}"], ["pytorch", "nvidia"]


def render(resolution: Resolution, options: EmitOptions) -> str:
    python = resolution.machine.python
    # conda allows ';', '$', '&' and quotes in a name: the shell must not see them.
    name = shlex.quote(check_env_name(options.env_name))
    create = f"conda create -n {name}" + (f" python={python}" if python else "") + " pip"
    route = channel_packages(resolution)
    lines = [create, f"conda activate {name}"]
    if route is not None:
        pkgs, channels = route
        lines.append("conda install " + " ".join(pkgs) + "".join(f" -c {c}" for c in channels))
    else:
        runtime = cuda_from_conda(resolution)
        if runtime is not None:
            pkgs, channel = runtime
            lines.append("conda install " + " ".join(pkgs) + f" -c {channel}")
        lines.extend(c for c in commands(resolution, "python -m pip install") if not c.startswith("#"))
    # conda keeps variables with the environment and sets them on `conda activate`
    lines += [f"conda env config vars set {name}={shlex.quote(value)}" for name, value in environment(resolution).items()]
    return "\n".join(lines) + "\n"
