"""The options several commands share, each collected into one plain value: the machine
description (MachineOptions) and the policy (records.Policy); and the data every command reads."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Optional, TypeVar

import click

from cudafit.machine import MachineOptions

if TYPE_CHECKING:
    from cudafit.records import Matrices

R = TypeVar("R")


def machine_options(func: Callable[..., R]) -> Callable[..., R]:
    options = [
        click.option("--driver", metavar="VERSION", help="NVIDIA driver version as nvidia-smi prints it; 'none' for no driver."),
        click.option("--gpu", "gpus", metavar="NAME", multiple=True, help="A GPU by its nvidia-smi name (repeatable)."),
        click.option("--compute-capability", "ccs", metavar="X.Y", multiple=True, help="A GPU by compute capability (repeatable)."),
        click.option("--gfx", "gfx", metavar="gfxNNNN", multiple=True, help="An AMD GPU by its LLVM target, as rocminfo prints it (repeatable)."),
        click.option("--os", "os_name", metavar="linux|windows|macos|wsl", help="The operating system."),
        click.option("--arch", metavar="x86_64|aarch64", help="The CPU architecture (arm64 = aarch64)."),
        click.option("--python", metavar="X.Y", help="The target Python."),
        click.option("--jetson", is_flag=True, help="An NVIDIA Jetson (L4T) board."),
        click.option("--jetpack", metavar="X.Y", help="A Jetson's JetPack release (implies --jetson)."),
        click.option("--macos", "macos_version", metavar="X.Y", help="The macOS version (wheels carry a minimum macOS)."),
        click.option("--rocm", metavar="X.Y", help="The ROCm installed on the host (/opt/rocm), which JAX's ROCm plugin needs; 'none' for none."),
    ]

    @functools.wraps(func)
    def collect(
        *args: Any,
        driver: Optional[str],
        gpus: tuple[str, ...],
        ccs: tuple[str, ...],
        gfx: tuple[str, ...],
        os_name: Optional[str],
        arch: Optional[str],
        python: Optional[str],
        jetson: bool,
        jetpack: Optional[str],
        macos_version: Optional[str],
        rocm: Optional[str],
        **kwargs: Any,
    ) -> R:
        # The description becomes one plain object, so a command takes the machine as one value.
        described = MachineOptions(
            driver=driver,
            gpus=tuple(gpus),
            compute_capabilities=tuple(ccs),
            os=os_name,
            arch=arch,
            python=python,
            jetson=jetson,
            macos=macos_version,
            gfx=tuple(gfx),
            jetpack=jetpack,
            rocm=rocm,
        )
        return func(*args, described=described, **kwargs)

    for option in reversed(options):
        collect = option(collect)
    return collect


def policy_options(func: Callable[..., R]) -> Callable[..., R]:
    """--strict-driver, --cpu and --mixed-cuda, collected into one Policy (records.Policy)."""
    options = [
        click.option("--strict-driver", is_flag=True, help="Demand each CUDA toolkit's own driver (no minor-version compatibility)."),
        click.option("--cpu", is_flag=True, help="A CPU-only build even where a GPU is present."),
        click.option("--mixed-cuda", is_flag=True, help="Allow frameworks on different CUDA majors in one environment."),
    ]

    @functools.wraps(func)
    def collect(*args: Any, strict_driver: bool, cpu: bool, mixed_cuda: bool, **kwargs: Any) -> R:
        from cudafit.records import Policy

        return func(*args, policy=Policy(strict_driver=strict_driver, cpu=cpu, mixed_cuda=mixed_cuda), **kwargs)

    for option in reversed(options):
        collect = option(collect)
    return collect


class InventoryFlags(NamedTuple):
    """How to read a fleet inventory, as given (cli/fleet.reading_options checks them)."""

    pool_label: Optional[str] = None
    gres_map: tuple[str, ...] = ()
    driver_feature: Optional[str] = None
    default_driver: Optional[str] = None


def inventory_options(func: Callable[..., R]) -> Callable[..., R]:
    """--pool-label, --gres-map, --driver-feature and --default-driver, collected into one InventoryFlags."""
    options = [
        click.option("--pool-label", metavar="KEY", help="The node label that names a node's pool (Kubernetes)."),
        click.option(
            "--gres-map",
            "gres_map",
            multiple=True,
            metavar="TYPE=GPU NAME",
            help="A Slurm GRES type and the GPU it is (repeatable): a100='NVIDIA A100-SXM4-80GB'. A type naming a GPU family (h100, gh200) needs none.",
        ),
        click.option("--driver-feature", metavar="REGEX", help="A Slurm node feature holding the driver, with one group: 'nvdriver_(.+)'."),
        click.option(
            "--default-driver",
            metavar="VERSION",
            help="The driver of nodes whose inventory names none (Slurm features, Kubernetes nodes without GFD driver labels, older dcgm-exporters).",
        ),
    ]

    @functools.wraps(func)
    def collect(
        *args: Any, pool_label: Optional[str], gres_map: tuple[str, ...], driver_feature: Optional[str], default_driver: Optional[str], **kwargs: Any
    ) -> R:
        return func(*args, inventory_flags=InventoryFlags(pool_label, tuple(gres_map), driver_feature, default_driver), **kwargs)

    for option in reversed(options):
        collect = option(collect)
    return collect


def load_matrices() -> Matrices:
    from cudafit.loader import load

    return load()
