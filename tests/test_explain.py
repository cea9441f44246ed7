"""explain.py words the solver's findings; a clash is a value with one sentence per kind."""

from __future__ import annotations

import pytest

from cudafit.answers import Clash
from cudafit.explain import word_clash

A, B = "torch 2.10.0+cu128", "tensorflow 2.21.0+cu12"


@pytest.mark.parametrize("clash, named, anonymous", [
    (Clash("cuda-major", A, B, "12", "13"),
     f"CUDA 12 ({A}) and CUDA 13 ({B}) in one environment (allow it with --mixed-cuda)",
     f"CUDA 12 and CUDA 13 ({B}) in one environment (allow it with --mixed-cuda)"),
    (Clash("cudnn-major", A, B, "8.9.2", "9"),
     f"cuDNN 8.9.2 ({A}) and cuDNN 9 ({B}) are different majors",
     f"cuDNN 8.9.2 and cuDNN 9 ({B}) are different majors"),
    (Clash("cudnn-unknown", A, B, unknown_is_a=True),
     f"the cuDNN of {A} is unknown in cudafit's data; cannot confirm one cuDNN major",
     "the cuDNN of this build is unknown in cudafit's data; cannot confirm one cuDNN major"),
    (Clash("pins-unknown", A, B, unknown_is_a=False),
     f"the nvidia-* pins of {B} are unknown in cudafit's data; cannot confirm it installs beside {A}",
     f"the nvidia-* pins of {B} are unknown in cudafit's data; cannot confirm it installs beside this build"),
    (Clash("pin", A, B, "==2.27.5", ">=2.27.7,<3.0", "nvidia-nccl-cu12"),
     f"nvidia-nccl-cu12: ==2.27.5 ({A}) vs >=2.27.7,<3.0 ({B})",
     f"nvidia-nccl-cu12: ==2.27.5 vs >=2.27.7,<3.0 ({B})"),
])
def test_word_clash(clash, named, anonymous):
    assert word_clash(clash) == named
    assert word_clash(clash, name_a=False) == anonymous
