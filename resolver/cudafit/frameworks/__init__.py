"""The framework providers: one module per framework family, behind one registry, as emit's
formats are. The solver asks the registry; it names no framework.

A provider module defines:
- FAMILY (its family name, e.g. "torch") and MEMBERS (the distributions a spec may name, the
  family's own package first: torch, torchvision, torchaudio);
- DATA_PREFIX (its files under matrices/, e.g. "pytorch/torch-") and read_file(file, doc,
  toolkits, dates) -> its release records from one file (validated with cudafit.fields);
- known_extras(matrices) -> set[str]: the extras a spec may ask for;
- releases(matrices) -> the family's release records, newest first (each has .version);
- implied(member_specs) -> member_specs: members a spec brings along (torchvision brings torch);
- check_extras(extras) -> Optional[str]: why a set of extras cannot go together, or None;
- pairs(member, version, matrices) -> the family versions a member's version pairs with (--why);
- candidates(specs, machine, matrices, policy, extras) -> (runnable builds best first, rejections);
- optionally REQUIRES: the families a library is built against (xformers: torch), solved with it.

A new framework is a module here, its data folder, its tests and one line in PROVIDERS."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from packaging.version import Version

from cudafit.frameworks import bitsandbytes, flash_attn, jax, onnxruntime, pytorch, tensorflow, torchao, vllm, xformers
from cudafit.records import Matrices

PROVIDERS: tuple[ModuleType, ...] = (
    pytorch,
    tensorflow,
    jax,
    onnxruntime,
    xformers,
    flash_attn,
    vllm,
    torchao,
    bitsandbytes,
)  # the order of `--why` and of the docs
BY_MEMBER: dict[str, ModuleType] = {member: module for module in PROVIDERS for member in module.MEMBERS}
BY_FAMILY: dict[str, ModuleType] = {module.FAMILY: module for module in PROVIDERS}
KNOWN = ", ".join(BY_MEMBER)
DEFAULT_SPEC = "torch"  # what `resolve` asks for without a spec (the CLI contract)


def release_of(family: str, version: Version, matrices: Matrices) -> Any:
    """A family's release record of one version (its public part), or None where the data has none."""
    return next((r for r in BY_FAMILY[family].releases(matrices) if r.version == version), None)
