"""The rule on environment.yml's conda specs: a pytorch-channel spec for a release or a CUDA the
channel never had (CF007), read with conda's own version matching."""

from __future__ import annotations

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from cudafit.check.model import CondaSpec, Document
from cudafit.check.rules import finding
from cudafit.records import Matrices, TorchRelease


def conda_channel_release(doc: Document, matrices: Matrices, releases: dict[str, TorchRelease]) -> list:
    """pytorch from the pytorch conda channel: a release, or a pytorch-cuda/cudatoolkit, it never had (CF007)."""
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
