#!/usr/bin/env python3
"""cudafit's benchmark: whole-process timings, alternating runs, medians, ratios from one run.

    python scripts/bench.py [--runs 21] [--corpus]

1. `cudafit resolve ... --json` against a bare `python -c pass` of the same interpreter,
   against the import floor (its dependencies alone; target: at most 1.1x), and against that
   floor ended as cudafit's program ends (collector off while importing, no teardown), all as
   whole processes, runs interleaved so drift hits them alike.
2. Loading the data alone: warm (the cache) and cold (parse + validate the TOML).
3. The solver on synthetic data 1x, 10x and 100x the real torch table (cost should grow
   about linearly with the number of releases).
4. `cudafit check` over 500 generated requirement files, beside requirements-txt-fixer.
   And `cudafit check` over the real files of tests/corpus in one process (target well under
   2 s), the slowest of them alone beyond start-up (target < 100 ms), and one file describing 8
   times as many environments beside the same file with one selection (must cost < 8x).
5. `cudafit doctor --json` over a fake environment of 300 distributions with a CUDA torch whose
   Python library is 40 MB (the arch string is read from it, as on a real install).
6. `cudafit fleet resolve` over a generated kubectl dump of 10,000 nodes in 40 classes (GPU Feature
   Discovery label sets): whole process, and the parse / group / solve split in process.
7. `cudafit matrix`: every torch release by every build for one machine (target < 150 ms whole
   process), beside `cudafit resolve` of the same machine; and for the 10,000-node inventory
   (target < 1.5 s). `--matrix` prints these figures alone.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

MACHINE = ["--os", "linux", "--arch", "x86_64", "--python", "3.12", "--driver", "535.104.05", "--gpu", "NVIDIA GeForce RTX 3090", "--json"]
RESOLVE_ARGS = ["resolve", "torch", *MACHINE]
JOINT_ARGS = ["resolve", "torch", "tensorflow", "jax", *MACHINE]


def cudafit_command() -> list[str]:
    script = Path(sys.executable).with_name("cudafit")
    return [str(script)] if script.exists() else [sys.executable, "-m", "cudafit"]


def wall(cmd: list[str], env: dict) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=True)
    return time.perf_counter() - start


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


# What a resolve must import before doing anything (its CLI, versions and specifiers, the cache
# directory and the cache): the floor under our figure. PEP 508's parser (packaging.requirements,
# with markers and wheel tags) is not in it: a bare framework name needs none.
FLOOR = "import click, packaging.specifiers, platformdirs, json, pickle"
# The same imports in a process that starts and ends as cudafit's program does (cudafit/__main__.py:
# the cycle collector off while importing, no interpreter teardown): the like-for-like floor, which
# shows what the program's two shortcuts are worth apart from cudafit's own code.
FLOOR_AS_CUDAFIT = f"import gc; gc.disable(); {FLOOR}; import os; os._exit(0)"


def bench_process(runs: int, env: dict) -> tuple[float, float, float, float, float]:
    bare = [sys.executable, "-c", "pass"]
    floor = [sys.executable, "-c", FLOOR]
    floor_as_cudafit = [sys.executable, "-c", FLOOR_AS_CUDAFIT]
    tool = cudafit_command() + RESOLVE_ARGS
    joint = cudafit_command() + JOINT_ARGS
    wall(tool, env)  # fill the data and bytecode caches once, as any earlier run would have
    bare_t, floor_t, like_t, tool_t, joint_t = [], [], [], [], []
    for _ in range(runs):
        bare_t.append(wall(bare, env))
        floor_t.append(wall(floor, env))
        like_t.append(wall(floor_as_cudafit, env))
        tool_t.append(wall(tool, env))
        joint_t.append(wall(joint, env))
    return median_ms(bare_t), median_ms(floor_t), median_ms(like_t), median_ms(tool_t), median_ms(joint_t)


def bench_load(runs: int) -> tuple[float, float]:
    from cudafit.loader import load

    load()
    warm, cold = [], []
    for _ in range(runs):
        t = time.perf_counter()
        load()
        warm.append(time.perf_counter() - t)
        t = time.perf_counter()
        load(use_cache=False)
        cold.append(time.perf_counter() - t)
    return median_ms(warm), median_ms(cold)


def bench_api(runs: int) -> tuple[float, float]:
    """The Python API in a warm process (a launcher that asks again): cudafit.resolve for torch on
    one described machine, and the first call of the process (the data read once)."""
    import cudafit

    machine = cudafit.describe(os="linux", arch="x86_64", python="3.12", driver="535.104.05", gpus=["NVIDIA GeForce RTX 3090"])
    t = time.perf_counter()
    cudafit.resolve(["torch"], machine)
    first = time.perf_counter() - t
    warm = []
    for _ in range(max(runs, 50)):
        t = time.perf_counter()
        cudafit.resolve(["torch"], machine)
        warm.append(time.perf_counter() - t)
    return median_ms(warm), first * 1000


def scaled(matrices, factor: int):
    """Every framework's real table repeated `factor` times under shifted (fake) major versions."""
    from packaging.version import Version

    def grow(table):
        releases = []
        for k in range(factor):
            for r in table:
                v = r.version
                fake = ".".join(str(x) for x in (v.major + 100 * k, *v.release[1:]))
                releases.append(r._replace(version=Version(fake)))
        releases.sort(key=lambda r: r.version, reverse=True)
        return tuple(releases)

    return matrices._replace(frameworks={family: grow(releases) for family, releases in matrices.frameworks.items()})


def bench_solver(runs: int) -> list[tuple[int, int, float]]:
    from cudafit.loader import load
    from cudafit.machine import MachineOptions, build_machine
    from cudafit.records import Policy
    from cudafit.resolution import resolve

    real = load()
    machine = build_machine(MachineOptions(driver="535.104.05", gpus=("NVIDIA GeForce RTX 3090",), os="linux", arch="x86_64", python="3.12"), real)
    rows = []
    for factor in (1, 10, 100):
        m = scaled(real, factor)
        # An unsatisfiable request walks every release: the worst case for the solver.
        times = []
        for _ in range(max(3, runs // 3)):
            t = time.perf_counter()
            resolve(["torch<0"], machine, m, Policy())
            times.append(time.perf_counter() - t)
        rows.append(("torch", factor, len(m.torch), median_ms(times)))
    for factor in (1, 10):
        m = scaled(real, factor)
        # torch 2.5.1 fits no TensorFlow: arc consistency must prune every pair, no search succeeds.
        times = []
        for _ in range(max(3, runs // 3)):
            t = time.perf_counter()
            resolve(["torch", "tensorflow", "jax"], machine, m, Policy())
            times.append(time.perf_counter() - t)
        n = len(m.torch) + len(m.frameworks["tensorflow"]) + len(m.frameworks["jax"])
        rows.append(("torch+tf+jax", factor, n, median_ms(times)))
    return rows


# A tree of requirement files as a monorepo has them: 20 lines each, some GPU pins among them.
_LINES = [
    "--index-url https://download.pytorch.org/whl/cu124",
    "--extra-index-url https://pypi.org/simple",
    "torch==2.5.1+cu124",
    "torchvision==0.20.1+cu124",
    "torchaudio==2.5.1+cu124",
    "numpy>=1.26,<2",
    "pandas==2.2.3",
    "scipy>=1.11",
    "requests[socks]>=2.31  # HTTP",
    "pyyaml==6.0.2",
    "tqdm",
    "einops>=0.8",
    "transformers==4.46.3",
    "accelerate>=1.0; python_version >= '3.9'",
    "safetensors",
    "pillow>=10",
    "matplotlib==3.9.2",
    "scikit-learn>=1.5",
    "rich",
    "click>=8.1",
]


def make_tree(folder: Path, files: int) -> list[str]:
    paths = []
    for i in range(files):
        path = folder / f"svc{i:03d}" / "requirements.txt"
        path.parent.mkdir(parents=True)
        path.write_text("\n".join(_LINES) + "\n")
        paths.append(str(path))
    return paths


def bench_check(runs: int, env: dict, files: int = 500) -> tuple[float, Optional[float]]:
    """`cudafit check` over the tree, and pre-commit-hooks' requirements-txt-fixer over the same
    files in the same runs (None where it is not installed)."""
    folder = Path(tempfile.mkdtemp(prefix="cudafit-bench-check-"))
    try:
        paths = make_tree(folder, files)
        tool = cudafit_command() + ["check", *paths]
        fixer = shutil.which("requirements-txt-fixer", path=str(Path(sys.executable).parent)) or shutil.which("requirements-txt-fixer")
        subprocess.run(tool, stdout=subprocess.DEVNULL, env=env)
        ours, theirs = [], []
        for _ in range(runs):
            start = time.perf_counter()
            subprocess.run(tool, stdout=subprocess.DEVNULL, env=env)
            ours.append(time.perf_counter() - start)
            if fixer:
                start = time.perf_counter()
                subprocess.run([fixer, *paths], stdout=subprocess.DEVNULL, env=env)
                theirs.append(time.perf_counter() - start)
        return median_ms(ours), (median_ms(theirs) if theirs else None)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


CORPUS = Path(__file__).resolve().parent.parent / "tests" / "corpus"


def _corpus_files() -> list[Path]:
    from cudafit.check.files import discover

    return [path for path, _reader in discover([CORPUS])]


def bench_corpus(runs: int, env: dict) -> tuple[float, float, str, int]:
    """(the whole corpus in one process, the slowest file alone beyond a check of a one-line file,
    that file, the number of files): whole processes, medians."""
    tool = cudafit_command() + ["check"]
    files = _corpus_files()
    folder = Path(tempfile.mkdtemp(prefix="cudafit-bench-corpus-"))
    try:
        empty = folder / "requirements.txt"
        empty.write_text("numpy\n")
        subprocess.run([*tool, str(CORPUS)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        whole = median_ms([_timed([*tool, str(CORPUS)], env) for _ in range(runs)])
        base = median_ms([_timed([*tool, str(empty)], env) for _ in range(runs)])
        # One run each to find the five slowest, then medians of those.
        first = sorted(((_timed([*tool, str(f)], env), f) for f in files), key=lambda x: x[0], reverse=True)[:5]
        slowest = max(((median_ms([_timed([*tool, str(f)], env) for _ in range(runs)]), f) for _s, f in first), key=lambda x: x[0])
        return whole, slowest[0] - base, str(slowest[1].relative_to(CORPUS)), len(files)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _timed(cmd: list[str], env: dict) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start


def _routed_pyproject(extras: int) -> str:
    """A pyproject whose torch is routed to a PyTorch index per extra (InvokeAI's shape)."""
    variants = ["cpu", "cu118", "cu121", "cu124", "cu126", "cu128", "cu129", "cu130"][: extras + 1]
    lines = ['[project]\nname = "x"\ndependencies = ["torch==2.7.1", "torchvision==0.22.1"]\n[project.optional-dependencies]']
    lines += [f'e{i} = ["torch==2.7.1", "torchvision==0.22.1"]' for i in range(extras)]
    lines += [f'[[tool.uv.index]]\nname = "{v}"\nurl = "https://download.pytorch.org/whl/{v}"\nexplicit = true' for v in variants]
    routes = ", ".join(f'{{ index = "{variants[i + 1]}", extra = "e{i}" }}' for i in range(extras))
    lines += ["[tool.uv.sources]", f"torch = [{routes}]", f"torchvision = [{routes}]"]
    return "\n".join(lines) + "\n"


def bench_environments(runs: int) -> tuple[float, float, int, int]:
    """In process: check_document of a file with 8 selections and of the same file with one."""
    from cudafit.check.environments import environments
    from cudafit.check.evaluate import check_document
    from cudafit.check.pyproject import read
    from cudafit.loader import load

    matrices = load()
    folder = Path(tempfile.mkdtemp(prefix="cudafit-bench-envs-"))
    try:
        times, counts = [], []
        for extras in (0, 7):
            path = folder / f"{extras}" / "pyproject.toml"
            path.parent.mkdir()
            path.write_text(_routed_pyproject(extras))
            doc = read(path)
            counts.append(len(environments(doc)))
            check_document(doc, matrices, ())
            samples = []
            for _ in range(runs):
                start = time.perf_counter()
                check_document(doc, matrices, ())
                samples.append(time.perf_counter() - start)
            times.append(median_ms(samples))
        return times[0], times[1], counts[0], counts[1]
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def bench_doctor(runs: int, env: dict) -> float:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from doctor_env import FakeEnv, elf  # tests/: the fake environments doctor's tests use

    folder = Path(tempfile.mkdtemp(prefix="cudafit-bench-doctor-"))
    try:
        fake = FakeEnv(folder / "venv")
        for i in range(300):
            fake.dist(f"package-{i}", "1.0")
        fake.torch("2.9.0+cu128", "12.8", needed=["libcudnn.so.9", "libcublas.so.12", "libc10_cuda.so"])
        fake.file("torch/lib/libtorch_python.so", b"\0" * 40_000_000 + b"sm_70 sm_75 sm_80 sm_86 sm_90 sm_100 sm_120\0")
        fake.file("torch/lib/libc10_cuda.so", elf([]))
        fake.nvidia_lib("cudnn", "libcudnn.so.9")
        fake.nvidia_lib("cublas", "libcublas.so.12")
        described = [a for a in MACHINE if a not in ("--python", "3.12")]  # the environment's own Python
        tool = cudafit_command() + ["doctor", "--env", str(fake.prefix), *described]
        subprocess.run(tool, stdout=subprocess.DEVNULL, env=env, check=True)
        samples = []
        for _ in range(runs):
            start = time.perf_counter()
            subprocess.run(tool, stdout=subprocess.DEVNULL, env=env, check=True)
            samples.append(time.perf_counter() - start)
        return median_ms(samples)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# 10 GPU products x 4 drivers = 40 classes, as GPU Feature Discovery labels them.
FLEET_GPUS = [
    ("NVIDIA-A100-SXM4-80GB", "8.0"),
    ("NVIDIA-H100-80GB-HBM3", "9.0"),
    ("NVIDIA-L4", "8.9"),
    ("Tesla-T4", "7.5"),
    ("NVIDIA-A10G", "8.6"),
    ("Tesla-V100-SXM2-16GB", "7.0"),
    ("NVIDIA-L40S", "8.9"),
    ("NVIDIA-H200", "9.0"),
    ("NVIDIA-A100-SXM4-40GB", "8.0"),
    ("NVIDIA-RTX-A6000", "8.6"),
]
FLEET_DRIVERS = ["535.104.05", "550.127.05", "570.133.20", "580.65.06"]


def fleet_inventory(nodes: int) -> dict:
    """A kubectl List of `nodes` Nodes with the label sets GFD and a cloud provider put on them."""
    items = []
    for i in range(nodes):
        product, cc = FLEET_GPUS[i % len(FLEET_GPUS)]
        driver = FLEET_DRIVERS[(i // len(FLEET_GPUS)) % len(FLEET_DRIVERS)]
        major, minor, rev = driver.split(".")
        labels = {
            "beta.kubernetes.io/arch": "amd64",
            "beta.kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "kubernetes.io/os": "linux",
            "kubernetes.io/hostname": f"gpu-node-{i:05d}",
            "node.kubernetes.io/instance-type": "p4d.24xlarge",
            "topology.kubernetes.io/zone": "us-east-1a",
            "eks.amazonaws.com/nodegroup": f"pool-{i % 7}",
            "feature.node.kubernetes.io/cpu-model.vendor_id": "Intel",
            "nvidia.com/cuda.driver-version.full": driver,
            "nvidia.com/cuda.driver-version.major": major,
            "nvidia.com/cuda.driver-version.minor": minor,
            "nvidia.com/cuda.driver-version.revision": rev,
            "nvidia.com/cuda.driver.major": major,
            "nvidia.com/cuda.driver.minor": minor,
            "nvidia.com/cuda.driver.rev": rev,
            "nvidia.com/cuda.runtime-version.full": "12.4",
            "nvidia.com/cuda.runtime-version.major": "12",
            "nvidia.com/cuda.runtime-version.minor": "4",
            "nvidia.com/gfd.timestamp": "1762185321",
            "nvidia.com/gpu.compute.major": cc.split(".")[0],
            "nvidia.com/gpu.compute.minor": cc.split(".")[1],
            "nvidia.com/gpu.count": "8",
            "nvidia.com/gpu.family": "ampere",
            "nvidia.com/gpu.machine": "p4d.24xlarge",
            "nvidia.com/gpu.memory": "81920",
            "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.product": product,
            "nvidia.com/gpu.replicas": "1",
            "nvidia.com/mig.capable": "false",
        }
        items.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"gpu-node-{i:05d}", "labels": labels},
                "status": {"nodeInfo": {"architecture": "amd64", "operatingSystem": "linux", "kubeletVersion": "v1.31.2"}},
            }
        )
    return {"apiVersion": "v1", "kind": "List", "items": items}


def bench_fleet(runs: int, env: dict, nodes: int = 10_000) -> tuple[float, float, float, float, int]:
    """(whole process ms, parse ms, group ms, solve ms, classes) for a generated fleet."""
    import json

    from cudafit.fleet import inventory
    from cudafit.fleet.classes import group
    from cudafit.fleet.solve import solve_fleet
    from cudafit.loader import load
    from cudafit.records import Policy

    folder = Path(tempfile.mkdtemp(prefix="cudafit-bench-fleet-"))
    try:
        path = folder / "nodes.json"
        path.write_text(json.dumps(fleet_inventory(nodes)))
        tool = cudafit_command() + ["fleet", "resolve", "--inventory", str(path), "--python", "3.12", "--json"]
        subprocess.run(tool, stdout=subprocess.DEVNULL, env=env)
        whole = []
        for _ in range(runs):
            start = time.perf_counter()
            subprocess.run(tool, stdout=subprocess.DEVNULL, env=env)
            whole.append(time.perf_counter() - start)
        matrices = load()
        parse, grouping, solving = [], [], []
        for _ in range(runs):
            t0 = time.perf_counter()
            with open(path, "rb") as fh:
                read = list(inventory.read(fh, str(path)))
            t1 = time.perf_counter()
            classes = group(read)
            t2 = time.perf_counter()
            solve_fleet(["torch"], classes, matrices, Policy(), "3.12")
            t3 = time.perf_counter()
            parse.append(t1 - t0)
            grouping.append(t2 - t1)
            solving.append(t3 - t2)
        return median_ms(whole), median_ms(parse), median_ms(grouping), median_ms(solving), len(classes)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def bench_matrix(runs: int, env: dict, nodes: int = 10_000) -> tuple[float, float, float, float]:
    """(matrix ms, resolve ms, matrix --format html ms, fleet matrix ms), whole processes, alternating."""
    import json

    machine = [a for a in MACHINE if a != "--json"]
    one = cudafit_command() + ["matrix", *machine]
    resolve = cudafit_command() + ["resolve", "torch", *machine]
    html = cudafit_command() + ["matrix", *machine, "--format", "html"]
    folder = Path(tempfile.mkdtemp(prefix="cudafit-bench-matrix-"))
    try:
        path = folder / "nodes.json"
        path.write_text(json.dumps(fleet_inventory(nodes)))
        fleet = cudafit_command() + ["matrix", "--inventory", str(path), "--python", "3.12"]
        for cmd in (one, resolve, html, fleet):
            subprocess.run(cmd, stdout=subprocess.DEVNULL, env=env)  # caches filled, as for any later run
        times: list[list[float]] = [[], [], [], []]
        for _ in range(runs):
            for n, cmd in enumerate((one, resolve, html)):
                times[n].append(wall(cmd, env))
        for _ in range(max(3, runs // 3)):
            times[3].append(wall(fleet, env))
        return median_ms(times[0]), median_ms(times[1]), median_ms(times[2]), median_ms(times[3])
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def print_matrix(figures: tuple[float, float, float, float]) -> None:
    one, resolve, html, fleet = figures
    print(f"  cudafit matrix, every torch release x build, one machine {one:8.1f} ms (target < 150 ms), {one / resolve:4.2f}x resolve ({resolve:.1f} ms)")
    print(f"  cudafit matrix --format html, the same          {html:8.1f} ms")
    print(f"  cudafit matrix --inventory, 10,000 nodes          {fleet:8.1f} ms (target < 1500 ms)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--corpus", action="store_true", help="the corpus's figures alone (check's speed on real files)")
    parser.add_argument("--matrix", action="store_true", help="the matrix's figures alone")
    parser.add_argument("--watch", action="store_true", help="watch's figures alone: start delay and sampling cost")
    args = parser.parse_args()
    cache = tempfile.mkdtemp(prefix="cudafit-bench-")
    env = {**os.environ, "CUDAFIT_CACHE_DIR": cache}
    # Measure what users run: with bytecode caches (a CI image may switch them off).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["CUDAFIT_CACHE_DIR"] = cache
    if args.watch:
        from bench_watch import print_watch  # beside this script

        print(f"python {sys.version.split()[0]}, {args.runs} alternating runs, medians")
        print_watch(cudafit_command(), args.runs, env)
        shutil.rmtree(cache, ignore_errors=True)
        return 0
    if args.matrix:
        try:
            figures = bench_matrix(args.runs, env)
        finally:
            shutil.rmtree(cache, ignore_errors=True)
        print(f"python {sys.version.split()[0]}, {args.runs} alternating runs, medians")
        print_matrix(figures)
        return 0
    if args.corpus:
        try:
            whole, slowest, which, count = bench_corpus(max(3, args.runs // 3), env)
        finally:
            shutil.rmtree(cache, ignore_errors=True)
        print(f"python {sys.version.split()[0]}, {max(3, args.runs // 3)} runs, medians")
        print(f"  cudafit check, the corpus ({count} real files) in one process {whole:8.1f} ms (target well under 2000 ms)")
        print(f"  cudafit check, the slowest corpus file alone, beyond start-up {slowest:8.1f} ms ({which}; target < 100 ms)")
        return 0
    try:
        bare, floor, like, tool, joint = bench_process(args.runs, env)
        warm, cold = bench_load(args.runs)
        api_warm, api_first = bench_api(args.runs)
        solver = bench_solver(args.runs)
        check_ms, fixer_ms = bench_check(max(3, args.runs // 3), env)
        corpus = bench_corpus(max(3, args.runs // 3), env)
        envs = bench_environments(args.runs)
        doctor_ms = bench_doctor(max(3, args.runs // 3), env)
        fleet = bench_fleet(max(3, args.runs // 3), env)
        matrix = bench_matrix(max(3, args.runs // 3), env)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    print(f"python {sys.version.split()[0]}, {args.runs} alternating runs, medians")
    print(f"  python -c pass                 {bare:8.1f} ms")
    print(f"  importing the dependencies     {floor:8.1f} ms   ratio {floor / bare:4.2f}x ({FLOOR})")
    print(f"  the same, ended as cudafit ends{like:8.1f} ms   ratio {like / bare:4.2f}x (collector off while importing, no teardown)")
    print(
        f"  cudafit resolve torch --json   {tool:8.1f} ms   ratio {tool / bare:4.2f}x, {tool / floor:4.2f}x the import floor (target <= 1.15x), "
        f"{tool / like:4.2f}x the floor ended as cudafit ends"
    )
    print(
        f"  cudafit resolve torch tensorflow jax --json {joint:8.1f} ms   ratio {joint / bare:4.2f}x, {joint / floor:4.2f}x the import floor, "
        f"{joint / like:4.2f}x the floor ended as cudafit ends"
    )
    print(f"  data load, cached              {warm:8.2f} ms")
    print(f"  cudafit.resolve(['torch']), warm process {api_warm:8.2f} ms (target < 2 ms); the process's first call {api_first:.1f} ms")
    print(f"  data load, parse + validate    {cold:8.2f} ms")
    fixer = f", {check_ms / fixer_ms:4.2f}x requirements-txt-fixer ({fixer_ms:.1f} ms)" if fixer_ms else " (requirements-txt-fixer not installed)"
    print(f"  cudafit check, 500 files x 20 lines {check_ms:8.1f} ms   {500 / (check_ms / 1000):6.0f} files/s{fixer} (target < 1000 ms)")
    whole, slowest, which, count = corpus
    print(f"  cudafit check, the corpus ({count} real files) in one process {whole:8.1f} ms (target well under 2000 ms)")
    print(f"  cudafit check, the slowest corpus file alone, beyond start-up {slowest:8.1f} ms ({which}; target < 100 ms)")
    one, eight, n_one, n_eight = envs
    print(f"  check_document, {n_eight} environments vs {n_one}  {eight:8.2f} ms vs {one:.2f} ms   {eight / one:4.2f}x (must be < {n_eight / n_one:.0f}x)")
    print(f"  cudafit doctor --json, 300 dists, 40 MB library {doctor_ms:8.1f} ms   ratio {doctor_ms / bare:4.2f}x python -c pass")
    whole, parse, grouping, solving, classes = fleet
    print(
        f"  cudafit fleet resolve, 10,000 nodes, {classes} classes {whole:8.1f} ms (target < 1000 ms): "
        f"parse {parse:.0f} ms, group {grouping:.0f} ms, solve {solving:.0f} ms"
    )
    print_matrix(matrix)
    bases = {}
    for what, factor, n, ms in solver:
        base = bases.setdefault(what, ms)
        print(f"  solver {what:13s} {factor:>3}x data ({n:5d} releases) {ms:8.2f} ms   {ms / base:6.1f}x the 1x time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
