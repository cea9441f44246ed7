"""Read the machine: NVIDIA driver and GPUs, OS/WSL/arch/Jetson, target Python, CUDA toolkits and
installed frameworks. Never imports torch, tensorflow or jax; every subprocess has a timeout."""

from __future__ import annotations

import os
import platform
import re
import sys
from pathlib import Path
from typing import Callable, NamedTuple, Optional

from cudafit.errors import InputError
from cudafit.frameworks import REGISTRY
from cudafit.records import GpuInfo, parse_cc

TIMEOUT_S = 10.0
QUERY_FIELDS = "name,compute_cap,memory.total,driver_version"
# Drivers before R510 do not know compute_cap; the GPU table fills it in from the name.
QUERY_FIELDS_OLD = "name,memory.total,driver_version"
# Every distribution a spec may name, from the registry (frameworks and the libraries built against them).
FRAMEWORKS = tuple(member for _family, _module, members in REGISTRY for member in members)

Runner = Callable[[list[str], float], "RunResult"]


class RunResult(NamedTuple):
    returncode: Optional[int]  # None: could not run (missing) or timed out
    stdout: str
    stderr: str = ""
    timed_out: bool = False


def run_command(cmd: list[str], timeout: float) -> RunResult:
    import subprocess  # only when a tool really runs: a described machine never needs it

    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, errors="replace")
    except subprocess.TimeoutExpired:
        return RunResult(None, "", "", timed_out=True)
    except OSError as exc:
        return RunResult(None, "", str(exc))
    return RunResult(proc.returncode, proc.stdout, proc.stderr)


class DriverReading(NamedTuple):
    driver: Optional[str]  # version text as the driver prints it
    driver_known: bool  # False: could not tell whether a driver is there
    gpus: tuple[GpuInfo, ...]
    gpus_known: bool
    cuda_driver_max: Optional[str]
    warnings: tuple[str, ...]


# --- parsers (pure functions over real tool output) -----------------------------------------

# Drivers from R610 renamed the banner fields: "Driver Version" became "KMD Version" and "CUDA
# Version" became "CUDA UMD Version" (NVIDIA's nvidia-smi documentation, change log); both name the
# same facts, so both spellings are read.
_DRIVER_RE = re.compile(r"(?:Driver|KMD) Version\s*:\s*([0-9]+(?:\.[0-9]+){1,2})")
_CUDA_RE = re.compile(r"CUDA(?: UMD| Driver)? Version\s*:\s*([0-9]+\.[0-9]+)")
_PROC_RE = re.compile(r"NVRM version:.*?\s([0-9]{3,}\.[0-9]+(?:\.[0-9]+)?)\s")
_NA = {"[N/A]", "N/A", "[Not Supported]", "Not Supported", "[Unknown Error]", ""}
# Every NVIDIA driver branch since CUDA began has a 3-digit major (the shape machine.parse_driver
# accepts): anything else where the version belongs is not a driver's answer.
_DRIVER_VERSION = re.compile(r"\d{3,}\.\d+(?:\.\d+)?", re.ASCII)
# The warning a non-strict reading gives for output it cannot parse (doctor's DR002 names it).
UNREADABLE = "nvidia-smi printed output cudafit cannot read"


def parse_banner(text: str) -> tuple[Optional[str], Optional[str]]:
    """Driver and CUDA version from plain `nvidia-smi` output."""
    driver = _DRIVER_RE.search(text)
    cuda = _CUDA_RE.search(text)
    return (driver.group(1) if driver else None, cuda.group(1) if cuda else None)


def parse_proc_version(text: str) -> Optional[str]:
    """Driver version from /proc/driver/nvidia/version."""
    match = _PROC_RE.search(text)
    return match.group(1) if match else None


def parse_query(text: str, with_cc: bool, source: str = "nvidia-smi") -> tuple[Optional[str], tuple[GpuInfo, ...]]:
    """Parse `nvidia-smi --query-gpu=... --format=csv,noheader,nounits` output.

    Raises InputError naming the line and value when a line has the wrong shape."""
    expected = QUERY_FIELDS if with_cc else QUERY_FIELDS_OLD
    ncols = expected.count(",") + 1
    gpus = []
    drivers = set()
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        cols = [c.strip() for c in line.split(",")]
        if len(cols) != ncols:
            raise InputError(f"{source} output line {lineno}: expected {ncols} comma-separated fields ({expected}), got {line.strip()!r}")
        name = cols[0]
        cc = None
        if with_cc and cols[1] not in _NA:
            try:
                cc = parse_cc(cols[1])
            except ValueError:
                raise InputError(f"{source} output line {lineno}: compute_cap {cols[1]!r} is not MAJOR.MINOR") from None
        mem_text = cols[-2].removesuffix("MiB").strip()
        memory = None
        if mem_text not in _NA:
            if not mem_text.isdigit():
                raise InputError(f"{source} output line {lineno}: memory.total {cols[-2]!r} is not a number of MiB")
            memory = int(mem_text)
        driver = cols[-1]
        if not _DRIVER_VERSION.fullmatch(driver):
            raise InputError(f"{source} output line {lineno}: driver_version {driver!r} is not a version like 535.104.05")
        drivers.add(driver)
        gpus.append(GpuInfo(name=name or None, compute_capability=cc, memory_mib=memory))
    return (sorted(drivers)[0] if drivers else None), tuple(gpus)


# --- the driver and GPUs ---------------------------------------------------------------------


def nvidia_smi_candidates(os_name: str) -> list[str]:
    import shutil

    found = []
    on_path = shutil.which("nvidia-smi") or shutil.which("nvidia-smi.exe")
    if on_path:
        found.append(on_path)
    if os_name == "wsl":
        found.append("/usr/lib/wsl/lib/nvidia-smi")
    if os_name == "windows":
        system_root = os.environ.get("SystemRoot", r"C:\Windows")
        found.append(os.path.join(system_root, "System32", "nvidia-smi.exe"))
        program_files = os.environ.get("ProgramFiles", r"C:\Program Files")
        found.append(os.path.join(program_files, "NVIDIA Corporation", "NVSMI", "nvidia-smi.exe"))
    return [p for p in dict.fromkeys(found) if os.path.isfile(p)]


def read_driver(
    os_name: str,
    *,
    run: Runner = run_command,
    candidates: Optional[list[str]] = None,
    proc_version: Path = Path("/proc/driver/nvidia/version"),
    want_banner: bool = True,
    strict: bool = True,
) -> DriverReading:
    """What nvidia-smi (else the kernel module's version file) says. Output that does not parse is
    an InputError naming line and value when `strict` (detect and resolve refuse to answer from
    it); otherwise a warning starting with UNREADABLE, GPUs unknown (doctor reports a driver in
    that state)."""
    warnings: list[str] = []
    smi = candidates if candidates is not None else nvidia_smi_candidates(os_name)
    proc_driver = None
    try:
        proc_driver = parse_proc_version(proc_version.read_text(errors="replace"))
    except OSError:
        pass
    if not smi:
        return _without_nvidia_smi(proc_driver, "nvidia-smi was not found", said=False)
    exe = smi[0]
    result = run([exe, f"--query-gpu={QUERY_FIELDS}", "--format=csv,noheader,nounits"], TIMEOUT_S)
    with_cc = True
    if result.returncode not in (0, None) and "compute_cap" in (result.stdout + result.stderr):
        with_cc = False
        result = run([exe, f"--query-gpu={QUERY_FIELDS_OLD}", "--format=csv,noheader,nounits"], TIMEOUT_S)
    if result.timed_out:
        warnings.append(f"{exe} did not answer within {TIMEOUT_S:.0f} s; GPUs unknown")
        return DriverReading(proc_driver, proc_driver is not None, (), False, None, tuple(warnings))
    output = (result.stdout or "") + (result.stderr or "")
    if result.returncode is None:
        warnings.append(f"could not run {exe}: {result.stderr.strip() or 'unknown error'}; GPUs unknown")
        return DriverReading(proc_driver, proc_driver is not None, (), False, None, tuple(warnings))
    if "No devices were found" in output:
        return DriverReading(proc_driver, proc_driver is not None, (), True, None, ("nvidia-smi reports no NVIDIA GPU",))
    if result.returncode != 0:
        first = output.strip().splitlines()[0] if output.strip() else f"exit code {result.returncode}"
        warnings.append(f"nvidia-smi failed: {first}; GPUs unknown")
        return DriverReading(proc_driver, proc_driver is not None, (), False, None, tuple(warnings))
    if not result.stdout.strip():
        # A real nvidia-smi always prints a line per GPU or "No devices were found"; one that prints
        # nothing (a stub left in an image) says no more than a missing one, and reads the same.
        return _without_nvidia_smi(proc_driver, f"{exe} printed nothing", said=True)
    try:
        driver, gpus = parse_query(result.stdout, with_cc)
    except InputError as exc:
        if strict:
            raise
        return DriverReading(proc_driver, proc_driver is not None, (), False, None, (f"{UNREADABLE} ({exc}); GPUs unknown",))
    if not gpus:
        return DriverReading(driver or proc_driver, True, (), True, None, ("nvidia-smi reports no NVIDIA GPU",))
    cuda = None
    if want_banner:
        banner = run([exe], TIMEOUT_S)
        if banner.returncode == 0:
            cuda = parse_banner(banner.stdout)[1]
    return DriverReading(driver, True, gpus, True, cuda, tuple(warnings))


def _without_nvidia_smi(proc_driver: Optional[str], why: str, *, said: bool) -> DriverReading:
    """No answer from nvidia-smi: the kernel module's version where it is loaded, else no driver
    (`said`: with a warning saying why, where the absence is not the plain case)."""
    if proc_driver:
        return DriverReading(proc_driver, True, (), False, None, (f"NVIDIA driver {proc_driver} is loaded but {why}; GPUs unknown",))
    return DriverReading(None, True, (), True, None, (f"{why}: read as no NVIDIA driver",) if said else ())


# --- OS, arch, Jetson -------------------------------------------------------------------------


def detect_os() -> str:
    if sys.platform.startswith("win"):
        return "windows"
    if sys.platform == "darwin":
        return "macos"
    release = platform.uname().release.lower()
    if "microsoft" in release or "wsl" in release:
        return "wsl"
    return "linux"


def detect_jetson() -> bool:
    from cudafit.sysfs_gpus import root

    return (root() / "etc" / "nv_tegra_release").exists()


# "# R36 (release), REVISION: 4.3, GCID: ..., BOARD: generic, ..." (later lines and fields vary)
_TEGRA_RELEASE = re.compile(r"#\s*R(\d+)\s*\(release\),\s*REVISION:\s*(\d+)\.(\d+)")


def jetson_linux_release() -> Optional[str]:
    """The Jetson Linux (L4T) release of this board, "36.4.3", from /etc/nv_tegra_release (under
    $CUDAFIT_SYSFS_ROOT in tests); None where there is none or it does not read."""
    from cudafit.sysfs_gpus import root

    try:
        first = (root() / "etc" / "nv_tegra_release").read_text(errors="replace").splitlines()[:1]
    except OSError:
        return None
    match = _TEGRA_RELEASE.match(first[0].strip()) if first else None
    return f"{match.group(1)}.{match.group(2)}.{match.group(3)}" if match else None


# --- the target Python and what is installed in it --------------------------------------------


def target_prefix() -> Optional[Path]:
    """The target environment: $VIRTUAL_ENV, $CONDA_PREFIX, else the one of the first python on
    PATH (its bin/ folder's parent, not following the link: a venv's python links to the base)."""
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        value = os.environ.get(var)
        if value:
            return Path(value)
    import shutil

    exe = shutil.which("python") or shutil.which("python3")
    if exe is None:
        return None
    folder = Path(exe).parent
    if folder.name in ("bin", "Scripts"):
        return folder.parent
    return reported_prefix(exe) or folder


def reported_prefix(exe: str) -> Optional[Path]:
    """The environment a launcher outside one (pyenv's shims, a wrapper script) runs: its sys.prefix,
    as the interpreter says; None where it does not answer."""
    result = run_command([exe, "-c", "import sys; print(sys.prefix)"], TIMEOUT_S)
    prefix = result.stdout.strip() if result.returncode == 0 else ""
    return Path(prefix) if prefix else None


class InterpreterLayout(NamedTuple):
    """Where an interpreter imports from, as it says itself."""

    python: str  # "3.12"
    prefix: Path  # sys.prefix: the environment (pyenv's shims and other launchers are not one)
    sites: tuple[Path, ...]  # its site-packages and dist-packages folders, in import order


# sys.path rather than a glob under the prefix: a user site, a venv with system site packages and
# Debian's dist-packages all hold packages the interpreter imports from outside its prefix.
_LAYOUT = "import json, sys; print(json.dumps([sys.version_info[0], sys.version_info[1], sys.prefix, sys.path]))"


def interpreter_layout(exe: str, run: Optional[Runner] = None) -> Optional[InterpreterLayout]:
    """The interpreter's version, prefix and package folders; None where it does not run here
    (another machine's environment, a broken link) or answers something else."""
    import json

    result = (run or run_command)([exe, "-c", _LAYOUT], TIMEOUT_S)
    try:
        major, minor, prefix, path = json.loads(result.stdout) if result.returncode == 0 else (None, None, None, None)
    except (ValueError, TypeError):
        return None
    if not (isinstance(major, int) and isinstance(minor, int) and isinstance(prefix, str) and isinstance(path, list)):
        return None
    sites = tuple(Path(p) for p in path if isinstance(p, str) and p and Path(p).name in ("site-packages", "dist-packages") and Path(p).is_dir())
    return InterpreterLayout(f"{major}.{minor}", Path(prefix), tuple(dict.fromkeys(sites)))


def pyvenv_python(prefix: Path) -> Optional[str]:
    """The Python minor a venv's pyvenv.cfg names ("3.12"), without running anything."""
    try:
        for line in (prefix / "pyvenv.cfg").read_text().splitlines():
            key, _, value = line.partition("=")
            if key.strip() in ("version_info", "version"):
                parts = value.strip().split(".")
                if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
                    return f"{parts[0]}.{parts[1]}"
    except OSError:
        pass
    return None


def python_of_prefix(prefix: Path, run: Runner = run_command) -> Optional[str]:
    named = pyvenv_python(prefix)
    if named:
        return named
    for exe in (prefix / "bin" / "python", prefix / "bin" / "python3", prefix / "python.exe", prefix / "Scripts" / "python.exe"):
        if exe.exists():
            return interpreter_version(str(exe), run)
    return None


def interpreter_version(exe: str, run: Runner = run_command) -> Optional[str]:
    result = run([exe, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], TIMEOUT_S)
    text = result.stdout.strip()
    if result.returncode == 0 and re.fullmatch(r"\d+\.\d+", text):
        return text
    return None


def detect_python(run: Runner = run_command) -> Optional[str]:
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        if os.environ.get(var):
            return python_of_prefix(Path(os.environ[var]), run)
    import shutil

    exe = shutil.which("python") or shutil.which("python3")
    return interpreter_version(exe, run) if exe else None


def site_packages(prefix: Path) -> list[Path]:
    return sorted(prefix.glob("lib/python3*/site-packages")) + [p for p in [prefix / "Lib" / "site-packages"] if p.is_dir()]


def installed_distributions(prefix: Optional[Path]) -> dict[str, str]:
    """name -> version for every distribution in an environment, read from .dist-info folder
    names (no import, no subprocess)."""
    from packaging.utils import canonicalize_name

    dirs = site_packages(prefix) if prefix is not None else []
    found: dict[str, str] = {}
    for folder in dirs:
        try:
            entries = list(folder.iterdir())
        except OSError:
            continue
        for entry in entries:
            if entry.suffix != ".dist-info":
                continue
            name, version = metadata_folder_name(entry)
            if version:
                found.setdefault(canonicalize_name(name), version)
    return found


def metadata_folder_name(entry: Path) -> tuple[str, str]:
    """(name, version) of a `NAME-VERSION.dist-info` or `NAME-VERSION-pyX.Y.egg-info` folder; the
    version is "" where the name carries none."""
    name, _, rest = entry.stem.partition("-")
    return name, rest.split("-py", 1)[0] if entry.suffix == ".egg-info" else rest


def toolkit_version(root: Path) -> Optional[str]:
    import json

    try:
        data = json.loads((root / "version.json").read_text())
        return str(data["cuda"]["version"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    try:
        match = re.search(r"CUDA Version\s+([0-9.]+)", (root / "version.txt").read_text())
        return match.group(1) if match else None
    except OSError:
        return None


def detect_macos() -> Optional[str]:
    """'14.5' on a Mac (the platform's own call), else None."""
    if sys.platform != "darwin":
        return None
    parts = platform.mac_ver()[0].split(".")
    if not parts[0].isdigit():
        return None
    return f"{parts[0]}.{parts[1] if len(parts) > 1 and parts[1].isdigit() else 0}"
