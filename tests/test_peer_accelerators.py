"""cudafit beside its peers on AMD and Intel machines (issue 26): the cases uv's `--torch-backend
auto` (astral-sh/uv crates/uv-torch at 26a9dd4b: its AMD table and detection order) and
torchruntime (easydiffusion/torchruntime tests/test_platform_detection.py at 33277c64) decide,
with what each answers, read from their code, and cudafit's answer with why it differs. Only
cudafit's answer is run; the peers' answers are recorded to keep the comparison in view."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudafit.cli import main

SYSFS = Path(__file__).parent / "fixtures" / "sysfs"
LINUX = ("--os", "linux", "--arch", "x86_64", "--python", "3.12")

# (case, cudafit's description of the machine, uv's answer, torchruntime's answer, cudafit's answer, why cudafit differs)
CASES = [
    (
        "RX 7900 XTX",
        ("--gpu", "AMD Radeon RX 7900 XTX"),
        "rocm7.2 first",
        "rocm6.2",
        "torch==2.14.1+rocm7.14",
        "uv's table stops at ROCm 7.2; torchruntime's indexes are stale (its rocm6.2 stops at torch 2.5.1)",
    ),
    (
        "RX 9070 XT",
        ("--gpu", "AMD Radeon RX 9070 XT"),
        "rocm7.2 first",
        "rocm6.4 (and HSA_OVERRIDE_GFX_VERSION=12.0.0, which makes gfx1201 a gfx1200)",
        "torch==2.14.1+rocm7.14",
        "no override: gfx1201 is in the build's own list",
    ),
    (
        "Radeon VII",
        ("--gpu", "AMD Radeon VII"),
        "rocm7.2 first",
        "rocm5.7",
        "torch==2.9.1+rocm6.3",
        "the rocm6.4 and later builds list gfx906 but their rocBLAS has none of its kernels; rocm6.3 is the last that runs it",
    ),
    (
        "Phoenix APU (780M)",
        ("--gpu", "AMD Radeon 780M Graphics"),
        "cpu (gfx1103 unknown to uv, dropped silently)",
        "rocm6.2 with an override to 11.0.x",
        "torch==2.14.1+rocm7.14",
        "2.13 and later list gfx1103 themselves; overrides on it are reported to page-fault, so none is set, and the missing rocBLAS kernels are said",
    ),
    (
        "RX 6700 XT",
        ("--gpu", "AMD Radeon RX 6700 XT"),
        "cpu (gfx1031 unknown to uv)",
        "rocm6.2 with HSA_OVERRIDE_GFX_VERSION=10.3.0",
        "torch==2.14.1+rocm7.14",
        "the same override, said as users' workaround with its sources, on the newest build with gfx1030 kernels",
    ),
    (
        "RX 5700 XT",
        ("--gpu", "AMD Radeon RX 5700 XT"),
        "cpu",
        "rocm5.2",
        "torch==2.15.0+cpu",
        "no torch ROCm build carries gfx1010 kernels and the 10.3.0 override is reported to crash on it: a CPU build, said",
    ),
    ("MI355X", ("--gpu", "AMD Instinct MI355X"), "rocm7.2 first", "no rule for Instinct", "torch==2.14.1+rocm7.14", "newer ROCm"),
    (
        "Strix Halo",
        ("--gpu", "AMD Radeon 8060S Graphics"),
        "rocm7.2",
        "rocm6.2 (gfx11 APU rule)",
        "torch==2.14.1+rocm7.14",
        "gfx1151 is in the 2.10+ lists; rocm6.2's builds have no gfx1151 kernels",
    ),
    (
        "RX 7900 XTX and Radeon VII",
        ("--gpu", "AMD Radeon RX 7900 XTX", "--gpu", "AMD Radeon VII"),
        "rocm7.2 first (the lower arch decides)",
        "rocm5.7",
        "torch==2.9.1+rocm6.3",
        "one build must carry kernels and BLAS for both GPUs",
    ),
    (
        "Intel UHD 770 only",
        (),
        "xpu (any Intel display device)",
        "xpu",
        "torch==2.15.0+cpu",
        "no XPU build supports UHD graphics (PyTorch's XPU docs list Arc, Core Ultra H, Lunar Lake, Panther Lake and Max)",
    ),
    ("Arc A770", ("--gpu", "Intel(R) Arc(TM) A770 Graphics"), "xpu", "xpu", "torch==2.15.0+xpu", "agrees"),
    (
        "RTX 3060 beside a Phoenix iGPU",
        ("--driver", "580.95.05", "--gpu", "NVIDIA GeForce RTX 3060", "--gpu", "AMD Radeon 780M Graphics"),
        "cu132 first",
        "cu128",
        "torch==2.15.0+cu132",
        "agrees on NVIDIA; the iGPU left out is said",
    ),
]


@pytest.mark.parametrize("case, machine, uv, torchruntime, expected, why", CASES, ids=[c[0] for c in CASES])
def test_cudafit_beside_uv_and_torchruntime(case, machine, uv, torchruntime, expected, why):
    env = {"CUDAFIT_SYSFS_ROOT": str(SYSFS / "uhd770-only")} if not machine else {}
    args = ["resolve", "torch", *LINUX, *machine, "--json"]
    result = CliRunner().invoke(main, args, env=env)
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["packages"][0]["requirement"] == expected, (case, uv, torchruntime, why)


def test_windows_amd_is_amds_rocm_build_where_torchruntime_says_directml():
    # torchruntime answers DirectML (torch-directml, stuck at torch 2.4); uv answers cpu (it knows the
    # PyTorch index only, which has no Windows ROCm). cudafit: AMD's own Windows build, from AMD's index
    result = CliRunner().invoke(
        main, ["resolve", "torch", "--os", "windows", "--arch", "x86_64", "--python", "3.12", "--gpu", "AMD Radeon RX 7900 XTX", "--json"]
    )
    data = json.loads(result.stdout)
    assert data["packages"][0]["requirement"] == "torch[device-gfx1100]==2.14.0+rocm10.1.0"
    assert data["packages"][0]["index_url"] == "https://stable.repo.amd.com/rocm/whl-next/"
