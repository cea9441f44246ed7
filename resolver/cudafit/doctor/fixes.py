"""The commands that repair an environment, from the resolver: the frameworks that are installed,
solved for this machine, keeping their installed versions where a build of that version runs here,
and the newest that runs where none does."""

from __future__ import annotations

import shlex
from typing import Optional

from packaging.version import InvalidVersion, Version

from cudafit.answers import Resolution
from cudafit.doctor.model import Environment, InstalledBuild
from cudafit.records import Machine, Matrices, Policy

# The companions a family's spec brings along when they are installed.
_COMPANIONS = {"torch": ("torchvision", "torchaudio")}
# ONNX Runtime's CUDA build is its own package; the CPU one (`onnxruntime`) installs the same module.
ORT_GPU, ORT_CPU = "onnxruntime-gpu", "onnxruntime"


def gpu_here(machine: Machine) -> bool:
    """An NVIDIA GPU with its driver, where a CUDA build would use it."""
    return machine.driver is not None and bool(machine.gpus) and machine.os != "macos"


class Repair:
    """Solved once, on first use: most environments need no repair at all."""

    def __init__(self, env: Environment, machine: Machine, matrices: Matrices) -> None:
        self.env = env
        self.machine = machine
        self.matrices = matrices
        self.python = shlex.quote(env.interpreter) if env.interpreter else "python"
        self.uv = _uv_without_pip(env)
        self._solved: Optional[tuple[Optional[Resolution], frozenset[str]]] = None
        self._runs: dict[str, bool] = {}

    def runs(self, family: str) -> bool:
        """Whether some build of `family` runs here, on its own (the resolver's word)."""
        if family not in self._runs:
            from cudafit.resolution import resolve

            self._runs[family] = resolve([family], self.machine, self.matrices, Policy()).ok
        return self._runs[family]

    def replaces(self, build: InstalledBuild) -> bool:
        """Whether the repair swaps this installed build for the one the resolver picks. Every
        build but a CPU onnxruntime: its CUDA build is another package, the right one only where
        the machine has an NVIDIA GPU and some onnxruntime-gpu runs on it; elsewhere the CPU
        package is the answer, and the resolver, which has no CPU ONNX Runtime, leaves it be."""
        if build.family != ORT_GPU or build.kind != "cpu":
            return True
        return gpu_here(self.machine) and self.runs(ORT_GPU)

    def _specs(self, keep: frozenset[str]) -> list[str]:
        specs = []
        for build in (*self.env.builds, *self.env.libraries):
            if not self.replaces(build):
                continue
            try:
                public = Version(build.version).public
            except InvalidVersion:
                public = None
            specs.append(f"{build.family}=={public}" if build.family in keep and public else build.family)
            specs += [c for c in _COMPANIONS.get(build.family, ()) if c in self.env.distributions]
        return specs

    def solve(self) -> tuple[Optional[Resolution], frozenset[str]]:
        """The resolution, and the families whose installed version it keeps."""
        if self._solved is None:
            from cudafit.errors import InputError
            from cudafit.resolution import resolve

            families = frozenset(b.family for b in (*self.env.builds, *self.env.libraries))
            self._solved = (None, frozenset())
            # Keep every version; then let go of one family at a time, a library built against
            # torch before the framework it is built against (a new library for the installed
            # torch, not an older torch); then of all.
            libraries = {b.family for b in self.env.libraries}
            order = sorted(families, key=lambda f: (f not in libraries, f))
            attempts = [families] + [families - {f} for f in order] + [frozenset()]
            fallback: Optional[tuple[Resolution, frozenset[str]]] = None
            for keep in dict.fromkeys(attempts):
                try:
                    res = resolve(self._specs(keep), self.machine, self.matrices, Policy())
                except InputError:
                    continue
                if not res.ok:
                    continue
                if keep and _cpu_beside_gpu(res):
                    # the kept version has only a CPU build for this AMD or Intel GPU: another
                    # release's GPU build is the better repair, where one runs
                    fallback = fallback or (res, keep)
                    continue
                self._solved = (res, keep)
                break
            else:
                if fallback is not None:
                    self._solved = fallback
        return self._solved

    def keeps(self, family: str) -> bool:
        return family in self.solve()[1]

    @property
    def solved(self) -> bool:
        return self.solve()[0] is not None

    def pip(self, action: str, *args: str, reinstall: tuple[str, ...] = ()) -> str:
        """One pip command run on this environment: its Python's pip, or uv's where uv made the
        environment without pip. `reinstall`: distributions to install again at the same version
        (pip calls an installed version satisfied and does nothing)."""
        if self.uv:
            again = [f"--reinstall-package={name}" for name in reinstall] if action == "install" else []
            return shlex.join(["uv", "pip", action, "--python", *shlex.split(self.python), *again, *args])
        again = ["--force-reinstall"] if reinstall and action == "install" else []
        sure = ["-y"] if action == "uninstall" else []
        return shlex.join([*shlex.split(self.python), "-m", "pip", action, *sure, *again, *args])

    def commands(self) -> tuple[str, ...]:
        from cudafit.emit import install_groups

        res, _ = self.solve()
        if res is None:
            # Nothing runs here: the resolve that says why, for this machine as doctor saw it.
            return (shlex.join(["cudafit", "resolve", *self._specs(frozenset()), *machine_args(self.machine)]),)
        out = []
        gone: list[str] = []
        if ORT_CPU in self.env.distributions and any(p.name == ORT_GPU for p in res.packages):
            # Both packages install the onnxruntime module: pip would keep the CPU one's files
            # beside (or over) the CUDA one's. Removing onnxruntime alone would take files
            # onnxruntime-gpu shares, and pip would then call the damaged onnxruntime-gpu satisfied:
            # both go, then the install.
            gone = [ORT_CPU] + [ORT_GPU] * (ORT_GPU in self.env.distributions)
            out.append(self.pip("uninstall", *gone))
        for group in install_groups(res):
            argv = list(group.options)
            if group.index_url:
                argv += ["--index-url", group.index_url]
            if group.find_links:
                argv += ["-f", group.find_links]
            again = tuple(name for name in self._installed_as(group.requirements) if name not in gone)
            out.append(self.pip("install", *argv, *group.requirements, reinstall=again))
        from cudafit.emit import environment

        # what the set needs set where it runs (an AMD GPU on another target's kernels)
        out += [f"export {name}={shlex.quote(value)}" for name, value in environment(res).items()]
        return tuple(out)

    def _installed_as(self, requirements: tuple[str, ...]) -> tuple[str, ...]:
        """The distributions among `requirements` pinned to exactly the version installed (a build
        for another Python, or a damaged install, at the version that runs here)."""
        from packaging.requirements import InvalidRequirement, Requirement
        from packaging.utils import canonicalize_name

        same = []
        for text in requirements:
            try:
                req = Requirement(text)
            except InvalidRequirement:
                continue
            dist = self.env.distributions.get(canonicalize_name(req.name))
            pinned = [s.version for s in req.specifier if s.operator in ("==", "===")]
            if dist is not None and pinned and _same_version(pinned[0], dist.version):
                same.append(dist.name)
        return tuple(same)


def _same_version(pinned: str, installed: str) -> bool:
    try:
        return Version(pinned) == Version(installed)
    except InvalidVersion:
        return pinned == installed


def _uv_without_pip(env: Environment) -> bool:
    """An environment uv made (its pyvenv.cfg names uv) that has no pip of its own."""
    if "pip" in env.distributions:
        return False
    try:
        text = (env.prefix / "pyvenv.cfg").read_text(errors="replace")
    except OSError:
        return False
    return any(line.partition("=")[0].strip() == "uv" for line in text.splitlines())


def machine_args(machine: Machine) -> list[str]:
    """The machine options that describe `machine` to another cudafit command."""
    args = []
    for option, value in (("--os", machine.os), ("--arch", machine.arch), ("--python", machine.python)):
        if value:
            args += [option, value]
    if machine.driver_known:
        args += ["--driver", machine.driver or "none"]
    for gpu in machine.gpus:
        if machine.jetpack and gpu.name == "Jetson GPU":
            continue  # the JetPack line stands for it
        if gpu.target:
            args += ["--gfx" if gpu.vendor == "amd" else "--gpu", gpu.target if gpu.vendor == "amd" else gpu.name or gpu.target]
        elif gpu.name:
            args += ["--gpu", gpu.name]
        elif gpu.compute_capability:
            args += ["--compute-capability", f"{gpu.compute_capability[0]}.{gpu.compute_capability[1]}"]
    if machine.jetpack:
        args += ["--jetpack", machine.jetpack]
    elif machine.jetson:
        args.append("--jetson")
    return args


def _cpu_beside_gpu(res: Resolution) -> bool:
    """A CPU build chosen where an AMD or Intel GPU is answered (the resolver ranks those last)."""
    from cudafit.vendor_rules import cpu_beside

    return cpu_beside(res.machine) is not None and any(c.kind == "cpu" for c in res.candidates)
