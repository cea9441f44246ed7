"""Property tests: random and mutated files through every reader and every rule. A reader may
refuse a file (InputError, one line naming it), and nothing else may escape."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from cudafit.check import conda_env, lockfiles, pyproject, requirements  # noqa: E402
from cudafit.check.evaluate import check_document  # noqa: E402
from cudafit.errors import InputError  # noqa: E402

SEEDS = {
    "requirements.txt": "--index-url https://download.pytorch.org/whl/cu124\ntorch==2.5.1+cu124 \\\n  --hash=sha256:00\ntorchvision==0.20.1; python_version>'3.9'\n-r other.txt\n",
    "pyproject.toml": '[project]\nname = "x"\ndependencies = ["torch==2.5.1+cu124"]\n[tool.uv.sources]\ntorch = { index = "p" }\n[[tool.uv.index]]\nname = "p"\nurl = "https://download.pytorch.org/whl/cu124"\n',
    "uv.lock": 'version = 1\n\n[[package]]\nname = "torch"\nversion = "2.5.1+cu124"\nsource = { registry = "https://download.pytorch.org/whl/cu124" }\n',
    "pylock.toml": 'lock-version = "1.0"\n\n[[packages]]\nname = "torch"\nversion = "2.5.1"\nindex = "https://pypi.org/simple"\n',
    "environment.yml": "channels:\n  - pytorch\ndependencies:\n  - pytorch=2.5.1\n  - pip:\n    - torch==2.5.1+cu124\n",
}
READERS = {
    "requirements.txt": requirements.read,
    "pyproject.toml": pyproject.read,
    "uv.lock": lockfiles.read_uv_lock,
    "pylock.toml": lockfiles.read_pylock,
    "environment.yml": conda_env.read,
}


@st.composite
def mutated(draw, name: str) -> bytes:
    text = SEEDS[name]
    for _ in range(draw(st.integers(0, 6))):
        at = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["insert", "delete", "duplicate"]))
        if action == "insert":
            text = text[:at] + draw(st.text(alphabet=st.characters(codec="utf-8"), max_size=12)) + text[at:]
        elif action == "delete":
            text = text[:at] + text[at + draw(st.integers(0, 10)) :]
        else:
            text = text[:at] + text[at : at + 20] * 2 + text[at:]
    return text.encode("utf-8", "surrogatepass") if draw(st.booleans()) else text.encode("utf-8", "replace")


def _run(name: str, data: bytes, matrices) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(data)
        try:
            doc = READERS[name](path)
        except InputError as exc:
            assert str(exc).startswith(str(path)) and "\n" not in str(exc)
            return
        for found in check_document(doc, matrices, ()):
            assert found.line >= 1 and found.col >= 1 and found.code.startswith("CF")


@pytest.mark.parametrize("name", sorted(SEEDS))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_files_never_raise(name, data, matrices):
    _run(name, data.draw(mutated(name)), matrices)


@pytest.mark.parametrize("name", sorted(SEEDS))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(blob=st.binary(max_size=300))
def test_random_bytes_never_raise(name, blob, matrices):
    _run(name, blob, matrices)


# Real lockfiles of the corpus (the smallest of each kind), mutated: forks, conflict extras and
# PEP 751 markers that no longer parse must still give findings or a one-line refusal.
_CORPUS = Path(__file__).parent / "corpus"
REAL = {
    "uv.lock": min(_CORPUS.glob("*/uv.lock"), key=lambda p: p.stat().st_size),
    "pylock.toml": min(_CORPUS.glob("*/pylock*.toml"), key=lambda p: p.stat().st_size),
}


@pytest.mark.parametrize("name", sorted(REAL))
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_real_lockfiles_never_raise(name, data, matrices):
    text = REAL[name].read_text()
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(text)))
        text = text[:at] + data.draw(st.sampled_from(["'", '"', " or (", "extra == 'extra-3-", "]", "\n[[package]]\n", "==", "+cu1"])) + text[at:]
    _run(name, text.encode(), matrices)
