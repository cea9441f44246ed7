"""--format variant-env: the overrides NVIDIA's variant provider reads in place of detecting the
GPU (NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION and NV_VARIANT_PROVIDER_FORCE_SM_ARCH), as
KEY=VALUE lines for `docker run --env-file`, a Dockerfile's ENV or `set -a; . FILE`. uv's
`wheel-variants` preview (0.13.6 to 0.13.9 at least, checked by tests/test_variant_properties.py)
reads no static property file, only these, in its built-in copy of the provider; PyTorch's own
variant CI sets the same two. The provider takes one GPU: the lowest of the described ones, since a
variant with SASS for it and the driver's CUDA is the one the others most likely run too; where the
GPUs' majors differ, the file says it cannot promise that (nor can any one set of properties)."""

from __future__ import annotations

from cudafit.answers import Resolution
from cudafit.emit import GENERATED, EmitOptions
from cudafit.emit.variant_properties import machine_words, mixed_majors, umd
from cudafit.records import Machine


def render(resolution: Resolution, options: EmitOptions) -> str:
    return render_machines((resolution.machine,), options.described or machine_words(resolution.machine))


def render_machines(machines: tuple[Machine, ...], described: str) -> str:
    lines = [
        f"# wheel-variant provider overrides for {described}{GENERATED}",
        "# uv's wheel-variant preview reads them in place of detecting the GPU (docker run --env-file FILE,",
        "# or: set -a; . FILE; set +a; uv pip install --preview-features wheel-variants ...)",
    ]
    ccs = []
    for machine in machines:
        mine = [g.compute_capability for g in machine.gpus if g.vendor == "nvidia" and g.compute_capability is not None]
        if not mine or (machine.driver_known and machine.driver is None):
            lines.append("# a machine described has no NVIDIA GPU or driver: there is nothing to force, and the provider")
            lines.append("# cannot be told there is none; resolve where no GPU is present, or pin the null variant")
            return "\n".join(lines) + "\n"
        ccs += mine
    driver = min(umd(m, "variant-env") for m in machines)  # the oldest driver bounds what every machine runs
    lowest = min(ccs)
    if mixed_majors(machines):
        lines.append(f"# the GPUs span compute capabilities {mixed_majors(machines)}: the provider takes one (the lowest")
        lines.append("# here), so a variant it picks may lack SASS for the others; check it with cudafit check")
    lines.append(f"NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION={driver[0]}.{driver[1]}")
    lines.append(f"NV_VARIANT_PROVIDER_FORCE_SM_ARCH={lowest[0]}.{lowest[1]}")
    return "\n".join(lines) + "\n"
