"""Which of a lock's wheel variants of torch an installer takes on a target machine (PEP 825: the
variant whose every feature has a value the machine's providers report, the most preferred first),
so the checks judge the build it repacks (`cuda12.8` is torch's +cu128 build, per
matrices/torch-variants.toml) against the target's GPU and driver.

It predicts NVIDIA's provider as uv's preview runs it: the driver's CUDA version against the
label's lower bound, and the highest GPU's SASS of its major up to its minor, or PTX of its major's
first minor. Labels are preferred by CUDA version, newest first, as PyTorch's `priority` namespace
ranks them. Where no label runs on the target and the lock has a null variant, the installer takes
that one, which the data does not describe: no claim."""

from __future__ import annotations

from typing import Optional

from packaging.version import Version

from cudafit.records import Machine, Matrices
from cudafit.variant_labels import VariantLabel


def label_build(name: str, version: Optional[str], labels: tuple[str, ...], machine: Optional[Machine], matrices: Matrices) -> Optional[str]:
    """The local tag of the build the installer takes from these labels (cu128), or None."""
    if name != "torch" or version is None or not labels:
        return None
    known = [v for v in matrices.torch_variant_labels if v.torch == version and v.label in labels and v.cuda_lower]
    if not known:
        return None
    ranked = sorted(known, key=lambda v: Version(v.cuda_lower + "." + v.tag.removeprefix("cu")), reverse=True)
    if machine is None:
        return ranked[0].tag if len(ranked) == 1 else None
    gpus = [g.compute_capability for g in machine.gpus if g.vendor == "nvidia" and g.compute_capability is not None]
    if not gpus:
        return None  # no NVIDIA GPU: the provider reports nothing; what the installer takes is not ours to say
    admitted = [v for v in ranked if _admits(v, max(gpus), machine.cuda_driver_max)]
    if admitted:
        return admitted[0].tag
    if "null" in labels:
        return None
    return ranked[0].tag  # none runs there: the installer refuses, and the checks say why with the build's lists


def _admits(label: VariantLabel, cc: tuple[int, int], driver_cuda: Optional[str]) -> bool:
    if driver_cuda is not None and Version(label.cuda_lower) > Version(driver_cuda):
        return False
    major, minor = cc
    return any(a == major and b <= minor for a, b in label.sm_real) or (major, 0) in label.sm_virtual
