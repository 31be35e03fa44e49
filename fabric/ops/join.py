"""Joining and splitting: cat, stack and their h/v/d/column variants;
split, chunk, tensor_split and h/v/dsplit (which return views).

Example::

    >>> import fabric
    >>> fabric.stack([fabric.zeros(2), fabric.ones(2)]).shape
    fabric.Size([2, 2])
    >>> [t.tolist() for t in fabric.arange(5).split(2)]
    [[0, 1], [2, 3], [4]]
"""
from __future__ import annotations

import builtins
import itertools
from collections.abc import Sequence

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor, _wrap_dim
from ..autograd.function import Function, _apply
from ._registry import declare_op
from ._registry import public_names as declared_names
from ._util import xp_of

__all__: list[str] = []  # + the declared ops (end of module)


def _prepare(tensors, name):
    tensors = list(tensors)
    if not tensors:
        if name == "cat":
            raise ValueError("torch.cat(): expected a non-empty list of Tensors")
        raise RuntimeError(f"{name} expects a non-empty TensorList")
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

    @staticmethod
    def jvp(ctx, _, *ts):
        ref = next(t for t in ts if t is not None)
        parts = []
        for t, n in zip(ts, ctx.sizes):   # an input without a tangent contributes zeros
            parts.append(t if t is not None else ref.new_zeros(ref.shape[:ctx.dim] + (n,) + ref.shape[ctx.dim + 1:]))
        return cat(parts, ctx.dim)


@declare_op(aliases=("concat", "concatenate"), method=False)
def cat(tensors: Sequence[Tensor], dim: int = 0, *, out: Tensor | None = None) -> Tensor:
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

    @staticmethod
    def jvp(ctx, _, *ts):
        ref = next(t for t in ts if t is not None)
        return stack([t if t is not None else ref.new_zeros(ref.shape) for t in ts], ctx.dim)


@declare_op(method=False)
def stack(tensors: Sequence[Tensor], dim: int = 0, *, out: Tensor | None = None) -> Tensor:
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


def _seq(tensors, name):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{name}(): argument 'tensors' must be tuple of Tensors, not {type(tensors).__name__}")
    return list(tensors)


@declare_op(method=False)
def hstack(tensors: Sequence[Tensor], *, out: Tensor | None = None) -> Tensor:
    """Concatenate along dim 1 (dim 0 for 1-D tensors); 0-d tensors count as 1-D.

    Example::

        >>> fabric.hstack([fabric.tensor([1, 2]), fabric.tensor([3])])
        tensor([1, 2, 3])
    """
    from .shape import atleast_1d

    ts = [atleast_1d(t) for t in _seq(tensors, "hstack")]
    return cat(ts, 0 if ts and ts[0]._data.ndim == 1 else 1, out=out)


@declare_op(aliases=("row_stack",), method=False)
def vstack(tensors: Sequence[Tensor], *, out: Tensor | None = None) -> Tensor:
    """Concatenate along dim 0 after making every tensor at least 2-D.

    Example::

        >>> fabric.vstack([fabric.tensor([1, 2]), fabric.tensor([3, 4])])
        tensor([[1, 2],
                [3, 4]])
    """
    from .shape import atleast_2d

    return cat([atleast_2d(t) for t in _seq(tensors, "vstack")], 0, out=out)


row_stack = vstack


@declare_op(method=False)
def dstack(tensors: Sequence[Tensor], *, out: Tensor | None = None) -> Tensor:
    """Concatenate along dim 2 after making every tensor at least 3-D."""
    from .shape import atleast_3d

    return cat([atleast_3d(t) for t in _seq(tensors, "dstack")], 2, out=out)


@declare_op(method=False)
def column_stack(tensors: Sequence[Tensor], *, out: Tensor | None = None) -> Tensor:
    """Stack 0-/1-D tensors as columns (and 2-D ones as they are) along dim 1.

    Example::

        >>> fabric.column_stack([fabric.tensor([1, 2]), fabric.tensor([3, 4])])
        tensor([[1, 3],
                [2, 4]])
    """
    from .shape import reshape

    ts = [reshape(t, (t._data.size, 1)) if t._data.ndim <= 1 else t for t in _seq(tensors, "column_stack")]
    return cat(ts, 1, out=out)


class Split(Function):
    """Pieces ``x[start:end]`` along ``dim`` (views); backward concatenates."""
    _array_forward = True

    @staticmethod
    def forward(ctx, x, dim, bounds):
        ctx.dim, ctx.bounds, ctx.shape = dim, bounds, x.shape
        lead = (slice(None),) * dim
        return tuple(x[lead + (slice(a, b),)] for a, b in bounds)

    @staticmethod
    def backward(ctx, *grads):
        return _apply(SplitBackward, (ctx.shape, ctx.dim, ctx.bounds, *grads),
                      (ctx.shape, ctx.dim, ctx.bounds, *(g._data for g in grads))), None, None

    @staticmethod
    def jvp(ctx, t, *_):
        return tuple(t.narrow(ctx.dim, a, b - a) for a, b in ctx.bounds)


class SplitBackward(Function):
    """The pieces' gradients added into zeros of the input shape (pieces
    may overlap or leave gaps: tensor_split with unsorted indices)."""
    _array_forward = True

    @staticmethod
    def forward(ctx, shape, dim, bounds, *grads):
        ctx.dim, ctx.bounds = dim, bounds
        lead = (slice(None),) * dim
        xp = xp_of(grads[0])
        if bounds[0][0] == 0 and bounds[-1][1] == shape[dim] and all(
                b0 == a1 for (_, a1), (b0, _) in itertools.pairwise(bounds)):
            return xp.concatenate(grads, axis=dim)
        z = xp.zeros(shape, grads[0].dtype)
        for (a, b), g in zip(bounds, grads):
            z[lead + (slice(a, b),)] += g
        return z

    @staticmethod
    def backward(ctx, gg):
        return (None, None, None) + _apply(Split, (gg, ctx.dim, ctx.bounds), (gg._data, ctx.dim, ctx.bounds))


def _split_at(input, dim, bounds):
    from .shape import _mark_views

    if not input._data.ndim:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    r = _apply(Split, (input, dim, tuple(bounds)), (input._data, dim, tuple(bounds)))
    return _mark_views(input, r, "SplitBackward0")


@declare_op()
def split_with_sizes(input: Tensor, split_sizes: Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """Split along ``dim`` into pieces of the given sizes (views)."""
    d = _wrap_dim(dim, input._data.ndim)
    n = input._data.shape[d] if input._data.ndim else 1
    sizes = [builtins.int(s) for s in split_sizes]
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries, but got "
                           f"split_sizes={sizes}")
    if sum(sizes) != n:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                           f"dimension {d}), but got split_sizes={sizes}")
    bounds, start = [], 0
    for s in sizes:
        bounds.append((start, start + s))
        start += s
    return _split_at(input, d, bounds)


@declare_op()
def split(tensor: Tensor, split_size_or_sections: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """Split along ``dim`` into pieces of ``split_size`` (the last may be
    smaller) or of the listed sizes; the pieces are views.

    Example::

        >>> [t.tolist() for t in fabric.arange(5).split([1, 4])]
        [[0], [1, 2, 3, 4]]
    """
    if isinstance(split_size_or_sections, (list, tuple)):
        return split_with_sizes(tensor, split_size_or_sections, dim)
    s = builtins.int(split_size_or_sections)
    d = _wrap_dim(dim, tensor._data.ndim)
    n = tensor._data.shape[d] if tensor._data.ndim else 1
    if s < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={s}")
    if s == 0 and n != 0:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
    if n == 0:
        return _split_at(tensor, d, [(0, 0)])
    return _split_at(tensor, d, [(a, min(a + s, n)) for a in range(0, n, s)])


@declare_op()
def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """Split into ``chunks`` pieces of equal size (the last may be smaller;
    there may be fewer pieces), as views.

    Example::

        >>> [t.tolist() for t in fabric.arange(5).chunk(3)]
        [[0, 1], [2, 3], [4]]
    """
    chunks = builtins.int(chunks)
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    if input._data.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    d = _wrap_dim(dim, input._data.ndim)
    n = input._data.shape[d]
    if n == 0:
        return _split_at(input, d, [(0, 0)] * chunks)
    return split(input, -(-n // chunks), d)


@declare_op()
def tensor_split(input: Tensor, indices_or_sections: int | Sequence[int] | Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """Split into ``sections`` nearly equal pieces (the first ``n % sections``
    one longer), or at the given ``indices``, as views.

    Example::

        >>> [t.tolist() for t in fabric.arange(7).tensor_split(3)]
        [[0, 1, 2], [3, 4], [5, 6]]
        >>> [t.tolist() for t in fabric.arange(7).tensor_split([1, 5])]
        [[0], [1, 2, 3, 4], [5, 6]]
    """
    if input._data.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    d = _wrap_dim(dim, input._data.ndim)
    n = input._data.shape[d]
    ios = indices_or_sections
    if isinstance(ios, Tensor):
        if ios._data.dtype != np.int64 or ios.is_cuda:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to have int64 dtype on the CPU")
        if ios._data.ndim > 1:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                               f"one-dimensional tensor, but got a tensor with {ios._data.ndim} dims")
        ios = ios.item() if ios._data.ndim == 0 else ios.tolist()
    if isinstance(ios, (list, tuple)):
        idx = []
        for i in ios:
            i = builtins.int(i)
            if i < 0:
                i = max(i + n, 0)
            idx.append(min(i, n))
        edges = [0] + idx + [n]
        return _split_at(input, d, [(a, max(a, b)) for a, b in itertools.pairwise(edges)])
    s = builtins.int(ios)
    if s <= 0:
        raise RuntimeError(f"number of sections must be larger than 0, got {s}")
    q, r = divmod(n, s)
    bounds, start = [], 0
    for k in range(s):
        size = q + (1 if k < r else 0)
        bounds.append((start, start + size))
        start += size
    return _split_at(input, d, bounds)


def _dir_split(input, sections, dim, name, min_dims):
    nd = input._data.ndim
    if nd < min_dims:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dims} dimension, but got a tensor with "
                           f"{nd} dimensions!")
    if isinstance(sections, (builtins.int, np.integer)):
        n = input._data.shape[dim]
        if sections == 0 or n % sections:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the size of the dimension "
                               f"{n} is not divisible by the split_size {sections}!")
    return tensor_split(input, sections, dim)


@declare_op()
def hsplit(input: Tensor, indices_or_sections: int | Sequence[int]) -> tuple[Tensor, ...]:
    """:func:`tensor_split` along dim 1 (dim 0 for 1-D); an int must divide evenly."""
    return _dir_split(input, indices_or_sections, 1 if input._data.ndim > 1 else 0, "hsplit", 1)


@declare_op()
def vsplit(input: Tensor, indices_or_sections: int | Sequence[int]) -> tuple[Tensor, ...]:
    """:func:`tensor_split` along dim 0 of a tensor with at least 2 dims."""
    return _dir_split(input, indices_or_sections, 0, "vsplit", 2)


@declare_op()
def dsplit(input: Tensor, indices_or_sections: int | Sequence[int]) -> tuple[Tensor, ...]:
    """:func:`tensor_split` along dim 2 of a tensor with at least 3 dims."""
    return _dir_split(input, indices_or_sections, 2, "dsplit", 3)




# --- unsafe splits ------------------------------------------------------------------------------

class UnsafeSplit(Split):
    """Like ``split`` but the pieces are not tracked as views (they share
    memory with the input; modifying one in place is allowed, as in PyTorch)."""
    _node_name = "UnsafeSplitBackward0"


def _unsafe(input, pieces, dim):
    if not pieces:
        return ()
    d = _wrap_dim(dim, input._data.ndim)
    bounds, start = [], 0
    for p in pieces:
        bounds.append((start, start + p._data.shape[d]))
        start += p._data.shape[d]
    bounds = tuple(bounds)
    return _apply(UnsafeSplit, (input, d, bounds), (input._data, d, bounds))


@declare_op()
def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """:func:`fabric.chunk` without view tracking."""
    return _unsafe(input, chunk(input.detach(), chunks, dim), dim)


@declare_op()
def unsafe_split(input: Tensor, split_size: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """:func:`fabric.split` without view tracking."""
    return _unsafe(input, split(input.detach(), split_size, dim), dim)


@declare_op()
def unsafe_split_with_sizes(input: Tensor, split_sizes: Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """:func:`fabric.split_with_sizes` without view tracking."""
    return _unsafe(input, split_with_sizes(input.detach(), split_sizes, dim), dim)


__all__ += declared_names(__name__)
