"""The image `resolve --inside` installs into: an NGC framework container named by its reference
(its torch, CUDA and Python from matrices/ngc-containers.toml), or one described by those facts
(`torch=2.8.0a0+5228986c39,cuda=12.9,python=3.12`), for images the data lacks."""

from __future__ import annotations

import re
from typing import NamedTuple, Optional

from packaging.version import InvalidVersion, Version

from cudafit.containers.data import Container, Fact
from cudafit.errors import InputError
from cudafit.records import Matrices

FIELD = "inside"
# nvcr.io/nvidia/pytorch:25.05-py3, with or without the registry and namespace
_REFERENCE = re.compile(r"^(?:(?:nvcr\.io/)?nvidia/)?(?P<repo>pytorch):(?P<tag>\d\d\.\d\d)-py3$")
_DESCRIBED = ("torch", "cuda", "python")


class Image(NamedTuple):
    name: str  # the reference as NGC writes it, or "the described image"
    torch: Version  # as its maker prints it: 2.8.0a0+5228986c39
    cuda: Version  # 12.9
    python: str  # "3.12"
    container: Optional[Container] = None  # the data's record, for a named NGC image
    grades: tuple[tuple[str, str], ...] = ()  # (fact, grade) of each fact read from the data

    @property
    def torch_release(self) -> Version:
        """The torch release its build is a snapshot of (2.8.0 for 2.8.0a0+5228986c39): the one
        library wheels are built against."""
        return Version(self.torch.base_version)


def read(text: str, matrices: Matrices, python: Optional[str] = None) -> Image:
    """`--inside`'s value: an NGC reference or a description; an InputError says what is wrong.
    `python` (given beside it) stands in for a Python the data lacks; one that differs from the
    image's known Python is refused, as the libraries install into the image's."""
    text = text.strip()
    if "=" in text and not text.startswith(("nvcr.io", "nvidia/")):
        return _same_python(_described(text), python)
    match = _REFERENCE.match(text)
    if match is None:
        raise InputError(
            "expected an NGC PyTorch image (nvcr.io/nvidia/pytorch:25.05-py3) or a description of one (torch=2.8.0a0+5228986c39,cuda=12.9,python=3.12)",
            field=FIELD,
            value=text,
        )
    tag = match["tag"]
    record = next((c for c in matrices.ngc_containers if c.framework == "pytorch" and c.tag == tag), None)
    name = f"nvcr.io/nvidia/pytorch:{tag}-py3"
    if record is None:
        known = sorted((c.tag for c in matrices.ngc_containers if c.framework == "pytorch"), key=_tag_key)
        raise InputError(f"not an NGC PyTorch release cudafit's data knows (it has {known[0]} to {known[-1]})", field=FIELD, value=text)
    if record.python is None and python:
        record = record._replace(python=Fact(python, "given"))
    return _same_python(_from_record(record, name), python)


def _same_python(image: Image, python: Optional[str]) -> Image:
    """The image, where `python` is not given or is its Python; else an InputError."""
    if python is None or python.split(".")[:2] == image.python.split("."):
        return image
    grade = dict(image.grades).get("python")
    known = f"{image.python} ({grade} in cudafit's data)" if grade else image.python
    said = f"{image.name}'s Python is {known}, and the libraries install into it: leave --python out"
    raise InputError(said, field="python", value=python)


def _from_record(c: Container, name: str) -> Image:
    lacking = [fact for fact, value in (("torch", c.torch), ("CUDA", c.cuda), ("Python", c.python)) if value is None]
    if lacking:
        raise InputError(
            f"cudafit's data lacks its {' and '.join(lacking)}; "
            + (
                "give it with --python 3.N"
                if lacking == ["Python"]
                else "describe the image instead (torch=VERSION,cuda=X.Y,python=3.N, as `pip list` and `nvcc --version` print them in it)"
            ),
            field=FIELD,
            value=name,
        )
    assert c.torch is not None and c.cuda is not None and c.python is not None
    torch = _version(c.torch.value, "torch", name)
    if len(torch.release) < 3:  # "2.12": which build of the line is not known
        raise InputError(
            f"cudafit's data holds only {c.torch.value!r} for its torch; describe the image instead (torch=VERSION,cuda=X.Y,python=3.N)",
            field=FIELD,
            value=name,
        )
    grades = (("torch", c.torch.grade), ("cuda", c.cuda.grade), ("python", c.python.grade))
    return Image(name, torch, _version(c.cuda.value, "cuda", name), ".".join(c.python.value.split(".")[:2]), c, grades)


def _described(text: str) -> Image:
    facts: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = (s.strip() for s in part.partition("="))
        if not sep or key not in _DESCRIBED or not value:
            raise InputError(f"{part.strip()!r}: expected {', '.join(k + '=VALUE' for k in _DESCRIBED)}", field=FIELD, value=text)
        if key in facts:
            raise InputError(f"{key} given twice", field=FIELD, value=text)
        facts[key] = value
    missing = [k for k in _DESCRIBED if k not in facts]
    if missing:
        raise InputError(f"a described image needs {', '.join(k + '=' for k in missing)} too", field=FIELD, value=text)
    python = facts["python"]
    if not re.fullmatch(r"3\.\d+(\.\d+)?", python):
        raise InputError(f"python={python}: expected a CPython version like 3.12", field=FIELD, value=text)
    torch, cuda = _version(facts["torch"], "torch", text), _version(facts["cuda"], "cuda", text)
    return Image("the described image", torch, cuda, ".".join(python.split(".")[:2]))


def _version(value: str, what: str, given: str) -> Version:
    try:
        return Version(value)
    except InvalidVersion:
        raise InputError(f"{what}={value}: not a version", field=FIELD, value=given) from None


def _tag_key(tag: str) -> tuple[int, ...]:
    return tuple(int(p) for p in tag.split("."))
