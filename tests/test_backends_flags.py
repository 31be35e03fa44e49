"""``torch.backends`` flag modules, ``torch.accelerator`` and ``torch.version`` on fabric."""
from __future__ import annotations

import doctest
import importlib
import warnings

import pytest

import fabric
from fabric.backends import _flags

B = fabric.backends


@pytest.fixture(autouse=True)
def _restore_flags():
    saved = (dict(B.cudnn._state), dict(B.mkldnn._state), dict(B.opt_einsum._state), dict(B.cuda._sdp),
             fabric.get_float32_matmul_precision(), fabric.are_deterministic_algorithms_enabled())
    yield
    B.cudnn._state.clear(); B.cudnn._state.update(saved[0])  # noqa: E702
    B.mkldnn._state.clear(); B.mkldnn._state.update(saved[1])  # noqa: E702
    B.opt_einsum._state.clear(); B.opt_einsum._state.update(saved[2])  # noqa: E702
    B.cuda._sdp.clear(); B.cuda._sdp.update(saved[3])  # noqa: E702
    fabric.set_float32_matmul_precision(saved[4])
    fabric.use_deterministic_algorithms(saved[5])


def test_cudnn_defaults_and_assignment():
    c = B.cudnn
    assert (c.enabled, c.benchmark, c.deterministic, c.allow_tf32, c.benchmark_limit) == (True, False, False, True, 10)
    assert c.is_available() is False and c.version() is None and c.is_acceptable(fabric.zeros(1)) is False
    c.benchmark = True
    c.deterministic = True
    assert c.benchmark and c.deterministic


def test_cudnn_deterministic_asks_for_deterministic_kernels_without_changing_the_global_switch():
    assert not _flags.deterministic_kernels()
    B.cudnn.deterministic = True
    assert _flags.deterministic_kernels() and not fabric.are_deterministic_algorithms_enabled()
    B.cudnn.deterministic = False
    fabric.use_deterministic_algorithms(True)
    assert _flags.deterministic_kernels() and not B.cudnn.deterministic


def test_cudnn_flags_context_restores():
    with B.cudnn.flags(enabled=False, benchmark=True, deterministic=True, allow_tf32=False):
        assert (B.cudnn.enabled, B.cudnn.benchmark, B.cudnn.deterministic, B.cudnn.allow_tf32) == (False, True, True,
                                                                                                  False)
    assert (B.cudnn.enabled, B.cudnn.benchmark, B.cudnn.deterministic, B.cudnn.allow_tf32) == (True, False, False, True)
    orig = B.cudnn.set_flags(_benchmark=True)
    assert B.cudnn.benchmark and orig[1] is False
    B.cudnn.set_flags(*orig)
    assert B.cudnn.benchmark is False


def test_matmul_allow_tf32_is_the_float32_matmul_precision():
    m = B.cuda.matmul
    assert m.allow_tf32 is False and fabric.get_float32_matmul_precision() == "highest"
    m.allow_tf32 = True
    assert fabric.get_float32_matmul_precision() == "high"
    fabric.set_float32_matmul_precision("highest")
    assert m.allow_tf32 is False
    fabric.set_float32_matmul_precision("medium")
    assert m.allow_tf32 is True
    with pytest.raises(RuntimeError, match="Invalid precision"):
        fabric.set_float32_matmul_precision("low")
    assert fabric.get_float32_matmul_precision() == "medium"


def test_matmul_reduced_precision_flags_and_unknown_names():
    m = B.cuda.matmul
    assert m.allow_fp16_reduced_precision_reduction is True and m.allow_bf16_reduced_precision_reduction is True
    m.allow_fp16_reduced_precision_reduction = False
    assert m.allow_fp16_reduced_precision_reduction is False
    m.allow_bf16_reduced_precision_reduction = (False, True)
    assert m.allow_bf16_reduced_precision_reduction is False
    m.allow_fp16_reduced_precision_reduction = True
    m.allow_bf16_reduced_precision_reduction = True
    with pytest.raises(TypeError):
        m.allow_fp16_reduced_precision_reduction = 1
    with pytest.raises(AttributeError, match="Unknown attribute foo"):
        m.foo = 1
    with pytest.raises(AttributeError, match="Unknown attribute foo"):
        m.foo  # noqa: B018


def test_sdp_switches_and_the_deprecated_context():
    c = B.cuda
    assert c.flash_sdp_enabled() and c.mem_efficient_sdp_enabled() and c.math_sdp_enabled() and c.cudnn_sdp_enabled()
    c.enable_flash_sdp(False)
    assert not c.flash_sdp_enabled()
    with pytest.warns(FutureWarning, match="sdp_kernel"), c.sdp_kernel(enable_flash=True, enable_math=False,
                                                                         enable_mem_efficient=False):
        assert c.flash_sdp_enabled() and not c.math_sdp_enabled() and not c.mem_efficient_sdp_enabled()
    assert not c.flash_sdp_enabled() and c.math_sdp_enabled()
    assert c.is_flash_attention_available() is False
    assert c.preferred_linalg_library() == "default" and c.preferred_blas_library() == "cublas"
    with pytest.raises(RuntimeError):
        c.preferred_linalg_library("lapack")


def test_mps_mkldnn_cpu_opt_einsum():
    assert B.mps.is_available() is False and B.mps.is_built() is False
    assert B.mkldnn.is_available() is False and B.mkldnn.enabled is True
    with B.mkldnn.flags(enabled=False):
        assert B.mkldnn.enabled is False
    assert B.mkldnn.enabled is True
    assert B.cpu.get_cpu_capability() in ("DEFAULT", "AVX2", "AVX512", "SVE256")
    assert B.opt_einsum.enabled == B.opt_einsum.is_available()
    if not B.opt_einsum.is_available():
        assert B.opt_einsum.strategy is None
        with pytest.raises(ValueError, match="opt_einsum is not available"):
            B.opt_einsum.strategy = "greedy"


@pytest.mark.torch
def test_flag_defaults_match_torch():
    import torch

    tb = torch.backends
    assert (B.cudnn.enabled, B.cudnn.benchmark, B.cudnn.deterministic, B.cudnn.allow_tf32) == (
        tb.cudnn.enabled, tb.cudnn.benchmark, tb.cudnn.deterministic, tb.cudnn.allow_tf32)
    assert B.cuda.matmul.allow_tf32 == tb.cuda.matmul.allow_tf32
    assert B.cuda.matmul.allow_fp16_reduced_precision_reduction == tb.cuda.matmul.allow_fp16_reduced_precision_reduction
    assert (B.cuda.flash_sdp_enabled(), B.cuda.math_sdp_enabled()) == (tb.cuda.flash_sdp_enabled(),
                                                                       tb.cuda.math_sdp_enabled())
    assert (B.mps.is_available(), B.mkldnn.enabled, B.opt_einsum.enabled) == (
        tb.mps.is_available(), tb.mkldnn.enabled, tb.opt_einsum.enabled)
    assert B.cpu.get_cpu_capability() == tb.cpu.get_cpu_capability()


def test_accelerator_without_a_gpu_answers_as_pytorch():
    acc = fabric.accelerator
    if acc.is_available():
        pytest.skip("a GPU is visible")
    assert acc.device_count() == 0
    assert acc.current_accelerator(check_available=True) is None
    for fn, args in [(acc.current_device_index, ()), (acc.set_device_index, (0,)), (acc.synchronize, ()),
                     (acc.memory_allocated, ()), (acc.empty_cache, ())]:
        with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available."):
            fn(*args)
    with acc.device_index(None):
        pass
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert acc.is_available() is False


@pytest.mark.cuda
def test_accelerator_with_a_gpu():
    acc = fabric.accelerator
    assert acc.is_available() and acc.device_count() >= 1
    assert acc.current_accelerator() == fabric.device("cuda")
    acc.set_device_index(0)
    assert acc.current_device_index() == 0
    x = fabric.ones(1000, device=acc.current_accelerator()) * 2
    acc.synchronize()
    assert x.sum().item() == 2000.0
    assert fabric.float32 in acc.get_device_capability()["supported_dtypes"]


@pytest.mark.cuda
def test_tf32_switch_sets_cupys_compute_type():
    import cupy
    import numpy as np
    from cupy._core import _routines_linalg as linalg

    fabric.backends.get_cupy_backend()
    B.cuda.matmul.allow_tf32 = True
    assert linalg.get_compute_type(np.float32) == linalg.COMPUTE_TYPE_TF32
    a = fabric.randn(256, 256, device="cuda")
    ref = a.double() @ a.double()
    tf32_err = ((a @ a).double() - ref).abs().max().item()
    B.cuda.matmul.allow_tf32 = False
    assert linalg.get_compute_type(np.float32) != linalg.COMPUTE_TYPE_TF32
    fp32_err = ((a @ a).double() - ref).abs().max().item()
    assert fp32_err < tf32_err  # TF32 keeps 10 mantissa bits: visibly less exact
    cupy.cuda.Device().synchronize()


def test_version():
    v = fabric.version
    assert v.__version__ == fabric.__version__ and v.pytorch == "2.13.0"
    assert v.git_version == "Unknown" and v.hip is None and v.debug is False
    assert v.cuda is None or v.cuda.count(".") == 1


@pytest.mark.parametrize("name", ["fabric.backends._flags", "fabric.backends.cudnn", "fabric.backends.mps",
                                  "fabric.backends.mkldnn", "fabric.backends.cpu", "fabric.backends.opt_einsum",
                                  "fabric.backends.cuda", "fabric.accelerator", "fabric.version", "fabric._layout",
                                  "fabric._shared_memory", "fabric.multiprocessing",
                                  "fabric.multiprocessing.reductions"])
def test_docstring_examples(name):
    assert doctest.testmod(importlib.import_module(name)).failed == 0


def test_docs_code_blocks_run():
    import os
    import re

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "pytorch_programs.md")
    with open(path) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    assert len(blocks) >= 5
    for code in blocks:
        exec(compile(code, "docs/pytorch_programs.md", "exec"), {})
