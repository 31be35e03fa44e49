"""Reductions and scans: sum, mean, nansum, nanmean, prod, max/min, amax/amin,
aminmax, argmax/argmin, var/std (and var_mean/std_mean), logsumexp, norm,
cumsum, cumprod, cummax/cummin, logcumsumexp, all/any, count_nonzero.

``dim`` may be an int, a tuple/list of ints or None (all dims) wherever
PyTorch allows; an empty tuple means "all dims" as in PyTorch (except for
``all``/``any``, where PyTorch reduces nothing).  Results follow PyTorch's
dtypes: integer and bool sums/products are int64, arg-reductions int64,
mean/var/std/logsumexp/norm need (or produce) floating point.

Gradients on ties follow PyTorch: ``max(dim)``/``min(dim)`` send the
gradient to the returned index; ``max()``/``min()`` without dim, ``amax``,
``amin`` and ``aminmax`` spread it evenly over the tied elements.

Also home of the index-selection Functions (:func:`_gather`) that the
sorting ops (:mod:`fabric.ops.sorting`) reuse, and of the result
namedtuples (``fabric.return_types.max`` ...).

Example::

    >>> import fabric
    >>> x = fabric.tensor([[1., 5., 2.], [4., 0., 4.]])
    >>> x.max(1)
    fabric.return_types.max(
    values=tensor([5., 4.]),
    indices=tensor([1, 0]))
    >>> x.amax(1)
    tensor([5., 4.])
    >>> x.var(1, correction=0)
    tensor([2.8889, 3.5556])
"""
from __future__ import annotations

import builtins
import collections
import math
import sys
import types
import warnings
from collections.abc import Sequence

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor, _wrap_dim
from ..autograd.function import Function, _apply, _apply1, _record1
from ..autograd.grad_mode import state as _grad_state
from ..autograd.observe import hook as _hook
from ..backends import backend_of
from ._registry import declare_op
from ._registry import public_names as declared_names
from ._util import normalize_dims, reject_complex, shape_args, xp_of
from .join import cat
from .shape import narrow

__all__ = ["return_types"]  # + the declared ops (end of module)

# This module defines sum/max/min/all/any: keep the builtins at hand.
_bool, _int, _float, _range = builtins.bool, builtins.int, builtins.float, builtins.range
_bmax, _bmin, _bany, _ball = builtins.max, builtins.min, builtins.any, builtins.all
_INT = np.dtype(np.int64)
_ndarray = np.ndarray
_F16 = np.dtype(np.float16)
_asarray = np.asarray
_add_reduce = np.add.reduce
_ALL_DIMS = tuple(tuple(_range(n)) for n in _range(8))


def _all_dims(ndim):
    return _ALL_DIMS[ndim] if ndim < 8 else tuple(_range(ndim))


# --- result namedtuples (torch.return_types) --------------------------------

return_types = types.ModuleType("fabric.return_types", "Named tuples returned by ops with several results "
                                                       "(``values, indices`` ...), as in ``torch.return_types``.")


def _return_type(name, fields):
    cls = collections.namedtuple(name, fields)

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
        return f"fabric.return_types.{name}(\n{body})"

    cls.__repr__ = __repr__
    cls.__module__ = "fabric.return_types"
    setattr(return_types, name, cls)
    return cls


for _name in ("max", "min", "sort", "topk", "kthvalue", "median", "nanmedian", "mode", "cummax", "cummin"):
    _return_type(_name, ("values", "indices"))
_return_type("aminmax", ("min", "max"))
_return_type("histogram", ("hist", "bin_edges"))
sys.modules.setdefault("fabric.return_types", return_types)


# --- helpers ------------------------------------------------------------------

def _const(a):
    """A constant (non-differentiable) Tensor on an array (NumPy scalars from
    0-d arithmetic become 0-d arrays)."""
    if isinstance(a, np.generic):
        a = np.asarray(a)
    return Tensor._make(a, False)


def _dims(dim, ndim):
    """``dim`` as a sorted tuple of axes; None or an empty sequence mean all
    dims (PyTorch); a 0-d tensor accepts dim 0/-1 and reduces nothing."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(_range(ndim))
    dims = normalize_dims(dim, ndim)
    return dims if ndim else ()


def _expand_back(gy, shape, dims, keepdim):
    """Broadcast a reduced gradient back to the input ``shape``."""
    if not keepdim and dims:
        kept = list(shape)
        for d in dims:
            kept[d] = 1
        gy = gy.reshape(kept)
    return gy.expand(shape)


def _keep(a, dims, keepdim):
    """An array reduced over ``dims`` with the reduced axes restored as 1."""
    if keepdim or not dims:
        return a
    kept = list(a.shape)
    for d in dims:
        kept.insert(d, 1)
    return a.reshape(kept)


def _reduced_shape(shape, dims, keepdim):
    if keepdim:
        return tuple(1 if d in dims else s for d, s in enumerate(shape))
    return tuple(s for d, s in enumerate(shape) if d not in dims)


def _numel(shape, dims):
    n = 1
    for d in dims:
        n *= shape[d]
    return n


def _reduce_dtype(x, dtype):
    if dtype is not None:
        return D.to_dtype(dtype).np
    if x.dtype.kind in "biu":
        return _INT
    return None


def _out(result, out):
    if out is None:
        return result
    from .inplace import copy_into_out

    return copy_into_out(out, result)


def _out_tuple(result, out):
    """``out=(values, indices)`` for ops returning a namedtuple."""
    if out is None:
        return result
    from .inplace import copy_into_out

    if not isinstance(out, (tuple, list)) or len(out) != len(result):
        raise TypeError(f"out must be a tuple of {len(result)} Tensors")
    return type(result)(*(copy_into_out(o, r) for o, r in zip(out, result)))


def _torch_name(dt):
    return {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
            "float32": "Float", "float64": "Double", "float16": "Half", "complex64": "ComplexFloat",
            "complex128": "ComplexDouble"}.get(dt.name, dt.name)


def _check_nonempty(x, dim, name, sep="()"):
    """PyTorch's errors for identity-less reductions (max-like) over an empty
    dimension; ``dim`` as the caller gave it (the message repeats it)."""
    if x.size:
        return
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        raise RuntimeError(f"{name}{sep}: Expected reduction dim to be specified for input.numel() == 0. Specify "
                           "the reduction dim with the 'dim' argument.")
    for d in (dim if isinstance(dim, (tuple, list)) else (dim,)):
        if x.shape[_wrap_dim(d, x.ndim)] == 0:
            raise IndexError(f"{name}{sep}: Expected reduction dim {d} to have non-zero size.")


def _float_input(input, name):
    x = input._data
    if x.dtype.kind != "f":
        raise RuntimeError(f"{name}: Expected a floating point tensor as input. Got {_torch_name(x.dtype)}")
    return x


def _scan(xp, op, x, axis, native=True):
    """``op.accumulate(x, axis)`` for an associative binary ufunc ``op``
    (maximum, minimum, logaddexp):
    NumPy's C loop, or on CuPy (whose ufuncs may lack ``accumulate``) a
    log-step (Hillis-Steele) scan: ceil(log2 n) vectorised passes."""
    if native and xp is np:
        return op.accumulate(x, axis=axis)
    r = xp.moveaxis(x, axis, -1).copy()
    n = r.shape[-1]
    s = 1
    while s < n:
        r[..., s:] = op(r[..., s:], r[..., :-s])  # the right side is evaluated before the store
        s *= 2
    return xp.moveaxis(r, -1, axis)


class _quiet:
    """Silence NumPy's divide/invalid warnings: PyTorch returns inf/nan quietly."""

    __slots__ = ("old",)

    def __enter__(self):
        self.old = np.seterr(divide="ignore", invalid="ignore", over="ignore", under="ignore")

    def __exit__(self, *exc):
        np.seterr(**self.old)


# --- gather / scatter along a dim (value-selecting reductions) ----------------

def _flat_index(xp, idx, axis, shape):
    """Linear (C-order) positions in an array of ``shape`` of the entries
    ``idx`` selects along ``axis`` (``idx`` matches ``shape`` elsewhere)."""
    nd = len(shape)
    strides = [1] * nd
    acc = 1
    for d in _range(nd - 1, -1, -1):
        strides[d] = acc
        acc *= shape[d]
    lin = idx.astype(np.int64) * strides[axis]
    for d in _range(nd):
        if d != axis and idx.shape[d] > 1:
            s = [1] * nd
            s[d] = idx.shape[d]
            lin = lin + (xp.arange(idx.shape[d], dtype=np.int64) * strides[d]).reshape(s)
    return lin


class _Gather(Function):
    """``take_along_axis(x, idx, axis)`` (squeezing ``axis`` unless keepdim);
    backward scatters the gradient back to the selected positions."""

    _array_forward = True
    _node_name = "GatherBackward0"

    @staticmethod
    def forward(ctx, x, idx, axis, keepdim, unique, values):
        ctx.idx, ctx.axis, ctx.shape, ctx.keepdim, ctx.unique = idx, axis, x.shape, keepdim, unique
        if values is not None:  # the caller already has the selected values (cummax's running max)
            return values
        y = xp_of(x).take_along_axis(x, idx, axis)
        return y if keepdim else y.squeeze(axis)

    @staticmethod
    def backward(ctx, gy):
        if not ctx.keepdim:
            gy = gy.unsqueeze(ctx.axis)
        g = _apply(_ScatterAdd, (gy, ctx.idx, ctx.axis, ctx.shape, ctx.unique),
                   (gy._data, ctx.idx, ctx.axis, ctx.shape, ctx.unique))
        return g, None, None, None, None, None


class _ScatterAdd(Function):
    """Zeros of ``shape`` with ``g`` added at ``idx`` along ``axis``
    (repeated indices accumulate); the adjoint of :class:`_Gather`."""

    _array_forward = True
    _node_name = "ScatterAddBackward0"

    @staticmethod
    def forward(ctx, g, idx, axis, shape, unique):
        ctx.idx, ctx.axis, ctx.unique = idx, axis, unique
        xp = xp_of(g)
        out = xp.zeros(shape, g.dtype)
        if g.size:
            lin = _flat_index(xp, idx, axis, shape).ravel()
            flat = out.reshape(-1)
            if unique:
                flat[lin] = g.ravel()
            else:
                backend_of(out).scatter_add(flat, lin, g.ravel())
        return out

    @staticmethod
    def backward(ctx, gg):
        return _gather(gg, ctx.idx, ctx.axis, True, ctx.unique, _Gather), None, None, None, None


def _selector(name):
    """A :class:`_Gather` whose graph node is named like PyTorch's (``MaxBackward0``)."""
    return type(name, (_Gather,), {"_node_name": name + "Backward0", "__module__": __name__})


def _gather(input, idx, axis, keepdim, unique, cls, values=None):
    """Values of ``input`` at ``idx`` along ``axis`` (``values``: already known,
    skips the gather) recorded so the gradient goes back to ``idx``."""
    return _apply(cls, (input, idx, axis, keepdim, unique, values), (input._data, idx, axis, keepdim, unique, values))


_MaxDim, _MinDim = _selector("Max"), _selector("Min")
_Cummax, _Cummin = _selector("Cummax"), _selector("Cummin")


class _Flip(Function):
    _array_forward = True
    _node_name = "FlipBackward0"

    @staticmethod
    def forward(ctx, x, axis):
        ctx.axis = axis
        return xp_of(x).flip(x, axis)

    @staticmethod
    def backward(ctx, gy):
        return _flip(gy, ctx.axis), None


def _flip(t, axis):
    return _apply(_Flip, (t, axis), (t._data, axis))


def _movedim_last(t, axis):
    """``t`` with ``axis`` moved to the end (a view), and the inverse permutation."""
    nd = t._data.ndim
    if axis == nd - 1:
        return t, None
    perm = tuple(d for d in _range(nd) if d != axis) + (axis,)
    inv = [0] * nd
    for i, p in enumerate(perm):
        inv[p] = i
    return t.permute(perm), tuple(inv)


# --- sum, mean, nansum, nanmean -------------------------------------------------

def _sum_array(x, dims, keepdim, dtype):
    """``x`` summed over ``dims`` (float16 accumulates in float32, as PyTorch)."""
    axis = None if len(dims) == x.ndim else dims  # NumPy reduces faster with axis=None
    if dtype is None and x.dtype is _F16:
        out = xp_of(x).asarray(x.sum(axis=axis, keepdims=keepdim, dtype=np.float32).astype(np.float16))
    elif x.__class__ is _ndarray:
        out = _add_reduce(x, axis, dtype, None, keepdim)  # skips ndarray.sum's Python wrapper
    else:
        return x.sum(axis=axis, keepdims=keepdim, dtype=dtype)
    return out if out.__class__ is _ndarray else _asarray(out)


class Sum(Function):
    """``sum(dim=...)`` (PyTorch's SumBackward1)."""
    _array_forward = True
    _ctx_slots = ("shape", "dims", "keepdim")
    _node_name = "SumBackward1"

    @staticmethod
    def forward(ctx, x, dims, keepdim, dtype):
        ctx.shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        return _sum_array(x, dims, keepdim, dtype)

    @staticmethod
    def backward(ctx, gy):
        return _expand_back(gy, ctx.shape, ctx.dims, ctx.keepdim), None, None, None

    @staticmethod
    def jvp(ctx, t, *_):
        return t.sum(ctx.dims, keepdim=ctx.keepdim)


class SumAll(Function):
    """``sum()`` of every element (PyTorch's SumBackward0)."""
    _array_forward = True
    _ctx_slots = ("shape",)
    _node_name = "SumBackward0"

    @staticmethod
    def forward(ctx, x, keepdim, dtype):
        ctx.shape = x.shape
        if dtype is None and not keepdim and x.__class__ is _ndarray and x.dtype is not _F16:
            r = _add_reduce(x, None)  # _sum_array's NumPy call
            return r if r.__class__ is _ndarray else _asarray(r)
        return _sum_array(x, _all_dims(x.ndim), keepdim, dtype)

    @staticmethod
    def backward(ctx, gy):
        return gy.expand(ctx.shape), None, None  # a 0-d (or all-ones keepdim) gradient broadcasts back

    @staticmethod
    def jvp(ctx, t, *_):
        return t.sum()   # 0-d; forward_ad broadcasts it to a keepdim output's all-ones shape


class Mean(Function):
    _array_forward = True
    _ctx_slots = ("shape", "dims", "keepdim", "n")

    @staticmethod
    def forward(ctx, x, dims, keepdim, dtype):
        ctx.shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        ctx.n = _numel(x.shape, dims)
        if dtype is None and x.dtype == np.float16:
            return x.mean(axis=dims, keepdims=keepdim, dtype=np.float32).astype(np.float16)
        if ctx.n == 0:
            with warnings.catch_warnings(), _quiet():
                warnings.simplefilter("ignore", RuntimeWarning)
                return x.mean(axis=dims, keepdims=keepdim, dtype=dtype)
        return x.mean(axis=dims, keepdims=keepdim, dtype=dtype)

    @staticmethod
    def backward(ctx, gy):
        return _expand_back(gy / ctx.n, ctx.shape, ctx.dims, ctx.keepdim), None, None, None

    @staticmethod
    def jvp(ctx, t, *_):
        return t.sum(ctx.dims, keepdim=ctx.keepdim) / ctx.n


class MeanDim(Mean):
    """``mean(dim=...)``: PyTorch names its node MeanBackward1."""
    _node_name = "MeanBackward1"


@declare_op()
def sum(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False, *, dtype: D.dtype | None = None,
        out: Tensor | None = None, axis: int | Sequence[int] | None = None) -> Tensor:
    """Sum over ``dim`` (int, tuple, or None for all); ints and bools sum as int64.

    Example::

        >>> fabric.tensor([[1, 2], [3, 4]]).sum(0)
        tensor([4, 6])
    """
    x = input._data
    if axis is not None:
        dim = axis
    if dim is None:
        if x.dtype.kind == "f" and dtype is None:  # the common case: no promotion, exact gradient
            if not input._requires_grad or not _grad_state.enabled:
                if x.__class__ is _ndarray and not keepdim and out is None and x.dtype is not _F16 \
                        and _hook.observer is None:
                    r = _add_reduce(x, None)  # SumAll.forward without a graph
                    return Tensor._make(r if r.__class__ is _ndarray else _asarray(r), False)
                r = _apply1(SumAll, input, (x, keepdim, None))
            else:
                r = _record1(SumAll, input, (x, keepdim, None), True)
        else:
            r = _apply1(SumAll, input, (x, keepdim, _reduce_dtype(x, dtype)))
        return r if out is None else _out(r, out)
    dims = _dims(dim, x.ndim)
    r = _apply1(Sum, input, (x, dims, keepdim, _reduce_dtype(x, dtype)))
    return _out(r, out)


@declare_op()
def mean(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False, *, dtype: D.dtype | None = None,
         out: Tensor | None = None, axis: int | Sequence[int] | None = None) -> Tensor:
    """Arithmetic mean over ``dim``; floating inputs only, as in PyTorch.

    Example::

        >>> fabric.tensor([1., 2., 6.]).mean()
        tensor(3.)
    """
    if axis is not None:
        dim = axis
    x = input._data
    if dtype is None and x.dtype.kind not in "fc":
        raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either a floating point or "
                           f"complex dtype. Got: {_torch_name(input.dtype)}")
    dims = _dims(dim, x.ndim)
    dt = D.to_dtype(dtype).np if dtype is not None else None
    if dt is not None and x.dtype != dt:
        x = x.astype(dt)
    r = _apply1(Mean if dim is None else MeanDim, input, (x, dims, keepdim, None))
    return _out(r, out)


class NanSum(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, dims, keepdim, dtype):
        ctx.shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        if x.dtype.kind != "f":
            return x.sum(axis=dims, keepdims=keepdim, dtype=dtype)
        ctx.save_for_backward(x)
        return xp_of(x).nansum(x, axis=dims, keepdims=keepdim, dtype=dtype)

    @staticmethod
    def backward(ctx, gy):
        x, = ctx.saved_tensors
        keep = _const(~xp_of(x._data).isnan(x._data))
        return _expand_back(gy, ctx.shape, ctx.dims, ctx.keepdim) * keep, None, None, None


@declare_op()
def nansum(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False, *,
           dtype: D.dtype | None = None, out: Tensor | None = None) -> Tensor:
    """Sum treating NaN as zero.

    Example::

        >>> fabric.tensor([1., float('nan'), 2.]).nansum()
        tensor(3.)
    """
    reject_complex(input, RuntimeError, 'nansum on CPU does not support complex inputs')
    x = input._data
    dims = _dims(dim, x.ndim)
    dt = _reduce_dtype(x, dtype)
    if dt is not None and x.dtype.kind == "f" and dt != x.dtype:
        x = x.astype(dt)
    return _out(_apply1(NanSum, input, (x, dims, keepdim, dt)), out)


@declare_op()
def nanmean(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False, *,
            dtype: D.dtype | None = None, out: Tensor | None = None) -> Tensor:
    """Mean of the non-NaN elements (NaN where there are none).

    Example::

        >>> fabric.tensor([1., float('nan'), 2.]).nanmean()
        tensor(1.5000)
    """
    reject_complex(input, RuntimeError, 'nansum on CPU does not support complex inputs')
    x = input._data
    if x.dtype.kind != "f":
        raise RuntimeError("nanmean(): expected input to have floating point or complex dtype but got "
                           f"{_torch_name(x.dtype)}")
    dims = _dims(dim, x.ndim)
    count = (~xp_of(x).isnan(x)).sum(axis=dims, keepdims=keepdim)
    s = nansum(input, dims, keepdim, dtype=dtype)
    with _quiet():
        return _out(s / _const(count.astype(s._data.dtype)), out)


# --- prod, cumsum, cumprod ------------------------------------------------------

class Prod(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, dim, keepdim, dtype):
        ctx.dim, ctx.keepdim, ctx.shape = dim, keepdim, x.shape
        dims = (dim,) if dim is not None else tuple(_range(x.ndim))
        ctx.dims = dims
        y = x.prod(axis=dims, keepdims=keepdim, dtype=dtype)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, gy):
        x, y = ctx.saved_tensors
        xd = x._data
        if xd.ndim == 0:
            return gy, None, None, None
        gye = _expand_back(gy, ctx.shape, ctx.dims, ctx.keepdim)
        xp = xp_of(xd)
        if not _bool((xd == 0).any()):
            return gye * (_expand_back(y, ctx.shape, ctx.dims, ctx.keepdim) / x), None, None, None
        if ctx.dim is None:  # product over everything: work on the flat vector
            x1 = x.reshape(-1)
            axis = 0
        else:
            x1, axis = x, ctx.dim
        if not _grad_state.enabled:
            ex = _const(_exclusive_prods(xp, x1._data, axis).reshape(ctx.shape))
            return gye * ex, None, None, None
        return gye * _exclusive_prods_t(x1, axis).reshape(ctx.shape), None, None, None


def _exclusive_prods(xp, x, axis):
    """prod of all other elements along ``axis`` for each element (zero-safe)."""
    n = x.shape[axis]
    ones = xp.ones(_reduced_shape(x.shape, (axis,), True), x.dtype)
    left = xp.cumprod(xp.concatenate([ones, xp.take(x, xp.arange(n - 1), axis=axis)], axis=axis), axis=axis)
    rx = xp.flip(x, axis)
    right = xp.cumprod(xp.concatenate([ones, xp.take(rx, xp.arange(n - 1), axis=axis)], axis=axis), axis=axis)
    return left * xp.flip(right, axis)


def _exclusive_prods_t(x, axis):
    """:func:`_exclusive_prods` in Tensor ops (differentiable again)."""
    from .join import cat

    n = x._data.shape[axis]
    if n == 1:
        return x * 0 + 1
    ones = _const(xp_of(x._data).ones(_reduced_shape(x._data.shape, (axis,), True), x._data.dtype))
    left = cumprod(cat([ones, x.narrow(axis, 0, n - 1)], axis), axis)
    right = cumprod(cat([ones, _flip(x.narrow(axis, 1, n - 1), axis)], axis), axis)
    return left * _flip(right, axis)


@declare_op()
def prod(input: Tensor, dim: int | None = None, keepdim: bool = False, *, dtype: D.dtype | None = None,
         out: Tensor | None = None) -> Tensor:
    """Product of all elements, or along one ``dim``; ints and bools give int64.
    The gradient is exact with zeros in the input (as in PyTorch).

    Example::

        >>> fabric.tensor([[1., 2.], [3., 4.]]).prod(1)
        tensor([ 2., 12.])
    """
    x = input._data
    if dim is not None:
        if isinstance(dim, (tuple, list)):
            raise TypeError("prod(): argument 'dim' must be int, not tuple")
        dim = _wrap_dim(dim, x.ndim)
        if x.ndim == 0:
            dim = None
    dt = _reduce_dtype(x, dtype)
    if dt is not None and x.dtype.kind == "f" and dt != x.dtype:
        x = x.astype(dt)
    return _out(_apply1(Prod, input, (x, dim, keepdim, dt)), out)


class CumSum(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, axis, reverse, dtype):
        ctx.axis, ctx.reverse = axis, reverse
        xp = xp_of(x)
        if x.ndim == 0:
            return x.astype(dtype) if dtype is not None else x.copy()
        if reverse:
            return xp.flip(xp.cumsum(xp.flip(x, axis), axis=axis, dtype=dtype), axis)
        return xp.cumsum(x, axis=axis, dtype=dtype)

    @staticmethod
    def backward(ctx, gy):
        return _cumsum(gy, ctx.axis, not ctx.reverse), None, None, None

    @staticmethod
    def jvp(ctx, t, *_):
        return _cumsum(t, ctx.axis, ctx.reverse)


def _cumsum(t, axis, reverse=False):
    return _apply(CumSum, (t, axis, reverse, None), (t._data, axis, reverse, None))


@declare_op()
def cumsum(input: Tensor, dim: int, *, dtype: D.dtype | None = None, out: Tensor | None = None) -> Tensor:
    """Cumulative sum along ``dim``; ints and bools accumulate as int64.

    Example::

        >>> fabric.tensor([1, 2, 3]).cumsum(0)
        tensor([1, 3, 6])
    """
    x = input._data
    axis = _wrap_dim(dim, x.ndim)
    dt = _reduce_dtype(x, dtype)
    return _out(_apply1(CumSum, input, (x, axis, False, dt)), out)


class CumProd(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, axis, dtype):
        ctx.axis = axis
        if x.ndim == 0:
            y = x.astype(dtype) if dtype is not None else x.copy()
        else:
            y = xp_of(x).cumprod(x, axis=axis, dtype=dtype)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, gy):
        x, y = ctx.saved_tensors
        xd = x._data
        axis = ctx.axis
        if xd.ndim == 0 or xd.shape[axis] <= 1:
            return gy, None, None
        if not _bool((xd == 0).any()):
            return _cumsum(gy * y, axis, True) / x, None, None
        if not _grad_state.enabled:
            return _const(_cumprod_grad_zeros(xd, y._data, gy._data, axis)), None, None
        # create_graph with zeros: the O(n^2) form whose derivative is exact (as PyTorch)
        xm, inv = _movedim_last(x, axis)
        gm, _ = _movedim_last(gy, axis)
        xp = xp_of(xd)
        n = xd.shape[axis]
        eye = xp.eye(n, dtype=xd.dtype)
        rows = xm.unsqueeze(-2) * _const(1 - eye) + _const(eye)  # row k: x with x_k replaced by 1
        c = cumprod(rows, -1)                                    # c[k, j] = prod_{i<=j, i!=k} x_i
        gx = (gm.unsqueeze(-2) * c * _const(xp.triu(xp.ones((n, n), xd.dtype)))).sum(-1)
        return (gx.permute(inv) if inv is not None else gx), None, None


def _cumprod_grad_zeros(x, y, g, axis):
    """First-order cumprod gradient for inputs with zeros, O(n) (PyTorch's
    derivation): before the first zero z, reverse-cumsum(g*y)/x; at z,
    prod(x[:z]) * sum_{j>=z} g_j prod(x[z+1:j+1]); after z, zero."""
    xp = xp_of(x)
    xm, ym, gm = (xp.moveaxis(a, axis, -1) for a in (x, y, g))
    is_zero = xm == 0
    nz = xp.cumsum(is_zero, axis=-1)
    before = nz == 0
    first = is_zero & (nz == 1)
    with _quiet():
        w = gm * ym
        rc = xp.flip(xp.cumsum(xp.flip(w, -1), axis=-1), -1)
        gx = xp.where(before, rc / xp.where(before, xm, 1), 0)
        u = xp.cumprod(xp.where(before | first, 1, xm), axis=-1)
        p = xp.prod(xp.where(before, xm, 1), axis=-1, keepdims=True)
        s = xp.sum(xp.where(before, 0, gm * u), axis=-1, keepdims=True)
        gx = xp.where(first, p * s, gx)
    return xp.moveaxis(gx, -1, axis).astype(x.dtype, copy=False)


@declare_op()
def cumprod(input: Tensor, dim: int, *, dtype: D.dtype | None = None, out: Tensor | None = None) -> Tensor:
    """Cumulative product along ``dim``; ints and bools accumulate as int64.
    The gradient is exact with zeros in the input.

    Example::

        >>> fabric.tensor([1., 2., 3.]).cumprod(0)
        tensor([1., 2., 6.])
    """
    x = input._data
    axis = _wrap_dim(dim, x.ndim)
    dt = _reduce_dtype(x, dtype)
    if dt is not None and x.dtype.kind == "f" and dt != x.dtype:
        x = x.astype(dt)
    return _out(_apply1(CumProd, input, (x, axis, dt)), out)


# --- max / min / amax / amin / aminmax / argmax / argmin ------------------------

class _ExtremeAll(Function):
    """max()/min() over all elements; the gradient is shared evenly by the ties."""

    _array_forward = True

    @staticmethod
    def forward(ctx, x, is_max, name):
        if x.size == 0:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify "
                               "the reduction dim with the 'dim' argument.")
        xp = xp_of(x)
        y = xp.max(x) if is_max else xp.min(x)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, gy):
        x, y = ctx.saved_tensors
        return gy * _const(_even_share(x._data, y._data)), None, None


class MaxAll(_ExtremeAll):
    _node_name = "MaxBackward1"


class MinAll(_ExtremeAll):
    _node_name = "MinBackward1"


def _even_share(x, value):
    """Mask of the elements equal to the 0-d ``value`` (NaNs if it is NaN),
    divided by their count: how max()/median() without dim share the gradient."""
    xp = xp_of(x)
    mask = xp.isnan(x) if x.dtype.kind == "f" and _bool(xp.isnan(value)) else x == value
    return mask / mask.sum(dtype=x.dtype)


def _extreme_dim(input, dim, keepdim, is_max, name):
    x = input._data
    xp = xp_of(x)
    if x.ndim == 0:
        _wrap_dim(dim, 0)
        idx = xp.zeros((1,), np.int64)
        values = _gather(input.reshape(1), idx, 0, False, True, _MaxDim if is_max else _MinDim)
        return getattr(return_types, name)(values, _const(idx.reshape(())))
    axis = _wrap_dim(dim, x.ndim)
    if x.shape[axis] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {axis} to have non-zero size.")
    idx = (xp.argmax if is_max else xp.argmin)(x, axis=axis, keepdims=True)
    values = _gather(input, idx, axis, keepdim, True, _MaxDim if is_max else _MinDim)
    return getattr(return_types, name)(values, _const(idx if keepdim else idx.squeeze(axis)))


def _binary_extreme(name, input, other, out):
    from . import pointwise

    return getattr(pointwise, name)(input, other, out=out)


@declare_op()
def max(input: Tensor, dim: int | None = None, keepdim: bool = False, *, out: Tensor | None = None,
        other: Tensor | None = None) -> Tensor | tuple[Tensor, Tensor]:
    """``max(input)``: the largest element; ``max(input, dim, keepdim=False)``:
    ``(values, indices)`` along ``dim`` (ties: the first index); ``max(input,
    other)``: elementwise :func:`maximum`.

    Example::

        >>> fabric.tensor([[1., 5.], [7., 2.]]).max(1).indices
        tensor([1, 0])
    """
    if isinstance(dim, Tensor) or other is not None:
        return _binary_extreme("maximum", input, dim if other is None else other, out)
    reject_complex(input, NotImplementedError if dim is None else RuntimeError,
                   "\"max_all\" not implemented for '{dtype}'" if dim is None
                   else "max(): does not support complex input")
    if dim is None:
        if keepdim:
            raise TypeError("max() received an invalid combination of arguments: keepdim needs dim")
        return _out(_apply1(MaxAll, input, (input._data, True, "max")), out)
    return _out_tuple(_extreme_dim(input, dim, keepdim, True, "max"), out)


@declare_op()
def min(input: Tensor, dim: int | None = None, keepdim: bool = False, *, out: Tensor | None = None,
        other: Tensor | None = None) -> Tensor | tuple[Tensor, Tensor]:
    """``min(input)``, ``min(input, dim, keepdim=False)`` -> ``(values, indices)``
    (ties: the first index), or elementwise :func:`minimum` with a Tensor.

    Example::

        >>> fabric.tensor([3., 1., 2.]).min()
        tensor(1.)
    """
    if isinstance(dim, Tensor) or other is not None:
        return _binary_extreme("minimum", input, dim if other is None else other, out)
    reject_complex(input, NotImplementedError if dim is None else RuntimeError,
                   "\"min_all\" not implemented for '{dtype}'" if dim is None
                   else "min(): does not support complex input")
    if dim is None:
        if keepdim:
            raise TypeError("min() received an invalid combination of arguments: keepdim needs dim")
        return _out(_apply1(MinAll, input, (input._data, False, "min")), out)
    return _out_tuple(_extreme_dim(input, dim, keepdim, False, "min"), out)


class _AExtreme(Function):
    """amax/amin; the gradient is shared evenly by the tied elements."""

    _array_forward = True

    @staticmethod
    def forward(ctx, x, dims, keepdim, is_max):
        ctx.dims, ctx.keepdim = dims, keepdim
        xp = xp_of(x)
        y = (xp.amax if is_max else xp.amin)(x, axis=dims, keepdims=keepdim)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, gy):
        x, y = ctx.saved_tensors
        xd = x._data
        mask = xd == _keep(y._data, ctx.dims, ctx.keepdim)
        with _quiet():
            share = mask / mask.sum(axis=ctx.dims, keepdims=True, dtype=xd.dtype)
        return _expand_back(gy, xd.shape, ctx.dims, ctx.keepdim) * _const(share), None, None, None

    @staticmethod
    def jvp(ctx, t, *_):
        x, y = ctx.saved_tensors   # the tangent averaged over the tied extremes, as backward shares gy
        if ctx.dims is None or t.is_complex():
            return NotImplemented
        xd = x._data
        mask = xd == _keep(y._data, ctx.dims, ctx.keepdim)
        with _quiet():
            share = mask / mask.sum(axis=ctx.dims, keepdims=True, dtype=xd.dtype)
        return (t * _const(share)).sum(ctx.dims, keepdim=ctx.keepdim)


class Amax(_AExtreme):
    pass


class Amin(_AExtreme):
    pass


def _aextreme(input, dim, keepdim, is_max, name, sep="()"):
    x = input._data
    dims = _dims(dim, x.ndim)
    _check_nonempty(x, dim, name, sep)
    return _apply(Amax if is_max else Amin, (input, dims, keepdim, is_max), (x, dims, keepdim, is_max))


@declare_op()
def amax(input: Tensor, dim: int | Sequence[int] = (), keepdim: bool = False, *, out: Tensor | None = None) -> Tensor:
    """Largest value over ``dim`` (int or tuple; ``()`` means all). Ties share
    the gradient evenly.

    Example::

        >>> fabric.tensor([[1., 4.], [4., 2.]]).amax()
        tensor(4.)
    """
    reject_complex(input, NotImplementedError, "\"max_values_cpu\" not implemented for '{dtype}'")
    return _out(_aextreme(input, dim, keepdim, True, "amax"), out)


@declare_op()
def amin(input: Tensor, dim: int | Sequence[int] = (), keepdim: bool = False, *, out: Tensor | None = None) -> Tensor:
    """Smallest value over ``dim`` (int or tuple; ``()`` means all).

    Example::

        >>> fabric.tensor([[1., 4.], [4., 2.]]).amin(0)
        tensor([1., 2.])
    """
    reject_complex(input, NotImplementedError, "\"min_values_cpu\" not implemented for '{dtype}'")
    return _out(_aextreme(input, dim, keepdim, False, "amin"), out)


@declare_op()
def aminmax(input: Tensor, *, dim: int | None = None, keepdim: bool = False,
            out: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """``(min, max)`` over all elements or one ``dim``.

    Example::

        >>> fabric.tensor([3., 1., 2.]).aminmax()
        fabric.return_types.aminmax(
        min=tensor(1.),
        max=tensor(3.))
    """
    reject_complex(input, NotImplementedError, "\"aminmax_cpu\" not implemented for '{dtype}'")
    x = input._data
    if dim is None:
        if x.size == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                               "identity.")
        d = None
    else:
        d = _wrap_dim(dim, x.ndim)
    lo = _aextreme(input, d, keepdim, False, "aminmax", "")
    hi = _aextreme(input, d, keepdim, True, "aminmax", "")
    return _out_tuple(return_types.aminmax(lo, hi), out)


def _arg_extreme(input, dim, keepdim, is_max, name):
    x = input._data
    xp = xp_of(x)
    if x.dtype == np.bool_:
        raise RuntimeError(f"{name}(): does not support bool input")
    if dim is None:
        if x.size == 0:
            raise IndexError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")
        i = (xp.argmax if is_max else xp.argmin)(x.reshape(-1))
        r = xp.asarray(i, dtype=np.int64)
        return _const(r.reshape((1,) * x.ndim) if keepdim else r.reshape(()))
    axis = _wrap_dim(dim, x.ndim)
    if x.ndim == 0:
        return _const(xp.zeros((), np.int64))
    if x.shape[axis] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {axis} to have non-zero size.")
    r = (xp.argmax if is_max else xp.argmin)(x, axis=axis, keepdims=keepdim)
    return _const(r.astype(np.int64, copy=False))


@declare_op()
def argmax(input: Tensor, dim: int | None = None, keepdim: bool = False, *, out: Tensor | None = None) -> Tensor:
    """Index of the largest value (of the flattened tensor when ``dim`` is
    None); ties give the first index, NaN counts as largest.

    Example::

        >>> fabric.tensor([1., 3., 3.]).argmax()
        tensor(1)
    """
    reject_complex(input, RuntimeError, 'argmax(): does not support complex input')
    return _out(_arg_extreme(input, dim, keepdim, True, "argmax"), out)


@declare_op()
def argmin(input: Tensor, dim: int | None = None, keepdim: bool = False, *, out: Tensor | None = None) -> Tensor:
    """Index of the smallest value; ties give the first index.

    Example::

        >>> fabric.tensor([[2., 0.], [1., 1.]]).argmin(1)
        tensor([1, 0])
    """
    reject_complex(input, RuntimeError, 'argmin(): does not support complex input')
    return _out(_arg_extreme(input, dim, keepdim, False, "argmin"), out)


# --- var / std --------------------------------------------------------------------

class _VarStd(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, dims, correction, keepdim, is_std, whole=False):
        ctx.dims, ctx.keepdim, ctx.shape, ctx.whole = dims, keepdim, x.shape, whole
        n = _numel(x.shape, dims)
        ctx.divisor = divisor = _bmax(n - correction, 0)
        xp = xp_of(x)
        xc = x.astype(np.float32) if x.dtype == np.float16 else x
        with _quiet(), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            m = xc.mean(axis=dims, keepdims=True)
            d = xc - m
            if d.dtype.kind == "c":  # |d|^2: the variance of complex numbers is real
                d = xp.abs(d)
            y = (d * d).sum(axis=dims, keepdims=keepdim) / d.dtype.type(divisor)
            if is_std:
                y = xp.sqrt(y)
        y = y.astype(x.real.dtype, copy=False)
        ctx.save_for_backward(x, y if is_std else None)
        return y

    @staticmethod
    def backward(ctx, gy):
        x, y = ctx.saved_tensors
        dims, keepdim = ctx.dims, ctx.keepdim
        centered = x - x.mean(dims, keepdim=True) if dims else x * 0
        gye = _expand_back(gy, ctx.shape, dims, keepdim)
        if y is None:  # var
            if not ctx.divisor and ctx.whole:
                # PyTorch's var_backward without dim: inf (nan where x == mean) whatever the sign of x - mean
                return gye * _const(xp_of(x._data).where(centered._data == 0, math.nan, math.inf)), None, None, None, \
                    None, None
            return gye * centered * (2.0 / ctx.divisor if ctx.divisor else math.inf), None, None, None, None, None
        # std: d std = d var / (2 std), and 0 where std == 0 (as PyTorch)
        yz = _keep(y._data, dims, keepdim) == 0
        ye = _expand_back(y + _const((y._data == 0).astype(y._data.dtype)), ctx.shape, dims, keepdim)
        scale = 1.0 / ctx.divisor if ctx.divisor else math.inf
        with _quiet():
            return gye * centered * scale / ye * _const(~yz), None, None, None, None, None

    @staticmethod
    def jvp(ctx, t, *_):
        x, y = ctx.saved_tensors
        if not ctx.divisor or not ctx.dims or t.is_complex():
            return NotImplemented
        dims, keepdim = ctx.dims, ctx.keepdim
        dvar = ((x - x.mean(dims, keepdim=True)) * t).sum(dims, keepdim=keepdim) * (2.0 / ctx.divisor)
        if y is None:
            return dvar
        yz = y._data == 0   # d std = d var / (2 std), 0 where std == 0 (as backward)
        with _quiet():
            return dvar / (2 * (y + _const(yz.astype(y._data.dtype)))) * _const(~yz)


class Var(_VarStd):
    pass


class Std(_VarStd):
    pass


def _var_args(name, input, dim, unbiased, keepdim, correction):
    x = input._data
    if x.dtype.kind not in "fc":
        raise RuntimeError("std and var only support floating point and complex dtypes")
    if isinstance(dim, _bool):  # var(input, unbiased)
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise RuntimeError(f"{name}: can't use both unbiased and correction arguments")
    if correction is None:
        correction = 0 if unbiased is False else 1
    dims = _dims(dim, x.ndim)
    if _numel(x.shape, dims) - correction <= 0:
        warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly less than the reduction "
                      "factor (input numel divided by output numel).", UserWarning, stacklevel=3)
    return x, dims, correction


@declare_op()
def var(input: Tensor, dim: int | Sequence[int] | None = None, unbiased: bool | None = None, keepdim: bool = False, *,
        correction: float | None = None, out: Tensor | None = None) -> Tensor:
    """Variance over ``dim``, divided by ``N - correction`` (``correction=1`` by
    default; ``unbiased=False`` means ``correction=0``). NaN (with a warning)
    when ``N - correction <= 0``.

    Example::

        >>> fabric.tensor([1., 2., 3., 4.]).var()
        tensor(1.6667)
    """
    x, dims, c = _var_args("var", input, dim, unbiased, keepdim, correction)
    whole = dim is None or isinstance(dim, _bool) or x.ndim == 0
    return _out(_apply1(Var, input, (x, dims, c, keepdim, False, whole)), out)


@declare_op()
def std(input: Tensor, dim: int | Sequence[int] | None = None, unbiased: bool | None = None, keepdim: bool = False, *,
        correction: float | None = None, out: Tensor | None = None) -> Tensor:
    """Standard deviation over ``dim`` (see :func:`var` for ``correction``).

    Example::

        >>> fabric.tensor([1., 2., 3., 4.]).std(correction=0)
        tensor(1.1180)
    """
    x, dims, c = _var_args("std", input, dim, unbiased, keepdim, correction)
    return _out(_apply1(Std, input, (x, dims, c, keepdim, True)), out)


@declare_op(method=False)
def var_mean(input: Tensor, dim: int | Sequence[int] | None = None, unbiased: bool | None = None, keepdim: bool = False,
             *, correction: float | None = None) -> tuple[Tensor, Tensor]:
    """``(var, mean)`` over ``dim`` (a plain tuple, as in PyTorch).

    Example::

        >>> fabric.var_mean(fabric.tensor([1., 2., 3.]))
        (tensor(1.), tensor(2.))
    """
    v = var(input, dim, unbiased, keepdim, correction=correction)
    return v, mean(input, None if isinstance(dim, _bool) else dim, keepdim)


@declare_op(method=False)
def std_mean(input: Tensor, dim: int | Sequence[int] | None = None, unbiased: bool | None = None, keepdim: bool = False,
             *, correction: float | None = None) -> tuple[Tensor, Tensor]:
    """``(std, mean)`` over ``dim``.

    Example::

        >>> fabric.std_mean(fabric.tensor([1., 3.]))
        (tensor(1.4142), tensor(2.))
    """
    s = std(input, dim, unbiased, keepdim, correction=correction)
    return s, mean(input, None if isinstance(dim, _bool) else dim, keepdim)


# --- logsumexp, logcumsumexp ------------------------------------------------------

class LogSumExp(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, dims, keepdim):
        ctx.dims, ctx.keepdim, ctx.shape = dims, keepdim, x.shape
        xp = xp_of(x)
        if x.size == 0 or _numel(x.shape, dims) == 0:
            y = xp.full(_reduced_shape(x.shape, dims, keepdim), -xp.inf, x.dtype)
        else:
            m = xp.amax(x.real, axis=dims, keepdims=True)  # complex: shift by the largest real part
            m = xp.where(xp.isfinite(m), m, 0)
            with _quiet():
                y = xp.log(xp.sum(xp.exp(x - m), axis=dims, keepdims=True)) + m
            if not keepdim:
                y = y.reshape(_reduced_shape(x.shape, dims, False))
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, gy):
        x, y = ctx.saved_tensors
        from .arith import exp

        ye = _expand_back(y, ctx.shape, ctx.dims, ctx.keepdim)
        return _expand_back(gy, ctx.shape, ctx.dims, ctx.keepdim) * exp(x - ye), None, None

    @staticmethod
    def jvp(ctx, t, *_):
        x, y = ctx.saved_tensors   # the softmax-weighted sum of the tangent
        from .arith import exp

        w = exp(x - _expand_back(y, ctx.shape, ctx.dims, ctx.keepdim))
        return (w * t).sum(ctx.dims, keepdim=ctx.keepdim)


def _float_or_default(x):
    return x if x.dtype.kind in "fc" else x.astype(D.get_default_dtype().np)


@declare_op()
def logsumexp(input: Tensor, dim: int | Sequence[int], keepdim: bool = False, *, out: Tensor | None = None) -> Tensor:
    """``log(sum(exp(input), dim))`` computed stably (no overflow for large
    inputs); integer inputs give the default float dtype.

    Example::

        >>> fabric.logsumexp(fabric.tensor([1e4, 1e4]), 0)
        tensor(10000.6934)
    """
    x = input._data
    if dim is None:
        raise TypeError("logsumexp(): argument 'dim' must be tuple of ints, not NoneType")
    dims = _dims(dim, x.ndim)
    xf = _float_or_default(x)
    return _out(_apply1(LogSumExp, input, (xf, dims, keepdim)), out)


class LogCumSumExp(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, axis):
        ctx.axis = axis
        xp = xp_of(x)
        if x.ndim == 0 or x.size == 0:
            y = x.copy()
        else:  # logaddexp is associative: an exact, overflow-free scan
            y = _scan(xp, xp.logaddexp, x, axis)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, gy):
        # PyTorch's formula: split the gradient by sign, work in log space, so
        # nothing overflows; built from Tensor ops so it differentiates again.
        x, y = ctx.saved_tensors
        if x._data.ndim == 0:
            return gy, None
        from .arith import exp, log

        axis = ctx.axis
        g = gy._data
        lowest = np.finfo(g.dtype).min
        out = None
        for sign in (1, -1):
            m = (g * sign) > 0
            mf = m.astype(g.dtype)
            log_g = log(gy * _const(mf * sign) + _const(1 - mf)) + _const((1 - mf) * lowest)
            rev = _flip(logcumsumexp(_flip(log_g - y, axis), axis), axis)
            part = exp(rev + x)
            out = part if out is None else out - part
        return out, None


@declare_op()
def logcumsumexp(input: Tensor, dim: int, *, out: Tensor | None = None) -> Tensor:
    """``log(cumsum(exp(input), dim))`` computed stably.

    Example::

        >>> fabric.tensor([0., 0., 0.]).logcumsumexp(0)
        tensor([0.0000, 0.6931, 1.0986])
    """
    x = input._data
    axis = _wrap_dim(dim, x.ndim)
    if x.dtype.kind != "f":
        raise NotImplementedError(f"\"logcumsumexp_out_cpu\" not implemented for '{_torch_name(x.dtype)}'")
    return _out(_apply1(LogCumSumExp, input, (x, axis)), out)


# --- cummax / cummin ------------------------------------------------------------------

def _cum_extreme(input, dim, is_max, name):
    x = input._data
    xp = xp_of(x)
    if x.ndim == 0:
        _wrap_dim(dim, 0)
        idx = xp.zeros((1,), np.int64)
        v = _gather(input.reshape(1), idx, 0, False, True, _Cummax if is_max else _Cummin)
        return getattr(return_types, name)(v, _const(idx.reshape(())))
    axis = _wrap_dim(dim, x.ndim)
    running = None
    if x.size == 0:
        idx = xp.zeros(x.shape, np.int64)
    else:
        ufunc = xp.maximum if is_max else xp.minimum
        running = _scan(xp, ufunc, x, axis)
        # an element becomes the running extreme when it ties it (>=, as PyTorch) or is NaN
        mark = x == running
        if x.dtype.kind == "f":
            mark |= xp.isnan(x)
        shape = [1] * x.ndim
        shape[axis] = x.shape[axis]
        pos = xp.where(mark, xp.arange(x.shape[axis], dtype=np.int64).reshape(shape), 0)
        idx = _scan(xp, xp.maximum, pos, axis)
    v = _gather(input, idx, axis, True, False, _Cummax if is_max else _Cummin, running)
    return getattr(return_types, name)(v, _const(idx))


@declare_op()
def cummax(input: Tensor, dim: int, *, out: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """Running maximum along ``dim`` and where it was attained (the latest
    index on ties, as PyTorch).

    Example::

        >>> fabric.tensor([1., 3., 2., 3.]).cummax(0).indices
        tensor([0, 1, 1, 3])
    """
    reject_complex(input, NotImplementedError, "\"cummax_cpu\" not implemented for '{dtype}'")
    return _out_tuple(_cum_extreme(input, dim, True, "cummax"), out)


@declare_op()
def cummin(input: Tensor, dim: int, *, out: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """Running minimum along ``dim`` and its (latest on ties) index.

    Example::

        >>> fabric.tensor([2., 1., 3.]).cummin(0).values
        tensor([2., 1., 1.])
    """
    reject_complex(input, NotImplementedError, "\"cummin_cpu\" not implemented for '{dtype}'")
    return _out_tuple(_cum_extreme(input, dim, False, "cummin"), out)


# --- norm -----------------------------------------------------------------------------

class VectorNorm(Function):
    """``||x||_ord`` over the axes ``dims``: the one vector norm behind ``torch.norm``,
    ``linalg.vector_norm``, ``F.normalize``, ``F.pairwise_distance``, ``cosine_similarity``
    and ``pdist`` (``ord`` a float incl. 0 and +-inf; the callers check their arguments)."""

    _array_forward = True
    _node_name = "LinalgVectorNormBackward0"

    @staticmethod
    def forward(ctx, x, ord, dims, keepdim):
        ctx.ord, ctx.dims, ctx.keepdim, ctx.shape = ord, dims, keepdim, x.shape
        xp = xp_of(x)
        a = xp.abs(x) if ord not in (0, 2) else None
        with _quiet():
            if math.isinf(ord) and x.size == 0:  # F.normalize / pairwise_distance over an empty dim: 0
                y = xp.zeros_like(x.sum(axis=dims, keepdims=keepdim))
            elif ord == 2:
                y = xp.sqrt((x * x).sum(axis=dims, keepdims=keepdim))
            elif ord == 1:
                y = a.sum(axis=dims, keepdims=keepdim)
            elif ord == math.inf:
                y = xp.amax(a, axis=dims, keepdims=keepdim)
            elif ord == -math.inf:
                y = xp.amin(a, axis=dims, keepdims=keepdim)
            elif ord == 0:
                y = (x != 0).sum(axis=dims, keepdims=keepdim).astype(x.dtype)
            else:
                y = ((a ** ord).sum(axis=dims, keepdims=keepdim)) ** (1.0 / ord)
        y = xp.asarray(y, dtype=x.dtype)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, gy):
        # PyTorch's norm_backward, with masks as constants (derivative 0 a.e.)
        x, y = ctx.saved_tensors
        p, dims, keepdim, shape = ctx.ord, ctx.dims, ctx.keepdim, ctx.shape
        xd = x._data
        xp = xp_of(xd)
        if p == 0:  # piecewise constant: no gradient (None, as PyTorch)
            return None, None, None, None
        gye = _expand_back(gy, shape, dims, keepdim)
        sgn = xp.sign(xd)
        if p == 1:
            return gye * _const(sgn), None, None, None
        yk = _keep(y._data, dims, keepdim)
        ye = _expand_back(y, shape, dims, keepdim)
        if math.isinf(p):
            ax = xp.abs(xd)
            mask = (ax == yk) | xp.isnan(ax)
            with _quiet():
                share = sgn * (mask / mask.sum(axis=dims, keepdims=True, dtype=xd.dtype))
            return gye * _const(share), None, None, None
        ynz = _const((yk != 0).astype(xd.dtype))
        ysafe = ye + _const(xp.broadcast_to(yk == 0, shape).astype(xd.dtype))
        absx = x * _const(sgn)
        if p == 2:
            return gye * (x / ysafe) * ynz, None, None, None
        if p < 1:
            xnz = (xd != 0).astype(xd.dtype)
            scaled = _const(sgn) * (absx + _const(1 - xnz)) ** (p - 1) * _const(xnz)
            return scaled * gye * ye ** (1 - p), None, None, None
        if p < 2:
            scaled = _const(sgn) * absx ** (p - 1)
        else:
            scaled = x * absx ** (p - 2)
        return scaled * (gye / ysafe ** (p - 1)) * ynz, None, None, None


def _vector_norm(input, ord=2, dim=None, keepdim=False, *, dtype=None, name="linalg.vector_norm"):
    """The vector p-norm behind :func:`norm` (``linalg.vector_norm``'s
    semantics: ``ord`` any float incl. ``inf``/``-inf``/0; ``dim`` int, tuple or
    None for all; floating inputs only; ``dtype`` casts before computing)."""
    x = input._data
    if x.dtype.kind == "c":  # the norm of complex numbers is the norm of their moduli
        from .pointwise import abs as _abs

        return _vector_norm(_abs(input), ord, dim, keepdim, dtype=dtype if dtype is None else
                            D.to_real(D.to_dtype(dtype)), name=name)
    if x.dtype.kind != "f":
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{_torch_name(x.dtype)}")
    if isinstance(ord, (str, _bool)):
        raise TypeError(f"{name}: ord must be a number, got {ord!r}")
    ord = _float(ord)
    dims = _dims(dim, x.ndim)
    if dtype is not None:
        dt = D.to_dtype(dtype).np
        if dt != x.dtype:
            x = x.astype(dt)
    if (ord < 0 or math.isinf(ord)) and x.size == 0:
        shown = "inf" if ord == math.inf else ("-inf" if ord == -math.inf else f"{ord:g}")
        if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
            raise RuntimeError(f"{name} cannot compute the {shown} norm on an empty tensor because the operation "
                               "does not have an identity")
        for d in (dim if isinstance(dim, (tuple, list)) else (dim,)):
            if x.shape[_wrap_dim(d, x.ndim)] == 0:
                raise RuntimeError(f"{name} cannot compute the {shown} norm on the dimension {d}because this "
                                   "dimension is empty and the operation does not have an identity")
    return _apply1(VectorNorm, input, (x, ord, dims, keepdim))


@declare_op()
def norm(input: Tensor, p: float | str | None = "fro", dim: int | Sequence[int] | None = None, keepdim: bool = False,
         out: Tensor | None = None, dtype: D.dtype | None = None) -> Tensor:
    """``torch.norm``: the vector ``p``-norm over ``dim`` (int, tuple or None
    for all) for numeric ``p`` (incl. ``inf``, ``-inf``, 0) and for ``'fro'``
    (the 2-norm of the flattened dims). ``'nuc'`` and other matrix norms call
    ``fabric.linalg.matrix_norm`` (``fabric/linalg.py``).

    The vector case lives here (:func:`_vector_norm`, which
    ``fabric.linalg.vector_norm`` may reuse).

    Example::

        >>> fabric.tensor([[3., 4.], [0., 1.]]).norm(dim=1)
        tensor([5., 1.])
    """
    if isinstance(p, str):
        if p == "fro" and (dim is None or isinstance(dim, (_int, np.integer)) or len(dim) <= 2):
            r = _vector_norm(input, 2, dim, keepdim, dtype=dtype)
        else:
            from .linalg import linalg_matrix_norm as matrix_norm  # ops.linalg imports reduce: bound late
            d = tuple(_range(input.ndim)) if dim is None else dim
            r = matrix_norm(input, p, d, keepdim, dtype=dtype)
        return _out(r, out)
    return _out(_vector_norm(input, 2.0 if p is None else p, dim, keepdim, dtype=dtype), out)


# --- all / any / count_nonzero ------------------------------------------------------

def _logical_reduce(input, dim, keepdim, is_all):
    x = input._data
    xp = xp_of(x)
    if isinstance(dim, (tuple, list)) and len(dim) == 0:
        dims = ()  # PyTorch: an empty dim list reduces nothing here
    else:
        dims = _dims(dim, x.ndim)
    r = (xp.all if is_all else xp.any)(x, axis=dims, keepdims=keepdim)
    return _const(xp.asarray(r, dtype=np.uint8 if x.dtype == np.uint8 else np.bool_))


@declare_op()
def all(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False, *,
        out: Tensor | None = None) -> Tensor:
    """Whether all elements (over ``dim``: int, tuple or None) are nonzero.
    bool result (uint8 for uint8 input, as PyTorch).

    Example::

        >>> fabric.tensor([[1, 0], [1, 1]]).all(1)
        tensor([False,  True])
    """
    return _out(_logical_reduce(input, dim, keepdim, True), out)


@declare_op()
def any(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False, *,
        out: Tensor | None = None) -> Tensor:
    """Whether any element (over ``dim``) is nonzero.

    Example::

        >>> fabric.tensor([0., 0., 2.]).any()
        tensor(True)
    """
    return _out(_logical_reduce(input, dim, keepdim, False), out)


@declare_op()
def count_nonzero(input: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """Number of nonzero elements over ``dim`` (int, tuple or None), int64.

    Example::

        >>> fabric.tensor([[0, 1], [2, 3]]).count_nonzero(0)
        tensor([1, 2])
    """
    x = input._data
    dims = _dims(dim, x.ndim)
    return _const(xp_of(x).asarray((x != 0).sum(axis=dims), dtype=np.int64))


# --- in-place scans -------------------------------------------------------------------------------------



def _scan_(self, dim, dtype, fn, name, saves_self):
    x = self._data
    if dtype is not None and D.to_dtype(dtype).np != x.dtype:
        names = {"int64": "long int", "float32": "float", "float64": "double", "int32": "int", "float16": "c10::Half",
                 "int16": "short int", "int8": "signed char", "uint8": "unsigned char", "bool": "bool"}
        raise RuntimeError(f"Bad in-place call: input tensor dtype {names.get(str(x.dtype), x.dtype)} and output "
                           f"tensor dtype {names.get(str(D.to_dtype(dtype).np), dtype)} should match")
    if x.dtype == np.bool_:
        raise NotImplementedError(f"\"{name}_out_cpu\" not implemented for 'Bool'")
    from .pointwise import _inplace_from  # pointwise imports reduce

    return _inplace_from(self, lambda t: fn(t, dim), (), saves_self)


@declare_op(top_level=False)
def cumsum_(self: Tensor, dim: int, *, dtype: D.dtype | None = None) -> Tensor:
    """In-place :func:`fabric.cumsum` (``dtype``, if given, must be ``self``'s).

    Example::

        >>> fabric.tensor([1., 2., 3.]).cumsum_(0)
        tensor([1., 3., 6.])
    """
    return _scan_(self, dim, dtype, cumsum, "cumsum", False)


@declare_op(top_level=False)
def cumprod_(self: Tensor, dim: int, *, dtype: D.dtype | None = None) -> Tensor:
    """In-place :func:`fabric.cumprod`.

    Example::

        >>> fabric.tensor([1, 2, 3]).cumprod_(0)
        tensor([1, 2, 6])
    """
    return _scan_(self, dim, dtype, cumprod, "cumprod", True)


# --- sum_to_size ------------------------------------------------------------------------------------------

@declare_op(top_level=False)
def sum_to_size(self: Tensor, *size: int | Sequence[int]) -> Tensor:
    """Sum ``self`` down to ``size`` (the reverse of ``expand``); returns
    ``self`` when the sizes already match.

    Example::

        >>> fabric.ones(2, 3).sum_to_size(1, 3)
        tensor([[2., 2., 2.]])
    """
    size = shape_args(size, "size")
    shape = self._data.shape
    lead = len(shape) - len(size)
    if lead < 0 or builtins.any(s != 1 and s != shape[lead + i] for i, s in enumerate(size)):
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(shape)}}}.")
    if size == shape:
        return self
    r = self
    if lead:
        r = sum(r, tuple(range(lead)))
    keep = tuple(i for i, s in enumerate(size) if s == 1 and shape[lead + i] != 1)
    if keep:
        r = sum(r, keep, keepdim=True)
    return r


# --- composites: diff, cov, corrcoef, trapezoid --------------------------------------------------------------------



@declare_op()
def diff(input: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None,
         append: Tensor | None = None) -> Tensor:
    """n-th forward difference along ``dim`` (bool inputs use xor, as PyTorch).

    Example::

        >>> fabric.diff(fabric.tensor([1, 4, 9, 16]))
        tensor([3, 5, 7])
    """
    from .pointwise import logical_xor  # pointwise imports reduce

    x = input
    if prepend is not None or append is not None:
        parts = ([prepend] if prepend is not None else []) + [x] + ([append] if append is not None else [])
        parts = [p if isinstance(p, Tensor) else x.new_tensor(p).expand(
            *[s if i != (dim % x.ndim) else 1 for i, s in enumerate(x.shape)]) for p in parts]
        x = cat(parts, dim)
    for _ in range(n):
        size = x.shape[dim]
        if size == 0:
            break
        a, b = narrow(x, dim, 1, size - 1), narrow(x, dim, 0, size - 1)
        x = logical_xor(a, b) if x.dtype is D.bool else a - b
    return x


@declare_op()
def cov(input: Tensor, *, correction: int = 1, fweights: Tensor | None = None,
        aweights: Tensor | None = None) -> Tensor:
    """Covariance of the rows of ``input`` (variables) over its columns (observations)."""
    if fweights is not None or aweights is not None:
        raise NotImplementedError("fabric.cov does not support fweights/aweights yet")
    x = input if input.ndim == 2 else input.reshape(1, -1)
    if not x.is_floating_point():
        x = x.to(D.get_default_dtype())
    n = x.shape[1]
    xc = x - x.mean(1, keepdim=True)
    c = (xc @ xc.t()) / builtins.max(n - correction, 0)
    return c.squeeze() if input.ndim < 2 else c


@declare_op()
def corrcoef(input: Tensor) -> Tensor:
    """Pearson correlation coefficients of the rows of ``input``."""
    from .pointwise import clamp  # pointwise imports reduce

    c = cov(input)
    if c.ndim == 0:
        return c / c
    d = c.diagonal().sqrt()
    return clamp(c / d[:, None] / d[None, :], -1, 1)


@declare_op(aliases=("trapz",), method=False)
def trapezoid(y: Tensor, x: Tensor | None = None, *, dx: float | None = None, dim: int = -1) -> Tensor:
    """Trapezoidal rule along ``dim``."""
    n = y.shape[dim]
    if n == 0:
        return y.sum(dim)
    left, right = narrow(y, dim, 0, n - 1), narrow(y, dim, 1, n - 1)
    if x is None:
        return ((left + right) * (0.5 * (1.0 if dx is None else dx))).sum(dim)
    spacing = diff(x, dim=dim if x.ndim == y.ndim else -1)
    return ((left + right) * spacing * 0.5).sum(dim)


trapz = trapezoid


@declare_op(method=False)
def cumulative_trapezoid(y: Tensor, x: Tensor | None = None, *, dx: float | None = None, dim: int = -1) -> Tensor:
    n = y.shape[dim]
    left, right = narrow(y, dim, 0, builtins.max(n - 1, 0)), narrow(y, dim, 1, builtins.max(n - 1, 0))
    if x is None:
        return ((left + right) * (0.5 * (1.0 if dx is None else dx))).cumsum(dim)
    return ((left + right) * diff(x, dim=dim if x.ndim == y.ndim else -1) * 0.5).cumsum(dim)


__all__ += declared_names(__name__)
