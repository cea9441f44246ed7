"""The solver's answer for one set of pins on one machine, asked once per check run.

A hook run checks many files, and one file many environments: the same framework pins meet the
same platform again and again (the corpus asks 715 times for 256 distinct sets). Answers are kept
per loaded data, and a bounded number of them (a run over thousands of files stays small)."""

from __future__ import annotations

from typing import Optional, Union

from cudafit.errors import InputError
from cudafit.records import Machine, Matrices, Policy, Resolution

LIMIT = 4096


class _Answers:
    matrices: Optional[Matrices] = None
    kept: dict[tuple, Union[Resolution, InputError]] = {}


_ANSWERS = _Answers()


def solved(specs: list[str], machine: Machine, matrices: Matrices, policy: Policy) -> Resolution:
    """solve.resolve(specs, machine, matrices, policy), remembered; its InputError is raised again."""
    from cudafit.solve import resolve

    if _ANSWERS.matrices is not matrices or len(_ANSWERS.kept) >= LIMIT:
        _ANSWERS.matrices, _ANSWERS.kept = matrices, {}
    key = (tuple(specs), machine, policy)
    if key not in _ANSWERS.kept:
        try:
            _ANSWERS.kept[key] = resolve(specs, machine, matrices, policy)
        except InputError as exc:
            _ANSWERS.kept[key] = exc
    answer = _ANSWERS.kept[key]
    if isinstance(answer, InputError):
        raise answer
    return answer
