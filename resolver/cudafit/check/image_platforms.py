"""The machines a Dockerfile's base image is published for, from the data: an image repository's
[[repository]] entry (pytorch/pytorch: x86_64 alone), or an nvidia/cuda tag's [image.arch]. A
Dockerfile FROM it is built on those machines only: `docker build` stops at FROM elsewhere, so
nothing the file installs there is the file's to answer for."""

from __future__ import annotations

import re
from typing import Optional

from cudafit.records import Matrices

_PLATFORM = {"x86_64": "linux-x86_64", "arm64": "linux-aarch64"}
# docker.io/library/x:tag, nvcr.io/nvidia/cuda:tag -> the repository and the tag
_REFERENCE = re.compile(r"^(?:docker\.io/|nvcr\.io/)?(?:library/)?(?P<repository>[a-z0-9][a-z0-9._/-]*?)(?::(?P<tag>[\w][\w.-]*))?(?:@sha256:[0-9a-f]+)?$")
_CUDA_TAG = re.compile(r"^(?P<cuda>\d+\.\d+\.\d+)-[a-z0-9-]+-(?P<os>ubuntu\d{2}\.\d{2})$")


def published_platforms(matrices: Matrices, image: str) -> Optional[tuple[str, ...]]:
    """The platforms ("linux-x86_64", ...) `image` is published for, where the data says; None
    where it does not (an image of another repository, a tag the data lacks)."""
    match = _REFERENCE.match(image.strip().lower())
    if match is None:
        return None
    repository, tag = match["repository"], match["tag"] or ""
    known = next((r for r in matrices.image_repositories if r.repository == repository), None)
    if known is not None:
        return tuple(_PLATFORM[m] for m in known.machines if m in _PLATFORM)
    cuda_tag = _CUDA_TAG.match(tag) if repository == "nvidia/cuda" else None
    if cuda_tag is None:
        return None
    release = next((i for i in matrices.cuda_images if i.cuda == cuda_tag["cuda"]), None)
    machines = release.arch.get(cuda_tag["os"]) if release is not None else None
    return tuple(_PLATFORM[m] for m in machines if m in _PLATFORM) if machines else None


def narrowed(platforms: tuple[str, ...], published: Optional[tuple[str, ...]]) -> tuple[str, ...]:
    """`platforms` less those the image is not published for; as they were where that would leave
    none (a `FROM --platform` the image lacks fails at FROM: nothing else is the file's to say)."""
    if not published:
        return platforms
    kept = tuple(p for p in platforms if p in published)
    return kept or platforms
