"""For the type checker only: every provider module of the registry satisfies the Provider
protocol (mypy checks a module assigned to a protocol type). Nothing imports this module at run
time; tests/test_frameworks.py holds it equal to the registry."""

from __future__ import annotations

from cudafit.frameworks import bitsandbytes, flash_attn, jax, onnxruntime, pytorch, tensorflow, torchao, vllm, xformers
from cudafit.frameworks.protocol import Provider

# one assignment each: mypy names the module that does not conform
_pytorch: Provider = pytorch
_tensorflow: Provider = tensorflow
_jax: Provider = jax
_onnxruntime: Provider = onnxruntime
_xformers: Provider = xformers
_flash_attn: Provider = flash_attn
_vllm: Provider = vllm
_torchao: Provider = torchao
_bitsandbytes: Provider = bitsandbytes
PROVIDERS = (_pytorch, _tensorflow, _jax, _onnxruntime, _xformers, _flash_attn, _vllm, _torchao, _bitsandbytes)
