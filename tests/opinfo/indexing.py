"""OpInfo entries for the indexing ops (fabric/ops/indexing.py) and extra
``__getitem__`` keys.

Index arrays are int64 NumPy arrays (they become index tensors, never
differentiated) and include repeated indices where the op allows them, so
gradcheck covers accumulation.  Plain ``scatter``/``index_copy``/``put``
samples avoid duplicates (which element wins is unspecified in PyTorch).
"""
from __future__ import annotations

import numpy as np

from . import FLOATS, INTS, OpInfo, SampleInput, make

ALL = FLOATS + INTS
I = np.int64


def _m(rng, dtype):
    return lambda *shape, nc=False: make(rng, shape, dtype, noncontig=nc)


def _idx(*v):
    return np.array(v, dtype=I)


def _rand_idx(rng, shape, n):
    return rng.integers(0, n, size=shape).astype(I)


def _perm_idx(rng, shape, n, d):
    """Indices along ``d`` without repeats (for ops where repeats are unspecified)."""
    out = np.empty(shape, I)
    for pos in np.ndindex(*[s for k, s in enumerate(shape) if k != d]):
        sl = list(pos)
        sl.insert(d, slice(None))
        out[tuple(sl)] = rng.permutation(n)[:shape[d]]
    return out


# --- NumPy references ---------------------------------------------------------------

def _corner(a, shape):
    return a[tuple(slice(0, s) for s in shape)]


def _coords(idx, d):
    return tuple(idx if k == d else np.arange(idx.shape[k]).reshape((-1,) + (1,) * (idx.ndim - k - 1))
                 for k in range(idx.ndim))


def _gather(x, d, idx):
    if x.ndim == 0:
        return x.reshape(1)[idx.reshape(-1)].reshape(idx.shape)
    xs = x[tuple(slice(0, s) if k != d % x.ndim else slice(None) for k, s in enumerate(idx.shape))]
    return np.take_along_axis(xs, idx, axis=d)


def _scatter(x, d, idx, src=None, value=None, reduce=None):
    out = x.copy()
    d = d % x.ndim
    c = _coords(idx, d)
    v = _corner(src, idx.shape) if isinstance(src, np.ndarray) else (src if src is not None else value)
    if reduce is None:
        out[c] = v
    elif reduce == "add":
        np.add.at(out, c, np.broadcast_to(v, idx.shape))
    else:
        np.multiply.at(out, c, np.broadcast_to(v, idx.shape))
    return out


def _scatter_add(x, d, idx, src):
    if x.ndim == 0:
        return _scatter_add(x.reshape(1), d, idx.reshape(1), src.reshape(1)).reshape(())
    return _scatter(x, d, idx, src, reduce="add")


def _scatter_reduce(x, d, idx, src, reduce, include_self=True):
    out = x.copy()
    d = d % x.ndim
    c = _coords(idx, d)
    v = _corner(src, idx.shape)
    touched = np.zeros(x.shape, bool)
    touched[c] = True
    if not include_self:
        out[touched] = {"sum": 0, "mean": 0, "prod": 1}.get(reduce, 0)
    if reduce in ("amax", "amin"):
        init = (-np.inf if reduce == "amax" else np.inf) if x.dtype.kind == "f" else \
            (np.iinfo(x.dtype).min if reduce == "amax" else np.iinfo(x.dtype).max)
        if not include_self:
            out[touched] = init
        (np.maximum if reduce == "amax" else np.minimum).at(out, c, v)
        return out
    if reduce == "prod":
        np.multiply.at(out, c, v)
        return out
    np.add.at(out, c, v)
    if reduce == "mean":
        cnt = np.zeros(x.shape, np.int64)
        np.add.at(cnt, c, 1)
        cnt = cnt + (1 if include_self else 0)
        cnt = np.maximum(cnt, 1)
        out = out / cnt if x.dtype.kind == "f" else out // cnt
        out = out.astype(x.dtype)
    return out


def _index_add(x, d, idx, src, alpha=1):
    if x.ndim == 0:
        return _index_add(x.reshape(1), d, idx, src.reshape(1), alpha).reshape(())
    out = x.copy()
    np.add.at(np.moveaxis(out, d, 0), idx, np.moveaxis(src, d, 0) * alpha)
    return out


def _index_copy(x, d, idx, src):
    out = x.copy()
    np.moveaxis(out, d, 0)[idx] = np.moveaxis(src, d, 0)
    return out


def _index_fill(x, d, idx, value):
    out = x.copy()
    np.moveaxis(out, d, 0)[idx] = value
    return out


def _index_put(x, indices, values, accumulate=False):
    out = x.copy()
    if accumulate:
        np.add.at(out, tuple(indices), values)
    else:
        out[tuple(indices)] = values
    return out


def _masked_fill(x, mask, value):
    return np.where(mask, np.asarray(value).astype(x.dtype), x)


def _masked_select(x, mask):
    shape = np.broadcast_shapes(x.shape, mask.shape)
    return np.broadcast_to(x, shape)[np.broadcast_to(mask, shape)]


def _masked_scatter(x, mask, src):
    shape = np.broadcast_shapes(x.shape, mask.shape)
    out = np.broadcast_to(x, shape).copy()
    m = np.broadcast_to(mask, shape)
    out[m] = src.ravel()[:m.sum()]
    return out


def _put(x, idx, src, accumulate=False):
    out = x.copy().ravel()
    if accumulate:
        np.add.at(out, idx.ravel(), src.ravel())
    else:
        out[idx.ravel()] = src.ravel()
    return out.reshape(x.shape)


def _take_along_dim(x, idx, dim=None):
    if dim is None:
        return x.ravel()[idx.ravel()]
    sizes = list(x.shape)
    sizes[dim] = idx.shape[dim]
    shape = np.broadcast_shapes(tuple(sizes), idx.shape)
    xs = list(shape)
    xs[dim] = x.shape[dim]
    return np.take_along_axis(np.broadcast_to(x, xs), np.broadcast_to(idx, shape), axis=dim)


def _nonzero(x, as_tuple=False):
    return np.argwhere(x)


# --- samples ---------------------------------------------------------------------------

def _index_select_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(4, 3), (0, _idx(2, 0, 2))), SampleInput(m(4, 3), (-1, _idx(1, 1, 1, 0))),
            SampleInput(m(2, 3, 4), (1, _idx(2,))), SampleInput(m(4, 3, nc=True), (0, _idx(3, 3)), name="noncontig"),
            SampleInput(m(4, 3), (0, np.zeros(0, I)), name="empty_index"), SampleInput(m(), (0, _idx(0)), name="0d")]


def _gather_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(3, 4), (1, _rand_idx(rng, (3, 5), 4))), SampleInput(m(3, 4), (0, _rand_idx(rng, (2, 4), 3))),
            SampleInput(m(3, 4), (-1, _rand_idx(rng, (2, 2), 4)), name="smaller_index"),
            SampleInput(m(2, 3, 4), (1, _rand_idx(rng, (2, 6, 4), 3))),
            SampleInput(m(4, 3, nc=True), (0, _rand_idx(rng, (5, 3), 4)), name="noncontig"),
            SampleInput(m(), (0, np.array(0, I)), name="0d")]


def _scatter_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(3, 5), (1, _perm_idx(rng, (3, 2), 5, 1), m(3, 2))),
            SampleInput(m(4, 3), (-2, _perm_idx(rng, (2, 2), 4, 0), 1.5), name="value"),
            SampleInput(m(4, 3, nc=True), (1, _perm_idx(rng, (4, 2), 3, 1), m(4, 2)), name="noncontig")]


def _larger_src_samples(dtype, rng):
    """A source larger than the index: only its leading corner is read."""
    m = _m(rng, dtype)
    return [SampleInput(m(4, 3), (0, _perm_idx(rng, (2, 3), 4, 0), m(3, 4)), name="scatter"),
            SampleInput(m(4, 3), (0, _rand_idx(rng, (5, 2), 4), m(6, 3)), name="scatter_add"),
            SampleInput(m(5), (0, _idx(0, 0, 3, 3, 3), m(6), "prod"), name="scatter_reduce")]


def _pick(name):
    return lambda dtype, rng: [s for s in _larger_src_samples(dtype, rng) if s.name == name]


_LARGER_NOTE = ("a source larger than the index gets a zero-padded gradient (PyTorch's backward raises a shape "
                "error there)")


def _scatter_reduce_op_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(3, 5), (1, _rand_idx(rng, (3, 4), 5), m(3, 4)), {"reduce": "add"}, grad=False),
            SampleInput(m(3, 5), (1, _rand_idx(rng, (3, 4), 5), m(3, 4)), {"reduce": "multiply"}, grad=False),
            SampleInput(m(3, 5), (0, _rand_idx(rng, (4, 5), 3), 2.0), {"reduce": "add"}, grad=False)]


def _scatter_add_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(3, 5), (1, _rand_idx(rng, (3, 6), 5), m(3, 6)), name="dups"),
            SampleInput(m(5), (0, _idx(0, 0, 4, 0), m(4))),
            SampleInput(m(4, 3, nc=True), (-1, _rand_idx(rng, (4, 4), 3), m(4, 4)), name="noncontig"),
            SampleInput(m(), (0, np.array(0, I), m()), name="0d")]


def _scatter_reduce_samples(dtype, rng):
    m = _m(rng, dtype)
    out = []
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        for include_self in (True, False):
            out.append(SampleInput(m(3, 4), (1, _rand_idx(rng, (3, 5), 4), m(3, 5), reduce),
                                   {"include_self": include_self}, name=f"{reduce}_{include_self}"))
    out.append(SampleInput(m(4, 3, nc=True), (0, _rand_idx(rng, (5, 3), 4), m(5, 3), "amax"), name="noncontig"))
    return out


def _index_add_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(4, 3), (0, _idx(0, 2, 0), m(3, 3))), SampleInput(m(4, 3), (1, _idx(2, 2), m(4, 2)),
                                                                           {"alpha": 2}),
            SampleInput(m(4, 3, nc=True), (-1, _idx(0, 1, 2, 0), m(4, 4)), name="noncontig"),
            SampleInput(m(), (0, _idx(0), m()), name="0d")]


def _index_copy_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(4, 3), (0, _idx(3, 1), m(2, 3))), SampleInput(m(4, 3), (-1, _idx(2, 0), m(4, 2))),
            SampleInput(m(4, 3, nc=True), (1, _idx(1,), m(4, 1)), name="noncontig")]


def _index_fill_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(4, 3), (0, _idx(3, 1, 3), 2)), SampleInput(m(4, 3), (1, _idx(-1,), -1)),
            SampleInput(m(4, 3), (0, _idx(0,), m()), name="tensor_value"),
            SampleInput(m(4, 3, nc=True), (1, _idx(0, 2), 1), name="noncontig")]


def _index_put_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(4, 3), ((_idx(0, 2),), m(2, 3))),
            SampleInput(m(4, 3), ((_idx(0, 2, 0), _idx(1, 1, 1)), m(3)), {"accumulate": True}, name="acc_dups"),
            SampleInput(m(4, 3), ((_idx(1, 3), _idx(0, 2)), m()), name="broadcast_value"),
            SampleInput(m(4, 3), ((np.array([True, False, True, False]),), m(3)), name="mask"),
            SampleInput(m(4, 3, nc=True), ((_idx(3, 3),), m(2, 3)), {"accumulate": True}, name="noncontig")]


def _masked_fill_samples(dtype, rng):
    m = _m(rng, dtype)
    b = lambda *s: make(rng, s, np.bool_)
    return [SampleInput(m(3, 4), (b(3, 4), 1)), SampleInput(m(3, 4), (b(4), -2)),
            SampleInput(m(3, 4), (b(3, 4), m()), name="tensor_value"),
            SampleInput(m(4), (b(2, 4), 0), name="broadcast_self"),
            SampleInput(m(4, 3, nc=True), (b(4, 3), 3), name="noncontig"), SampleInput(m(), (b(), 5), name="0d")]


def _masked_select_samples(dtype, rng):
    m = _m(rng, dtype)
    b = lambda *s: make(rng, s, np.bool_)
    return [SampleInput(m(3, 4), (b(3, 4),)), SampleInput(m(3, 4), (b(4),)), SampleInput(m(4), (b(2, 4),)),
            SampleInput(m(4, 3, nc=True), (b(4, 3),), name="noncontig"), SampleInput(m(), (b(),), name="0d")]


def _masked_scatter_samples(dtype, rng):
    m = _m(rng, dtype)
    b = lambda *s: make(rng, s, np.bool_)
    return [SampleInput(m(3, 4), (b(3, 4), m(3, 4))), SampleInput(m(3, 4), (b(4), m(15))),
            SampleInput(m(4), (b(2, 4), m(2, 5)), name="broadcast_self"),
            SampleInput(m(4, 3, nc=True), (b(4, 3), m(13)), name="noncontig")]


def _take_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(3, 4), (_idx(0, 11, -1, 0),)), SampleInput(m(3, 4), (_rand_idx(rng, (2, 3), 12),)),
            SampleInput(m(4, 3, nc=True), (_idx(5, 5, 2),), name="noncontig"), SampleInput(m(), (_idx(0, 0),))]


def _take_along_dim_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(3, 4), (_rand_idx(rng, (3, 2), 4), 1)), SampleInput(m(3, 4), (_rand_idx(rng, (6, 1), 3), 0)),
            SampleInput(m(3, 1), (_rand_idx(rng, (3, 4), 1), -1), name="broadcast"),
            SampleInput(m(3, 4), (_idx(0, 11, 5),), name="flat")]


def _put_samples(dtype, rng):
    m = _m(rng, dtype)
    return [SampleInput(m(3, 4), (_idx(0, 11, 5), m(3))), SampleInput(m(3, 4), (_idx(0, 0, -1), m(3)),
                                                                       {"accumulate": True}, name="acc_dups"),
            SampleInput(m(3, 4), (_idx(1, 2, 3, 4).reshape(2, 2), m(4)), name="shapes"),
            SampleInput(m(4, 3, nc=True), (_idx(2, 7), m(2)), {"accumulate": True}, name="noncontig")]


def _nonzero_samples(dtype, rng):
    z = lambda *s: (make(rng, s, dtype) * (make(rng, s, np.bool_))).astype(dtype)
    return [SampleInput(z(3, 4)), SampleInput(z(5)), SampleInput(z(2, 3, 2)), SampleInput(z(0, 3), name="empty"),
            SampleInput(np.zeros((2, 2), dtype), name="all_zero")]


def _getitem_samples(dtype, rng):
    x = lambda: make(rng, (4, 5, 3), dtype)
    return [
        SampleInput(x(), ((0, slice(None), np.array([0, 1, 1])),), name="int_then_array"),
        SampleInput(x(), ((np.array([[0, 1], [3, 3]]), slice(1, None), np.array([2, 0])),), name="separated"),
        SampleInput(x(), ((Ellipsis, np.array([2, 2, 0])),), name="ellipsis_array"),
        SampleInput(x(), ((None, np.array([1, 3]), None, slice(None, None, 2)),), name="none_array"),
        SampleInput(x(), ((True,),), name="bool_true"),
        SampleInput(x(), ((np.array(False),),), name="bool_false_0d"),
        SampleInput(x(), ((slice(None), make(rng, (5, 3), np.bool_)),), name="mask_2d"),
        SampleInput(x(), ((np.array(1), slice(None), np.array(-1)),), name="0d_int_tensors"),
        SampleInput(x(), (([0, 2], [1, -1]),), name="lists"),
        SampleInput(x(), ((slice(-3, None), -1, slice(None, 10)),), name="negative_slices"),
        SampleInput(x(), ((np.array([], dtype=np.int64),),), name="empty_index"),
        SampleInput(make(rng, (), dtype), ((None, Ellipsis),), name="0d_none"),
        SampleInput(make(rng, (), dtype), ((np.array(True),),), name="0d_mask"),
        SampleInput(make(rng, (6, 4), dtype, noncontig=True), ((np.array([5, 0, 5]), slice(1, 3)),), name="noncontig"),
    ]


def _getitem_ref(x, key):
    """NumPy indexing, except that PyTorch applies integer indices first (as
    selects) when index arrays are present too (NumPy would treat them as
    index arrays and move the result dims)."""
    key = key if isinstance(key, tuple) else (key,)
    ints = [isinstance(k, int) and not isinstance(k, bool) for k in key]
    if any(ints) and any(isinstance(k, (np.ndarray, list)) for k in key):
        first = tuple(k if i else slice(None) for k, i in zip(key, ints))
        return x[first][tuple(k for k, i in zip(key, ints) if not i)]
    return x[key]


OPS = [
    OpInfo("index_select", lambda x, d, i: np.take(x, i, axis=d) if x.ndim else x.copy(), _index_select_samples,
           dtypes=ALL),
    OpInfo("gather", _gather, _gather_samples, dtypes=ALL),
    OpInfo("scatter", _scatter, _scatter_samples, dtypes=ALL, inplace="scatter_",
           notes="reduce='add'|'multiply' is not differentiable (as in PyTorch); " + _LARGER_NOTE),
    OpInfo("scatter", lambda x, d, i, s, reduce=None: _scatter(x, d, i, s, reduce=reduce), _scatter_reduce_op_samples,
           dtypes=ALL, inplace="scatter_", differentiable=False,
           notes="reduce='add'|'multiply' is not differentiable (as in PyTorch)"),
    OpInfo("scatter_add", _scatter_add, _scatter_add_samples, dtypes=ALL, inplace="scatter_add_", notes=_LARGER_NOTE),
    OpInfo("scatter_reduce", _scatter_reduce, _scatter_reduce_samples, dtypes=ALL, inplace="scatter_reduce_",
           rtol=1e-5, notes=_LARGER_NOTE),
    OpInfo("index_add", _index_add, _index_add_samples, dtypes=ALL, inplace="index_add_"),
    OpInfo("index_copy", _index_copy, _index_copy_samples, dtypes=ALL, inplace="index_copy_"),
    OpInfo("index_fill", _index_fill, _index_fill_samples, dtypes=ALL, inplace="index_fill_"),
    OpInfo("index_put", _index_put, _index_put_samples, dtypes=ALL, inplace="index_put_"),
    OpInfo("masked_fill", _masked_fill, _masked_fill_samples, dtypes=ALL, inplace="masked_fill_"),
    OpInfo("masked_select", _masked_select, _masked_select_samples, dtypes=ALL),
    OpInfo("masked_scatter", _masked_scatter, _masked_scatter_samples, dtypes=ALL, inplace="masked_scatter_"),
    OpInfo("take", lambda x, i: x.ravel()[i], _take_samples, dtypes=ALL),
    OpInfo("take_along_dim", _take_along_dim, _take_along_dim_samples, dtypes=ALL),
    OpInfo("put", _put, _put_samples, dtypes=ALL, inplace="put_"),
    OpInfo("nonzero", _nonzero, _nonzero_samples, dtypes=ALL + (np.bool_,), differentiable=False),
    OpInfo("argwhere", _nonzero, _nonzero_samples, dtypes=ALL + (np.bool_,), differentiable=False),
    OpInfo("getitem", _getitem_ref, _getitem_samples, dtypes=ALL, method="__getitem__", torch_name="__getitem__"),
    OpInfo("scatter", _scatter, _pick("scatter"), dtypes=FLOATS, torch_name="", notes=_LARGER_NOTE),
    OpInfo("scatter_add", _scatter_add, _pick("scatter_add"), dtypes=FLOATS, torch_name="", notes=_LARGER_NOTE),
    OpInfo("scatter_reduce", _scatter_reduce, _pick("scatter_reduce"), dtypes=FLOATS, torch_name="",
           notes=_LARGER_NOTE),
]
