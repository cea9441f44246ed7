"""--format variant-properties: the static wheel-variant properties of a described machine, in the
file uv's `wheel-variants` preview reads from UV_VARIANT_LOCK instead of running providers (the
form of uv's own tests of that preview: [metadata] version/created-by, then one [[provider]] per
namespace with its [provider.properties], each feature's values in priority order).

The `nvidia` namespace follows NVIDIA's provider (wheelnext/nvidia-variant-provider, plugin.py at
commit 2ab96595) for the driver: `cuda_version_lower_bound` every CUDA version the driver runs
(its own down to 11, each major also alone), `cuda_version_upper_bound` every version above it.
For `sm_arch` it differs where the provider cannot see: every GPU of the machine counts, not
only the highest (a variant must run on all of them: the values are the intersection), and PTX
(`_virtual`) of every architecture up to the GPU's is accepted, as the driver compiles it forward
(the provider lists only the major's `M0_virtual`). A Docker build or CI runner describes its
target this way, with no GPU to detect."""

from __future__ import annotations

from typing import Optional

from cudafit.answers import Resolution
from cudafit.emit import GENERATED, EmitOptions
from cudafit.errors import InputError
from cudafit.records import CC, Machine

# The provider's value ranges (plugin.py UMD_MAJOR_RANGE, UMD_MINOR_RANGE; SM majors 5-12)
_UMD_MAJORS = range(11, 16)
_UMD_MINORS = range(21)


def render(resolution: Resolution, options: EmitOptions) -> str:
    return render_machines((resolution.machine,), options.described or _machine_words(resolution.machine))


def render_machines(machines: tuple[Machine, ...], described: str) -> str:
    """The properties every one of the machines supports (a fleet's node classes: a variant the
    file admits must run on each)."""
    import tomlkit

    from cudafit.version import __version__

    doc = tomlkit.document()
    doc.add(tomlkit.comment(f"static wheel-variant properties for {described}{GENERATED}"))
    doc.add(tomlkit.comment("use: UV_VARIANT_LOCK=THIS_FILE uv pip install --preview-features wheel-variants ..."))
    nvidia = nvidia_properties(*machines)
    if not nvidia:
        doc.add("provider", tomlkit.array())  # no provider: only variants without properties fit
    metadata = tomlkit.table()
    metadata["version"] = "0.1"
    metadata["created-by"] = f"cudafit {__version__}"
    doc["metadata"] = metadata
    if nvidia:
        providers = tomlkit.aot()
        provider = tomlkit.table()
        provider["namespace"] = "nvidia"
        provider["resolved"] = tomlkit.array()
        properties = tomlkit.table()
        for feature, values in nvidia.items():
            array = tomlkit.array()
            array.extend(values)
            array.multiline(False)
            properties[feature] = array
        provider["properties"] = properties
        providers.append(provider)
        doc["provider"] = providers
    return tomlkit.dumps(doc)


def nvidia_properties(*machines: Machine) -> dict[str, list[str]]:
    """The `nvidia` namespace's values every machine supports, in priority order; {} where one has
    no NVIDIA GPU (only a variant without nvidia properties, or the null variant, then fits all)."""
    ccs = []
    for machine in machines:
        mine = [g.compute_capability for g in machine.gpus if g.vendor == "nvidia" and g.compute_capability is not None]
        if not mine or (machine.driver_known and machine.driver is None):
            return {}
        ccs += mine
    umds = [_umd(m) for m in machines]
    # a lower bound every driver meets is at most the oldest's; an upper one above the newest's
    out = {"cuda_version_lower_bound": _lower_bounds(min(umds)), "cuda_version_upper_bound": _upper_bounds(max(umds))}
    arch = _sm_arch(ccs)
    if arch:
        out["sm_arch"] = arch
    return out


def _umd(machine: Machine) -> tuple[int, int]:
    """The CUDA version the driver runs (nvidia-smi's "CUDA Version", or the data's for the driver)."""
    text: Optional[str] = machine.cuda_driver_max
    if text is None:
        raise InputError(
            "variant properties need the driver (its CUDA version bounds the variants): give --driver",
            field="format",
            value="variant-properties",
        )
    major, _, minor = text.partition(".")
    return int(major), int(minor or 0)


def _lower_bounds(umd: tuple[int, int]) -> list[str]:
    out = []
    for major in range(umd[0], min(_UMD_MAJORS) - 1, -1):
        top = umd[1] if major == umd[0] else max(_UMD_MINORS)
        out += [f"{major}.{minor}" for minor in range(top, -1, -1)] + [str(major)]
    return out


def _upper_bounds(umd: tuple[int, int]) -> list[str]:
    out = []
    for major in range(max(_UMD_MAJORS), umd[0] - 1, -1):
        bottom = umd[1] if major == umd[0] else -1
        out += [f"{major}.{minor}" for minor in range(max(_UMD_MINORS), bottom, -1)]
        if major > umd[0]:
            out.append(str(major))
    return out


def _sm_arch(ccs: list[CC]) -> list[str]:
    """SASS of the GPU's major up to its minor, and PTX of every architecture up to the GPU:
    intersected over the GPUs, highest first."""
    per_gpu = []
    for major, minor in ccs:
        real = {(major, m, "real") for m in range(minor, -1, -1)}
        virtual = {(ma, mi, "virtual") for ma in range(5, major + 1) for mi in range(0, 10) if (ma, mi) <= (major, minor)}
        per_gpu.append(real | virtual)
    common = set.intersection(*per_gpu)
    ordered = sorted(common, key=lambda v: (v[2] == "virtual", -v[0], -v[1]))
    return [f"{ma}{mi}_{kind}" for ma, mi, kind in ordered]


def _machine_words(machine: Machine) -> str:
    gpus = ", ".join(f"{g.name or 'GPU'} (sm_{g.compute_capability[0]}{g.compute_capability[1]})" for g in machine.gpus if g.compute_capability)
    driver = f"driver {machine.driver}" if machine.driver else "no NVIDIA driver"
    return f"{machine.platform}, {driver}" + (f", {gpus}" if gpus else "")
