"""Sorting, selection and searching: sort, argsort, msort, topk, kthvalue,
median, nanmedian, mode, quantile, nanquantile, unique, unique_consecutive,
searchsorted, bucketize, bincount, histc, histogram.

Everything is vectorised over rows: selections use ``partition`` (O(n))
where a full sort is not needed, and the value outputs are gathers whose
gradient goes to the selected index (so ties follow the returned indices).

Tie-breaking, as PyTorch on CPU:

* ``sort``/``argsort`` are always stable (equal values keep their order;
  descending puts NaN first): identical to PyTorch with ``stable=True``, and
  to its default on rows of up to 16 elements (longer rows: PyTorch's
  default CPU sort is not stable, so tied indices may differ there).
* ``median(dim)`` returns the index a stable sort puts at the median
  position (PyTorch's comparator breaks ties by index), and the first NaN
  when the row has one: identical to PyTorch.
* ``mode`` returns the smallest of the most frequent values and its last
  occurrence: identical to PyTorch on rows of up to 16 elements without NaN
  (beyond that PyTorch's index comes from an unstable ``std::sort``, and NaN
  breaks its sort's ordering).
* ``topk`` and ``kthvalue``: among tied values the lowest indices win (a
  stable order). PyTorch's CPU kernels (quickselect / partial sort) may
  return another index of an equal value; the values always agree.
* ``max``/``min``/``argmax``/``argmin`` (first index), ``cummax``/``cummin``
  (latest index) follow PyTorch exactly, NaN included.

Example::

    >>> import fabric
    >>> fabric.tensor([3., 1., 2.]).sort()
    fabric.return_types.sort(
    values=tensor([1., 2., 3.]),
    indices=tensor([1, 2, 0]))
    >>> fabric.tensor([1., 4., 2., 8.]).topk(2).indices
    tensor([3, 1])
"""
from __future__ import annotations

import builtins
import functools
from collections.abc import Sequence

import numpy as np

from .._tensor import Tensor, _wrap_dim
from ..autograd.function import Function, _apply
from ..backends import backend_of
from ._registry import declare_op
from ._registry import public_names as declared_names
from ._util import reject_complex, xp_of
from .reduce import (
    _const,
    _even_share,
    _gather,
    _movedim_last,
    _out,
    _out_tuple,
    _scan,
    _selector,
    _torch_name,
    return_types,
)

__all__: list[str] = []  # + the declared ops (end of module)

_bool, _int, _float, _range, _bmax, _bmin = (builtins.bool, builtins.int, builtins.float, builtins.range,
                                             builtins.max, builtins.min)

_Sort, _Topk, _Kthvalue = _selector("Sort"), _selector("Topk"), _selector("Kthvalue")
_MedianDim, _NanmedianDim, _Mode = _selector("Median"), _selector("Nanmedian"), _selector("Mode")
_Quantile = _selector("Quantile")


# --- helpers ------------------------------------------------------------------

def _stable_argsort(x, axis=-1):
    """Stable argsort, NaN last (CuPy's argsort is always stable and takes no ``kind``)."""
    xp = xp_of(x)
    return xp.argsort(x, axis=axis, kind="stable") if xp is np else xp.argsort(x, axis=axis)


def _argsort(x, axis, descending):
    """Stable argsort; descending keeps equal values in index order and puts
    NaN first (PyTorch's order)."""
    xp = xp_of(x)
    if not descending:
        return _stable_argsort(x, axis)
    n = x.shape[axis]
    i = _stable_argsort(xp.flip(x, axis), axis)
    return (n - 1) - xp.flip(i, axis)


def _isnan(xp, x):
    return xp.isnan(x) if x.dtype.kind == "f" else xp.zeros(x.shape, np.bool_)


def _kth_index(x, k):
    """Index (keepdims) along the last axis of the element a stable ascending
    sort (NaN last) puts at position ``k``; O(n) through ``partition``."""
    xp = xp_of(x)
    if xp is np:
        v = np.partition(x, k, axis=-1)[..., k:k + 1]
    else:
        v = xp.sort(x, axis=-1)[..., k:k + 1]
    if x.dtype.kind == "f":
        xnan, vnan = xp.isnan(x), xp.isnan(v)
        less = xp.where(vnan, ~xnan, x < v)
        eq = xp.where(vnan, xnan, x == v)
    else:
        less, eq = x < v, x == v
    target = k - less.sum(axis=-1, keepdims=True)  # position among the tied values
    return xp.argmax(xp.cumsum(eq, axis=-1) > target, axis=-1, keepdims=True)


def _last_axis(input, dim, name):
    """(array with ``dim`` last, axis, was_0d) for selection ops; the 0-d
    case works on a length-1 row."""
    x = input._data
    if x.ndim == 0:
        _wrap_dim(dim, 0)
        return x.reshape(1), 0, True
    axis = _wrap_dim(dim, x.ndim)
    return xp_of(x).moveaxis(x, axis, -1), axis, False


def _check_dim_size(xm, axis, name):
    """``xm`` has the reduced dim last; ``axis`` is its original (wrapped) position."""
    if xm.shape[-1] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {axis} to have non-zero size.")


def _select(input, idx_last, axis, was_0d, keepdim, cls, rtype):
    """``(values, indices)`` from indices computed with the dim moved last
    (``idx_last`` keeps that dim, size 1 for reductions)."""
    xp = xp_of(idx_last)
    if was_0d:
        v = _gather(input.reshape(1), idx_last.reshape(1), 0, False, True, cls)
        return rtype(v, _const(idx_last.reshape(())))
    idx = xp.moveaxis(idx_last, -1, axis).astype(np.int64, copy=False)
    v = _gather(input, idx, axis, keepdim, True, cls)
    return rtype(v, _const(idx if keepdim else idx.squeeze(axis)))


# --- sort / argsort / msort -------------------------------------------------------

@declare_op()
def sort(input: Tensor, dim: int = -1, descending: bool = False, *, stable: bool = False,
         out: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
    """Sort along ``dim``; returns ``(values, indices)``. Always stable
    (``stable`` is accepted for PyTorch compatibility); NaN sorts as largest.

    Example::

        >>> fabric.tensor([2., 1., 2.]).sort(descending=True).indices
        tensor([0, 2, 1])
    """
    reject_complex(input, RuntimeError, ' Sort does not support complex dtypes on CPU')
    x = input._data
    if x.ndim == 0:
        _wrap_dim(dim, 0)
        idx = xp_of(x).zeros((1,), np.int64)
        return _out_tuple(_select(input, idx, 0, True, False, _Sort, return_types.sort), out)
    axis = _wrap_dim(dim, x.ndim)
    idx = _argsort(x, axis, descending)
    v = _gather(input, idx, axis, True, True, _Sort)
    return _out_tuple(return_types.sort(v, _const(idx)), out)


@declare_op()
def argsort(input: Tensor, dim: int = -1, descending: bool = False, *, stable: bool = False) -> Tensor:
    """Indices that sort ``input`` along ``dim`` (stable).

    Example::

        >>> fabric.tensor([3, 1, 2]).argsort()
        tensor([1, 2, 0])
    """
    reject_complex(input, RuntimeError, ' Sort does not support complex dtypes on CPU')
    x = input._data
    if x.ndim == 0:
        _wrap_dim(dim, 0)
        return _const(xp_of(x).zeros((), np.int64))
    return _const(_argsort(x, _wrap_dim(dim, x.ndim), descending))


@declare_op()
def msort(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Sort along the first dimension (``sort(input, 0).values``).

    Example::

        >>> fabric.tensor([[2., 1.], [0., 3.]]).msort()
        tensor([[0., 1.],
                [2., 3.]])
    """
    reject_complex(input, RuntimeError, ' Sort does not support complex dtypes on CPU')
    return _out(sort(input, 0).values, out)


# --- topk / kthvalue -------------------------------------------------------------------

def _topk_last(x, k, largest):
    """Indices of the ``k`` largest (smallest) along the last axis, best
    first, ties by index: ``argpartition`` (O(n)) picks the ``k``, then only
    those are sorted. Full stable sort when NaN is present or ``k > n / 2``."""
    xp = xp_of(x)
    n = x.shape[-1]
    if k == 0:
        return xp.zeros(x.shape[:-1] + (0,), np.int64)
    if 2 * k > n or x.size == 0 or (x.dtype.kind == "f" and _bool(xp.isnan(x).any())):
        return _argsort(x, -1, largest)[..., :k]
    kth = n - k if largest else k - 1
    part = xp.argpartition(x, kth, axis=-1)
    pos = part[..., kth:] if largest else part[..., :k]
    v = xp.take_along_axis(x, part[..., kth:kth + 1], -1)  # the k-th best value
    better = (x > v) if largest else (x < v)
    need = k - better.sum(axis=-1, keepdims=True)  # how many of the values tied with v to take
    eq = x == v
    if _bool((eq.sum(axis=-1, keepdims=True) > need).any()):
        # more ties than places: take the lowest indices among them (a stable order)
        take = better | (eq & (xp.cumsum(eq, axis=-1) <= need))
        pos = xp.nonzero(take.reshape(-1, n))[1].reshape(x.shape[:-1] + (k,))
    else:
        pos = xp.sort(pos, axis=-1)
    order = _argsort(xp.take_along_axis(x, pos, -1), -1, largest)
    return xp.take_along_axis(pos, order, -1)


@declare_op()
def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True, *,
         out: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
    """The ``k`` largest (or smallest) elements along ``dim`` and their indices,
    best first (also when ``sorted=False``). NaN counts as largest.

    Example::

        >>> fabric.tensor([1., 5., 3., 4.]).topk(2)
        fabric.return_types.topk(
        values=tensor([5., 4.]),
        indices=tensor([1, 3]))
    """
    reject_complex(input, RuntimeError, ' topk does not support complex dtypes on CPU')
    k = _int(k)
    if input._data.dtype == np.bool_:
        raise RuntimeError("topk does not support bool dtypes on CPU")
    xm, axis, was_0d = _last_axis(input, dim, "topk")
    if k < 0 or k > xm.shape[-1]:
        raise RuntimeError("selected index k out of range")
    idx = _topk_last(xm, k, largest)
    if was_0d:
        return _out_tuple(_select(input, idx, 0, True, False, _Topk, return_types.topk), out)
    idx = xp_of(idx).moveaxis(idx, -1, axis)
    v = _gather(input, idx, axis, True, True, _Topk)
    return _out_tuple(return_types.topk(v, _const(idx)), out)


@declare_op()
def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False, *,
             out: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
    """The ``k``-th smallest element (1-based) along ``dim`` and its index.

    Example::

        >>> fabric.tensor([3., 1., 2.]).kthvalue(2)
        fabric.return_types.kthvalue(
        values=tensor(2.),
        indices=tensor(2))
    """
    reject_complex(input, NotImplementedError, "\"kthvalue_cpu\" not implemented for '{dtype}'")
    k = _int(k)
    _no_bool(input, "kthvalue_cpu")
    xm, axis, was_0d = _last_axis(input, dim, "kthvalue")
    _check_dim_size(xm, axis, "kthvalue")
    if k < 1 or k > xm.shape[-1]:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {dim}")
    idx = _kth_index(xm, k - 1)
    return _out_tuple(_select(input, idx, axis, was_0d, keepdim, _Kthvalue, return_types.kthvalue), out)


# --- median / nanmedian / mode -----------------------------------------------------

_EMPTY_MEDIAN = {"int64": np.iinfo(np.int64).min, "int32": np.iinfo(np.int32).min, "int16": 0, "int8": 0,
                 "uint8": 0, "bool": True}


class _MedianAll(Function):
    """median()/nanmedian() of all elements; ties share the gradient evenly."""

    _array_forward = True

    @staticmethod
    def forward(ctx, x, ignore_nan):
        xp = xp_of(x)
        flat = x.reshape(-1)
        if flat.size == 0:  # NaN, converted to the dtype as PyTorch's CPU kernel does
            y = xp.asarray(_EMPTY_MEDIAN.get(x.dtype.name, xp.nan), dtype=x.dtype)
        elif ignore_nan:
            nn = flat[~_isnan(xp, flat)]
            y = xp.sort(nn)[(nn.size - 1) // 2] if nn.size else xp.asarray(xp.nan, dtype=x.dtype)
        elif x.dtype.kind == "f" and _bool(xp.isnan(flat).any()):
            y = xp.asarray(xp.nan, dtype=x.dtype)
        else:
            k = (flat.size - 1) // 2
            y = (np.partition(flat, k)[k] if xp is np else xp.sort(flat)[k])
        y = xp.asarray(y, dtype=x.dtype)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, gy):
        x, y = ctx.saved_tensors
        return gy * _const(_even_share(x._data, y._data)), None


class MedianAll(_MedianAll):
    _node_name = "MedianBackward0"


class NanmedianAll(_MedianAll):
    _node_name = "NanmedianBackward0"


def _no_bool(input, kernel):
    if input._data.dtype == np.bool_:
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")


def _median_dim(input, dim, keepdim, ignore_nan, name, cls, rtype):
    _no_bool(input, "median_out")
    xm, axis, was_0d = _last_axis(input, dim, name)
    xp = xp_of(xm)
    _check_dim_size(xm, axis, "median")
    n = xm.shape[-1]
    if xm.size == 0:
        idx = xp.zeros(xm.shape[:-1] + (1,), np.int64)
    elif ignore_nan:
        order = _stable_argsort(xm)  # NaN last
        count = (~_isnan(xp, xm)).sum(axis=-1, keepdims=True)
        k = xp.maximum((count - 1) // 2, 0)
        idx = xp.take_along_axis(order, k, -1)
        if _bool((count == 0).any()):
            idx = xp.where(count == 0, _all_nan_index(n), idx)
    else:
        idx = _kth_index(xm, (n - 1) // 2)
        if xm.dtype.kind == "f":
            isn = xp.isnan(xm)
            idx = xp.where(isn.any(axis=-1, keepdims=True), xp.argmax(isn, axis=-1, keepdims=True), idx)
    return _select(input, idx, axis, was_0d, keepdim, cls, rtype)


@functools.lru_cache(maxsize=64)
def _all_nan_index(n: int) -> int:
    """The index PyTorch's CPU nanmedian returns for a row of ``n`` NaNs.

    Its kernel runs ``std::nth_element`` (libstdc++'s introselect) over the
    indices, asking for position 0, with a comparator that is false for every
    pair of NaNs; the index that ends there depends only on ``n``.  This replays
    the moves introselect makes on such a row: median-of-three swaps the middle
    element to the front, the unguarded partition swaps inwards from both ends,
    and the left part (which holds position 0) is kept until at most 3 remain
    (insertion sort and the depth-limit heap select then move nothing).
    """
    a = list(range(n))
    last = n
    while last > 3:
        mid = last // 2
        a[0], a[mid] = a[mid], a[0]
        lo, hi = 1, last - 1
        while lo < hi:
            a[lo], a[hi] = a[hi], a[lo]
            lo, hi = lo + 1, hi - 1
        last = lo
    return a[0]


@declare_op()
def median(input: Tensor, dim: int | None = None, keepdim: bool = False, *,
           out: Tensor | tuple[Tensor, Tensor] | None = None) -> Tensor | tuple[Tensor, Tensor]:
    """The lower median (of all elements, or along ``dim`` with its index).
    NaN propagates. Without ``dim`` there are no indices and tied values
    share the gradient; with ``dim`` it goes to the returned index.

    Example::

        >>> fabric.tensor([4., 1., 3., 2.]).median()
        tensor(2.)
    """
    reject_complex(input, NotImplementedError, "\"median_cpu\" not implemented for '{dtype}'")
    if dim is None:
        if keepdim:
            raise TypeError('median() missing 1 required positional arguments: "dim"')
        _no_bool(input, "median_cpu")
        return _out(_apply(MedianAll, (input, False), (input._data, False)), out)
    return _out_tuple(_median_dim(input, dim, keepdim, False, "median", _MedianDim, return_types.median), out)


@declare_op()
def nanmedian(input: Tensor, dim: int | None = None, keepdim: bool = False, *,
              out: Tensor | tuple[Tensor, Tensor] | None = None) -> Tensor | tuple[Tensor, Tensor]:
    """:func:`median` ignoring NaN (NaN only where a row is all NaN).

    Example::

        >>> fabric.tensor([1., float('nan'), 3., 2.]).nanmedian()
        tensor(2.)
    """
    reject_complex(input, NotImplementedError, "\"median_cpu\" not implemented for '{dtype}'")
    if dim is None:
        if keepdim:
            raise TypeError('nanmedian() missing 1 required positional arguments: "dim"')
        _no_bool(input, "median_cpu")
        return _out(_apply(NanmedianAll, (input, True), (input._data, True)), out)
    return _out_tuple(_median_dim(input, dim, keepdim, True, "nanmedian", _NanmedianDim,
                                  return_types.nanmedian), out)


@declare_op()
def mode(input: Tensor, dim: int = -1, keepdim: bool = False, *,
         out: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
    """The most frequent value along ``dim`` (the smallest one on ties) and the
    index of its last occurrence. NaNs never count as equal.

    Example::

        >>> fabric.tensor([2, 1, 2, 1, 3]).mode()
        fabric.return_types.mode(
        values=tensor(1),
        indices=tensor(3))
    """
    reject_complex(input, NotImplementedError, "\"mode_cpu\" not implemented for '{dtype}'")
    xm, axis, was_0d = _last_axis(input, dim, "mode")
    xp = xp_of(xm)
    _check_dim_size(xm, axis, "mode")
    n = xm.shape[-1]
    if xm.size == 0:
        idx = xp.zeros(xm.shape[:-1] + (1,), np.int64)
    else:
        order = _stable_argsort(xm)
        s = xp.take_along_axis(xm, order, -1)
        pos = xp.arange(n, dtype=np.int64)
        start = xp.ones(s.shape, np.bool_)
        start[..., 1:] = s[..., 1:] != s[..., :-1]
        run_start = _scan(xp, xp.maximum, xp.where(start, pos, 0), -1)
        count = pos - run_start + 1            # length of the run so far
        # the end of the first longest run: count is maximal there first
        end = xp.argmax(count, axis=-1, keepdims=True)
        idx = xp.take_along_axis(order, end, -1)
    return _out_tuple(_select(input, idx, axis, was_0d, keepdim, _Mode, return_types.mode), out)


# --- quantile / nanquantile ---------------------------------------------------------

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(input, q, dim, keepdim, interpolation, ignore_nan, name):
    x = input._data
    xp = xp_of(x)
    if x.dtype not in (np.float32, np.float64):
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if x.size == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, midpoint or nearest, "
                           f"but got {interpolation}")
    if isinstance(q, Tensor):
        qa = q._data
        if qa.ndim > 1:
            raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
        if qa.dtype != x.dtype:
            raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
        if qa.size and not _bool(((qa >= 0) & (qa <= 1)).all()):
            raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
        scalar_q = qa.ndim == 0
        qa = xp.asarray(qa, dtype=x.dtype).reshape(-1)
    else:
        qf = _float(q)
        if not 0 <= qf <= 1:
            raise RuntimeError(f"{name}() q must be in the range [0, 1] but got {q}")
        scalar_q = True
        qa = xp.asarray([qf], dtype=x.dtype)
    # rows: the reduced dim moved last (all dims flattened when dim is None)
    if dim is None:
        rows = input.reshape(-1)
        axis = None
    else:
        axis = _wrap_dim(dim, x.ndim)
        rows = input.reshape(1) if x.ndim == 0 else _movedim_last(input, axis)[0]
    r = rows._data
    n = r.shape[-1]
    order = _stable_argsort(r)  # NaN last
    nan = xp.isnan(r)
    # ranks = q * scale, except rows that must pick a NaN (scale 0 there)
    if ignore_nan:
        scale = (~nan).sum(axis=-1, keepdims=True) - 1
        scale = xp.where(scale < 0, 0, scale)  # all-NaN rows pick a NaN
        pick_nan = scale == 0
        pick_nan &= nan.all(axis=-1, keepdims=True)
    else:
        pick_nan = nan.any(axis=-1, keepdims=True)
        scale = xp.where(pick_nan, 0, n - 1)
    ranks = xp.where(pick_nan, n - 1, qa * scale.astype(x.dtype))
    scale = xp.where(pick_nan, 0, scale)
    ranks = xp.broadcast_to(ranks, r.shape[:-1] + (qa.size,))
    if interpolation == "lower":
        ranks = xp.floor(ranks)
    elif interpolation == "higher":
        ranks = xp.ceil(ranks)
    elif interpolation == "nearest":
        ranks = xp.round(ranks)  # half to even, as PyTorch
    below = ranks.astype(np.int64)
    vb = _gather(rows, xp.take_along_axis(order, below, -1), r.ndim - 1, True, False, _Quantile)
    if interpolation in ("linear", "midpoint"):
        above = xp.ceil(ranks).astype(np.int64)
        va = _gather(rows, xp.take_along_axis(order, above, -1), r.ndim - 1, True, False, _Quantile)
        if interpolation == "midpoint":
            w = _const(xp.full(ranks.shape, 0.5, x.dtype))
        elif isinstance(q, Tensor) and q.requires_grad:
            # PyTorch's weights are q * (n - 1) - below: differentiable in q
            const = xp.where(scale == 0, ranks, 0) - below
            w = q.reshape(-1) * _const(scale.astype(x.dtype)) + _const(const.astype(x.dtype))
        else:
            w = _const((ranks - below).astype(x.dtype))
        vb = vb + (va - vb) * w
    # vb: reduced shape + (len(q),): move the q axis first, restore kept dims
    nq = qa.size
    if axis is None:
        red = (1,) * x.ndim if keepdim else ()
    elif x.ndim == 0:
        red = ()
    else:
        red = tuple(1 if (d == axis) else s for d, s in enumerate(x.shape)) if keepdim else \
            tuple(s for d, s in enumerate(x.shape) if d != axis)
    res = vb.reshape(-1, nq).t() if vb._data.ndim > 1 else vb
    return res.reshape(red if scalar_q else (nq,) + red)


@declare_op()
def quantile(input: Tensor, q: float | Sequence[float] | Tensor, dim: int | None = None, keepdim: bool = False, *,
             interpolation: str = "linear", out: Tensor | None = None) -> Tensor:
    """The ``q``-th quantiles (``q`` a float or a 0-d/1-d tensor in [0, 1])
    of all elements or along ``dim``; a 1-d ``q`` adds a leading dim.
    ``interpolation``: linear, lower, higher, midpoint or nearest. NaN
    propagates.

    Example::

        >>> fabric.tensor([1., 2., 3., 4.]).quantile(0.5)
        tensor(2.5000)
    """
    reject_complex(input, RuntimeError, 'quantile() input tensor must be either float or double dtype')
    return _out(_quantile(input, q, dim, keepdim, interpolation, False, "quantile"), out)


@declare_op()
def nanquantile(input: Tensor, q: float | Sequence[float] | Tensor, dim: int | None = None,
                keepdim: bool = False, *, interpolation: str = "linear", out: Tensor | None = None) -> Tensor:
    """:func:`quantile` ignoring NaN (NaN only for all-NaN rows).

    Example::

        >>> fabric.tensor([1., float('nan'), 3.]).nanquantile(0.5)
        tensor(2.)
    """
    return _out(_quantile(input, q, dim, keepdim, interpolation, True, "nanquantile"), out)


# --- unique / unique_consecutive -------------------------------------------------------

@declare_op()
def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False,
           dim: int | None = None) -> Tensor | tuple[Tensor, ...]:
    """The distinct values (sorted; PyTorch on CPU sorts also for
    ``sorted=False``), optionally with the inverse indices (shaped like the
    input) and counts; with ``dim``, the distinct slices along it. NaNs are
    all distinct. Not differentiable.

    Example::

        >>> fabric.tensor([3, 1, 3, 2]).unique(return_counts=True)
        (tensor([1, 2, 3]), tensor([1, 1, 2]))
    """
    reject_complex(input, NotImplementedError, "\"unique\" not implemented for '{dtype}'")
    x = input._data
    xp = xp_of(x)
    if dim is None:
        flat = x.reshape(-1)
        order = _stable_argsort(flat)
        s = flat[order]
        start = xp.ones(s.shape, np.bool_)
        start[1:] = s[1:] != s[:-1]
        values = s[start]
        out = [values]
        if return_inverse:
            inv = xp.empty(flat.shape, np.int64)
            inv[order] = xp.cumsum(start) - 1
            out.append(inv.reshape(x.shape))
    else:
        axis = _wrap_dim(dim, x.ndim)
        if x.ndim == 0:
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
        m = xp.moveaxis(x, axis, 0).reshape(x.shape[axis], -1)
        if m.shape[0] == 0:
            values_m, start, order = m, xp.zeros((0,), np.bool_), xp.zeros((0,), np.int64)
        else:
            order = xp.lexsort(m.T[::-1]) if m.shape[1] else xp.arange(m.shape[0])
            sm = m[order]
            start = xp.ones(sm.shape[0], np.bool_)
            if sm.shape[1]:
                start[1:] = (sm[1:] != sm[:-1]).any(axis=1)
            else:
                start[1:] = False
            values_m = sm[start]
        rest = xp.moveaxis(x, axis, 0).shape[1:]
        values = xp.moveaxis(values_m.reshape((values_m.shape[0],) + rest), 0, axis)
        out = [values]
        if return_inverse:
            inv = xp.empty((m.shape[0],), np.int64)
            inv[order] = xp.cumsum(start) - 1
            out.append(inv)
    if return_counts:
        starts = xp.nonzero(start)[0]
        out.append(xp.diff(xp.concatenate([starts, xp.asarray([start.shape[0]])])).astype(np.int64))
    out = [_const(a) for a in out]
    return out[0] if len(out) == 1 else tuple(out)


@declare_op()
def unique_consecutive(input: Tensor, return_inverse: bool = False, return_counts: bool = False,
                       dim: int | None = None) -> Tensor | tuple[Tensor, ...]:
    """Collapse runs of equal consecutive values (or slices along ``dim``).

    Example::

        >>> fabric.tensor([1, 1, 2, 2, 1]).unique_consecutive()
        tensor([1, 2, 1])
    """
    x = input._data
    xp = xp_of(x)
    if dim is None:
        m = x.reshape(-1, 1)
        axis = None
    else:
        axis = _wrap_dim(dim, x.ndim)
        if x.ndim == 0:
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
        m = xp.moveaxis(x, axis, 0).reshape(x.shape[axis], -1)
    start = xp.ones(m.shape[0], np.bool_)
    if m.shape[0] > 1:
        start[1:] = (m[1:] != m[:-1]).any(axis=1) if m.shape[1] else False
    if axis is None:
        values = x.reshape(-1)[start]
    else:
        moved = xp.moveaxis(x, axis, 0)
        values = xp.moveaxis(moved[start], 0, axis)
    out = [values]
    if return_inverse:
        inv = xp.cumsum(start) - 1
        out.append(inv.reshape(x.shape) if axis is None else inv)
    if return_counts:
        starts = xp.nonzero(start)[0]
        out.append(xp.diff(xp.concatenate([starts, xp.asarray([m.shape[0]])])).astype(np.int64))
    out = [_const(xp.asarray(a, dtype=np.int64) if i else a) for i, a in enumerate(out)]
    return out[0] if len(out) == 1 else tuple(out)


# --- searchsorted / bucketize --------------------------------------------------------------

def _search(seq, values, right):
    """Per-row searchsorted: ``seq`` (..., m) sorted rows, ``values`` (..., k)."""
    xp = xp_of(seq)
    if seq.ndim == 1:
        return xp.searchsorted(seq, values, side="right" if right else "left")
    m, k = seq.shape[-1], values.shape[-1]
    r = seq.size // m if m else int(np.prod(seq.shape[:-1]))
    if r * k == 0:
        return xp.zeros(values.shape, np.int64)
    rows = seq.reshape(r, m)
    vals = values.reshape(r, k)
    dt = np.result_type(rows.dtype, vals.dtype)
    # one stable merge of (row, value, kind): boundaries before values on ties
    # for right=True (count <=), after them for right=False (count <)
    allv = xp.concatenate([rows.astype(dt), vals.astype(dt)], axis=1).reshape(-1)
    row_id = xp.repeat(xp.arange(r), m + k)
    kind = xp.tile(xp.concatenate([xp.zeros(m, np.int8), xp.ones(k, np.int8)]), r)
    tie = kind if right else 1 - kind
    order = xp.lexsort(xp.stack([tie, allv, row_id]))
    is_seq = (kind[order] == 0).astype(np.int64)
    seen = xp.cumsum(is_seq) - is_seq  # boundaries before each sorted position
    res = xp.empty(r * (m + k), np.int64)
    res[order] = seen
    res = res.reshape(r, m + k)[:, m:] - (xp.arange(r) * m)[:, None]
    return res.reshape(values.shape)


@declare_op(method=False)
def searchsorted(sorted_sequence: Tensor, input: Tensor | float, *, out_int32: bool = False, right: bool = False,
                 side: str | None = None, sorter: Tensor | None = None, out: Tensor | None = None) -> Tensor:
    """Indices where ``input`` would be inserted into the last dim of
    ``sorted_sequence`` to keep it sorted (``right``/``side='right'``: after
    equal values). ``sorter`` gives the order of an unsorted sequence.

    Example::

        >>> fabric.searchsorted(fabric.tensor([1, 3, 5]), fabric.tensor([3, 6]))
        tensor([1, 3])
    """
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                               "while right was True")
        right = side == "right"
    seq = sorted_sequence._data
    xp = xp_of(seq)
    scalar = not isinstance(input, Tensor)
    vals = xp.asarray(input) if scalar else input._data
    if seq.ndim == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                           "dimensions of boundaries tensor and input value tensor must match, but we got "
                           "boundaries tensor [] and input value tensor " + str(list(vals.shape)))
    if seq.ndim > 1 and (scalar or vals.ndim != seq.ndim or vals.shape[:-1] != seq.shape[:-1]):
        raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                           "dimensions of boundaries tensor and input value tensor must match, but we got "
                           f"boundaries tensor {list(seq.shape)} and input value tensor {list(vals.shape)}")
    if sorter is not None:
        sa = sorter._data
        if sa.shape != seq.shape:
            raise RuntimeError("torch.searchsorted(): boundary and sorter must have the same size, but got "
                               f"boundary tensor {list(seq.shape)}and got sorter tensor {list(sa.shape)}")
        if sa.size and (_bool((sa < 0).any()) or _bool((sa >= seq.shape[-1]).any())):
            raise RuntimeError("torch.searchsorted(): sorter index out of range")
        seq = xp.take_along_axis(seq, sa.astype(np.int64), -1)
    res = _search(seq, vals, right)
    res = xp.asarray(res, dtype=np.int32 if out_int32 else np.int64)
    return _out(_const(res), out)


@declare_op(method=False)
def bucketize(input: Tensor | float, boundaries: Tensor, *, out_int32: bool = False, right: bool = False,
              out: Tensor | None = None) -> Tensor:
    """Index of the bucket of each element given 1-d sorted ``boundaries``
    (``right=False``: ``boundaries[i-1] < x <= boundaries[i]``).

    Example::

        >>> fabric.bucketize(fabric.tensor([1, 5, 9]), fabric.tensor([1, 4, 8]))
        tensor([0, 2, 3])
    """
    if boundaries._data.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries._data.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right, out=out)


# --- bincount / histc / histogram ----------------------------------------------------

@declare_op()
def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """Count occurrences of each value of a 1-d non-negative integer tensor
    (summing ``weights`` instead of ones when given).

    Example::

        >>> fabric.bincount(fabric.tensor([0, 2, 2]))
        tensor([1, 0, 2])
    """
    x = input._data
    xp = xp_of(x)
    if x.dtype.kind not in "iub" or x.dtype == np.bool_:
        raise NotImplementedError(f"\"bincount_cpu\" not implemented for '{_torch_name(x.dtype)}'")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if x.ndim != 1 or (x.size and _bool((x < 0).any())):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is None:
        return _const(xp.bincount(x, minlength=minlength).astype(np.int64))
    w = weights._data
    if w.ndim != 1 or w.shape[0] != x.shape[0]:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    dt = w.dtype if w.dtype.kind == "f" else np.dtype(np.float64)
    return _const(xp.bincount(x, weights=w, minlength=minlength).astype(dt))


def _hist_range(x, lo, hi, name, widen=1.0):
    xp = xp_of(x)
    lo, hi = _float(lo), _float(hi)
    if lo == hi and x.size:
        lo, hi = _float(xp.min(x)), _float(xp.max(x))
    if lo == hi:  # histc widens by 1, histogram by 0.5 (as PyTorch)
        lo, hi = lo - widen, hi + widen
    if lo > hi:
        raise RuntimeError(f"{name}: max must be larger than min")
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise RuntimeError(f"{name}: range of [{lo:g}, {hi:g}] is not finite")
    return lo, hi


def _bin_counts(x, lo, hi, bins, weight):
    """Counts of ``x`` in ``bins`` equal-width bins over [lo, hi] (the last bin
    closed; values outside ignored), PyTorch's linear bin arithmetic."""
    xp = xp_of(x)
    flat = x.reshape(-1)
    keep = (flat >= lo) & (flat <= hi)
    v = flat[keep]
    pos = ((v - lo) * bins / (hi - lo)).astype(np.int64)
    pos = xp.minimum(pos, bins - 1)
    w = None if weight is None else weight.reshape(-1)[keep]
    return xp.bincount(pos, weights=w, minlength=bins)[:bins]


@declare_op()
def histc(input: Tensor, bins: int = 100, min: float = 0, max: float = 0, *, out: Tensor | None = None) -> Tensor:
    """Histogram of ``bins`` equal-width bins over [min, max] (the data's range
    when ``min == max``); elements outside are ignored. Not differentiable.

    Example::

        >>> fabric.tensor([1., 2., 1.]).histc(bins=4, min=0, max=3)
        tensor([0., 2., 1., 0.])
    """
    x = input._data
    if x.dtype.kind != "f":
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{_torch_name(x.dtype)}'")
    bins = _int(bins)
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    lo, hi = _hist_range(x, min, max, "torch.histc")
    return _out(_const(_bin_counts(x, lo, hi, bins, None).astype(x.dtype)), out)


@declare_op()
def histogram(input: Tensor, bins: int | Tensor, *, range: tuple[float, float] | None = None,
              weight: Tensor | None = None, density: bool = False,
              out: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
    """``(hist, bin_edges)``: ``bins`` equal-width bins over ``range`` (default:
    the data's range), or the edges given as a 1-d tensor ``bins``.

    Example::

        >>> fabric.histogram(fabric.tensor([1., 2., 1.]), bins=2)
        fabric.return_types.histogram(
        hist=tensor([2., 1.]),
        bin_edges=tensor([1.0000, 1.5000, 2.0000]))
    """
    x = input._data
    xp = xp_of(x)
    if x.dtype.kind != "f":
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{_torch_name(x.dtype)}'")
    w = None if weight is None else weight._data
    if w is not None and w.shape != x.shape:
        raise RuntimeError("torch.histogram: if weight tensor is provided, it should have the same shape as the "
                           "input tensor")
    if isinstance(bins, Tensor):
        edges = bins._data.astype(x.dtype)
        if edges.ndim != 1 or edges.shape[0] < 2:
            raise RuntimeError("torch.histogram(): bins tensor should have one dimension and at least 2 elements")
        flat = x.reshape(-1)
        keep = (flat >= edges[0]) & (flat <= edges[-1])
        pos = xp.searchsorted(edges, flat[keep], side="right") - 1
        pos = xp.minimum(pos, edges.shape[0] - 2)
        ww = None if w is None else w.reshape(-1)[keep]
        hist = xp.bincount(pos, weights=ww, minlength=edges.shape[0] - 1)
    else:
        nb = _int(bins)
        if nb <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {nb} for dimension 0")
        if range is None:
            lo, hi = _hist_range(x, 0, 0, "torch.histogram", 0.5)
        else:
            lo, hi = _float(range[0]), _float(range[1])
            if lo > hi:
                raise RuntimeError("torch.histogram: min should not exceed max, but got min " + f"{lo} max {hi}")
            if lo == hi:
                lo, hi = lo - 0.5, hi + 0.5
        edges = xp.linspace(lo, hi, nb + 1).astype(x.dtype)
        hist = _bin_counts(x, lo, hi, nb, w)
    hist = hist.astype(x.dtype)
    if density:
        widths = xp.diff(edges)
        hist = hist / (hist.sum() * widths)
    return _out_tuple(return_types.histogram(_const(hist), _const(edges)), out)




@declare_op(method=False)
def isin(elements: Tensor | float, test_elements: Tensor | float, *, assume_unique: bool = False,
         invert: bool = False) -> Tensor:
    """Whether each element is in ``test_elements`` (a bool tensor)."""
    e = elements._data if isinstance(elements, Tensor) else np.asarray(elements)
    t = test_elements._data if isinstance(test_elements, Tensor) else np.asarray(test_elements)
    xp = backend_of(e).xp
    return Tensor._make(xp.isin(e, t, assume_unique=assume_unique, invert=invert), False)


__all__ += declared_names(__name__)
