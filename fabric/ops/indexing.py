"""Indexing ops: ``x[key]`` and ``x[key] = value`` (getitem / setitem, with
PyTorch's rules for basic and advanced keys), index_select, gather/scatter
(and scatter_add, scatter_reduce, index_reduce), index_add/copy/fill/put,
masked_fill/select/scatter, take/put, take_along_dim, nonzero/argwhere, the
slice/select/diagonal_scatter functions, fill_diagonal_ and unravel_index,
with their in-place forms.

Accumulation with repeated indices goes through ``Backend.scatter_add`` on a
1-D linear index (bincount or sort + reduceat on NumPy, atomics on CuPy),
never ``np.add.at``; so duplicate indices add up in gradients.  Index
tensors are never differentiated.

Example::

    >>> import fabric
    >>> x = fabric.tensor([[1., 2.], [3., 4.]])
    >>> x.gather(1, fabric.tensor([[1], [0]]))
    tensor([[2.],
            [3.]])
    >>> fabric.zeros(3).index_add(0, fabric.tensor([0, 0, 2]), fabric.ones(3))
    tensor([2., 0., 1.])
"""
from __future__ import annotations

import builtins
import math
import numbers
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor, _wrap_dim
from ..autograd.function import Function, _apply, _apply1, _make_view, _record1, check_no_internal_overlap
from ..autograd.grad_mode import state as _state
from ..autograd.observe import hook as _hook
from ..backends import backend_of
from ._registry import declare_op
from ._registry import public_names as declared_names
from ._util import checked_scalar, scalar_value, xp_of

__all__: list[str] = []  # + the declared ops (end of module)

_INT_INDEX = (np.dtype(np.int64), np.dtype(np.int32))


def _tname(np_dtype):
    return {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int",
            "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool", "complex64": "ComplexFloat",
            "complex128": "ComplexDouble"}.get(str(np_dtype), str(np_dtype))


def _a1(a):
    """A 0-d array as a 1-element 1-d view (ops along dim 0 of a scalar)."""
    return a.reshape(1) if a.ndim == 0 else a


def _const(array):
    return Tensor._make(array, False)


def _index(index, x, name, dtypes=_INT_INDEX, what="int32 or int64"):
    """The array of an index tensor, checked for dtype and device."""
    if not isinstance(index, Tensor):
        raise TypeError(f"{name}(): argument 'index' must be Tensor, not {type(index).__name__}")
    a = index._data
    if a.dtype not in dtypes:
        raise RuntimeError(f"{name}(): Expected dtype {what} for index")
    if a.__class__ is not x.__class__:
        raise RuntimeError("Expected all tensors to be on the same device, but found at least two devices, "
                           f"{'cpu' if x.__class__ is np.ndarray else 'cuda'} and "
                           f"{'cpu' if a.__class__ is np.ndarray else 'cuda'}!")
    return a


def _same_device(t, x, what):
    if not isinstance(t, Tensor):
        raise TypeError(f"expected a Tensor for {what}, got {type(t).__name__}")
    d = t._data
    if d.__class__ is not x.__class__:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices "
                           f"({what})!")
    return d


def _check_range(a, n, dim, exc=RuntimeError, prefix="", negative=False):
    """Raise ``exc`` if an index of ``a`` falls outside ``[0, n)`` (or
    ``[-n, n)`` with ``negative``)."""
    if a.size:
        lo, hi = builtins.int(a.min()), builtins.int(a.max())
        low = -n if negative else 0
        if lo < low or hi >= n:
            bad = lo if lo < low else hi
            raise exc(f"{prefix}index {bad} is out of bounds for dimension {dim} with size {n}")


def _wrap_neg(xp, a, n):
    return xp.where(a < 0, a + n, a) if a.size and a.dtype.kind == "i" and builtins.int(a.min()) < 0 else a


def _scalar_value(value, x, name):
    """``value`` (a number or a 0-d tensor) as a 0-d array of ``x``'s dtype."""
    if isinstance(value, Tensor):
        if value._data.ndim != 0:
            raise RuntimeError(f"{name} only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value._data.ndim} dimension(s).")
        v = value._data
        if v.__class__ is not x.__class__:
            v = backend_of(x).xp.asarray(backend_of(v).to_numpy(v)) if x.__class__ is not np.ndarray else \
                backend_of(v).to_numpy(v)
        return v.astype(x.dtype)
    return xp_of(x).asarray(checked_scalar(scalar_value(value), x.dtype)).astype(x.dtype)


# --- linear indices along a dim (gather / scatter) -------------------------------------

def _contiguous_strides(shape):
    st, acc = [], 1
    for s in reversed(shape):
        st.append(acc)
        acc *= s
    return st[::-1]


def _linear_index(shape, d, idx):
    """Flat (C-order) position in an array of ``shape`` of every element of
    ``idx`` read as ``out[i][j][idx[i][j][k]]...`` along dim ``d``."""
    xp = xp_of(idx)
    st = _contiguous_strides(shape)
    nd = idx.ndim
    lin = idx.astype(np.int64) * st[d]
    for k in range(nd):
        if k != d:
            n = idx.shape[k]
            lin = lin + (xp.arange(n, dtype=np.int64) * st[k]).reshape((n,) + (1,) * (nd - k - 1))
    return xp.broadcast_to(lin, idx.shape)


def _coords(d, idx):
    """An advanced-index tuple addressing ``out[..., idx, ...]`` along ``d``."""
    xp = xp_of(idx)
    nd = idx.ndim
    return tuple(idx if k == d else xp.arange(idx.shape[k]).reshape((idx.shape[k],) + (1,) * (nd - k - 1))
                 for k in range(nd))


def _src_part(src, idx):
    """``src`` cut to the shape of ``idx`` (scatter reads only that corner)."""
    if src.shape == idx.shape:
        return src
    return src[tuple(slice(0, s) for s in idx.shape)]


def _on_flat(x, fn):
    """Run ``fn(flat)`` on a flat C-order view of ``x``, writing back when
    ``x`` is not contiguous."""
    if x.flags.c_contiguous:
        fn(x.reshape(-1))
        return x
    tmp = xp_of(x).ascontiguousarray(x)
    fn(tmp.reshape(-1))
    x[...] = tmp
    return x


def _segment_reduce(flat, lin, vals, op):
    """``flat[lin] = op(flat[lin], vals)`` with repeated positions all
    combined (op: 'sum', 'prod', 'amax', 'amin')."""
    xp = xp_of(flat)
    be = backend_of(flat)
    if op == "sum":
        be.scatter_add(flat, lin, vals)
        return
    ufunc_name = {"prod": "multiply", "amax": "maximum", "amin": "minimum"}[op]
    if lin.size == 0:
        return
    if xp is np:
        order = np.argsort(lin, kind="stable")
        sl = lin[order]
        starts = np.flatnonzero(np.concatenate(([True], sl[1:] != sl[:-1])))
        ufunc = getattr(np, ufunc_name)
        red = ufunc.reduceat(vals[order], starts)
        pos = sl[starts]
        flat[pos] = ufunc(flat[pos], red)
        return
    import cupyx

    if op == "amax" and flat.dtype.kind != "b":
        cupyx.scatter_max(flat, lin, vals)
        return
    if op == "amin" and flat.dtype.kind != "b":
        cupyx.scatter_min(flat, lin, vals)
        return
    # products: apply one rank of duplicates at a time (as many passes as the
    # most repeated position); each pass has unique positions
    order = xp.argsort(lin)
    sl, sv = lin[order], vals[order]
    rank = xp.arange(sl.size) - xp.searchsorted(sl, sl, side="left")
    ufunc = getattr(xp, ufunc_name)
    for r in range(builtins.int(rank.max()) + 1):
        sel = rank == r
        p = sl[sel]
        flat[p] = ufunc(flat[p], sv[sel])


def _scatter_add_along(out, d, idx, src):
    """``out[..idx..] += src`` along ``d`` (in place; duplicates add up)."""
    lin = _linear_index(out.shape, d, idx).reshape(-1)
    vals = src.reshape(-1) if src.shape == idx.shape else xp_of(out).broadcast_to(src, idx.shape).reshape(-1)
    _on_flat(out, lambda flat: backend_of(out).scatter_add(flat, lin, vals))


def _check_gather_shapes(x, d, idx, name):
    xs, ish = (x.shape or (1,)), (idx.shape or (1,))
    if len(ish) != len(xs):
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    for k, (a, b) in enumerate(zip(ish, xs)):
        if k != d and a > b:
            raise RuntimeError(f"Size does not match at dimension {k} expected index {list(idx.shape)} to be no "
                               f"larger than self {list(x.shape)} apart from dimension {d}")


# --- index_select -------------------------------------------------------------------------

class IndexSelect(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, d, idx):
        ctx.args = (x.shape, d, idx)
        return xp_of(x).take(x, idx, axis=d)

    @staticmethod
    def backward(ctx, gy):
        return _apply(IndexSelectBackward, (gy, *ctx.args), (gy._data, *ctx.args)), None, None


class IndexSelectBackward(Function):
    """Zeros of the input shape with ``gy`` added at ``idx`` along ``d``."""
    _array_forward = True
    _node_name = "IndexAddBackward0"

    @staticmethod
    def forward(ctx, gy, shape, d, idx):
        ctx.args = (d, idx)
        z = xp_of(gy).zeros(shape, gy.dtype)
        _index_add_axis(z, d, idx, gy)
        return z

    @staticmethod
    def backward(ctx, gg):
        d, idx = ctx.args
        return _apply(IndexSelect, (gg, d, idx), (gg._data, d, idx)), None, None, None


def _index_add_axis(target, d, idx, src):
    """``target[(:,)*d + (idx,)] += src`` in place, duplicates accumulating."""
    xp = xp_of(target)
    if d:
        target = xp.moveaxis(target, d, 0)
        src = xp.moveaxis(src, d, 0)
    backend_of(target).scatter_add(target, idx, src)


@declare_op()
def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """The entries of ``input`` at ``index`` (1-D) along ``dim``.

    Example::

        >>> fabric.tensor([[1, 2], [3, 4]]).index_select(1, fabric.tensor([1, 1]))
        tensor([[2, 2],
                [4, 4]])
    """
    x = input._data
    a = _index(index, x, "index_select")
    if a.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    d = _wrap_dim(dim, x.ndim)
    a = a.reshape(-1)
    n = x.shape[d] if x.ndim else 1
    if a.size and (builtins.int(a.min()) < 0 or builtins.int(a.max()) >= n):
        raise IndexError("index out of range in self")
    if x.ndim == 0:
        from .shape import reshape

        return reshape(_apply(IndexSelect, (reshape(input, (1,)), 0, a), (x.reshape(1), 0, a)), ())
    return _apply(IndexSelect, (input, d, a), (x, d, a))


# --- gather -----------------------------------------------------------------------------------

class Gather(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, d, idx):
        ctx.args = (x.shape, d, idx)
        x1, i1 = _a1(x), _a1(idx)
        xs = x1[tuple(slice(0, s) if k != d else slice(None) for k, s in enumerate(i1.shape))]
        return xp_of(x).take_along_axis(xs, i1, axis=d).reshape(idx.shape)

    @staticmethod
    def backward(ctx, gy):
        return _apply(GatherBackward, (gy, *ctx.args), (gy._data, *ctx.args)), None, None


class GatherBackward(Function):
    """Zeros of the input shape with ``gy`` scattered-added at ``idx``."""
    _array_forward = True
    _node_name = "ScatterAddBackward0"

    @staticmethod
    def forward(ctx, gy, shape, d, idx):
        ctx.args = (d, idx)
        z = xp_of(gy).zeros(shape, gy.dtype)
        _scatter_add_along(_a1(z), d, _a1(idx), _a1(gy))
        return z

    @staticmethod
    def backward(ctx, gg):
        d, idx = ctx.args
        return _apply(Gather, (gg, d, idx), (gg._data, d, idx)), None, None, None


@declare_op()
def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False, out: Tensor | None = None) -> Tensor:
    """``out[i][j] = input[i][index[i][j]]`` for ``dim=1`` (and likewise for
    other dims); ``index`` may be smaller than ``input`` off ``dim``.

    Example::

        >>> fabric.tensor([[1, 2], [3, 4]]).gather(1, fabric.tensor([[0, 0], [1, 0]]))
        tensor([[1, 1],
                [4, 3]])
    """
    x = input._data
    a = _index(index, x, "gather", what="int64")
    d = _wrap_dim(dim, x.ndim)
    _check_gather_shapes(x, d, a, "gather")
    _check_range(a, x.shape[d] if x.ndim else 1, d)
    r = _apply(Gather, (input, d, a), (x, d, a))
    if out is not None:
        from .inplace import copy_into_out

        return copy_into_out(out, r)
    return r


@declare_op()
def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None, *, out: Tensor | None = None) -> Tensor:
    """Pick values along ``dim`` at ``indices`` (broadcast against ``input``
    off ``dim``); with ``dim=None`` both are flattened.

    Example::

        >>> x = fabric.tensor([[10, 30, 20]])
        >>> x.take_along_dim(fabric.tensor([[0, 2, 1]]), 1)
        tensor([[10, 20, 30]])
    """
    from .shape import expand, reshape

    if not isinstance(indices, Tensor) or indices._data.dtype != np.int64:
        got = _tname(indices._data.dtype) if isinstance(indices, Tensor) else type(indices).__name__
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got {got}")
    if dim is None:
        r = gather(reshape(input, (-1,)), 0, reshape(indices, (-1,)))
    else:
        x, a = input._data, indices._data
        if x.ndim != a.ndim:
            raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of "
                               f"dimensions, but got {x.ndim} dimensions for input, and {a.ndim} dimensions for "
                               "indices")
        d = _wrap_dim(dim, x.ndim)
        sizes = list(x.shape)
        if sizes:
            sizes[d] = a.shape[d]
        from .shape import broadcast_shapes

        shape = tuple(broadcast_shapes(tuple(sizes), a.shape))
        xs = list(shape)
        if xs:
            xs[d] = x.shape[d]
        r = gather(expand(input, tuple(xs)), d, expand(indices, shape))
    if out is not None:
        from .inplace import copy_into_out

        return copy_into_out(out, r)
    return r


# --- scatter family ----------------------------------------------------------------------------

def _scatter_checks(x, d, a, src, name):
    """PyTorch's shape checks for scatter/scatter_add/scatter_reduce."""
    xs, ish = (x.shape or (1,)), (a.shape or (1,))
    if len(ish) != len(xs):
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if src is not None:
        ss = src.shape or (1,)
        if len(ss) != len(ish):
            raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
        if src.dtype != x.dtype:
            raise RuntimeError(f"{name}(): Expected self.dtype to be equal to src.dtype")
    bad = any(k != d and i > s for k, (i, s) in enumerate(zip(ish, xs))) or (
        src is not None and any(i > s for i, s in zip(ish, src.shape or (1,))))
    if bad:
        raise RuntimeError(f"Expected index {list(a.shape)} to be no larger than self {list(x.shape)} apart from "
                           f"dimension {d}" + (f" and to be no larger size than src {list(src.shape)}"
                                               if src is not None else ""))
    _check_range(a, xs[d], d)


def _scatter_into(out, d, idx, src, reduce):
    """The body of scatter / scatter_ on array ``out`` (modified in place)."""
    o1, i1 = _a1(out), _a1(idx)
    s = _src_part(_a1(src), i1) if getattr(src, "ndim", 0) else src
    if reduce is None:
        o1[_coords(d, i1)] = s
    elif reduce == "add":
        _scatter_add_along(o1, d, i1, s)
    else:
        lin = _linear_index(o1.shape, d, i1).reshape(-1)
        vals = xp_of(out).broadcast_to(s, i1.shape).reshape(-1)
        _on_flat(o1, lambda flat: _segment_reduce(flat, lin, vals, "prod"))
    return out


class Scatter(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, d, idx, src, reduce):
        ctx.args = (d, idx, getattr(src, "shape", None), reduce)
        return _scatter_into(x.copy(), d, idx, src, reduce)

    @staticmethod
    def backward(ctx, gy):
        d, idx, src_shape, reduce = ctx.args
        if reduce is not None:
            raise RuntimeError("derivative for aten::scatter is not implemented")
        need_x, _, _, need_src = ctx.needs_input_grad[:4]
        gx = _apply(Scatter, (gy, d, idx, 0, None), (gy._data, d, idx, gy._data.dtype.type(0), None)) \
            if need_x else None
        gsrc = _gather_padded(gy, d, idx, src_shape) if need_src else None
        return gx, None, None, gsrc, None


class ScatterInplace(Scatter):
    _is_inplace = True
    _node_name = "ScatterBackward0"

    @staticmethod
    def forward(ctx, x, d, idx, src, reduce):
        ctx.args = (d, idx, getattr(src, "shape", None), reduce)
        return _scatter_into(x, d, idx, src, reduce)


def _gather_padded(gy, d, idx, src_shape):
    """``gy.gather(d, idx)``, zero-padded to ``src_shape`` when the source
    was larger than the index (scatter reads only that corner of it)."""
    g = _apply(Gather, (gy, d, idx), (gy._data, d, idx))
    if src_shape is None or tuple(src_shape) == g._data.shape:
        return g
    if _prod(src_shape) == g._data.size:  # 0-d source with a 1-element index
        from .shape import reshape

        return reshape(g, src_shape)
    key = tuple(slice(0, s) for s in g._data.shape)
    return _apply(_PadCorner, (g, tuple(src_shape), key), (g._data, tuple(src_shape), key))


def _prod(shape):
    n = 1
    for s in shape:
        n *= s
    return n


class _PadCorner(Function):
    """``g`` placed in the corner ``key`` of zeros of ``shape``."""
    _array_forward = True

    @staticmethod
    def forward(ctx, g, shape, key):
        ctx.key = key
        z = xp_of(g).zeros(shape, g.dtype)
        z[key] = g
        return z

    @staticmethod
    def backward(ctx, gg):
        return gg[ctx.key], None, None


def _scatter(input, dim, index, src, value, reduce, inplace, name):
    x = input._data
    a = _index(index, x, name, what="int64")
    d = _wrap_dim(dim, x.ndim)
    if src is not None and not isinstance(src, Tensor):
        src, value = None, src
    if src is None and value is None:
        raise TypeError(f"{name}() missing required argument 'src' or 'value'")
    if reduce is not None and reduce not in ("add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    if reduce is not None and src is not None:
        warnings.warn("The reduce argument of torch.scatter with Tensor src is deprecated and will be removed in a "
                      "future PyTorch release. Use torch.scatter_reduce instead for more reduction options.",
                      UserWarning, stacklevel=3)
    s = _same_device(src, x, "scatter src") if src is not None else None
    _scatter_checks(x, d, a, s, name)
    cls = ScatterInplace if inplace else Scatter
    if src is None:
        v = _scalar_value(value, x, name)
        return _apply(cls, (input, d, a, value, reduce), (x, d, a, v, reduce))
    return _apply(cls, (input, d, a, src, reduce), (x, d, a, s, reduce))


@declare_op()
def scatter(input: Tensor, dim: int, index: Tensor, src: Tensor | None = None, *, value: float | None = None,
            reduce: str | None = None) -> Tensor:
    """A copy of ``input`` with ``src`` (a tensor, or a number ``value``)
    written at ``index`` along ``dim``: for ``dim=1``,
    ``out[i][index[i][j]] = src[i][j]``.  ``reduce='add'|'multiply'``
    combines instead of overwriting (not differentiable, as in PyTorch).

    Example::

        >>> fabric.zeros(2, 3).scatter(1, fabric.tensor([[2], [0]]), 1.0)
        tensor([[0., 0., 1.],
                [1., 0., 0.]])
    """
    return _scatter(input, dim, index, src, value, reduce, False, "scatter")


@declare_op()
def scatter_(self: Tensor, dim: int, index: Tensor, src: Tensor | None = None, *, value: float | None = None,
             reduce: str | None = None) -> Tensor:
    """In-place :func:`scatter`."""
    return _scatter(self, dim, index, src, value, reduce, True, "scatter_")


class ScatterAdd(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, d, idx, src):
        ctx.args = (d, idx, src.shape)
        out = x.copy()
        _scatter_add_along(_a1(out), d, _a1(idx), _src_part(_a1(src), _a1(idx)))
        return out

    @staticmethod
    def backward(ctx, gy):
        d, idx, src_shape = ctx.args
        gsrc = _gather_padded(gy, d, idx, src_shape) if ctx.needs_input_grad[3] else None
        return gy, None, None, gsrc


class ScatterAddInplace(ScatterAdd):
    _is_inplace = True
    _node_name = "ScatterAddBackward0"

    @staticmethod
    def forward(ctx, x, d, idx, src):
        ctx.args = (d, idx, src.shape)
        _scatter_add_along(_a1(x), d, _a1(idx), _src_part(_a1(src), _a1(idx)))
        return x


def _scatter_add(input, dim, index, src, inplace):
    name = "scatter_add_" if inplace else "scatter_add"
    x = input._data
    a = _index(index, x, name, what="int64")
    d = _wrap_dim(dim, x.ndim)
    s = _same_device(src, x, "scatter_add src")
    _scatter_checks(x, d, a, s, name)
    return _apply(ScatterAddInplace if inplace else ScatterAdd, (input, d, a, src), (x, d, a, s))


@declare_op()
def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """A copy of ``input`` with ``src`` added at ``index`` along ``dim``
    (repeated indices accumulate).

    Example::

        >>> fabric.zeros(3).scatter_add(0, fabric.tensor([0, 0, 2]), fabric.tensor([1., 2., 3.]))
        tensor([3., 0., 3.])
    """
    return _scatter_add(input, dim, index, src, False)


@declare_op()
def scatter_add_(self: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """In-place :func:`scatter_add`."""
    return _scatter_add(self, dim, index, src, True)


_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _identity(dtype, reduce):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dtype.kind == "f":
        return -np.inf if reduce == "amax" else np.inf
    if dtype.kind == "b":
        return reduce == "amin"
    info = np.iinfo(dtype)
    return info.min if reduce == "amax" else info.max


def _scatter_reduce_into(out, d, idx, src, reduce, include_self):
    """The body of scatter_reduce on array ``out`` (modified in place)."""
    o1, i1 = _a1(out), _a1(idx)
    s = _src_part(_a1(src), i1)
    xp = xp_of(out)
    lin = _linear_index(o1.shape, d, i1).reshape(-1)
    vals = s.reshape(-1)

    def body(flat):
        if not include_self:
            flat[lin] = _identity(flat.dtype, reduce)
        _segment_reduce(flat, lin, vals, "sum" if reduce == "mean" else reduce)
        if reduce == "mean":
            counts = xp.bincount(lin, minlength=flat.size)
            if include_self:
                counts = counts + 1
            counts = xp.maximum(counts, 1)
            if flat.dtype.kind == "f":
                flat /= counts.astype(flat.dtype)
            else:
                flat //= counts.astype(flat.dtype)

    _on_flat(o1, body)
    return out


class ScatterReduce(Function):
    _array_forward = True
    _node_name = "ScatterReduceBackward0"

    @staticmethod
    def forward(ctx, x, d, idx, src, reduce, include_self):
        ctx.args = (d, idx, reduce, include_self, src.shape)
        out = _scatter_reduce_into(x.copy(), d, idx, src, reduce, include_self)
        ctx.save_for_backward(x if reduce in ("prod", "amax", "amin") else None,
                              src if reduce in ("prod", "amax", "amin") else None,
                              out if reduce in ("prod", "amax", "amin") else None)
        return out

    @staticmethod
    def backward(ctx, gy):
        x, src, result = ctx.saved_tensors
        d, idx, reduce, include_self, src_shape = ctx.args
        gx, gsrc = _scatter_reduce_backward(gy, x, d, idx, src, result, reduce, include_self, src_shape,
                                            ctx.needs_input_grad)
        return gx, None, None, gsrc, None, None


class ScatterReduceInplace(ScatterReduce):
    _is_inplace = True

    @staticmethod
    def forward(ctx, x, d, idx, src, reduce, include_self):
        ctx.args = (d, idx, reduce, include_self, src.shape)
        keep = reduce in ("prod", "amax", "amin") and any(ctx.needs_input_grad)
        old = x.copy() if keep else None
        _scatter_reduce_into(x, d, idx, src, reduce, include_self)
        ctx.save_for_backward(old, src if keep else None, x if keep else None)
        return x


def _scatter_reduce_backward(gy, x, d, idx, src, result, reduce, include_self, src_shape, needs):
    """PyTorch's scatter_reduce gradient formulas (FunctionsManual.cpp)."""
    xp = xp_of(gy._data)
    idx_t = _const(idx)
    dt = gy._data.dtype

    def gather_(t):
        return _apply(Gather, (t, d, idx), (t._data, d, idx))

    def scatter_add_(base, t):
        return _apply(ScatterAdd, (base, d, idx, t), (base._data, d, idx, t._data))

    if reduce == "sum":
        gx, gsrc = gy, gather_(gy)
    elif reduce == "mean":
        n = xp.ones(gy._data.shape, dt) if include_self else xp.zeros(gy._data.shape, dt)
        n = _scatter_add_array(n, d, idx, xp.ones(idx.shape, dt))
        n = _const(xp.where(n == 0, dt.type(1), n))
        gx = gy / n
        gsrc = gather_(gy) / gather_(n)
    elif reduce == "prod":
        xd, sd, rd = x._data, src._data, result._data
        masked_self = x * _const((xd != 0).astype(dt)) + _const((xd == 0).astype(dt))
        masked_self_result = scatter_reduce(masked_self, d, idx_t, src, "prod", include_self=include_self)
        gx = gy * masked_self_result / masked_self
        s_part = _src_part(_a1(sd), _a1(idx)).reshape(idx.shape)
        src_zero = s_part == 0
        nz = _scatter_add_array(xp.zeros(xd.shape, dt), d, idx, src_zero.astype(dt))
        num_zeros = _take_along(nz, d, idx)
        single = src_zero & (num_zeros == 1)
        if src_shape != idx.shape:
            single_full = xp.zeros(src_shape, bool)
            single_full[tuple(slice(0, s) for s in idx.shape)] = single
            zero_full = xp.zeros(src_shape, bool)
            zero_full[tuple(slice(0, s) for s in idx.shape)] = src_zero
        else:
            single_full, zero_full = single, src_zero
        masked_src = src * _const((~single_full).astype(dt)) + _const(single_full.astype(dt))
        masked_src_result = scatter_reduce(x, d, idx_t, masked_src, "prod", include_self=include_self)
        src_div = src * _const((~zero_full).astype(dt)) + _const(zero_full.astype(dt))
        src_div = _apply(_Corner, (src_div, idx.shape), (src_div._data, idx.shape))
        m = _const(single.astype(dt))
        gsrc = m * gather_(gy * masked_src_result) + (1 - m) * (gather_(gy * result) / src_div)
    else:  # amax / amin: share the gradient evenly among the extreme values
        xd, rd = x._data, result._data
        s_part = _src_part(_a1(src._data), _a1(idx)).reshape(idx.shape)
        value = _take_along(rd, d, idx)
        self_is = (xd == rd).astype(dt)
        src_is = (s_part == value).astype(dt)
        n = _scatter_add_array(self_is.copy(), d, idx, src_is)
        distributed = gy / _const(n)
        gx = _const(self_is) * distributed
        gsrc = _const(src_is) * gather_(distributed)
    if not include_self:
        gx = _apply(Scatter, (gx, d, idx, 0, None), (gx._data, d, idx, dt.type(0), None))
    if needs[3] and tuple(src_shape) != idx.shape:
        gsrc = _apply(_PadCorner, (gsrc, tuple(src_shape), tuple(slice(0, s) for s in idx.shape)),
                      (gsrc._data, tuple(src_shape), tuple(slice(0, s) for s in idx.shape)))
    return (gx if needs[0] else None), (gsrc if needs[3] else None)


class _Corner(Function):
    """``x`` cut to its leading corner of ``shape`` (a copy)."""
    _array_forward = True

    @staticmethod
    def forward(ctx, x, shape):
        ctx.shape = x.shape
        ctx.key = tuple(slice(0, s) for s in shape)
        return _a1(x)[ctx.key].reshape(shape).copy()

    @staticmethod
    def backward(ctx, gy):
        return _apply(_PadCorner, (gy, ctx.shape, ctx.key), (gy._data, ctx.shape, ctx.key)), None


def _scatter_add_array(base, d, idx, vals):
    _scatter_add_along(_a1(base), d, _a1(idx), _a1(vals))
    return base


def _take_along(arr, d, idx):
    x1, i1 = _a1(arr), _a1(idx)
    xs = x1[tuple(slice(0, s) if k != d else slice(None) for k, s in enumerate(i1.shape))]
    return xp_of(arr).take_along_axis(xs, i1, axis=d).reshape(idx.shape)


def _scatter_reduce(input, dim, index, src, reduce, include_self, inplace):
    name = "scatter_reduce_" if inplace else "scatter_reduce"
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    x = input._data
    a = _index(index, x, name, what="int64")
    d = _wrap_dim(dim, x.ndim)
    s = _same_device(src, x, "scatter_reduce src")
    _scatter_checks(x, d, a, s, name)
    cls = ScatterReduceInplace if inplace else ScatterReduce
    return _apply(cls, (input, d, a, src, reduce, include_self), (x, d, a, s, reduce, include_self))


@declare_op()
def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                   include_self: bool = True) -> Tensor:
    """Combine ``src`` into a copy of ``input`` at ``index`` along ``dim``
    with ``reduce`` in ``sum``, ``prod``, ``mean``, ``amax``, ``amin``
    (``include_self=False`` ignores the original values where anything lands).

    Example::

        >>> x = fabric.zeros(2)
        >>> x.scatter_reduce(0, fabric.tensor([0, 0, 1]), fabric.tensor([1., 5., 2.]), "amax")
        tensor([5., 2.])
    """
    return _scatter_reduce(input, dim, index, src, reduce, include_self, False)


@declare_op()
def scatter_reduce_(self: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                    include_self: bool = True) -> Tensor:
    """In-place :func:`scatter_reduce`."""
    return _scatter_reduce(self, dim, index, src, reduce, include_self, True)


# --- index_add / index_copy / index_fill -------------------------------------------------------

def _index_dim_checks(x, d, a, src, name, exc=RuntimeError, negative=False, out_of_range=None):
    if a.ndim > 1:
        raise IndexError(f"{name}(): Index is supposed to be a vector")
    if src is not None:
        if src.dtype != x.dtype:
            raise RuntimeError(f"{name}(): self ({_tname(x.dtype)}) and source ({_tname(src.dtype)}) must have the "
                               "same scalar type")
        xs, ss = x.shape, src.shape
        if (len(xs) or 1) != (len(ss) or 1) or any(k != d and p != q for k, (p, q) in enumerate(zip(xs, ss))):
            raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the specified dimension. "
                               f"Got self.shape = {list(xs)} source.shape = {list(ss)}")
        n_src = ss[d] if ss else 1
        if a.size != n_src:
            raise RuntimeError(f"{name}(): Number of indices ({a.size}) should be equal to source.size(dim): "
                               f"({n_src}), for dim: {d}")
    if out_of_range is not None:  # PyTorch's message that names no index
        n = x.shape[d] if x.ndim else 1
        if a.size and (builtins.int(a.min()) < 0 or builtins.int(a.max()) >= n):
            raise exc(out_of_range)
        return
    _check_range(a, x.shape[d] if x.ndim else 1, d, exc, f"{name}(): " if exc is IndexError and src is not None
                 else "", negative)


class IndexAdd(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, d, idx, src, alpha):
        ctx.args = (d, idx, alpha, src.shape)
        out = x.copy()
        _index_add_axis(_a1(out), d, idx, _a1(src) * alpha if alpha != 1 else _a1(src))
        return out

    @staticmethod
    def backward(ctx, gy):
        d, idx, alpha, _ = ctx.args
        gsrc = None
        if ctx.needs_input_grad[3]:
            gsrc = _apply(IndexSelect, (gy, d, idx), (gy._data, d, idx)) if gy._data.ndim else \
                _select_scalar(gy, idx)
            if alpha != 1:
                gsrc = gsrc * alpha
        return gy, None, None, gsrc, None


def _select_scalar(gy, idx):
    from .shape import reshape

    return reshape(gy, (1,)) if idx.size else gy.new_zeros((0,))


class IndexAddInplace(IndexAdd):
    _is_inplace = True
    _node_name = "IndexAddBackward0"

    @staticmethod
    def forward(ctx, x, d, idx, src, alpha):
        ctx.args = (d, idx, alpha, src.shape)
        _index_add_axis(_a1(x), d, idx, _a1(src) * alpha if alpha != 1 else _a1(src))
        return x


def _index_add(input, dim, index, source, alpha, inplace):
    name = "index_add_" if inplace else "index_add"
    x = input._data
    a = _index(index, x, name)
    d = _wrap_dim(dim, x.ndim)
    s = _same_device(source, x, "index_add source")
    if x.ndim <= 1:  # PyTorch's 1-D kernel checks each index with its own message and class
        _index_dim_checks(x, d, a, s, "index_add_", IndexError, out_of_range="index out of range in self")
    else:
        _index_dim_checks(x, d, a, s, "index_add_")
    if x.dtype.kind in "iub" and isinstance(alpha, builtins.float):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
    a = a.reshape(-1)
    return _apply(IndexAddInplace if inplace else IndexAdd, (input, d, a, source, alpha), (x, d, a, s, alpha))


@declare_op()
def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: float = 1) -> Tensor:
    """A copy of ``input`` with ``alpha * source`` added at ``index`` along
    ``dim`` (repeated indices accumulate).

    Example::

        >>> fabric.zeros(3).index_add(0, fabric.tensor([2, 2]), fabric.tensor([1., 2.]))
        tensor([0., 0., 3.])
    """
    return _index_add(input, dim, index, source, alpha, False)


@declare_op()
def index_add_(self: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: float = 1) -> Tensor:
    """In-place :func:`index_add`."""
    return _index_add(self, dim, index, source, alpha, True)


def _along(x, d):
    """``x`` with dim ``d`` moved first (a view), for writes along ``d``."""
    x = _a1(x)
    return x if d == 0 else xp_of(x).moveaxis(x, d, 0)


class IndexCopy(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, d, idx, src):
        ctx.args = (d, idx, src.shape)
        out = x.copy()
        _along(out, d)[idx] = _along(src, d)
        return out

    @staticmethod
    def backward(ctx, gy):
        d, idx, _ = ctx.args
        need_x, need_src = ctx.needs_input_grad[0], ctx.needs_input_grad[3]
        gx = _apply(IndexFill, (gy, d, idx, None), (gy._data, d, idx, gy._data.dtype.type(0))) if need_x else None
        gsrc = None
        if need_src:
            gsrc = _apply(IndexSelect, (gy, d, idx), (gy._data, d, idx)) if gy._data.ndim else _select_scalar(gy, idx)
        return gx, None, None, gsrc


class IndexCopyInplace(IndexCopy):
    _is_inplace = True
    _node_name = "IndexCopyBackward0"

    @staticmethod
    def forward(ctx, x, d, idx, src):
        ctx.args = (d, idx, src.shape)
        _along(x, d)[idx] = _along(src, d)
        return x


def _index_copy(input, dim, index, source, inplace):
    x = input._data
    a = _index(index, x, "index_copy_", (np.dtype(np.int64),), "int64")
    d = _wrap_dim(dim, x.ndim)
    s = _same_device(source, x, "index_copy source")
    _index_dim_checks(x, d, a, s, "index_copy_", IndexError)
    a = a.reshape(-1)
    return _apply(IndexCopyInplace if inplace else IndexCopy, (input, d, a, source), (x, d, a, s))


@declare_op()
def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """A copy of ``input`` with the slices of ``source`` written at ``index`` along ``dim``.

    Example::

        >>> fabric.zeros(3).index_copy(0, fabric.tensor([2, 0]), fabric.tensor([1., 2.]))
        tensor([2., 0., 1.])
    """
    return _index_copy(input, dim, index, source, False)


@declare_op()
def index_copy_(self: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """In-place :func:`index_copy`."""
    return _index_copy(self, dim, index, source, True)


class IndexFill(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, d, idx, value):
        ctx.args = (d, idx)
        out = x.copy()
        _along(out, d)[idx] = value
        return out

    @staticmethod
    def backward(ctx, gy):
        d, idx = ctx.args
        gx = _apply(IndexFill, (gy, d, idx, None), (gy._data, d, idx, gy._data.dtype.type(0)))
        gv = None
        if ctx.needs_input_grad[3]:
            gv = (gy - gx).sum()
        return (gx if ctx.needs_input_grad[0] else None), None, None, gv


class IndexFillInplace(IndexFill):
    _is_inplace = True
    _node_name = "IndexFillBackward0"

    @staticmethod
    def forward(ctx, x, d, idx, value):
        ctx.args = (d, idx)
        _along(x, d)[idx] = value
        return x


def _index_fill(input, dim, index, value, inplace):
    x = input._data
    a = _index(index, x, "index_fill_", (np.dtype(np.int64),), "int64")
    d = _wrap_dim(dim, x.ndim)
    _index_dim_checks(x, d, a, None, "index_fill_", IndexError, negative=True)
    v = _scalar_value(value, x, "index_fill_")
    a = a.reshape(-1)
    vt = value if isinstance(value, Tensor) else None
    return _apply(IndexFillInplace if inplace else IndexFill, (input, d, a, vt), (x, d, a, v))


@declare_op()
def index_fill(input: Tensor, dim: int, index: Tensor, value: float | Tensor) -> Tensor:
    """A copy of ``input`` with ``value`` (a number or 0-d tensor) written at
    ``index`` along ``dim``.

    Example::

        >>> fabric.zeros(2, 2).index_fill(1, fabric.tensor([1]), 5.0)
        tensor([[0., 5.],
                [0., 5.]])
    """
    return _index_fill(input, dim, index, value, False)


@declare_op()
def index_fill_(self: Tensor, dim: int, index: Tensor, value: float | Tensor) -> Tensor:
    """In-place :func:`index_fill`."""
    return _index_fill(self, dim, index, value, True)


# --- index_put ----------------------------------------------------------------------------------

class IndexPut(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, values, key, accumulate):
        ctx.key, ctx.accumulate, ctx.vshape = key, accumulate, values.shape
        return _index_put_into(x.copy(), values, key, accumulate)

    @staticmethod
    def backward(ctx, gy):
        from .shape import reshape

        need_x, need_v = ctx.needs_input_grad[:2]
        gx = gv = None
        if need_x:
            gx = gy if ctx.accumulate else _apply(MaskOut, (gy, ctx.key), (gy._data, ctx.key))
        if need_v:
            gv = _index_key(gy, ctx.key)
            extra = len(ctx.vshape) - gv._data.ndim
            if extra > 0:
                gv = reshape(gv, (1,) * extra + gv._data.shape)
        return gx, gv, None, None


class IndexPutInplace(IndexPut):
    _is_inplace = True
    _node_name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx, x, values, key, accumulate):
        ctx.key, ctx.accumulate, ctx.vshape = key, accumulate, values.shape
        return _index_put_into(x, values, key, accumulate)


def _index_put_into(out, values, key, accumulate):
    basic, adv = key
    view = out[basic]
    if not accumulate:
        if adv is None:
            view[...] = values
        else:
            view[adv] = values
    elif adv is None:
        view += values
    else:
        _index_put_acc(view, adv, values)
    return out


def _index_put(input, indices, values, accumulate, inplace):
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"index_put(): argument 'indices' must be tuple of Tensors, not {type(indices).__name__}")
    for i, t_ in enumerate(indices):
        if not isinstance(t_, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(t_).__name__}")
    x = input._data
    v = _same_device(values, x, "index_put values")
    if v.dtype != x.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got {_tname(x.dtype)} for "
                           f"the destination and {_tname(v.dtype)} for the source.")
    key = _compile_key(tuple(indices), x)
    view = x[key[0]]
    tshape = view.shape if key[1] is None else _adv_layout(view.shape, key[1])[0]
    v = _fit_value(v, tshape, key[1] is not None)
    cls = IndexPutInplace if inplace else IndexPut
    return _apply(cls, (input, values, key, accumulate), (x, v, key, builtins.bool(accumulate)))


@declare_op()
def index_put(input: Tensor, indices: Sequence[Tensor | None], values: Tensor, accumulate: bool = False) -> Tensor:
    """``input[indices] = values`` on a copy (``accumulate=True`` adds,
    repeated indices accumulating).

    Example::

        >>> fabric.zeros(3).index_put((fabric.tensor([0, 0]),), fabric.tensor(1.), accumulate=True)
        tensor([2., 0., 0.])
    """
    return _index_put(input, indices, values, accumulate, False)


@declare_op()
def index_put_(self: Tensor, indices: Sequence[Tensor | None], values: Tensor, accumulate: bool = False) -> Tensor:
    """In-place :func:`index_put`."""
    return _index_put(self, indices, values, accumulate, True)


# --- masked ops ------------------------------------------------------------------------------------

def _mask(mask, x, name, what="boolean masks, but got mask with dtype"):
    if not isinstance(mask, Tensor):
        raise TypeError(f"{name}(): argument 'mask' must be Tensor, not {type(mask).__name__}")
    m = mask._data
    if m.dtype != np.bool_:
        if name == "masked_select":
            raise RuntimeError("masked_select: expected BoolTensor for mask")
        raise RuntimeError(f"{name} only supports boolean masks, but got mask with dtype "
                           f"{D.from_numpy_dtype(m.dtype).name.replace('uint8', 'unsigned char')}")
    if m.__class__ is not x.__class__:
        if m.ndim == 0:
            return xp_of(x).asarray(backend_of(m).to_numpy(m)) if x.__class__ is not np.ndarray else \
                backend_of(m).to_numpy(m)
        raise RuntimeError("Expected all tensors to be on the same device, but found at least two devices!")
    return m


def _broadcast2(a, b):
    try:
        return np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        from .shape import _broadcast_shape_of

        _broadcast_shape_of([_const(a), _const(b)])
        raise


class MaskedFill(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, mask, value):
        ctx.mask = mask
        return xp_of(x).where(mask, value, x)

    @staticmethod
    def backward(ctx, gy):
        m = ctx.mask
        zero = gy._data.dtype.type(0)
        gx = _apply(MaskedFill, (gy, m, None), (gy._data, m, zero)) if ctx.needs_input_grad[0] else None
        gv = (gy * _const(m.astype(gy._data.dtype))).sum() if ctx.needs_input_grad[2] else None
        return gx, None, gv


class MaskedFillInplace(MaskedFill):
    _is_inplace = True
    _node_name = "MaskedFillBackward0"

    @staticmethod
    def forward(ctx, x, mask, value):
        ctx.mask = mask
        x[xp_of(x).broadcast_to(mask, x.shape)] = value
        return x


def _masked_fill(input, mask, value, inplace):
    name = "masked_fill_"
    x = input._data
    m = _mask(mask, x, name)
    v = _scalar_value(value, x, name)
    if inplace:
        shape = _broadcast2(x, m)
        if shape != x.shape:
            raise RuntimeError(f"output with shape {list(x.shape)} doesn't match the broadcast shape {list(shape)}")
    else:
        _broadcast2(x, m)
    vt = value if isinstance(value, Tensor) else None
    return _apply(MaskedFillInplace if inplace else MaskedFill, (input, m, vt), (x, m, v))


@declare_op()
def masked_fill(input: Tensor, mask: Tensor, value: float | Tensor) -> Tensor:
    """``value`` (number or 0-d tensor) where ``mask`` is True, else
    ``input`` (``mask`` broadcasts).

    Example::

        >>> x = fabric.tensor([1., -2., 3.])
        >>> x.masked_fill(fabric.tensor([False, True, False]), 0.0)
        tensor([1., 0., 3.])
    """
    return _masked_fill(input, mask, value, False)


@declare_op()
def masked_fill_(self: Tensor, mask: Tensor, value: float | Tensor) -> Tensor:
    """In-place :func:`masked_fill`."""
    return _masked_fill(self, mask, value, True)


class MaskedSelect(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, mask, shape):
        xp = xp_of(x)
        mb = xp.broadcast_to(mask, shape)
        ctx.mask = mb
        return xp.broadcast_to(x, shape)[mb]

    @staticmethod
    def backward(ctx, gy):
        return _apply(MaskedSelectBackward, (gy, ctx.mask), (gy._data, ctx.mask)), None, None


class MaskedSelectBackward(Function):
    """Zeros of the broadcast shape with ``gy`` written where ``mask`` is True."""
    _array_forward = True
    _node_name = "MaskedScatterBackward0"

    @staticmethod
    def forward(ctx, gy, mask):
        ctx.mask = mask
        z = xp_of(gy).zeros(mask.shape, gy.dtype)
        z[mask] = gy
        return z

    @staticmethod
    def backward(ctx, gg):
        m = ctx.mask
        return _apply(MaskedSelect, (gg, m, m.shape), (gg._data, m, m.shape)), None


@declare_op()
def masked_select(input: Tensor, mask: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The elements of ``input`` where ``mask`` is True, as a 1-D tensor
    (``input`` and ``mask`` broadcast).

    Example::

        >>> x = fabric.tensor([[1, 2], [3, 4]])
        >>> x.masked_select(fabric.tensor([True, False]))
        tensor([1, 3])
    """
    x = input._data
    m = _mask(mask, x, "masked_select")
    shape = _broadcast2(x, m)
    r = _apply(MaskedSelect, (input, m, shape), (x, m, shape))
    if out is not None:
        from .inplace import copy_into_out

        return copy_into_out(out, r)
    return r


class MaskedScatter(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, mask, src, shape):
        xp = xp_of(x)
        mb = xp.broadcast_to(mask, shape)
        ctx.mask, ctx.src_shape = mb, src.shape
        out = xp.broadcast_to(x, shape).copy()
        _masked_scatter_into(out, mb, src)
        return out

    @staticmethod
    def backward(ctx, gy):
        m = ctx.mask
        gx = _apply(MaskedFill, (gy, m, None), (gy._data, m, gy._data.dtype.type(0))) if ctx.needs_input_grad[0] \
            else None
        gsrc = _apply(MaskedScatterSrcBackward, (gy, m, ctx.src_shape), (gy._data, m, ctx.src_shape)) \
            if ctx.needs_input_grad[2] else None
        return gx, None, gsrc, None


class MaskedScatterInplace(MaskedScatter):
    _is_inplace = True
    _node_name = "MaskedScatterBackward0"

    @staticmethod
    def forward(ctx, x, mask, src, shape):
        mb = xp_of(x).broadcast_to(mask, shape)
        ctx.mask, ctx.src_shape = mb, src.shape
        _masked_scatter_into(x, mb, src)
        return x


def _masked_scatter_into(out, mb, src):
    n = builtins.int(mb.sum())
    out[mb] = src.reshape(-1)[:n]


class MaskedScatterSrcBackward(Function):
    """The masked elements of ``gy`` in order, zero-padded to the source shape."""
    _array_forward = True

    @staticmethod
    def forward(ctx, gy, mask, src_shape):
        ctx.mask = mask
        sel = gy[mask]
        z = xp_of(gy).zeros(int(np.prod(src_shape)), gy.dtype)
        z[:sel.shape[0]] = sel
        return z.reshape(src_shape)

    @staticmethod
    def backward(ctx, gg):
        m = ctx.mask
        z = _const(xp_of(gg._data).zeros(m.shape, gg._data.dtype))
        return _apply(MaskedScatter, (z, m, gg, m.shape), (z._data, m, gg._data, m.shape)), None, None


def _masked_scatter(input, mask, source, inplace):
    x = input._data
    m = _mask(mask, x, "masked_scatter_")
    s = _same_device(source, x, "masked_scatter source")
    if s.dtype != x.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got{_tname(x.dtype)} "
                           f"and {_tname(s.dtype)}")
    shape = _broadcast2(x, m)
    if inplace and shape != x.shape:
        raise RuntimeError(f"output with shape {list(x.shape)} doesn't match the broadcast shape {list(shape)}")
    count = builtins.int(xp_of(m).broadcast_to(m, shape).sum())
    if s.size < count:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    cls = MaskedScatterInplace if inplace else MaskedScatter
    return _apply(cls, (input, m, source, shape), (x, m, s, shape))


@declare_op()
def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """A copy of ``input`` with the first elements of ``source`` (in order)
    written where ``mask`` is True.

    Example::

        >>> fabric.zeros(4).masked_scatter(fabric.tensor([True, False, True, False]), fabric.tensor([1., 2.]))
        tensor([1., 0., 2., 0.])
    """
    return _masked_scatter(input, mask, source, False)


@declare_op()
def masked_scatter_(self: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """In-place :func:`masked_scatter`."""
    return _masked_scatter(self, mask, source, True)


# --- take / put ------------------------------------------------------------------------------------

def _flat_index(index, x, name):
    if not isinstance(index, Tensor):
        raise TypeError(f"{name}(): argument 'index' must be Tensor, not {type(index).__name__}")
    a = index._data
    if a.dtype != np.int64:
        raise RuntimeError(f"{name}(): Expected a long tensor for index, but got {_tname(a.dtype)}")
    if a.__class__ is not x.__class__:
        raise RuntimeError("Expected all tensors to be on the same device, but found at least two devices!")
    n = x.size
    if a.size:
        lo, hi = builtins.int(a.min()), builtins.int(a.max())
        if lo < -n or hi >= n:
            bad = lo if lo < -n else hi
            raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")
    return _wrap_neg(xp_of(a), a, n)


class Take(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, idx):
        ctx.args = (x.shape, idx)
        return xp_of(x).take(x, idx)

    @staticmethod
    def backward(ctx, gy):
        return _apply(TakeBackward, (gy, *ctx.args), (gy._data, *ctx.args)), None


class TakeBackward(Function):
    """Zeros of the input shape with ``gy`` added at the flat positions ``idx``."""
    _array_forward = True
    _node_name = "PutBackward0"

    @staticmethod
    def forward(ctx, gy, shape, idx):
        ctx.idx = idx
        z = xp_of(gy).zeros(int(np.prod(shape)), gy.dtype)
        backend_of(gy).scatter_add(z, idx.reshape(-1), gy.reshape(-1))
        return z.reshape(shape)

    @staticmethod
    def backward(ctx, gg):
        return _apply(Take, (gg, ctx.idx), (gg._data, ctx.idx)), None, None


@declare_op()
def take(input: Tensor, index: Tensor) -> Tensor:
    """The elements of ``input`` read as 1-D at ``index`` (result has ``index``'s shape).

    Example::

        >>> fabric.tensor([[1, 2], [3, 4]]).take(fabric.tensor([0, 3, -1]))
        tensor([1, 4, 4])
    """
    x = input._data
    a = _flat_index(index, x, "take")
    return _apply(Take, (input, a), (x, a))


class Put(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, idx, src, accumulate):
        ctx.args = (idx, src.shape, accumulate)
        return _put_into(x.copy(), idx, src, accumulate)

    @staticmethod
    def backward(ctx, gy):
        idx, src_shape, accumulate = ctx.args
        gx = gsrc = None
        if ctx.needs_input_grad[0]:
            gx = gy if accumulate else _apply(Put, (gy, idx, None, False),
                                             (gy._data, idx, xp_of(gy._data).zeros(idx.shape, gy._data.dtype),
                                              False))
        if ctx.needs_input_grad[2]:
            from .shape import reshape

            gsrc = reshape(_apply(Take, (gy, idx), (gy._data, idx)), src_shape)
        return gx, None, gsrc, None


class PutInplace(Put):
    _is_inplace = True
    _node_name = "PutBackward0"

    @staticmethod
    def forward(ctx, x, idx, src, accumulate):
        ctx.args = (idx, src.shape, accumulate)
        return _put_into(x, idx, src, accumulate)


def _put_into(out, idx, src, accumulate):
    i, s = idx.reshape(-1), src.reshape(-1)
    if accumulate:
        _on_flat(out, lambda flat: backend_of(flat).scatter_add(flat, i, s))
    else:
        def assign(flat):
            flat[i] = s
        _on_flat(out, assign)
    return out


def _put(input, index, source, accumulate, inplace):
    name = "put_"
    x = input._data
    a = _flat_index(index, x, name)
    s = _same_device(source, x, "put source")
    if s.dtype != x.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got self.dtype = "
                           f"{_tname(x.dtype)} and source.dtype = {_tname(s.dtype)}")
    if s.size != a.size:
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, but got "
                         f"source.numel() = {s.size}, index.numel() = {a.size}")
    cls = PutInplace if inplace else Put
    return _apply(cls, (input, a, source, accumulate), (x, a, s, builtins.bool(accumulate)))


@declare_op()
def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of ``input`` (read as 1-D) with ``source`` written at ``index``
    (``accumulate=True`` adds, repeated indices accumulating).

    Example::

        >>> fabric.zeros(2, 2).put(fabric.tensor([0, 3]), fabric.tensor([1., 2.]))
        tensor([[1., 0.],
                [0., 2.]])
    """
    return _put(input, index, source, accumulate, False)


@declare_op()
def put_(self: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """In-place :func:`put`."""
    return _put(self, index, source, accumulate, True)


# --- nonzero ---------------------------------------------------------------------------------------

@declare_op()
def nonzero(input: Tensor, *, out: Tensor | None = None, as_tuple: bool = False) -> Tensor | tuple[Tensor, ...]:
    """Indices of the non-zero elements: an ``(n, ndim)`` int64 tensor, or
    with ``as_tuple=True`` one 1-D tensor per dim (a 0-d input counts as 1-D).

    Example::

        >>> fabric.tensor([[0, 1], [2, 0]]).nonzero()
        tensor([[0, 1],
                [1, 0]])
    """
    x = input._data
    xp = xp_of(x)
    nz = xp.nonzero(_a1(x))
    if as_tuple:
        return tuple(Tensor._make(a.astype(np.int64, copy=False), False) for a in nz)
    if x.ndim == 0:
        r = xp.zeros((nz[0].shape[0], 0), np.int64)
    else:
        r = xp.stack(nz, axis=1).astype(np.int64, copy=False) if nz else xp.zeros((0, 0), np.int64)
    r = Tensor._make(r, False)
    if out is not None:
        from .inplace import copy_into_out

        return copy_into_out(out, r)
    return r


@declare_op()
def argwhere(input: Tensor) -> Tensor:
    """``nonzero(input)``: one row of indices per non-zero element."""
    return nonzero(input)




# --- fill_diagonal_ ---------------------------------------------------------------------------

def _diagonal_positions(shape, wrap):
    """Index arrays (host side) of the main diagonal of ``shape``, PyTorch's
    (and NumPy's ``fill_diagonal``) rules: all dims equal beyond 2-D; a tall
    matrix restarts every ``cols + 1`` rows when ``wrap``."""
    if len(shape) < 2:
        raise RuntimeError("dimensions must larger than 1")
    if len(shape) > 2 and any(s != shape[0] for s in shape):
        raise RuntimeError("all dimensions of input must be of equal length")
    if len(shape) == 2:
        rows, cols = shape
        if wrap and rows > cols + 1:
            flat = np.arange(0, rows * cols, cols + 1)
            return (flat // cols, flat % cols) if cols else (flat[:0], flat[:0])
        n = min(rows, cols)
        return (np.arange(n),) * 2
    return (np.arange(shape[0]),) * len(shape)


class FillDiagonal(Function):
    _array_forward = True
    _is_inplace = True
    _node_name = "FillDiagonalBackward0"

    @staticmethod
    def forward(ctx, x, key, value):
        ctx.key = key
        x[key] = value
        return x

    @staticmethod
    def backward(ctx, gy):
        if gy._requires_grad:  # double backward: a differentiable product with a constant mask
            mask = xp_of(gy._data).ones(gy._data.shape, gy._data.dtype)
            mask[ctx.key] = 0
            return gy * _const(mask), None, None
        from .shape import clone  # shape imports indexing

        g = clone(gy)
        g._data[ctx.key] = 0  # a fresh tensor outside any graph
        return g, None, None


@declare_op(top_level=False)
def fill_diagonal_(self: Tensor, fill_value: float, wrap: bool = False) -> Tensor:
    """Fill the main diagonal with ``fill_value`` in place (2-D, or N-D with
    all dims equal); ``wrap`` restarts the diagonal below a tall matrix.

    Example::

        >>> fabric.zeros(5, 2).fill_diagonal_(1, wrap=True)
        tensor([[1., 0.],
                [0., 1.],
                [0., 0.],
                [1., 0.],
                [0., 1.]])
    """
    if isinstance(fill_value, Tensor):
        if fill_value._data.ndim != 0:
            raise TypeError("fill_diagonal_(): argument 'fill_value' (position 1) must be Number, not Tensor")
        fill_value = fill_value.item()
    if not isinstance(fill_value, numbers.Number):
        raise TypeError(f"fill_diagonal_(): argument 'fill_value' (position 1) must be Number, not "
                        f"{type(fill_value).__name__}")
    x = self._data
    rows_cols = _diagonal_positions(x.shape, wrap)
    xp = xp_of(x)
    key = rows_cols if xp is np else tuple(xp.asarray(k) for k in rows_cols)
    return _apply(FillDiagonal, (self, None, None), (x, key, fill_value))


# --- slice_scatter / select_scatter / diagonal_scatter -------------------------------------------

def _size_error(src_shape, slice_shape):
    return RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src_shape)}, "
                        f"slice size = {list(slice_shape)}")


class _EmbedScatter(Function):
    """``input`` with the region ``where`` (a key or a diagonal spec)
    replaced by ``src``: backward gives ``input`` the gradient outside the
    region and ``src`` the region's gradient, both with differentiable ops."""
    _array_forward = True

    @staticmethod
    def forward(ctx, x, src, spec):
        ctx.spec = spec
        out = x.copy()
        _region_assign(out, spec, src)
        return out

    @staticmethod
    def backward(ctx, gy):
        spec = ctx.spec
        gx = gsrc = None
        region = _region_of(gy, spec)
        if ctx.needs_input_grad[0]:
            gx = _embed(gy, region * 0, spec)
        if ctx.needs_input_grad[1]:
            from .shape import clone  # shape imports indexing

            gsrc = clone(region)
        return gx, gsrc, None


def _region_assign(out, spec, src):
    kind, arg = spec
    if kind == "key":
        out[arg] = src
    else:
        offset, d1, d2 = arg
        xp = xp_of(out)
        moved = xp.moveaxis(out, (d1, d2), (-2, -1))
        n1, n2 = moved.shape[-2:]
        if offset >= 0:
            n = builtins.max(builtins.min(n1, n2 - offset), 0)
            r, c = xp.arange(n), xp.arange(n) + offset
        else:
            n = builtins.max(builtins.min(n1 + offset, n2), 0)
            r, c = xp.arange(n) - offset, xp.arange(n)
        moved[..., r, c] = src


def _region_of(t, spec):
    kind, arg = spec
    return t[arg] if kind == "key" else t.diagonal(*arg)


def _embed(input, src, spec):
    s = src._data
    if s.dtype != input._data.dtype:
        s = s.astype(input._data.dtype)
    return _apply(_EmbedScatter, (input, src, spec), (input._data, s, spec))


def _check_src(input, src, spec, name):
    if not isinstance(src, Tensor):
        raise TypeError(f"{name}(): argument 'src' (position 2) must be Tensor, not {type(src).__name__}")
    slice_shape = _region_of(input.detach(), spec)._data.shape
    if src._data.shape != slice_shape:
        raise _size_error(src._data.shape, slice_shape)


@declare_op()
def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start: int | None = None, end: int | None = None,
                  step: int = 1) -> Tensor:
    """A copy of ``input`` with ``input[..., start:end:step, ...]`` (along
    ``dim``) replaced by ``src``; differentiable in both.

    Example::

        >>> fabric.zeros(2, 4).slice_scatter(fabric.ones(2, 2), 1, 0, None, 2)
        tensor([[1., 0., 1., 0.],
                [1., 0., 1., 0.]])
    """
    if step is None:
        step = 1
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    d = _wrap_dim(dim, input._data.ndim)
    spec = ("key", (slice(None),) * d + (slice(start, end, step),))
    _check_src(input, src, spec, "slice_scatter")
    return _embed(input, src, spec)


@declare_op()
def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """A copy of ``input`` with ``input.select(dim, index)`` replaced by ``src``.

    Example::

        >>> fabric.zeros(2, 2).select_scatter(fabric.ones(2), 0, -1)
        tensor([[0., 0.],
                [1., 1.]])
    """
    x = input._data
    d = _wrap_dim(dim, x.ndim)
    n = x.shape[d] if x.ndim else 1
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(x.shape)} at dimension {d}")
    spec = ("key", (slice(None),) * d + (builtins.int(index) % n,))
    _check_src(input, src, spec, "select_scatter")
    return _embed(input, src, spec)


@declare_op()
def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """A copy of ``input`` with ``input.diagonal(offset, dim1, dim2)``
    replaced by ``src``.

    Example::

        >>> fabric.zeros(2, 2).diagonal_scatter(fabric.ones(2))
        tensor([[1., 0.],
                [0., 1.]])
    """
    nd = input._data.ndim
    d1, d2 = _wrap_dim(dim1, nd), _wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    spec = ("diag", (builtins.int(offset), d1, d2))
    _check_src(input, src, spec, "diagonal_scatter")
    return _embed(input, src, spec)


# --- index_reduce -----------------------------------------------------------------------------------

class IndexReduce(ScatterReduce):
    """``index_reduce`` is ``scatter_reduce`` with the index broadcast along
    ``dim``: the forward and the gradient formulas are scatter_reduce's."""
    _node_name = "IndexReduceBackward0"


class IndexReduceInplace(ScatterReduceInplace):
    _node_name = "IndexReduceBackward0"


_INDEX_REDUCTIONS = ("prod", "mean", "amax", "amin")


def _index_reduce(input, dim, index, source, reduce, include_self, inplace):
    name = "index_reduce_"
    if reduce not in _INDEX_REDUCTIONS:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    x = input._data
    if not isinstance(source, Tensor):
        raise TypeError(f"index_reduce(): argument 'source' must be Tensor, not {type(source).__name__}")
    if isinstance(index, Tensor) and index._data.dtype.kind != "i" and index._data.dtype != np.uint8:
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index but got: {index.dtype}".replace(
            "torch.", "").replace("float32", "Float").replace("float64", "Double"))
    a = _index(index, x, name)
    d = _wrap_dim(dim, x.ndim)
    s = source._data
    if s.__class__ is not x.__class__:
        raise RuntimeError("Expected all tensors to be on the same device, but found at least two devices!")
    if a.ndim > 1:
        raise IndexError(f"{name}(): Index is supposed to be a vector, but got dim: {a.ndim} with type: "
                         f"{_tname(a.dtype)} and size: {list(a.shape)}")
    _index_dim_checks(x, d, a, s, name, exc=IndexError)
    xp = xp_of(x)
    a = a.reshape(-1).astype(np.int64, copy=False)
    a = xp.where(a < 0, a + (x.shape[d] if x.ndim else 1), a)
    if x.ndim:
        full = xp.ascontiguousarray(xp.broadcast_to(a.reshape((-1,) + (1,) * (x.ndim - d - 1)), s.shape))
    else:
        full = a.reshape(())
    cls = IndexReduceInplace if inplace else IndexReduce
    return _apply(cls, (input, d, full, source, reduce, include_self), (x, d, full, s, reduce, include_self))


@declare_op()
def index_reduce(input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                 include_self: bool = True) -> Tensor:
    """A copy of ``input`` where ``source``'s slices along ``dim`` are
    combined into the slices ``index`` names, with ``reduce`` in ``prod``,
    ``mean``, ``amax``, ``amin`` (``include_self=False`` leaves out the
    original values of the slices that receive something); differentiable.

    Example::

        >>> x = fabric.full((3, 2), 2.0)
        >>> x.index_reduce(0, fabric.tensor([0, 2, 0]), fabric.tensor([[1., 2.], [3., 4.], [5., 6.]]), "prod")
        tensor([[10., 24.],
                [ 2.,  2.],
                [ 6.,  8.]])
    """
    return _index_reduce(input, dim, index, source, reduce, include_self, False)


@declare_op(top_level=False)
def index_reduce_(self: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                  include_self: bool = True) -> Tensor:
    """In-place :func:`index_reduce`."""
    return _index_reduce(self, dim, index, source, reduce, include_self, True)




@declare_op(method=False)
def unravel_index(indices: Tensor, shape: int | Sequence[int]) -> tuple[Tensor, ...]:
    """Tuple of coordinate tensors for flat ``indices`` into ``shape``."""
    idx = indices._data if isinstance(indices, Tensor) else np.asarray(indices)
    if idx.dtype.kind not in "iu":
        raise TypeError("expected 'indices' to be integer dtype, but got " + str(idx.dtype))
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    total = math.prod(shape)
    if ((idx < -total) | (idx >= total)).any():
        raise RuntimeError("'indices' must be in range [-prod(shape), prod(shape) - 1]")
    coords = np.unravel_index(np.where(idx < 0, idx + total, idx), shape)
    return tuple(Tensor._make(np.asarray(c, dtype=np.int64), False) for c in coords)


# --- x[key] and x[key] = value -----------------------------------------------------

__all__ += ["getitem", "setitem"]

_SLICE = slice(None)

#
# A key is compiled into ``(basic, adv)``: ``basic`` holds ints, slices and
# None (NumPy basic indexing, always a view; ints select first, as in
# PyTorch), ``adv`` (or None) the integer index arrays applied to that view,
# with full slices for the other dims, so NumPy's placement rule for the
# result dims (adjacent index arrays stay in place, else go first) matches
# PyTorch's.  Bool masks become their nonzero() arrays; a bool scalar adds a
# dim indexed by [0] (True) or [] (False).

_K_INT, _K_SLICE, _K_NONE, _K_ELL, _K_BOOL, _K_MASK, _K_ARR = range(7)
_INDEX_DTYPES = (np.dtype(np.int64), np.dtype(np.int32))
_FLOAT_INDEX = ("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices "
                "(got {})")


def _seq_as_tuple(seq):
    """PyTorch's legacy rule: ``x[[0, slice(None)]]`` indexes like a tuple."""
    if len(seq) >= 32:
        return False
    return any(k is None or k is Ellipsis or isinstance(k, (slice, Tensor, list, tuple)) for k in seq)


def _on_device(arr, x):
    if arr.__class__ is x.__class__:
        return arr
    if x.__class__ is np.ndarray:
        raise RuntimeError("indices should be either on cpu or on the same device as the indexed tensor (cpu)")
    return backend_of(x).xp.asarray(arr)


def _slice_int(v):
    if v is None or v.__class__ is builtins.int:
        return v
    if isinstance(v, Tensor):
        return builtins.int(v.item())
    import operator

    return operator.index(v)


def _norm_slice(k):
    start, stop, step = k.start, k.stop, k.step
    if ((start is None or start.__class__ is builtins.int) and (stop is None or stop.__class__ is builtins.int)
            and (step is None or (step.__class__ is builtins.int and step > 0))):
        return k
    start, stop, step = _slice_int(start), _slice_int(stop), _slice_int(step)
    if step is not None:
        if step == 0:
            raise ValueError("slice step cannot be zero")
        if step < 0:
            raise ValueError("step must be greater than zero")
    return slice(start, stop, step)


def _classify_array(arr, x, from_tensor):
    dt = arr.dtype
    if dt == np.bool_ or dt == np.uint8:
        if dt == np.uint8:
            warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool "
                          "instead.", UserWarning, stacklevel=4)
            arr = arr.astype(bool)
        if arr.ndim == 0:
            return _K_BOOL, builtins.bool(arr)
        return _K_MASK, _on_device(arr, x)
    if dt in _INDEX_DTYPES or (not from_tensor and dt.kind in "iu"):
        if arr.ndim == 0 and arr.__class__ is np.ndarray:
            return _K_INT, builtins.int(arr)  # a 0-d CPU index tensor selects (a view), as in PyTorch
        return _K_ARR, _on_device(arr, x)
    raise IndexError("tensors used as indices must be long, int, byte or bool tensors")


def _seq_to_array(seq):
    from .._tensor import _to_array

    try:
        arr = _to_array(seq)
    except ValueError:
        raise IndexError("index sequences must be rectangular (nested lists of equal length)") from None
    if arr.size == 0:
        return arr.astype(np.int64)
    if arr.dtype.kind == "f":
        return arr.astype(np.int64)  # PyTorch truncates floats inside index lists
    if arr.dtype.kind not in "iub":
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    return arr


def _classify(k, x):
    cls = k.__class__
    if cls is builtins.int:
        return _K_INT, k
    if cls is slice:
        return _K_SLICE, _norm_slice(k)
    if k is None:
        return _K_NONE, None
    if k is Ellipsis:
        return _K_ELL, None
    if cls is builtins.bool or cls is np.bool_:
        return _K_BOOL, builtins.bool(k)
    if isinstance(k, Tensor):
        return _classify_array(k._data, x, True)
    if isinstance(k, np.integer):
        return _K_INT, builtins.int(k)
    if isinstance(k, np.ndarray):
        if k.dtype.kind == "f":
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        return _classify_array(k, x, False)
    if isinstance(k, (list, tuple, range)):
        return _classify_array(_seq_to_array(k), x, False)
    if isinstance(k, (builtins.float, np.floating)):
        raise IndexError(_FLOAT_INDEX.format("float"))
    if isinstance(k, str):
        raise TypeError("new(): invalid data type 'str'")
    if hasattr(k, "__index__"):
        import operator

        return _K_INT, operator.index(k)
    raise IndexError(_FLOAT_INDEX.format(type(k).__name__))


def _check_bounds(arr, n, dim):
    if arr.size:
        lo, hi = builtins.int(arr.min()), builtins.int(arr.max())
        if lo < -n or hi >= n:
            bad = lo if lo < -n else hi
            raise IndexError(f"index {bad} is out of bounds for dimension {dim} with size {n}")


def _compile_key(key, x):
    """PyTorch index -> ``(basic, adv)`` (see the comment above)."""
    if key.__class__ is not tuple:
        if isinstance(key, list) and _seq_as_tuple(key):
            warnings.warn("Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed "
                          "in pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be "
                          "interpreted as tensor index, x[torch.tensor(seq)], which will result either in an error or "
                          "a different result", UserWarning, stacklevel=3)
            key = tuple(key)
        else:
            key = (key,)
    items = [_classify(k, x) for k in key]
    shape = x.shape
    nd = len(shape)
    consumed = 0
    for kind, v in items:
        if kind in (_K_INT, _K_SLICE, _K_ARR):
            consumed += 1
        elif kind == _K_MASK:
            consumed += v.ndim
    if consumed > nd:
        if nd == 0 and any(kind == _K_INT for kind, _ in items):
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in "
                             "C++ to convert a 0-dim tensor to a number")
        raise IndexError(f"too many indices for tensor of dimension {nd}")
    basic, adv, pending = [], [], []
    dim = 0
    has_adv = seen_ellipsis = False
    for kind, v in items:
        if kind == _K_INT:
            n = shape[dim]
            if not -n <= v < n:
                raise IndexError(f"index {v} is out of bounds for dimension {dim} with size {n}")
            basic.append(v)
            dim += 1
        elif kind == _K_SLICE:
            basic.append(v)
            adv.append(_SLICE)
            dim += 1
        elif kind == _K_NONE:
            basic.append(None)
            adv.append(_SLICE)
        elif kind == _K_ELL:
            cnt = 0 if seen_ellipsis else nd - consumed
            seen_ellipsis = True
            basic.extend((_SLICE,) * cnt)
            adv.extend((_SLICE,) * cnt)
            dim += cnt
        elif kind == _K_BOOL:
            basic.append(None)
            adv.append(xp_of(x).zeros(1 if v else 0, np.int64))
            has_adv = True
        elif kind == _K_MASK:
            k = v.ndim
            for j in range(k):
                if v.shape[j] != shape[dim + j]:
                    raise IndexError(f"The shape of the mask {list(v.shape)} at index {j} does not match the shape of "
                                     f"the indexed tensor {list(shape)} at index {dim + j}")
            basic.extend((_SLICE,) * k)
            adv.extend(v.nonzero())
            dim += k
            has_adv = True
        else:
            pending.append((len(adv), shape[dim], dim))
            basic.append(_SLICE)
            adv.append(v)
            dim += 1
            has_adv = True
    basic.append(Ellipsis)
    if not has_adv:
        return tuple(basic), None
    while adv[-1].__class__ is slice:
        adv.pop()
    shapes = [a.shape for a in adv if a.__class__ is not slice]
    if len(shapes) > 1:
        try:
            np.broadcast_shapes(*shapes)
        except ValueError:
            raise IndexError("shape mismatch: indexing tensors could not be broadcast together with shapes "
                             + ", ".join(str(list(s)) for s in shapes)) from None
    if pending:
        basic = tuple(basic)
        if _prod(_adv_layout(x[basic].shape, adv)[0]):
            for pos, n, d in pending:
                _check_bounds(adv[pos], n, d)
        else:  # an empty result reads nothing: PyTorch does not check the indices then
            for pos, _n, _d in pending:
                adv[pos] = xp_of(x).zeros(adv[pos].shape, np.int64)
    return tuple(basic), tuple(adv)


def _adv_layout(vshape, adv):
    """``(result shape, positions of the index arrays, their broadcast
    shape, whether they are adjacent)`` for ``view[adv]``."""
    pos = [i for i, a in enumerate(adv) if a.__class__ is not slice]
    b = np.broadcast_shapes(*(adv[i].shape for i in pos))
    adjacent = pos[-1] - pos[0] + 1 == len(pos)
    if adjacent:
        shape = vshape[:pos[0]] + b + vshape[pos[-1] + 1:]
    else:
        shape = b + tuple(s for i, s in enumerate(vshape) if i not in pos)
    return shape, pos, b, adjacent


def _index_put_acc(target, adv, values):
    """``target[adv] += values`` with repeated indices accumulating (in place).

    The index arrays are folded into one linear index over their dims, so
    the accumulation is a single 1-D ``Backend.scatter_add`` into a
    ``(positions, rest)`` buffer (fast on both backends)."""
    xp = xp_of(target)
    rshape, pos, b, adjacent = _adv_layout(target.shape, adv)
    if values.shape != rshape:
        values = xp.broadcast_to(values, rshape)
    nb = len(b)
    if adjacent and pos[0] and nb:
        values = xp.moveaxis(values, tuple(range(pos[0], pos[0] + nb)), tuple(range(nb)))
    sizes = [target.shape[i] for i in pos]
    rest = [i for i in range(target.ndim) if i not in pos]
    rsizes = [target.shape[i] for i in rest]
    lin = None
    for i, n in zip(pos, sizes):
        a = adv[i].astype(np.int64, copy=False)
        a = xp.where(a < 0, a + n, a)
        lin = a if lin is None else lin * n + a
    lin = xp.broadcast_to(lin, b).reshape(-1)
    rows, cols = _prod(sizes), _prod(rsizes)
    vals = values.reshape(lin.shape[0], cols)
    if pos[-1] == len(pos) - 1 and target.flags.c_contiguous:  # leading index dims: accumulate in place
        backend_of(target).scatter_add(target.reshape(rows, cols), lin, vals)
        return
    buf = xp.zeros((rows, cols), target.dtype)
    backend_of(target).scatter_add(buf, lin, vals)
    perm = pos + rest
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    target += buf.reshape(sizes + rsizes).transpose(inv)


def _index_array(x, key):
    basic, adv = key
    y = x[basic]
    return y if adv is None else y[adv]


class Slice(Function):
    """Basic indexing (ints, slices, None): a view."""
    _array_forward = True
    _ctx_slots = ("shape", "key")
    _exact_grads = True
    _is_view = True
    _node_name = "SliceBackward0"

    @staticmethod
    def forward(ctx, x, key):
        ctx.shape, ctx.key = x.shape, key
        return x[key[0]]

    @staticmethod
    def backward(ctx, gy):
        return _apply(IndexBackward, (gy, ctx.shape, ctx.key), (gy._data, ctx.shape, ctx.key)), None

    @staticmethod
    def jvp(ctx, t, _):
        return _apply1(ctx._fn, t, (t._data, ctx.key))   # the same indexing of the tangent


class Select(Slice):
    """``x[i]`` and keys whose last effective item is an int (PyTorch's node name)."""
    _node_name = "SelectBackward0"


class UnsqueezeIndex(Slice):
    """Keys whose last effective item is None."""
    _node_name = "UnsqueezeBackward0"


class AliasIndex(Slice):
    """Keys of full slices and Ellipsis only (``x[:]``, ``x[...]``)."""
    _node_name = "AliasBackward0"


def _view_fn(basic, shape):
    """The Function for a basic key, named like the last op PyTorch applies
    for it (full slices are skipped there): Select, Slice, Unsqueeze or Alias."""
    fn = AliasIndex
    dim = 0
    for k in basic:
        if k is None:
            fn = UnsqueezeIndex
        elif k.__class__ is slice:
            # PyTorch skips a slice in a tuple key when start is 0, step 1 and stop >= the length
            if k is not _SLICE and (k.start not in (None, 0) or k.step not in (None, 1)
                                    or (k.stop is not None and k.stop < shape[dim])):
                fn = Slice
            dim += 1
        elif k is not Ellipsis:
            fn = Select
            dim += 1
    return fn


class Index(Function):
    """Advanced indexing (integer arrays, bool masks): a copy."""
    _array_forward = True
    _ctx_slots = ("shape", "key")
    _exact_grads = True

    @staticmethod
    def forward(ctx, x, key):
        ctx.shape, ctx.key = x.shape, key
        return _index_array(x, key)

    backward = Slice.backward
    jvp = Slice.jvp


class IndexBackward(Function):
    """Scatter ``gy`` into zeros of the input shape (duplicates add up)."""
    _array_forward = True
    _node_name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx, gy, shape, key):
        ctx.key = key
        z = xp_of(gy).zeros(shape, gy.dtype)
        basic, adv = key
        if adv is None:
            z[basic] = gy
        else:
            _index_put_acc(z[basic], adv, gy)
        return z

    @staticmethod
    def backward(ctx, gg):
        return _index_key(gg, ctx.key), None, None


def _index_key(t, key):
    """``t`` indexed by a compiled key (differentiable)."""
    return _apply(Slice if key[1] is None else Index, (t, key), (t._data, key))


def _plain_slice(key):
    """A slice of Python ints/None with a positive step (the common case)."""
    start, stop, step = key.start, key.stop, key.step
    return ((start is None or start.__class__ is builtins.int) and (stop is None or stop.__class__ is builtins.int)
            and (step is None or (step.__class__ is builtins.int and step > 0)))


def getitem(input: Tensor, key: Any) -> Tensor:
    """``input[key]`` with PyTorch's indexing rules: ints, slices (positive
    steps), None, Ellipsis, integer tensors/lists/arrays, bool masks and
    bool scalars, in any mix. Basic indexing gives a view, advanced a copy.

    Example::

        >>> x = fabric.arange(12).reshape(3, 4)
        >>> x[1, 1:3]
        tensor([5, 6])
        >>> x[[0, 2], -1]
        tensor([ 3, 11])
        >>> x[x > 9]
        tensor([10, 11])
    """
    x = input._data
    if key.__class__ is builtins.int and x.ndim:
        n = x.shape[0]
        if not -n <= key < n:
            raise IndexError(f"index {key} is out of bounds for dimension 0 with size {n}")
        k = ((key, Ellipsis), None)
        return _apply1(Select, input, (x, k))
    if key.__class__ is slice and x.ndim and _plain_slice(key):  # a slice alone always gives NumPy a view
        if (not input._requires_grad or not _state.enabled) and _hook.observer is None:  # Slice.forward's call
            return _make_view(input, x[key], False, None)
        return _record1(Slice, input, (x, (key, None)))
    k = _compile_key(key, x)
    if k[1] is not None:
        return _apply(Index, (input, k), (x, k))
    # a slice alone is always SliceBackward0 in PyTorch, even x[:]
    return _apply(Slice if key.__class__ is slice else _view_fn(k[0], x.shape), (input, k), (x, k))


class SetItem(Function):
    """``x[key] = value`` recorded as an in-place op on ``x``."""
    _array_forward = True
    _is_inplace = True
    _node_name = "CopySlices"

    @staticmethod
    def forward(ctx, x, value, key, vshape):
        ctx.key, ctx.vshape = key, vshape
        basic, adv = key
        if adv is None:
            x[basic] = value
        else:
            x[basic][adv] = value
        return x

    @staticmethod
    def backward(ctx, gy):
        need_x, need_v = ctx.needs_input_grad[:2]
        gx = gv = None
        if need_v:
            gv = _index_key(gy, ctx.key)
            extra = len(ctx.vshape) - gv._data.ndim
            if extra > 0:
                from .shape import reshape  # shape imports indexing

                gv = reshape(gv, (1,) * extra + gv._data.shape)
        if need_x:
            gx = _apply(MaskOut, (gy, ctx.key), (gy._data, ctx.key))
        return gx, gv, None, None


class MaskOut(Function):
    """Copy of ``g`` with ``g[key] = 0`` (the gradient of overwritten elements)."""
    _array_forward = True

    @staticmethod
    def forward(ctx, g, key):
        ctx.key = key
        out = g.copy()
        basic, adv = key
        if adv is None:
            out[basic] = 0
        else:
            out[basic][adv] = 0
        return out

    @staticmethod
    def backward(ctx, gg):
        return _apply(MaskOut, (gg, ctx.key), (gg._data, ctx.key)), None


def _value_array(input, value, x):
    """``value`` (Tensor, number, sequence) as something NumPy/CuPy can assign into ``x``."""
    if isinstance(value, Tensor):
        v = value._data
        if v.__class__ is not x.__class__:
            if v.ndim != 0:
                from ._util import device_mismatch

                device_mismatch(input, value)
            v = backend_of(x).xp.asarray(backend_of(v).to_numpy(v)) if x.__class__ is not np.ndarray else \
                backend_of(v).to_numpy(v)
        return v if v.dtype == x.dtype else v.astype(x.dtype)
    if isinstance(value, (builtins.bool, builtins.int, builtins.float, builtins.complex, np.generic)):
        return checked_scalar(scalar_value(value), x.dtype)
    if isinstance(value, (list, tuple, np.ndarray)):
        return xp_of(x).asarray(np.asarray(value), dtype=x.dtype)
    raise TypeError(f"can't assign a {type(value).__name__} to a {input.type()}")


def _fit_value(v, tshape, advanced):
    """Check that ``v`` broadcasts to the indexed shape (leading 1s may be
    dropped, as in PyTorch) and drop them."""
    vs = v.shape
    while len(vs) > len(tshape) and vs[0] == 1:
        vs = vs[1:]
    if len(vs) <= len(tshape) and all(a == b or a == 1 for a, b in zip(vs[::-1], tshape[::-1])):
        return v.reshape(vs) if len(vs) != v.ndim else v
    if advanced:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(v.shape)} cannot be broadcast to indexing "
                           f"result of shape {list(tshape)}")
    if len(vs) > len(tshape):
        raise RuntimeError(f"expand(torch.FloatTensor{{{list(v.shape)}}}, size={list(tshape)}): the number of sizes "
                           f"provided ({len(tshape)}) must be greater or equal to the number of dimensions in the "
                           f"tensor ({len(v.shape)})")
    lead = len(tshape) - len(vs)
    for i in range(len(vs) - 1, -1, -1):
        if vs[i] != 1 and vs[i] != tshape[lead + i]:
            raise RuntimeError(f"The expanded size of the tensor ({tshape[lead + i]}) must match the existing size "
                               f"({vs[i]}) at non-singleton dimension {lead + i}.  Target sizes: {list(tshape)}.  "
                               f"Tensor sizes: {list(v.shape)}")
    raise AssertionError("unreachable")


def setitem(input: Tensor, key: Any, value: Tensor | float) -> None:
    """``input[key] = value``: in place, bumps the version, differentiable
    (on non-leaf tensors; on leaves that require grad only under no_grad).

    Example::

        >>> x = fabric.zeros(2, 3)
        >>> x[:, [0, 2]] = fabric.tensor([1., 2.])
        >>> x
        tensor([[1., 0., 2.],
                [1., 0., 2.]])
    """
    x = input._data
    k = _compile_key(key, x) if not (key.__class__ is builtins.int and x.ndim and -x.shape[0] <= key < x.shape[0]) \
        else ((key, Ellipsis), None)
    v = _value_array(input, value, x)
    basic, adv = k
    view = x[basic]
    check_no_internal_overlap(view)
    if hasattr(v, "shape"):
        tshape = view.shape if adv is None else _adv_layout(view.shape, adv)[0]
        vshape = v.shape
        v = _fit_value(v, tshape, adv is not None)
    else:
        vshape = ()
    if _state.enabled and (input._requires_grad or (isinstance(value, Tensor) and value._requires_grad)):
        _apply(SetItem, (input, value, k, vshape), (x, v, k, vshape))
        return
    if adv is None:
        view[...] = v
    else:
        view[adv] = v
    input._bump_version()


__all__ += declared_names(__name__)
