"""Issue 24: GPUs people still own, from NVIDIA's CUDA GPUs pages (legacy rows included) with the
names the driver's supported-GPU list gives them; each row says which source makes it right."""

from __future__ import annotations

import pytest

from cudafit.gpus import lookup_gpu


@pytest.mark.parametrize(
    ("name", "cc", "segment"),
    [
        ("NVIDIA GeForce GTX 780", (3, 5), "geforce"),  # legacy page 3.5; driver list: GK110
        ("GeForce GTX 780 Ti", (3, 5), "geforce"),
        ("NVIDIA GeForce GTX 960", (5, 2), "geforce"),  # legacy page 5.2; GM206
        ("NVIDIA GeForce GTX 960M", (5, 0), "geforce-laptop"),  # a GM107 part: not the desktop 960's 5.2
        ("Tesla M40 24GB", (5, 2), "datacenter"),  # driver's name for the 24 GB M40
        ("Tesla K40c", (3, 5), "datacenter"),  # a form of the Tesla K40 (3.5)
        ("Tesla P100-PCIE-16GB", (6, 0), "datacenter"),
        ("NVIDIA GeForce GTX 1060 6GB", (6, 1), "geforce"),
        ("NVIDIA GeForce GTX 1070 with Max-Q Design", (6, 1), "geforce-laptop"),
        ("Quadro K620", (5, 0), "workstation"),
        ("GeForce GTX 680M", (3, 0), "geforce-laptop"),
        ("NVIDIA Jetson Nano", (5, 3), "jetson"),
    ],
)
def test_legacy_gpus_are_known_by_their_driver_names(matrices, name, cc, segment):
    model, warning = lookup_gpu(matrices.gpus, name)
    assert model is not None and warning is None
    assert model.compute_capability == cc and model.segment == segment


@pytest.mark.parametrize("name", ["GeForce GT 730", "Quadro M620", "GeForce 910M"])
def test_names_whose_chip_is_in_dispute_stay_unknown(matrices, name):
    # GT 730: the driver gives the name to Fermi and Kepler chips; Quadro M620, GeForce 910M:
    # NVIDIA's number and the PCI-id chip disagree. Unknown beats a wrong compute capability.
    assert lookup_gpu(matrices.gpus, name) == (None, None)


def test_memory_only_where_the_name_states_it(matrices):
    assert lookup_gpu(matrices.gpus, "Quadro M6000 24GB")[0].memory_gb == 24
    assert lookup_gpu(matrices.gpus, "Quadro M6000")[0].memory_gb is None
