"""AMD and Intel GPUs of a Windows machine, from WMI's Win32_VideoController (what Device Manager
shows): each adapter's PCI vendor and device id (`PNPDeviceID`, `PCI\\VEN_1002&DEV_744C&...`) and
its name. No vendor tool is needed; NVIDIA's GPUs come from nvidia-smi as on Linux."""

from __future__ import annotations

import json
import re
from typing import Callable, NamedTuple, Optional

from cudafit.records import GpuInfo, Matrices
from cudafit.vendor_gpus import AMD_VENDOR, INTEL_VENDOR, by_name, by_pci

# PowerShell ships with every Windows since 7; CIM is WMI's current interface (wmic is deprecated)
COMMAND = [
    "powershell",
    "-NoProfile",
    "-NonInteractive",
    "-Command",
    "Get-CimInstance Win32_VideoController | Select-Object Name,PNPDeviceID,DriverVersion | ConvertTo-Json -Compress",
]
TIMEOUT_S = 15.0
_PCI = re.compile(r"PCI\\VEN_([0-9A-F]{4})&DEV_([0-9A-F]{4})", re.IGNORECASE)


class Adapter(NamedTuple):
    name: str
    vendor: Optional[str]  # lower-case hex; None: not a PCI device (a virtual or remote display)
    device: Optional[str]
    driver: str


def parse(text: str) -> Optional[list[Adapter]]:
    """ConvertTo-Json's output: one object, or a list of them; None where it is not that."""
    try:
        data = json.loads(text.lstrip("\ufeff")) if text.strip() else []
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, (list, dict)):
        return None
    items = data if isinstance(data, list) else [data]
    out = []
    for item in items:
        if not isinstance(item, dict):
            continue
        pnp = str(item.get("PNPDeviceID") or "").strip()
        match = _PCI.match(pnp)
        vendor, device = (match.group(1).lower(), match.group(2).lower()) if match else (None, None)
        out.append(Adapter(str(item.get("Name") or ""), vendor, device, str(item.get("DriverVersion") or "")))
    return out


def read(matrices: Matrices, run: Callable[[list[str], float], object]) -> tuple[tuple[GpuInfo, ...], tuple[str, ...]]:
    """(the AMD and Intel GPUs WMI lists, warnings). `run` is detection.run_command."""
    result = run(COMMAND, TIMEOUT_S)
    code, stdout = getattr(result, "returncode", None), getattr(result, "stdout", None) or ""
    if code != 0:
        return (), ("could not ask WMI for the display adapters (powershell Get-CimInstance Win32_VideoController); AMD and Intel GPUs not read",)
    adapters = parse(stdout)
    if adapters is None:
        return (), ("WMI's list of display adapters did not read as JSON; AMD and Intel GPUs not read",)
    gpus = []
    warnings: list[str] = []
    for adapter in adapters:
        if adapter.vendor not in (AMD_VENDOR, INTEL_VENDOR) or adapter.device is None:
            continue
        found = by_pci(adapter.vendor, adapter.device, matrices)
        if found is None:
            named, _warning = by_name(adapter.name, matrices)
            found = named if named is not None and named.vendor == ("amd" if adapter.vendor == AMD_VENDOR else "intel") else None
        if found is not None:  # an adapter the data lists no build for (UHD graphics) is no GPU of the answer
            gpus.append(found if found.name else found._replace(name=adapter.name or None))
        elif adapter.vendor == AMD_VENDOR:
            warnings.append(f"AMD GPU {adapter.name!r} (1002:{adapter.device}) is not in cudafit's AMD table; its target is unknown (describe it with --gfx)")
    return tuple(gpus), tuple(warnings)
