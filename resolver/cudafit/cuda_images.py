"""NVIDIA's CUDA base images (matrices/cuda-images.toml): which nvidia/cuda tags exist for a CUDA
release, flavour and Ubuntu, and the one a Dockerfile should start from. A tag is only ever built
from the data's own parts ("<cuda>-<flavour>-<os>", NVIDIA's rule), never guessed. Where the data
has it, an image's NVIDIA_REQUIRE_CUDA too: the NVIDIA Container Toolkit refuses at `docker run` a
host whose driver is older than the image's CUDA, unless a brand exception names its branch."""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import partial
from typing import Any, NamedTuple, Optional

from packaging.version import Version

from cudafit.fields import Entry, entries, read_grade, read_header, read_str, read_str_list, table_entries

FILE = "cuda-images.toml"
REPOSITORY = "nvidia/cuda"


class Requirement(NamedTuple):
    """An image's NVIDIA_REQUIRE_CUDA on some Ubuntus and machines: `cuda>=CUDA`, or, on a GPU of
    one of `brands`, a driver of one of `branches` (its `brand=B,driver>=N,driver<N+1` terms)."""

    ubuntus: tuple[str, ...]  # "ubuntu24.04", ...
    machines: tuple[str, ...]  # "x86_64", "arm64"
    cuda: str  # "12.9": the driver must support this CUDA
    branches: tuple[str, ...]  # "535", ...: driver branches it also starts on, for the brands below
    brands: tuple[str, ...]  # "tesla", "nvidia", ... as NVML names them (lower case)
    grade: str
    sources: tuple[str, ...]


class CudaImage(NamedTuple):
    cuda: str  # "12.8.1"
    status: str  # supported | eol (in NVIDIA's newest tag lists read)
    flavours: dict[str, tuple[str, ...]]  # Ubuntu ("ubuntu24.04") -> flavours ("base", "cudnn-runtime", ...)
    arch: dict[str, tuple[str, ...]]  # Ubuntu -> machines ("x86_64", "arm64"); an Ubuntu missing: not known
    cudnn: str = ""  # the cuDNN inside its cudnn images
    grade: str = "declared"
    sources: tuple[str, ...] = ()
    require: tuple[Requirement, ...] = ()  # NVIDIA_REQUIRE_CUDA where read; an Ubuntu and machine missing: not known

    def tag(self, flavour: str, os_name: str) -> str:
        return f"{self.cuda}-{flavour}-{os_name}"

    def requirement(self, os_name: str, arch: str) -> Optional[Requirement]:
        """The image's NVIDIA_REQUIRE_CUDA on that Ubuntu and machine, where the data has it.
        Every flavour has its base image's: the others are built FROM it and do not set it again."""
        machine = _ARCH.get(arch, arch)
        return next((r for r in self.require if os_name in r.ubuntus and machine in r.machines), None)


def refuses(requirement: Requirement, own_driver: str, driver: str, gpu_names: tuple[str, ...]) -> bool:
    """Whether the NVIDIA Container Toolkit refuses, for sure, to start an image of this
    NVIDIA_REQUIRE_CUDA on a driver: older than the image's own CUDA driver (`own_driver`), and its
    branch excepted for none of the GPUs' brands. GeForce cards are told by their name (NVML's
    brands for them are geforce and geforcertx); other brands are not, so an excepted branch on
    another GPU is not for sure."""
    from cudafit.records import driver_key

    if driver_key(driver) >= driver_key(own_driver):
        return False
    if driver.split(".")[0] not in requirement.branches:
        return True
    geforce = bool(gpu_names) and all("geforce" in name.lower() for name in gpu_names)
    return geforce and not {"geforce", "geforcertx"} & set(requirement.brands)


class UbuntuPython(NamedTuple):
    """The python3 an Ubuntu release's archive installs (its python3-defaults): what `apt-get install
    python3` gives in an nvidia/cuda image of that Ubuntu."""

    ubuntu: str  # "ubuntu22.04", as image tags name it
    python: str  # "3.10"
    grade: str
    sources: tuple[str, ...]


def _side_tables(doc: dict, table: str) -> Iterator[Entry]:
    """Each [[table]] of the file besides its [[image]] ones (whose reader reads the header and
    the date), as an Entry named by its own key; the caller finishes each."""
    sources = read_header(FILE, doc)
    for i, raw in enumerate(entries(FILE, doc, table, table), 1):
        yield Entry(FILE, f"[[{table}]] #{i} ({raw.get(table, '?') if isinstance(raw, dict) else '?'})", raw, sources)


def read_ubuntu(doc: dict) -> tuple[UbuntuPython, ...]:
    """The file's [[ubuntu]] tables."""
    out = []
    for e in _side_tables(doc, "ubuntu"):
        ubuntu = e.get("ubuntu", read_str)
        if not re.fullmatch(r"ubuntu\d{2}\.\d{2}", ubuntu):
            raise e.fail("ubuntu", "expected the release as image tags name it: ubuntu22.04")
        python = e.get("python3", read_str)
        if not re.fullmatch(r"3\.\d+", python):
            raise e.fail("python3", "expected a Python minor: 3.10")
        out.append(UbuntuPython(ubuntu, python, e.get("grade", read_grade), tuple(e.raw.get("source", ()))))
        e.finish()
    return tuple(out)


class ImageRepository(NamedTuple):
    """The machines an image repository publishes its tags for (pytorch/pytorch: x86_64 alone): a
    Dockerfile FROM it is built on those machines only, as `docker build` stops at FROM elsewhere."""

    repository: str  # as Docker Hub names it: "pytorch/pytorch"
    machines: tuple[str, ...]  # "x86_64", "arm64"
    grade: str
    sources: tuple[str, ...]


def read_repositories(doc: dict) -> tuple[ImageRepository, ...]:
    """The file's [[repository]] tables."""
    out = []
    for e in _side_tables(doc, "repository"):
        repository = e.get("repository", read_str)
        if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*/[a-z0-9][a-z0-9._-]*", repository):
            raise e.fail("repository", "expected a Docker Hub repository as `docker pull` names it: pytorch/pytorch")
        machines = e.get("arch", read_str_list)
        if not machines or not set(machines) <= set(_ARCH.values()):
            raise e.fail("arch", f"expected machines among {sorted(set(_ARCH.values()))}")
        out.append(ImageRepository(repository, tuple(machines), e.get("grade", read_grade), tuple(e.raw.get("source", ()))))
        e.finish()
    return tuple(out)


def read(doc: dict, dates: list[str]) -> tuple[CudaImage, ...]:
    out = []
    for e in table_entries(FILE, doc, "image", "cuda", dates, also=("ubuntu", "repository")):
        cuda = e.get("cuda", read_str)
        Version(cuda)  # a version: 12.8.1
        if len(cuda.split(".")) != 3:
            raise e.fail("cuda", "expected the full release, as tags name it: 12.8.1")
        status = e.get("status", read_str)
        if status not in ("supported", "eol"):
            raise e.fail("status", "expected supported or eol")
        flavours = e.get("flavours", _per_os)
        out.append(
            CudaImage(
                cuda=cuda,
                status=status,
                flavours=flavours,
                arch=e.get("arch", _per_os, required=False, default={}),
                cudnn=e.get("cudnn", read_str, required=False, default=""),
                grade=e.get("grade", read_grade),
                sources=tuple(e.raw.get("source", ())),
                require=e.get("require", partial(_requirements, e, cuda, tuple(flavours)), required=False, default=()),
            )
        )
        e.finish()
    return tuple(sorted(out, key=lambda i: Version(i.cuda), reverse=True))


def _requirements(image: Entry, cuda: str, ubuntus: tuple[str, ...], raw: Any) -> tuple[Requirement, ...]:
    if not isinstance(raw, list) or not raw:
        raise ValueError("expected [[image.require]] tables")
    out = []
    for i, item in enumerate(raw, 1):
        e = Entry(image.file, f"{image.where} [[image.require]] #{i}", item, image.sources)
        need = e.get("cuda", read_str)
        if need != ".".join(cuda.split(".")[:2]):
            # NVIDIA's images ask for their own major.minor; another value is a copying slip
            raise e.fail("cuda", f"expected {'.'.join(cuda.split('.')[:2])}, the image's own CUDA")
        branches = e.get("branches", read_str_list)
        if not all(b.isdigit() for b in branches):
            raise e.fail("branches", 'expected driver branches: ["535", "550"]')
        brands = e.get("brands", read_str_list)
        if bool(branches) != bool(brands):
            raise e.fail("brands", "branches and brands go together: both listed, or both empty")
        machines = e.get("arch", read_str_list)
        if not set(machines) <= set(_ARCH.values()):
            raise e.fail("arch", f"expected machines among {sorted(_ARCH.values())}")
        on = e.get("ubuntu", read_str_list)
        if not set(on) <= set(ubuntus):
            raise e.fail("ubuntu", f"expected Ubuntus the image has flavours for: {', '.join(ubuntus)}")
        out.append(
            Requirement(
                ubuntus=tuple(on),
                machines=tuple(machines),
                cuda=need,
                branches=tuple(branches),
                brands=tuple(brands),
                grade=e.get("grade", read_grade),
                sources=tuple(e.raw.get("source", ())),
            )
        )
        e.finish()
    return tuple(out)


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


def pick(
    images: tuple[CudaImage, ...], cuda: str, flavour: str, arch: str, prefer: tuple[str, ...] = PREFERRED, *, cudnn: Optional[str] = None
) -> Optional[tuple[CudaImage, str]]:
    """(image, Ubuntu) of CUDA `cuda`'s release line (12.6: 12.6.x) that has `flavour` ("devel",
    "runtime", or "cudnn-runtime": the cuDNN flavour as that release spells it) for the machine,
    and, with `cudnn`, whose cuDNN serves a build made with that one: a supported image before an
    end-of-life one (NVIDIA deletes those), then the newest patch, then the preferred Ubuntu. None
    where the data has no such image."""
    major_minor = ".".join(cuda.split(".")[:2])
    wanted_arch = _ARCH.get(arch, arch)
    found = []
    for image in images:
        if ".".join(image.cuda.split(".")[:2]) != major_minor:
            continue
        if cudnn is not None and not cudnn_serves(image.cudnn, cudnn):
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


def cudnn_serves(have: str, built_with: str) -> bool:
    """Whether an image's cuDNN (9.10.2.21) loads for a build made with `built_with` (9.1): the
    same major, no older (the solver's own rule, search.py: a 9.x build runs on 9.y, y >= x)."""
    if not have:
        return False
    return have.split(".")[0] == built_with.split(".")[0] and Version(have) >= Version(built_with)


def cudnn_flavour(image: CudaImage, flavour: str, os_name: str) -> Optional[str]:
    """The flavour as the image spells it (cudnn-runtime is cudnn8-runtime on 12.2), or None."""
    have = image.flavours.get(os_name, ())
    if not flavour.startswith("cudnn-"):
        return flavour if flavour in have else None
    rest = flavour.removeprefix("cudnn-")
    return next((f for f in have if f.startswith("cudnn") and f.endswith("-" + rest)), None)
