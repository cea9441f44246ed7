"""Answers kept for a check run, keyed by the object they were computed from.

A hook run checks many files and one file many environments, so the same questions come back
(the solver's answer for one set of pins, a file's pins per selection, PyPI's torch builds per
platform). The objects they depend on (the loaded data, a Document) hold dicts and cannot be
hashed: they are told apart by identity, and each is kept alive beside its answer so that its
identity is never another object's. The store is bounded: a run over thousands of files stays small."""

from __future__ import annotations

from typing import Any, Callable, TypeVar

LIMIT = 4096

_T = TypeVar("_T")
_KEPT: dict[tuple, tuple[object, Any]] = {}


def by_identity(source: object, key: tuple, compute: Callable[[], _T]) -> _T:
    """compute(), remembered for `source` (by identity) and `key` (by value)."""
    full = (id(source), *key)
    kept = _KEPT.get(full)
    if kept is None or kept[0] is not source:
        if len(_KEPT) >= LIMIT:
            _KEPT.clear()
        kept = _KEPT[full] = (source, compute())
    return kept[1]
