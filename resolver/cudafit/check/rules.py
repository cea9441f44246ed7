"""The rules of `cudafit check`: each has a stable code, reads a Document and the data, and
returns findings with a fix in words (and an edit where the fix is unambiguous). Questions of
what runs where go to the solver; no rule re-derives compatibility."""

from __future__ import annotations

import re
from functools import lru_cache, partial
from typing import Any, NamedTuple, Optional

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from cudafit.check.contradictions import Clash, contradictions
from cudafit.check.environments import Environment, describe, environments, holds_in, names_extra, reach_names_extra, relevant, selective, view
from cudafit.check.memo import by_identity
from cudafit.check.model import BUILD_SYSTEM, CondaSpec, Document, Finding, Pin, Span
from cudafit.check.solved import solved
from cudafit.check.wheels import Gap, Missing, gaps, judged, no_wheel, stated_pythons, wheel_key, wheel_pins
from cudafit.records import Machine, Matrices, Policy, Resolution, TorchRelease


class Rule(NamedTuple):
    code: str
    name: str
    severity: str
    summary: str  # one line for the README's table and `cudafit check --list-rules`


RULES = (
    Rule("CF000", "invalid-requirement", "error", "a line pip would refuse: not a PEP 508 requirement"),
    Rule("CF001", "local-pin-without-index", "error", "a +cuXXX/+cpu pin, but no index the file names serves that build (PyPI serves none)"),
    Rule("CF002", "no-such-build", "error", "a release or build (version x variant x platform) that was never published"),
    Rule("CF003", "index-disagrees", "error", "a PyTorch index URL for one variant and a pin (or release) it does not serve"),
    Rule("CF004", "unpaired-companions", "error", "torchvision/torchaudio pinned to a release built for another torch, or another variant"),
    Rule("CF005", "cuda-libraries-clash", "error", "frameworks whose CUDA major, cuDNN major or nvidia-* pins cannot meet in one environment"),
    Rule("CF006", "pytorch-extra-index", "warning", "the PyTorch index as --extra-index-url: any index may win a name (dependency confusion)"),
    Rule("CF007", "conda-channel-release", "error", "a pytorch-channel conda spec for a release or CUDA the channel never had (it ended with 2.5)"),
    Rule("CF008", "unpinned-cuda13", "warning", "unpinned torch that installs a CUDA 13 build from PyPI on Linux, which needs driver >= 580"),
    Rule("CF009", "marker-excludes-all", "warning", "an environment marker that no platform and Python with a build of the release satisfies"),
    Rule("CF010", "target-does-not-run", "error", "the pinned set does not run on a target machine (driver floor, no kernel image, platform)"),
    Rule("CF011", "missing-include", "error", "an -r/-c include that cannot be read"),
    Rule("CF012", "include-cycle", "error", "an -r/-c include that includes itself again"),
    Rule("CF013", "not-verifiable", "note", "a pin cudafit cannot check: a release its data lacks, or an unknown fact (fails only with --strict)"),
    Rule("CF014", "build-torch-differs", "error", "[build-system] requires a torch release other than the one the project pins: its extension will not load"),
    Rule("CF015", "no-wheel-here", "error", "a pin none of whose releases has a wheel (or an sdist) for a platform or Python the file installs on"),
    Rule("CF016", "uv-finds-no-solution", "error", "with --resolve: uv finds no solution for an environment the file describes (its reason quoted)"),
    Rule("CF017", "requirements-contradict", "error", "two requirements of one package (a constraint included) that no version meets together"),
)
BY_CODE = {rule.code: rule for rule in RULES}
TORCH_MEMBERS = ("torch", "torchvision", "torchaudio")
_TORCH_INDEX = re.compile(r"^https?://download\.pytorch\.org/whl/(?P<variant>[^/?#]+)/?")


class Target(NamedTuple):
    """A machine the pinned set must run on: from the command line or `[tool.cudafit] targets`."""

    name: str
    machine: Machine


def finding(code: str, span: Span, message: str, fix: str = "", edit: Optional[tuple[Span, str]] = None) -> Finding:
    return Finding(span.path, span.line, span.col, code, message, BY_CODE[code].severity, fix, edit)


def torch_variant(url: str) -> Optional[str]:
    """The variant a PyTorch index URL serves (cu124, cpu, rocm6.2, nightly), or None for another
    index, and for the find-links pages (torch_stable.html) that list the builds of every variant."""
    match = _TORCH_INDEX.match(url.strip())
    return match["variant"] if match and not match["variant"].endswith(".html") else None


def serves_local_builds(url: str) -> bool:
    """A PyTorch page pip can take +cuXXX builds from: a variant index or a find-links page."""
    return _TORCH_INDEX.match(url.strip()) is not None


def effective_local(doc: Document, pin: Pin) -> Optional[str]:
    """The variant an exact pin installs: its own tag, or, for `torch==2.5.1` read only from one
    PyTorch variant index, that index's variant (pip takes 2.5.1+cu124 there)."""
    if pin.local is not None or pin.version is None:
        return pin.local
    variants = {torch_variant(u) for u in _serving(doc, pin)}
    if len(variants) == 1 and _indexes_only(doc, pin):
        variant = variants.pop()
        return variant if variant not in (None, "nightly") else None
    return None


def check_document(doc: Document, matrices: Matrices, targets: tuple[Target, ...]) -> list[Finding]:
    """The file's own findings once, then each environment it describes on its own: one finding
    per problem, naming the environments it holds in where that is not all of them."""
    found = [finding(p.code, p.span, p.message) for p in doc.problems]
    releases = {str(r.version): r for r in matrices.torch}
    for rule in (_extra_index, _conda_channel, _unpinned_cuda13, _markers, _marked_builds, _build_torch):
        found += rule(doc, matrices, releases)
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
            seen_by[which] = (whole, whole._replace(pins=tuple(p for p in whole.pins if relevant(p))))
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
            by_pins[seen.pins] = _local_pins(seen, matrices, releases) + _companions(seen, matrices, releases)
        meaning = (envs[0].platform, envs[0].python, tuple(_meaning(p) for p in seen.pins))
        if meaning not in joint:
            joint[meaning] = (seen.pins, _joint_and_targets(seen, matrices, mine, envs[0], any_targets=bool(targets)))
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
                judged_here = tuple(p for p in whole.pins if wheel_key(p) in wheels_only and (p.files is not None or _from_pypi(whole, p)))
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
    # lockfile's other hundreds of packages are left out of every view.
    return doc._replace(pins=tuple(p for p in doc.pins if relevant(p) or judged(p, matrices)))


def file_environments(doc: Document, matrices: Matrices) -> list[Environment]:
    """The environments check_document evaluates `doc` in."""
    return environments(_ours(doc, matrices), doc)


def _targets_env(target: Target, env: Environment) -> bool:
    """A target machine is checked in the environments of its platform (and Python)."""
    machine = target.machine
    return machine.platform == env.platform and (env.python is None or machine.python in (None, env.python))


# -- the PyTorch index and its builds ---------------------------------------------------------


def _serving(doc: Document, pin: Pin) -> list[str]:
    """The URLs pip/uv would look for this pin on (PyPI aside)."""
    if pin.from_index is not None:
        return [pin.from_index]
    usable = [i for i in doc.indexes if not i.explicit and i.kind != "channel"]
    return [i.url for i in usable]


def _from_pypi(doc: Document, pin: Pin) -> bool:
    """The pin is read from PyPI alone: no other index, or PyPI's own (a lockfile's registry)."""
    return all(_is_pypi(u) for u in _serving(doc, pin))


def _is_pypi(url: str) -> bool:
    return url.rstrip("/") in ("https://pypi.org/simple", "https://pypi.python.org/simple", "https://files.pythonhosted.org")


def _never_released(pin: Pin, matrices: Matrices) -> bool:
    """A torch version inside the release lines the data covers that none of their releases has
    (torch 2.3.2). An older line's version (torch 1.0) is only unknown to the data (CF013)."""
    if pin.name != "torch" or pin.version is None:
        return False
    version = Version(pin.version)
    if version.is_prerelease:
        return False  # release candidates and nightlies exist without being in the data (CF013)
    known = [r.version for r in matrices.torch]
    return bool(known) and min(v.release[:2] for v in known) <= version.release[:2] and version < max(known) and version not in known


def _local_pins(doc: Document, matrices: Matrices, releases: dict[str, TorchRelease]) -> list:
    out = []
    locked = doc.kind in ("uv-lock", "pylock")  # generated files: the fix is in their source, then re-lock
    for pin in doc.pins:
        if pin.name not in TORCH_MEMBERS or pin.version is None:
            continue
        release = _release_of(pin, matrices, releases)
        tags = sorted({b.tag for b in release.builds}) if release is not None else []
        if release is not None and pin.local is not None and pin.local not in tags:
            out.append(
                finding(
                    "CF002",
                    pin.span,
                    f"{pin.name} {pin.version} has no +{pin.local} build (torch {release.version} builds: {', '.join(tags)})",
                    "pick one of the builds that exist",
                )
            )
            continue
        # PyPI serves no local version at all, whatever the release (a pre-release, one older
        # than the data): without a page that serves them, pip and uv find nothing.
        any_page = any(serves_local_builds(u) for u in _serving(doc, pin))
        if pin.local is not None and not any_page and not _other_index(doc, pin) and not locked and not doc.no_index:
            url = matrices.torch_index.format(variant=pin.local)
            out.append(
                finding(
                    "CF001",
                    pin.span,
                    f"{pin.name}=={pin.version}+{pin.local} is served only by the PyTorch index, and this file names none",
                    _index_advice(doc, url),
                )
            )
            continue
        if release is None:
            if _never_released(pin, matrices):
                known = ", ".join(str(r.version) for r in matrices.torch if r.version.release[:2] == Version(pin.version).release[:2]) or "none"
                out.append(
                    finding(
                        "CF002",
                        pin.span,
                        f"torch {pin.version} was never released (releases of {Version(pin.version).major}.{Version(pin.version).minor}: {known})",
                        "pin a release that exists",
                    )
                )
            continue
        variants = [v for v in (torch_variant(u) for u in _serving(doc, pin)) if v]
        if variants and pin.local is not None and pin.local not in variants and len(set(variants)) == 1:
            if pin.from_index is None:
                index = next((i for i in doc.indexes if torch_variant(i.url) == variants[0]), None)
            else:  # a [[tool.uv.index]] its sources route it to: that table's url is rewritten
                index = next((i for i in doc.indexes if i.url == pin.from_index and i.kind == "uv-index"), None)
            edit = None
            if index is not None and not locked and _all_local_tags(doc) == {pin.local}:
                edit = (index.span, index.span.text.replace(f"/whl/{variants[0]}", f"/whl/{pin.local}"))
            # Name only a variant this release has: the advice must be something that installs.
            other = f" or pin +{variants[0]}" if variants[0] in tags else ""
            out.append(
                finding(
                    "CF003",
                    pin.span,
                    f"{pin.name} pins +{pin.local}, but the index it comes from serves {variants[0]} builds",
                    f"use the {pin.local} index ({matrices.torch_index.format(variant=pin.local)}){other}",
                    edit,
                )
            )
            continue
        if pin.local is None and len(set(variants)) == 1 and variants[0] not in tags and _indexes_only(doc, pin):
            out.append(
                finding(
                    "CF003",
                    pin.span,
                    f"the {variants[0]} index serves no {pin.name} {pin.version} (torch {release.version} builds: {', '.join(tags)})",
                    "point the index at a variant this release has",
                )
            )
    return out


def _other_index(doc: Document, pin: Pin) -> bool:
    """The pin is read from an index that is neither PyPI nor PyTorch's (a mirror, a company
    index): cudafit cannot know what it serves, so a local pin there is not its finding."""
    return any(torch_variant(u) is None and not serves_local_builds(u) and not _is_pypi(u) for u in _serving(doc, pin))


def _marked_builds(doc: Document, matrices: Matrices, releases: dict[str, TorchRelease]) -> list:
    """A marked torch pin whose build exists on none of the platforms its marker allows."""
    out = []
    for pin in doc.pins:
        release = releases.get(pin.version or "") if pin.name == "torch" else None
        missing = _platforms_without(pin, release) if release is not None else []
        if missing:
            out.append(
                finding(
                    "CF002",
                    pin.span,
                    f"{pin.name} {pin.version} has no +{pin.local} build for {', '.join(missing)}, and its marker allows no other platform",
                    "pick a build that exists there, or fix the marker",
                )
            )
    return out


def _build_torch(doc: Document, matrices: Matrices, releases: dict[str, TorchRelease]) -> list:
    """An extension compiled in an isolated build links the torch `[build-system] requires` brings
    (the newest PyPI has that matches, where it names no version). torch's C++ ABI changes with
    every minor release, so an extension built against one release line does not load in another:
    an error where the build's torch is of another line than the one the project pins exactly."""
    out: list[Finding] = []
    built = [p for p in doc.pins if p.group == BUILD_SYSTEM and p.name == "torch"]
    pinned = [p for p in doc.pins if p.group == "" and p.name == "torch" and p.version is not None and not p.marker]
    if len(built) != 1 or len(pinned) != 1 or not matrices.torch:
        return out
    try:
        spec, runtime = SpecifierSet(built[0].specifier), Version(pinned[0].version or "")
    except (InvalidSpecifier, InvalidVersion):
        return out
    line = runtime.release[:2]
    known = [r.version for r in matrices.torch if spec.contains(r.version)]
    newest = max(known, default=None)
    if newest is None or line not in {r.version.release[:2] for r in matrices.torch}:
        return out  # a release line the data does not know: nothing to compare with
    # The build takes the newest that matches; a newer one on PyPI than the data's newest is of
    # another line still, so only a newest of the pinned line leaves any doubt (and passes).
    if newest.release[:2] != line:
        out.append(
            finding(
                "CF014",
                built[0].span,
                f"the isolated build compiles against torch {newest.major}.{newest.minor} ('{built[0].span.text}' takes the newest that matches), "
                f"but the project pins torch {pinned[0].version}: torch's C++ ABI changes between release lines, so the extension will not load",
                f"require torch=={pinned[0].version} in [build-system] requires, or build with --no-build-isolation "
                "(uv: [tool.uv] extra-build-dependencies with match-runtime = true)",
            )
        )
    return out


def _platforms_without(pin: Pin, release: TorchRelease) -> list[str]:
    """The platforms a marked torch pin is meant for, when its build exists on none of them (the
    data lists torch's builds per platform; the companions' are not recorded, so only torch)."""
    if pin.name != "torch" or pin.local is None or not pin.marker:
        return []
    built = {p for b in release.builds if b.tag == pin.local for p in b.platforms}
    meant = [p for p in sorted(release.platforms) if _marker_allows(pin.marker, [(p, py) for py in sorted(release.pythons(p))])]
    # A marker that holds nowhere is CF009's finding; one that holds where the build is, is fine.
    return meant if meant and not built & set(meant) else []


def _release_of(pin: Pin, matrices: Matrices, releases: dict[str, TorchRelease]) -> Optional[TorchRelease]:
    if pin.version is None:
        return None
    if pin.name == "torch":
        return releases.get(pin.version)
    return next((r for r in matrices.torch if getattr(r, pin.name) == pin.version), None)


def _all_local_tags(doc: Document) -> set[str]:
    return {p.local for p in doc.pins if p.name in TORCH_MEMBERS and p.local}


def _indexes_only(doc: Document, pin: Pin) -> bool:
    """pip looks nowhere else: `--index-url` replaced PyPI, or the pin names its one index."""
    return pin.from_index is not None or any(i.kind == "index-url" for i in doc.indexes)


def _index_advice(doc: Document, url: str) -> str:
    if doc.kind == "pyproject":
        return f'add [[tool.uv.index]] name = "pytorch", url = "{url}", explicit = true, and torch = {{ index = "pytorch" }} under [tool.uv.sources]'
    if doc.kind == "conda-env":
        return f"add `--index-url {url}` to the pip: section"
    # Never an extra index: pip takes the highest version of a name from any index (CF006).
    return f"add `--index-url {url}` (it also serves torch's own dependencies; install packages it lacks from PyPI in a command of their own)"


def _companions(doc: Document, matrices: Matrices, releases: dict[str, TorchRelease]) -> list:
    out = []
    torch_pins = [p for p in doc.pins if p.name == "torch" and p.version is not None and not p.constraint]
    locked = doc.kind in ("uv-lock", "pylock")
    for pin in doc.pins:
        if pin.name not in ("torchvision", "torchaudio") or pin.version is None:
            continue
        # A torch without a marker installs wherever its companion does.
        torch = [t for t in torch_pins if t.group in ("", pin.group) and t.marker in (None, pin.marker)]
        if len(torch) != 1:
            continue  # no torch pin beside it, or several (per-platform forks of a lockfile): nothing to pair
        release = releases.get(torch[0].version or "")
        if release is None:
            continue
        wanted = getattr(release, pin.name)
        if wanted is not None and wanted != pin.version:
            new = pin.span.text.replace(pin.version, wanted, 1) if pin.version in pin.span.text else ""
            out.append(
                finding(
                    "CF004",
                    pin.span,
                    f"{pin.name} {pin.version} is not built for torch {release.version}, which pairs with {pin.name} {wanted}",
                    f"pin {pin.name}=={wanted}",
                    (pin.span, new) if new and not locked and not pin.hashed else None,
                )
            )
        elif (mine := effective_local(doc, pin)) and (theirs := effective_local(doc, torch[0])) and mine != theirs:
            out.append(
                finding(
                    "CF004",
                    pin.span,
                    f"{pin.name} +{mine} beside torch +{theirs}: companions must be builds of one variant",
                    f"install {pin.name}=={pin.version}+{theirs}, from the index torch comes from",
                    (pin.span, pin.span.text.replace(f"+{mine}", f"+{theirs}"))
                    if pin.local and f"+{mine}" in pin.span.text and not pin.hashed and doc.kind not in ("uv-lock", "pylock")
                    else None,
                )
            )
    return out


def _extra_index(doc: Document, matrices: Matrices, releases: dict[str, TorchRelease]) -> list:
    return [
        finding(
            "CF006",
            index.span,
            "the PyTorch index as an extra index: pip takes the highest version of a name from any index, so a package that "
            "appears on both can come from the one you did not mean (dependency confusion)",
            "make it the --index-url (it mirrors torch's own dependencies), or use uv with an explicit index for torch",
        )
        for index in doc.indexes
        if index.kind == "extra-index-url" and torch_variant(index.url)
    ]


def _conda_channel(doc: Document, matrices: Matrices, releases: dict[str, TorchRelease]) -> list:
    out = []
    channels = [c.url.rstrip("/").rsplit("/", 1)[-1] for c in doc.channels]
    on_channel = [r for r in matrices.torch if r.conda_cuda]
    last = max((r.version for r in on_channel), default=None)
    # The package that picks the CUDA of the channel's builds: pytorch-cuda, cudatoolkit before 1.13.
    cuda_specs = {s.name: s for s in doc.conda if s.name in ("pytorch-cuda", "cudatoolkit")}
    for spec in doc.conda:
        if spec.name != "pytorch" or not spec.version or last is None:
            continue
        from_channel = spec.channel == "pytorch" or "pytorch-cuda" in cuda_specs or (channels[:1] == ["pytorch"] and "conda-forge" not in channels)
        if not from_channel:
            continue
        matching = [r for r in matrices.torch if _conda_matches(spec.version, r.version)]
        if matching and not any(r.conda_cuda for r in matching):
            out.append(
                finding(
                    "CF007",
                    spec.span,
                    f"the pytorch conda channel never had pytorch {spec.version}: its last release there is {last}",
                    "install torch with pip inside the conda environment (a pip: section with the PyTorch index), or use conda-forge's pytorch",
                )
            )
        elif matching and not _asks_cpu(doc, spec):
            packages = {r.conda_cuda_package for r in matching if r.conda_cuda}
            # the package that picks the release's builds, else a pytorch-cuda beside it (none of
            # whose versions picks a build of a release before 1.13)
            cuda_spec = (cuda_specs.get(packages.pop()) if len(packages) == 1 else None) or cuda_specs.get("pytorch-cuda")
            if cuda_spec is None or not cuda_spec.version:
                continue
            have = sorted({c for r in matching for c in r.conda_cuda}, key=Version)
            if not any(_conda_meets_series(cuda_spec.version, Version(c)) for c in have):
                out.append(
                    finding(
                        "CF007",
                        cuda_spec.span,
                        f"the pytorch channel built pytorch {spec.version} for CUDA {', '.join(have)}, not {cuda_spec.name} {cuda_spec.version}",
                        f"pin {cuda_spec.name} to one of {', '.join(have)}",
                    )
                )
    return out


def _asks_cpu(doc: Document, spec: CondaSpec) -> bool:
    """The file asks for the channel's CPU build: `cpuonly`, or a build string that names it
    (`pytorch=1.12.1=py3.9_cpu_0`); a CUDA package beside it picks nothing."""
    build = spec.span.text.split("=", 2)[2:] if spec.span.text.count("=") >= 2 and "==" not in spec.span.text else []
    return any(s.name == "cpuonly" for s in doc.conda) or any("cpu" in b for b in build)


def _conda_meets_series(spec: str, series: Version) -> bool:
    """Whether a conda spec admits some version of a CUDA series the data names by its minor
    (11.3: the channel's cudatoolkit 11.3.1; pytorch-cuda's versions are the minors themselves);
    `a|b` admits what either does."""
    if "|" in spec:
        return any(_conda_meets_series(part, series) for part in spec.split("|") if part.strip())
    text = spec.strip()
    if text[:1] in "<>!~=" and not text.startswith("=="):
        return _conda_matches(text, series) or _conda_matches(text, Version(f"{series}.9999"))
    try:
        wanted = Version(text.rstrip(".*").lstrip("="))
    except InvalidVersion:
        return False
    n = min(len(wanted.release), len(series.release))
    return wanted.release[:n] == series.release[:n]


def _conda_matches(spec: str, version: Version) -> bool:
    """conda's version match as environment files use it: 2.5.1, 2.5 (= 2.5.*), 2.5.*, >=2.4."""
    text = spec.strip()
    try:
        if text[:1] in "<>!~=":
            return version in SpecifierSet(text if not text.startswith("=") or text.startswith("==") else "=" + text)
        if "*" in text:
            return version in SpecifierSet(f"=={text}")
        wanted = Version(text)
    except (InvalidSpecifier, InvalidVersion):
        return False
    # conda compares versions padded with zeros: 11.7.0 is 11.7 (and =11.7 matches 11.7.1).
    have = version.release + (0,) * max(0, len(wanted.release) - len(version.release))
    return have[: len(wanted.release)] == wanted.release


# -- what pip would pull ----------------------------------------------------------------------


def _unpinned_cuda13(doc: Document, matrices: Matrices, releases: dict[str, TorchRelease]) -> list:
    out: list[Finding] = []
    if any(torch_variant(i.url) for i in doc.indexes) or doc.kind in ("uv-lock", "pylock"):
        return out
    floor = matrices.compat.get(13)
    for pin in doc.pins:
        if pin.name != "torch" or pin.version is not None or pin.constraint or pin.from_index is not None or pin.group == BUILD_SYSTEM:
            continue
        if pin.marker and not _marker_allows(pin.marker, [("linux-x86_64", None)]):
            continue
        try:
            spec = SpecifierSet(pin.specifier)
        except InvalidSpecifier:
            continue
        release = next((r for r in matrices.torch if spec.contains(r.version)), None)
        tag = release.pypi_variant.get("linux-x86_64") if release is not None else None
        build = next((b for b in release.builds if b.tag == tag and b.cuda is not None), None) if release is not None and tag else None
        if release is None or build is None or build.cuda is None or build.cuda.major < 13:
            continue
        driver = floor.linux_driver_min if floor is not None else "unknown"
        out.append(
            finding(
                "CF008",
                pin.span,
                f"'{pin.span.text}' installs torch {release.version} from PyPI on Linux, a CUDA {build.cuda} build that needs NVIDIA driver >= {driver}",
                "pin the release and a CUDA variant your drivers run (see `cudafit resolve --driver ...`), with its PyTorch index",
            )
        )
    return out


def _marker_allows(marker: str, places: list[tuple[str, Optional[str]]]) -> bool:
    """Whether the marker holds on any of the (platform, Python) places; one packaging cannot
    evaluate (an undefined name, a comparison it refuses) is given the benefit of the doubt."""
    # A selection (extra, group) is no platform: such a marker is given the benefit of the doubt.
    return names_extra(marker) or any(holds_in(marker, Environment(platform, python, "")) for platform, python in places)


_SELECTION_WORD = re.compile(r"\b(?:extra|extras|dependency_groups)\b")


def _markers(doc: Document, matrices: Matrices, releases: dict[str, TorchRelease]) -> list:
    from cudafit.frameworks import providers

    # Each family's own package: its releases' platforms and Pythons are in the data.
    families = {module.MEMBERS[0]: module for module in providers()}
    out: list[Finding] = []
    if doc.kind in ("uv-lock", "pylock"):
        return out  # a lock's markers are its resolver's forks, not a line someone wrote
    for pin in doc.pins:
        # An extra or group is a selection, not a platform: the environments decide it.
        if pin.name not in families or not pin.marker or _SELECTION_WORD.search(pin.marker):
            continue
        try:
            spec = SpecifierSet(pin.specifier)
        except InvalidSpecifier:
            continue
        if pin.version is not None:
            matching = [r for r in families[pin.name].releases(matrices) if str(r.version) == pin.version]
        else:
            matching = [r for r in families[pin.name].releases(matrices) if spec.contains(r.version, prereleases=True)]
        if not matching:
            continue
        where = {(p, py) for r in matching for p in r.platforms for py in r.pythons(p)}
        if not _marker_allows(pin.marker, sorted(where)):
            out.append(
                finding(
                    "CF009",
                    pin.span,
                    f"the marker '{pin.marker}' holds on no platform and Python that {pin.name}{pin.specifier} has a build for: it installs nowhere",
                    "fix the marker, or drop the line",
                )
            )
    return out


# -- the joint solve, here and on each target ---------------------------------------------------


def sets(doc: Document) -> dict[str, list[Pin]]:
    """The sets installed together: the main one, and each extra or group on top of it."""
    from cudafit.frameworks import BY_MEMBER

    members = [p for p in doc.pins if p.name in BY_MEMBER and not p.constraint]
    base = [p for p in members if not p.group or doc.kind == "requirements"]
    out = {"": base} if base else {}
    for group in dict.fromkeys(p.group for p in members if p.group and p.group != BUILD_SYSTEM and doc.kind != "requirements"):
        out[group] = base + [p for p in members if p.group == group]
    return out


def _spec(doc: Document, pin: Pin, machine: Optional[Machine] = None, matrices: Optional[Matrices] = None) -> str:
    """The spec the solver gets for a pin: its variant made explicit where the index decides it,
    and, on a target machine, where PyPI does (a plain torch==X from PyPI is the build PyPI serves
    on that platform: CUDA 13 on Linux from 2.11, CPU on Windows)."""
    # Only torch's own family is named by local tag on its index; a library read from there
    # (xformers, vllm) is any build of its version.
    local = effective_local(doc, pin) if pin.name in TORCH_MEMBERS else None
    if local is None and machine is not None and matrices is not None and pin.version and _from_pypi(doc, pin):
        release = next((r for r in matrices.torch if pin.name == "torch" and str(r.version) == pin.version), None)
        local = (release.pypi_variant or {}).get(machine.platform or "") if release is not None else None
    specifier = f"=={pin.version}+{local}" if local and not pin.local and pin.version else pin.specifier
    return f"{pin.name}{_extras(pin)}{specifier}" + (f"; {pin.marker}" if pin.marker else "")


def _unknown_release(pin: Pin, matrices: Matrices) -> bool:
    from cudafit.frameworks import BY_MEMBER

    if pin.version is None or pin.name not in BY_MEMBER:
        return False
    module = BY_MEMBER[pin.name]
    try:
        version = Version(Version(pin.version).public)  # the build tag (+cu121) names a build, not a release
    except InvalidVersion:
        return False
    # A companion (torchvision, jaxlib) is known when it pairs with a release the data has.
    known = {r.version for r in module.releases(matrices)}
    return not any(v in known for v in module.pairs(pin.name, version, matrices))


def _joint_and_targets(doc: Document, matrices: Matrices, targets: list[Target], env: Environment, *, any_targets: bool = False) -> list:
    """The set of one environment (`doc` is its view) solved jointly: on its platform with every
    floor met (can the pins share one environment at all?), or on each target of that platform."""
    from cudafit.errors import InputError

    out = []
    here = env.machine()
    for group, members in sets(doc).items():
        wheels = [p for p in doc.pins if p.group in ("", group) and p.name.startswith(("nvidia-", "cuda-")) and p.version]
        if not targets and (any_targets or (len(_families(members)) < 2 and not wheels)):
            continue  # another platform's targets, or one framework with no CUDA wheel beside it: nothing to solve
        bringing = [p for p in members if _brings_cuda(p, matrices)]
        # onnxruntime-gpu without its cuda extra still runs on CUDA libraries of its build's major
        # only, those the environment has: beside a framework that brings them (ORT loads torch's),
        # they must be of that major.
        members = bringing + [p for p in members if p not in bringing and p.name in _LOADS_OTHERS_CUDA] if bringing else []
        unknown = [p for p in members if _unknown_release(p, matrices)]
        for pin in unknown:
            if _never_released(pin, matrices):
                continue  # CF002 said it
            said = f"{pin.name} {pin.version} is not in cudafit's data (data of {matrices.data_date}); it was left out of the checks"
            out.append(finding("CF013", pin.span, said, "run `cudafit data update`, or check that the release exists"))
        members = [p for p in members if p not in unknown]
        # A library by range may resolve to a release older than the data (bitsandbytes before
        # 0.50): it cannot be judged, so only an exact pin of one takes part.
        members = [p for p in members if not _is_library(p) or p.version is not None]
        if not members:
            continue
        libraries, torch = _reachable_library_builds(doc, members, matrices), _reachable_torch_builds(doc, members, matrices, here)
        # one side alone keeps its identity, and with it its hash, which the solver's store asks for
        reachable = libraries | torch if libraries and torch else libraries or torch
        for pin in [p for p in members if _is_library(p) and p.version and not any(key[:2] == (_family(p), p.version) for key in reachable)]:
            where = ", ".join(sorted(set(_serving(doc, pin)))) or "PyPI"
            said = f"{pin.name} {pin.version} has no build on the index this file names ({where}): pip will not find it there"
            out.append(finding("CF002", pin.span, said, f"install {pin.name} from where it is published, in its own command (`cudafit resolve` gives them)"))
            members = [p for p in members if p is not pin]
        if not members:
            continue
        families = _families(members)
        specs = [_spec(doc, p, here, matrices) for p in members]
        policy = Policy(
            cpu=any(effective_local(doc, p) == "cpu" for p in members), only=reachable, only_reason="not reachable from the indexes this file names"
        )
        where = " (" + group + ")" if group else ""
        try:
            anywhere = solved(specs, here, matrices, policy)
        except InputError:
            anywhere = None
        if anywhere is not None and not anywhere.ok and _pins_disagree(anywhere, families) and _built_elsewhere(doc, members, matrices, policy):
            # The pins name builds this platform has none of (+cu124 on macOS): the file is not
            # for it. Only a target of this platform says so (CF010).
            anywhere = None
            if not targets:
                continue
        elif anywhere is not None and not anywhere.ok and _pins_disagree(anywhere, families):
            # No release satisfies the pins at all: CF002/CF004 say which and why. The frameworks
            # themselves are still checked, without the companions that disagree.
            members = [p for p in members if p.name in _FAMILY_PACKAGES]
            specs = [_spec(doc, p, here, matrices) for p in members]
            try:
                anywhere = solved(specs, here, matrices, policy) if members else None
            except InputError:
                anywhere = None
            if anywhere is None or (not anywhere.ok and _pins_disagree(anywhere, families)):
                continue
        checks: list[tuple[Optional[Target], Machine]] = [(t, t.machine) for t in targets]
        if not any_targets:
            checks.append((None, here))
        for target, machine in checks:
            try:
                res = anywhere if target is None else solved([_spec(doc, p, machine, matrices) for p in members], machine, matrices, policy)
            except InputError:
                continue  # every marker false on this machine: nothing to install there
            if res is None:
                continue
            if res.ok:
                out += _nvidia_pins(doc, res, group)
                continue
            # The solver's words, without what only `resolve` offers (its --mixed-cuda) or names (its "joint:" step).
            cause = (
                (res.conflicts[0] if res.conflicts else "no consistent set")
                .removeprefix("joint: ")
                .replace(" (allow it with --mixed-cuda)", "")
                .replace(" (ask for it with --cpu)", "")
            )
            # The finding points at the framework that has no build left, not the set's first line.
            offered = {c.family for builds in res.offered for c in builds}
            anchor = next((p.span for p in members if _family(p) not in offered), members[0].span)
            if target is None:
                if any(r.constraint == "joint" for r in res.rejections) and _each_runs_alone(doc, members, here, matrices, policy):
                    code = "CF013" if _only_unknowns(res) or _built_from_source(members, matrices) else "CF005"
                    fix = (
                        ""
                        if code == "CF013"
                        else "pin builds whose CUDA libraries can meet (one CUDA major, one cuDNN major, compatible nvidia-* pins, "
                        "the torch each library requires)"
                    )
                    verb = "cannot be shown to share" if code == "CF013" else "cannot share"
                    # A plain version from PyPI is PyPI's build: say so, it is often the telling fact.
                    pypi = [f"{s.split(';')[0]} from PyPI" for p in members if (s := _spec(doc, p, here, matrices)) != _spec(doc, p)]
                    said = f"these pins {verb} one environment{where}: {cause.replace(' that runs here', '')}"
                    out.append(finding(code, anchor, said + (f" ({', '.join(pypi)}: no PyTorch index in the file)" if pypi else ""), fix))
            else:
                out.append(
                    finding(
                        "CF010",
                        anchor,
                        f"the pinned set{where} does not run on target '{target.name}': {cause}",
                        "pin builds that run there (`cudafit resolve` with the target's --driver/--gpu)",
                    )
                )
    return out


def _is_library(pin: Pin) -> bool:
    return _library_name(pin.name)


@lru_cache(maxsize=None)  # the registry imports a provider per look-up; a file's views ask again and again
def _library_name(name: str) -> bool:
    from cudafit.frameworks import BY_MEMBER

    return bool(getattr(BY_MEMBER[name], "REQUIRES", ()))


def _reachable_library_builds(doc: Document, members: list[Pin], matrices: Matrices) -> frozenset[tuple[str, str, str]]:
    """The builds of each library pinned in the set (xformers, vllm, ...) that pip can reach for
    that pin: PyPI's wheels and sdist builds where the pin reaches PyPI, those of the PyTorch
    indexes it is read from, and release assets only through an sdist that fetches them
    (flash-attn's): vllm's GitHub wheels are reached by URL, never by `vllm==X`."""
    from cudafit.frameworks import BY_MEMBER

    out: frozenset[tuple[str, str, str]] = frozenset()
    for pin in members:
        if not _is_library(pin):
            continue
        indexes = frozenset(url.rstrip("/") for url in _serving(doc, pin))
        pypi = not _indexes_only(doc, pin) or any(_is_pypi(url) for url in indexes)
        # A file's views ask of the same pins again and again: the answer depends on these alone.
        found = by_identity(matrices, ("library-builds", pin.name, indexes, pypi), partial(_library_builds, BY_MEMBER[pin.name], indexes, pypi, matrices))
        out = out | found if out else found
    return out


def _library_builds(provider: Any, indexes: frozenset[str], pypi: bool, matrices: Matrices) -> frozenset[tuple[str, str, str]]:
    from cudafit.frameworks.library import build_label

    out = set()
    for release in provider.releases(matrices):
        from_sdist = any(b.route == "source" for b in release.builds)
        for build in release.builds:
            if build.index_url:
                reachable = build.index_url.rstrip("/") in indexes
            elif build.route == "asset":
                reachable = pypi and from_sdist
            else:
                reachable = pypi
            if reachable:
                out.add((provider.FAMILY, str(release.version), build_label(build)))
    return frozenset(out)


# Linux x86_64, where every framework has builds, with every floor met: the pins' own facts only.
_LINUX = Environment("linux-x86_64", None, "").machine()


def _built_elsewhere(doc: Document, members: list[Pin], matrices: Matrices, policy: Policy) -> bool:
    """The pins, read as any build of their versions, have builds on Linux x86_64: what one
    platform lacks is that platform's, not a disagreement between the pins."""
    from cudafit.errors import InputError

    try:
        res = solved([_spec(doc, p) for p in members], _LINUX, matrices, policy)
    except InputError:
        return False
    return not _pins_disagree(res, _families(members))


def _reachable_torch_builds(doc: Document, members: list[Pin], matrices: Matrices, machine: Machine) -> frozenset[tuple[str, str, str]]:
    """Where torch comes from PyPI (no index in the file, no local tag), the builds PyPI serves
    on this platform: one per release (CUDA 13 on Linux from 2.11, CPU on Windows and macOS)."""
    pins = [p for p in members if p.name in TORCH_MEMBERS]
    platform = machine.platform
    if not pins or any(p.local is not None or not _from_pypi(doc, p) for p in pins) or platform is None:
        return frozenset()
    return by_identity(matrices.torch, ("pypi-torch", platform), lambda: _pypi_torch_builds(matrices.torch, platform))


def _pypi_torch_builds(releases: tuple[TorchRelease, ...], platform: str) -> frozenset[tuple[str, str, str]]:
    return frozenset(("torch", str(r.version), r.pypi_variant[platform]) for r in releases if platform in r.pypi_variant)


def _each_runs_alone(doc: Document, members: list[Pin], machine: Machine, matrices: Matrices, policy: Policy) -> bool:
    """Every framework of the set has a build of its own on this platform: only then is a failure
    the set's (a clash), not the platform's (xformers has no aarch64 wheels)."""
    from cudafit.errors import InputError

    by_family: dict[str, list[Pin]] = {}
    for pin in members:
        by_family.setdefault(_family(pin), []).append(pin)
    for pins in by_family.values():
        try:
            if not solved([_spec(doc, p, machine, matrices) for p in pins], machine, matrices, policy).ok:
                return False
        except InputError:
            return False
    return True


def _built_from_source(members: list[Pin], matrices: Matrices) -> bool:
    """A pinned library that pip may compile from its sdist (flash-attn): the data records the
    toolkits that build was tried with, not every one it compiles with, so a clash with it is
    unknown rather than shown."""
    from cudafit.frameworks import BY_MEMBER

    for pin in members:
        if not _is_library(pin) or pin.version is None:
            continue
        release = next((r for r in BY_MEMBER[pin.name].releases(matrices) if str(r.version) == pin.version), None)
        if release is not None and any(b.route == "source" for b in release.builds):
            return True
    return False


def _only_unknowns(res: Resolution) -> bool:
    """The set fails only because the data lacks a fact (a cuDNN, a pin list), not because two facts clash."""
    kinds = {r.cause for r in res.rejections if r.constraint == "joint"} | {c.clash.kind for c in res.clashes}
    return bool(kinds) and kinds <= {"cudnn-unknown", "pins-unknown"}


# GPU-only distributions whose CUDA libraries may come from another package (their CPU twin is
# another name): without the extra that brings their own, they use what is installed beside them.
_LOADS_OTHERS_CUDA = frozenset({"onnxruntime-gpu"})


def _brings_cuda(pin: Pin, matrices: Matrices) -> bool:
    """Where every CUDA build of a framework comes through an extra (TensorFlow's [and-cuda], JAX's
    [cuda12]), a pin without one brings no CUDA libraries and cannot clash."""
    from cudafit.frameworks import BY_MEMBER

    releases = BY_MEMBER[pin.name].releases(matrices)
    # a file states one framework pin in many environments
    return by_identity(releases, ("brings-cuda", pin.specifier, pin.extras), lambda: _brings_cuda_of(releases, pin.specifier, pin.extras))


def _brings_cuda_of(releases: tuple, specifier: str, extras: tuple[str, ...]) -> bool:
    try:
        spec = SpecifierSet(specifier)
    except InvalidSpecifier:
        return True
    release = next((r for r in releases if spec.contains(r.version, prereleases=True)), None)
    builds = [b for b in getattr(release, "builds", ()) if b.kind == "cuda"]
    if not builds or not all(b.extras for b in builds):
        return True
    aliases = getattr(release, "aliases", {})  # jax[cuda] asks what jax[cuda12] asks
    return bool({e for b in builds for e in b.extras} & {aliases.get(e, e) for e in extras})


def _extras(pin: Pin) -> str:
    return f"[{','.join(pin.extras)}]" if pin.extras else ""


def _family(pin: Pin) -> str:
    return _family_of(pin.name)


@lru_cache(maxsize=None)
def _family_of(name: str) -> str:
    from cudafit.frameworks import BY_MEMBER

    return str(BY_MEMBER[name].FAMILY)


def _families(members: list[Pin]) -> set[str]:
    return {_family(p) for p in members}


# Each family's own package (torch, tensorflow, jax, onnxruntime-gpu): what stays when companions disagree.
_FAMILY_PACKAGES = ("torch", "tensorflow", "tensorflow-cpu", "jax", "jaxlib", "onnxruntime-gpu")


def _pins_disagree(res: Resolution, families: set[str]) -> bool:
    """Some family has no release left by its specifiers alone, wherever it runs."""
    offered = {c.family for builds in res.offered for c in builds}
    for family in families - offered:
        mine = [r for r in res.rejections if r.family == family]
        if mine and all(r.constraint == "spec" for r in mine):
            return True
    return False


def _nvidia_pins(doc: Document, res: Resolution, group: str) -> list:
    """The file's own nvidia-*/cuda-* pins against what the chosen builds require."""
    out: list[Finding] = []
    for pin in doc.pins:
        if pin.version is None or pin.group not in ("", group) or not pin.name.startswith(("nvidia-", "cuda-")):
            continue
        for candidate in res.candidates:
            wanted = candidate.pins.get(pin.name)
            if wanted and not SpecifierSet(wanted).contains(pin.version, prereleases=True):
                out.append(
                    finding(
                        "CF005",
                        pin.span,
                        f"{pin.name} {pin.version} does not satisfy {candidate.label}, which requires {pin.name}{wanted}",
                        f"pin a version in {wanted}, or drop the pin and let the framework bring it",
                    )
                )
    return out
