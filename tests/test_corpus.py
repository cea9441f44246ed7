"""`cudafit check` on real dependency files of public projects (tests/corpus/, each file's repo, path
and commit in MANIFEST.toml), held to uv's verdicts on them (tests/corpus/uv_verdicts.json, recorded
against PyPI by scripts/uv_oracle.py): an error must be confirmed by uv (it cannot install there) or
rest on a fact uv cannot see (which CUDA major a build's code links, a target's driver); and an
environment uv cannot install should get an error there."""

from __future__ import annotations

import json
import re
import sys
from functools import lru_cache
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from cudafit.check.model import Finding
from cudafit.check.runner import Report, Settings, check_paths
from cudafit.loader import load

CORPUS = Path(__file__).parent / "corpus"
MANIFEST = tomllib.loads((CORPUS / "MANIFEST.toml").read_text())["file"]
_VERDICTS_FILE = CORPUS / "uv_verdicts.json"
VERDICTS = json.loads(_VERDICTS_FILE.read_text())["files"] if _VERDICTS_FILE.is_file() else {}
needs_verdicts = pytest.mark.skipif(not VERDICTS, reason="uv's verdicts are not recorded yet (python scripts/uv_oracle.py)")
# What uv cannot see and cudafit's data can: the CUDA major or cuDNN a build's code links (a clash
# between frameworks or with a library made against torch), a conda channel's releases, a target machine.
_UV_BLIND = re.compile(r"CUDA \d+ and CUDA \d+|cuDNN|a build made against torch")
# uv's verdicts that say the environment does not install.
_FAILS = ("no-solution", "error")
# What the corpus must show (issue 22), and what it shows now (README's table).
PRECISION_FLOOR = 0.99
RECALL_FLOOR = 0.95  # issue 22; measured 95.1 % (README, Checking dependency files)


def test_the_manifest_names_real_files_of_many_projects():
    assert len(MANIFEST) >= 60 and len({f["repo"] for f in MANIFEST}) >= 25
    for entry in MANIFEST:
        assert re.fullmatch(r"[0-9a-f]{40}", entry["commit"]), entry
        assert (CORPUS / entry["local"]).is_file(), entry["local"]
        for beside in entry.get("beside", ()):  # read with the file (a pyproject's setup.py), of the same commit
            assert (CORPUS / entry["local"]).with_name(beside).is_file(), (entry["local"], beside)
        assert entry["kind"] in ("requirements", "pyproject", "uv-lock", "pylock", "conda-env", "dockerfile")


@lru_cache(maxsize=1)
def reports() -> dict[str, Report]:
    """Each corpus file checked alone, as a hook checks the file it is given."""
    matrices = load()
    return {entry["local"]: check_paths([CORPUS / entry["local"]], matrices, Settings(), ()) for entry in MANIFEST}


def findings() -> dict[str, tuple[Finding, ...]]:
    return {local: report.findings for local, report in reports().items()}


def _matches(finding: Finding, key: str) -> bool:
    keys = getattr(finding, "environments", ())  # () for every environment (and before issue 22)
    if not keys:
        return True
    platform, python, selection = key.split("/", 2)
    for mine in keys:
        p, py, sel = mine.split("/", 2)
        if p == platform and sel == selection and py in ("*", python):
            return True
    return False


def _verdicts(local: str) -> dict[str, str]:
    """Each environment's verdict; for a uv.lock, installing the lock itself where the oracle did
    (`lock`: what the check of a lock claims), else the export's resolution."""
    envs = VERDICTS.get(local, {}).get("environments", {})
    return {key: (v.get("lock") or v).get("verdict", "") for key, v in envs.items()}


def _elsewhere(local: str, key: str) -> bool:
    """A file that names no Python is for the one its user runs: where the Python the oracle asked
    finds no solution and another (3.9 to 3.13) installs it, the platform is not one it fails on."""
    told = VERDICTS.get(local, {}).get("environments", {}).get(key, {})
    return "ok" in told.get("other_pythons", {}).values()


def _claims_every_python(finding: Finding, key: str) -> bool:
    """Whether an error in this environment holds whatever the Python (check names none for it)."""
    platform, _python, selection = key.split("/", 2)
    keys = getattr(finding, "environments", ())
    return not keys or any(k.split("/", 2)[0] == platform and k.split("/", 2)[1] == "*" for k in keys)


def classify() -> dict[str, list[tuple[str, Finding, str]]]:
    """Every error of the corpus as confirmed (by uv, or by a fact uv cannot see), false (uv
    installs every environment it names) or undetermined (uv could not tell: an index it cannot
    reach from here)."""
    out: dict[str, list[tuple[str, Finding, str]]] = {"confirmed": [], "false": [], "undetermined": []}
    for local, found in findings().items():
        verdicts = _verdicts(local)
        for f in found:
            if f.severity != "error":
                continue
            if Path(f.path).resolve() != (CORPUS / local).resolve() and f.code != "CF012":
                continue  # an included file's finding: judged with that file (a loop is found where it closes)
            # An error claims every environment it names (all of the file's where it names none):
            # uv must fail in each of them that it can tell.
            mine = [("ok" if _elsewhere(local, key) and _claims_every_python(f, key) else v) for key, v in verdicts.items() if _matches(f, key)]
            told = [v for v in mine if v in _FAILS or v == "ok"]
            if f.code in ("CF007", "CF010") or (f.code == "CF005" and _UV_BLIND.search(f.message)):
                out["confirmed"].append((local, f, "data"))
            elif f.code == "CF019":
                # a compile in an image: the nvcc its tag names against torch's CUDA (the data), which
                # uv never sees (it installs, it does not build); torch's extension builder refuses it
                out["confirmed"].append((local, f, "data and torch's cpp_extension"))
            elif f.code == "CF014":
                # an extension built against one torch release line and run with another: it installs,
                # and fails when imported (torch's C++ ABI), which no resolver sees
                out["confirmed"].append((local, f, "torch's C++ ABI"))
            elif f.code == "CF012":
                # an include loop is pip's refusal (pip 26.3: "recursively references itself"); uv
                # reads each file once, so its verdict does not speak to it
                out["confirmed"].append((local, f, "pip"))
            elif told and all(v in _FAILS for v in told):
                out["confirmed"].append((local, f, "uv"))
            elif told:
                out["false"].append((local, f, "uv installs it in " + ", ".join(k for k, v in verdicts.items() if _matches(f, k) and v == "ok")))
            else:
                out["undetermined"].append((local, f, ",".join(sorted(set(mine))) or "no verdict"))
    return out


def uninstallable() -> list[tuple[str, str, bool]]:
    """(file, environment, whether check gives an error there) for each environment uv cannot
    install: it finds no solution, or a uv.lock's own packages do not install there."""
    out = []
    for local, found in findings().items():
        for key, verdict in _verdicts(local).items():
            lock_fails = verdict == "error" and "lock" in VERDICTS[local]["environments"][key]
            # a lock whose `environments` leave this one out does not describe it: nothing to check there
            if lock_fails and "not supported by the lockfile" in _why(local, key):
                continue
            # a requirements file uv pip compile or pip-compile wrote for its own platform does not describe the others
            if key.split("/")[0] not in _compiled_for(local):
                continue
            # a file that names no Python and installs on another one than the oracle asked
            if _elsewhere(local, key):
                continue
            if verdict == "no-solution" or lock_fails:
                out.append((local, key, any(f.severity == "error" and _matches(f, key) for f in found)))
    return out


@lru_cache(maxsize=None)
def _compiled_for(local: str) -> tuple[str, ...]:
    """The platforms a file describes: for a single-platform resolver output, those where its pins
    install (check judges it there alone); every platform for any other file."""
    from cudafit.check.environments import PLATFORMS
    from cudafit.check.requirements import read
    from cudafit.check.wheels import compiled_platforms

    if not local.endswith(".txt"):
        return PLATFORMS
    doc = read(CORPUS / local)
    return (compiled_platforms(doc, load()) or PLATFORMS) if doc.compiled_here else PLATFORMS


@lru_cache(maxsize=1)
def _in_scope() -> re.Pattern[str]:
    """uv's reasons that name a package cudafit's data covers (a framework, a library built against
    one, a CUDA wheel, a distribution whose PyPI file lists it records): what check could know offline."""
    from cudafit.frameworks import BY_MEMBER

    names = sorted({*BY_MEMBER, *load().wheel_files}, key=len, reverse=True)
    return re.compile(r"\b(" + "|".join(map(re.escape, names)) + r"|nvidia-[a-z0-9-]+|cuda-[a-z-]+)(\{[^}]*\})?[=<>!~ ,]")


def in_scope(local: str, key: str) -> bool:
    return bool(_in_scope().search(_why(local, key)))


def _why(local: str, key: str) -> str:
    """uv's reason for the verdict _verdicts() reads."""
    told = VERDICTS[local]["environments"][key]
    return str((told.get("lock") or told).get("why", ""))


def figures() -> tuple[float, float, dict[str, int]]:
    kinds = classify()
    confirmed, false = len(kinds["confirmed"]), len(kinds["false"])
    missed = uninstallable()
    scoped = [hit for local, key, hit in missed if in_scope(local, key)]
    precision = confirmed / (confirmed + false) if confirmed + false else 1.0
    recall = sum(hit for *_x, hit in missed) / len(missed) if missed else 1.0
    counts = {k: len(v) for k, v in kinds.items()} | {"uninstallable": len(missed), "in_scope": len(scoped), "in_scope_hit": sum(scoped)}
    return precision, recall, counts


@needs_verdicts
def test_every_error_on_the_corpus_is_confirmed():
    precision, _recall, counts = figures()
    false = [f"{local}:{f.line}: {f.code} {f.message[:160]}" for local, f, _why in classify()["false"]]
    assert precision >= PRECISION_FLOOR, (counts, false)


@needs_verdicts
def test_environments_uv_cannot_install_get_an_error():
    _precision, recall, counts = figures()
    assert recall >= RECALL_FLOOR, counts


EXAMPLES = tomllib.loads((CORPUS / "EXAMPLES.toml").read_text())


@pytest.fixture(scope="module")
def example_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")  # the data's cache, built once for every example


@pytest.mark.parametrize("example", EXAMPLES["example"], ids=lambda e: f"{e['code']}-{'fires' if e['fires'] else 'not'}-{e['local']}")
def test_each_rule_on_a_real_file_that_shows_it_and_one_that_does_not(example_cache, example):
    from click.testing import CliRunner

    from cudafit.cli import main

    assert example["local"] in {e["local"] for e in MANIFEST}
    env = {"CUDAFIT_CACHE_DIR": str(example_cache)}
    result = CliRunner().invoke(main, ["check", str(CORPUS / example["local"]), *example.get("args", []), "--output-format", "json"], env=env)
    found = {f["code"] for f in json.loads(result.stdout)}
    assert (example["code"] in found) == example["fires"], (example, found)


def test_every_rule_has_real_examples_or_says_what_was_searched():
    from cudafit.check.rules import RULES

    fires = {e["code"] for e in EXAMPLES["example"] if e["fires"]}
    quiet = {e["code"] for e in EXAMPLES["example"] if not e["fires"]}
    wanting = {line.split(":")[0] for line in EXAMPLES["wanting"]}
    for rule in RULES:
        if rule.code == "CF016":
            continue  # asks uv over the network: scripts/corpus_resolve.py shows it (README)
        assert rule.code in quiet, rule.code
        assert rule.code in fires or rule.code in wanting, rule.code


@pytest.mark.parametrize("entry", [e for e in MANIFEST if e["kind"] in ("requirements", "pyproject", "uv-lock", "pylock", "conda-env", "dockerfile")], ids=lambda e: e["local"])
def test_every_corpus_file_is_read_without_a_read_error(entry):
    report = reports()[entry["local"]]
    assert report.files == 1 or report.errors, entry["local"]
    assert not any("Traceback" in e for e in report.errors)


def test_the_hook_runs_on_every_file_a_folder_walk_checks():
    """pre-commit passes the files its `files` pattern matches: the same ones `check .` finds."""
    from ruamel.yaml import YAML

    from cudafit.check.files import discover

    hook = YAML(typ="safe").load((Path(__file__).parents[1] / ".pre-commit-hooks.yaml").read_text())[0]
    pattern = re.compile(hook["files"])
    walked = [path.relative_to(CORPUS).as_posix() for path, _reader in discover([CORPUS])]
    assert len(walked) > 150 and [p for p in walked if not pattern.search(p)] == []


if __name__ == "__main__":  # python tests/test_corpus.py: the figures the README quotes
    p, r, c = figures()
    print(f"errors: {c['confirmed']} confirmed, {c['false']} false, {c['undetermined']} undetermined; precision {p:.1%}")
    print(f"environments uv cannot install: {c['uninstallable']}; with an error there: recall {r:.1%}")
    print(f"  of them, uv's reason names a package cudafit's data covers: {c['in_scope']}, {c['in_scope_hit']} with an error there")
    for local, f, why in classify()["false"]:
        print(f"  false: {local}:{f.line}: {f.code} {f.message[:200]} ({why[:200]})")
    for local, key, hit in uninstallable():
        if not hit and in_scope(local, key):
            print(f"  missed: {local} {key}: {_why(local, key)[:200]}")
