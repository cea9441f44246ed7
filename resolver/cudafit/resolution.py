"""The answer every command and the API give: the solver's values (solve.py, search.py,
floors.py: no words) worded by explain.py. The solver stays free of sentences, and every caller
gets the same words for the same answer."""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

from cudafit import explain
from cudafit.answers import Resolution
from cudafit.errors import InputError
from cudafit.floors import per_driver_floor
from cudafit.frameworks import BY_MEMBER, KNOWN
from cudafit.records import Machine, Matrices, Policy
from cudafit.solve import solve


def resolve(specs: list[str], machine: Machine, matrices: Matrices, policy: Policy) -> Resolution:
    """The best consistent set for `specs` on `machine`, with its reasons, or why none exists."""
    if not machine.driver_known and machine.os != "macos" and not policy.cpu and not jetson_board(machine, matrices):
        return explain.floor_note(per_driver_floor(specs, machine, matrices, policy, _worded), matrices.unknown_driver_major)
    return _worded(specs, machine, matrices, policy)


def jetson_board(machine: Machine, matrices: Matrices) -> bool:
    """A Jetson before Thor on a known JetPack: its driver comes with the JetPack, so the answer
    is not one per driver floor."""
    line = matrices.jetpack(machine.jetpack)
    return machine.jetson and line is not None and not line.server_builds


def _worded(specs: list[str], machine: Machine, matrices: Matrices, policy: Policy) -> Resolution:
    res = _numpy_one(explain.worded(solve(specs, machine, matrices, policy)), matrices)
    if not res.ok or not matrices.kernels:
        return res
    from cudafit.kernel_fit import fit

    # the GPU builds chosen: a CPU build gets none of a GPU's precisions or kernels
    versions = {c.family: c.version for c in res.candidates if c.kind != "cpu"}
    if not versions:
        return res
    return res._replace(kernels=tuple(fit(machine.gpus, versions, matrices.kernels)))


def why_not(name_version: str, res: Resolution, matrices: Matrices) -> list[str]:
    """Why `name==version` is not part of the answer: its own rejections, its conflicts with the
    chosen builds, or the preference that put another build first."""
    from packaging.utils import canonicalize_name

    name, sep, text = name_version.partition("==")
    name = canonicalize_name(name.strip())
    # AMD's TensorFlow is a package of its own name whose versions are the builds' (2.18.1, 2.14.0.600)
    name = canonicalize_name("tensorflow") if name == "tensorflow-rocm" else name
    if not sep or name not in BY_MEMBER:
        raise InputError(f"expected NAME==VERSION with NAME one of {KNOWN}", field="why", value=name_version)
    try:
        version = Version(text.strip())
    except InvalidVersion:
        raise InputError(f"{text!r} is not a version", field="why", value=name_version) from None
    family = BY_MEMBER[name].FAMILY
    # A local label names one build (NAME==2.14.1+cu126); the release is its public version.
    tag = version.local
    version = Version(version.public)
    if not any(c.family == family for cs in res.offered for c in cs) and not any(r.family == family for r in res.rejections):
        raise InputError(f"{family} is not among the specs resolved", field="why", value=name_version)
    # A member's version (a companion package's) names the family release(s) it pairs with.
    versions = BY_MEMBER[name].pairs(name, version, matrices)
    if not versions:
        return [f"{name} {version} pairs with no {family} release in cudafit's data"]
    lines = []
    for v in versions:
        lines += explain.why_not(family, v, res, tag)
    return lines


def _numpy_one(res: Resolution, matrices: Matrices) -> Resolution:
    """A chosen release built against NumPy 1.x whose metadata lets pip take NumPy 2: the set pins
    numpy<2 (in every format, with the shared pins), and says why."""
    if not res.ok or not matrices.numpy1:
        return res
    from cudafit.numpy_abi import built_on_numpy1

    said = []
    for c in res.candidates:
        fact = built_on_numpy1(matrices.numpy1, c.family, str(c.version), res.machine.platform)
        if fact is not None:
            fails = "importing it fails" if fact.effect == "import" else "its NumPy conversions fail (Numpy is not available)"
            lets = "its metadata lets pip install NumPy 2"
            said.append(f"{c.family} {c.version} was built against NumPy 1.x and {lets}, with which {fails}: numpy<2 is pinned [{fact.grade}]")
    if not said:
        return res
    return res._replace(shared_pins={**res.shared_pins, "numpy": "<2"}, warnings=(*res.warnings, *said))


def for_the_machine(res: Resolution, matrices: Matrices) -> Resolution:
    """The answer for one machine, as resolve prints it and the API returns it: its driver floor
    raised to what its GPUs need (a B200 needs R570 whatever its build's CUDA 12 floor). Fleet and
    Dockerfile answers for many machines keep the builds' own floor."""
    if not res.driver_min:
        return res
    from cudafit import rules

    return res._replace(driver_min=rules.floor_for_gpus(res.driver_min, res.machine, matrices))
