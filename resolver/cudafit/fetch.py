"""The network, for `cudafit data update` only: PyPI's JSON API (or a mirror of it) and bundle
downloads. requests is imported here and nowhere else in cudafit, so no other command pays for it.

Every failure becomes one InputError line that says what to do next; nothing is left behind but
the caller's temporary folder, which the caller removes.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Optional

from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import Version

from cudafit.bundle import DISTRIBUTION, MAX_TOTAL_BYTES
from cudafit.errors import InputError

if TYPE_CHECKING:
    import requests

PYPI_JSON = f"https://pypi.org/pypi/{DISTRIBUTION}/json"
TIMEOUT = 30  # seconds without a byte before giving up: a slow link still finishes
_AIR_GAP_HINT = "on a site without internet, carry a bundle file in and use --from PATH"


class NotPublished(InputError):
    """The JSON API has no such project (HTTP 404): `data update` says what to do instead."""


class Remote(NamedTuple):
    version: Version
    url: str
    sha256: Optional[str]
    size: Optional[int]


def _session() -> requests.Session:
    import requests

    session = requests.Session()
    session.headers["User-Agent"] = "cudafit-data-update"
    return session


def _failure(url: str, exc: Exception) -> InputError:
    import requests

    if isinstance(exc, requests.exceptions.ProxyError):
        return InputError(f"cannot reach {url} through the proxy ({_first_line(exc)}); check HTTPS_PROXY, or {_AIR_GAP_HINT}")
    if isinstance(exc, requests.exceptions.SSLError):
        return InputError(f"cannot reach {url}: TLS verification failed ({_first_line(exc)}); set REQUESTS_CA_BUNDLE to your site's CA file")
    if isinstance(exc, requests.exceptions.Timeout) or "timed out" in str(exc).lower():
        return InputError(f"cannot reach {url}: no answer in {TIMEOUT} s; {_AIR_GAP_HINT}")
    return InputError(f"cannot reach {url} ({_first_line(exc)}); {_AIR_GAP_HINT}")


def _first_line(exc: Exception) -> str:
    # requests nests the cause in long reprs; its innermost reason reads best ("Name or service not known").
    text = str(exc).strip()
    unresolved = re.search(r"Failed to resolve '([^']+)'", text)
    if unresolved:  # urllib3's NameResolutionError, inside requests' retry wrapper
        return f"the host name {unresolved[1]} does not resolve (DNS)"
    for marker in ("Failed to establish a new connection: ", "Caused by "):
        if marker in text:
            text = text.split(marker, 1)[1]
    text = text.strip(" ()'\"").splitlines()[0] if text else ""
    if len(text) > 160:
        text = text[:160].rsplit(" ", 1)[0] + " ..."
    return text or type(exc).__name__


def candidates(api_url: str = PYPI_JSON) -> list[Remote]:
    """The bundles a PyPI-shaped JSON API lists, newest first (yanked ones left out)."""
    import requests

    try:
        response = _session().get(api_url, timeout=TIMEOUT)
    except requests.RequestException as exc:
        raise _failure(api_url, exc) from None
    if response.status_code == 404:
        raise NotPublished(f"no {DISTRIBUTION} bundle is published at {api_url} (HTTP 404); use --from with a bundle file or URL, or a mirror's JSON API")
    if response.status_code != 200:
        raise InputError(f"{api_url}: HTTP {response.status_code}; expected PyPI's JSON API for {DISTRIBUTION} (or --from a bundle file or URL)")
    try:
        doc = response.json()
        releases = doc["releases"]
        if not isinstance(releases, dict):
            raise TypeError
    except (ValueError, KeyError, TypeError):
        raise InputError(f"{api_url}: not PyPI's JSON API (no 'releases' table)") from None
    found = []
    for files in releases.values():
        for item in files if isinstance(files, list) else []:
            remote = _remote(item)
            if remote is not None:
                found.append(remote)
    if not found:
        raise InputError(f"{api_url}: lists no {DISTRIBUTION} bundle")
    return sorted(found, key=lambda r: r.version, reverse=True)


def _remote(item: object) -> Optional[Remote]:
    if not isinstance(item, dict) or item.get("yanked") or not isinstance(item.get("url"), str):
        return None
    try:
        name, version, _, tags = parse_wheel_filename(str(item.get("filename", "")))
    except InvalidWheelFilename:
        return None
    if name != DISTRIBUTION or not any(t.interpreter == "py3" and t.platform == "any" for t in tags):
        return None
    digests = item.get("digests")
    sha256 = digests.get("sha256") if isinstance(digests, dict) and isinstance(digests.get("sha256"), str) else None
    size = item.get("size") if isinstance(item.get("size"), int) else None
    return Remote(version, item["url"], sha256, size)


def download(url: str, dest: Path, sha256: Optional[str] = None) -> Path:
    """`url` saved as `dest`, its sha256 checked when one is given (PyPI's digest: the trust
    chain is PyPI's hash over TLS). A short or oversized body is refused."""
    import requests

    digest = hashlib.sha256()
    received = 0
    try:
        with _session().get(url, stream=True, timeout=TIMEOUT) as response:
            if response.status_code != 200:
                raise InputError(f"{url}: HTTP {response.status_code}; no bundle there")
            # A compressed transfer's length is not the file's; only a plain one is compared.
            expected = None if response.headers.get("Content-Encoding") else response.headers.get("Content-Length")
            with open(dest, "wb") as fh:
                for chunk in response.iter_content(64 * 1024):
                    received += len(chunk)
                    if received > MAX_TOTAL_BYTES:
                        raise InputError(f"{url}: more than {MAX_TOTAL_BYTES} bytes; not a cudafit data bundle")
                    digest.update(chunk)
                    fh.write(chunk)
    except requests.exceptions.ChunkedEncodingError:
        raise InputError(f"{url}: the download was cut short (truncated); try again") from None
    except requests.RequestException as exc:
        raise _failure(url, exc) from None
    except OSError as exc:
        raise InputError(f"cannot save the bundle to {dest}: {exc.strerror or exc}") from None
    if expected is not None and expected.isdigit() and int(expected) != received:
        raise InputError(f"{url}: the download stopped after {received} of {expected} bytes (truncated); try again")
    if sha256 is not None and digest.hexdigest() != sha256.lower():
        raise InputError(f"{url}: sha256 {digest.hexdigest()} is not the expected {sha256.lower()}; the bundle was altered or damaged in transit")
    return dest
