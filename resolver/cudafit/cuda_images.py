"""NVIDIA's CUDA base images (matrices/cuda-images.toml): which nvidia/cuda tags exist for a CUDA
release, flavour and Ubuntu, and the one a Dockerfile should start from. A tag is only ever built
from the data's own parts ("<cuda>-<flavour>-<os>", NVIDIA's rule), never guessed."""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

from packaging.version import Version

from cudafit.fields import read_grade, read_str, read_str_list, table_entries

FILE = "cuda-images.toml"
REPOSITORY = "nvidia/cuda"


class CudaImage(NamedTuple):
    cuda: str  # "12.8.1"
    status: str  # supported | eol (in NVIDIA's newest tag lists read)
    flavours: dict[str, tuple[str, ...]]  # Ubuntu ("ubuntu24.04") -> flavours ("base", "cudnn-runtime", ...)
    arch: dict[str, tuple[str, ...]]  # Ubuntu -> machines ("x86_64", "arm64"); an Ubuntu missing: not known
    cudnn: str = ""  # the cuDNN inside its cudnn images
    grade: str = "declared"
    sources: tuple[str, ...] = ()

    def tag(self, flavour: str, os_name: str) -> str:
        return f"{self.cuda}-{flavour}-{os_name}"


def read(doc: dict, dates: list[str]) -> tuple[CudaImage, ...]:
    out = []
    for e in table_entries(FILE, doc, "image", "cuda", dates):
        cuda = e.get("cuda", read_str)
        Version(cuda)  # a version: 12.8.1
        if len(cuda.split(".")) != 3:
            raise e.fail("cuda", "expected the full release, as tags name it: 12.8.1")
        status = e.get("status", read_str)
        if status not in ("supported", "eol"):
            raise e.fail("status", "expected supported or eol")
        out.append(
            CudaImage(
                cuda=cuda,
                status=status,
                flavours=e.get("flavours", _per_os),
                arch=e.get("arch", _per_os, required=False, default={}),
                cudnn=e.get("cudnn", read_str, required=False, default=""),
                grade=e.get("grade", read_grade),
                sources=tuple(e.raw.get("source", ())),
            )
        )
        e.finish()
    return tuple(sorted(out, key=lambda i: Version(i.cuda), reverse=True))


def _per_os(value: Any) -> dict[str, tuple[str, ...]]:
    if not isinstance(value, dict) or not value:
        raise ValueError("expected a table of Ubuntu releases, each a list")
    out = {}
    for os_name, items in value.items():
        if not str(os_name).startswith("ubuntu"):
            raise ValueError(f"{os_name!r}: only Ubuntu images are recorded")
        out[str(os_name)] = tuple(read_str_list(items))
    return out


# the machine names the images use for cudafit's architectures
_ARCH = {"x86_64": "x86_64", "aarch64": "arm64"}


PREFERRED = ("ubuntu24.04", "ubuntu22.04")


def pick(images: tuple[CudaImage, ...], cuda: str, flavour: str, arch: str, prefer: tuple[str, ...] = PREFERRED) -> Optional[tuple[CudaImage, str]]:
    """(image, Ubuntu) of CUDA `cuda`'s release line (12.6: 12.6.x) that has `flavour` ("devel",
    "runtime", or "cudnn-runtime": the cuDNN flavour as that release spells it) for the machine:
    a supported image before an end-of-life one (NVIDIA deletes those), then the newest patch,
    then the preferred Ubuntu. None where the data has no such image."""
    major_minor = ".".join(cuda.split(".")[:2])
    wanted_arch = _ARCH.get(arch, arch)
    found = []
    for image in images:
        if ".".join(image.cuda.split(".")[:2]) != major_minor:
            continue
        for os_name in prefer:
            spelled = cudnn_flavour(image, flavour, os_name)
            if spelled is None:
                continue
            if wanted_arch not in image.arch.get(os_name, (wanted_arch,)):
                continue
            found.append(((image.status == "supported", Version(image.cuda), -prefer.index(os_name)), image, os_name))
    if not found:
        return None
    _key, image, os_name = max(found, key=lambda f: f[0])
    return image, os_name


def cudnn_flavour(image: CudaImage, flavour: str, os_name: str) -> Optional[str]:
    """The flavour as the image spells it (cudnn-runtime is cudnn8-runtime on 12.2), or None."""
    have = image.flavours.get(os_name, ())
    if not flavour.startswith("cudnn-"):
        return flavour if flavour in have else None
    rest = flavour.removeprefix("cudnn-")
    return next((f for f in have if f.startswith("cudnn") and f.endswith("-" + rest)), None)
