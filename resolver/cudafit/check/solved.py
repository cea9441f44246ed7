"""The solver's answer for one set of pins on one machine, asked once per check run (the corpus
asks 715 times for 256 distinct sets)."""

from __future__ import annotations

from typing import Union

from cudafit.answers import Resolution
from cudafit.check.memo import by_identity
from cudafit.errors import InputError
from cudafit.records import Machine, Matrices, Policy


def solved(specs: list[str], machine: Machine, matrices: Matrices, policy: Policy) -> Resolution:
    """solve.resolve(specs, machine, matrices, policy), remembered per loaded data; its InputError
    is raised anew each time (a kept exception would gather every raise's traceback)."""
    from cudafit.resolution import resolve

    def ask() -> Union[Resolution, str]:
        try:
            return resolve(specs, machine, matrices, policy)
        except InputError as exc:
            return str(exc)

    answer = by_identity(matrices, ("solved", tuple(specs), machine, policy), ask)
    if isinstance(answer, str):
        raise InputError(answer)
    return answer
