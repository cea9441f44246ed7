"""AMD ROCm and Intel XPU machines (issue 26): described by name or LLVM target, detected from the
kernel's own files (trees of real machines in fixtures/sysfs), and answered with the newest build
whose kernels cover the GPU, its reasons, and what it needs to run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudafit.cli import main
from cudafit.machine import MachineOptions, build_machine
from cudafit.records import Policy
from cudafit.resolution import resolve
from cudafit.sysfs_gpus import read as read_sysfs
from cudafit.vendor_gpus import gfx_of_kfd

SYSFS = Path(__file__).parent / "fixtures" / "sysfs"
LINUX = ["--os", "linux", "--arch", "x86_64", "--python", "3.12"]


def cli(*args: str, sysfs: str = "") -> tuple[int, str, str]:
    env = {"CUDAFIT_SYSFS_ROOT": str(SYSFS / sysfs)} if sysfs else {}
    result = CliRunner().invoke(main, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def answer(*args: str, sysfs: str = "") -> dict:
    code, out, err = cli("resolve", *args, "--json", sysfs=sysfs)
    assert code in (0, 1), err
    return json.loads(out)


def chosen(data: dict) -> list[str]:
    return [p["requirement"] for p in data.get("packages", [])]


@pytest.mark.parametrize(
    "value, target",
    [(110000, "gfx1100"), (90010, "gfx90a"), (90402, "gfx942"), (120001, "gfx1201"), (100306, "gfx1036"), (90006, "gfx906"), (110500, "gfx1150")],
)
def test_kfd_target_versions_name_llvm_targets(value, target):
    assert gfx_of_kfd(value) == target


@pytest.mark.parametrize(
    "gpu, expected, why",
    [
        # RDNA3: the newest release whose existence the project declares; 2.15's ROCm folders are only reported
        ("AMD Radeon RX 7900 XTX", "torch==2.14.1+rocm7.14", "kernels for gfx1100"),
        ("AMD Instinct MI300X", "torch==2.14.1+rocm7.14", "kernels for gfx942"),
        ("AMD Instinct MI355X", "torch==2.14.1+rocm7.14", "kernels for gfx950"),
        ("AMD Radeon RX 9070 XT", "torch==2.14.1+rocm7.14", "kernels for gfx1201"),
        ("AMD Radeon 8060S Graphics", "torch==2.14.1+rocm7.14", "kernels for gfx1151"),
        # gfx906: listed by the rocm6.4+ builds, but their rocBLAS has no kernels for it: rocm6.3 is the last
        ("AMD Radeon VII", "torch==2.9.1+rocm6.3", "kernels for gfx906"),
        ("AMD Instinct MI50", "torch==2.9.1+rocm6.3", "kernels for gfx906"),
        # the RDNA2 cards outside every list run on gfx1030's kernels through the reported override
        ("AMD Radeon RX 6700 XT", "torch==2.14.1+rocm7.14", "kernels for gfx1030"),
        # RDNA1 has no build at all: a CPU build, said
        ("AMD Radeon RX 5700 XT", "torch==2.15.0+cpu", "CPU build"),
    ],
)
def test_amd_gpus_by_name_get_the_newest_build_with_their_kernels(gpu, expected, why):
    data = answer("torch", *LINUX, "--gpu", gpu)
    assert data["ok"] and chosen(data) == [expected]
    assert data["machine"]["gpus"][0]["vendor"] == "amd" and data["machine"]["gpus"][0]["target"].startswith("gfx")
    code, out, _err = cli("resolve", "torch", *LINUX, "--gpu", gpu)
    assert code == 0 and why in out


def test_the_override_is_named_as_a_workaround_and_set_in_every_format():
    data = answer("torch", *LINUX, "--gpu", "AMD Radeon RX 6700 XT")
    assert data["environment"] == {"HSA_OVERRIDE_GFX_VERSION": "10.3.0"}
    assert any("HSA_OVERRIDE_GFX_VERSION=10.3.0" in w and "not AMD support" in w for w in data["warnings"])
    _code, pip, _err = cli("resolve", "torch", *LINUX, "--gpu", "AMD Radeon RX 6700 XT", "--format", "pip")
    assert "export HSA_OVERRIDE_GFX_VERSION=10.3.0" in pip
    _code, yml, _err = cli("resolve", "torch", *LINUX, "--gpu", "AMD Radeon RX 6700 XT", "--format", "environment.yml")
    assert 'variables:\n  HSA_OVERRIDE_GFX_VERSION: "10.3.0"' in yml
    # a GPU with a known override that breaks it (gfx1103) gets none
    data = answer("torch", *LINUX, "--gpu", "AMD Radeon 780M Graphics")
    assert "environment" not in data and any(w.startswith("AMD Radeon 780M Graphics (gfx1103): rocBLAS had no kernels") for w in data["warnings"])


def test_why_not_names_the_missing_blas_kernels_for_gfx906():
    code, out, _err = cli("resolve", "torch", *LINUX, "--gpu", "AMD Radeon VII", "--why", "torch==2.14.1")
    assert code == 0
    assert "rocBLAS has no kernels for gfx906" in out and "no kernels for AMD Radeon VII (gfx906)" in out
    data = answer("torch==2.15.0", *LINUX, "--gpu", "AMD Radeon VII", "--cpu")
    assert chosen(data) == ["torch==2.15.0+cpu"]


def test_a_gfx_target_describes_an_amd_gpu():
    assert chosen(answer("torch", *LINUX, "--gfx", "gfx1100")) == ["torch==2.14.1+rocm7.14"]
    assert chosen(answer("torch<2.14", *LINUX, "--gfx", "gfx906")) == ["torch==2.9.1+rocm6.3"]
    code, _out, err = cli("resolve", "torch", *LINUX, "--gfx", "gfx1111")
    assert code == 2 and "--gfx 'gfx1111': no AMD GPU of cudafit's data has it" in err
    code, _out, err = cli("resolve", "torch", *LINUX, "--gfx", "rx7900")
    assert code == 2 and "--gfx 'rx7900': expected an AMD LLVM target like gfx1100" in err
    code, _out, err = cli("resolve", "torch", "--jetson", "--gfx", "gfx1100")
    assert code == 2 and "--jetson" in err and "Traceback" not in err


def test_windows_amd_gets_amds_own_build_with_its_device_extra():
    data = answer("torch", "torchvision", "torchaudio", "--os", "windows", "--arch", "x86_64", "--python", "3.12", "--gpu", "AMD Radeon RX 7900 XTX")
    assert chosen(data) == ["torch[device-gfx1100]==2.14.0+rocm10.1.0", "torchvision[device-gfx1100]==0.29+rocm10.1.0", "torchaudio==2.11.0.3+rocm10.1.0"]
    assert {p["index_url"] for p in data["packages"]} == {"https://stable.repo.amd.com/rocm/whl-next/"}
    assert any("Adrenalin" in w for w in data["warnings"])


@pytest.mark.parametrize(
    "args, expected",
    [
        # ROCm 10.1 has no torch 2.12 for Windows: 7.14's multi-arch index does
        (["torch<2.13", "--gpu", "RX 7900 XTX"], "torch[device-gfx1100]==2.12.0+rocm7.14.0"),
        # gfx1030 has a Windows command for 7.14 only
        (["torch", "--gpu", "RX 6800 XT"], "torch[device-gfx1030]==2.12.0+rocm7.14.0"),
        # no override on Windows: HSA_OVERRIDE_GFX_VERSION is reported on Linux only
        (["torch", "--gfx", "gfx1031"], "torch==2.15.0"),
        (["torch", "--gpu", "Radeon VII"], "torch==2.15.0"),
    ],
)
def test_windows_amd_builds_follow_amds_own_lists(args, expected):
    data = answer(*args, "--os", "windows", "--arch", "x86_64", "--python", "3.12")
    assert chosen(data)[0] == expected


def test_windows_amd_on_a_python_amd_has_no_build_for_is_a_cpu_build_and_says_why():
    data = answer("torch", "--os", "windows", "--arch", "x86_64", "--python", "3.10", "--gpu", "RX 7900 XTX")
    assert chosen(data) == ["torch==2.14.1"]  # 2.15 has no Python 3.10 wheels either
    assert any("AMD's own are for Python 3.11-3.14, not 3.10" in w for w in data["warnings"])
    code, out, _err = cli("resolve", "torch", "--os", "windows", "--python", "3.10", "--gpu", "RX 7900 XTX", "--why", "torch==2.14.0+rocm10.1.0")
    assert "no wheel for Python 3.10 (has 3.11-3.14)" in out


def test_linux_amd_keeps_the_pytorch_index_build_of_a_newer_release():
    data = answer("torch", *LINUX, "--gfx", "gfx1100")
    assert chosen(data) == ["torch==2.14.1+rocm7.14"]


def test_amds_build_routes_its_device_wheels_to_amds_index_in_a_uv_project():
    code, out, _err = cli("resolve", "torch", "--os", "windows", "--arch", "x86_64", "--python", "3.12", "--gpu", "RX 7900 XTX", "--format", "uv-project")
    assert code == 0
    assert 'url = "https://stable.repo.amd.com/rocm/whl-next/"' in out
    for name in ("torch", "rocm-sdk-device-gfx1100", "amd-torch-device-gfx1100", "amd-torch-device-gfx110x", "rocm"):
        assert f"\n{name} = {{index = " in out
    assert '"torch[device-gfx1100]==2.14.0+rocm10.1.0"' in out


@pytest.mark.parametrize(
    "gpu, expected, jit",
    [
        ("Intel(R) Arc(TM) A770 Graphics", "torch==2.15.0+xpu", False),
        ("Intel Arc B580", "torch==2.15.0+xpu", False),
        ("Intel(R) Data Center GPU Max 1550", "torch==2.15.0+xpu", False),
    ],
)
def test_intel_gpus_get_the_xpu_build(gpu, expected, jit):
    data = answer("torch", *LINUX, "--gpu", gpu)
    assert chosen(data) == [expected] and data["machine"]["gpus"][0]["vendor"] == "intel"
    assert any("compile them at first use" in w for w in data["warnings"]) == jit
    # where the list is known: precompiled kernels for it, or a slow first start said
    data = answer("torch==2.8.0", *LINUX, "--gpu", gpu)
    assert chosen(data) == ["torch==2.8.0+xpu"]


def test_arc_on_torch_2_6_linux_compiles_its_kernels_at_first_use():
    data = answer("torch==2.6.0", *LINUX, "--gpu", "Intel(R) Arc(TM) A770 Graphics")
    assert chosen(data) == ["torch==2.6.0+xpu"]
    assert any("no precompiled XPU kernels for Intel(R) Arc(TM) A770 Graphics (dg2)" in w for w in data["warnings"])


def test_an_nvidia_gpu_beside_an_amd_igpu_is_the_one_answered():
    data = answer("torch", *LINUX, "--driver", "580.95.05", "--gpu", "NVIDIA GeForce RTX 4090", "--gpu", "AMD Radeon 610M")
    assert chosen(data)[0].startswith("torch==2.15.0+cu13")
    assert any("the answer is for the NVIDIA GPU; AMD Radeon 610M (gfx1036) is left out" in w for w in data["warnings"])


def test_a_discrete_amd_gpu_outranks_the_igpu_beside_it():
    data = answer("torch", *LINUX, "--gpu", "AMD Radeon RX 7900 XTX", "--gpu", "AMD Radeon 610M")
    assert chosen(data) == ["torch==2.14.1+rocm7.14"]
    assert any("AMD Radeon 610M (gfx1036) is left out" in w and "HIP_VISIBLE_DEVICES" in w for w in data["warnings"])


def test_uv_project_routes_what_only_the_rocm_index_serves():
    _code, text, _err = cli("resolve", "torch", *LINUX, "--gpu", "AMD Radeon RX 7900 XTX", "--format", "uv-project")
    assert 'triton-rocm = {index = "pytorch-rocm7.14"}' in text and 'rocm-sdk-device-gfx1100 = {index = "pytorch-rocm7.14"}' in text
    _code, text, _err = cli("resolve", "torch==2.9.1", *LINUX, "--gpu", "AMD Radeon VII", "--format", "uv-project")
    assert 'pytorch-triton-rocm = {index = "pytorch-rocm6.3"}' in text and "rocm-sdk" not in text


# --- detection from the kernel's files ----------------------------------------------------------


@pytest.mark.parametrize(
    "tree, targets, names",
    [
        ("rx7900xtx", ["gfx1100"], [None]),  # one PCI id for the XTX, XT and GRE: the target says what matters
        ("mi300x", ["gfx942", "gfx942"], ["AMD Instinct MI300X"] * 2),  # KFD names no device id: the PCI devices, in order
        ("vii-w7500", ["gfx906", "gfx1102"], ["AMD Radeon VII", "AMD Radeon Pro W7500"]),
        ("strix-point", ["gfx1150"], [None]),
        ("r9700x4", ["gfx1201"] * 4, ["AMD Radeon AI PRO R9700"] * 4),
        ("arc-a770", ["dg2"], ["Intel(R) Arc(TM) A770 Graphics"]),  # the UHD 770 iGPU is no XPU device
    ],
)
def test_gpus_are_read_from_sysfs_without_vendor_tools(tree, targets, names, matrices):
    reading = read_sysfs(matrices, SYSFS / tree)
    assert [g.target for g in reading.gpus] == targets
    assert [g.name for g in reading.gpus] == names
    assert reading.warnings == ()


def test_an_apu_is_integrated_and_the_dkms_version_is_read(matrices):
    assert read_sysfs(matrices, SYSFS / "strix-point").gpus[0].integrated
    assert read_sysfs(matrices, SYSFS / "rx7900xtx").amdgpu_version == "6.16.13"
    assert read_sysfs(matrices, SYSFS / "mi300x").amdgpu_version is None  # the kernel's own amdgpu


def test_an_amd_card_without_kfd_is_named_and_warned(matrices):
    reading = read_sysfs(matrices, SYSFS / "amd-no-kfd")
    assert [g.target for g in reading.gpus] == ["gfx1100"]
    assert any("no KFD topology" in w for w in reading.warnings) and any("no /dev/kfd" in w for w in reading.warnings)


def test_a_kfd_the_user_cannot_open_is_said(matrices, monkeypatch):
    import cudafit.sysfs_gpus as sysfs_gpus

    # as the kernel answers a user outside the render group (root, which runs the tests in CI, may open any file)
    monkeypatch.setattr(sysfs_gpus.os, "access", lambda path, mode: not str(path).endswith("/dev/kfd"))
    warnings = read_sysfs(matrices, SYSFS / "rx7900xtx").warnings
    assert any("render and video groups" in w for w in warnings)


def test_detected_amd_machine_is_answered(monkeypatch, matrices):
    monkeypatch.setenv("CUDAFIT_SYSFS_ROOT", str(SYSFS / "vii-w7500"))
    machine = build_machine(MachineOptions(os="linux", arch="x86_64", python="3.12"), matrices, reader=_no_nvidia)
    res = resolve(["torch"], machine, matrices, Policy())
    # both GPUs need one build: rocm6.3 of 2.9 is the newest that has gfx906 and gfx1102 kernels and BLAS
    assert [p.requirement for p in res.packages] == ["torch==2.9.1+rocm6.3"]


def test_detected_hybrid_answers_for_nvidia(monkeypatch, matrices):
    from cudafit.detection import DriverReading
    from cudafit.records import GpuInfo

    monkeypatch.setenv("CUDAFIT_SYSFS_ROOT", str(SYSFS / "hybrid-4090-raphael"))

    def rtx4090(*args, **kwargs):
        return DriverReading("580.95.05", True, (GpuInfo("NVIDIA GeForce RTX 4090", (8, 9), 24564),), True, "13.0", ())

    machine = build_machine(MachineOptions(os="linux", arch="x86_64", python="3.12"), matrices, reader=rtx4090)
    assert [g.vendor for g in machine.gpus] == ["nvidia", "amd"]
    assert any("is left out" in w for w in machine.warnings)
    res = resolve(["torch"], machine, matrices, Policy())
    assert res.packages[0].local.startswith("cu13")


def test_detect_prints_amd_gpus_by_target():
    code, out, _err = cli("detect", "--python", "3.12", sysfs="vii-w7500")
    assert code == 0 and "gpu:     AMD Radeon VII (gfx906)" in out and "gpu:     AMD Radeon Pro W7500 (gfx1102)" in out


def _no_nvidia(*args, **kwargs):
    from cudafit.detection import DriverReading

    return DriverReading(None, True, (), True, None, ())


# --- Jetson boards before Thor: NVIDIA's wheels for their JetPack -------------------------------


@pytest.mark.parametrize(
    "jetpack, python, wheel",
    [
        ("6.2", "3.10", "jp/v61/pytorch/torch-2.5.0a0+872d972e41.nv24.08.17622132-cp310-cp310-linux_aarch64.whl"),
        ("6.2.1", "3.10", "jp/v61/pytorch/torch-2.5.0a0+872d972e41.nv24.08.17622132-cp310-cp310-linux_aarch64.whl"),
        ("6.0", "3.10", "jp/v60/pytorch/torch-2.4.0a0+3bcc3cddb5.nv24.07.16234504-cp310-cp310-linux_aarch64.whl"),
        ("5.1.2", "3.8", "jp/v512/pytorch/torch-2.1.0a0+41361538.nv23.06-cp38-cp38-linux_aarch64.whl"),
        ("5.0.2", "3.8", "jp/v50/pytorch/torch-1.13.0a0+340c4120.nv22.06-cp38-cp38-linux_aarch64.whl"),
    ],
)
def test_a_jetpack_gets_nvidias_jetson_wheel(jetpack, python, wheel):
    data = answer("torch", "--jetpack", jetpack, "--python", python)
    assert data["ok"] and data["packages"][0]["requirement"].endswith(wheel)
    assert "by_driver_floor" not in data  # the JetPack brings its driver: no answer per driver floor
    assert not any(w.startswith("driver not given") for w in data["warnings"])


def test_a_jetpack_wheel_is_for_its_python_only():
    code, out, _err = cli("resolve", "torch", "--jetpack", "5.1", "--python", "3.10")
    assert code == 1 and "no wheel for Python 3.10" in out


def test_jetpack_7_is_thor_and_gets_the_server_cuda_13_build():
    data = answer("torch", "--jetpack", "7.0", "--python", "3.12")
    assert data["packages"][0]["requirement"].startswith("torch==2.15.0+cu13")
    assert data["machine"]["gpus"][0]["compute_capability"] == "11.0"


def test_bad_jetpack_values_are_one_line():
    code, _out, err = cli("resolve", "torch", "--jetpack", "4.6")
    assert code == 2 and "--jetpack '4.6': no JetPack line of cudafit's data holds it (JetPack 4's torch wheels are Python 3.6" in err
    code, _out, err = cli("resolve", "torch", "--jetpack", "six")
    assert code == 2 and "--jetpack 'six': expected a JetPack release like 6.2" in err


@pytest.mark.parametrize("tree, python, jetpack", [("orin-jp62", "3.10", "6.2"), ("orin-nano-jp511", "3.8", "5.1")])
def test_the_jetpack_is_read_from_nv_tegra_release(tree, python, jetpack):
    data = answer("torch", "--os", "linux", "--arch", "aarch64", "--python", python, sysfs=tree)
    assert data["ok"] and data["packages"][0]["variant"] == "jetson"
    code, out, _err = cli("detect", "--json", sysfs=tree)
    assert json.loads(out)["jetpack"] == jetpack


# --- fleets: AMD's Kubernetes node labeller -----------------------------------------------------

# kubectl-amd.json: an MI300X node with the labels AMD's device-plugin documentation shows for one
# (amd.com/gpu.product-name=AMD_Instinct_MI300X_OAM, device-id 74a1), a Strix Halo node as a public
# deployment guide shows it (device-id 1586, family GC_11_5_0), and an MI25 with the older labels of
# the labeller's README (beta.amd.com/gpu.device-id.6860=1).
AMD_FLEET = Path(__file__).parent / "fixtures" / "fleet" / "kubectl-amd.json"


def test_amd_node_labels_are_read_as_amd_gpus(tmp_path):
    code, out, err = cli("fleet", "resolve", "torch", "--inventory", str(AMD_FLEET), "--python", "3.12", "--json")
    # the MI25 (gfx900) runs 2.9.1+rocm6.3 only, the others 2.10 and later: no GPU build runs on every
    # class, and a CPU build is no answer on a GPU class (as on an NVIDIA fleet)
    assert code == 1, err
    data = json.loads(out)
    alone = {c["key"]: json.dumps(c["best"]) for c in data["classes"]}
    assert any("rocm7.14" in best for key, best in alone.items() if "mi300x" in key)
    assert any("rocm6.3" in best for key, best in alone.items() if "6860" in key)  # gfx900: rocm6.3 is its last
    # without the MI25, the whole fleet shares the ROCm 7.14 build
    inventory = json.loads(AMD_FLEET.read_text())
    inventory["items"] = [i for i in inventory["items"] if i["metadata"]["name"] != "old-mi25"]
    (tmp_path / "two.json").write_text(json.dumps(inventory))
    code, out, _err = cli("fleet", "resolve", "torch", "--inventory", str(tmp_path / "two.json"), "--python", "3.12")
    assert code == 0 and "every class runs: torch==2.14.1+rocm7.14" in out


# --- what a newcomer's test found -----------------------------------------------------------------


def test_a_driver_given_with_only_an_amd_gpu_is_said_and_set_aside():
    data = answer("torch", *LINUX, "--driver", "580.95.05", "--gpu", "AMD Radeon RX 7900 XTX")
    assert chosen(data) == ["torch==2.14.1+rocm7.14"]
    assert any("--driver 580.95.05 without an NVIDIA GPU" in w for w in data["warnings"])


@pytest.mark.parametrize("python", ["3.10", "3.11", "3.12"])
def test_a_build_whose_list_is_unknown_is_no_answer_for_a_target_no_known_list_holds(python):
    # torch 1.12/1.13's ROCm lists are unknown; every list the data knows leaves gfx1010 out
    data = answer("torch", "--os", "linux", "--arch", "x86_64", "--python", python, "--gpu", "AMD Radeon RX 5700 XT")
    assert chosen(data)[0].endswith("+cpu") and chosen(data)[0].startswith("torch==2.")


def test_one_override_for_two_gpus_is_not_set_the_native_one_is_answered():
    data = answer("torch", *LINUX, "--gpu", "AMD Radeon RX 6700 XT", "--gpu", "AMD Radeon RX 7900 XTX")
    assert chosen(data) == ["torch==2.14.1+rocm7.14"] and "environment" not in data
    assert any("applies to every GPU of a process" in w and "HIP_VISIBLE_DEVICES" in w for w in data["warnings"])


def test_the_override_is_not_offered_with_a_build_it_is_reported_to_crash_with():
    data = answer("torch==2.5.1", *LINUX, "--gpu", "AMD Radeon RX 6700 XT")
    assert chosen(data) == ["torch==2.5.1+rocm6.1"]


def test_an_amd_gpu_beside_an_intel_one_is_answered_and_the_intel_one_said():
    data = answer("torch", *LINUX, "--gpu", "AMD Radeon RX 7900 XTX", "--gpu", "Intel(R) Arc(TM) A770 Graphics")
    assert chosen(data) == ["torch==2.14.1+rocm7.14"]
    assert any("Intel(R) Arc(TM) A770 Graphics (dg2) is left out" in w for w in data["warnings"])


@pytest.mark.parametrize(
    "typed, target",
    [("RX 7900 XTX", "gfx1100"), ("Radeon RX 7900XTX", "gfx1100"), ("7900 XTX", "gfx1100"), ("MI300X", "gfx942"), ("780M", "gfx1103"),
     ("8060S", "gfx1151"), ("Arc A770", "dg2"), ("A770", "dg2"), ("B580", "bmg"), ("gfx1100", "gfx1100"),
     ("AMD Radeon RX 7900 XTX Phantom Gaming", "gfx1100")],  # fmt: skip
)
def test_short_and_spaced_names_are_found(typed, target):
    data = answer("torch", *LINUX, "--gpu", typed)
    assert data["machine"]["gpus"][0]["target"] == target


def test_unknown_amd_names_get_amd_suggestions_and_the_generic_name_points_to_gfx():
    code, _out, err = cli("resolve", "torch", *LINUX, "--gpu", "Radeon RX 7950 XTX")
    assert code == 2 and "did you mean 'AMD Radeon RX 7900 XTX'" in err and "--gfx" in err
    code, _out, err = cli("resolve", "torch", *LINUX, "--gpu", "AMD Radeon Graphics")
    assert code == 2 and "describe it by its target (--gfx" in err


def test_rocminfo_isa_names_are_targets():
    data = answer("torch", *LINUX, "--gfx", "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-")
    assert data["machine"]["gpus"][0]["target"] == "gfx90a"


def test_conda_keeps_the_override_with_the_environment():
    _code, out, _err = cli("resolve", "torch", *LINUX, "--gpu", "AMD Radeon RX 6700 XT", "--format", "conda")
    assert "conda env config vars set HSA_OVERRIDE_GFX_VERSION=10.3.0" in out


def test_a_kfd_target_version_that_names_no_target_is_left_out(matrices, tmp_path):
    import shutil

    tree = tmp_path / "tree"
    shutil.copytree(SYSFS / "mi300x", tree)
    (tree / "sys/class/kfd/kfd/topology/nodes/3/properties").write_text("gfx_target_version 999999\n")
    reading = read_sysfs(matrices, tree)
    assert [g.target for g in reading.gpus] == ["gfx942"] and any("names no LLVM target" in w for w in reading.warnings)


def test_a_blas_shortfall_names_the_targets_that_have_blas_kernels():
    data = answer("torch==2.14.1+rocm7.2", *LINUX, "--gpu", "AMD Radeon VII")
    shortfall = next(r["shortfall"] for r in data["rejected"] if "shortfall" in r)
    assert shortfall["quantity"] == "gfx" and shortfall["has"] == "gfx906" and "gfx906" not in shortfall["needs"].split(", ")


# --- Windows: AMD and Intel GPUs from WMI --------------------------------------------------------

WMI = Path(__file__).parent / "fixtures" / "windows"


@pytest.mark.parametrize("fixture, gpus", [("wmi-7900xtx-raphael.json", [("gfx1100", False), ("gfx1036", True)]), ("wmi-uhd-only.json", [])])
def test_windows_gpus_are_read_from_wmi(fixture, gpus, matrices, monkeypatch):
    from cudafit import detection

    text = (WMI / fixture).read_text()
    monkeypatch.setattr(detection, "detect_os", lambda: "windows")
    monkeypatch.setattr(detection, "run_command", lambda cmd, timeout: detection.RunResult(0, text, ""))
    machine = build_machine(MachineOptions(os="windows", arch="x86_64", python="3.12"), matrices, reader=_no_nvidia)
    assert [(g.target, g.integrated) for g in machine.gpus] == gpus
    if gpus:
        assert machine.gpus[0].name == "AMD Radeon RX 7900 XTX"  # WMI's name where the PCI id is shared
        res = resolve(["torch"], machine, matrices, Policy())
        # no ROCm build for Windows on the PyTorch index: AMD's own, for the RX 7900 XTX (the iGPU is left out)
        assert [p.requirement for p in res.packages] == ["torch[device-gfx1100]==2.14.0+rocm10.1.0"]


def test_wmi_that_does_not_answer_is_said(matrices, monkeypatch):
    from cudafit import detection

    monkeypatch.setattr(detection, "detect_os", lambda: "windows")
    monkeypatch.setattr(detection, "run_command", lambda cmd, timeout: detection.RunResult(None, "", "not found"))
    machine = build_machine(MachineOptions(os="windows", arch="x86_64", python="3.12"), matrices, reader=_no_nvidia)
    assert machine.gpus == () and any("could not ask WMI" in w for w in machine.warnings)


def test_gpus_lists_amd_and_intel_gpus_with_their_targets():
    code, out, _err = cli("gpus", "7900 XTX")
    assert code == 0 and "AMD Radeon RX 7900 XTX" in out and "gfx1100" in out
    code, out, _err = cli("gpus", "A770", "--json")
    rows = json.loads(out)
    assert code == 0 and rows[0]["vendor"] == "intel" and rows[0]["target"] == "dg2" and rows[0]["compute_capability"] is None


def test_a_fleet_says_which_class_needs_the_override(tmp_path):
    inventory = json.loads(AMD_FLEET.read_text())
    inventory["items"] = [i for i in inventory["items"] if i["metadata"]["name"] != "old-mi25"]
    inventory["items"].append({"metadata": {"name": "r6700", "labels": {"amd.com/gpu.product-name": "AMD_Radeon_RX_6700_XT", "amd.com/gpu.device-id": "73df"}}})
    (tmp_path / "three.json").write_text(json.dumps(inventory))
    code, out, _err = cli("fleet", "resolve", "torch", "--inventory", str(tmp_path / "three.json"), "--python", "3.12")
    assert code == 0 and "every class runs: torch==2.14.1+rocm7.14" in out
    assert "class amd-radeon-rx-6700-xt-no-driver: set HSA_OVERRIDE_GFX_VERSION=10.3.0 where it runs" in out


@pytest.mark.parametrize("text", ["", "garbage", "[" * 100000, "\ufeff[]", "null", "42"])
def test_wmi_output_that_does_not_read_never_crashes(text, matrices):
    from cudafit import detection, windows_gpus

    gpus, warnings = windows_gpus.read(matrices, lambda cmd, timeout: detection.RunResult(0, text, ""))
    assert gpus == ()


def test_an_unknown_amd_adapter_on_windows_is_said(matrices):
    from cudafit import detection, windows_gpus

    text = json.dumps({"Name": "AMD Radeon RX 9999 XTX", "PNPDeviceID": "PCI\\VEN_1002&DEV_FFFF&REV_00", "DriverVersion": "32.0"})
    gpus, warnings = windows_gpus.read(matrices, lambda cmd, timeout: detection.RunResult(0, text, ""))
    assert gpus == () and any("1002:ffff" in w and "--gfx" in w for w in warnings)


def test_a_jetpack_and_a_gpu_of_another_board_contradict():
    code, _out, err = cli("resolve", "torch", "--jetpack", "6.2", "--gpu", "NVIDIA Thor")
    assert code == 2 and "JetPack 6.2 runs on boards of compute capability 8.7, not 11.0" in err
    code, _out, err = cli("resolve", "torch", "--jetpack", "7.2")
    assert code == 2 and "no JetPack line of cudafit's data holds it" in err


def test_cpu_on_a_jetson_is_the_cpu_build():
    data = answer("torch", "--jetpack", "6.2", "--python", "3.10", "--cpu")
    assert data["packages"][0]["variant"] == "cpu"


@pytest.mark.parametrize(
    "file, old, new, message",
    [
        ("amd.toml", 'gfx = "gfx1100"', 'gfx = "rdna3"', "field 'gfx': expected an LLVM target"),
        ("amd.toml", 'segment = "radeon"', 'segment = "gaming"', "field 'segment': expected one of apu, instinct, radeon, radeon-pro"),
        ("amd.toml", 'override_grade = "reported"', 'override_grade = "declared"', "an override is a users' workaround"),
        ("intel.toml", 'device = "dg2"', 'device = "alchemist"', "field 'device': expected one of"),
        ("jetson.toml", 'jetpack = ["6.0"]', 'jetpack = ["6.5"]', "names 6.5, which has no [[jetpack]] in nvidia.toml"),
    ],
)
def test_broken_gpu_tables_are_named(file, old, new, message, tmp_path, monkeypatch):
    import shutil

    from cudafit.loader import data_dir

    copy = tmp_path / "m"
    shutil.copytree(data_dir(), copy)
    text = (copy / file).read_text()
    assert old in text
    (copy / file).write_text(text.replace(old, new, 1))
    monkeypatch.setenv("CUDAFIT_DATA_DIR", str(copy))
    code, _out, err = cli("resolve", "torch", *LINUX, "--gpu", "AMD Radeon RX 7900 XTX")
    assert code == 2 and file in err and message in err and "Traceback" not in err


def test_project_targets_take_gfx_and_jetpack(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text(
        """
[project]
name = "x"
version = "0"
dependencies = ["torch==2.14.1+rocm7.14"]

[tool.uv.sources]
torch = { index = "rocm" }

[[tool.uv.index]]
name = "rocm"
url = "https://download.pytorch.org/whl/rocm7.14"
explicit = true

[[tool.cudafit.targets]]
name = "vii"
gfx = "gfx906"

[[tool.cudafit.targets]]
name = "xtx"
gfx = "gfx1100"

[[tool.cudafit.targets]]
name = "orin"
jetpack = "6.2"
python = "3.10"
"""
    )
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("check", "pyproject.toml")
    assert code == 1, err
    assert "does not run on target 'vii'" in out and "no kernels for gfx906" in out and "target 'xtx'" not in out


def test_an_intel_mac_with_an_amd_gpu_gets_the_mac_build_with_mps():
    # Apple's Metal PyTorch page: MPS runs on Macs with Apple silicon or AMD GPUs, macOS 12.3 or later
    code, out, err = cli("resolve", "torch", "--os", "macos", "--arch", "x86_64", "--python", "3.11", "--gpu", "AMD Radeon VII")
    assert code == 0, err
    assert "chose torch 2.2.2 (CPU)" in out and "MPS on the Mac's AMD GPU" in out and "a CPU build: no GPU build" not in out
    code, _out, err = cli("resolve", "torch", "--os", "macos", "--arch", "x86_64", "--gpu", "NVIDIA GeForce RTX 3090")
    assert code == 2 and "macOS has no NVIDIA driver" in err


def test_a_jetson_spec_nvidia_has_no_wheel_for_says_what_nvidia_has_and_where_newer_builds_are():
    code, out, _err = cli("resolve", "torch>=2.6", "--jetpack", "6.2", "--python", "3.10")
    assert code == 1
    assert "NVIDIA's build for JetPack 6.2 is torch 2.5.0a0+872d972e41.nv24.08.17622132, which does not satisfy torch>=2.6" in out
    assert "https://pypi.jetson-ai-lab.io/jp6/cu126" in out


@pytest.mark.parametrize("asked", ["torch==2.5.0a0", "torch==2.5.0a0+872d972e41.nv24.08.17622132"])
def test_why_names_nvidias_jetson_wheel_by_either_version(asked):
    code, out, _err = cli("resolve", "torch", "--jetpack", "6.2", "--python", "3.12", "--why", asked)
    assert "is not in cudafit's data" not in out and "is for Python 3.10 only" in out
