"""check on files that install AMD's own builds or hold a set with cudafit's constraints file:
what cudafit writes must pass, and a wrong companion is still found (issues 26 and 27)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from cudafit.cli import main

WINDOWS_AMD = ["--os", "windows", "--arch", "x86_64", "--python", "3.12", "--gpu", "AMD Radeon RX 7900 XTX"]
LINUX_MI300X = ["--os", "linux", "--arch", "x86_64", "--python", "3.12", "--gfx", "gfx942"]


def cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_files_cudafit_writes_for_amd_machines_pass_check(tmp_path: Path):
    written = {
        "requirements.txt": ("torch", "torchvision", "torchaudio", *WINDOWS_AMD, "--format", "requirements"),
        "tf/requirements.txt": ("tensorflow", *LINUX_MI300X, "--rocm", "6.4", "--format", "requirements"),
        "win/pyproject.toml": ("torch", "torchvision", *WINDOWS_AMD, "--format", "uv-project"),
        "jax/pyproject.toml": ("jax", *LINUX_MI300X, "--format", "uv-project"),
        "both/pyproject.toml": ("torch", "jax", *LINUX_MI300X, "--format", "uv-project"),
        "held.txt": ("torch", *LINUX_MI300X, "--format", "constraints"),
    }
    for name, args in written.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        code, _out, err = cli("resolve", *args, "-o", str(path))
        assert code == 0, err
    code, out, _err = cli("check", *(str(tmp_path / name) for name in written))
    assert code == 0, out


def test_a_companion_amds_build_does_not_pair_is_still_an_error(tmp_path: Path):
    path = tmp_path / "requirements.txt"
    path.write_text(
        "--index-url https://stable.repo.amd.com/rocm/whl-next/\n"
        "torch[device-gfx1100]==2.14.0+rocm10.1.0\n"
        "torchvision[device-gfx1100]==0.28.0+rocm10.1.0\n"
    )
    code, out, _err = cli("check", str(path))
    assert code == 1 and "CF004 torchvision 0.28.0 is not built for torch 2.14.0, which pairs with torchvision 0.29" in out
    path.write_text("--index-url https://stable.repo.amd.com/rocm/whl-next/\ntorch==2.14.0+rocm10.2.0\n")
    code, out, _err = cli("check", str(path))
    assert code == 1 and "CF002 torch 2.14.0 has no +rocm10.2.0 build" in out and "rocm10.1.0" in out
