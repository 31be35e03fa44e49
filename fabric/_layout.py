"""Layouts and memory formats: ``fabric.strided``, ``fabric.channels_last`` ...

A tensor's *memory format* is the order its elements lie in memory. fabric
keeps PyTorch's strides for each: ``contiguous_format`` is row-major (NCHW
for images), ``channels_last`` stores a 4-D NCHW tensor as NHWC (strides
``(H*W*C, 1, W*C, C)``), ``channels_last_3d`` a 5-D NCDHW tensor as NDHWC.
``preserve_format`` (what ``clone``, ``*_like`` and ``to`` default to) keeps
the input's order. :func:`is_contiguous_in` is PyTorch's test, which skips
size-1 dimensions; :func:`copy_in_format` copies an array (NumPy or CuPy)
into a format.

Example::

    >>> import fabric
    >>> x = fabric.zeros(2, 3, 4, 5).contiguous(memory_format=fabric.channels_last)
    >>> x.stride(), x.is_contiguous(memory_format=fabric.channels_last)
    ((60, 1, 15, 3), True)
"""
from __future__ import annotations

import sys

import numpy as np

__all__ = ["layout", "memory_format", "strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr",
           "sparse_bsc", "jagged", "contiguous_format", "channels_last", "channels_last_3d", "preserve_format",
           "is_contiguous_in", "copy_in_format", "check_format"]


class layout:
    """A tensor layout (``fabric.strided`` for every dense tensor)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"fabric.{self.name}"

    def __reduce__(self):
        return self.name


class memory_format:
    """The order a dense tensor's elements lie in memory."""

    __slots__ = ("name", "order")

    def __init__(self, name: str, order):
        self.name = name
        self.order = order  # the dimension order from outermost to innermost in memory, or None

    def __repr__(self) -> str:
        return f"fabric.{self.name}"

    def __reduce__(self):
        return self.name


strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")
jagged = layout("jagged")

contiguous_format = memory_format("contiguous_format", None)
channels_last = memory_format("channels_last", (0, 2, 3, 1))
channels_last_3d = memory_format("channels_last_3d", (0, 2, 3, 4, 1))
preserve_format = memory_format("preserve_format", None)


def check_format(fmt, ndim: int):
    """``fmt`` as a memory format for a tensor of ``ndim`` dims (None:
    contiguous); RuntimeError where PyTorch refuses it."""
    if fmt is None:
        return contiguous_format
    if not isinstance(fmt, memory_format):
        raise TypeError(f"memory_format must be torch.memory_format, not {type(fmt).__name__}")
    if fmt is channels_last and ndim != 4:
        raise RuntimeError("required rank 4 tensor to use channels_last format")
    if fmt is channels_last_3d and ndim != 5:
        raise RuntimeError("required rank 5 tensor to use channels_last_3d format")
    return fmt


def is_contiguous_in(shape, strides, fmt) -> bool:
    """PyTorch's contiguity test of ``strides`` (in elements) for ``fmt``:
    walking the dims from innermost to outermost, every dim of size > 1 has
    the stride of the product of the inner sizes."""
    order = fmt.order
    if order is None:
        if 0 in shape:
            return True
        order = range(len(shape))
    elif len(shape) != len(order):
        return False
    expected = 1
    for d in reversed(order):
        size = shape[d]
        if size != 1:
            if strides[d] != expected:
                return False
            expected *= size
    return True


def dense_order(shape, strides) -> list:
    """The dims of a tensor from outermost to innermost in memory, as
    PyTorch's ``infer_dense_strides`` orders them for a ``preserve_format``
    copy: by stride, equal strides putting the smaller size inside, and a
    zero stride (an expanded dim) keeping its row-major place."""
    perm = list(range(len(shape)))[::-1]  # innermost first

    def should_swap(d0, d1) -> int:
        s0, s1 = strides[d0], strides[d1]
        if s0 == 0 or s1 == 0:
            return 0
        if s0 != s1:
            return -1 if s0 < s1 else 1
        return 1 if shape[d0] > shape[d1] else 0

    for i in range(1, len(perm)):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    return perm[::-1]


def channels_last_strides(a):
    """``a``'s strides in elements when ``a`` (4-D or 5-D) has exactly the
    strides of a channels-last copy and is not also row-major; else None."""
    order = channels_last.order if a.ndim == 4 else channels_last_3d.order
    item = a.itemsize
    strides = a.strides
    expected = item
    for d in reversed(order):
        if strides[d] != expected:
            return None
        expected *= max(a.shape[d], 1)
    return tuple(s // item for s in strides)


def like_order(a, fmt):
    """The memory order (outermost dim first) of a new tensor made like array
    ``a`` in ``fmt`` (None or ``preserve_format``: ``a``'s own order, as
    PyTorch's ``*_like`` do); None when that is row-major."""
    if fmt is None or fmt is preserve_format:
        if a.flags.c_contiguous:
            return None
        order = dense_order(a.shape, [s // a.itemsize for s in a.strides])
    else:
        order = check_format(fmt, a.ndim).order
    return None if order is None or list(order) == list(range(a.ndim)) else list(order)


def inverse_order(order) -> list:
    inverse = [0] * len(order)
    for i, d in enumerate(order):
        inverse[d] = i
    return inverse


def copy_in_format(a, fmt):
    """A copy of array ``a`` (NumPy or CuPy) laid out in ``fmt``
    (``preserve_format``: dense, in the order of ``a``'s strides, as PyTorch)."""
    if fmt is preserve_format:
        if a.flags.c_contiguous:
            return a.copy()
        item = a.itemsize
        order = dense_order(a.shape, [s // item for s in a.strides])
    else:
        order = fmt.order
    if order is None:
        return a.copy(order="C")
    inverse = [0] * len(order)
    for i, d in enumerate(order):
        inverse[d] = i
    out = a.transpose(order).copy(order="C").transpose(inverse)
    if out.size == 0:  # NumPy gives empty arrays zero strides; PyTorch keeps the format's
        strides, acc = [0] * a.ndim, a.itemsize
        for d in reversed(order):
            strides[d] = acc
            acc *= max(a.shape[d], 1)
        xp = np if isinstance(a, np.ndarray) else sys.modules["cupy"]
        out = xp.lib.stride_tricks.as_strided(out, a.shape, tuple(strides))
    return out
