"""Pooling: max / average / adaptive / power-average pooling and max unpooling.

Every window op loops over the kernel *offsets* (``prod(kernel_size)``
strided slices of the padded input, each covering all output positions at
once), never over output pixels; non-overlapping windows (the usual
``kernel_size == stride``) are one reshape and reduction instead.
``max_pool1d/2d`` run the backend's fused ``max_pool2d`` (a CUDA kernel on
the GPU); the gradient of every max pool is the backend's
``max_pool2d_backward`` scatter into the argmax positions.

Each op and its gradient are a pair of linear ``Function``s that are each
other's adjoints (avg pool / its transpose, index scatter / index gather), so
gradients of any order work.  Adaptive average pooling is a product with a
per-dimension averaging matrix (two or three small GEMMs).

Example::

    >>> import fabric
    >>> import fabric.nn.functional as F
    >>> x = fabric.arange(16.0).reshape(1, 1, 4, 4)
    >>> F.max_pool2d(x, 2)
    tensor([[[[ 5.,  7.],
              [13., 15.]]]])
    >>> F.avg_pool2d(x, 2)
    tensor([[[[ 2.5000,  4.5000],
              [10.5000, 12.5000]]]])
"""
from __future__ import annotations

import builtins
import itertools

import numpy as np

from ... import ops as _ops
from ..._tensor import Tensor
from ...autograd.function import Function, _apply
from ...backends import backend_of
from ...backends.fused import pool_output_size
from ...ops._registry import declare_op
from ...ops._util import xp_of
from ._conv import _TYPE_NAMES, _Geom, _prod

__all__ = [
    "max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "max_pool2d_with_indices",
    "max_pool3d_with_indices", "max_unpool1d", "max_unpool2d", "max_unpool3d", "avg_pool1d", "avg_pool2d",
    "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
    "adaptive_max_pool2d", "adaptive_max_pool3d", "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices", "lp_pool1d", "lp_pool2d", "lp_pool3d",
]

_WORDS = {1: "one", 2: "two", 3: "three"}


# --------------------------------------------------------------------------
# windows over a padded input
# --------------------------------------------------------------------------
def _extent(geom):
    """Per dim, the padded length the windows need (input + padding + ceil overhang)."""
    return tuple(max((o - 1) * s + d * (k - 1) + 1, i + p)
                 for o, s, d, k, i, p in zip(geom.out_size, geom.stride, geom.dilation, geom.kernel, geom.in_size,
                                             geom.pad))


def _interior(geom):
    return (slice(None), slice(None)) + tuple(slice(p, p + i) for p, i in zip(geom.pad, geom.in_size))


def _padded(x, geom, fill):
    """``x`` inside a ``fill``-valued array of the windows' extent (``x``
    itself when no padding is needed)."""
    ext = _extent(geom)
    if ext == geom.in_size and not any(geom.pad):
        return x
    xp = xp_of(x)
    out = xp.full(x.shape[:2] + ext, fill, x.dtype)
    out[_interior(geom)] = x
    return out


def _offset_slices(geom):
    """``(offset number, slice)``: for each kernel offset, the strided slice
    of the padded input holding that offset's element of every window."""
    full = (slice(None), slice(None))
    for j, offs in enumerate(itertools.product(*(range(k) for k in geom.kernel))):
        yield j, full + tuple(slice(o * d, o * d + s * (m - 1) + 1, s)
                              for o, d, s, m in zip(offs, geom.dilation, geom.stride, geom.out_size))


def _tiles(geom) -> bool:
    """Large non-overlapping, unpadded, undilated windows (kernel == stride,
    e.g. global pooling): pool by a reshape and one reduction instead of a
    loop over many offsets (for small kernels the loop is faster)."""
    return (geom.kernel == geom.stride and not any(geom.pad) and all(d == 1 for d in geom.dilation)
            and all(o * k <= i for o, k, i in zip(geom.out_size, geom.kernel, geom.in_size))
            and _prod(geom.kernel) > 16)


def _tile_view_shape(lead, geom):
    return tuple(lead) + tuple(v for o, k in zip(geom.out_size, geom.kernel) for v in (o, k))


def _tile_view(x, geom):
    """(N, C, o1, k1, o2, k2, ...) view of the part of ``x`` the tiles cover."""
    crop = x[(slice(None), slice(None)) + tuple(slice(0, o * k) for o, k in zip(geom.out_size, geom.kernel))]
    return crop.reshape(_tile_view_shape(x.shape[:2], geom))


def _tile_axes(nd):
    return tuple(3 + 2 * i for i in range(nd))


# --------------------------------------------------------------------------
# max pooling
# --------------------------------------------------------------------------
def _lowest(dtype):
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def _first_offsets(geom, xp):
    """Per output position, the number of its window's first in-bounds
    element (broadcastable to the output's spatial shape)."""
    nd = geom.nd
    num = None
    for i in range(nd):
        k, s, p, d = geom.kernel[i], geom.stride[i], geom.pad[i], geom.dilation[i]
        start = np.arange(geom.out_size[i], dtype=np.int64) * s - p
        first = np.minimum(np.maximum(-(start // d), 0), k - 1).reshape((-1,) + (1,) * (nd - 1 - i))
        num = first if num is None else num * k + first
    return xp.asarray(num)


def _plane_index(kidx, geom):
    """Flat positions (in each input plane) of the window elements numbered
    ``kidx`` (kernel offset numbers, C order over the kernel dims)."""
    xp = xp_of(kidx)
    nd = geom.nd
    flat = None
    rem = kidx.astype(np.int64, copy=False)
    plane_strides = [_prod(geom.in_size[i + 1:]) for i in range(nd)]
    for i in range(nd - 1, -1, -1):
        k, s, p, d = geom.kernel[i], geom.stride[i], geom.pad[i], geom.dilation[i]
        shape = (geom.out_size[i],) + (1,) * (nd - 1 - i)
        start = xp.asarray((np.arange(geom.out_size[i], dtype=np.int64) * s - p).reshape(shape))
        pos = (start + (rem % k) * d) * plane_strides[i]
        rem = rem // k
        flat = pos if flat is None else flat + pos
    return flat


def _offset_dtype(count):
    """The smallest dtype for kernel offset numbers ``0 .. count - 1``."""
    return np.uint8 if count <= 256 else np.int16 if count <= 2 ** 15 else np.int64


def _dim_slice(geom, i, o):
    """Along spatial dim ``i``: the strided slice holding kernel offset
    ``o`` of every window."""
    s, d, m = geom.stride[i], geom.dilation[i], geom.out_size[i]
    return slice(o * d, o * d + s * (m - 1) + 1, s)


def _max_count(xp, views, kt):
    """The elementwise maximum of ``views`` (NaN propagates) and, per
    element, the number of the first view holding it, counted rather than
    searched: ``sum_j prod_{i<=j} (v_i != max)`` - a compare, an ``and`` and
    an add per view, no ``where`` (branchy, several times slower on random
    masks); the last view needs no compare.  A NaN maximum counts as a miss
    everywhere (fixed by the caller)."""
    if len(views) == 1:
        return views[0], xp.zeros(views[0].shape, kt)
    best = xp.maximum(views[0], views[1])
    for v in views[2:]:
        xp.maximum(best, v, out=best)
    miss = views[0] != best
    arg = miss.astype(kt)
    if len(views) > 2:
        ne = xp.empty(best.shape, bool)
        add = arg.view(np.uint8) if kt is np.uint8 else arg
        step = miss.view(np.uint8) if kt is np.uint8 else miss
        for v in views[1:-1]:
            xp.not_equal(v, best, out=ne)
            miss &= ne
            add += step
    return best, arg


def _max_pool_offsets(x, geom):
    """Max pooling by loops over kernel offsets: the maximum with
    ``xp.maximum`` (NaN propagates), then the number of the window element
    that holds it - the first one, or for a NaN the last NaN, and for a
    window of only the lowest value its first in-bounds element (PyTorch's
    rules; padding never wins).  Returns ``(values, offset numbers)``.

    Windows of more than 4 elements are reduced one spatial dim at a time,
    last first (for 3x3 windows 3 + 3 offsets instead of 9): each stage keeps the winning
    offset along its dim; the first maximum of a window in C order is the
    first maximum of the first sub-window (row) holding the window's
    maximum, and its last NaN the last NaN of the last row holding one, so
    the stages' offsets compose into the flat offset number."""
    xp = xp_of(x)
    nd = geom.nd
    kt = _offset_dtype(_prod(geom.kernel))
    low = _lowest(x.dtype)
    xpad = _padded(x, geom, low)
    full = (slice(None),) * 2
    stages = []     # (views, maximum, offset numbers) per stage
    a = xpad
    separable = nd > 1 and _prod(geom.kernel) > 4
    if not separable:   # small windows: one stage over all offsets is faster
        views = [a[sl] for _, sl in _offset_slices(geom)]
        a, arg = _max_count(xp, views, kt)
        stages.append((views, a, arg))
    for i in range(nd - 1, -1, -1) if separable else ():
        lead = full + (slice(None),) * i
        views = [a[lead + (_dim_slice(geom, i, o),)] for o in range(geom.kernel[i])]
        a, arg = _max_count(xp, views, kt)
        stages.append((views, a, arg))
    best = a if any(k > 1 for k in geom.kernel) else xp.array(a)
    if x.dtype.kind == "f" and xp.isnan(best).any():
        # a NaN maximum: the last NaN wins (the count gave the last offset)
        for n, (views, red, arg) in enumerate(stages):
            nan = xp.isnan(red)
            for j, v in enumerate(views):
                arg = xp.where(nan & xp.isnan(v), kt(j), arg)
            stages[n] = (views, red, arg)
    args = [st[2] for st in stages[::-1]]        # args[i]: dim i, dims < i not yet reduced
    kidx = args[0]
    for i in range(1, nd if separable else 1):
        # the dim-i offset of the row the window's winner lies in
        sel = None
        for p, offs in enumerate(itertools.product(*(range(k) for k in geom.kernel[:i]))):
            view = args[i][full + tuple(_dim_slice(geom, m, o) for m, o in enumerate(offs))]
            if _prod(geom.kernel[:i]) == 1:
                sel = view
                break
            hit = kidx == p
            term = (hit.view(np.uint8) if kt is np.uint8 else hit) * view
            sel = term if sel is None else xp.add(sel, term, out=sel)
        kidx = kidx * kt(geom.kernel[i]) + sel
    if xpad is not x:
        # a window of only the lowest value matched its first element, which
        # may be padding; without padding every element is in bounds
        lowest = best == low
        if lowest.any():
            kidx = xp.where(lowest, _first_offsets(geom, xp).astype(kt), kidx)
    return best, kidx


def _max_pool_tiles(x, geom):
    """Max pooling of large non-overlapping tiles: one transpose and one
    argmax (NaN: the last NaN of a window, as PyTorch reports)."""
    xp = xp_of(x)
    nd = geom.nd
    v = _tile_view(x, geom)
    axes = (0, 1) + tuple(2 + 2 * i for i in range(nd)) + _tile_axes(nd)
    w = v.transpose(axes).reshape(x.shape[:2] + geom.out_size + (-1,))
    k = xp.argmax(w, axis=-1)
    if w.dtype.kind == "f":
        nan = xp.isnan(w)
        if nan.any():
            last_nan = w.shape[-1] - 1 - xp.argmax(nan[..., ::-1], axis=-1)
            k = xp.where(nan.any(axis=-1), last_nan, k)
    y = xp.take_along_axis(w, k[..., None], axis=-1)[..., 0]
    return y, k


def _tiles_scatter(gy, kidx, geom, in_shape):
    """:func:`_offset_scatter` for :func:`_tiles` windows: one put along the
    flattened tile axis, then the inverse of the tile transpose."""
    xp = xp_of(gy)
    nd = geom.nd
    lead = tuple(in_shape[:2])
    hit = xp.arange(_prod(geom.kernel), dtype=kidx.dtype) == kidx[..., None]
    w = xp.where(hit, gy[..., None], gy.dtype.type(0)).reshape(lead + geom.out_size + geom.kernel)
    # (N, C, o1.., k1..) -> (N, C, o1, k1, o2, k2, ...)
    axes = (0, 1) + tuple(v for i in range(nd) for v in (2 + i, 2 + nd + i))
    tiles = w.transpose(axes).reshape(lead + tuple(o * k for o, k in zip(geom.out_size, geom.kernel)))
    if tiles.shape[2:] == geom.in_size:
        return xp.ascontiguousarray(tiles)
    out = xp.zeros(tuple(in_shape), gy.dtype)
    out[(slice(None), slice(None)) + tuple(slice(0, v) for v in tiles.shape[2:])] = tiles
    return out


def _disjoint(geom) -> bool:
    """No two windows share an input element (e.g. ``kernel_size == stride``)."""
    return all(s >= d * (k - 1) + 1 for s, d, k in zip(geom.stride, geom.dilation, geom.kernel))


def _covers(geom, ext) -> bool:
    """The windows are gap-free tiles of the whole padded extent."""
    return all(s == k and d == 1 and o * k == e
               for s, d, k, o, e in zip(geom.stride, geom.dilation, geom.kernel, geom.out_size, ext))


def _offset_scatter(gy, kidx, geom, in_shape):
    """The gradient of max pooling from offset numbers: per kernel offset,
    ``gy`` where that offset won added into a strided slice (no atomics,
    no index arrays).  The offsets run last to first, so an element several
    windows chose sums their gradients in output order, bit for bit
    PyTorch's sum.  Disjoint windows write each slice once (``0 + g``, so a
    -0.0 comes out +0.0 as in PyTorch's ``+=``), with no zero fill when they
    tile the input."""
    xp = xp_of(gy)
    if _tiles(geom):
        return _tiles_scatter(gy, kidx, geom, in_shape)
    ext = _extent(geom)
    disjoint = _disjoint(geom)
    alloc = xp.empty if disjoint and _covers(geom, ext) else xp.zeros
    gpad = alloc(tuple(in_shape[:2]) + ext, gy.dtype)
    finite = bool(xp.isfinite(gy).all()) if gy.dtype.kind == "f" else True
    hit = xp.empty(kidx.shape, bool)
    part = xp.empty(gy.shape, gy.dtype)
    zero = gy.dtype.type(0)
    for j, sl in reversed(list(_offset_slices(geom))):
        xp.equal(kidx, j, out=hit)
        if finite:
            xp.multiply(gy, hit, out=part)
        else:       # inf * 0 would be NaN
            part = xp.where(hit, gy, zero)
        dst = gpad[sl]
        xp.add(zero if disjoint else dst, part, out=dst)
    if ext == geom.in_size and not any(geom.pad):
        return gpad
    return xp.ascontiguousarray(gpad[_interior(geom)])


def _fused_max_pool(x, geom):
    """The backend's fused max_pool2d (a CUDA kernel on the GPU); 1-D is H = 1."""
    n, c = x.shape[:2]
    k, s, p, d = geom.kernel, geom.stride, geom.pad, geom.dilation
    x4 = x
    if geom.nd == 1:
        x4 = x.reshape(n, c, 1, x.shape[2])
        k, s, p, d = (1,) + k, (1,) + s, (0,) + p, (1,) + d
    ceil = any(o != (i + 2 * pp - dd * (kk - 1) - 1) // ss + 1
               for o, i, pp, dd, kk, ss in zip(geom.out_size, geom.in_size, geom.pad, geom.dilation, geom.kernel,
                                               geom.stride))
    y, idx = backend_of(x).max_pool2d(x4, k, s, p, d, ceil)
    return y.reshape(x.shape[:2] + geom.out_size), idx.reshape(x.shape[:2] + geom.out_size)


def _use_fused(x, geom) -> bool:
    # NumPy runs the offset loop (faster than the fused reference); the numba
    # CPU kernels and other backends the fused kernel where its contract covers the case
    return ((x.__class__ is not np.ndarray or backend_of(x).kernels_enabled)
            and geom.nd <= 2 and x.dtype.kind == "f"
            and all(p <= k // 2 for p, k in zip(geom.pad, geom.kernel)))


def _plane_scatter(gy, idx, in_shape):
    """Zeros of ``in_shape`` with ``gy`` added at the flat plane positions ``idx``."""
    n, c = in_shape[:2]
    p = _prod(in_shape[2:])
    g4 = gy.reshape(n, c, 1, -1)
    i4 = idx.reshape(n, c, 1, -1)
    return backend_of(gy).max_pool2d_backward(g4, i4, (n, c, 1, p)).reshape(in_shape)


def _plane_gather(x, idx):
    n, c = x.shape[:2]
    xp = xp_of(x)
    return xp.take_along_axis(x.reshape(n, c, -1), idx.reshape(n, c, -1), axis=2).reshape(idx.shape)


class _MaxPool(Function):
    """Max pooling; returns ``(values, indices)`` when ``want_idx``, else the values."""

    _array_forward = True

    @staticmethod
    def forward(ctx, x, geom, want_idx):
        ctx.geom, ctx.in_shape = geom, x.shape
        if _use_fused(x, geom):
            y, idx = _fused_max_pool(x, geom)
            ctx.idx, ctx.kidx = idx, None
        else:
            y, kidx = (_max_pool_tiles if _tiles(geom) else _max_pool_offsets)(x, geom)
            idx = _plane_index(kidx, geom) if want_idx else None
            ctx.idx, ctx.kidx = idx, kidx
        return (y, idx) if want_idx else y

    @staticmethod
    def backward(ctx, gy, _gidx=None):
        if ctx.kidx is not None:
            args = (ctx.kidx, ctx.geom, ctx.in_shape)
            return _apply(_OffsetScatter, (gy,) + args, (gy._data,) + args), None, None
        idx = ctx.idx
        return _apply(_PlaneScatter, (gy, idx, ctx.in_shape), (gy._data, idx, ctx.in_shape)), None, None


class _MaxPool1d(_MaxPool):
    _node_name = "MaxPool1DWithIndicesBackward0"


class _MaxPool2d(_MaxPool):
    _node_name = "MaxPool2DWithIndicesBackward0"


class _MaxPool3d(_MaxPool):
    _node_name = "MaxPool3DWithIndicesBackward0"


_MAX_POOLS = {1: _MaxPool1d, 2: _MaxPool2d, 3: _MaxPool3d}


class _OffsetScatter(Function):
    """The gradient of max pooling given the winning kernel offsets; its
    adjoint gathers at the same positions (:class:`_PlaneGather`)."""

    _array_forward = True
    _node_name = "MaxPoolWithIndicesBackwardBackward0"

    @staticmethod
    def forward(ctx, gy, kidx, geom, in_shape):
        ctx.kidx, ctx.geom = kidx, geom
        return _offset_scatter(gy, kidx, geom, in_shape)

    @staticmethod
    def backward(ctx, gg):
        idx = _plane_index(ctx.kidx, ctx.geom)
        return _apply(_PlaneGather, (gg, idx), (gg._data, idx)), None, None, None


class _PlaneScatter(Function):
    """``gy`` summed into zeros of ``in_shape`` at per-plane flat ``idx``
    (the gradient of max pooling); its adjoint is :class:`_PlaneGather`."""

    _array_forward = True
    _node_name = "MaxPoolWithIndicesBackwardBackward0"

    @staticmethod
    def forward(ctx, gy, idx, in_shape):
        ctx.idx = idx
        return _plane_scatter(gy, idx, in_shape)

    @staticmethod
    def backward(ctx, gg):
        return _apply(_PlaneGather, (gg, ctx.idx), (gg._data, ctx.idx)), None, None


class _PlaneGather(Function):
    """``x`` read at per-plane flat positions ``idx`` (shape of ``idx``)."""

    _array_forward = True
    _node_name = "GatherBackward0"

    @staticmethod
    def forward(ctx, x, idx):
        ctx.idx, ctx.shape = idx, x.shape
        return _plane_gather(x, idx)

    @staticmethod
    def backward(ctx, gy):
        return _apply(_PlaneScatter, (gy, ctx.idx, ctx.shape), (gy._data, ctx.idx, ctx.shape)), None


class _MaxUnpool(Function):
    """``x`` written into zeros of ``out_shape`` at per-plane flat ``idx``."""

    _array_forward = True

    @staticmethod
    def forward(ctx, x, idx, out_shape):
        xp = xp_of(x)
        n, c = out_shape[:2]
        out = xp.zeros((n * c, _prod(out_shape[2:])), x.dtype)
        rows = xp.arange(n * c, dtype=np.int64)[:, None]
        out[rows, idx.reshape(n * c, -1)] = x.reshape(n * c, -1)
        ctx.idx = idx
        return out.reshape(out_shape)

    @staticmethod
    def backward(ctx, gy):
        return _apply(_PlaneGather, (gy, ctx.idx), (gy._data, ctx.idx)), None, None


class _MaxUnpool1d(_MaxUnpool):
    _node_name = "MaxUnpool1DBackward0"


class _MaxUnpool2d(_MaxUnpool):
    _node_name = "MaxUnpool2DBackward0"


class _MaxUnpool3d(_MaxUnpool):
    _node_name = "MaxUnpool3DBackward0"


_MAX_UNPOOLS = {1: _MaxUnpool1d, 2: _MaxUnpool2d, 3: _MaxUnpool3d}


# --------------------------------------------------------------------------
# average pooling
# --------------------------------------------------------------------------
def _avg_divisor(xp, geom, count_include_pad, divisor_override, dtype):
    """The per-output-position divisor, as PyTorch computes it: the window
    clipped to the padded input (count_include_pad) or to the input."""
    if divisor_override is not None:
        return None
    nd = geom.nd
    div = None
    for i in range(nd):
        k, s, p, size = geom.kernel[i], geom.stride[i], geom.pad[i], geom.in_size[i]
        start = np.arange(geom.out_size[i], dtype=np.int64) * s - p
        end = np.minimum(start + k, size + p)
        if count_include_pad:
            cnt = end - start
        else:
            cnt = np.minimum(end, size) - np.maximum(start, 0)
        cnt = cnt.reshape((-1,) + (1,) * (nd - 1 - i))
        div = cnt if div is None else div * cnt
    return xp.asarray(div.astype(dtype))


def _avg_pool_arrays(x, geom, div, override):
    xp = xp_of(x)
    if _tiles(geom):
        acc = _tile_view(x, geom).sum(axis=_tile_axes(geom.nd))
    else:
        xpad = _padded(x, geom, 0)
        acc = None
        for _, sl in _offset_slices(geom):
            if acc is None:
                acc = xpad[sl].copy()
            else:
                acc += xpad[sl]
        if acc is None:
            acc = xp.zeros(x.shape[:2] + geom.out_size, x.dtype)
    if override is not None:
        acc /= x.dtype.type(override)
    else:
        acc /= div
    return acc


def _avg_pool_adjoint(gy, geom, div, override, in_shape):
    xp = xp_of(gy)
    g = gy / (gy.dtype.type(override) if override is not None else div)
    g = g.astype(gy.dtype, copy=False)
    if _tiles(geom):
        # every input element of tile t gets g[t]: broadcast over the tile axes
        spread = g.reshape(gy.shape[:2] + tuple(v for o in geom.out_size for v in (o, 1)))
        tiled = xp.broadcast_to(spread, _tile_view_shape(gy.shape[:2], geom)).reshape(
            gy.shape[:2] + tuple(o * k for o, k in zip(geom.out_size, geom.kernel)))
        if tiled.shape[2:] == geom.in_size:
            return xp.ascontiguousarray(tiled)
        out = xp.zeros(in_shape, gy.dtype)
        out[(slice(None), slice(None)) + tuple(slice(0, s) for s in tiled.shape[2:])] = tiled
        return out
    ext = _extent(geom)
    gpad = xp.zeros(in_shape[:2] + ext, gy.dtype)
    for _, sl in _offset_slices(geom):
        gpad[sl] += g
    if ext == geom.in_size and not any(geom.pad):
        return gpad
    return xp.ascontiguousarray(gpad[_interior(geom)])


class _AvgPool(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, geom, div, override):
        ctx.args = (geom, div, override, x.shape)
        return _avg_pool_arrays(x, geom, div, override)

    @staticmethod
    def backward(ctx, gy):
        geom, div, override, shape = ctx.args
        return (_apply(_AvgPoolAdjoint, (gy, geom, div, override, shape), (gy._data, geom, div, override, shape)),
                None, None, None)


class _AvgPool2d(_AvgPool):
    _node_name = "AvgPool2DBackward0"


class _AvgPool3d(_AvgPool):
    _node_name = "AvgPool3DBackward0"


class _AvgPoolAdjoint(Function):
    """The gradient of average pooling (its transpose)."""

    _array_forward = True
    _node_name = "AvgPoolBackwardBackward0"

    @staticmethod
    def forward(ctx, gy, geom, div, override, in_shape):
        ctx.args = (geom, div, override)
        return _avg_pool_adjoint(gy, geom, div, override, in_shape)

    @staticmethod
    def backward(ctx, gg):
        geom, div, override = ctx.args
        cls = _AvgPool3d if geom.nd == 3 else _AvgPool2d
        return _apply(cls, (gg, geom, div, override), (gg._data, geom, div, override)), None, None, None, None


# --------------------------------------------------------------------------
# argument parsing and checks (PyTorch's messages)
# --------------------------------------------------------------------------
def _is_int(v) -> bool:
    return isinstance(v, (builtins.int, np.integer)) and not isinstance(v, builtins.bool)


def _ints(v, nd, fn, name, what):
    """An int or a sequence of 1 or ``nd`` ints as an ``nd``-tuple."""
    if _is_int(v):
        return (builtins.int(v),) * nd
    if isinstance(v, (tuple, list)):
        if not all(_is_int(e) for e in v):
            bad = next(e for e in v if not _is_int(e))
            raise TypeError(f"{fn}(): argument '{name}' must be tuple of ints, but found element of type "
                            f"{type(bad).__name__} at pos {list(v).index(bad)}")
        if len(v) == 1:
            return (builtins.int(v[0]),) * nd
        if len(v) == nd:
            return tuple(builtins.int(e) for e in v)
        if nd == 1:
            raise RuntimeError(f"{fn}() {name} must be {what} of size 1 but got size {len(v)}")
        raise RuntimeError(f"{fn}: {name} must {what}")
    raise TypeError(f"{fn}(): argument '{name}' must be tuple of ints, not {type(v).__name__}")


def _pool_params(fn, nd, kernel_size, stride, padding, dilation=1):
    w = _WORDS[nd]
    if nd == 1:
        k = _ints(kernel_size, 1, fn, "kernel_size", "an int, list of ints or tuple of ints")
        s = k if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0) else \
            _ints(stride, 1, fn, "stride", "None, an int, list of ints, or tuple of ints")
        p = _ints(padding, 1, fn, "padding", "an int, list of ints, or tuple of ints")
        d = _ints(dilation, 1, fn, "dilation", "an int, list of ints or tuple of ints")
        return k, s, p, d
    k = _ints(kernel_size, nd, fn, "kernel_size", f"either be a single int, or a tuple of {w} ints")
    if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0):
        s = k
    else:
        s = _ints(stride, nd, fn, "stride", f"either be omitted, a single int, or a tuple of {w} ints")
    p = _ints(padding, nd, fn, "padding", f"either be a single int, or a tuple of {w} ints")
    d = _ints(dilation, nd, fn, "dilation", f"be either a single int, or a tuple of {w} ints")
    return k, s, p, d


def _batched(input, nd, fn, kind):
    """(input with a batch dim, unbatched?) after PyTorch's dimension checks."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    x = input._data
    if x.ndim not in (nd + 1, nd + 2):
        if kind == "max1d":
            raise RuntimeError(f"max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size "
                               f"for input, but got:{list(x.shape)}")
        if kind == "avg1d" or kind == "adaptive1d":
            raise RuntimeError(f"Expected 2 to 3 dimensions, but got {x.ndim}-dimensional tensor for argument #1 "
                               f"'self' (while checking arguments for {fn})")
        if kind == "avg2d":
            raise RuntimeError("Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but "
                               f"got:{list(x.shape)}")
        raise RuntimeError(f"non-empty {nd + 1}D or {nd + 2}D (batch mode) tensor expected for input")
    if any(s == 0 for s in x.shape[x.ndim - nd - 1:]):
        if nd == 3:
            what = ("max_pool3d_with_indices_out_cpu_template" if kind.startswith("max") else "avg_pool3d")
            z = next(i for i, s in enumerate(x.shape[x.ndim - 4:]) if s == 0)
            raise RuntimeError(f"{what}(): Expected input's non-batch dimensions to have positive length, but input "
                               f"has a shape of {list(x.shape)} and non-batch dimension {z} has length zero!")
        if kind == "max1d":
            raise RuntimeError(f"max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size "
                               f"for input, but got:{list(x.shape)}")
        shape = list(x.shape) if nd == 2 else list(x.shape[:-1]) + [1, x.shape[-1]]
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but "
                           f"got:{shape}")
    if x.ndim == nd + 1:
        return input.unsqueeze(0), True
    return input, False


def _pool_geom(fn, x_shape, k, s, p, d, ceil_mode, kind):
    """The window geometry; raises PyTorch's errors for bad parameters."""
    nd = len(k)
    if kind == "max1d":
        if k[0] <= 0:
            raise RuntimeError(f"max_pool1d() kernel_size must be greater than zero, but got {k[0]}")
        if s[0] <= 0:
            raise RuntimeError(f"max_pool1d() stride must be greater than zero, but got {s[0]}")
        if p[0] < 0:
            raise RuntimeError(f"max_pool1d() padding must be non-negative, but got {p[0]}")
        if p[0] > k[0] // 2:
            raise RuntimeError(f"max_pool1d() padding should be at most half of kernel size, but got padding={p[0]} "
                               f"and kernel_size={k[0]}")
        if d[0] <= 0:
            raise RuntimeError(f"max_pool1d() dilation must be greater than zero, but got {d[0]}")
        out = pool_output_size(x_shape[-1], k[0], s[0], p[0], d[0], ceil_mode)
        if out <= 0:
            raise RuntimeError(f"max_pool1d() Invalid computed output size: {out}")
        return _Geom(x_shape[2:], (out,), k, s, d, p, 1)
    for kk, ss, pp, dd in zip(k, s, p, d):
        if ss == 0:
            raise RuntimeError("stride should not be zero")
        if pp < 0:
            raise RuntimeError(f"pad must be non-negative, but got pad: {pp}")
        if pp > ((kk - 1) * dd + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={pp}, "
                               f"kernel_size={kk} and dilation={dd}")
    names = ("T", "H", "W")[3 - nd:] if nd > 1 else ("W",)
    if any(kk <= 0 for kk in k):
        raise RuntimeError("kernel size should be greater than zero, but got " +
                           " ".join(f"k{n}: {v}" for n, v in zip(names, k)))
    if any(ss <= 0 for ss in s):
        raise RuntimeError("stride should be greater than zero, but got " +
                           " ".join(f"d{n}: {v}" for n, v in zip(names, s)))
    if any(dd <= 0 for dd in d):
        raise RuntimeError("dilation should be greater than zero, but got " +
                           " ".join(f"dilation{n}: {v}" for n, v in zip(names, d)))
    if any(pp > kk // 2 for pp, kk in zip(p, k)):
        if nd == 3:
            raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but got kT: {k[0]} kW: "
                               f"{k[2]} kH: {k[1]} padT: {p[0]} padW: {p[2]} padH: {p[1]}")
        kh, kw = (1, k[0]) if nd == 1 else k
        ph, pw = (0, p[0]) if nd == 1 else p
        raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but got padW = {pw}, padH = "
                           f"{ph}, kW = {kw}, kH = {kh}")
    in_size = tuple(x_shape[2:])
    out = tuple(pool_output_size(i, kk, ss, pp, dd, ceil_mode) for i, kk, ss, pp, dd in zip(in_size, k, s, p, d))
    if any(o < 1 for o in out):
        ins = (1,) + in_size if nd == 1 else in_size
        outs = (1,) + out if nd == 1 else out
        raise RuntimeError(f"Given input size: ({'x'.join(str(v) for v in (x_shape[1],) + ins)}). Calculated output "
                           f"size: ({'x'.join(str(v) for v in (x_shape[1],) + outs)}). Output size is too small")
    return _Geom(in_size, out, k, s, d, p, 1)


def _float_only(input, fn):
    dt = input._data.dtype
    if dt.kind != "f":
        raise NotImplementedError(f"\"{fn}\" not implemented for '{_TYPE_NAMES.get(str(dt), str(dt))}'")


# --------------------------------------------------------------------------
# public: max pooling
# --------------------------------------------------------------------------
def _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, nd):
    fn = f"max_pool{nd}d"
    kind = "max1d" if nd == 1 else "max"
    k, s, p, d = _pool_params(fn, nd, kernel_size, stride, padding, dilation)
    input, unbatched = _batched(input, nd, fn, kind)
    if input._data.dtype.kind == "b":
        raise NotImplementedError(f"\"max_pool{nd}d\" not implemented for 'Bool'")
    geom = _pool_geom(fn, input.shape, k, s, p, d, bool(ceil_mode), kind)
    want = bool(return_indices)
    out = _apply(_MAX_POOLS[nd], (input, geom, want), (input._data, geom, want))
    if unbatched:
        out = (out[0].squeeze(0), out[1].squeeze(0)) if want else out.squeeze(0)
    return out


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """1-D max pooling over ``input`` (N, C, L) or (C, L).

    Example::

        >>> import fabric
        >>> fabric.nn.functional.max_pool1d(fabric.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2)
        tensor([[[3., 2.]]])
    """
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 1)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """2-D max pooling over ``input`` (N, C, H, W) or (C, H, W); with
    ``return_indices`` also the flat ``h * W + w`` argmax in each plane.

    Example::

        >>> import fabric
        >>> y, i = fabric.nn.functional.max_pool2d(fabric.arange(4.0).reshape(1, 1, 2, 2), 2, return_indices=True)
        >>> y, i
        (tensor([[[[3.]]]]), tensor([[[[3]]]]))
    """
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 2)


@declare_op(method=False)
def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """3-D max pooling over ``input`` (N, C, D, H, W) or (C, D, H, W).

    Example::

        >>> import fabric
        >>> fabric.nn.functional.max_pool3d(fabric.ones(1, 2, 4, 4, 4), 2).shape
        fabric.Size([1, 2, 2, 2, 2])
    """
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 3)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """:func:`max_pool1d` returning ``(values, indices)``."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, True, 1)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """:func:`max_pool2d` returning ``(values, indices)``."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, True, 2)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """:func:`max_pool3d` returning ``(values, indices)``."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, True, 3)


# --------------------------------------------------------------------------
# public: max unpooling
# --------------------------------------------------------------------------
def _unpool_output_size(in_spatial, k, s, p, output_size):
    nd = len(k)
    default = [(in_spatial[i] - 1) * s[i] + k[i] - 2 * p[i] for i in range(nd)]
    if output_size is None:
        ret = default
    else:
        if len(output_size) == nd + 2:
            output_size = output_size[2:]
        if len(output_size) != nd:
            raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} elements, but it has a "
                             f"length of '{len(output_size)}'")
        for i in range(nd):
            lo, hi = default[i] - s[i], default[i] + s[i]
            if not lo < output_size[i] < hi:
                raise ValueError(f'invalid output_size "{output_size}" (dim {i} must be between {lo} and {hi})')
        ret = [builtins.int(v) for v in output_size]
    for i, r in enumerate(ret):
        if r < 0:
            raise ValueError(f"max_unpooling: output_size must contain non-negative spatial dimensions, but got "
                             f"output_size[{i}]={r}")
    return ret


def _max_unpool(input, indices, kernel_size, stride, padding, output_size, nd):
    fn = f"max_unpool{nd}d"
    k = _ints(kernel_size, nd, fn, "kernel_size", "be an int or a tuple of ints")
    s = k if stride is None else _ints(stride, nd, fn, "stride", "be an int or a tuple of ints")
    p = _ints(padding, nd, fn, "padding", "be an int or a tuple of ints")
    x, idx = input._data, indices._data
    if x.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Input to max_unpooling{nd}d should be a {nd + 1}d or {nd + 2}d Tensor, but got a tensor "
                           f"with {x.ndim} dimensions.")
    out_spatial = _unpool_output_size(x.shape[x.ndim - nd:], k, s, p, output_size)
    if idx.dtype != np.int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: {_TYPE_NAMES.get(str(idx.dtype))}")
    if idx.shape != x.shape:
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor ({list(x.shape)}) but "
                           f"got indices tensor with shape: {list(idx.shape)}")
    plane = _prod(out_spatial)
    if idx.size:
        lo, hi = builtins.int(idx.min()), builtins.int(idx.max())
        if lo < 0 or hi >= plane:
            bad = lo if lo < 0 else hi
            raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                               f"{'x'.join(str(v) for v in out_spatial)})")
    unbatched = x.ndim == nd + 1
    if unbatched:
        input, indices = input.unsqueeze(0), indices.unsqueeze(0)
        x, idx = input._data, indices._data
    out_shape = x.shape[:2] + tuple(out_spatial)
    y = _apply(_MAX_UNPOOLS[nd], (input, idx, out_shape), (x, idx, out_shape))
    return y.squeeze(0) if unbatched else y


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of :func:`max_pool1d`: values put back at their
    ``indices``, zeros elsewhere.

    Example::

        >>> import fabric
        >>> import fabric.nn.functional as F
        >>> y, i = F.max_pool1d(fabric.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2, return_indices=True)
        >>> F.max_unpool1d(y, i, 2)
        tensor([[[0., 3., 2., 0.]]])
    """
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1)


@declare_op(method=False)
def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of :func:`max_pool2d`.

    Example::

        >>> import fabric
        >>> import fabric.nn.functional as F
        >>> y, i = F.max_pool2d(fabric.arange(16.0).reshape(1, 1, 4, 4), 2, return_indices=True)
        >>> F.max_unpool2d(y, i, 2).shape
        fabric.Size([1, 1, 4, 4])
    """
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2)


@declare_op(method=False)
def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of :func:`max_pool3d`.

    Example::

        >>> import fabric
        >>> import fabric.nn.functional as F
        >>> y, i = F.max_pool3d(fabric.randn(1, 1, 4, 4, 4), 2, return_indices=True)
        >>> F.max_unpool3d(y, i, 2).shape
        fabric.Size([1, 1, 4, 4, 4])
    """
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3)


# --------------------------------------------------------------------------
# public: average pooling
# --------------------------------------------------------------------------
def _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, nd):
    fn = f"avg_pool{nd}d"
    kind = {1: "avg1d", 2: "avg2d", 3: "avg3d"}[nd]
    if nd == 1:
        k = _ints(kernel_size, 1, fn, "kernel_size", "an int, list of ints or tuple of ints")
        s = k if stride is None or (isinstance(stride, (tuple, list)) and not stride) else \
            _ints(stride, 1, fn, "stride", "None, an int, list of ints, or tuple of ints")
        p = _ints(padding, 1, fn, "padding", "an int, list of ints, or tuple of ints")
    else:
        k, s, p, _ = _pool_params(fn, nd, kernel_size, stride, padding)
    input, unbatched = _batched(input, nd, fn, kind)
    _float_only(input, fn)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    geom = _pool_geom(fn, input.shape, k, s, p, (1,) * nd, bool(ceil_mode), kind)
    x = input._data
    div = _avg_divisor(xp_of(x), geom, count_include_pad, divisor_override, x.dtype)
    cls = _AvgPool3d if nd == 3 else _AvgPool2d
    y = _apply(cls, (input, geom, div, divisor_override), (x, geom, div, divisor_override))
    return y.squeeze(0) if unbatched else y


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """1-D average pooling over ``input`` (N, C, L) or (C, L).

    Example::

        >>> import fabric
        >>> fabric.nn.functional.avg_pool1d(fabric.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2)
        tensor([[[2., 1.]]])
    """
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """2-D average pooling over ``input`` (N, C, H, W) or (C, H, W);
    ``count_include_pad`` counts the zero padding in the divisor,
    ``divisor_override`` replaces the divisor.

    Example::

        >>> import fabric
        >>> fabric.nn.functional.avg_pool2d(fabric.ones(1, 1, 3, 3), 2, padding=1, count_include_pad=False)
        tensor([[[[1., 1.],
                  [1., 1.]]]])
    """
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 2)


@declare_op(method=False)
def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """3-D average pooling over ``input`` (N, C, D, H, W) or (C, D, H, W).

    Example::

        >>> import fabric
        >>> fabric.nn.functional.avg_pool3d(fabric.ones(1, 1, 4, 4, 4), 2).shape
        fabric.Size([1, 1, 2, 2, 2])
    """
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 3)


# --------------------------------------------------------------------------
# public: adaptive pooling
# --------------------------------------------------------------------------
def _adaptive_windows(size, out):
    """PyTorch's adaptive windows: [floor(i * size / out), ceil((i + 1) * size / out))."""
    i = np.arange(out, dtype=np.int64)
    return (i * size) // out, -((-(i + 1) * size) // out)


def _adaptive_size(output_size, in_spatial, nd, fn):
    if isinstance(output_size, (tuple, list)):
        if len(output_size) != nd:
            raise RuntimeError(f"{fn}: output_size must be {nd}")
        out = tuple(in_spatial[i] if v is None else v for i, v in enumerate(output_size))
    elif output_size is None:
        out = tuple(in_spatial)
    else:
        out = (output_size,) * nd
    for v in out:
        if not _is_int(v):
            raise TypeError(f"{fn}(): argument 'output_size' must be tuple of ints, but found element of type "
                            f"{type(v).__name__}")
    return tuple(builtins.int(v) for v in out)


def _adaptive_checks(input, nd, fn, max_pool):
    if not isinstance(input, Tensor):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    x = input._data
    if x.ndim not in (nd + 1, nd + 2):
        if nd == 1:
            raise RuntimeError(f"Expected 2 to 3 dimensions, but got {x.ndim}-dimensional tensor for argument #1 "
                               f"'self' (while checking arguments for {fn})")
        raise RuntimeError(f"{fn}(): Expected {nd + 1}D or {nd + 2}D tensor, but got {list(x.shape)}")
    # 1-D pools run as 2-D ones on (..., 1, L), as in PyTorch; their messages say so
    shape = list(x.shape) if nd > 1 else list(x.shape[:-1]) + [1, x.shape[-1]]
    name = fn if nd > 1 else fn.replace("1d", "2d")
    # max pooling checks every non-batch dim, average pooling the spatial ones
    dims = range(1, len(shape)) if max_pool else range(len(shape) - max(nd, 2), len(shape))
    for i in dims:
        if shape[i] == 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch dimensions, but input "
                               f"has sizes {shape} with dimension {i} being empty")
    _float_only(input, name)


def _averaging_matrix(size, out, dtype, xp):
    """(out, size): row i averages window i."""
    start, end = _adaptive_windows(size, out)
    j = np.arange(size)
    inside = (j[None, :] >= start[:, None]) & (j[None, :] < end[:, None])
    m = inside / (end - start)[:, None]
    return xp.asarray(m.astype(dtype))


def _adaptive_avg(input, output_size, nd):
    fn = f"adaptive_avg_pool{nd}d"
    _adaptive_checks(input, nd, fn, False)
    x = input._data
    out = _adaptive_size(output_size, x.shape[x.ndim - nd:], nd, fn)
    if any(o < 0 for o in out):
        raise RuntimeError(f"{fn}: elements of output_size must be greater than or equal to 0 but received "
                           f"{{{', '.join(str(o) for o in out)}}}")
    in_spatial = x.shape[x.ndim - nd:]
    if tuple(in_spatial) == out:
        return input.clone()
    xp = xp_of(x)
    lead = x.shape[:x.ndim - nd]
    y = input
    # contract one spatial dim at a time with its (out, size) averaging matrix
    for i in range(nd - 1, -1, -1):
        size, o = in_spatial[i], out[i]
        if size == o:
            continue
        if o == 1:       # global pooling along this dim
            y = y.mean(len(lead) + i, keepdim=True)
            continue
        m = Tensor._make(_averaging_matrix(size, o, x.dtype, xp), False)
        cur = tuple(y.shape)
        axis = len(lead) + i
        if i == nd - 1:
            y = y.matmul(m.mT)
        else:
            rest = _prod(cur[axis + 1:])
            y = m.matmul(y.reshape(cur[:axis] + (size, rest))).reshape(cur[:axis] + (o,) + cur[axis + 1:])
    return y


def adaptive_avg_pool1d(input, output_size):
    """Average pooling to a fixed output length: window ``i`` spans
    ``[floor(i * L / out), ceil((i + 1) * L / out))``.

    Example::

        >>> import fabric
        >>> fabric.nn.functional.adaptive_avg_pool1d(fabric.tensor([[[1.0, 2.0, 3.0, 4.0, 5.0]]]), 2)
        tensor([[[2., 4.]]])
    """
    return _adaptive_avg(input, output_size, 1)


def adaptive_avg_pool2d(input, output_size):
    """Average pooling to a fixed (H, W) output size (``None`` keeps the input's).

    Example::

        >>> import fabric
        >>> fabric.nn.functional.adaptive_avg_pool2d(fabric.ones(2, 3, 7, 5), 1).shape
        fabric.Size([2, 3, 1, 1])
    """
    return _adaptive_avg(input, output_size, 2)


@declare_op(method=False)
def adaptive_avg_pool3d(input, output_size):
    """Average pooling to a fixed (D, H, W) output size.

    Example::

        >>> import fabric
        >>> fabric.nn.functional.adaptive_avg_pool3d(fabric.ones(1, 2, 5, 4, 3), (2, None, 1)).shape
        fabric.Size([1, 2, 2, 4, 1])
    """
    return _adaptive_avg(input, output_size, 3)


def _adaptive_max_arrays(x, out):
    """Adaptive max pooling of batched ``x``: a loop over the (clamped)
    window offsets of the widest window, each a gather of every window's element."""
    xp = xp_of(x)
    nd = len(out)
    in_spatial = x.shape[2:]
    starts, ends, widths = [], [], []
    for size, o in zip(in_spatial, out):
        s, e = _adaptive_windows(size, o)
        starts.append(s)
        ends.append(e)
        widths.append(builtins.int((e - s).max()) if o else 0)
    shape = x.shape[:2] + tuple(out)
    best = xp.full(shape, -np.inf, x.dtype)
    arg = xp.full(shape, -1, np.int64)
    flat_x = x.reshape(x.shape[:2] + (-1,))
    strides = [_prod(in_spatial[i + 1:]) for i in range(nd)]
    for offs in itertools.product(*(range(w) for w in widths)):
        pos = None
        for i, o in enumerate(offs):
            p = np.minimum(starts[i] + o, ends[i] - 1) * strides[i]
            p = p.reshape((-1,) + (1,) * (nd - 1 - i))
            pos = p if pos is None else pos + p
        pos = xp.asarray(np.broadcast_to(pos, tuple(out)).reshape(-1))
        v = flat_x[:, :, pos].reshape(shape)
        upd = (v > best) | xp.isnan(v)
        xp.copyto(best, v, where=upd)
        xp.copyto(arg, xp.broadcast_to(pos.reshape(tuple(out)), shape), where=upd)
    # a window of only -inf reports its first element, as PyTorch does
    first = None
    for i in range(nd):
        p = (starts[i] * strides[i]).reshape((-1,) + (1,) * (nd - 1 - i))
        first = p if first is None else first + p
    arg = xp.where(arg < 0, xp.asarray(first), arg)
    return best, arg


class _AdaptiveMaxPool(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, out):
        y, idx = _adaptive_max_arrays(x, out)
        ctx.idx, ctx.in_shape = idx, x.shape
        return y, idx

    @staticmethod
    def backward(ctx, gy, _gidx=None):
        return _apply(_PlaneScatter, (gy, ctx.idx, ctx.in_shape), (gy._data, ctx.idx, ctx.in_shape)), None


class _AdaptiveMaxPool2d(_AdaptiveMaxPool):
    _node_name = "AdaptiveMaxPool2DBackward0"


class _AdaptiveMaxPool3d(_AdaptiveMaxPool):
    _node_name = "AdaptiveMaxPool3DBackward0"


def _adaptive_max(input, output_size, return_indices, nd):
    fn = f"adaptive_max_pool{nd}d"
    _adaptive_checks(input, nd, fn, True)
    x = input._data
    out = _adaptive_size(output_size, x.shape[x.ndim - nd:], nd, fn)
    if any(o < 0 for o in out):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(out)}: "
                           f"{list(x.shape[:x.ndim - nd]) + list(out)}")
    unbatched = x.ndim == nd + 1
    if unbatched:
        input = input.unsqueeze(0)
        x = input._data
    in_spatial = x.shape[2:]
    if all(o > 0 and i % o == 0 for i, o in zip(in_spatial, out)) and x.dtype.kind == "f":
        # equal windows: a plain max pool with kernel = stride = size / out
        k = tuple(i // o for i, o in zip(in_spatial, out))
        geom = _Geom(in_spatial, out, k, k, (1,) * nd, (0,) * nd, 1)
        y, idx = _apply(_MAX_POOLS[nd], (input, geom, True), (x, geom, True))
    else:
        cls = _AdaptiveMaxPool3d if nd == 3 else _AdaptiveMaxPool2d
        y, idx = _apply(cls, (input, out), (x, out))
    if unbatched:
        y, idx = y.squeeze(0), idx.squeeze(0)
    return (y, idx) if return_indices else y


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Max pooling to a fixed output length (windows as in
    :func:`adaptive_avg_pool1d`).

    Example::

        >>> import fabric
        >>> fabric.nn.functional.adaptive_max_pool1d(fabric.tensor([[[1.0, 5.0, 3.0, 4.0, 2.0]]]), 2)
        tensor([[[5., 4.]]])
    """
    return _adaptive_max(input, output_size, return_indices, 1)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max pooling to a fixed (H, W) output size.

    Example::

        >>> import fabric
        >>> fabric.nn.functional.adaptive_max_pool2d(fabric.ones(2, 3, 7, 5), (2, 3)).shape
        fabric.Size([2, 3, 2, 3])
    """
    return _adaptive_max(input, output_size, return_indices, 2)


@declare_op(method=False)
def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Max pooling to a fixed (D, H, W) output size.

    Example::

        >>> import fabric
        >>> fabric.nn.functional.adaptive_max_pool3d(fabric.ones(1, 2, 5, 4, 3), 2).shape
        fabric.Size([1, 2, 2, 2, 2])
    """
    return _adaptive_max(input, output_size, return_indices, 3)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    """:func:`adaptive_max_pool1d` returning ``(values, indices)``."""
    return _adaptive_max(input, output_size, True, 1)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    """:func:`adaptive_max_pool2d` returning ``(values, indices)``."""
    return _adaptive_max(input, output_size, True, 2)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    """:func:`adaptive_max_pool3d` returning ``(values, indices)``."""
    return _adaptive_max(input, output_size, True, 3)


# --------------------------------------------------------------------------
# public: power-average pooling
# --------------------------------------------------------------------------
def _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, nd):
    from ._activation import relu

    pool_max = {1: max_pool1d, 2: max_pool2d, 3: max_pool3d}[nd]
    pool_avg = {1: avg_pool1d, 2: avg_pool2d, 3: avg_pool3d}[nd]
    if isinstance(norm_type, (builtins.int, builtins.float)):
        if norm_type == float("inf"):
            return pool_max(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        if norm_type == -float("inf"):
            return -pool_max(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    k = _ints(kernel_size, nd, f"lp_pool{nd}d", "kernel_size", "be an int or a tuple of ints")
    out = pool_avg(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (_ops.sign(out) * relu(out.abs())).mul(_prod(k)).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling: ``(sum over the window of x ** p) ** (1 / p)``.

    Example::

        >>> import fabric
        >>> fabric.nn.functional.lp_pool1d(fabric.tensor([[[3.0, 4.0]]]), 2, 2)
        tensor([[[5.]]])
    """
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """2-D power-average pooling (see :func:`lp_pool1d`).

    Example::

        >>> import fabric
        >>> fabric.nn.functional.lp_pool2d(fabric.ones(1, 1, 2, 2), 2, 2)
        tensor([[[[2.]]]])
    """
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """3-D power-average pooling (see :func:`lp_pool1d`).

    Example::

        >>> import fabric
        >>> fabric.nn.functional.lp_pool3d(fabric.ones(1, 1, 2, 2, 2), 1, 2)
        tensor([[[[[8.]]]]])
    """
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 3)
