"""CUDA kernels of the GPU backend, and ``torch.backends.cuda``'s switches.

``kernels/*.cu`` hold the CUDA C sources (``common.cuh`` is prepended to
each); :mod:`fabric.backends.cuda.launch` lists every kernel and dtype it is
built for, compiles them through ``cupy.RawModule`` and picks launch
geometry.  Nothing here imports CuPy until a kernel is needed.  See
``docs/cuda.md``.

The switches (``matmul.allow_tf32``, the ``enable_*_sdp`` flags,
``sdp_kernel`` ...) are PyTorch's ``torch.backends.cuda``: see
:mod:`fabric.backends._flags` for which ones change what fabric computes.

Example::

    >>> import fabric
    >>> fabric.backends.cuda.matmul.allow_tf32
    False
    >>> from fabric.backends.cuda import KERNELS
    >>> sorted(KERNELS)[:2]
    ['activations.cu', 'conv.cu']
"""
from __future__ import annotations

import contextlib
import importlib.util
import warnings

from .. import _flags
from .launch import KERNELS, module_source, name_expressions

__all__ = ["KERNELS", "module_source", "name_expressions", "is_built", "matmul", "cufft_plan_cache",
           "flash_sdp_enabled", "enable_flash_sdp", "mem_efficient_sdp_enabled", "enable_mem_efficient_sdp",
           "math_sdp_enabled", "enable_math_sdp", "cudnn_sdp_enabled", "enable_cudnn_sdp",
           "allow_fp16_bf16_reduction_math_sdp", "fp16_bf16_reduction_math_sdp_allowed", "sdp_kernel",
           "is_flash_attention_available", "preferred_linalg_library", "preferred_blas_library"]


def is_built() -> bool:
    """Whether fabric can run on CUDA here: CuPy is installed (a device may still be missing)."""
    return importlib.util.find_spec("cupy") is not None


class cuBLASModule:
    """``torch.backends.cuda.matmul``: ``allow_tf32`` is the switch of
    ``set_float32_matmul_precision`` (True: ``'high'``) and sets CuPy's float32
    compute type; the reduced-precision-reduction flags are recorded only."""

    _recorded = {"allow_fp16_reduced_precision_reduction": True, "allow_bf16_reduced_precision_reduction": True,
                 "allow_fp16_accumulation": False, "fp32_precision": "none"}

    def __getattr__(self, name):
        if name == "allow_tf32":
            return _flags.allow_tf32()
        if name in self._recorded:
            return self._recorded[name]
        raise AttributeError("Unknown attribute " + name)

    def __setattr__(self, name, value):
        if name == "allow_tf32":
            _flags.set_float32_matmul_precision("high" if value else "highest")
            return
        if name in ("allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"):
            if isinstance(value, (list, tuple)):
                if not value or len(value) > 2 or not all(isinstance(v, bool) for v in value):
                    raise TypeError(f"{name} expects a bool or a tuple/list of one or two bools")
                value = list(value)[0]
            elif not isinstance(value, bool):
                raise TypeError(f"{name} expects a bool or a tuple/list of bools, but got {type(value)!r}")
        if name in self._recorded:
            self._recorded[name] = value
            return
        raise AttributeError("Unknown attribute " + name)


matmul = cuBLASModule()


class cuFFTPlanCache:
    """``torch.backends.cuda.cufft_plan_cache``: CuPy keeps its own FFT plan cache."""

    size = 0
    max_size = 4096

    def clear(self) -> None:
        pass

    def __getitem__(self, device):
        return self


cufft_plan_cache = cuFFTPlanCache()

# scaled_dot_product_attention backends: fabric has one implementation (the
# math one, fused on the GPU); the switches are recorded and read back.
_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True, "fp16_bf16_reduction_math": True}


def flash_sdp_enabled() -> bool:
    return _sdp["flash"]


def enable_flash_sdp(enabled: bool) -> None:
    _sdp["flash"] = bool(enabled)


def mem_efficient_sdp_enabled() -> bool:
    return _sdp["mem_efficient"]


def enable_mem_efficient_sdp(enabled: bool) -> None:
    _sdp["mem_efficient"] = bool(enabled)


def math_sdp_enabled() -> bool:
    return _sdp["math"]


def enable_math_sdp(enabled: bool) -> None:
    _sdp["math"] = bool(enabled)


def cudnn_sdp_enabled() -> bool:
    return _sdp["cudnn"]


def enable_cudnn_sdp(enabled: bool) -> None:
    _sdp["cudnn"] = bool(enabled)


def allow_fp16_bf16_reduction_math_sdp(enabled: bool) -> None:
    _sdp["fp16_bf16_reduction_math"] = bool(enabled)


def fp16_bf16_reduction_math_sdp_allowed() -> bool:
    return _sdp["fp16_bf16_reduction_math"]


def is_flash_attention_available() -> bool:
    """False: fabric has no flash-attention kernel."""
    return False


@contextlib.contextmanager
def sdp_kernel(enable_flash: bool = True, enable_math: bool = True, enable_mem_efficient: bool = True,
               enable_cudnn: bool = True):
    """Deprecated in PyTorch (a FutureWarning, as there): the four switches for the block."""
    warnings.warn("`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this context manager will be "
                  "removed. Please see `torch.nn.attention.sdpa_kernel()` for the new context manager, with updated "
                  "signature.", FutureWarning, stacklevel=3)
    old = dict(_sdp)
    _sdp.update(flash=bool(enable_flash), math=bool(enable_math), mem_efficient=bool(enable_mem_efficient),
                cudnn=bool(enable_cudnn))
    try:
        yield
    finally:
        _sdp.clear()
        _sdp.update(old)


_linalg_library = "default"
_blas_library = "cublas"


def preferred_linalg_library(backend=None) -> str:
    """Record ``'default'``, ``'cusolver'`` or ``'magma'`` (CuPy picks its own); returns the current choice."""
    global _linalg_library
    if backend is not None:
        if backend not in ("default", "cusolver", "magma"):
            raise RuntimeError("Unknown input value. Choose from: default, cusolver, magma.")
        _linalg_library = backend
    return _linalg_library


def preferred_blas_library(backend=None) -> str:
    """Record ``'cublas'``, ``'cublaslt'`` or ``'ck'`` (CuPy calls cuBLAS); returns the current choice."""
    global _blas_library
    if backend is not None:
        if backend not in ("cublas", "cublaslt", "ck"):
            raise RuntimeError("Unknown input value. Choose from: cublas, cublaslt, ck.")
        _blas_library = backend
    return _blas_library
