"""Where pip and uv read a pin from: the indexes a file names (the PyTorch index and its variants,
PyPI, any other), the URLs a pin is looked for on, and the variant an exact pin installs from them.
Facts the index rules and the joint solve share; no rule of its own."""

from __future__ import annotations

import re
from typing import Optional

from cudafit.check.model import Document, Pin

TORCH_MEMBERS = ("torch", "torchvision", "torchaudio")
_TORCH_INDEX = re.compile(r"^https?://download\.pytorch\.org/whl/(?P<variant>[^/?#]+)/?")


def torch_variant(url: str) -> Optional[str]:
    """The variant a PyTorch index URL serves (cu124, cpu, rocm6.2, nightly), or None for another
    index, and for the find-links pages (torch_stable.html) that list the builds of every variant."""
    match = _TORCH_INDEX.match(url.strip())
    # whl/variant is the wheel-variant index (PEP 825): every variant, told apart by labels
    return match["variant"] if match and not match["variant"].endswith(".html") and match["variant"] != "variant" else None


def serves_local_builds(url: str) -> bool:
    """A PyTorch page pip can take +cuXXX builds from: a variant index or a find-links page."""
    return _TORCH_INDEX.match(url.strip()) is not None


def effective_local(doc: Document, pin: Pin) -> Optional[str]:
    """The variant an exact pin installs: its own tag, or, for `torch==2.5.1` read only from one
    PyTorch variant index, that index's variant (pip takes 2.5.1+cu124 there)."""
    if pin.local is not None or pin.version is None:
        return pin.local
    variants = {torch_variant(u) for u in serving_urls(doc, pin)}
    if len(variants) == 1 and indexes_only(doc, pin):
        variant = variants.pop()
        return variant if variant not in (None, "nightly") else None
    return None


def serving_urls(doc: Document, pin: Pin) -> list[str]:
    """The URLs pip/uv would look for this pin on (PyPI aside)."""
    if pin.from_index is not None:
        return [pin.from_index]
    usable = [i for i in doc.indexes if not i.explicit and i.kind != "channel"]
    return [i.url for i in usable]


def indexes_only(doc: Document, pin: Pin) -> bool:
    """pip looks nowhere else: `--index-url` replaced PyPI, or the pin names its one index."""
    return pin.from_index is not None or any(i.kind == "index-url" for i in doc.indexes)


def only_from_pypi(doc: Document, pin: Pin) -> bool:
    """The pin is read from PyPI alone: no other index, or PyPI's own (a lockfile's registry)."""
    return all(is_pypi(u) for u in serving_urls(doc, pin))


def is_pypi(url: str) -> bool:
    return url.rstrip("/") in ("https://pypi.org/simple", "https://pypi.python.org/simple", "https://files.pythonhosted.org")


def other_index(doc: Document, pin: Pin) -> bool:
    """The pin is read from an index that is neither PyPI nor PyTorch's (a mirror, a company
    index): cudafit cannot know what it serves, so a local pin there is not its finding."""
    return any(torch_variant(u) is None and not serves_local_builds(u) and not is_pypi(u) for u in serving_urls(doc, pin))
