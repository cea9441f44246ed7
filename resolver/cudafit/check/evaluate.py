"""`check_document`: every rule over one document. The file's own problems and the rules that read
it whole come first; then each environment it describes (platform, Python, selection) is checked on
its own, environments that install the same pins are checked once, and each finding is reported once
with the environments it holds in where that is not all of them."""

from __future__ import annotations

from cudafit.check.brought import brought
from cudafit.check.build_rules import build_torch_differs
from cudafit.check.conda_rules import conda_channel_release
from cudafit.check.contradictions import Clash, contradictions
from cudafit.check.environments import Environment, describe, environments, reach_names_extra, relevant, selective, view
from cudafit.check.image_platforms import narrowed, published_platforms
from cudafit.check.image_rules import apt_python, image_toolkit_differs, source_build_differs
from cudafit.check.image_target_rules import image_refused_on_targets
from cudafit.check.index_rules import local_pins, pytorch_extra_index, unpaired_companions
from cudafit.check.indexes import only_from_pypi
from cudafit.check.joint_rules import joint_and_targets
from cudafit.check.model import Document, Finding, Pin
from cudafit.check.numpy_rules import numpy_one_builds
from cudafit.check.platform_rules import marked_builds, marker_excludes_all, unpinned_cuda13
from cudafit.check.rules import Target, finding
from cudafit.check.wheels import Gap, Missing, compiled_platforms, gaps, judged, no_wheel, stated_pythons, wheel_key, wheel_pins
from cudafit.records import Matrices

ANY_DRIVER = "9999.0"  # newer than any branch: no build is refused for its driver


def check_document(doc: Document, matrices: Matrices, targets: tuple[Target, ...]) -> list[Finding]:
    """The file's own findings once, then each environment it describes on its own: one finding
    per problem, naming the environments it holds in where that is not all of them."""
    found = [finding(p.code, p.span, p.message) for p in doc.problems]
    # A target without a GPU of any kind asks nothing of a driver: a CUDA torch installs and runs on
    # its CPU there (`--python 3.12` on a CI runner describes such a machine), and an image starts.
    # It is judged as if any driver were there, so only what holds without one (no build for its
    # platform or Python, an index that does not serve it) is said.
    targets = tuple(
        t if t.machine.has_driver or t.machine.gpus or t.machine.jetson else t._replace(machine=t.machine._replace(driver=ANY_DRIVER)) for t in targets
    )
    if doc.apt_python and not doc.requires_python:
        # an image's Python is the one its Ubuntu installs with apt (the data's cuda-images.toml)
        python = apt_python(matrices, doc.apt_python, doc.python_named)
        doc = doc._replace(requires_python=f"=={python}.*" if python else "")
    if doc.kind == "dockerfile" and doc.images:
        # built only where its base image is published (pytorch/pytorch: x86_64 alone)
        doc = doc._replace(
            platforms=narrowed(doc.platforms, published_platforms(matrices, doc.images[-1][0])),
            source_builds=tuple(b._replace(platforms=narrowed(b.platforms, published_platforms(matrices, b.image))) for b in doc.source_builds),
        )
    if doc.compiled_here and not doc.platforms:
        doc = doc._replace(platforms=compiled_platforms(doc, matrices))
    releases = {str(r.version): r for r in matrices.torch}
    for rule in (
        pytorch_extra_index,
        conda_channel_release,
        unpinned_cuda13,
        marker_excludes_all,
        marked_builds,
        build_torch_differs,
        image_toolkit_differs,
        source_build_differs,
        numpy_one_builds,
    ):
        found += rule(doc, matrices, releases)
    found += image_refused_on_targets(doc, matrices, targets)
    ours = _ours(doc, matrices)
    every = environments(ours, doc)
    # Environments that install the same framework pins on one platform and Python are checked
    # once by the joint rules; CF015 reads each environment's whole view (its wheels-only pins too).
    views: dict[tuple, tuple[Document, list]] = {}
    full: dict[Environment, Document] = {}
    # Without a marker the platform does not change which pins a selection installs.
    marked = any(p.marker or any(r.marker for r in p.routes) for p in ours.pins)
    # ... nor, unless a pin or route names one, the selection.
    chosen = selective(ours)
    seen_by: dict[tuple, tuple[Document, Document]] = {}
    # (which, platform, Python) -> its view's environments: a view's pins are hashed once, not per environment
    slots: dict[tuple, list[Environment]] = {}
    for env in every:
        which = (env.platform if marked else "", env.python, env.selection if chosen else "")
        if which not in seen_by:
            whole = view(ours, env)
            # what a line brings is CF015's alone: the joint rules read what the file pins
            seen_by[which] = (whole, whole._replace(pins=tuple(p for p in whole.pins if relevant(p) and not p.required_by)))
        whole, seen = seen_by[which]
        full[env] = whole
        slot = (which, env.platform, env.python)
        if slot not in slots:
            slots[slot] = views.setdefault((env.platform, env.python, seen.pins), (seen, []))[1]
        slots[slot].append(env)
    merged: dict[tuple, tuple[Finding, list]] = {}
    # The index and companion rules depend on the pins alone, not the platform: once per pin set.
    by_pins: dict[tuple, list[Finding]] = {}
    # The joint rules read what the pins say, not where they are written: extras that repeat
    # another's lines (unsloth's 90 extras hold 11 distinct sets) are solved once, and the
    # findings moved to each one's lines.
    joint: dict[tuple, tuple[tuple[Pin, ...], list[Finding]]] = {}
    for seen, envs in views.values():
        if not seen.pins:
            continue
        mine = [t for t in targets if _targets_env(t, envs[0])]
        if seen.pins not in by_pins:
            by_pins[seen.pins] = local_pins(seen, matrices, releases) + unpaired_companions(seen, matrices, releases)
        meaning = (envs[0].platform, envs[0].python, tuple(_meaning(p) for p in seen.pins))
        if meaning not in joint:
            joint[meaning] = (seen.pins, joint_and_targets(seen, matrices, mine, envs[0], any_targets=bool(targets)))
        written, said = joint[meaning]
        results = by_pins[seen.pins] + (said if written is seen.pins else _moved(said, written, seen.pins))
        for result in results:
            merged.setdefault((result.path, result.line, result.col, result.code, ""), (result, []))[1].extend(envs)
    # Most files pin nothing wheels-only: CF015 then asks nothing per environment. A missing wheel
    # may hold for some Pythons only, and a lock's package install in some selections only
    # (lockfiles.reach): each environment is asked on its own.
    wheels_only = wheel_pins(ours, matrices)
    pythons = stated_pythons(doc)
    # A lock's reach names extras; where none does, the selection does not change the answer.
    reach_chosen = any(reach_names_extra(p.reached) for p in ours.pins)
    answers: dict[tuple, list[Missing]] = {}
    judged_in: dict[int, Document] = {}
    gaps_in: dict[tuple, list[Gap]] = {}
    for env in every if wheels_only else ():
        whole = full[env]
        key = (id(whole), env.platform, env.python, env.selection if reach_chosen else "")
        if key not in answers:
            if id(whole) not in judged_in:
                # the data's file lists are PyPI's; a lock's own list is whatever index it names
                judged_here = tuple(p for p in whole.pins if wheel_key(p) in wheels_only and (p.files is not None or only_from_pypi(whole, p)))
                judged_in[id(whole)] = whole._replace(pins=judged_here)
            from_pypi = judged_in[id(whole)]
            # What the files lack is the same in every selection of a view, platform and Python.
            wanted = (env.python,) if env.python is not None else pythons
            if (id(whole), env.platform, wanted) not in gaps_in:
                gaps_in[(id(whole), env.platform, wanted)] = gaps(from_pypi, wheels_only, env.platform, wanted)
            answers[key] = no_wheel(from_pypi, gaps_in[(id(whole), env.platform, wanted)], matrices, env)
        for missing in answers[key]:
            result = finding("CF015", missing.span, missing.message, missing.fix)
            held_in = [e._replace(selection=env.selection) for e in missing.environments]
            merged.setdefault((result.path, result.line, result.col, result.code, result.message), (result, []))[1].extend(held_in)
    clashes, asked = contradictions(doc, matrices)
    for clash in clashes:
        result = _contradiction(clash)
        merged.setdefault((result.path, result.line, result.col, result.code, result.message), (result, []))[1].extend(clash.environments)
    for result, envs in merged.values():
        where = describe(envs, asked if result.code == "CF017" else every)
        if where:
            keys = tuple(sorted({e.key() for e in envs}))
            result = result._replace(message=f"on {where}: {result.message}", where=where, environments=keys)
        found.append(result)
    return found


def _meaning(pin: Pin) -> tuple:
    """What the joint rules read of a pin: all of it but where it is written (and what only CF015 reads)."""
    return (pin.name, pin.specifier, pin.version, pin.local, pin.marker, pin.from_index, pin.group, pin.constraint, pin.extras)


def _moved(found: list[Finding], written: tuple[Pin, ...], here: tuple[Pin, ...]) -> list[Finding]:
    """Findings about `written` pins, pointed at the same pins written elsewhere (`here`)."""
    place = {(a.span.path, a.span.line, a.span.col): b.span for a, b in zip(written, here, strict=True)}
    out = []
    for one in found:
        span = place.get((one.path, one.line, one.col))
        out.append(one if span is None else one._replace(path=span.path, line=span.line, col=span.col))
    return out


def _contradiction(clash: Clash) -> Finding:
    first, second = clash.first, clash.second

    def said(pin: Pin, other: Pin) -> str:
        if pin.required_by:  # not written in the file: a pinned release's own METADATA asks it
            return f"{pin.required_by}'s own requirement {pin.name}{pin.specifier} (its METADATA)"
        kind = "constraint" if pin.constraint else "requirement"
        place = f"line {pin.span.line}" if pin.span.path == other.span.path else f"{pin.span.path}:{pin.span.line}"
        return f"the {kind} {pin.name}{pin.specifier} ({place})"

    lead = f"{second.name}{second.specifier}" if not second.required_by else said(second, first)
    fix = "make the two agree, or keep one"
    if first.required_by or second.required_by:
        fix = f"allow a {second.name} the pinned release accepts, or pin a release that accepts yours"
    return finding("CF017", second.span, f"{lead} and {said(first, second)} admit no common version: pip and uv find no solution", fix)


def _ours(doc: Document, matrices: Matrices) -> Document:
    # The environment rules read frameworks, CUDA wheels and the pins CF015 judges only: a
    # lockfile's other hundreds of packages are left out of every view. What a requirement brings
    # (jax[cuda12]'s Linux-only plugin, liger-kernel's triton) is CF015's too: it installs
    # wherever its line does.
    mine = tuple(p for p in doc.pins if relevant(p) or judged(p, matrices))
    return doc._replace(pins=mine + brought(doc, matrices))


def file_environments(doc: Document, matrices: Matrices) -> list[Environment]:
    """The environments check_document evaluates `doc` in."""
    return environments(_ours(doc, matrices), doc)


def _targets_env(target: Target, env: Environment) -> bool:
    """A target machine is checked in the environments of its platform (and Python)."""
    machine = target.machine
    return machine.platform == env.platform and (env.python is None or machine.python in (None, env.python))
