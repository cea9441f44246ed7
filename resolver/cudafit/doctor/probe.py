"""`doctor --import`: import the installed frameworks in the environment's own Python, in a child
process with a timeout, and report what they saw (a GPU, its capability, a tiny kernel that ran)
beside what doctor predicted from the files. The only part of doctor that runs framework code."""

from __future__ import annotations

import json
from typing import NamedTuple, Optional

from cudafit import detection as detect
from cudafit.doctor.model import Environment, Finding

# Run by the environment's interpreter; prints one JSON object. Each framework is probed on its
# own, so one that fails to import does not hide the others.
_SCRIPT = r"""
import json, sys
# `python -c` imports from the current folder first: a source checkout of torch there is not the
# environment's torch.
if sys.path and sys.path[0] == "":
    del sys.path[0]

def torch_probe():
    import torch
    seen = {"version": torch.__version__, "cuda": torch.version.cuda, "gpu": bool(torch.cuda.is_available())}
    if seen["gpu"]:
        seen["devices"] = ["%d.%d" % torch.cuda.get_device_capability(i) for i in range(torch.cuda.device_count())]
        seen["arch_list"] = list(torch.cuda.get_arch_list())
        seen["kernel"] = float((torch.ones(8, device="cuda") * 2).sum().item()) == 16.0
    return seen

def tensorflow_probe():
    import tensorflow as tf
    gpus = tf.config.list_physical_devices("GPU")
    seen = {"version": tf.__version__, "gpu": bool(gpus), "devices": [g.name for g in gpus]}
    if gpus:
        with tf.device("/GPU:0"):
            seen["kernel"] = float(tf.reduce_sum(tf.ones([8]) * 2).numpy()) == 16.0
    return seen

def jax_probe():
    import jax, jax.numpy as jnp
    devices = jax.devices()
    seen = {"version": jax.__version__, "gpu": any(d.platform == "gpu" for d in devices), "devices": [str(d) for d in devices]}
    if seen["gpu"]:
        seen["kernel"] = float((jnp.ones(8) * 2).sum()) == 16.0
    return seen

def onnxruntime_probe():
    import onnxruntime as ort
    providers = ort.get_available_providers()
    return {"version": ort.__version__, "gpu": "CUDAExecutionProvider" in providers, "devices": providers}

probes = {"torch": torch_probe, "tensorflow": tensorflow_probe, "jax": jax_probe, "onnxruntime-gpu": onnxruntime_probe}
out = {}
for family in sys.argv[1:]:
    try:
        out[family] = probes[family]()
    except BaseException as exc:
        out[family] = {"gpu": False, "error": ("%s: %s" % (type(exc).__name__, exc))[:400]}
print(json.dumps(out))
"""


class Observed(NamedTuple):
    family: str
    gpu: bool
    predicted: bool
    said: str  # what the import showed, in words
    raw: dict


def run_probe(env: Environment, timeout: float, run: Optional[detect.Runner] = None) -> tuple[list[Observed], Optional[str]]:
    """What each installed framework showed when imported; or an error sentence when the probe
    itself could not run (no interpreter, a timeout, garbled output)."""
    families = [b.family for b in env.builds]
    if not families:
        return [], None
    if not env.interpreter:
        return [], "--import: the environment's Python was not found; nothing was imported"
    run = run or detect.run_command
    result = run([env.interpreter, "-c", _SCRIPT, *families], timeout)
    if result.timed_out:
        return [], f"--import: importing the frameworks took longer than {timeout:.0f} s; stopped"
    if result.returncode != 0:
        first = (result.stderr or result.stdout).strip().splitlines()
        return [], f"--import: {env.interpreter} failed ({first[-1] if first else 'exit ' + str(result.returncode)})"
    try:
        seen = json.loads(result.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return [], "--import: the probe printed no result"
    return [_observed(family, seen.get(family, {})) for family in families], None


def _observed(family: str, raw: dict) -> Observed:
    if "error" in raw:
        said = f"import failed: {raw['error']}"
    elif raw.get("gpu"):
        devices = ", ".join(str(d) for d in raw.get("devices", []))
        ran = raw.get("kernel")
        kernel = "; a kernel ran" if ran is True else "; a kernel gave a wrong result" if ran is False else ""
        said = f"sees a GPU ({devices}){kernel}"
    else:
        said = "sees no GPU"
    return Observed(family, bool(raw.get("gpu")) and raw.get("kernel", True) is not False, False, said, raw)


def compare(observed: list[Observed], findings: tuple[Finding, ...], env: Environment) -> tuple[list[Observed], list[Finding]]:
    """Each observation with doctor's prediction beside it, and a finding where they differ."""
    out = []
    extra = []
    for seen in observed:
        build = next(b for b in env.builds if b.family == seen.family)
        if "error" in seen.raw:
            out.append(seen._replace(predicted=build.kind == "cuda"))
            extra.append(
                Finding(
                    "DR082",
                    "error",
                    f"{build.label} fails to import: {seen.raw['error']}.",
                    "Reinstall it (the commands above, or `cudafit install`); an error naming a .so file is a library the loader cannot find.",
                )
            )
            continue
        blamed = any(f.severity == "error" and build.label in f.message for f in findings)
        predicted = build.kind == "cuda" and not blamed and not any(f.code in _MACHINE_WIDE for f in findings)
        seen = seen._replace(predicted=predicted)
        out.append(seen)
        if seen.gpu != predicted:
            expected = "use the GPU" if predicted else "not use the GPU"
            extra.append(
                Finding(
                    "DR080",
                    "warning",
                    f"Doctor predicted that {build.label} would {expected}, but importing it {seen.said}.",
                    "Report this to cudafit with `cudafit doctor --json --import` output: a check is missing or wrong.",
                )
            )
    return out, extra


_MACHINE_WIDE = {"DR001", "DR002", "DR003", "DR004", "DR062", "DR064"}
