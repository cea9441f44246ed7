"""`resolve --inside` worded: text, JSON, and a Dockerfile that starts from the image."""

from __future__ import annotations

from packaging.version import Version

from cudafit.containers.inside import Inside, caveats, install_steps, libraries_only
from cudafit.report import SCHEMA_VERSION, resolution_json

_OURS = ("chose torch ", "ruled out torch ", "passed over torch ", "pins shared between frameworks")


def _image_line(inside: Inside) -> str:
    image = inside.image
    grades = dict(image.grades)

    def graded(fact: str, value: object) -> str:
        return f"{value} ({grades[fact]})" if fact in grades else str(value)

    return f"inside {image.name}: torch {graded('torch', image.torch)}, CUDA {graded('cuda', image.cuda)}, Python {graded('python', image.python)}"


def _host_line(inside: Inside) -> str:
    if inside.host is not None:
        runs = {True: "the image runs here", False: "the image does not run here", None: "whether the image runs here is not known"}[inside.host.runs]
        line = f"host: {runs}: {inside.host.why}"
        return line + (f"; {_assumed(inside)}" if inside.assumed_driver else "")
    if inside.assumed_driver:
        return f"host: {_assumed(inside)}"
    return "host: its driver is not given"


def _assumed(inside: Inside) -> str:
    cuda = inside.image.cuda
    return f"{inside.assumed_why}: the libraries are answered for driver {inside.assumed_driver}, the one CUDA {cuda.major}.{cuda.minor} needs"


def _stand_in(inside: Inside) -> list[str]:
    """Which torch build stood for the image's, where that is not plain: another CUDA minor than the
    image's, or after others fit no set."""
    if not inside.matched:
        return []
    version, cuda = inside.torch_version, inside.image.cuda
    before = [f"torch {version}+{tag}" for tag in inside.tried[:-1]]
    if not inside.resolution.ok:
        if len(inside.tried) < 2:
            return []
        tried = ", ".join(f"torch {version}+{tag}" for tag in inside.tried)
        return [f"tried in turn for the image's torch (its own build, against its CUDA {cuda}): {tried}; none fits (the conflicts above are the first's)"]
    ours = Version(inside.stand_in_cuda) if inside.stand_in_cuda else None
    if not before and ours is not None and (ours.major, ours.minor) == (cuda.major, cuda.minor):
        return []  # the image's own CUDA minor, found first: nothing to say beside "fits torch ..."
    line = f"matched against torch {inside.matched} (CUDA {inside.stand_in_cuda}), standing for the image's torch (its own build, against its CUDA {cuda})"
    return [line + (f"; tried before it, fitting no set: {', '.join(before)}" if before else "")]


def text(inside: Inside) -> str:
    res = inside.resolution
    lines = [_image_line(inside), _host_line(inside)]
    if not inside.ok:
        if inside.host is not None and inside.host.runs is False:
            lines.append("the image cannot run on this host, so nothing installed in it can")
        if not res.ok:
            lines.append("no consistent set of builds in cudafit's data fits the image's torch:")
            lines += [f"  - {c}" for c in res.conflicts]
            lines += _stand_in(inside)
            lines += list(inside.coverage)
        return "\n".join(lines) + "\n"
    lines += _stand_in(inside)
    for c in inside.libraries:
        stack = f"CUDA {c.cuda}" if c.cuda else "no CUDA"
        lines.append(f"chosen: {', '.join(p.requirement for p in c.packages)}  ({stack}; fits torch {inside.matched})")
    lines.append("install, in the image (uv keeps the image's torch; pip cannot override a dependency's pin):")
    lines += ["  python -m pip install uv", *(f"  {step}" for step in install_steps(inside))]
    notes = caveats(inside)
    if notes:
        lines.append("notes:")
        lines += [f"  - {n}" for n in notes]
    lines.append("why:")
    lines += [f"  - {n}" for n in res.notes if not n.startswith(_OURS)]
    warnings = libraries_only(inside).warnings
    if warnings:
        lines.append("warnings:")
        lines += [f"  - {w}" for w in warnings]
    return "\n".join(lines) + "\n"


def as_json(inside: Inside) -> dict:
    image = inside.image
    res = libraries_only(inside)
    body = resolution_json(res)
    for key in ("commands", "cuda", "cudnn"):
        body.pop(key, None)
    host = inside.host
    return {
        "schema_version": SCHEMA_VERSION,
        **body,
        "ok": inside.ok,
        "inside": {
            "image": image.name,
            "torch": str(image.torch),
            "torch_release": str(image.torch_release),
            "cuda": str(image.cuda),
            "python": image.python,
            "grades": dict(image.grades),
            # the stand-in the answer was solved against; null where none fits
            "matched_build": f"torch=={inside.matched}" if inside.matched and inside.resolution.ok else None,
            "stand_ins_tried": [f"torch=={inside.torch_version}+{tag}" for tag in inside.tried],
            "constraint_file": inside.constraint,
            "coverage": list(inside.coverage),
        },
        "host": {"runs": host.runs, "why": host.why, "driver_min": host.driver_min or None} if host is not None else None,
        "assumed_driver": inside.assumed_driver or None,
        "assumed_driver_why": inside.assumed_why or None,
        "commands": ["python -m pip install uv", *install_steps(inside)] if inside.ok else [],
        "caveats": caveats(inside) if inside.ok else [],
        "notes": [n for n in body.get("notes", []) if not n.startswith(_OURS)],
    }


def dockerfile(inside: Inside) -> str:
    """FROM the image, then the install: the image's torch stays."""
    image = inside.image
    if image.container is None:
        raise ValueError("a described image has no reference to start FROM")
    installed = ", ".join(p.requirement for c in inside.libraries for p in c.packages)
    lines = ["# syntax=docker/dockerfile:1", f"# {installed} in {image.name} (torch {image.torch}, CUDA {image.cuda}); generated by cudafit"]
    floor = (inside.host.driver_min if inside.host is not None else "") or inside.assumed_driver
    if floor:
        lines.append(f"# the host needs NVIDIA driver {floor} or later (data-center GPUs: the older branches NVIDIA lists, through forward compatibility)")
    lines += [f"FROM {image.name}", "RUN python -m pip install uv"]
    lines += [f"RUN {step}" for step in install_steps(inside)]
    return "\n".join(lines) + "\n"
