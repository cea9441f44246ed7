"""Evidence grades: the loader demands one grade per known fact (and none for an unknown one), and
the solver trusts measured and declared facts, uses reported ones with a note, and ranks builds
whose architecture list is unknown last. A small synthetic release line keeps these rules
independent of how complete the real data is."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from cudafit.cli import main
from cudafit.errors import DataError
from cudafit.loader import check, data_dir, load
from cudafit.machine import MachineOptions, build_machine
from cudafit.records import Policy
from cudafit.resolution import resolve, why_not


def _never_read(*args, **kwargs):
    raise AssertionError("a machine described whole read this machine's driver")

LINE = '''schema = 2
data_date = "2026-11-30"
line = "9.9"

[sources]
"wheel" = "a PyPI wheel read through range requests"
"build" = "the release branch's build script"
"report" = "an issue with get_arch_list() output"
"matrix" = "the release branch's binary build matrix"

[[release]]
version = "9.9.0"
date = "2026-01-01"
python = ["3.12"]
platforms = ["linux-x86_64", "linux-aarch64"]
torchvision = "9.9.0"
torchaudio = "9.9.0"
source = ["wheel"]

[release.pypi_variant]
linux-x86_64 = "cu126"

[[release]]
version = "9.9.1"
date = "2026-02-01"
python = ["3.12"]
platforms = ["linux-x86_64", "linux-aarch64"]
torchvision = "9.9.1"
torchaudio = "9.9.1"
source = ["wheel"]

[[build]]
tag = "cu126"
releases = ["9.9.0"]
platforms = ["linux-x86_64"]
cuda = "12.6"
cudnn = "9.10.2"
sass = ["7.0", "7.5", "8.0", "8.6", "9.0"]
ptx = []
pins = { "nvidia-cudnn-cu12" = "==9.10.2.21" }
source = ["wheel"]

[build.evidence]
exists = { grade = "measured", source = ["wheel"] }
cudnn = { grade = "measured", source = ["wheel"] }
sass = { grade = "measured", source = ["wheel"] }
ptx = { grade = "measured", source = ["wheel"] }
pins = { grade = "measured", source = ["wheel"] }

[[build]]
tag = "cu126"
releases = ["9.9.0"]
platforms = ["linux-aarch64"]
cuda = "12.6"
cudnn = "unknown"
sass = ["8.0", "9.0"]
ptx = []
pins = "unknown"
source = ["build", "matrix"]

[build.evidence]
exists = { grade = "declared", source = ["matrix"] }
sass = { grade = "declared", source = ["build"] }
ptx = { grade = "declared", source = ["build"] }

[[build]]
tag = "cu126"
releases = ["9.9.1"]
platforms = ["linux-x86_64"]
cuda = "12.6"
cudnn = "unknown"
sass = ["7.5", "8.0", "8.6", "9.0"]
ptx = []
pins = "unknown"
source = ["build", "matrix"]

[build.evidence]
exists = { grade = "declared", source = ["matrix"] }
sass = { grade = "declared", source = ["build"] }
ptx = { grade = "declared", source = ["build"] }

[[build]]
tag = "cu128"
releases = ["9.9.1"]
platforms = ["linux-x86_64"]
cuda = "12.8"
cudnn = "unknown"
sass = "unknown"
ptx = "unknown"
pins = "unknown"
source = ["matrix"]

[build.evidence]
exists = { grade = "declared", source = ["matrix"] }

[[build]]
tag = "cu124"
releases = ["9.9.1"]
platforms = ["linux-x86_64"]
cuda = "12.4"
cudnn = "unknown"
sass = ["6.1"]
ptx = []
pins = "unknown"
source = ["report", "matrix"]

[build.evidence]
exists = { grade = "declared", source = ["matrix"] }
sass = { grade = "reported", source = ["report"] }
ptx = { grade = "reported", source = ["report"] }

[[build]]
tag = "cpu"
platforms = ["linux-x86_64", "linux-aarch64"]
source = ["matrix"]

[build.evidence]
exists = { grade = "declared", source = ["matrix"] }
'''


@pytest.fixture
def line_dir(tmp_path) -> Path:
    """The shared NVIDIA and GPU data with one synthetic torch release line."""
    root = tmp_path / "m"
    (root / "pytorch").mkdir(parents=True)
    for name in ("nvidia.toml", "gpus.toml", "pytorch/index.toml"):
        shutil.copy(data_dir() / name, root / name)
    (root / "pytorch" / "torch-9.9.toml").write_text(LINE)
    return root


def solve(root: Path, gpu: str, *, arch: str = "x86_64", driver: str = "560.35.03", specs=("torch",)):
    matrices = load(root, use_cache=False)
    machine = build_machine(MachineOptions(driver=driver, gpus=(gpu,), os="linux", arch=arch, python="3.12"),
                            matrices, reader=_never_read)
    return resolve(list(specs), machine, matrices, Policy()), matrices


def test_unknown_list_ranks_after_trusted_ones(line_dir):
    res, _ = solve(line_dir, "NVIDIA GeForce RTX 3090")
    assert [p.requirement for p in res.packages] == ["torch==9.9.1+cu126"]
    assert any("passed over torch 9.9.1+cu128" in n and "unknown" in n for n in res.notes), res.notes
    assert any("SASS, PTX declared (build)" in n for n in res.notes), res.notes


def test_declared_list_decides_and_says_so(line_dir):
    # 9.9.1+cu126 is declared without sm_70: a V100 falls back to the measured 9.9.0 build rather
    # than to 9.9.1's unknown cu128 one, and the reason names the grade of the list that decided.
    res, matrices = solve(line_dir, "Tesla V100-SXM2-16GB")
    assert [p.requirement for p in res.packages] == ["torch==9.9.0+cu126"]
    assert any("passed over torch 9.9.1+cu128" in n for n in res.notes), res.notes
    why = why_not("torch==9.9.1", res, matrices)
    assert any("9.9.1+cu126: no kernel image" in line and "[SASS list declared, PTX list declared]" in line
               and "declared (build)" in line for line in why), why


def test_reported_list_is_used_with_a_note(line_dir):
    res, _ = solve(line_dir, "NVIDIA GeForce GTX 1080")
    assert [p.requirement for p in res.packages] == ["torch==9.9.1+cu124"]
    assert any("torch 9.9.1+cu124: its GPU architectures (SASS), its PTX only reported (report)" in w for w in res.warnings), res.warnings


def test_platform_lists_differ(line_dir):
    # The aarch64 build of 9.9.0 carries 8.0 and 9.0 only: a T4 (sm_75) on an Arm server has nothing to run.
    res, _ = solve(line_dir, "Tesla T4", arch="aarch64")
    assert not res.ok
    assert any("no kernel image for Tesla T4 (sm_75): SASS sm_80, sm_90; PTX none [SASS list declared" in c for c in res.conflicts), res.conflicts
    res, _ = solve(line_dir, "Tesla T4")
    assert res.ok and res.packages[0].requirement == "torch==9.9.1+cu126"


def test_json_carries_the_evidence(line_dir, monkeypatch):
    monkeypatch.setenv("CUDAFIT_DATA_DIR", str(line_dir))
    result = CliRunner().invoke(main, ["resolve", "torch", "--os", "linux", "--arch", "x86_64", "--python", "3.12",
                                       "--driver", "560.35.03", "--gpu", "NVIDIA GeForce RTX 3090", "--json"])
    assert result.exit_code == 0, result.output
    torch = json.loads(result.stdout)["packages"][0]
    assert torch["evidence"]["sass"] == {"grade": "declared", "source": ["build"]}
    assert torch["evidence"]["cudnn"] == {"grade": "unknown"}  # said the one way coverage says it
    assert set(torch["evidence"]) == {"exists", "cuda", "cudnn", "sass", "ptx", "pins"}


def test_coverage_lists_every_build_and_its_grades(line_dir, monkeypatch):
    monkeypatch.setenv("CUDAFIT_DATA_DIR", str(line_dir))
    result = CliRunner().invoke(main, ["data", "coverage", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    rows = {(r["release"], r["variant"], r["platform"]): r["facts"] for r in data["rows"] if r["framework"] == "torch"}
    assert rows[("9.9.0", "cu126", "linux-x86_64")]["sass"] == {"grade": "measured", "source": ["wheel"]}
    assert rows[("9.9.1", "cu128", "linux-x86_64")]["sass"] == {"grade": "unknown"}
    assert rows[("9.9.0", "cpu", "linux-aarch64")]["cuda"] == {"grade": "n/a"}
    assert data["summary"]["torch"]["reported"] == 2
    holes = CliRunner().invoke(main, ["data", "coverage", "--holes", "--framework", "torch"])
    assert holes.exit_code == 0
    assert "9.9.1+cu128 linux-x86_64" in holes.stdout and "9.9.0+cu126 linux-x86_64" not in holes.stdout


# (text to replace, replacement, expected message)
BROKEN = [
    ('cudnn = { grade = "measured", source = ["wheel"] }\n', "",
     "[[build]] #1 (cu126): field 'evidence.cudnn': cudnn is known but has no grade"),
    ('exists = { grade = "declared", source = ["matrix"] }\n\n[[build]]\ntag = "cu124"',
     'exists = { grade = "declared", source = ["matrix"] }\nsass = { grade = "declared", source = ["matrix"] }\n\n[[build]]\ntag = "cu124"',
     "[[build]] #4 (cu128): field 'evidence.sass': sass is \"unknown\"; an unknown fact has no evidence"),
    ('sass = { grade = "reported", source = ["report"] }', 'sass = { grade = "guessed", source = ["report"] }',
     "field 'evidence.sass': grade must be one of measured, declared, reported"),
    ('sass = { grade = "reported", source = ["report"] }', 'sass = { grade = "reported", source = ["a-blog"] }',
     "field 'evidence.sass': source names 'a-blog', which is not in this file's [sources]"),
    ('pins = "unknown"\nsource = ["matrix"]', 'source = ["matrix"]', "[[build]] #4 (cu128): field 'pins': missing"),
    ('[build.evidence]\nexists = { grade = "declared", source = ["matrix"] }\n\n[[build]]\ntag = "cu124"',
     '[[build]]\ntag = "cu124"', "[[build]] #4 (cu128): field 'evidence': missing"),
    ('exists = { grade = "declared", source = ["matrix"] }\n', 'exists = { grade = "declared", source = ["matrix"] }\nwheel_size = { grade = "measured", source = ["wheel"] }\n',
     "names 'wheel_size', which is not a fact of this build"),
    ('torchaudio = "9.9.1"\n', 'torchaudio = "9.9.1"\nnot_shipped = ["cu128"]\n',
     "[[release]] #2 (9.9.1): field 'not_shipped': names 'cu128', which is a [[build]] of torch 9.9.1"),
    ('torchaudio = "9.9.1"\n', 'torchaudio = "9.9.1"\nnot_shipped = ["rocm7.0"]\n',
     "field 'not_shipped': 'rocm7.0' is not a CUDA build tag like cu134"),
    ('torchaudio = "9.9.1"\n', 'torchaudio = "9.9.1"\nunconfirmed = ["cu128"]\n',
     "[[release]] #2 (9.9.1): field 'unconfirmed': names 'cu128', which is a [[build]] of torch 9.9.1"),
    ('torchaudio = "9.9.1"\n', 'torchaudio = "9.9.1"\nnot_shipped = ["cu134"]\nunconfirmed = ["cu134"]\n',
     "field 'unconfirmed': a build is either not shipped or unconfirmed, not both"),
]


@pytest.mark.parametrize("old, new, message", BROKEN, ids=[b[2][:50] for b in BROKEN])
def test_evidence_rules(line_dir, old, new, message):
    path = line_dir / "pytorch" / "torch-9.9.toml"
    assert old in LINE, old
    path.write_text(LINE.replace(old, new, 1))
    with pytest.raises(DataError) as info:
        load(line_dir, use_cache=False)
    assert message in str(info.value)
    assert "pytorch/torch-9.9.toml" in str(info.value)


def test_check_reports_every_broken_file(line_dir):
    (line_dir / "pytorch" / "torch-9.8.toml").write_text(LINE.replace('line = "9.9"', 'line = "9.8"'))
    (line_dir / "pytorch" / "torch-9.9.toml").write_text(LINE.replace('pins = "unknown"\nsource = ["matrix"]', 'source = ["matrix"]'))
    matrices, problems = check(line_dir)
    assert len(problems) == 2
    assert problems[0].startswith("pytorch/torch-9.8.toml: [[release]] #1 (9.9.0): field 'version'")
    assert problems[1].startswith("pytorch/torch-9.9.toml:")
    result = CliRunner().invoke(main, ["data", "check", "--dir", str(line_dir)])
    assert result.exit_code == 2
    assert result.stderr.count("cudafit: error:") == 2


def test_check_with_a_broken_shared_file(line_dir):
    # A broken gpus.toml stops the release-line checks (they are checked against it); check says
    # so instead of calling the file missing, and still reports the other file's parse error.
    (line_dir / "gpus.toml").write_text("[[gpu]\n")
    (line_dir / "pytorch" / "torch-9.8.toml").write_text("line = \n")
    matrices, problems = check(line_dir)
    assert matrices is None
    assert any("gpus.toml: not valid TOML" in p for p in problems), problems
    assert any("torch-9.8.toml: not valid TOML" in p for p in problems), problems
    assert any("release-line files were not checked: they need gpus.toml" in p for p in problems), problems
    assert not any("missing data file" in p for p in problems), problems


def test_why_on_the_command_line_names_grades_and_sources(line_dir, monkeypatch):
    monkeypatch.setenv("CUDAFIT_DATA_DIR", str(line_dir))
    result = CliRunner().invoke(main, ["resolve", "torch", "--os", "linux", "--arch", "x86_64", "--python", "3.12",
                                       "--driver", "560.35.03", "--gpu", "Tesla V100-SXM2-16GB", "--why", "torch==9.9.1"])
    assert result.exit_code == 0, result.output
    assert "torch 9.9.1+cu126: no kernel image for Tesla V100-SXM2-16GB (sm_70)" in result.stdout
    assert "SASS, PTX declared (build)" in result.stdout
    assert "torch 9.9.1+cu128 would fit, but torch 9.9.0+cu126 ranks first" in result.stdout
    assert "torch 9.9.0+cu126: facts: build, SASS, PTX, cuDNN, pins measured (wheel)" in result.stdout


def test_reported_existence_is_in_why_not_a_warning(line_dir):
    path = line_dir / "pytorch" / "torch-9.9.toml"
    path.write_text(LINE.replace('[[build]]\ntag = "cpu"\nplatforms = ["linux-x86_64", "linux-aarch64"]\nsource = ["matrix"]\n\n'
                                 '[build.evidence]\nexists = { grade = "declared", source = ["matrix"] }',
                                 '[[build]]\ntag = "cpu"\nplatforms = ["linux-x86_64", "linux-aarch64"]\nsource = ["report"]\n\n'
                                 '[build.evidence]\nexists = { grade = "reported", source = ["report"] }'))
    matrices = load(line_dir, use_cache=False)
    machine = build_machine(MachineOptions(driver="none", os="linux", arch="x86_64", python="3.12"), matrices, reader=_never_read)
    res = resolve(["torch"], machine, matrices, Policy())
    assert [p.requirement for p in res.packages] == ["torch==9.9.1+cpu"]
    # The grade is said where the answer's facts are (--why, JSON); a CPU build's reported
    # existence changes no risk a warning could name (issue 24: warnings a user can act on).
    assert any("build reported (report)" in n for n in res.notes), res.notes
    assert not any("only reported" in w for w in res.warnings), res.warnings


@pytest.mark.parametrize("gpu, driver", [
    ("NVIDIA GeForce RTX 3090", "550.54.14"),
    ("NVIDIA A100-SXM4-80GB", "535.104.05"),
    ("NVIDIA H100 80GB HBM3", "580.65.06"),
])
def test_common_machines_get_an_answer_without_warnings(gpu, driver):
    """Issue 24: a warning only where a weaker grade changes the risk; `resolve torch` on the
    machines most users have says none (the grades stay in --why and JSON)."""
    result = CliRunner().invoke(main, ["resolve", "torch", "--os", "linux", "--arch", "x86_64", "--python", "3.12", "--driver", driver, "--gpu", gpu, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["warnings"] == []


def test_reported_pins_are_a_warning_where_frameworks_share_them():
    result = CliRunner().invoke(main, ["resolve", "torch", "tensorflow", "--os", "linux", "--arch", "x86_64", "--python", "3.12",
                                       "--driver", "535.104.05", "--gpu", "NVIDIA A100-SXM4-80GB", "--json"])
    assert result.exit_code == 0, result.output
    warnings = json.loads(result.stdout)["warnings"]
    assert any("nvidia-* pins only reported" in w and "the joint answer rests on them" in w for w in warnings), warnings
