"""Reductions: sum, mean (the catalogue adds the rest here).

Example::

    >>> import fabric
    >>> fabric.ones(2, 3).sum(1)
    tensor([3., 3.])
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from ..autograd.function import Function, _apply
from ._util import normalize_dims

__all__ = ["sum", "mean"]


def _expand_back(gy, shape, dims, keepdim):
    """Broadcast a reduced gradient back to the input ``shape``."""
    if not keepdim and dims:
        kept = list(shape)
        for d in dims:
            kept[d] = 1
        gy = gy.reshape(kept)
    return gy.expand(shape)


def _reduce_dtype(x, dtype):
    if dtype is not None:
        return D.to_dtype(dtype).np
    if x.dtype.kind in "biu":
        return np.dtype(np.int64)
    return None


class Sum(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, dims, keepdim, dtype):
        ctx.shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        if dtype is None and x.dtype == np.float16:
            return x.sum(axis=dims, keepdims=keepdim, dtype=np.float32).astype(np.float16)
        return x.sum(axis=dims, keepdims=keepdim, dtype=dtype)

    @staticmethod
    def backward(ctx, gy):
        return _expand_back(gy, ctx.shape, ctx.dims, ctx.keepdim), None, None, None


class Mean(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, dims, keepdim, dtype):
        ctx.shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        n = 1
        for d in dims:
            n *= x.shape[d]
        ctx.n = n
        if dtype is None and x.dtype == np.float16:
            return x.mean(axis=dims, keepdims=keepdim, dtype=np.float32).astype(np.float16)
        if n == 0:
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                return x.mean(axis=dims, keepdims=keepdim, dtype=dtype)
        return x.mean(axis=dims, keepdims=keepdim, dtype=dtype)

    @staticmethod
    def backward(ctx, gy):
        return _expand_back(gy / ctx.n, ctx.shape, ctx.dims, ctx.keepdim), None, None, None


def sum(input, dim=None, keepdim=False, *, dtype=None, out=None, axis=None):
    """Sum over ``dim`` (int, tuple, or None for all); ints and bools sum as int64."""
    if axis is not None:
        dim = axis
    x = input._data
    dims = normalize_dims(dim, x.ndim)
    r = _apply(Sum, (input, dims, keepdim, dtype), (x, dims, keepdim, _reduce_dtype(x, dtype)))
    if out is not None:
        from .inplace import copy_into_out

        return copy_into_out(out, r)
    return r


def mean(input, dim=None, keepdim=False, *, dtype=None, out=None, axis=None):
    """Arithmetic mean over ``dim``; floating inputs only, as in PyTorch."""
    if axis is not None:
        dim = axis
    x = input._data
    if dtype is None and x.dtype.kind != "f":
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a floating point or "
                           f"complex dtype. Got: {_torch_name(input.dtype)}")
    dims = normalize_dims(dim, x.ndim)
    dt = D.to_dtype(dtype).np if dtype is not None else None
    if dt is not None and x.dtype != dt:
        x = x.astype(dt)
    r = _apply(Mean, (input, dims, keepdim, dtype), (x, dims, keepdim, None))
    if out is not None:
        from .inplace import copy_into_out

        return copy_into_out(out, r)
    return r


def _torch_name(dt):
    return {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
            "float32": "Float", "float64": "Double", "float16": "Half"}.get(dt.name, dt.name)
