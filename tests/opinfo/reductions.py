"""OpInfo entries for reductions, scans, sorting and searching
(fabric/ops/reduce.py, fabric/ops/sorting.py).

Samples cover int / tuple / None / negative dims, keepdim, 0-d, empty (where
PyTorch allows it) and non-contiguous inputs; random floats keep gradcheck
away from ties (tie-breaking is tested in tests/test_reductions.py). Ops
returning ``(values, indices)`` compare ``values`` (``output_index=0``);
indices are compared with PyTorch in tests/test_reductions.py.
"""
from __future__ import annotations

import warnings

import numpy as np

from . import COMPLEX, FLOATS, INTS, OpInfo, SampleInput, make

ALL = FLOATS + INTS
BOOL = (np.bool_,)


def _ax(dim):
    """A NumPy axis from a PyTorch dim (None or () mean all)."""
    if dim is None or (isinstance(dim, tuple) and len(dim) == 0):
        return None
    return dim


def _quiet(f):
    def g(*a, **k):
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return f(*a, **k)
    return g


def _acc(x):
    """NumPy accumulation dtype matching PyTorch (ints and bools -> int64)."""
    return np.int64 if x.dtype.kind in "biu" else None


# --- samples --------------------------------------------------------------------

def _dims_samples(*, none=True, tuples=True, empty=True, zero_d=True, keep=True, empty_dim=1):
    """(x, dim[, keepdim]) samples for a dim-reduction."""
    def gen(dtype, rng):
        m = lambda *s, **kw: make(rng, s, dtype, **kw)
        out = []
        if none:
            out.append(SampleInput(m(3, 4), name="all"))
        out += [SampleInput(m(3, 4), (1,), name="dim1"),
                SampleInput(m(4, 3, noncontig=True), (0,), name="noncontig")]
        if keep:
            out.append(SampleInput(m(3, 4), (-1,), {"keepdim": True}, name="neg_keepdim"))
        if tuples:
            out += [SampleInput(m(2, 3, 4), ((0, 2),), name="tuple"),
                    SampleInput(m(2, 3, 2), ((-1, 0),), {"keepdim": True}, name="tuple_keepdim")]
        if zero_d:
            out.append(SampleInput(m(), (0,), name="0d"))
        if empty:
            out.append(SampleInput(m(0, 3), (empty_dim,), name="empty"))
        return out
    return gen


def _dim_int_samples(*, none=False, zero_d=True, empty=True):
    """(x, dim[, keepdim]) with an int dim only (max(dim), median(dim), ...)."""
    def gen(dtype, rng):
        m = lambda *s, **kw: make(rng, s, dtype, **kw)
        out = [SampleInput(m(3, 5), (1,), name="dim1"),
               SampleInput(m(3, 4), (-2,), {"keepdim": True}, name="neg_keepdim"),
               SampleInput(m(2, 3, 4), (1,), name="3d"),
               SampleInput(m(5, 3, noncontig=True), (0,), name="noncontig")]
        if none:
            out.insert(0, SampleInput(m(3, 4), name="all"))
        if zero_d:
            out.append(SampleInput(m(), (0,), name="0d"))
        if empty:
            out.append(SampleInput(m(0, 3), (1,), name="empty"))
        return out
    return gen


def _all_samples(dtype, rng):
    """Reductions over everything (max(), median() ...)."""
    m = lambda *s, **kw: make(rng, s, dtype, **kw)
    return [SampleInput(m(3, 4)), SampleInput(m(4, 3, noncontig=True), name="noncontig"),
            SampleInput(m(), name="0d"), SampleInput(m(2, 3, 2), name="3d")]


def _with_nan(a, rng, frac=0.25):
    a = np.array(a)
    if a.size:
        a.reshape(-1)[rng.random(a.size) < frac] = np.nan
    return a


def _nan_samples(gen):
    """``gen``'s samples plus copies with NaNs (forward only)."""
    def g(dtype, rng):
        base = gen(dtype, rng)
        if np.dtype(dtype).kind != "f":
            return base
        extra = [SampleInput(_with_nan(s.input, rng), s.args, s.kwargs, name=s.name + "_nan", grad=False)
                 for s in base if np.ndim(s.input) >= 1]
        return base + extra
    return g


def _nan_grad_samples(gen):
    """Like :func:`_nan_samples` but NaN samples also run gradcheck (for ops
    that ignore NaN: nansum, nanmean)."""
    def g(dtype, rng):
        base = gen(dtype, rng)
        if np.dtype(dtype).kind != "f":
            return base
        return base + [SampleInput(_with_nan(s.input, rng, 0.2), s.args, s.kwargs, name=s.name + "_nan")
                       for s in base if np.size(s.input) > 1]
    return g


def _prod_samples(dtype, rng):
    m = lambda *s, **kw: make(rng, s, dtype, low=0.5, high=1.5, **kw)
    one_zero = m(3, 4)
    one_zero[1, 2] = 0
    two_zeros = m(3, 4)
    two_zeros[0, 1] = two_zeros[0, 3] = 0
    flat_zero = m(2, 3)
    flat_zero[1, 1] = 0
    return [SampleInput(m(3, 4), name="all"),
            SampleInput(m(3, 4), (1,), name="dim1"),
            SampleInput(m(3, 4), (-2,), {"keepdim": True}, name="neg_keepdim"),
            SampleInput(m(4, 3, noncontig=True), (0,), name="noncontig"),
            SampleInput(one_zero, (1,), name="one_zero"),
            SampleInput(two_zeros, (1,), name="two_zeros"),
            SampleInput(flat_zero, name="all_one_zero"),
            SampleInput(m(), (0,), name="0d"),
            SampleInput(m(0, 3), (1,), name="empty")]


def _var_samples(dtype, rng):
    m = lambda *s, **kw: make(rng, s, dtype, **kw)
    return [SampleInput(m(3, 4), name="all"),
            SampleInput(m(3, 4), (1,), name="dim1"),
            SampleInput(m(3, 4), (-1,), {"keepdim": True, "correction": 0}, name="correction0"),
            SampleInput(m(2, 3, 4), ((0, 2),), {"unbiased": False}, name="tuple_biased"),
            SampleInput(m(4, 3, noncontig=True), (0,), {"correction": 2}, name="noncontig_c2"),
            SampleInput(m(3, 4), (1, False, True), name="positional"),
            SampleInput(m(), (), {"correction": 0}, name="0d"),
            SampleInput(m(3, 1), (1,), name="too_few", grad=False),
            SampleInput(m(0, 3), (0,), name="empty", grad=False)]


def _lse_samples(dtype, rng):
    m = lambda *s, **kw: make(rng, s, dtype, **kw)
    big = m(2, 3) + (1e4 if np.dtype(dtype).kind == "f" else 0)
    return [SampleInput(m(3, 4), (1,), name="dim1"),
            SampleInput(m(3, 4), (-1,), {"keepdim": True}, name="neg_keepdim"),
            SampleInput(m(2, 3, 4), ((0, 2),), name="tuple"),
            SampleInput(m(4, 3, noncontig=True), (0,), name="noncontig"),
            SampleInput(big, (1,), name="large"),
            SampleInput(m(), (0,), name="0d"),
            SampleInput(m(0, 3), (0,), name="empty")]


def _norm_samples(dtype, rng):
    m = lambda *s, **kw: make(rng, s, dtype, away_from=0.0, **kw)
    inf = float("inf")
    return [SampleInput(m(3, 4), name="fro"),
            SampleInput(m(3, 4), (2, 1), name="p2_dim1"),
            SampleInput(m(3, 4), (1, (0, 1)), name="p1"),
            SampleInput(m(3, 4), (3, -1, True), name="p3_keepdim"),
            SampleInput(m(3, 4), (1.5, 1), name="p1.5"),
            SampleInput(m(3, 4), (0.5, 1), name="p0.5"),
            SampleInput(m(3, 4), (inf, 1), name="inf"),
            SampleInput(m(3, 4), (-inf, 0), name="-inf"),
            SampleInput(m(3, 4), (0, 1), name="p0"),
            SampleInput(m(3, 4), (-1.5, 1), name="negative_p"),
            SampleInput(m(2, 3, 4), ("fro", (1, 2)), name="fro_dims"),
            SampleInput(m(4, 3, noncontig=True), (2, 0), name="noncontig"),
            SampleInput(m(), name="0d")]


def _scan_samples(*, low=-2.0, high=2.0, zeros=False):
    def gen(dtype, rng):
        m = lambda *s, **kw: make(rng, s, dtype, low=low, high=high, **kw)
        out = [SampleInput(m(3, 4), (1,), name="dim1"),
               SampleInput(m(3, 4), (-2,), name="neg"),
               SampleInput(m(2, 3, 2), (1,), name="3d"),
               SampleInput(m(4, 3, noncontig=True), (0,), name="noncontig"),
               SampleInput(m(), (0,), name="0d"),
               SampleInput(m(0, 3), (0,), name="empty")]
        if zeros:
            a = m(3, 5)
            a[0, 1] = a[1, 3] = a[2, 0] = a[2, 2] = 0
            out.insert(0, SampleInput(a, (1,), name="zeros"))
        return out
    return gen


def _logical_samples(dtype, rng):
    def m(*s, **kw):
        a = make(rng, s, dtype, **kw)
        if a.dtype.kind != "b":
            a = np.where(rng.random(s) < 0.3, 0, a).astype(dtype)
        return a
    return [SampleInput(m(3, 4), name="all"),
            SampleInput(m(3, 4), (1,), name="dim1"),
            SampleInput(m(3, 4), (-1, True), name="keepdim"),
            SampleInput(m(2, 3, 4), ((0, 2),), name="tuple"),
            SampleInput(m(4, 3, noncontig=True), (0,), name="noncontig"),
            SampleInput(m(), name="0d"),
            SampleInput(m(0, 3), (0,), name="empty")]


def _count_nonzero_samples(dtype, rng):
    return [s for s in _logical_samples(dtype, rng) if "keepdim" not in s.name]


def _sort_samples(dtype, rng):
    m = lambda *s, **kw: make(rng, s, dtype, **kw)
    return [SampleInput(m(3, 5), name="default"),
            SampleInput(m(3, 5), (0,), name="dim0"),
            SampleInput(m(3, 5), (1, True), name="descending"),
            SampleInput(m(3, 5), (), {"dim": -2, "descending": True, "stable": True}, name="stable_kw"),
            SampleInput(m(5, 3, noncontig=True), (0,), name="noncontig"),
            SampleInput(m(), name="0d"),
            SampleInput(m(0, 3), (0,), name="empty")]


def _topk_samples(dtype, rng):
    m = lambda *s, **kw: make(rng, s, dtype, **kw)
    return [SampleInput(m(3, 5), (2,), name="k2"),
            SampleInput(m(3, 5), (3, 0), name="dim0"),
            SampleInput(m(3, 5), (2, -1, False), name="smallest"),
            SampleInput(m(2, 20), (3,), name="partition_path"),
            SampleInput(m(2, 20), (4, 1, False), name="partition_smallest"),
            SampleInput(m(5, 3, noncontig=True), (1, 0), name="noncontig"),
            SampleInput(m(3, 4), (0,), name="k0"),
            SampleInput(m(), (1,), name="0d"),
            SampleInput(m(0, 3), (2,), name="empty_rows")]


def _kth_samples(dtype, rng):
    m = lambda *s, **kw: make(rng, s, dtype, **kw)
    return [SampleInput(m(3, 5), (2,), name="k2"),
            SampleInput(m(3, 5), (1, 0), name="dim0"),
            SampleInput(m(3, 5), (5, -1, True), name="kmax_keepdim"),
            SampleInput(m(5, 3, noncontig=True), (3, 0), name="noncontig"),
            SampleInput(m(), (1,), name="0d"),
            SampleInput(m(0, 3), (2,), name="empty_rows")]


def _mode_samples(dtype, rng):
    def rep(*s, **kw):  # values with repeats (ties decide the mode): forward only
        a = make(rng, s, dtype, **kw)
        return np.round(a * 2) / 2 if a.dtype.kind == "f" else a
    m = lambda *s, **kw: make(rng, s, dtype, **kw)
    return [SampleInput(rep(3, 6), name="repeats", grad=False),
            SampleInput(rep(3, 6), (0,), name="repeats_dim0", grad=False),
            SampleInput(rep(6, 3, noncontig=True), (0, True), name="repeats_noncontig", grad=False),
            SampleInput(m(3, 6), name="distinct"),
            SampleInput(m(3, 6), (-1, True), name="keepdim"),
            SampleInput(m(6, 3, noncontig=True), (0,), name="noncontig"),
            SampleInput(m(), name="0d"),
            SampleInput(m(0, 3), (1,), name="empty_rows")]


def _quantile_samples(dtype, rng):
    m = lambda *s, **kw: make(rng, s, dtype, **kw)
    # q off the rank grid k/(n-1) for gradcheck (the weights are differentiable in q)
    q = np.array([0.1, 0.35, 0.62, 0.9], dtype=dtype)
    edges = np.array([0.0, 0.5, 1.0], dtype=dtype)
    out = [SampleInput(m(3, 5), (0.3,), name="all"),
           SampleInput(m(3, 5), (0.3, 1), name="dim1"),
           SampleInput(m(3, 5), (q, 0), name="q_tensor"),
           SampleInput(m(3, 5), (0.6, -1, True), name="keepdim"),
           SampleInput(m(3, 5), (q,), {"keepdim": True}, name="all_keepdim"),
           SampleInput(m(5, 3, noncontig=True), (0.7, 0), name="noncontig"),
           SampleInput(m(3, 5), (edges, 1), name="q_edges", grad=False),
           SampleInput(m(), (0.4,), name="0d"),
           SampleInput(m(), (0.4, 0), name="0d_dim")]
    for interp in ("lower", "higher", "midpoint", "nearest"):
        out.append(SampleInput(m(3, 5), (np.array([0.1, 0.375, 0.5, 0.9], dtype=dtype), 1),
                               {"interpolation": interp}, name=interp, grad=False))
    out.append(SampleInput(m(3, 5), (q, 1), {"interpolation": "midpoint"}, name="midpoint_grad"))
    return out


def _unique_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype, low=-3, high=3) if np.dtype(dtype).kind != "f" else \
        np.asarray(np.round(make(rng, s, dtype)), dtype)
    rows = m(5, 3)
    rows[3] = rows[1]
    return [SampleInput(m(3, 5), name="flat"),
            SampleInput(m(4, 3), (False,), name="sorted_false"),
            SampleInput(rows, (), {"dim": 0}, name="dim0"),
            SampleInput(np.ascontiguousarray(rows.T), (), {"dim": 1}, name="dim1"),
            SampleInput(m(), name="0d"),
            SampleInput(m(0), name="empty")]


def _with_kwargs(gen, **extra):
    def g(dtype, rng):
        return [SampleInput(s.input, s.args, dict(s.kwargs, **extra), name=s.name) for s in gen(dtype, rng)]
    return g


def _unique_consecutive_samples(dtype, rng):
    def runs(n, k=3):
        return np.repeat(make(rng, (n,), dtype, low=-3, high=3), rng.integers(1, k, n))
    rows = np.repeat(make(rng, (3, 4), dtype), [2, 1, 2], axis=0)
    return [SampleInput(runs(6), name="flat"),
            SampleInput(runs(4).reshape(-1, 1) * np.ones((1, 2), dtype), name="2d"),
            SampleInput(rows, (), {"dim": 0}, name="dim0"),
            SampleInput(np.ascontiguousarray(rows.T), (), {"dim": 1}, name="dim1"),
            SampleInput(make(rng, (), dtype), name="0d"),
            SampleInput(make(rng, (0,), dtype), name="empty")]


def _searchsorted_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype, low=-5, high=5)
    seq = np.sort(m(7))
    seq[3] = seq[2]
    vals = np.concatenate([m(4), seq[[0, 2, 6]]])
    rows = np.sort(m(2, 5), axis=-1)
    return [SampleInput(seq, (vals,), name="1d"),
            SampleInput(seq, (vals,), {"right": True}, name="right"),
            SampleInput(seq, (vals.reshape(7, 1),), {"side": "right"}, name="side_2d_values"),
            SampleInput(rows, (np.concatenate([m(2, 3), rows[:, :2]], axis=1),), name="nd"),
            SampleInput(rows, (rows[:, 1:3].copy(),), {"right": True}, name="nd_right"),
            SampleInput(seq, (seq[2].item(),), name="scalar"),
            SampleInput(seq, (vals,), {"out_int32": True}, name="int32")]


def _bucketize_samples(dtype, rng):
    b = np.sort(make(rng, (5,), dtype, low=-5, high=5))
    x = np.concatenate([make(rng, (6,), dtype, low=-6, high=6), b[[0, 4]]])
    return [SampleInput(x, (b,), name="1d"),
            SampleInput(x.reshape(2, 4), (b,), {"right": True}, name="right_2d"),
            SampleInput(x, (b,), {"out_int32": True}, name="int32")]


def _bincount_samples(dtype, rng):
    x = rng.integers(0, 6, 12).astype(dtype)
    w = rng.standard_normal(12)
    return [SampleInput(x, name="plain"),
            SampleInput(x, (), {"minlength": 10}, name="minlength"),
            SampleInput(x, (w,), name="weights64"),
            SampleInput(x, (w.astype(np.float32),), name="weights32"),
            SampleInput(x[:0], name="empty")]


def _histc_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype, low=-3, high=3)
    return [SampleInput(m(20), name="default"),
            SampleInput(m(4, 5), (7, -1, 2), name="range"),
            SampleInput(m(20), (5,), name="data_range"),
            SampleInput(np.ones(3, dtype), (3,), name="constant"),
            SampleInput(m(0), (4, 0, 1), name="empty")]


def _histogram_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype, low=-3, high=3)
    return [SampleInput(m(20), (6,), name="bins"),
            SampleInput(m(4, 5), (4,), {"range": (-1.0, 2.0)}, name="range"),
            SampleInput(m(20), (np.array([-3.0, -1.0, 0.5, 3.0], dtype=dtype),), name="edges"),
            SampleInput(m(20), (5,), {"density": True}, name="density")]


# --- references -----------------------------------------------------------------

def _np_prod(x, dim=None, keepdim=False):
    return np.prod(x, axis=dim, keepdims=keepdim, dtype=_acc(x))


def _np_extreme_dim(fn, arg):
    def ref(x, dim, keepdim=False):
        if x.ndim == 0:
            return x, np.array(0)
        if x.shape[dim] == 0 if x.ndim else False:
            raise AssertionError("unreachable")
        if x.size == 0:
            shp = list(x.shape)
            if keepdim:
                shp[dim] = 1
            else:
                del shp[dim]
            return np.zeros(shp, x.dtype), np.zeros(shp, np.int64)
        return fn(x, axis=dim, keepdims=keepdim), arg(x, axis=dim, keepdims=keepdim)
    return ref


def _np_arg(fn):
    def ref(x, dim=None, keepdim=False):
        if dim is None:
            r = fn(x.reshape(-1))
            return np.array(r).reshape((1,) * x.ndim if keepdim else ())
        if x.ndim == 0:
            return np.array(0)
        if x.size == 0:
            return _np_extreme_dim(np.max, np.argmax)(x, dim, keepdim)[1]
        return fn(x, axis=dim, keepdims=keepdim)
    return ref


@_quiet
def _np_var(x, dim=None, unbiased=None, keepdim=False, *, correction=None, std=False):
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    c = correction if correction is not None else (0 if unbiased is False else 1)
    ax = _ax(dim)
    n = x.size if ax is None else np.prod([x.shape[d] for d in np.atleast_1d(ax)])
    m = x.mean(axis=ax, keepdims=True)
    v = (np.abs(x - m) ** 2).sum(axis=ax, keepdims=keepdim) / max(n - c, 0)
    return np.sqrt(v) if std else v


@_quiet
def _np_logsumexp(x, dim, keepdim=False):
    x = x.astype(np.float32) if x.dtype.kind != "f" else x
    ax = _ax(dim)
    if x.size == 0:
        return np.log(np.sum(np.exp(x), axis=ax, keepdims=keepdim))
    mx = np.max(x, axis=ax, keepdims=True)
    r = np.log(np.sum(np.exp(x - mx), axis=ax, keepdims=True)) + mx
    return r if keepdim else np.squeeze(r, axis=ax if ax is not None else tuple(range(x.ndim)))


def _np_norm(x, p="fro", dim=None, keepdim=False):
    ax = _ax(dim)
    a = np.abs(x)
    if p in ("fro", 2):
        r = np.sqrt((a * a).sum(axis=ax, keepdims=keepdim))
    elif p == float("inf"):
        r = a.max(axis=ax, keepdims=keepdim)
    elif p == -float("inf"):
        r = a.min(axis=ax, keepdims=keepdim)
    elif p == 0:
        r = (x != 0).sum(axis=ax, keepdims=keepdim).astype(x.dtype)
    else:
        r = (a ** p).sum(axis=ax, keepdims=keepdim) ** (1.0 / p)
    return np.asarray(r, x.dtype)


def _np_cum(fn):
    def ref(x, dim):
        return x.astype(_acc(x) or x.dtype) if x.ndim == 0 else fn(x, axis=dim, dtype=_acc(x))
    return ref


def _np_cumextreme(acc):
    def ref(x, dim):
        return x if x.ndim == 0 else acc(x, axis=dim)
    return ref


def _np_logcumsumexp(x, dim):
    return x if x.ndim == 0 or x.size == 0 else np.logaddexp.accumulate(x, axis=dim)


def _np_logical(fn):
    def ref(x, dim=None, keepdim=False):
        r = fn(x, axis=_ax(dim), keepdims=keepdim)
        return np.asarray(r, np.uint8 if x.dtype == np.uint8 else np.bool_)
    return ref


def _np_count_nonzero(x, dim=None):
    return np.asarray(np.count_nonzero(x, axis=_ax(dim)), np.int64)


def _np_sort(x, dim=-1, descending=False, stable=False):
    if x.ndim == 0:
        return x, np.array(0)
    if descending:
        n = x.shape[dim]
        i = (n - 1) - np.flip(np.argsort(np.flip(x, dim), axis=dim, kind="stable"), dim)
    else:
        i = np.argsort(x, axis=dim, kind="stable")
    return np.take_along_axis(x, i, dim), i


def _np_topk(x, k, dim=-1, largest=True, sorted=True):
    v, i = _np_sort(x, dim, largest)
    if x.ndim == 0:
        return v, i
    sl = [slice(None)] * x.ndim
    sl[dim] = slice(0, k)
    return v[tuple(sl)], i[tuple(sl)]


def _np_kthvalue(x, k, dim=-1, keepdim=False):
    if x.ndim == 0:
        return x, np.array(0)
    v, i = _np_sort(x, dim)
    return np.take(v, [k - 1], axis=dim) if keepdim else np.take(v, k - 1, axis=dim), None


def _np_median_all(x):
    if x.size == 0:
        return np.array(np.nan, x.dtype)
    f = np.sort(x.reshape(-1))  # NaN last: a NaN anywhere is the result
    return f[-1] if f.dtype.kind == "f" and np.isnan(f[-1]) else f[(f.size - 1) // 2]


def _np_median_dim(x, dim, keepdim=False):
    if x.ndim == 0:
        return x, np.array(0)
    v = np.sort(x, axis=dim)
    k = (x.shape[dim] - 1) // 2
    r = np.take(v, [k], axis=dim)
    if x.dtype.kind == "f":
        r = np.where(np.isnan(x).any(axis=dim, keepdims=True), np.nan, r)
    return (r if keepdim else np.squeeze(r, dim)), None


def _np_nanmedian_all(x):
    f = np.sort(x.reshape(-1))
    f = f[~np.isnan(f)] if f.dtype.kind == "f" else f
    return f[(f.size - 1) // 2] if f.size else np.array(np.nan, x.dtype)


def _np_mode(x, dim=-1, keepdim=False):
    if x.ndim == 0:
        return x, np.array(0)
    xm = np.moveaxis(x, dim, -1)
    flat = xm.reshape(-1, xm.shape[-1])
    vals = []
    for row in flat:  # reference only: small rows
        u, c = np.unique(row, return_counts=True)
        vals.append(u[np.argmax(c)])
    v = np.array(vals, x.dtype).reshape(xm.shape[:-1])
    return (np.expand_dims(v, dim) if keepdim else v), None


def _np_quantile(x, q, dim=None, keepdim=False, interpolation="linear"):
    method = {"linear": "linear", "lower": "lower", "higher": "higher", "midpoint": "midpoint",
              "nearest": "nearest"}[interpolation]
    r = np.quantile(x, q, axis=dim if x.ndim else None, keepdims=keepdim, method=method)
    return np.asarray(r, x.dtype)


@_quiet
def _np_nanquantile(x, q, dim=None, keepdim=False, interpolation="linear"):
    r = np.nanquantile(x, q, axis=dim if x.ndim else None, keepdims=keepdim, method=interpolation)
    return np.asarray(r, x.dtype)


def _np_unique(x, sorted=True, return_inverse=False, return_counts=False, dim=None):
    r = np.unique(x, return_inverse=return_inverse, return_counts=return_counts, axis=dim, equal_nan=False)
    if not isinstance(r, tuple):
        return r
    r = list(r)
    if return_inverse:
        r[1] = r[1].reshape(x.shape if dim is None else (-1,))
    return tuple(r)


def _np_unique_consecutive(x, return_inverse=False, return_counts=False, dim=None):
    m = x.reshape(-1, 1) if dim is None else np.moveaxis(x, dim, 0).reshape(x.shape[dim], -1)
    start = np.ones(m.shape[0], bool)
    start[1:] = (m[1:] != m[:-1]).any(axis=1)
    vals = x.reshape(-1)[start] if dim is None else np.moveaxis(np.moveaxis(x, dim, 0)[start], 0, dim)
    out = [vals]
    if return_inverse:
        inv = np.cumsum(start) - 1
        out.append(inv.reshape(x.shape) if dim is None else inv)
    if return_counts:
        out.append(np.diff(np.append(np.nonzero(start)[0], m.shape[0])))
    return out[0] if len(out) == 1 else tuple(out)


def _np_searchsorted(seq, v, *, right=False, side=None, sorter=None, out_int32=False):
    side = side or ("right" if right else "left")
    if sorter is not None:
        seq = np.take_along_axis(seq, sorter, -1)
    if seq.ndim == 1:
        r = np.searchsorted(seq, v, side=side)
    else:
        r = np.stack([np.searchsorted(s, vv, side=side) for s, vv in zip(seq, v)])
    return np.asarray(r, np.int32 if out_int32 else np.int64)


def _np_bucketize(x, b, *, right=False, out_int32=False):
    return np.asarray(np.searchsorted(b, x, side="left" if not right else "right"),
                      np.int32 if out_int32 else np.int64)


def _np_bincount(x, weights=None, minlength=0):
    r = np.bincount(x, weights, minlength)
    if weights is None:
        return r.astype(np.int64)
    return r.astype(weights.dtype if weights.dtype.kind == "f" else np.float64)


def _np_histc(x, bins=100, min=0, max=0):
    lo, hi = float(min), float(max)
    if lo == hi and x.size:
        lo, hi = float(x.min()), float(x.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    return np.histogram(x, bins, range=(lo, hi))[0].astype(x.dtype)


def _np_histogram(x, bins, *, range=None, weight=None, density=False):
    h, e = np.histogram(x, bins, range=range, weights=weight, density=density)
    return h.astype(x.dtype), e.astype(x.dtype)


def _np_aminmax(x, *, dim=None, keepdim=False):
    if dim is None and keepdim:
        return (np.min(x, keepdims=True), np.max(x, keepdims=True))
    return np.min(x, axis=dim, keepdims=keepdim), np.max(x, axis=dim, keepdims=keepdim)


def _aminmax_samples(dtype, rng):
    m = lambda *s, **kw: make(rng, s, dtype, **kw)
    return [SampleInput(m(3, 4), name="all"),
            SampleInput(m(3, 4), (), {"dim": 1}, name="dim1"),
            SampleInput(m(3, 4), (), {"dim": -2, "keepdim": True}, name="keepdim"),
            SampleInput(m(3, 4), (), {"keepdim": True}, name="all_keepdim"),
            SampleInput(m(4, 3, noncontig=True), (), {"dim": 0}, name="noncontig"),
            SampleInput(m(), name="0d")]


def _np_var_mean(std):
    def ref(x, *a, **k):
        dim = a[0] if a else k.get("dim")
        keep = k.get("keepdim", a[2] if len(a) > 2 else False)
        return _np_var(x, *a, std=std, **k), np.mean(x, axis=_ax(dim) if not isinstance(dim, bool) else None,
                                                       keepdims=keep)
    return ref


@_quiet
def _np_nanmean(x, dim=None, keepdim=False):
    return np.nanmean(x, axis=_ax(dim), keepdims=keepdim)


def _np_nansum(x, dim=None, keepdim=False):
    return np.nansum(x, axis=_ax(dim), keepdims=keepdim, dtype=_acc(x))


def _np_amax(fn):
    def ref(x, dim=(), keepdim=False):
        return fn(x, axis=_ax(dim), keepdims=keepdim)
    return ref


def _np_nanmedian_dim(x, dim, keepdim=False):
    if x.ndim == 0:
        return x, np.array(0)
    xm = np.sort(np.moveaxis(x, dim, -1), axis=-1)  # NaN last
    valid = (~np.isnan(xm)).sum(-1, keepdims=True) if x.dtype.kind == "f" else np.full(xm.shape[:-1] + (1,),
                                                                                       xm.shape[-1])
    v = np.take_along_axis(xm, np.maximum((valid - 1) // 2, 0), -1)[..., 0]
    return (np.expand_dims(v, dim) if keepdim else v), None


OPS = [
    OpInfo("nansum", _np_nansum, _nan_grad_samples(_dims_samples()), dtypes=ALL),
    OpInfo("nanmean", _np_nanmean, _nan_grad_samples(_dims_samples(empty=False))),
    OpInfo("prod", _np_prod, _prod_samples, dtypes=ALL, rtol=1e-5, complex_dtypes=COMPLEX),
    OpInfo("max", lambda x: np.max(x), _nan_samples(_all_samples), dtypes=ALL, notes="max(a, b) is maximum"),
    OpInfo("max", _np_extreme_dim(np.max, np.argmax), _nan_samples(_dim_int_samples()), dtypes=ALL,
           output_index=0),
    OpInfo("min", lambda x: np.min(x), _nan_samples(_all_samples), dtypes=ALL),
    OpInfo("min", _np_extreme_dim(np.min, np.argmin), _nan_samples(_dim_int_samples()), dtypes=ALL,
           output_index=0),
    OpInfo("amax", _np_amax(np.max), _nan_samples(_dims_samples(empty=False)), dtypes=ALL),
    OpInfo("amin", _np_amax(np.min), _nan_samples(_dims_samples(empty=False)), dtypes=ALL),
    OpInfo("aminmax", _np_aminmax, _aminmax_samples, dtypes=ALL, output_index=0),
    OpInfo("aminmax", _np_aminmax, _aminmax_samples, dtypes=ALL, output_index=1),
    OpInfo("argmax", _np_arg(np.argmax), _dim_int_samples(none=True), dtypes=ALL, differentiable=False),
    OpInfo("argmin", _np_arg(np.argmin), _dim_int_samples(none=True), dtypes=ALL, differentiable=False),
    OpInfo("var", _np_var, _var_samples, rtol=1e-5, complex_dtypes=COMPLEX),
    OpInfo("std", lambda *a, **k: _np_var(*a, std=True, **k), _var_samples, rtol=1e-5, complex_dtypes=COMPLEX),
    OpInfo("var_mean", _np_var_mean(False), _var_samples, output_index=0, method="", rtol=1e-5),
    OpInfo("var_mean", _np_var_mean(False), _var_samples, output_index=1, method="", rtol=1e-5),
    OpInfo("std_mean", _np_var_mean(True), _var_samples, output_index=0, method="", rtol=1e-5),
    OpInfo("logsumexp", _np_logsumexp, _lse_samples, dtypes=ALL, rtol=1e-5),
    OpInfo("norm", _np_norm, _norm_samples, rtol=1e-5,
           notes="vector norms here; 'nuc' and other matrix norms call fabric.linalg.matrix_norm", complex_dtypes=COMPLEX),
    OpInfo("cumsum", _np_cum(np.cumsum), _scan_samples(), dtypes=ALL + BOOL, rtol=1e-5, complex_dtypes=COMPLEX),
    OpInfo("cumprod", _np_cum(np.cumprod), _scan_samples(low=0.5, high=1.5, zeros=True), dtypes=ALL, rtol=1e-5, complex_dtypes=COMPLEX),
    OpInfo("cummax", _np_cumextreme(np.maximum.accumulate), _nan_samples(_scan_samples()), dtypes=ALL,
           output_index=0),
    OpInfo("cummin", _np_cumextreme(np.minimum.accumulate), _nan_samples(_scan_samples()), dtypes=ALL,
           output_index=0),
    OpInfo("logcumsumexp", _np_logcumsumexp, _scan_samples(), rtol=1e-5),
    OpInfo("all", _np_logical(np.all), _logical_samples, dtypes=ALL + BOOL + (np.uint8,), differentiable=False),
    OpInfo("any", _np_logical(np.any), _logical_samples, dtypes=ALL + BOOL + (np.uint8,), differentiable=False),
    OpInfo("count_nonzero", _np_count_nonzero, _count_nonzero_samples, dtypes=ALL + BOOL, differentiable=False),
    OpInfo("sort", _np_sort, _nan_samples(_sort_samples), dtypes=ALL, output_index=0,
           notes="always stable: equals PyTorch's stable=True; its default is unstable on rows > 16 elements"),
    OpInfo("sort", _np_sort, _nan_samples(_sort_samples), dtypes=ALL, output_index=1, differentiable=False),
    OpInfo("argsort", lambda *a, **k: _np_sort(*a, **k)[1], _nan_samples(_sort_samples), dtypes=ALL,
           differentiable=False),
    OpInfo("msort", lambda x: np.sort(x, axis=0) if x.ndim else x,
           lambda d, r: [s for s in _sort_samples(d, r) if not s.args and not s.kwargs], dtypes=ALL),
    OpInfo("topk", _np_topk, _topk_samples, dtypes=ALL, output_index=0),
    OpInfo("topk", _np_topk, _topk_samples, output_index=1, differentiable=False,
           notes="indices of tied values may differ from PyTorch's (its CPU order is implementation-defined)"),
    OpInfo("kthvalue", _np_kthvalue, _kth_samples, dtypes=ALL, output_index=0,
           notes="index of a tied value: lowest (stable); PyTorch's quickselect may pick another"),
    OpInfo("median", _np_median_all, _nan_samples(_all_samples), dtypes=ALL),
    OpInfo("median", _np_median_dim, _dim_int_samples(), dtypes=ALL, output_index=0),
    OpInfo("nanmedian", _np_nanmedian_all, _nan_samples(_all_samples), dtypes=ALL),
    OpInfo("nanmedian", _np_nanmedian_dim, _nan_samples(_dim_int_samples()), dtypes=ALL, output_index=0),
    OpInfo("mode", _np_mode, _mode_samples, dtypes=ALL, output_index=0,
           notes="index = last occurrence; PyTorch agrees on rows <= 16 without NaN (beyond: std::sort order)"),
    OpInfo("quantile", _np_quantile, _quantile_samples, rtol=1e-5),
    OpInfo("nanquantile", _np_nanquantile, _nan_samples(_quantile_samples), rtol=1e-5),
    OpInfo("unique", _np_unique, _unique_samples, dtypes=ALL, differentiable=False,
           notes="output never requires grad (PyTorch records a node whose backward raises)"),
    OpInfo("unique", _np_unique, _with_kwargs(_unique_samples, return_inverse=True, return_counts=True),
           dtypes=ALL, differentiable=False, output_index=1),
    OpInfo("unique", _np_unique, _with_kwargs(_unique_samples, return_inverse=True, return_counts=True),
           dtypes=ALL, differentiable=False, output_index=2),
    OpInfo("unique_consecutive", _np_unique_consecutive, _unique_consecutive_samples, dtypes=ALL,
           differentiable=False),
    OpInfo("unique_consecutive", _np_unique_consecutive,
           _with_kwargs(_unique_consecutive_samples, return_inverse=True, return_counts=True), dtypes=ALL,
           differentiable=False, output_index=1),
    OpInfo("unique_consecutive", _np_unique_consecutive,
           _with_kwargs(_unique_consecutive_samples, return_inverse=True, return_counts=True), dtypes=ALL,
           differentiable=False, output_index=2),
    OpInfo("searchsorted", _np_searchsorted, _searchsorted_samples, dtypes=ALL, differentiable=False, method=""),
    OpInfo("bucketize", _np_bucketize, _bucketize_samples, dtypes=ALL, differentiable=False, method=""),
    OpInfo("bincount", _np_bincount, _bincount_samples, dtypes=INTS, differentiable=False),
    OpInfo("histc", _np_histc, _histc_samples, differentiable=False, notes="not differentiable (as PyTorch)"),
    OpInfo("histogram", _np_histogram, _histogram_samples, differentiable=False, output_index=0, dtypes=(np.float64,),
           rtol=1e-6),
    OpInfo("histogram", _np_histogram, _histogram_samples, differentiable=False, output_index=1, dtypes=(np.float64,),
           rtol=1e-6),
]
