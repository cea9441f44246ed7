"""cudafit's own inventory: a list (or {"nodes": [...]}) of the `machine` object of `resolve --json`
({"os", "arch", "driver", "gpus": [{"name", "compute_capability"}]}) plus "count", "pool" and an
optional "name"; in a JSON document or one object per NDJSON line."""

from __future__ import annotations

from cudafit.errors import InputError
from cudafit.fleet.node import ARCH, Node, driver_problem


def cudafit_node(item: object, where: str) -> Node:
    if not isinstance(item, dict):
        raise InputError(f"{where}: expected an object with os, arch, driver, gpus (and count, pool)")
    machine = item.get("machine", item)
    if not isinstance(machine, dict):
        raise InputError(f"{where}: 'machine' is not an object")
    if not {"driver", "gpus", "os"} & set(machine):
        raise InputError(f"{where}: not a node: expected the machine fields os, arch, driver and gpus (and count, pool)")
    count = item.get("count", 1)
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise InputError(f"{where}: field 'count': expected a positive integer, got {count!r}")
    gpus, ccs = [], []
    for gpu in machine.get("gpus") or []:
        if isinstance(gpu, str):
            gpus.append(gpu)
        elif isinstance(gpu, dict) and isinstance(gpu.get("name"), str):
            gpus.append(gpu["name"])
        elif isinstance(gpu, dict) and isinstance(gpu.get("compute_capability"), str):
            ccs.append(gpu["compute_capability"])
        else:
            raise InputError(f'{where}: field \'gpus\': expected names or {{"name", "compute_capability"}} objects, got {gpu!r}')
    driver = machine.get("driver")
    if driver is not None and not isinstance(driver, str):
        raise InputError(f"{where}: field 'driver': expected a string like \"535.104.05\" or null, got {driver!r}")
    if driver is not None and driver_problem(driver, "driver"):
        raise InputError(f"{where}: field 'driver': {driver_problem(driver, 'driver')}")
    return Node(
        name=str(item.get("name") or where),
        pool=str(item.get("pool") or "default"),
        nodes=count,
        os=str(machine.get("os") or "linux"),
        arch=ARCH.get(str(machine.get("arch") or "x86_64"), str(machine.get("arch"))),
        driver=driver,
        gpus=tuple(gpus),
        compute_capabilities=tuple(ccs),
    )
