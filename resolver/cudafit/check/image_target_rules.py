"""The rule on a Dockerfile's image against the project's target machines (CF020): the image must
start on each target's driver. An nvidia/cuda image's NVIDIA_REQUIRE_CUDA makes `docker run`
refuse a driver older than the image's own CUDA, except the branches it names for some GPU brands
(matrices/cuda-images.toml, from NVIDIA's Dockerfiles); an NGC framework image needs its release's
driver, or forward compatibility on a data-center GPU (matrices/ngc-containers.toml, judged as
`cudafit containers` judges it). Only a refusal the data states for sure is an error."""

from __future__ import annotations

import re
from typing import Optional

from packaging.version import Version

from cudafit.check.model import Document, Finding
from cudafit.check.rules import Target, finding
from cudafit.records import Machine, Matrices

_CUDA = re.compile(r"^(?:docker\.io/|nvcr\.io/)?nvidia/cuda:(?P<cuda>\d+\.\d+\.\d+)-(?P<flavour>[a-z0-9-]+?)-(?P<os>ubuntu\d+\.\d+)$")
_NGC = re.compile(r"^nvcr\.io/nvidia/(?P<framework>pytorch|tensorflow|jax):(?P<tag>\d\d\.\d\d)-(?:tf2-)?py3$")


def image_refused_on_targets(doc: Document, matrices: Matrices, targets: tuple[Target, ...]) -> list[Finding]:
    if doc.kind != "dockerfile" or not doc.images or not targets:
        return []
    image, span = doc.images[-1]
    out = []
    for target in targets:
        machine = target.machine
        if not machine.driver or machine.os not in ("linux", "wsl", None):
            continue
        why = _cuda_image(image, machine, matrices) or _ngc_image(image, machine, matrices)
        if why:
            out.append(
                finding(
                    "CF020",
                    span,
                    f"{image} does not start on {target.name}: {why}",
                    "start FROM an image of an older CUDA (resolve --format dockerfile with the target's --driver picks one), or install a newer driver there",
                )
            )
    return out


def _cuda_image(image: str, machine: Machine, matrices: Matrices) -> Optional[str]:
    from cudafit import cuda_images, rules

    match = _CUDA.match(image)
    if match is None:
        return None
    record = next((i for i in matrices.cuda_images if i.cuda == match["cuda"]), None)
    requirement = record.requirement(match["os"], machine.arch or "x86_64") if record is not None else None
    cuda = ".".join(match["cuda"].split(".")[:2])
    own = rules.own_driver(matrices, machine, Version(cuda))
    if requirement is None or not own or machine.driver is None:
        return None  # what the image asks is not in the data: no claim
    if not cuda_images.refuses(requirement, own, machine.driver, tuple(g.name or "" for g in machine.gpus)):
        return None
    branch = machine.driver.split(".")[0]
    if branch in requirement.branches:
        excepted = f"; it excepts R{branch} for other brands, not GeForce"
    else:
        excepted = f"; the branches it excepts (for some brands) are R{', R'.join(requirement.branches)}" if requirement.branches else ""
    return f"its NVIDIA_REQUIRE_CUDA asks for CUDA {cuda}'s driver ({own}), and docker run refuses driver {machine.driver}{excepted}"


def _ngc_image(image: str, machine: Machine, matrices: Matrices) -> Optional[str]:
    from cudafit.containers.judge import judge

    match = _NGC.match(image)
    if match is None:
        return None
    record = next((c for c in matrices.ngc_containers if c.framework == match["framework"] and c.tag == match["tag"]), None)
    if record is None:
        return None
    verdict = judge(record, machine, matrices)
    return verdict.why if verdict.runs is False else None
