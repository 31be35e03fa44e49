"""Joining and splitting: cat, stack (the catalogue adds split, chunk, ...).

Example::

    >>> import fabric
    >>> fabric.stack([fabric.zeros(2), fabric.ones(2)]).shape
    fabric.Size([2, 2])
"""
from __future__ import annotations

from .. import _dtype as D
from ..autograd.function import Function, _apply
from .._tensor import Tensor, _wrap_dim
from ._util import xp_of

__all__ = ["cat", "concat", "concatenate", "stack"]


def _prepare(tensors, name):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError(f"{name}(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}(): argument 'tensors' must be tuple of Tensors, but element {i} is "
                            f"{type(t).__name__}")
    dt = D.result_type(*tensors) if len({t._data.dtype for t in tensors}) > 1 else None
    arrays = [t._data if dt is None or t._data.dtype == dt.np else t._data.astype(dt.np) for t in tensors]
    cls0 = arrays[0].__class__
    for t, a in zip(tensors, arrays):
        if a.__class__ is not cls0 or (cls0.__module__ != "numpy" and a.device.id != arrays[0].device.id):
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                               f"{tensors[0].device} and {t.device}!")
    return tensors, arrays


class Cat(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, dim, *xs):
        ctx.dim = dim
        ctx.sizes = [x.shape[dim] for x in xs]
        return xp_of(xs[0]).concatenate(xs, axis=dim)

    @staticmethod
    def backward(ctx, gy):
        out = [None]
        start = 0
        for n in ctx.sizes:
            out.append(gy.narrow(ctx.dim, start, n))
            start += n
        return tuple(out)


def cat(tensors, dim=0, *, out=None):
    """Concatenate along an existing ``dim``. Legacy 1-D empty tensors are skipped, as in PyTorch."""
    tensors, arrays = _prepare(tensors, "cat")
    keep = [i for i, a in enumerate(arrays) if not (a.ndim == 1 and a.shape[0] == 0)] or [0]
    tensors = [tensors[i] for i in keep]
    arrays = [arrays[i] for i in keep]
    ref = arrays[0]
    if ref.ndim == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    d = _wrap_dim(dim, ref.ndim)
    for i, a in enumerate(arrays):
        if a.ndim != ref.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref.ndim} and {a.ndim}")
        for k in range(ref.ndim):
            if k != d and a.shape[k] != ref.shape[k]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size "
                                   f"{ref.shape[k]} but got size {a.shape[k]} for tensor number {i} in the list.")
    r = _apply(Cat, (d, *tensors), (d, *arrays))
    if out is not None:
        from .inplace import copy_into_out

        return copy_into_out(out, r)
    return r


concat = concatenate = cat


class Stack(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, dim, *xs):
        ctx.dim = dim
        return xp_of(xs[0]).stack(xs, axis=dim)

    @staticmethod
    def backward(ctx, gy):
        return (None,) + tuple(gy.unbind(ctx.dim))


def stack(tensors, dim=0, *, out=None):
    """Join tensors of equal shape along a new ``dim``."""
    tensors, arrays = _prepare(tensors, "stack")
    ref = arrays[0]
    for i, a in enumerate(arrays):
        if a.shape != ref.shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(ref.shape)} at entry 0 "
                               f"and {list(a.shape)} at entry {i}")
    d = _wrap_dim(dim, ref.ndim + 1)
    r = _apply(Stack, (d, *tensors), (d, *arrays))
    if out is not None:
        from .inplace import copy_into_out

        return copy_into_out(out, r)
    return r
