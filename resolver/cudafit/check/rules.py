"""The registry of `cudafit check`'s rules: each rule's stable code (CF000-CF021), name, severity and
summary; `finding`, which gives a finding its rule's severity; and `Target`, the machines the
pinned set must run on. The rule bodies live in modules of their own (index_rules, platform_rules,
build_rules, conda_rules, joint_rules) and `evaluate.check_document` runs them: this module sits
below all of them, so that each can name its codes without an import cycle."""

from __future__ import annotations

from typing import NamedTuple, Optional

from cudafit.check.model import Finding, Span
from cudafit.records import Machine


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
    Rule("CF010", "target-does-not-run", "error", "what the file asks for does not run on a target machine (driver floor, no kernel image, platform)"),
    Rule("CF011", "missing-include", "error", "an -r/-c include that cannot be read"),
    Rule("CF012", "include-cycle", "error", "an -r/-c include that includes itself again"),
    Rule("CF013", "not-verifiable", "note", "a pin cudafit cannot check: a release its data lacks, or an unknown fact (fails only with --strict)"),
    Rule("CF014", "build-torch-differs", "error", "an extension built against another torch line than the project runs with: it will not load"),
    Rule("CF015", "no-wheel-here", "error", "a pin none of whose releases has a wheel (or an sdist) for a platform or Python the file installs on"),
    Rule("CF016", "uv-finds-no-solution", "error", "with --resolve: uv finds no solution for an environment the file describes (its reason quoted)"),
    Rule("CF017", "requirements-contradict", "error", "two requirements of one package (a constraint included) that no version meets together"),
    Rule("CF018", "past-last-release", "error", "a spec that admits the releases that dropped a target's GPU (torch>=2.4 on a V100: 2.15 has no sm_70)"),
    Rule("CF019", "image-toolkit-differs", "error", "a Dockerfile builds extensions with its devel image's nvcc, of another CUDA major than its torch"),
    Rule(
        "CF020",
        "image-refused-on-target",
        "error",
        "a Dockerfile's image that does not start on a target's driver (NVIDIA_REQUIRE_CUDA, NGC's floor)",
    ),
    Rule(
        "CF021",
        "numpy-2-beside-numpy-1-build",
        "warning",
        "a release built against NumPy 1.x that pip puts beside NumPy 2 (the file keeps numpy below 2 nowhere)",
    ),
)
BY_CODE = {rule.code: rule for rule in RULES}


class Target(NamedTuple):
    """A machine the pinned set must run on: from the command line or `[tool.cudafit] targets`."""

    name: str
    machine: Machine


def finding(code: str, span: Span, message: str, fix: str = "", edit: Optional[tuple[Span, str]] = None) -> Finding:
    return Finding(span.path, span.line, span.col, code, message, BY_CODE[code].severity, fix, edit)
