"""The framework providers: one module per framework family, behind one registry, as emit's
formats are. The solver asks the registry; it names no framework.

A provider module satisfies frameworks/protocol.Provider (the type checker holds each to it in
frameworks/conformance.py): FAMILY and MEMBERS (the distributions a spec may name, the family's own
package first), REQUIRES (the families it is built against: xformers, torch) and BRINGS (other
families' packages it pins: vllm, torchvision), and known_extras, releases, implied, check_extras,
pairs and candidates (the builds that run on a machine, best first, and the rejections).

Beside it, its reader module (`<module>_data.py`) defines DATA_PREFIX (its files under matrices/,
e.g. "pytorch/torch-") and read_file(file, doc, toolkits, dates) -> its release records from one
file (validated with cudafit.fields). Only a data cache miss imports the readers (start-up).

A new framework is a module here, its reader, its data folder, its tests and one line in REGISTRY."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

from packaging.version import Version

from cudafit.records import Matrices

if TYPE_CHECKING:
    from cudafit.frameworks.protocol import Provider

# (family, module, members), in the order of `--why` and of the docs. The registry is read without
# importing a provider: a run imports only those of the frameworks it asks about (start-up);
# tests/test_frameworks.py holds each line equal to its module's FAMILY and MEMBERS.
REGISTRY: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("torch", "pytorch", ("torch", "torchvision", "torchaudio")),
    ("tensorflow", "tensorflow", ("tensorflow", "tensorflow-cpu")),
    ("jax", "jax", ("jax", "jaxlib")),
    ("onnxruntime-gpu", "onnxruntime", ("onnxruntime-gpu",)),
    ("xformers", "xformers", ("xformers",)),
    ("flash-attn", "flash_attn", ("flash-attn",)),
    ("vllm", "vllm", ("vllm",)),
    ("torchao", "torchao", ("torchao",)),
    ("bitsandbytes", "bitsandbytes", ("bitsandbytes",)),
)


class _Providers(Mapping[str, "Provider"]):
    """name -> provider module, imported on first use."""

    def __init__(self, modules: dict[str, str]) -> None:
        self._modules = modules

    def __getitem__(self, name: str) -> Provider:
        # a module; frameworks/conformance.py has the type checker hold each to the protocol
        return cast("Provider", import_module(f"{__name__}.{self._modules[name]}"))

    def __contains__(self, name: object) -> bool:
        return name in self._modules

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __len__(self) -> int:
        return len(self._modules)


BY_FAMILY = _Providers({family: module for family, module, _members in REGISTRY})
BY_MEMBER = _Providers({member: module for _family, module, members in REGISTRY for member in members})
KNOWN = ", ".join(BY_MEMBER)
DEFAULT_SPEC = "torch"  # what `resolve` asks for without a spec (the CLI contract)


def families() -> tuple[str, ...]:
    """Every family's name, without importing a provider."""
    return tuple(family for family, _module, _members in REGISTRY)


def providers() -> tuple[Provider, ...]:
    """Every provider, imported (coverage, check, the registry's tests)."""
    return tuple(BY_FAMILY[family] for family, _module, _members in REGISTRY)


def readers() -> dict[str, ModuleType]:
    """family -> its reader of the data files, imported (a data cache miss, `data check`)."""
    return {family: import_module(f"{__name__}.{module}_data") for family, module, _members in REGISTRY}


def reader_files() -> list[str]:
    """The paths of the modules that read each provider's data files, and of the providers, which
    may define the family's release record (the data cache depends on them)."""
    here = os.path.dirname(__file__)
    return [os.path.join(here, f"{module}{part}.py") for _family, module, _members in REGISTRY for part in ("_data", "")]


def release_of(family: str, version: Version, matrices: Matrices) -> Any:
    """A family's release record of one version (its public part), or None where the data has none."""
    return next((r for r in BY_FAMILY[family].releases(matrices) if r.version == version), None)
