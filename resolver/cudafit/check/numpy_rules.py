"""CF021: a framework release built against NumPy 1.x (matrices/numpy-abi.toml, read from its
wheels) whose metadata lets pip take NumPy 2, in a file that does not keep numpy below 2: pip then
installs NumPy 2 beside it, and importing it (or, for torch, every NumPy conversion) fails. Where
the file pins numpy itself (a lockfile's exact version, a `numpy<2`), that pin decides."""

from __future__ import annotations

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from cudafit.check.model import BUILD_SYSTEM, Document, Finding, Pin
from cudafit.check.rules import finding
from cudafit.numpy_abi import built_on_numpy1
from cudafit.records import Matrices, TorchRelease

# the packages a file pins for each family's release (TensorFlow's CPU and Intel packages too)
_FAMILY = {
    "torch": "torch",
    "tensorflow": "tensorflow",
    "tensorflow-cpu": "tensorflow",
    "tensorflow-gpu": "tensorflow",
    "tensorflow-intel": "tensorflow",
    "jax": "jax",
    "jaxlib": "jax",
    "onnxruntime-gpu": "onnxruntime-gpu",
}
_NUMPY_2 = ("2.0.0", "2.2.6", "2.4.0")  # releases of NumPy 2 a bound may admit


def numpy_one_builds(doc: Document, matrices: Matrices, releases: dict[str, TorchRelease]) -> list[Finding]:
    if not matrices.numpy1 or doc.kind == "conda-env":  # conda's own packages pin their numpy
        return []
    out = []
    for pin in doc.pins:
        family = _FAMILY.get(pin.name)
        if family is None or pin.version is None or pin.constraint or pin.group == BUILD_SYSTEM:
            continue
        fact = built_on_numpy1(matrices.numpy1, family, pin.version, None)  # every platform's fact
        if fact is None:
            continue
        numpys = _numpy_pins(doc, pin)
        if any(not _admits_2(p) for p in numpys):
            continue  # the file keeps numpy below 2
        if fact.effect == "import":
            # its own metadata requires numpy with no cap: pip brings NumPy 2 with it
            said = f"{pin.name} {pin.version} was built against NumPy 1.x and its metadata lets pip install NumPy 2, with which importing it fails"
        else:
            # torch requires no numpy: NumPy 2 comes where the file asks for a numpy that admits it
            if not numpys:
                continue
            asked = f"{numpys[0].name}{numpys[0].specifier}"
            said = f"{pin.name} {pin.version} was built against NumPy 1.x, and the file's '{asked}' admits NumPy 2, with which its NumPy conversions fail"
        out.append(
            finding("CF021", pin.span, said + "; nothing in the file keeps numpy below 2", "add numpy<2 beside it, or take a release built against NumPy 2")
        )
    return out


def _numpy_pins(doc: Document, framework: Pin) -> list[Pin]:
    """The numpy requirements of the framework pin's set (the base set, or its own extra or group)."""
    return [p for p in doc.pins if p.name == "numpy" and p.group in ("", framework.group) and p.group != BUILD_SYSTEM]


def _admits_2(pin: Pin) -> bool:
    try:
        spec = SpecifierSet(pin.specifier)
    except InvalidSpecifier:
        return True
    return any(spec.contains(v, prereleases=True) for v in _NUMPY_2)
