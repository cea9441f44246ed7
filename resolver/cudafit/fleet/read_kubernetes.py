"""A Kubernetes Node (`kubectl get nodes -o json`, or a {"name", "labels"} pair) read from its
NVIDIA GPU Feature Discovery labels: the current `nvidia.com/cuda.driver-version.*` and the
deprecated `nvidia.com/cuda.driver.*` (a driver may have two parts, with an empty revision),
`nvidia.com/gpu.product`, `nvidia.com/gpu.compute.*`; the arch and OS from the `kubernetes.io/*`
labels or `status.nodeInfo`; a node without driver labels takes `default_driver`."""

from __future__ import annotations

import re
from typing import Optional

from cudafit.errors import InputError
from cudafit.fleet.node import ARCH, NO_GPU, Node, Options, driver_problem

# Labels naming a node's pool, most specific first (the cluster's own label can be given instead).
POOL_LABELS = (
    "cudafit.io/pool",
    "cloud.google.com/gke-nodepool",
    "eks.amazonaws.com/nodegroup",
    "karpenter.sh/nodepool",
    "kubernetes.azure.com/agentpool",
    "node.kubernetes.io/instance-type",
)
# GFD appends how a GPU is shared or partitioned to the product name; the chip is what remains.
_PRODUCT_SUFFIX = re.compile(r"-(SHARED|MIG-.*)$", re.IGNORECASE)


def kube_node(item: object, where: str, options: Options) -> Node:
    if not isinstance(item, dict):
        raise InputError(f"{where}: expected a Node object")
    metadata: dict = item["metadata"] if isinstance(item.get("metadata"), dict) else {}
    labels = item.get("labels") if isinstance(item.get("labels"), dict) else (metadata.get("labels") or {})
    if not isinstance(labels, dict):
        raise InputError(f"{where}: labels are not an object")
    labels = {str(k): str(v) for k, v in labels.items()}
    name = str(metadata.get("name") or item.get("name") or labels.get("kubernetes.io/hostname") or where)
    status: dict = item["status"] if isinstance(item.get("status"), dict) else {}
    info: dict = status["nodeInfo"] if isinstance(status.get("nodeInfo"), dict) else {}
    # A bare labels stream may leave these out; GPU nodes are Linux, and x86_64 unless a label says.
    arch = labels.get("kubernetes.io/arch") or labels.get("beta.kubernetes.io/arch") or info.get("architecture") or "amd64"
    os_name = labels.get("kubernetes.io/os") or labels.get("beta.kubernetes.io/os") or info.get("operatingSystem") or "linux"
    pool = next((labels[k] for k in ([options.pool_label] if options.pool_label else POOL_LABELS) if k in labels), "default")
    base = Node(name=name, pool=pool, os=str(os_name).lower(), arch=ARCH.get(str(arch).lower(), str(arch)))
    amd = _amd_gpus(labels)
    if amd and not any(k.startswith("nvidia.com/gpu.product") for k in labels):
        return base._replace(gpus=amd)
    if labels.get("nvidia.com/gpu.present") == "false" or not any(k.startswith("nvidia.com/") for k in labels):
        return base._replace(problem=NO_GPU)
    driver, problem = _kube_driver(labels)
    if problem:
        return base._replace(problem=problem)
    if driver is None:
        if not options.default_driver:
            return base._replace(problem="no driver labels (nvidia.com/cuda.driver-version.*): give --default-driver")
        driver = options.default_driver  # checked like --driver when the option was read
    problem = driver_problem(driver, "driver label") if driver else None
    if problem:
        return base._replace(problem=problem)
    product = labels.get("nvidia.com/gpu.product", "")
    product = _PRODUCT_SUFFIX.sub("", product)
    major, minor = labels.get("nvidia.com/gpu.compute.major"), labels.get("nvidia.com/gpu.compute.minor")
    cc = f"{major}.{minor}" if major and minor and major.isdigit() and minor.isdigit() else None
    if not product and cc is None:
        return base._replace(driver=driver, problem="no nvidia.com/gpu.product or gpu.compute labels")
    return base._replace(driver=driver, gpus=(product,) if product else (), compute_capabilities=(cc,) if cc else ())


def _amd_gpus(labels: dict[str, str]) -> tuple[str, ...]:
    """AMD's node labeller: `amd.com/gpu.product-name=AMD_Instinct_MI300X_OAM` names the GPU, else
    `amd.com/gpu.device-id=74a1` (or the older `beta.amd.com/gpu.device-id.74a1=8`) its PCI id,
    read as "PCI 1002:74a1"."""
    product = labels.get("amd.com/gpu.product-name") or labels.get("beta.amd.com/gpu.product-name")
    if product:
        return (product.replace("_", " "),)
    device = labels.get("amd.com/gpu.device-id") or labels.get("beta.amd.com/gpu.device-id")
    if not device:
        device = next((k.rsplit(".", 1)[1] for k in labels if k.startswith("beta.amd.com/gpu.device-id.")), None)
    return (f"PCI 1002:{device.lower().removeprefix('0x')}",) if device else ()


def _kube_driver(labels: dict[str, str]) -> tuple[Optional[str], Optional[str]]:
    """The driver from the current and the deprecated GFD labels (None where there are none); a
    problem where they disagree."""
    found = []
    full = labels.get("nvidia.com/cuda.driver-version.full")
    if full:
        found.append(full)
    for prefix, last in (("nvidia.com/cuda.driver-version.", "revision"), ("nvidia.com/cuda.driver.", "rev")):
        major, minor = labels.get(prefix + "major"), labels.get(prefix + "minor")
        if major and minor:
            revision = labels.get(prefix + last, "")
            found.append(f"{major}.{minor}" + (f".{revision}" if revision else ""))
    if not found:
        return None, None
    if len(set(found)) > 1:
        return None, f"driver labels disagree ({', '.join(sorted(set(found)))})"
    return found[0], None
