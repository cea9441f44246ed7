"""`cudafit watch` (issue 30): the command runs with its output and exit code untouched while a
stand-in nvidia-smi replays GPU series recorded from real runs (tests/fixtures/watch, SOURCES.md
says whose), sped up; the warning signs are found in the runs that show them and a healthy run
stays clean. Failure lines come from real logs of the same folder."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Optional

import pytest

from cudafit.watch import output, smi
from cudafit.watch.findings import judge
from cudafit.watch.model import GpuSample, Watched
from cudafit.watch.nvml import NvmlSampler
from cudafit.watch.proc import HostSampler

FIXTURES = Path(__file__).parent / "fixtures" / "watch"
TICK = 0.02  # seconds between replayed samples: a recorded minute passes in a moment


def _number(text: str) -> str:
    value = text.strip().split(" ")[0]
    return value if value and value[0].isdigit() else "[N/A]"


def recorded(name: str, every: int = 1, limit: int = 400) -> list[list[str]]:
    """A recording as ticks of query rows (gpu, name, util, used, total, power, clock), its numbers
    as published; a column the recording lacks is [N/A], as nvidia-smi prints a missing reading."""
    with open(FIXTURES / name, newline="") as f:
        rows = list(csv.DictReader(f, skipinitialspace=True))

    def get(row: dict, *keys: str) -> str:
        return next((_number(row[k]) for k in keys if row.get(k) not in (None, "")), "[N/A]")

    ticks: list[list[str]] = []
    seen: set[str] = set()
    for row in rows:
        gpu = (row.get("index") or "0").strip()
        if gpu in seen or not ticks:
            ticks.append([])
            seen = set()
        seen.add(gpu)
        util = get(row, "utilization.gpu [%]", "gpu_util_pct")
        used = get(row, "memory.used [MiB]", "mem_used_mb")
        total = get(row, "memory.total [MiB]", "mem_total_mb")
        ticks[-1].append(f"{gpu}, {(row.get('name') or 'NVIDIA GPU').strip()}, {util}, {used}, {total}, [N/A], [N/A]")
    return ticks[::every][:limit]


STAND_IN = """\
#!{python}
import os, sys, time
interval = next((int(a.split("=")[1]) for a in sys.argv if a.startswith("-lms=")), 1000) / 1000
if "--query-gpu=index,uuid" in sys.argv:  # each GPU's UUID, as nvidia-smi prints them
    for i in range(8):
        print(f"{{i}}, GPU-00000000-0000-0000-0000-00000000000{{i}}")
    sys.exit(0)
if any(a.startswith("--query-compute-apps=") for a in sys.argv):
    apps = {apps!r}  # (gpu, "run" or a PID, MiB): "run" is the watched command, watch's other child
    if not apps:
        sys.exit(0)  # no process listed: nvidia-smi prints nothing
    watch = os.getppid()
    time.sleep(0.3)  # the command has started
    def children():
        for e in os.listdir("/proc"):
            try:
                stat = open(f"/proc/{{e}}/stat").read()
            except OSError:
                continue
            if e.isdigit() and int(stat.rpartition(")")[2].split()[1]) == watch and "nvidia-smi" not in stat:
                yield int(e)
    run = next(children(), 0)
    while True:
        for gpu, pid, mib in apps:
            print(f"GPU-00000000-0000-0000-0000-00000000000{{gpu}}, {{run if pid == 'run' else pid}}, {{mib}}", flush=True)
        time.sleep(interval)
ticks = open({series!r}).read().split("\\n\\n")
for tick in ticks:
    if tick.strip():
        sys.stdout.write(tick.strip() + "\\n")
        sys.stdout.flush()
    time.sleep(interval)
time.sleep(3600)
"""


def watch(
    tmp_path: Path,
    ticks: list[list[str]],
    code: str,
    *options: str,
    environ: Optional[dict[str, str]] = None,
    apps: tuple = (),
    wrapper: tuple[str, ...] = (),
) -> subprocess.CompletedProcess:
    """`cudafit watch` over `python -c code`, with the stand-in nvidia-smi replaying `ticks`; the
    machine's own CUDA_VISIBLE_DEVICES left out, `environ` added."""
    series = tmp_path / "series.txt"
    series.write_text("\n\n".join("\n".join(t) for t in ticks) + "\n")
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    stand_in = folder / "nvidia-smi"
    stand_in.write_text(STAND_IN.format(python=sys.executable, series=str(series), apps=list(apps)))
    stand_in.chmod(0o755)
    env = {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}", "CUDAFIT_WATCH_NVML": "0"}
    env = {k: v for k, v in env.items() if k not in ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER")} | (environ or {})
    args = [sys.executable, "-m", "cudafit", "watch", "--interval", str(TICK), *options, "--", *wrapper, sys.executable, "-c", code]
    return subprocess.run(args, capture_output=True, env=env, timeout=120)


def lasting(ticks: list[list[str]], busy: bool = False) -> str:
    """A command that lives as long as the replay: asleep, or keeping one core busy."""
    seconds = len(ticks) * TICK + 0.5
    if busy:
        return f"import time\nend = time.time() + {seconds}\nwhile time.time() < end: pass"
    return f"import time; time.sleep({seconds})"


def codes(done: subprocess.CompletedProcess) -> dict[str, dict]:
    """The findings of --json, which follows whatever the command printed on stdout."""
    text = done.stdout.decode()
    start = 0 if text.startswith("{") else text.index("\n{") + 1
    return {f["code"]: f for f in json.loads(text[start:])["findings"]}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the stand-in nvidia-smi and /proc are Linux's")
class TestRecordedRuns:
    def test_a_healthy_run_gets_no_warning(self, tmp_path: Path):
        ticks = recorded("query-healthy-rtxa6000-openad.csv", limit=150)  # GPU 0 near 92 %, GPU 1 unused
        done = watch(tmp_path, ticks, lasting(ticks), "--json")
        assert done.returncode == 0, done.stderr
        assert codes(done) == {} and b"no warning signs" in done.stderr
        doc = json.loads(done.stdout)
        assert doc["gpu_source"] == "nvidia-smi" and [g["name"] for g in doc["gpus"]] == ["NVIDIA RTX A6000"] * 2

    def test_an_input_bound_run_is_named_with_its_figures(self, tmp_path: Path):
        ticks = recorded("gpulogger-lowutil-emptyvram-48gb-dcconv.csv")  # about 18 % busy, 2.7 of 48 GiB
        done = watch(tmp_path, ticks, lasting(ticks, busy=True), "--json")
        found = codes(done)
        assert set(found) == {"WA001", "WA002"}, done.stderr
        assert "the CPU side starves it" in found["WA001"]["message"]
        assert found["WA001"]["evidence"]["utilization"]["p50"] < 50 and found["WA001"]["evidence"]["cpu_runnable_share"] >= 0.8
        assert found["WA002"]["evidence"]["memory_total_mib"] == 49140

    def test_another_jobs_gpu_is_not_judged_where_the_run_cannot_see_it(self, tmp_path: Path):
        # GPU 0: the healthy run; GPU 1: another job's input-bound run (about 18 % busy), same model
        mine = recorded("query-healthy-rtxa6000-openad.csv", limit=150)
        theirs = recorded("gpulogger-lowutil-emptyvram-48gb-dcconv.csv", limit=150)
        ticks = [
            [a[0].replace("NVIDIA RTX A6000", "NVIDIA GPU"), "1," + b[0].split(",", 1)[1]] for a, b in zip(mine, theirs, strict=False)
        ]
        every = watch(tmp_path, ticks, lasting(ticks), "--json")
        assert "WA001" in codes(every), every.stderr  # with every GPU the run's, the other job's looks like this run's
        scoped = watch(tmp_path, ticks, lasting(ticks), "--json", environ={"CUDA_VISIBLE_DEVICES": "0"})
        assert codes(scoped) == {}, scoped.stderr
        doc = json.loads(scoped.stdout)
        assert doc["visible_gpus"] == [0] and [g["index"] for g in doc["gpus"]] == [0]
        assert b"CUDA_VISIBLE_DEVICES=0: GPU 1 not visible to the run, so not judged" in scoped.stderr

    def test_the_runs_own_cuda_visible_devices_counts_not_watchs(self, tmp_path: Path):
        # watch started with CUDA_VISIBLE_DEVICES=0; the command sets 1 for itself (env execs in place)
        mine = recorded("query-healthy-rtxa6000-openad.csv", limit=150)
        theirs = recorded("gpulogger-lowutil-emptyvram-48gb-dcconv.csv", limit=150)
        ticks = [[b[0].replace(b[0].split(",")[1], " NVIDIA GPU", 1), "1," + a[0].split(",", 1)[1].replace("NVIDIA RTX A6000", "NVIDIA GPU")] for a, b in zip(mine, theirs, strict=False)]
        done = watch(tmp_path, ticks, lasting(ticks), "--json", environ={"CUDA_VISIBLE_DEVICES": "0"}, wrapper=("env", "CUDA_VISIBLE_DEVICES=1"))
        assert codes(done) == {}, done.stderr
        assert json.loads(done.stdout)["visible_gpus"] == [1]

    def test_a_run_without_its_gpus_memory_size_gets_no_memory_claim(self, tmp_path: Path):
        ticks = recorded("query-lowutil-emptyvram-v100-deeplearningph.csv")  # <= 12 %; the recording has no memory.total
        done = watch(tmp_path, ticks, lasting(ticks), "--json")
        found = codes(done)
        assert set(found) == {"WA001"} and "the CPU was not busy either" in found["WA001"]["message"]

    def test_periodic_checkpoint_stalls_show_as_a_sawtooth(self, tmp_path: Path):
        ticks = recorded("query-stalls-h100-ckpt100-gpu0.csv", every=5, limit=480)  # 100 ms rows, one in five
        done = watch(tmp_path, ticks, lasting(ticks), "--json")
        found = codes(done)
        assert "WA003" in found and "periodic" in found["WA003"]["message"], done.stderr
        assert found["WA003"]["evidence"]["stalls"] >= 3 and "period_seconds" in found["WA003"]["evidence"]

    def test_out_of_memory_keeps_the_commands_output_and_exit_code(self, tmp_path: Path):
        ticks = recorded("query-healthy-rtxa6000-openad.csv", limit=40)
        line = next(ln for ln in (FIXTURES / "log-torch-oom-new-cads4.txt").read_text().splitlines() if "OutOfMemoryError" in ln)
        code = f"import sys, time\nprint('step 1', flush=True)\ntime.sleep({len(ticks) * TICK})\nsys.stderr.write({line!r} + '\\n')\nsys.exit(1)"
        done = watch(tmp_path, ticks, code, "--json")
        assert done.returncode == 1
        assert done.stdout.startswith(b"step 1\n") and line.encode() in done.stderr  # passed through untouched
        found = codes(done)
        assert found["WA004"]["severity"] == "error" and found["WA004"]["evidence"]["gpu0_memory_peak_mib"] > 20000
        assert any("bf16" in a for a in found["WA004"]["advice"])  # an RTX A6000 (sm_86) has bfloat16

    def test_out_of_memory_beside_another_jobs_memory_names_it(self, tmp_path: Path):
        # nvidia-smi lists the run's process (2 GiB) and another job's (30 GiB) on GPU 0
        ticks = recorded("query-healthy-rtxa6000-openad.csv", limit=40)
        line = next(ln for ln in (FIXTURES / "log-torch-oom-new-cads4.txt").read_text().splitlines() if "OutOfMemoryError" in ln)
        code = f"import sys, time\ntime.sleep({len(ticks) * TICK + 0.5})\nsys.stderr.write({line!r} + '\\n')\nsys.exit(1)"
        done = watch(tmp_path, ticks, code, "--json", apps=((0, "run", 2048), (0, 424242, 30720)))
        found = codes(done)
        assert found["WA004"]["evidence"]["gpu0_others_memory_mib"] == 30720, done.stderr
        assert found["WA004"]["evidence"]["gpu0_other_pids"] == [424242]
        assert found["WA004"]["advice"][0].startswith("other processes held 30.0 of GPU 0's")
        doc = json.loads(done.stdout[done.stdout.index(b"{") :])
        assert doc["gpus"][0]["run_memory_peak_mib"] == 2048 and doc["gpus"][0]["other_pids"] == [424242]
        assert b"GPU 0: other processes too (PID 424242; 30.0 GiB at their peaks)" in done.stderr

    def test_a_gpu_only_other_jobs_held_is_not_judged(self, tmp_path: Path):
        # GPU 0: the healthy run; GPU 1: another job's input-bound run, listed with its own PID only
        mine = recorded("query-healthy-rtxa6000-openad.csv", limit=150)
        theirs = recorded("gpulogger-lowutil-emptyvram-48gb-dcconv.csv", limit=150)
        ticks = [[a[0], "1," + b[0].split(",", 1)[1]] for a, b in zip(mine, theirs, strict=False)]
        done = watch(tmp_path, ticks, lasting(ticks), "--json", apps=((0, "run", 20480), (1, 424242, 2700)))
        assert codes(done) == {}, done.stderr
        assert b"GPU 1: only other processes (PID 424242; 2.6 GiB at their peaks), not judged" in done.stderr

    def test_a_gpu_never_used_is_said_with_the_line_that_tells_why(self, tmp_path: Path):
        # the CPU-only run's one nvidia-smi snapshot (61 MiB, 0 %), held for the run
        ticks = [["0, NVIDIA GeForce GTX 1050 Ti, 0, 61, 4096, [N/A], [N/A]"]] * 40
        line = next(ln for ln in (FIXTURES / "log-jax-cpu-fallback-direjax14.txt").read_text().splitlines() if "jaxlib" in ln)
        done = watch(tmp_path, ticks, f"import sys, time\nsys.stderr.write({line!r} + '\\n')\ntime.sleep({len(ticks) * TICK})", "--json")
        found = codes(done)
        assert set(found) == {"WA005"} and "CUDA-enabled jaxlib is not installed" in found["WA005"]["message"]

    def test_the_exit_code_and_bytes_pass_through(self, tmp_path: Path):
        ticks = recorded("query-healthy-rtxa6000-openad.csv", limit=5)
        done = watch(tmp_path, ticks, "import sys; sys.stdout.buffer.write(b'\\xff\\x00raw\\r50%\\r100%\\n'); sys.exit(3)")
        assert done.returncode == 3 and done.stdout == b"\xff\x00raw\r50%\r100%\n"

    def test_json_to_a_file_leaves_stdout_to_the_command(self, tmp_path: Path):
        ticks = recorded("query-healthy-rtxa6000-openad.csv", limit=10)
        report = tmp_path / "watch.json"
        done = watch(tmp_path, ticks, "print('only this')", "-o", str(report))
        assert done.stdout == b"only this\n" and json.loads(report.read_text())["exit_code"] == 0


# every log but the cluster's job report, which holds no failure line
@pytest.mark.parametrize("path", sorted(p for p in FIXTURES.glob("log-*.txt") if "jobreport" not in p.name), ids=lambda p: p.name)
def test_every_recorded_failure_line_is_recognised(path: Path):
    kinds = {k for line in path.read_text(errors="replace").splitlines() for k in output.scan(line)}
    name = path.name
    expected = next(
        (kind for key, kind in [("oom", "oom"), ("no-kernel-image", "no-kernel-image"), ("driver-insufficient", "driver-too-old"), ("driver-too-old", "driver-too-old"),
                                ("not-compiled", "cpu-only-build"), ("no-nvidia-driver", "no-driver"), ("jax-cpu-fallback", "jax-cpu-fallback"), ("nccl", "nccl"),
                                ("tf-dlopen", "tf-gpu-libraries"), ("cuda-init", "cuda-init")] if key in name),
        None,
    )  # fmt: skip
    assert expected is not None, f"{name}: name the kind its line shows"
    assert expected in kinds, f"{name}: found {kinds}"


def test_ordinary_lines_are_not_failures():
    for line in ["Epoch 3/10 loss=0.231", "Using CUDA device 0", "100%|##########| 50/50 [00:10<00:00]", "driver loaded", "NCCL INFO Bootstrap : Using eth0"]:
        assert output.scan(line) == [], line


@pytest.mark.parametrize(
    "line, util, used, power",
    [
        ("0, NVIDIA RTX A6000, 92, 25073, 49140, 210.50, 1800", 92.0, 25073.0, 210.5),
        ("1, NVIDIA GB10, 96, [N/A], [N/A], [N/A], 2418", 96.0, None, None),  # unified memory: no reading (query-format-gb10-*)
        ("0, GeForce GTX 770, [Not Supported], 1023, 2047, [Not Supported], 1084", None, 1023.0, None),
        ("0, NVIDIA A100, 3, 100, 40960, N/A, 210", 3.0, 100.0, None),  # nounits writes a bare N/A
    ],
)
def test_query_lines_read_as_nvidia_smi_writes_them(line, util, used, power):
    parsed = smi.parse_line(line, 1.0)
    assert parsed is not None
    sample, _name = parsed
    assert (sample.util, sample.mem_used, sample.power) == (util, used, power)
    assert smi.parse_line("No devices were found", 1.0) is None


def test_nvml_readings_are_converted_from_bytes_and_milliwatts():
    fake = types.SimpleNamespace(
        NVML_CLOCK_SM=1,
        nvmlDeviceGetCount=lambda: 1,
        nvmlDeviceGetHandleByIndex=lambda i: f"h{i}",
        nvmlDeviceGetName=lambda h: b"NVIDIA H200",
        nvmlDeviceGetUtilizationRates=lambda h: types.SimpleNamespace(gpu=87, memory=40),
        nvmlDeviceGetMemoryInfo=lambda h: types.SimpleNamespace(used=2 * 1024**3, total=141 * 1024**3),
        nvmlDeviceGetPowerUsage=lambda h: 512_345,
        nvmlDeviceGetClockInfo=lambda h, c: 1980,
        nvmlShutdown=lambda: None,
    )
    sampler = NvmlSampler(fake, 0.01)
    while not sampler.samples:
        pass
    sampler.stop()
    first = sampler.samples[0]
    assert sampler.names == {0: "NVIDIA H200"}
    assert (first.util, first.mem_used, first.mem_total, first.power, first.sm_clock) == (87.0, 2048.0, 141 * 1024.0, 512.345, 1980.0)


def _proc(root: Path, processes: dict[int, tuple[int, int, int]], stat: tuple[int, ...]) -> None:
    """A /proc tree: pid -> (parent, utime, stime) and the machine's cpu line."""
    for pid, (parent, utime, stime) in processes.items():
        (root / str(pid)).mkdir(parents=True, exist_ok=True)
        rest = ["S", str(parent)] + ["0"] * 9 + [str(utime), str(stime)] + ["0"] * 10
        (root / str(pid) / "stat").write_text(f"{pid} (python train.py) {' '.join(rest)}\n")
    (root / "stat").write_text("cpu  " + " ".join(str(v) for v in stat) + " 0 0\n")


def test_the_process_trees_cpu_and_the_machines_iowait(tmp_path: Path):
    hz = os.sysconf("SC_CLK_TCK")
    _proc(tmp_path, {100: (1, 0, 0), 101: (100, 0, 0), 102: (101, 0, 0), 200: (1, 0, 0)}, (0, 0, 0, 0, 0, 0, 0, 0))
    sampler = HostSampler(100, tmp_path)
    assert sampler.sample(0.0) is None
    # in one second: the main process and a grandchild (a DataLoader worker) busy, another process not ours
    _proc(tmp_path, {100: (1, hz, 0), 101: (100, 0, 0), 102: (101, hz // 2, hz // 2), 200: (1, 5 * hz, 0)}, (2 * hz, 0, 0, hz, hz, 0, 0, 0))
    sample = sampler.sample(1.0)
    assert sample is not None and sample.processes == 3 and sample.runnable == 0  # _proc writes state S
    assert sample.cpu_cores == pytest.approx(2.0) and sample.iowait == pytest.approx(0.25)


def test_findings_need_enough_samples_and_say_nothing_of_an_idle_start():
    # a minute of model loading at 0 % then a healthy run: the start is not judged
    series = [GpuSample(float(t), 0, 0.0, 500.0, 80000.0) for t in range(60)] + [GpuSample(60.0 + t, 0, 97.0, 60000.0, 80000.0) for t in range(30)]
    w = Watched(("train",), 1, 0, 90.0, tuple(series), (), (), "nvidia-smi")
    assert judge(w) == []
    short = w._replace(gpus=tuple(series[58:65]))
    assert judge(short) == []


def test_bad_input_is_refused_without_a_traceback(tmp_path: Path):
    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "cudafit", "watch", *args], capture_output=True, text=True, timeout=60)

    for args, said in [((), "give a command after --"), (("--pid", "1", "--", "true"), "give no command with it"), (("--interval", "0", "--", "true"), "--interval")]:
        done = run(*args)
        assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr, done.stderr
    # a command that cannot start: 127, as a shell says (2 is watch's own bad input)
    for args, said in [(("--", "/no/such/program"), "cannot start"), (("--", "cd", "/tmp"), "a shell builtin")]:
        done = run(*args)
        assert done.returncode == 127 and said in done.stderr and "Traceback" not in done.stderr, done.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")
def test_pid_follows_a_running_process_until_it_ends(tmp_path: Path):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1.0)"])
    env = {**os.environ, "CUDAFIT_WATCH_NVML": "0", "PATH": str(tmp_path)}  # no nvidia-smi on this PATH
    done = subprocess.run([sys.executable, "-m", "cudafit", "watch", "--interval", "0.1", "--pid", str(child.pid), "--json"], capture_output=True, text=True, env=env, timeout=60)
    child.wait()
    doc = json.loads(done.stdout)
    assert done.returncode == 0 and doc["exit_code"] is None and doc["gpu_source"] == "none"
    assert any("no GPU sampled" in n for n in doc["notes"]) and doc["host"]["samples"] >= 3


STAND_IN_NVML = """\
import os, time
_ROWS = [line.split(", ") for line in open(os.environ["STAND_IN_SERIES"]).read().split("\\n") if line]
_START = None
NVML_CLOCK_SM = 1
class NVMLError(Exception):
    pass
def nvmlInit():
    global _START
    _START = time.monotonic()
def nvmlShutdown():
    pass
def nvmlDeviceGetCount():
    return 1
def nvmlDeviceGetHandleByIndex(i):
    return i
def nvmlDeviceGetName(h):
    return _ROWS[0][1].encode()
def _row():
    return _ROWS[min(len(_ROWS) - 1, int((time.monotonic() - _START) / float(os.environ["STAND_IN_TICK"])))]
class _Use:
    def __init__(self, gpu):
        self.gpu, self.memory = gpu, 0
class _Memory:
    def __init__(self, used, total):
        self.used, self.total, self.free = used, total, total - used
def nvmlDeviceGetUtilizationRates(h):
    return _Use(int(_row()[2]))
def nvmlDeviceGetMemoryInfo(h):
    row = _row()
    return _Memory(int(row[3]) * 1024 * 1024, int(row[4]) * 1024 * 1024)
def nvmlDeviceGetPowerUsage(h):
    raise NVMLError("Not Supported")
def nvmlDeviceGetClockInfo(h, kind):
    raise NVMLError("Not Supported")
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")
def test_nvml_is_taken_first_where_its_bindings_are_installed(tmp_path: Path):
    # a stand-in pynvml replaying the input-bound recording; nvidia-smi is not on PATH
    rows = [r for tick in recorded("gpulogger-lowutil-emptyvram-48gb-dcconv.csv") for r in tick]
    (tmp_path / "series.txt").write_text("\n".join(rows) + "\n")
    (tmp_path / "pynvml.py").write_text(STAND_IN_NVML)
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "STAND_IN_SERIES": str(tmp_path / "series.txt"), "STAND_IN_TICK": str(TICK), "PATH": os.path.dirname(sys.executable)}
    env.pop("CUDAFIT_WATCH_NVML", None)
    code = lasting([[r] for r in rows], busy=True)
    done = subprocess.run([sys.executable, "-m", "cudafit", "watch", "--interval", str(TICK), "--json", "--", sys.executable, "-c", code], capture_output=True, env=env, timeout=120)
    doc = json.loads(done.stdout)
    assert doc["gpu_source"] == "nvml" and doc["gpus"][0]["memory_total_mib"] == 49140 and doc["gpus"][0]["power_w_p50"] is None
    assert {f["code"] for f in doc["findings"]} == {"WA001", "WA002"}


# --- what a newcomer's try found (issue 30, second pass) ----------------------------------------


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the stand-in nvidia-smi and /proc are Linux's")
class TestSecondPass:
    def test_an_idle_gpu_that_holds_memory_is_named(self, tmp_path: Path):
        # the rows of the recorded run before it got busy, memory grown and utilisation near 0
        ticks = [["0, NVIDIA A100-SXM4-80GB, 0, 500, 81920, [N/A], [N/A]"]] * 5 + [["0, NVIDIA A100-SXM4-80GB, 3, 60000, 81920, [N/A], [N/A]"]] * 40
        found = codes(watch(tmp_path, ticks, lasting(ticks), "--json"))
        assert "WA001" in found and found["WA001"]["evidence"]["utilization"]["p50"] == 3.0

    def test_a_failed_run_that_says_why_gets_its_line(self, tmp_path: Path):
        ticks = [["0, NVIDIA GeForce RTX 3090, 0, 300, 24576, [N/A], [N/A]"]] * 3
        line = "AssertionError: Torch not compiled with CUDA enabled"
        done = watch(tmp_path, ticks, f"import sys\nsys.stderr.write({line!r} + '\\n')\nsys.exit(1)", "--json")
        assert done.returncode == 1
        found = codes(done)
        assert "WA005" in found and "Torch not compiled with CUDA enabled" in found["WA005"]["message"]

    def test_readings_that_are_not_there_claim_nothing(self, tmp_path: Path):
        ticks = [["0, NVIDIA A100-SXM4-80GB MIG 1g.10gb, [N/A], [N/A], [N/A], [N/A], [N/A]"]] * 30
        assert codes(watch(tmp_path, ticks, lasting(ticks), "--json")) == {}

    def test_an_nvidia_smi_that_prints_nothing_readable_is_said(self, tmp_path: Path):
        done = watch(tmp_path, [["Unable to determine the device handle for GPU0000:01:00.0: Unknown Error"]] * 5, lasting([[""]] * 5), "--json")
        doc = json.loads(done.stdout)
        assert doc["gpus"] == [] and any("gave no reading" in n for n in doc["notes"]) and doc["findings"] == []

    def test_json_after_output_without_a_newline_starts_its_own_line(self, tmp_path: Path):
        done = watch(tmp_path, [], "import sys; sys.stdout.write('no newline')", "--json")
        first, rest = done.stdout.decode().split("\n", 1)
        assert first == "no newline" and json.loads(rest)["exit_code"] == 0

    def test_a_closed_reader_ends_the_command_as_it_would_alone(self, tmp_path: Path):
        env = {**os.environ, "CUDAFIT_WATCH_NVML": "0", "PATH": os.path.dirname(sys.executable)}
        proc = subprocess.Popen([sys.executable, "-m", "cudafit", "watch", "--", sys.executable, "-c", "while True: print('y')"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        assert proc.stdout is not None
        proc.stdout.readline()
        proc.stdout.close()  # as `| head -1` does
        assert proc.wait(timeout=60) != 0  # the command met the closed pipe (BrokenPipeError), and watch ended

    def test_sigterm_to_watch_reaches_the_command_and_the_report_is_printed(self, tmp_path: Path):
        import signal
        import time

        env = {**os.environ, "CUDAFIT_WATCH_NVML": "0", "PATH": os.path.dirname(sys.executable)}
        proc = subprocess.Popen([sys.executable, "-m", "cudafit", "watch", "--interval", "0.1", "--", sys.executable, "-c", "import time; print('up', flush=True); time.sleep(60)"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        assert proc.stdout is not None and proc.stdout.readline() == b"up\n"
        time.sleep(0.3)
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=60)
        assert proc.returncode == 128 + signal.SIGTERM and b"cudafit watch:" in err


def test_bad_input_before_anything_runs(tmp_path: Path):
    marker = tmp_path / "ran"
    run_me = f"open({str(marker)!r}, 'w').close()"
    for args, said in [
        (("--interval", "nan", "--", sys.executable, "-c", run_me), "--interval"),
        (("--pid", "999999999"), "no such process"),
        (("-o", str(tmp_path / "missing" / "x.json"), "--", sys.executable, "-c", run_me), "its folder does not exist"),
        (("--jsn", "--", sys.executable, "-c", run_me), "no such option: --jsn"),
    ]:
        done = subprocess.run([sys.executable, "-m", "cudafit", "watch", *args], capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not marker.exists()


def test_workers_that_come_and_go_count_once_reaped(tmp_path: Path):
    hz = os.sysconf("SC_CLK_TCK")
    _proc(tmp_path, {100: (1, 0, 0)}, (0, 0, 0, 0, 0, 0, 0, 0))
    sampler = HostSampler(100, tmp_path)
    sampler.sample(0.0)
    # a worker ran for a second and was reaped: its time is in its parent's cutime (stat field 16)
    rest = ["S", "1"] + ["0"] * 9 + ["0", "0", str(hz), "0"] + ["0"] * 8
    (tmp_path / "100" / "stat").write_text(f"100 (python) {' '.join(rest)}\n")
    sample = sampler.sample(1.0)
    assert sample is not None and sample.cpu_cores == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("environ", "names", "expected"),
    [
        ({}, {0: "A", 1: "A"}, None),
        ({"CUDA_VISIBLE_DEVICES": "1"}, {0: "A", 1: "A"}, {1}),
        ({"CUDA_VISIBLE_DEVICES": "0, 2"}, {0: "A", 1: "A", 2: "A"}, {0, 2}),
        ({"CUDA_VISIBLE_DEVICES": "0,2,-1,1"}, {0: "A", 1: "A", 2: "A"}, {0, 2}),  # CUDA stops at the first that is no device
        ({"CUDA_VISIBLE_DEVICES": "0,7,1"}, {0: "A", 1: "A"}, {0}),  # 7 is no device here
        ({"CUDA_VISIBLE_DEVICES": ""}, {0: "A"}, set()),  # hides every GPU
        ({"CUDA_VISIBLE_DEVICES": "NoDevFiles"}, {0: "A"}, set()),
        ({"CUDA_VISIBLE_DEVICES": "1"}, {0: "A", 1: "B"}, None),  # fastest first: index 1 may be either
        ({"CUDA_VISIBLE_DEVICES": "1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}, {0: "A", 1: "B"}, {1}),
        ({"CUDA_VISIBLE_DEVICES": "GPU-8f6c0a2e-1b3d-4c5e-9f7a-0b1c2d3e4f50"}, {0: "A"}, None),
        ({"CUDA_VISIBLE_DEVICES": "MIG-GPU-8f6c0a2e/1/0"}, {0: "A"}, None),
    ],
)
def test_the_gpus_a_run_can_see(environ, names, expected):
    from cudafit.visible_devices import visible_gpus

    found = visible_gpus(environ, names).gpus
    assert (None if found is None else set(found)) == expected


def test_a_followed_processs_own_environment_is_read(tmp_path: Path):
    from cudafit.visible_devices import environ_of

    (tmp_path / "42").mkdir()
    (tmp_path / "42" / "environ").write_bytes(b"HOME=/root\0CUDA_VISIBLE_DEVICES=3\0EMPTY=\0")
    assert environ_of(42, tmp_path) == {"HOME": "/root", "CUDA_VISIBLE_DEVICES": "3", "EMPTY": ""}
    assert environ_of(43, tmp_path) is None


def test_findings_leave_out_the_gpus_the_run_cannot_see():
    busy_other = [GpuSample(float(t), 1, 15.0, 2000.0, 40000.0) for t in range(40)]
    idle_mine = [GpuSample(float(t), 0, 0.0, 300.0, 40000.0) for t in range(40)]
    w = Watched(("train",), 1, 0, 40.0, tuple(busy_other + idle_mine), (), (), "nvidia-smi", ((0, "A"), (1, "A")))
    assert [f.code for f in judge(w)] == ["WA001", "WA002"]
    # the run's own GPU did nothing: the other job's work hid that
    assert [f.code for f in judge(w._replace(visible=(0,)))] == ["WA005"]


def test_a_run_that_sees_no_gpu_is_told_why():
    samples = tuple(GpuSample(float(t), 0, 0.0, 300.0, 40000.0) for t in range(5))
    w = Watched(("train",), 1, 0, 5.0, samples, (), (), "nvidia-smi", ((0, "A"),), visible=())
    found = judge(w)
    assert [f.code for f in found] == ["WA005"] and "CUDA_VISIBLE_DEVICES" in found[0].message


def _executable(path: Path, text: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def test_the_commands_own_interpreter_is_the_environment_doctor_reads(tmp_path: Path):
    from cudafit.watch.cause import interpreter_of

    python = _executable(tmp_path / "envs" / "a" / "bin" / "python3.12")
    env_python = _executable(tmp_path / "envs" / "b" / "bin" / "python3")
    torchrun = _executable(tmp_path / "envs" / "a" / "bin" / "torchrun", f"#!{python}\nimport sys\n")
    _executable(tmp_path / "tools" / "train", "#!/usr/bin/env -S python3 -u\n")
    _executable(tmp_path / "tools" / "run.sh", "#!/bin/sh\nexec python train.py\n")
    environ = {"PATH": f"{env_python.parent}{os.pathsep}{tmp_path / 'tools'}"}
    assert interpreter_of([str(python), "train.py"], environ) == str(python)
    assert interpreter_of(["python3", "train.py"], environ) == str(env_python)  # found on the command's PATH
    assert interpreter_of([str(torchrun), "--nproc-per-node=2", "train.py"], environ) == str(python)
    assert interpreter_of(["train"], environ) == str(env_python)
    for command in (["run.sh"], ["uv", "run", "train.py"], ["no-such-command"], []):
        assert interpreter_of(command, environ) is None, command


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pseudo-terminals as Linux has them")
def test_a_command_writes_to_a_terminal_where_watch_does():
    # where watch's stdout is a terminal, the command's is one too (Python flushes each line, progress
    # bars draw), its bytes passed as written; its stderr, a pipe here, stays a pipe
    import pty
    import termios

    master, slave = pty.openpty()
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.OPOST  # this test's own terminal passes bytes as written too
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    code = "import sys; print('tty', sys.stdout.isatty(), sys.stderr.isatty()); sys.stdout.write('a\\nb\\r\\n'); sys.exit(3)"
    env = {**os.environ, "CUDAFIT_WATCH_NVML": "0", "PATH": os.path.dirname(sys.executable)}
    args = [sys.executable, "-m", "cudafit", "watch", "--interval", "0.05", "--", sys.executable, "-c", code]
    done = subprocess.Popen(args, stdout=slave, stderr=subprocess.PIPE, env=env)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: every writer closed its end
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert done.wait(timeout=60) == 3
    assert out == b"tty True False\na\nb\r\n"
    assert done.stderr is not None and b"exit 3" in done.stderr.read()


def test_whose_memory_a_gpu_held():
    from cudafit.watch.model import ProcessMemory
    from cudafit.watch.owners import held, others_only

    listed = (ProcessMemory(1.0, 0, 10, 500.0), ProcessMemory(2.0, 0, 10, 900.0), ProcessMemory(2.0, 0, 11, 300.0), ProcessMemory(2.0, 1, 77, 4000.0))
    w = Watched(("train",), 10, 0, 3.0, (), (), (), "nvml", processes=listed, tree=(10, 11))
    assert held(w) == {0: (True, 1200.0, (), None), 1: (False, None, (77,), 4000.0)}  # each process at its own peak
    assert others_only(held(w)) == {1}
    # inside a container the driver's PIDs are the host's: none is the run's, and nothing is told apart
    assert held(w._replace(tree=(5,), pid=5)) == {} and others_only(held(w._replace(tree=(5,), pid=5))) == set()


def test_an_empty_run_beside_another_jobs_memory_is_named_from_its_own():
    from cudafit.watch.model import ProcessMemory

    # GPU 0 half full (another job's 40 GiB); the run busy at 40 % with 1 GiB of its own
    series = tuple(GpuSample(float(t), 0, 40.0, 41984.0, 81920.0) for t in range(30))
    listed = tuple(ProcessMemory(float(t), 0, pid, mib) for t in range(30) for pid, mib in ((10, 1024.0), (99, 40960.0)))
    w = Watched(("train",), 10, 0, 30.0, series, (), (), "nvml", ((0, "NVIDIA H100 80GB HBM3"),), processes=listed, tree=(10,))
    found = {f.code: f for f in judge(w)}
    assert "WA002" in found and found["WA002"].evidence["memory_peak_mib"] == 1024 and found["WA002"].evidence["others_memory_mib"] == 40960
    assert "WA002" not in {f.code for f in judge(w._replace(processes=()))}  # the GPU's own reading: half full


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("GPU-6d2a3c59-8b71-4e0f-9a62-1f5b0c7d9e13, 4242, 10240", (0, 4242, 10240.0)),
        ("GPU-6d2a3c59-8b71-4e0f-9a62-1f5b0c7d9e13, 4242, [N/A]", (0, 4242, None)),  # Windows WDDM
        ("No running processes found", None),
        ("GPU-ffffffff-8b71-4e0f-9a62-1f5b0c7d9e13, 4242, 10", None),  # a GPU not mapped
    ],
)
def test_compute_app_lines_read_as_nvidia_smi_writes_them(line, expected):
    uuids = smi.parse_uuids("0, GPU-6d2a3c59-8b71-4e0f-9a62-1f5b0c7d9e13\n1, GPU-0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9\n")
    assert len(uuids) == 2
    found = smi.parse_app_line(line, 1.5, uuids)
    assert (None if found is None else (found.gpu, found.pid, found.mib)) == expected


def test_nvml_lists_each_gpus_processes():
    from cudafit.watch.nvml import processes

    class Info:
        def __init__(self, pid, used):
            self.pid, self.usedGpuMemory = pid, used

    class Bindings:
        def nvmlDeviceGetComputeRunningProcesses(self, handle):
            if handle == "locked":
                raise RuntimeError("NVMLError_NoPermission")
            return [Info(4242, 2 * 1024 * 1024 * 1024), Info(7, None)]

    found = processes(Bindings(), ["h0", "locked"], 3.0)
    assert [(p.gpu, p.pid, p.mib) for p in found] == [(0, 4242, 2048.0), (0, 7, None)]


def test_the_runs_processes_settle_its_devices():
    from cudafit.visible_devices import run_environs, union, visible_gpus

    names = {0: "A", 1: "A", 2: "A"}
    assert run_environs({}) == []  # nothing read (no /proc)
    assert union(run_environs({1: {}, 2: {}}), names).gpus is None  # unset everywhere: every GPU
    # a shell without it, the Python it starts with it
    assert union(run_environs({1: {}, 2: {"CUDA_VISIBLE_DEVICES": "1"}}), names).gpus == {1}
    # one worker per GPU: the run uses them all
    workers = {1: {"CUDA_VISIBLE_DEVICES": "0"}, 2: {"CUDA_VISIBLE_DEVICES": "2"}}
    assert union(run_environs(workers), names).gpus == {0, 2}
    assert union(run_environs({**workers, 3: {"CUDA_VISIBLE_DEVICES": "GPU-8f6c0a2e"}}), names).gpus is None

    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "\u00b2"}, {0: "A"}).gpus == frozenset()  # a superscript two is no device


def test_memory_not_given_stays_unknown_and_each_process_keeps_one_peak():
    from cudafit.watch.model import ProcessMemory
    from cudafit.watch.owners import held, keep_peak

    peaks: dict = {}
    keep_peak(peaks, [ProcessMemory(float(t), 0, 10, float(t)) for t in range(1000)] + [ProcessMemory(1.0, 0, 77, None)])
    assert len(peaks) == 2 and peaks[(0, 10)].mib == 999.0  # bounded by the processes, not the run's length
    w = Watched(("train",), 10, 0, 3.0, (), (), (), "nvidia-smi", processes=tuple(peaks.values()), tree=(10,))
    assert held(w) == {0: (True, 999.0, (77,), None)}  # Windows' "[N/A]": unknown, not 0
    assert held(w._replace(tree=())) == {}  # without /proc the run's processes are not known


def test_a_launcher_outside_an_environment_is_asked_for_its_prefix(tmp_path: Path):
    from cudafit.watch.cause import environment_of

    shim = _executable(tmp_path / "shims" / "python", f"#!/bin/sh\necho {tmp_path / 'versions' / '3.12.7'}\n")
    assert environment_of(str(shim)) == str(tmp_path / "versions" / "3.12.7")  # pyenv's shim is no environment
    in_env = _executable(tmp_path / "env" / "bin" / "python")
    assert environment_of(str(in_env)) == str(in_env) and environment_of(None) is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")
def test_nvml_that_refuses_a_gpu_falls_back_to_nvidia_smi(tmp_path: Path):
    # under a job's cgroup NVML may refuse a GPU handle: nvidia-smi is read instead, no traceback
    (tmp_path / "pynvml.py").write_text(
        "class NVMLError(Exception):\n    pass\n"
        "def nvmlInit():\n    pass\ndef nvmlShutdown():\n    pass\ndef nvmlDeviceGetCount():\n    return 1\n"
        "def nvmlDeviceGetHandleByIndex(i):\n    raise NVMLError('Insufficient Permissions')\n"
    )
    ticks = recorded("query-healthy-rtxa6000-openad.csv", limit=40)
    done = watch(tmp_path, ticks, lasting(ticks), "--json", environ={"PYTHONPATH": str(tmp_path), "CUDAFIT_WATCH_NVML": "1"})
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
    assert json.loads(done.stdout)["gpu_source"] == "nvidia-smi"


class TestWhatTheNewcomerFound:
    """Input a watch met in a newcomer's test: none of it may cost the command's exit code or end in a traceback."""

    def test_readings_that_are_not_numbers_are_none(self):
        from cudafit.watch.smi import parse_line

        sample, _name = parse_line("0, NVIDIA H100 80GB HBM3, NaN, nan, 81559, inf, 1980", 0.0) or (None, None)
        assert sample is not None and sample.util is None and sample.mem_used is None and sample.power is None and sample.mem_total == 81559
        assert parse_line("-3, NVIDIA H100, 50, 1000, 80000, 300, 1980", 0.0) is None
        assert parse_line("12345678901234567890123, NVIDIA H100, 50, 1000, 80000, 300, 1980", 0.0) is None
        sample, _name = parse_line("0, NVIDIA H100, 150, 12e9, 80000, 300, 1980", 0.0) or (None, None)
        assert sample is not None and sample.util is None and sample.mem_used is None

    def test_bytes_that_are_not_utf8_and_a_huge_pid_end_cleanly(self, tmp_path: Path):
        smi = tmp_path / "bin" / "nvidia-smi"
        smi.parent.mkdir()
        smi.write_bytes(b"#!/bin/sh\nwhile true; do printf '\\377\\376garbage\\n0, GPU, 5\\200, 1, 2, 3, 4\\n'; sleep 0.1; done\n")
        smi.chmod(0o755)
        env = {**os.environ, "CUDAFIT_WATCH_NVML": "0", "PATH": f"{smi.parent}:{os.path.dirname(sys.executable)}:/usr/bin:/bin"}
        done = subprocess.run([sys.executable, "-m", "cudafit", "watch", "--interval", "0.1", "--", sys.executable, "-c", "import time, sys; time.sleep(1); sys.exit(5)"], capture_output=True, env=env, timeout=60)
        assert done.returncode == 5 and b"Traceback" not in done.stderr, done.stderr
        for pid in ("2147483648", "99999999999999999999"):
            done = subprocess.run([sys.executable, "-m", "cudafit", "watch", "--pid", pid], capture_output=True, text=True, timeout=60)
            assert done.returncode == 2 and "no such process" in done.stderr and "Traceback" not in done.stderr, done.stderr

    def test_a_report_that_cannot_be_written_keeps_the_commands_exit_code(self, tmp_path: Path):
        env = {**os.environ, "CUDAFIT_WATCH_NVML": "0", "PATH": os.path.dirname(sys.executable)}
        with open("/dev/full", "wb") as full:
            done = subprocess.run([sys.executable, "-m", "cudafit", "watch", "--", sys.executable, "-c", "import sys; sys.exit(3)"], stderr=full, stdout=subprocess.PIPE, env=env, timeout=60)
        assert done.returncode == 3
        # stdout closed where watch starts (`>&-`): the command still runs and its code is kept
        script = '"$0" -m cudafit watch -- "$0" -c "print(1); import sys; sys.exit(4)" >&-'
        done = subprocess.run(["sh", "-c", script, sys.executable], stderr=subprocess.PIPE, env={**env, "PATH": f"{env['PATH']}:/usr/bin:/bin"}, timeout=60)
        assert done.returncode == 4 and b"Traceback" not in done.stderr, done.stderr

    def test_sigint_from_outside_a_terminal_reaches_the_command(self, tmp_path: Path):
        import signal
        import time

        env = {**os.environ, "CUDAFIT_WATCH_NVML": "0", "PATH": os.path.dirname(sys.executable)}
        child = "import sys, time\ntry:\n    time.sleep(30)\nexcept KeyboardInterrupt:\n    sys.exit(42)\n"
        proc = subprocess.Popen([sys.executable, "-m", "cudafit", "watch", "--", sys.executable, "-c", child], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True)
        time.sleep(2)
        proc.send_signal(signal.SIGINT)  # an IDE's stop button: no terminal sent it to the command
        _out, err = proc.communicate(timeout=60)
        assert proc.returncode == 42 and b"cudafit watch:" in err, err

    def test_out_of_memory_says_what_the_line_says_in_the_frameworks_words(self):
        from cudafit.watch.findings import _oom_advice, _oom_figures

        line = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.11 GiB of which 1.20 GiB is free."
        assert _oom_figures(line) == {"asked_gib": 2.0, "total_gib": 79.11, "free_gib": 1.2}
        assert _oom_figures("Tried to allocate 512.00 MiB") == {"asked_gib": 0.5}
        assert any("tf.keras.mixed_precision" in a for a in _oom_advice("ResourceExhaustedError: OOM when allocating tensor with shape[8192,8192]", True))
        assert not any("torch" in a for a in _oom_advice("ResourceExhaustedError: OOM when allocating tensor", False))
        assert any("XLA_PYTHON_CLIENT_MEM_FRACTION" in a for a in _oom_advice("RESOURCE_EXHAUSTED: Out of memory while trying to allocate 1.00GiB", True))

    def test_no_cuda_gpu_is_a_line_that_says_why_the_gpu_was_not_used(self):
        from cudafit.watch.output import scan

        assert scan("RuntimeError: No CUDA GPUs are available") == ["no-gpu"]
        assert scan("CUDA error: no CUDA-capable device is detected") == ["no-gpu"]
