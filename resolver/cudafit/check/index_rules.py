"""The rules that read torch's pins against the indexes the file names, pin by pin, without a solve:
a local build no named index serves (CF001), a release or build never published (CF002), an index
of another variant (CF003), companions paired with another torch or variant (CF004), and the
PyTorch index as an extra index (CF006)."""

from __future__ import annotations

from typing import Optional

from packaging.version import Version

from cudafit.check.indexes import TORCH_MEMBERS, effective_local, indexes_only, other_index, serves_local_builds, serving_urls, torch_variant
from cudafit.check.model import Document, Pin
from cudafit.check.rules import finding
from cudafit.records import Matrices, TorchRelease


def local_pins(doc: Document, matrices: Matrices, releases: dict[str, TorchRelease]) -> list:
    """Each exact torch/torchvision/torchaudio pin against its release's builds and the indexes it is read from (CF001, CF002, CF003)."""
    out = []
    locked = doc.kind in ("uv-lock", "pylock")  # generated files: the fix is in their source, then re-lock
    # a constraints file on its own installs nothing: the index comes with the install it constrains
    constraints_only = bool(doc.pins) and all(p.constraint for p in doc.pins)
    for pin in doc.pins:
        if pin.name not in TORCH_MEMBERS or pin.version is None:
            continue
        release = _release_of(pin, matrices, releases)
        tags = sorted({b.tag for b in release.builds} | _amd_tags(pin, matrices)) if release is not None else []
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
        any_page = any(serves_local_builds(u) for u in serving_urls(doc, pin))
        if pin.local is not None and not any_page and not other_index(doc, pin) and not locked and not doc.no_index and not constraints_only:
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
            if never_released(pin, matrices):
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
        variants = [v for v in (torch_variant(u) for u in serving_urls(doc, pin)) if v]
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
        if pin.local is None and len(set(variants)) == 1 and variants[0] not in tags and indexes_only(doc, pin):
            out.append(
                finding(
                    "CF003",
                    pin.span,
                    f"the {variants[0]} index serves no {pin.name} {pin.version} (torch {release.version} builds: {', '.join(tags)})",
                    "point the index at a variant this release has",
                )
            )
    return out


def never_released(pin: Pin, matrices: Matrices) -> bool:
    """A torch version inside the release lines the data covers that none of their releases has
    (torch 2.3.2). An older line's version (torch 1.0) is only unknown to the data (CF013)."""
    if pin.name != "torch" or pin.version is None:
        return False
    version = Version(pin.version)
    if version.is_prerelease:
        return False  # release candidates and nightlies exist without being in the data (CF013)
    known = [r.version for r in matrices.torch]
    return bool(known) and min(v.release[:2] for v in known) <= version.release[:2] and version < max(known) and version not in known


def _release_of(pin: Pin, matrices: Matrices, releases: dict[str, TorchRelease]) -> Optional[TorchRelease]:
    if pin.version is None:
        return None
    if pin.name == "torch":
        return releases.get(pin.version)
    version = Version(pin.version)  # torchvision 0.29 is 0.29.0
    found = next((r for r in matrices.torch if (paired := getattr(r, pin.name)) and Version(paired) == version), None)
    if found is None:  # a companion only AMD's builds pair (torchaudio 2.11.0.3 with AMD's torch 2.14.0)
        amd = next((b for b in matrices.amd_torch if Version(getattr(b, pin.name)) == version), None)
        found = releases.get(amd.torch) if amd is not None else None
    return found


def _amd_tags(pin: Pin, matrices: Matrices) -> set[str]:
    """The local tags of AMD's own builds (amd-torch.toml) of this pin's version: 2.14.0+rocm10.1.0."""
    version = Version(pin.version or "0")
    return {b.local for b in matrices.amd_torch if Version(b.torch if pin.name == "torch" else getattr(b, pin.name)) == version}


def _all_local_tags(doc: Document) -> set[str]:
    return {p.local for p in doc.pins if p.name in TORCH_MEMBERS and p.local}


def _index_advice(doc: Document, url: str) -> str:
    if doc.kind == "pyproject":
        return f'add [[tool.uv.index]] name = "pytorch", url = "{url}", explicit = true, and torch = {{ index = "pytorch" }} under [tool.uv.sources]'
    if doc.kind == "conda-env":
        return f"add `--index-url {url}` to the pip: section"
    # Never an extra index: pip takes the highest version of a name from any index (CF006).
    return f"add `--index-url {url}` (it also serves torch's own dependencies; install packages it lacks from PyPI in a command of their own)"


def unpaired_companions(doc: Document, matrices: Matrices, releases: dict[str, TorchRelease]) -> list:
    """torchvision/torchaudio beside one torch pin: the release and the variant must be torch's own pair (CF004)."""
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
        # AMD's own build of this torch pairs its own companions (amd-torch.toml)
        amd = next((b for b in matrices.amd_torch if b.local == torch[0].local and Version(b.torch) == release.version), None)
        wanted = getattr(amd, pin.name) if amd is not None else wanted
        if wanted is not None and Version(wanted) != Version(pin.version):
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


def pytorch_extra_index(doc: Document, matrices: Matrices, releases: dict[str, TorchRelease]) -> list:
    """The PyTorch index named as an extra index (CF006)."""
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
