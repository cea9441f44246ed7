"""matrices/kernels.toml: which precisions and kernels a GPU gets, per compute capability, in
hardware and in each framework's builds from a version on."""

from __future__ import annotations

from typing import Any, Union

from packaging.version import InvalidVersion, Version

from cudafit.fields import read_grade, read_str, read_str_list, table_entries
from cudafit.kernel_fit import KernelFact  # the record lives where it is judged: a loaded cache needs no reader
from cudafit.records import CC

FILE = "kernels.toml"
BELOW = ("error", "slow", "unavailable", "falls-back")


def read(doc: dict, dates: list[str]) -> tuple[KernelFact, ...]:
    out = []
    for e in table_entries(FILE, doc, "feature", "id", dates):
        below = e.get("below", read_str)
        if below not in BELOW:
            raise e.fail("below", f"{below!r}: expected one of {', '.join(BELOW)}")
        opt_in = e.get("opt_in", _opt_in, required=False, default=False)
        out.append(
            KernelFact(
                id=e.get("id", read_str),
                name=e.get("name", read_str),
                min_cc=e.get("min_cc", _cc),
                max_cc=e.get("max_cc", _cc, required=False),
                only_cc=tuple(_cc(v) for v in e.get("only_cc", read_str_list, required=False, default=[])),
                below=below,
                frameworks=tuple(e.get("frameworks", read_str_list)),
                since=e.get("since", _versions, required=False, default={}),
                until=e.get("until", _versions, required=False, default={}),
                grade=e.get("grade", read_grade),
                sources=tuple(e.get("source", read_str_list)),
                note=e.get("note", read_str, required=False, default=""),
                above=e.get("above", read_str, required=False, default=""),
                opt_in=opt_in is True,
                opt_in_cc=opt_in if isinstance(opt_in, tuple) else (),
            )
        )
        e.finish()
    return tuple(out)


def _cc(value: Any) -> CC:
    text = read_str(value)
    major, dot, minor = text.partition(".")
    if not (major.isdigit() and dot and minor.isdigit()):
        raise ValueError(f"{text!r}: expected a compute capability like 8.0")
    return int(major), int(minor)


def _opt_in(value: Any) -> Union[bool, tuple[CC, ...]]:
    """`opt_in = true` (wherever it is available) or a list of compute capabilities."""
    if isinstance(value, bool):
        if not value:
            raise ValueError("leave opt_in out where it is on by default or not known")
        return True
    ccs = tuple(_cc(v) for v in read_str_list(value))
    if not ccs:
        raise ValueError("expected true or a non-empty list of compute capabilities")
    return ccs


def _versions(value: Any) -> dict[str, Version]:
    if not isinstance(value, dict):
        raise ValueError("expected a table of framework = version")
    out = {}
    for name, text in value.items():
        try:
            out[str(name)] = Version(read_str(text))
        except InvalidVersion:
            raise ValueError(f"{name} = {text!r}: not a version") from None
    return out
