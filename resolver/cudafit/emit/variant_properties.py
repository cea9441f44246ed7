"""--format variant-properties: the static wheel-variant properties of a described machine, in the
file uv's 2025 wheel-variant prototype (branch konsti/wheel-variant-auto) read from UV_VARIANT_LOCK
instead of running providers: [metadata] version/created-by, then one [[provider]] per namespace
with its [provider.properties], each feature's values in priority order. It is the providers PEP
draft's "static list" (python/peps#5133). uv's released preview (0.13.x) reads no such file, only
the provider's override variables: `--format variant-env` writes those.

The `nvidia` namespace follows NVIDIA's provider (wheelnext/nvidia-variant-provider, plugin.py at
commit 2ab96595) for the driver: `cuda_version_lower_bound` every CUDA version the driver runs
(its own down to 11, each major also alone), `cuda_version_upper_bound` every version above it.
For `sm_arch` it differs where the provider cannot see: the lowest GPU of the machine (or fleet)
counts, not the highest, since it is the one a variant's SASS must reach; a variant's values are
alternatives (it fits where any is supported), so no one set says "code for every GPU": where the
majors differ, a variant with SASS for the lowest only is admitted too, and the file says so. PTX
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
    return render_machines((resolution.machine,), options.described or machine_words(resolution.machine))


def render_machines(machines: tuple[Machine, ...], described: str) -> str:
    """The properties every one of the machines supports (a fleet's node classes: a variant the
    file admits must run on each)."""
    import tomlkit

    from cudafit.version import __version__

    doc = tomlkit.document()
    doc.add(tomlkit.comment(f"static wheel-variant properties for {described}{GENERATED}"))
    doc.add(tomlkit.comment("the static properties a variant provider would report; uv 0.13 reads --format variant-env instead"))
    if mixed_majors(machines):
        doc.add(tomlkit.comment(f"the GPUs span compute capabilities {mixed_majors(machines)}: sm_arch is the lowest's, so a variant"))
        doc.add(tomlkit.comment("with SASS for it alone is admitted too; check what gets picked with cudafit check"))
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
    umds = [umd(m) for m in machines]
    # a lower bound every driver meets is at most the oldest's; an upper one above the newest's
    out = {"cuda_version_lower_bound": _lower_bounds(min(umds)), "cuda_version_upper_bound": _upper_bounds(max(umds))}
    arch = _sm_arch(ccs)
    if arch:
        out["sm_arch"] = arch
    return out


def umd(machine: Machine, fmt: str = "variant-properties") -> tuple[int, int]:
    """The CUDA version the driver runs (nvidia-smi's "CUDA Version", or the data's for the driver)."""
    text: Optional[str] = machine.cuda_driver_max
    if text is None:
        raise InputError(
            "variant properties need the driver (its CUDA version bounds the variants): give --driver",
            field="format",
            value=fmt,
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
    """For the lowest GPU: SASS of its major up to its minor, and PTX of every architecture up to
    it, highest first. (The intersection over the GPUs would refuse torch's own labels on an A100
    beside an H100: no SASS runs on both, yet a label listing 80_real and 90_real runs on each.)"""
    major, minor = min(ccs)
    real = [(major, m, "real") for m in range(minor, -1, -1)]
    virtual = sorted(((ma, mi, "virtual") for ma in range(5, major + 1) for mi in range(0, 10) if (ma, mi) <= (major, minor)), reverse=True)
    return [f"{ma}{mi}_{kind}" for ma, mi, kind in real + virtual]


def mixed_majors(machines: tuple[Machine, ...]) -> str:
    """'7.0, 9.0' where the NVIDIA GPUs span majors (one set cannot promise code for each), else ''."""
    ccs = sorted({g.compute_capability for m in machines for g in m.gpus if g.vendor == "nvidia" and g.compute_capability is not None})
    return ", ".join(f"{a}.{b}" for a, b in ccs) if len({a for a, _ in ccs}) > 1 else ""


def machine_words(machine: Machine) -> str:
    gpus = ", ".join(f"{g.name or 'GPU'} (sm_{g.compute_capability[0]}{g.compute_capability[1]})" for g in machine.gpus if g.compute_capability)
    driver = f"driver {machine.driver}" if machine.driver else "no NVIDIA driver"
    return f"{machine.platform}, {driver}" + (f", {gpus}" if gpus else "")
