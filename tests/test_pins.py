"""Can several frameworks' specifiers on one nvidia-* wheel all hold?"""

from __future__ import annotations

import pytest

from cudafit.pins import clash, combined, satisfiable


@pytest.mark.parametrize(
    "specs, ok",
    [
        (["==9.1.0.70", ">=9.3.0.75,<10"], False),  # torch 2.5.1 vs TensorFlow 2.21 (cuDNN)
        (["==9.10.2.21", ">=9.3.0.75,<10"], True),
        (["==2.27.5", ">=2.27.7,<3.0"], False),  # torch 2.10 vs TensorFlow 2.21 (NCCL)
        ([">=9.1,<10", ">=9.8"], True),
        ([">9.5", "<9.6"], True),  # 9.5.1 fits
        ([">=9.5", "<9.5"], False),
        (["~=12.4.0", ">=12.5"], False),
        (["~=12.4", ">=12.5"], True),
        (["==9.*", ">=9.3"], True),
        (["==8.*", ">=9"], False),
        (["!=9.1.0.70", "==9.1.0.70"], False),
        (["", ">=1"], True),  # no constraint
    ],
)
def test_satisfiable(specs, ok):
    assert satisfiable(specs) is ok


def test_clash_names_the_distribution():
    assert clash({"nvidia-nccl-cu12": "==2.27.5", "x": "==1"}, {"nvidia-nccl-cu12": ">=2.27.7,<3.0"}) == (
        "nvidia-nccl-cu12", "==2.27.5", ">=2.27.7,<3.0")
    assert clash({"a": "==1"}, {"b": "==2"}) is None


def test_combined_prefers_the_exact_pin():
    assert combined([{"nvidia-cudnn-cu12": "==9.10.2.21"}, {"nvidia-cudnn-cu12": ">=9.3,<10"}, {"other": "==1"}]) == {
        "nvidia-cudnn-cu12": "==9.10.2.21"}
