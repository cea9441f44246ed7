"""The answer when the driver is unknown: the driver decides which CUDA major loads, so the solver
answers once per CUDA major's driver floor and picks the one the data names as the default."""

from __future__ import annotations

from collections.abc import Callable

from packaging.version import Version

from cudafit import rules
from cudafit.answers import FloorAnswer, Resolution
from cudafit.records import Machine, Matrices, Policy, driver_key


def per_driver_floor(
    specs: list[str],
    machine: Machine,
    matrices: Matrices,
    policy: Policy,
    resolve_for: Callable[[list[str], Machine, Matrices, Policy], Resolution],
) -> Resolution:
    """The driver decides which CUDA major loads, and it is unknown: answer for each major's
    minor-version floor (raised to what the GPUs' architecture needs), and choose the one the
    data names as the default (the widest installed base), saying so and how to change it.

    resolve_for answers for a machine as described (the solver's own step); it comes as an argument
    so that the solver, which calls this, is not imported from here."""
    answers: list[FloorAnswer] = []
    results: dict[int, Resolution] = {}
    default = matrices.unknown_driver_major
    need = rules.gpus_oldest_driver(matrices, machine)
    floors = {}
    for major in sorted(matrices.compat, reverse=True):
        floor, _rule = rules.driver_floor(matrices, machine, Version(f"{major}.0"), False)
        if floor is not None:
            floors[major] = floor
    for major, floor in floors.items():
        driver = max(floor, need, key=driver_key) if need else floor
        above = floors.get(major + 1)
        if above is not None and driver_key(driver) >= driver_key(above):
            # The GPUs need a driver that already loads the next major: no driver runs this row.
            past = f"the GPUs need a driver >= {need}, which is past the CUDA {major} range (< {above})"
            answers.append(FloorAnswer(major, floor, False, (), past, reason=past))
            continue
        res = resolve_for(specs, machine._replace(driver=driver, driver_known=True), matrices, policy)
        answers.append(
            FloorAnswer(
                major,
                driver,
                res.ok,
                tuple(p.requirement for p in res.packages),
                "" if res.ok else (res.conflicts[0] if res.conflicts else ""),
                reason="" if res.ok or not res.causes else res.causes[0].reason,
                built_for=tuple(sorted({int(c.cuda.split(".")[0]) for c in res.candidates if c.kind == "cuda" and c.cuda})) if res.ok else (),
            )
        )
        results[major] = res
    if not results:
        return resolve_for(specs, machine, matrices, policy)
    if default not in results or not results[default].ok:
        # Nothing runs on the default major's drivers (a GPU or a spec that needs CUDA 13, say):
        # the nearest major that has an answer, newer ones first.
        order = sorted(results, key=lambda m: (m < default, abs(m - default)))
        default = next((m for m in order if results[m].ok), default if default in results else order[0])
    chosen = results[default]
    answers = [a._replace(chosen=a.cuda_major == default) for a in answers]
    needs = rules.gpu_driver_needs(matrices, machine)
    return chosen._replace(
        machine=machine,
        by_driver_floor=tuple(answers),
        warnings=tuple(dict.fromkeys((*machine.warnings, *needs, *chosen.warnings))),
    )
