"""The rule on a Dockerfile's image (CF019): an extension built in the image (an install with
--no-build-isolation) compiles with the image's nvcc against the torch the image installs, and
torch's extension builder refuses a CUDA major other than the one torch was built with (its
cpp_extension compares the two before it compiles). An nvidia/cuda devel image names its CUDA in
its tag (12.8.1-devel-ubuntu24.04), a pytorch/pytorch devel image its CUDA and the torch it carries
(2.6.0-cuda12.4-cudnn9-devel); a torch the Dockerfile installs names its own build (+cu128, or
PyPI's on Linux), and replaces the image's."""

from __future__ import annotations

import re
from typing import Optional

from cudafit.check.indexes import effective_local, only_from_pypi
from cudafit.check.model import Document, Finding, Pin
from cudafit.check.rules import finding
from cudafit.records import Matrices, TorchRelease

# images with nvcc: nvidia/cuda's devel flavours (Docker Hub or NGC), and pytorch/pytorch's
_DEVEL = re.compile(r"^(?:docker\.io/|nvcr\.io/)?nvidia/cuda:(?P<cuda>\d+)\.(?P<minor>\d+)(?:\.\d+)?-(?:cudnn\d*-)?devel-")
_PYTORCH = re.compile(r"^(?:docker\.io/)?pytorch/pytorch:(?P<torch>[\d.]+)-cuda(?P<cuda>\d+)\.(?P<minor>\d+)-cudnn\d+-devel$")


def image_toolkit_differs(doc: Document, matrices: Matrices, releases: dict[str, TorchRelease]) -> list[Finding]:
    if doc.kind != "dockerfile" or not doc.builds_here or not doc.images:
        return []
    image, span = doc.images[-1]
    match = _DEVEL.match(image) or _PYTORCH.match(image)
    if match is None:
        return []
    # an image's own torch (pytorch/pytorch) is built with its nvcc: only a torch installed over it can differ
    for pin in doc.pins:
        if pin.name != "torch" or pin.version is None or pin.constraint:
            continue
        major = _torch_cuda_major(doc, pin, releases)
        if major is None or major == match["cuda"]:
            continue
        return [
            finding(
                "CF019",
                span,
                f"the image's nvcc is CUDA {match['cuda']}.{match['minor']} ({image}), but the extensions built here (--no-build-isolation) "
                f"compile against torch {pin.version}'s CUDA {major} build: torch's extension builder refuses another CUDA major than its own",
                f"start FROM an nvidia/cuda devel image of CUDA {major} (resolve --format dockerfile picks one), or install torch's CUDA {match['cuda']} build",
            )
        ]
    return []


def _torch_cuda_major(doc: Document, pin: Pin, releases: dict[str, TorchRelease]) -> Optional[str]:
    local = effective_local(doc, pin)
    if local is None and only_from_pypi(doc, pin):
        release = releases.get(pin.version or "")
        local = (release.pypi_variant or {}).get("linux-x86_64") if release is not None else None
    match = re.fullmatch(r"cu(\d+)(\d)", local or "")
    return match[1] if match else None
