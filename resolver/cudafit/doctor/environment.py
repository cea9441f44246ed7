"""Read a Python environment from its files: the distributions it holds and, for each framework,
which build it is (CUDA or CPU, which CUDA, which GPU architectures), from the version files the
frameworks ship. Nothing is imported or executed; what cannot be read becomes a problem sentence."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

from packaging.utils import canonicalize_name

from cudafit import binaries
from cudafit import detection as detect
from cudafit.doctor.model import Distribution, Environment, InstalledBuild

# The distributions whose metadata doctor reads in full; the rest are known by folder name only.
FRAMEWORK_DISTS = (
    "torch",
    "torchvision",
    "torchaudio",
    "tensorflow",
    "tensorflow-cpu",
    "tensorflow-gpu",
    "tensorflow-intel",
    "tf-nightly",
    "jax",
    "jaxlib",
    "jax-cuda12-plugin",
    "jax-cuda13-plugin",
    "jax-cuda12-pjrt",
    "jax-cuda13-pjrt",
    "onnxruntime",
    "onnxruntime-gpu",
    "xformers",
    "vllm",
    "flash-attn",
    "torchao",
)
_JAX_PLUGIN = re.compile(r"jax-cuda(\d+)-plugin")
_CUDART = re.compile(r"libcudart\.so\.(\d+)")
_CUDA_LIBRARY = re.compile(r"lib(?:cudart|cublas|cublasLt|cudnn|cufft|curand|cusparse|cusolver|nccl|nvrtc)\.so\.(\d+)")


def read_target(python_exe: str, prefix: Path, *, python: Optional[str] = None) -> Environment:
    """The environment an interpreter runs, with the package folders it imports from, as it says
    (its user site, system site packages, dist-packages); read from the prefix's files alone where
    the interpreter does not run here. `python`: the version to assume where nothing tells it."""
    layout = detect.interpreter_layout(python_exe)
    if layout is None:
        # the interpreter did not answer: what its pyvenv.cfg says, without running it again
        env = read_environment(prefix, python_exe, python=detect.pyvenv_python(prefix) or python)
        # said: a user site or system packages it would import were not read, and a build for
        # another machine (a Windows environment read from Linux) may be why
        said = f"the environment's interpreter {python_exe} did not run here (or did not answer): only the folder's own site-packages were read"
        return env._replace(problems=(*env.problems, said))
    return read_environment(layout.prefix, python_exe, python=layout.python, sites=list(layout.sites))


def read_environment(prefix: Path, interpreter: Optional[str], *, python: Optional[str] = None, sites: Optional[list[Path]] = None) -> Environment:
    """What the environment at `prefix` holds; `sites`: its package folders in import order (by
    default the prefix's own site-packages)."""
    problems: list[str] = []
    python = python or detect.pyvenv_python(prefix)  # the interpreter was asked by read_target, where it runs
    if sites is None:
        sites = _site_packages(prefix, python, problems)
    dists = _distributions(sites, problems)
    builds = []
    for reader in (_torch, _tensorflow, _jax, _onnxruntime):
        try:
            build = reader(sites, dists, problems, python)
        except OSError as exc:
            problems.append(f"cannot read {exc.filename}: {exc.strerror}")
            continue
        if build is not None:
            builds.append(build)
    libraries = []
    for name in LIBRARIES:
        if name in dists:
            try:
                libraries.append(_library(name, sites, dists[name], problems))
            except OSError as exc:
                problems.append(f"cannot read {exc.filename}: {exc.strerror}")
    return Environment(prefix, python, interpreter, tuple(sites), dists, tuple(builds), tuple(problems), tuple(libraries))


def _site_packages(prefix: Path, python: Optional[str], problems: list[str]) -> list[Path]:
    sites = detect.site_packages(prefix)
    if len(sites) > 1 and python:
        # A venv whose Python was upgraded in place keeps the old lib/python3.X folder: only the
        # running Python's one is imported.
        own = [s for s in sites if s.parent.name == f"python{python}"]
        if own:
            stale = [str(s) for s in sites if s not in own]
            problems.append(f"{', '.join(stale)} belongs to another Python than this environment's {python}; its packages are not imported")
            sites = own
    return sites


def _distributions(sites: list[Path], problems: list[str]) -> dict[str, Distribution]:
    found: dict[str, Distribution] = {}
    for site in sites:
        try:
            entries = sorted(site.iterdir())
        except OSError as exc:
            problems.append(f"cannot list {site}: {exc.strerror}")
            continue
        for entry in entries:
            if entry.suffix not in (".dist-info", ".egg-info"):
                continue
            name, version = detect.metadata_folder_name(entry)
            if not version:
                # Debian's own packages (python3-cryptography) install `name.egg-info` without a
                # version in the name: the version is in its PKG-INFO
                version = _version_inside(entry)
            if not version:
                problems.append(f"{entry} has no version in its name or its metadata: a broken install of {name}; reinstall it")
                continue
            key = canonicalize_name(name)
            if key in found and found[key].path.parent != site:
                # An earlier folder on the import path wins (a user site before the system's).
                if key in FRAMEWORK_DISTS:
                    problems.append(f"{key} {version} in {site} is hidden by {found[key].version} in {found[key].path.parent}, which Python imports first")
                continue
            if key in found:
                # Two metadata folders for one name: pip left one behind, and which one Python
                # imports is not what either claims.
                problems.append(f"{key} is installed twice ({found[key].version} and {version}, in {site}): reinstall it")
                continue
            dist = Distribution(key, version, entry)
            if key in FRAMEWORK_DISTS:
                dist = _read_metadata(dist, problems)
            found[key] = dist
    return found


def _version_inside(entry: Path) -> str:
    """The Version: header of a metadata folder's PKG-INFO or METADATA (an egg-info may be a file)."""
    from packaging.metadata import parse_email

    for path in (entry, entry / "PKG-INFO", entry / "METADATA"):
        if path.is_file():
            try:
                raw, _ = parse_email(path.read_bytes())
            except (OSError, ValueError):
                return ""
            return str(raw.get("version") or "")
    return ""


def _read_metadata(dist: Distribution, problems: list[str]) -> Distribution:
    from packaging.metadata import parse_email

    metadata = dist.path / ("METADATA" if dist.path.suffix == ".dist-info" else "PKG-INFO")
    try:
        raw, _ = parse_email(metadata.read_bytes())
    except OSError as exc:
        problems.append(f"cannot read {metadata}: {exc.strerror}; {dist.name}'s requirements not checked")
        return dist
    except ValueError as exc:
        problems.append(f"{metadata} does not parse ({exc}); {dist.name}'s requirements not checked")
        return dist
    if not raw.get("name") or not raw.get("version"):
        problems.append(f"{metadata} has no readable Name and Version: {dist.name}'s metadata is damaged; reinstall it")
    tags: tuple[str, ...] = ()
    wheel = dist.path / "WHEEL"
    if wheel.is_file():
        try:
            tags = tuple(line.split(":", 1)[1].strip() for line in wheel.read_text(errors="replace").splitlines() if line.startswith("Tag:"))
        except OSError:
            pass
    return dist._replace(requires=tuple(raw.get("requires_dist", [])), extras=tuple(raw.get("provides_extra", [])), tags=tags)


def _package_file(sites: list[Path], relative: str) -> Optional[Path]:
    return next((s / relative for s in sites if (s / relative).is_file()), None)


def _literals(path: Path, names: tuple[str, ...], problems: list[str]) -> Optional[dict[str, object]]:
    """The literals a generated version file assigns to `names` (a name it lacks is None), or
    None with a problem said when the file does not parse."""
    try:
        source = path.read_text(errors="replace")
        binaries.assigned_literal(source, "__cudafit_parse_only__")
    except KeyError:
        pass
    except (SyntaxError, ValueError) as exc:
        problems.append(f"{path} does not parse ({type(exc).__name__}); which build it is was not read")
        return None
    out: dict[str, object] = {}
    for name in names:
        try:
            out[name] = binaries.assigned_literal(source, name)
        except KeyError:
            out[name] = None
        except (SyntaxError, ValueError) as exc:
            problems.append(f"{path}: {name} is not a literal ({type(exc).__name__}); which build it is was not read")
            return None
    return out


def _cuda_major_of(libraries: list[Path], problems: list[str]) -> Optional[str]:
    """The CUDA major a library links (libcudart.so.12, libcublas.so.13), read from its NEEDED entries."""
    for lib in libraries:
        try:
            needed = binaries.read_dynamic(lib).needed
        except binaries.NotElf as exc:
            problems.append(f"{lib} is not a readable shared library ({exc})")
            continue
        for pattern in (_CUDART, _CUDA_LIBRARY):
            for soname in needed:
                match = pattern.fullmatch(soname)
                if match and not soname.startswith("libcudnn"):
                    return match.group(1)
    return None


# --- one reader per framework ---------------------------------------------------------------


def _torch(sites: list[Path], dists: dict[str, Distribution], problems: list[str], python: Optional[str]) -> Optional[InstalledBuild]:
    if "torch" not in dists:
        return None
    version_py = _package_file(sites, "torch/version.py")
    if version_py is None:
        problems.append(f"torch {dists['torch'].version} is installed but torch/version.py is missing: a broken install; reinstall torch")
        return InstalledBuild("torch", "torch", dists["torch"].version, "unknown")
    facts = _literals(version_py, ("__version__", "cuda", "hip"), problems)
    if facts is None:
        return InstalledBuild("torch", "torch", dists["torch"].version, "unknown", read_from=str(version_py))
    version, cuda, hip = facts["__version__"], facts["cuda"], facts["hip"]
    if not isinstance(version, str):
        # A generated version file always names its version: this one is damaged or empty.
        problems.append(f"{version_py} names no __version__: a damaged install; which build it is was not read; reinstall torch")
        return InstalledBuild("torch", "torch", dists["torch"].version, "unknown", read_from=str(version_py))
    kind = "cuda" if isinstance(cuda, str) else "rocm" if isinstance(hip, str) else "cpu"
    lib_dir = version_py.parent / "lib"
    libraries = tuple(p for p in (lib_dir / "libtorch_cuda.so",) if p.is_file())
    sass = ptx = None
    if kind == "cuda":
        # The arch list torch.cuda.get_arch_list() reports is compiled into torch's Python library.
        for name in ("libtorch_python.so", "torch_python.dll", "libtorch_cuda.so"):
            if (lib_dir / name).is_file():
                found = binaries.arch_string_of_file(lib_dir / name)
                if found is not None:
                    sass, ptx = found
                    break
    return InstalledBuild(
        "torch",
        "torch",
        str(version) if isinstance(version, str) else dists["torch"].version,
        kind,
        cuda=cuda if isinstance(cuda, str) else None,
        sass=sass,
        ptx=ptx,
        read_from=str(version_py),
        libraries=libraries,
    )


_TF_DISTS = ("tensorflow", "tensorflow-gpu", "tensorflow-cpu", "tensorflow-intel", "tf-nightly")


def _tensorflow(sites: list[Path], dists: dict[str, Distribution], problems: list[str], python: Optional[str]) -> Optional[InstalledBuild]:
    dist = next((dists[d] for d in _TF_DISTS if d in dists), None)
    if dist is None:
        return None
    info_py = _package_file(sites, "tensorflow/python/platform/build_info.py")
    if info_py is None:
        problems.append(f"{dist.name} {dist.version} is installed but tensorflow/python/platform/build_info.py is missing; which build it is was not read")
        return InstalledBuild("tensorflow", dist.name, dist.version, "unknown")
    parsed = _literals(info_py, ("build_info",), problems)
    info = parsed["build_info"] if parsed is not None else None
    if not isinstance(info, (list, dict)):
        return InstalledBuild("tensorflow", dist.name, dist.version, "unknown", read_from=str(info_py))
    facts = dict(info) if isinstance(info, list) else info
    kind = "cuda" if facts.get("is_cuda_build") else "rocm" if facts.get("is_rocm_build") else "cpu"
    sass = ptx = None
    arch = facts.get("cuda_compute_capabilities")
    if kind == "cuda" and isinstance(arch, list) and all(isinstance(a, str) for a in arch):
        sass, ptx = binaries.split_arch_list(" ".join(arch))
    cuda = facts.get("cuda_version")
    cudnn = facts.get("cudnn_version")
    return InstalledBuild(
        "tensorflow",
        dist.name,
        dist.version,
        kind,
        cuda=".".join(str(cuda).split(".")[:2]) if cuda else None,
        cudnn=str(cudnn) if cudnn else None,
        sass=sass,
        ptx=ptx,
        read_from=str(info_py),
        extras_installed=_extras_present(dist, dists, python),
    )


def _jax(sites: list[Path], dists: dict[str, Distribution], problems: list[str], python: Optional[str]) -> Optional[InstalledBuild]:
    if "jaxlib" not in dists:
        return None
    jaxlib = dists["jaxlib"]
    plugins = sorted(d for d in dists if _JAX_PLUGIN.fullmatch(d))
    # the plugin jaxlib loads is one of its own version (the others it skips: stack_checks.jax_plugins)
    own = re.match(r"[0-9]+(?:\.[0-9]+)*", jaxlib.version)
    loaded = [d for d in plugins if own is not None and (m := re.match(r"[0-9]+(?:\.[0-9]+)*", dists[d].version)) is not None and m.group(0) == own.group(0)]
    plugins = loaded or plugins
    local = jaxlib.version.partition("+")[2]
    if plugins:
        major = _JAX_PLUGIN.fullmatch(plugins[-1]).group(1)  # type: ignore[union-attr]
        return InstalledBuild("jax", "jaxlib", jaxlib.version, "cuda", cuda=major, read_from=str(dists[plugins[-1]].path))
    match = re.fullmatch(r"cuda(\d+)(?:\.cudnn(\d)(\d+))?", local)
    if match:
        # Before the plugins (jax 0.4.16), CUDA jaxlib wheels named CUDA and cuDNN in their local tag.
        cudnn = f"{match.group(2)}.{match.group(3)}" if match.group(2) else None
        return InstalledBuild("jax", "jaxlib", jaxlib.version, "cuda", cuda=match.group(1), cudnn=cudnn, read_from=str(jaxlib.path))
    return InstalledBuild("jax", "jaxlib", jaxlib.version, "cpu", read_from=str(jaxlib.path))


def _onnxruntime(sites: list[Path], dists: dict[str, Distribution], problems: list[str], python: Optional[str]) -> Optional[InstalledBuild]:
    dist = dists.get("onnxruntime-gpu") or dists.get("onnxruntime")
    if dist is None:
        return None
    provider = _package_file(sites, "onnxruntime/capi/libonnxruntime_providers_cuda.so")
    if dist.name == "onnxruntime" and provider is None:
        # ONNX Runtime publishes its CPU and CUDA builds as two packages that install one module
        # (https://onnxruntime.ai/docs/install/): `onnxruntime` without the CUDA provider is the CPU one.
        return InstalledBuild("onnxruntime-gpu", dist.name, dist.version, "cpu", read_from=str(dist.path))
    if provider is None:
        # Windows ships a .dll, which has no ELF section to read: the data says which CUDA.
        return InstalledBuild("onnxruntime-gpu", dist.name, dist.version, "cuda", read_from=str(dist.path))
    major = _cuda_major_of([provider], problems)
    return InstalledBuild("onnxruntime-gpu", dist.name, dist.version, "cuda", cuda=major, read_from=str(provider), libraries=(provider,))


# A library built against torch -> the globs, under site-packages, of the compiled code whose
# NEEDED entries say which CUDA major it links.
LIBRARIES = {
    "xformers": ("xformers/_C*.so", "xformers/*/_C*.so"),
    "vllm": ("vllm/_C*.so",),
    "flash-attn": ("flash_attn_2_cuda*.so",),
    "torchao": ("torchao/_C*.so",),
}


def _library(name: str, sites: list[Path], dist: Distribution, problems: list[str]) -> InstalledBuild:
    """Which build of a library is installed, from its own files: xformers' build record
    (cpp_lib.json: the torch and the CUDA it was compiled against), else the CUDA major its
    compiled code links; a library without compiled code is a pure-Python build."""
    found = [lib for site in sites for pattern in LIBRARIES[name] for lib in sorted(site.glob(pattern))]
    cuda = _cuda_major_of(found, problems) if found else None
    built_for = ""
    read_from = str(found[0]) if found else str(dist.path)
    record = _package_file(sites, "xformers/cpp_lib.json") if name == "xformers" else None
    if record is not None:
        recorded = _build_record(record, problems)
        if recorded is not None:
            cuda = recorded[0] or cuda
            built_for = recorded[1]
            read_from = str(record)
    kind = "cuda" if cuda else "python" if not found else "unknown"
    return InstalledBuild(name, name, dist.version, kind, cuda=cuda, read_from=read_from, built_for=built_for)


def _build_record(path: Path, problems: list[str]) -> Optional[tuple[Optional[str], str]]:
    """(CUDA, torch) from xformers' cpp_lib.json, e.g. {"version": {"cuda": 1208, "torch":
    "2.10.0+cu128"}}; None, with the problem said, when it is not in that form."""
    import json

    try:
        doc = json.loads(path.read_text(errors="replace"))
    except ValueError:
        problems.append(f"{path} does not parse as JSON; which build of xformers this is was not read")
        return None
    version = doc.get("version") if isinstance(doc, dict) else None
    code = version.get("cuda") if isinstance(version, dict) else None
    torch = version.get("torch") if isinstance(version, dict) else None
    # 1208 is CUDA 12.8; a CPU or ROCm build records null
    if not isinstance(version, dict) or not (code is None or (isinstance(code, int) and 900 <= code < 10000)) or not isinstance(torch, str):
        problems.append(
            f'{path} is not xformers\' build record (version.cuda like 1208, version.torch like "2.10.0+cu128"); which build of xformers this is was not read'
        )
        return None
    return (f"{code // 100}.{code % 100}" if code else None), torch


def marker_environment(python: Optional[str]) -> dict[str, str]:
    """This machine's marker values, with the environment's Python where it differs from ours."""
    from packaging.markers import default_environment

    values: dict[str, str] = {k: str(v) for k, v in default_environment().items()}
    if python:
        values["python_version"] = python
        values["python_full_version"] = f"{python}.0"
    return values


def requirements_for(dist: Distribution, extra: str, python: Optional[str]) -> list:
    """The requirements of a distribution that apply here, with `extra` asked for ("" for none)."""
    from packaging.requirements import InvalidRequirement, Requirement

    env = {**marker_environment(python), "extra": extra}
    out = []
    for text in dist.requires:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if req.marker is None or req.marker.evaluate(env):
            out.append(req)
    return out


def _extras_present(dist: Distribution, dists: dict[str, Distribution], python: Optional[str]) -> tuple[str, ...]:
    """The extras of a distribution whose every own requirement is installed (TensorFlow's and-cuda)."""
    base = {canonicalize_name(r.name) for r in requirements_for(dist, "", python)}
    present = []
    for extra in dist.extras:
        own = [canonicalize_name(r.name) for r in requirements_for(dist, extra, python)]
        own = [n for n in own if n not in base]
        if own and all(n in dists for n in own):
            present.append(extra)
    return tuple(present)
