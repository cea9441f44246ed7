"""CF017: requirements of one package that no version meets together. An error only where that is
certain: intervals of public versions that do not meet, or exact pins none of which the other
requirements admit."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packaging.specifiers import SpecifierSet
from test_check import check

from cudafit.check.contradictions import disjoint


@pytest.mark.parametrize(
    "a, b, expected",
    [
        (">=77.0.3,<81.0.0", ">=83.0.0", True),  # vllm's common.txt beside its rocm.txt
        ("==1.24.4", ">=1.26", True),
        ("==2.5.1", "==2.5.1+cu124", False),  # the local build meets both
        ("==2.5.1+cu121", "==2.5.1+cu124", True),
        ("==2.5.*", ">=2.6", True),
        ("==2.5.*", ">=2.5.3", False),
        ("~=2.5.1", ">=2.6", True),
        ("~=2.5", "<3", False),
        (">1.0", "<1.0", True),
        (">1.0", "<=1.0", True),
        (">=1.0", "<=1.0", False),
        ("==1.0", "!=1.0", True),
        ("!=1.0", ">=0.9,<=1.1", False),  # != only ever takes points away
        ("===1.0", "==2.0", False),  # arbitrary equality: not reasoned about
        ("<2.0", ">=2.0rc1", False),  # uncertain about pre-releases: not an error
    (">=1.26", "!=1.25.*", False),  # an exclusion, not a range (found by a second read)
    ("!=4.21.*,!=3.20.*", ">=4.21", False),
    ("~=1!2.5", ">=1!2.0", False),  # epochs: left to the resolver
        (">=2", "latest", False),  # unreadable: CF000's business
    ],
)
def test_disjoint(a, b, expected):
    assert disjoint(a, b) is expected
    assert disjoint(b, a) is expected


_VERSIONS = ["0.9", "1.0rc1", "1.0", "1.0.post1", "1.0+cu1", "1.0.1", "1.1", "1.1.5", "1.2", "2.0", "2.0.1"]
_SPEC = st.builds(
    lambda op, v: op + v, st.sampled_from(["==", "!=", ">=", ">", "<=", "<", "~="]), st.sampled_from(["1.0", "1.1", "1.0.1", "2.0", "1.0rc1", "1.0.post1"])
)
_SETS = st.lists(_SPEC, min_size=1, max_size=3).map(",".join)


@given(_SETS, _SETS)
def test_disjoint_is_never_said_of_sets_a_version_meets(a, b):
    if disjoint(a, b):
        both = (SpecifierSet(a), SpecifierSet(b))
        assert not [v for v in _VERSIONS if all(s.contains(v, prereleases=True) for s in both)]


def _found(tmp_path, files):
    result = check(tmp_path, files, "--output-format", "json")
    return [f for f in json.loads(result.stdout) if f["code"] == "CF017"], result.exit_code


def test_an_include_and_a_marker_make_it_hold_on_some_pythons_only(tmp_path):
    found, code = _found(
        tmp_path,
        {
            "requirements/common.txt": "setuptools>=77.0.3,<81.0.0; python_version > '3.11'\n",
            "requirements/rocm.txt": "-r common.txt\nsetuptools>=83.0.0\n",
        },
    )
    assert code == 1 and len(found) == 1
    assert found[0]["path"].endswith("rocm.txt") and found[0]["line"] == 2
    assert found[0]["environments"] == "Python 3.12, 3.13" and "common.txt:1" in found[0]["message"]


def test_a_constraint_that_excludes_the_pin(tmp_path):
    found, _ = _found(tmp_path, {"c.txt": "numpy<2\n", "requirements.txt": "-c c.txt\nnumpy==2.1.0\n"})
    assert len(found) == 1 and "constraint numpy<2" in found[0]["message"]


def test_an_extra_clashes_with_the_base_set_only_where_it_is_chosen(tmp_path):
    text = '[project]\nname = "a"\nversion = "1"\ndependencies = ["numpy<2"]\n[project.optional-dependencies]\nnew = ["numpy>=2"]\n'
    found, _ = _found(tmp_path, {"pyproject.toml": text})
    assert len(found) == 1 and found[0]["environments"] == "extra new"


@pytest.mark.parametrize(
    "files",
    [
        {"requirements.txt": "torch==2.5.1\ntorch==2.5.1+cu124\n--index-url https://download.pytorch.org/whl/cu124\n"},
        {"requirements.txt": "numpy<2; sys_platform == 'win32'\nnumpy>=2; sys_platform != 'win32'\n"},
        {"pyproject.toml": '[project]\nname = "a"\nversion = "1"\ndependencies = ["numpy"]\n[build-system]\nrequires = ["numpy<2"]\n'},
        {"pyproject.toml": '[project]\nname = "a"\nversion = "1"\ndependencies = ["numpy>=2"]\n[build-system]\nrequires = ["numpy<2"]\n'},
    ],
)
def test_requirements_that_never_install_together_do_not_clash(tmp_path, files):
    assert _found(tmp_path, files)[0] == []


# jax's own METADATA (PyPI wheel, read 2026-12-02): 0.4.26 asks numpy>=1.22, >=1.23.2 on Python 3.11,
# >=1.26.0 on 3.12 and later (matrices/jax, `requires`).
@pytest.mark.parametrize("text, where", [
    ("jax==0.4.26\nnumpy==1.24.3\n", "Python 3.12, 3.13"),  # alphafold's requirements.txt
    ("jax==0.4.26\nnumpy<1.22\n", ""),  # every Python
])
def test_a_pinned_release_brings_its_own_requirements(tmp_path, text, where):
    found, code = _found(tmp_path, {"requirements.txt": text})
    assert code == 1 and len(found) == 1 and found[0]["line"] == 1
    assert "jax 0.4.26's own requirement numpy" in found[0]["message"] and (found[0]["environments"] or "") == where


@pytest.mark.parametrize("text", [
    "jax==0.4.26\nnumpy==1.26.4\n",
    "jax>=0.4.26\nnumpy==1.24.3\n",  # a range may pick a release that accepts it: not certain
    "jax==0.4.26; python_version < '3.12'\nnumpy==1.24.3\n",  # never on a Python that asks more
])
def test_a_release_requirement_the_file_meets_is_quiet(tmp_path, text):
    assert _found(tmp_path, {"requirements.txt": text})[0] == []


@pytest.mark.parametrize("files", [
    # uv's override-dependencies replace the requirements of their name
    {"pyproject.toml": '[project]\nname = "a"\nversion = "1"\ndependencies = ["numpy<2"]\n[tool.uv]\noverride-dependencies = ["numpy>=2"]\n'},
    # two constraints on a package nothing requires: pip installs the rest
    {"requirements.txt": "requests\n-c c1.txt\n-c c2.txt\n", "c1.txt": "foo<1\n", "c2.txt": "foo>2\n"},
    # a constrained release is not installed: its own requirements ask nothing
    {"requirements.txt": "numpy<1.22\n-c cj.txt\n", "cj.txt": "jax==0.4.30\n"},
])
def test_what_installs_nothing_contradicts_nothing(tmp_path, files):
    assert _found(tmp_path, files)[0] == []
