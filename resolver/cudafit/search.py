"""The joint step: which builds of different families can share one environment, and the best set
that does.

Builds of two families conflict when they need different CUDA majors (unless mixing is allowed),
different cuDNN majors, or pins on a shared nvidia-* wheel that no version satisfies. Those
constraints are pairwise, and for version ranges pairwise overlap means a common version, so arc
consistency first removes every build with no partner in some other family (cost grows with the
product of two families' sizes, not of all of them), and a depth-first search then takes, family by
family in the order the user named them, the best build consistent with those already chosen."""

from __future__ import annotations

from functools import lru_cache
from typing import Optional

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from cudafit import pins
from cudafit.answers import Candidate, Clash, Rejection
from cudafit.records import Policy


def conflict(a: Candidate, b: Candidate, policy: Policy) -> Optional[Clash]:
    """Why builds a and b cannot share one environment, or None."""
    # A library built against another chosen build uses that build's CUDA runtime: one major
    # always, whatever --mixed-cuda allows between frameworks.
    a_on_b, b_on_a = _built_against(a, b), _built_against(b, a)
    bound = a_on_b or b_on_a
    # The version a library requires first: no other build of it changes that.
    found_requires = _requires_clash(a, b)
    if found_requires is not None:
        return found_requires
    if a.rocm and b.rocm and _release(a.rocm) != _release(b.rocm):
        return Clash("rocm-release", a.label, b.label, a.rocm, b.rocm)
    for x, y, dist in ((a, b, a_on_b), (b, a, b_on_a)):
        # A library that loads the native library of the CUDA version of the build it is made
        # against (bitsandbytes) stands for those versions only.
        if dist and x.torch_cuda == "cpu" and y.cuda:
            return Clash("cuda-range", a.label, b.label, "cpu", y.cuda, dist=dist, unknown_is_a=x is a)
        if dist and x.torch_cuda and x.torch_cuda != "cpu" and y.cuda and not _admits(x.torch_cuda, y.cuda):
            return Clash("cuda-range", a.label, b.label, x.torch_cuda, y.cuda, dist=dist, unknown_is_a=x is a)
        if dist and x.needs_required_cuda and x.cuda and not y.cuda:
            return Clash("cuda-major", a.label, b.label, (a.cuda or "cpu").split(".")[0], (b.cuda or "cpu").split(".")[0], dist=dist)
    if a.cuda and b.cuda and (bound or not policy.mixed_cuda) and a.cuda.split(".")[0] != b.cuda.split(".")[0]:
        return Clash("cuda-major", a.label, b.label, a.cuda.split(".")[0], b.cuda.split(".")[0], dist=bound)
    if a.cudnn and b.cudnn and a.cudnn.split(".")[0] != b.cudnn.split(".")[0]:
        # A cuDNN build for 9.x runs on 9.y (y >= x) but never across majors, and one process loads one.
        return Clash("cudnn-major", a.label, b.label, a.cudnn, b.cudnn)
    if a.cuda and b.cuda and a.cuda.split(".")[0] == b.cuda.split(".")[0] and a.loads_cudnn and b.loads_cudnn:
        # One process loads one cuDNN: with a build's cuDNN unknown, and no shared pin to settle
        # it, nothing says the two agree on its major.
        shared_cudnn = any(d.startswith("nvidia-cudnn") for d in set(a.pins) & set(b.pins))
        for x in (a, b):
            if x.cudnn is None and not shared_cudnn:
                return Clash("cudnn-unknown", a.label, b.label, unknown_is_a=x is a)
        # Conservative with unknowns: builds of one CUDA major share nvidia-* wheels, and without
        # the versions a build pins, nothing says the two can be installed together.
        for x, y in ((a, b), (b, a)):
            if not x.pins_known and (y.pins or not y.pins_known):
                return Clash("pins-unknown", a.label, b.label, unknown_is_a=x is a)
    found = pins.clash(a.pins, b.pins)
    if found:
        dist, spec_a, spec_b = found
        return Clash("pin", a.label, b.label, spec_a, spec_b, dist)
    return None


def _release(rocm: str) -> tuple[str, ...]:
    return tuple(rocm.split(".")[:2])


def _built_against(x: Candidate, y: Candidate) -> str:
    """The distribution of y's that x is built against, or ""."""
    return next((p.name for p in y.packages if p.name in x.requires), "")


def _requires_clash(a: Candidate, b: Candidate) -> Optional[Clash]:
    """One of a, b is built against a distribution the other ships, and the other's build is not
    one it takes (unknown_is_a: a is the one built against b)."""
    for x, y in ((a, b), (b, a)):
        for p in y.packages:
            spec = x.requires.get(p.name)
            if spec is not None:
                version = f"{p.version}+{p.local}" if p.local else p.version
                if not _admits(spec, version):
                    return Clash("requires", a.label, b.label, spec, str(Version(version)), p.name, unknown_is_a=x is a)
    return None


@lru_cache(maxsize=4096)  # arc consistency asks the same library's pin of the same builds again and again
def _admits(spec: str, version: str) -> bool:
    return SpecifierSet(spec).contains(Version(version), prereleases=True)


# Whether builds of two signatures can share an environment: the same pairs come back in every
# solve of a check run (each file beside the same torch), so the answers outlive one solve.
_FITS: dict[tuple, bool] = {}
_FITS_LIMIT = 65536
# ... and which of the other family's builds tells why a build fits none of them
_TELLING: dict[tuple, Optional[tuple]] = {}


def arc_consistent(offered: list[tuple[str, list[Candidate]]], policy: Policy) -> tuple[list[list[Candidate]], list[Rejection]]:
    """Drop every build that conflicts with all builds of some other family (AC-3 over pairs of
    families), remembering why. Pair checks are memoised on what they depend on."""
    domains = [list(c) for _f, c in offered]
    if len(domains) < 2:
        return domains, []

    # A library built against one version of a framework tells builds of the same CUDA and pins
    # apart by their versions; without one, versions do not matter here.
    versions_matter = any(c.requires for d in domains for c in d)
    # ... and a library that stands for some CUDA versions of its framework (bitsandbytes) tells
    # them apart by their minor too.
    minors_matter = any(c.torch_cuda for d in domains for c in d)

    def signature(c: Candidate) -> tuple:
        # All that `conflict` looks at; builds of many releases share one (same CUDA, same pins).
        built = tuple((p.name, p.version, p.local) for p in c.packages) if versions_matter else ()
        return (
            c.cuda if minors_matter else c.cuda and c.cuda.split(".")[0],
            c.torch_cuda,
            c.cudnn and c.cudnn.split(".")[0],
            c.pins_known,
            tuple(sorted(c.pins.items())),
            c.loads_cudnn,
            c.needs_required_cuda,
            tuple(sorted(c.requires.items())),
            built,
            c.rocm and _release(c.rocm),
        )

    sigs = [{id(c): signature(c) for c in d} for d in domains]
    if len(_FITS) >= _FITS_LIMIT or len(_TELLING) >= _FITS_LIMIT:
        _FITS.clear()
        _TELLING.clear()
    # What a signature leaves out depends on these: they are part of every key.
    kind = (versions_matter, minors_matter, policy.mixed_cuda)

    def supported(a: Candidate, i: int, others: dict[tuple, Candidate]) -> bool:
        sa = sigs[i][id(a)]
        for sb, b in others.items():
            key = (kind, sa, sb)
            fits = _FITS.get(key)
            if fits is None:
                fits = _FITS[key] = conflict(a, b, policy) is None
            if fits:
                return True
        return False

    removed: list[Rejection] = []
    changed = True
    while changed:
        changed = False
        for i in range(len(domains)):
            for j in range(len(domains)):
                if i == j or not domains[j]:
                    continue
                # One representative build per signature of family j: compatibility is decided
                # between signatures, so the cost is not the product of the two families' sizes.
                others: dict[tuple, Candidate] = {}
                for b in domains[j]:
                    others.setdefault(sigs[j][id(b)], b)
                keep = []
                for a in domains[i]:
                    if supported(a, i, others):
                        keep.append(a)
                    else:
                        # which build tells why is decided by signatures too: asked once per run
                        told = (kind, sigs[i][id(a)], tuple(others))
                        if told not in _TELLING:
                            _TELLING[told] = _telling(a, others, policy)
                        teller = _TELLING[told]
                        example = conflict(a, others[teller], policy) if teller is not None else None
                        removed.append(
                            Rejection(
                                a.family,
                                a.version,
                                a.tag,
                                "joint",
                                "",  # worded by explain.worded, from `against` and `clash`
                                cause=example.kind if example else "",
                                against=domains[j][0].family,
                                clash=example,
                            )
                        )
                        changed = True
                domains[i] = keep
    return domains, removed


def _telling(a: Candidate, others: dict[tuple, Candidate], policy: Policy) -> Optional[tuple]:
    """The signature of the build whose clash explains a build's refusal, against the best builds
    of the other family first: a CUDA major says least when another build of that family shares
    a's major, so the first clash of another kind wins over it."""

    def major(c: Candidate) -> str:
        return c.cuda.split(".")[0] if c.cuda else ""

    # the builds of a's CUDA major first: theirs is the clash that keeps a out for another reason
    ordered = sorted(others.items(), key=lambda item: major(item[1]) != major(a))
    found = [(sb, c) for sb, c in ((sb, conflict(a, b, policy)) for sb, b in ordered) if c is not None]
    return next((sb for sb, c in found if c.kind != "cuda-major"), found[0][0] if found else None)


def search_in_order(domains: list[list[Candidate]], policy: Policy) -> Optional[list[Candidate]]:
    """The first consistent set, families in the order asked, except that a library whose builds
    stand for some CUDA versions of the framework it is made against (per-version native libraries,
    which rank alike) is chosen after that framework: the framework's preference then picks the
    CUDA version, not the library's first-listed build. The set comes back in the order asked."""
    paired = [i for i, d in enumerate(domains) if any(c.torch_cuda for c in d)]
    if not paired:
        return _search(domains, [], policy)
    order = [i for i in range(len(domains)) if i not in paired] + paired
    found = _search([domains[i] for i in order], [], policy)
    if found is None:
        return None
    by_index = dict(zip(order, found, strict=True))
    return [by_index[i] for i in range(len(domains))]


def _search(domains: list[list[Candidate]], chosen: list[Candidate], policy: Policy) -> Optional[list[Candidate]]:
    if len(chosen) == len(domains):
        return chosen
    for candidate in domains[len(chosen)]:
        if all(conflict(other, candidate, policy) is None for other in chosen):
            found = _search(domains, chosen + [candidate], policy)
            if found is not None:
                return found
    return None
