"""A Slurm GRES type read as a GPU of cudafit's GPU table when `--gres-map` does not name it.

Sites name GRES types after the GPU (`a100`, `h100`, `gh200`, `rtx3090`), and Slurm's
AutoDetect=nvml names them after NVML's device name (`nvidia_h100_80gb_hbm3`). The reading is
derived from the table, never from a list of its own: a type is read as the table's GPUs whose
name, normalised and without spaces, is the type or starts with it at a word boundary (`gh200` is
every `GH200 ...`). What the solver needs of a GPU is its compute capability, so a type is read
only where every GPU it matches agrees on it; else it stays unmapped and says why.
"""

from __future__ import annotations

import re
from typing import NamedTuple, Optional

from cudafit.gpus import lookup_gpu, normalize_gpu_name
from cudafit.records import GpuModel, cc_str

SHOWN = 4  # GPUs named where a type matches GPUs of different compute capabilities


class GresReading(NamedTuple):
    name: Optional[str]  # the table's name, or the family's shared words ("NVIDIA GH200"); None: unmapped
    compute_capability: Optional[str]  # "9.0"
    in_table: bool  # `name` is a table name, so the solver looks it up as any GPU name
    problem: Optional[str]  # why the type is not read, naming --gres-map

    @property
    def note(self) -> str:
        sm = f"sm_{(self.compute_capability or '').replace('.', '')}"
        shared = "" if self.in_table else f", as is every {self.name} in cudafit's GPU table"
        return f"read as {self.name} ({sm}{shared}); --gres-map overrides"


def _compact(text: str) -> str:
    return normalize_gpu_name(text).replace(" ", "")


def _family_name(models: list[GpuModel]) -> str:
    """The words every matched name starts with: "NVIDIA A800" for "NVIDIA A800-SXM4-80GB" and
    "NVIDIA A800 80GB PCIe" (nvidia-smi joins a name's parts with spaces or dashes)."""
    shared = re.split(r"[\s-]+", models[0].name)
    for model in models[1:]:
        words = re.split(r"[\s-]+", model.name)
        n = 0
        while n < min(len(shared), len(words)) and shared[n] == words[n]:
            n += 1
        shared = shared[:n]
    return " ".join(shared)


def read_gres_type(table: dict[str, GpuModel], kind: str) -> GresReading:
    """The GPU a GRES type names by default, or why it names none (or several that differ)."""
    unmapped = f"--gres-map {kind}='NVIDIA ...'"
    wanted = _compact(kind)
    exact: dict[str, GpuModel] = {}
    family: dict[str, GpuModel] = {}
    if wanted:
        for key, model in table.items():
            # "Quadro RTX 6000" (Turing) is an `rtx6000` as much as "RTX 6000 Ada Generation" is:
            # a site's type may drop the line's brand, so both must be weighed
            words = key.split(" ")
            for form in (words, words[1:]) if words[0] == "quadro" and len(words) > 1 else (words,):
                prefixes = ["".join(form[:n]) for n in range(1, len(form) + 1)]
                if prefixes[-1] == wanted:
                    exact.setdefault(model.name, model)
                elif wanted in prefixes:
                    family.setdefault(model.name, model)
    matched = {**exact, **family}
    if not matched:
        # A type more specific than any table name (`h100_sxm5_80gb`) is read as `--gpu` reads it.
        found, _warning = lookup_gpu(table, kind) if wanted else (None, None)
        if found is None:
            return GresReading(None, None, False, f"GRES type {kind!r} names no GPU in cudafit's GPU table: {unmapped}")
        return GresReading(found.name, cc_str(found.compute_capability), True, None)
    ccs = {cc_str(m.compute_capability) for m in matched.values()}
    if len(ccs) > 1:
        by_cc: dict[str, str] = {}
        for model in matched.values():
            by_cc.setdefault(cc_str(model.compute_capability), model.name)
        ordered = sorted(by_cc.items(), key=lambda item: tuple(int(x) for x in item[0].split(".")))
        shown = ", ".join(f"{name} sm_{cc.replace('.', '')}" for cc, name in ordered[:SHOWN]) + (", ..." if len(ordered) > SHOWN else "")
        return GresReading(None, None, False, f"GRES type {kind!r} matches GPUs that differ in compute capability ({shown}): {unmapped}")
    cc = ccs.pop()
    if exact:
        return GresReading(next(iter(exact.values())).name, cc, True, None)
    name = _family_name(list(family.values()))
    if _compact(name) != wanted:  # the names share less than the type says: show one of them
        return GresReading(next(iter(family.values())).name, cc, True, None)
    return GresReading(name, cc, False, None)
