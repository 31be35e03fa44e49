"""Reductions, scans, sorting and searching beyond the generic OpInfo tests:
hypothesis-driven comparisons with PyTorch over shapes / dims / keepdim /
dtypes (forward, result dtype, indices, gradients, and the error type when
PyTorch raises), tie-breaking, namedtuple results, ``out=``, error messages,
zero-safe products, numerical stability.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import fabric
from fabric.autograd import gradcheck, gradgradcheck

try:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
    HAS_HYPOTHESIS = True
except ImportError:  # pragma: no cover
    HAS_HYPOTHESIS = False

INF = float("inf")


def T(a, dtype=None, requires_grad=False):
    t = fabric.tensor(a, dtype=dtype)
    return t.requires_grad_() if requires_grad else t


def npy(t):
    return t.detach().numpy()


# --- differential testing against PyTorch ------------------------------------------

def _flatten(out):
    if isinstance(out, (tuple, list)):
        return [o for x in out for o in _flatten(x)]
    return [out]


def check_like_torch(f, x, *, grad=True, compare=None, rtol=None, seed=0):
    """Run ``f(lib, tensor)`` with lib = torch and fabric on the array ``x``:
    same exception type if torch raises; else same structure, shapes, dtypes,
    values (``compare``: indices of the outputs to compare, default all) and,
    for float inputs, the same gradient of a random weighting of the
    differentiable outputs."""
    import torch

    fl = x.dtype.kind == "f"
    tx = torch.from_numpy(x.copy())
    fx = fabric.from_numpy(x.copy())
    if grad and fl:
        tx.requires_grad_()
        fx.requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            tout = f(torch, tx)
        except Exception as e:  # PyTorch rejects it: so must we, with the same type
            with pytest.raises(type(e)):
                f(fabric, fx)
            return
        fout = f(fabric, fx)
    tl, fl_ = _flatten(tout), _flatten(fout)
    assert len(tl) == len(fl_), (len(tl), len(fl_))
    assert type(fout).__name__ == type(tout).__name__ or not isinstance(tout, tuple), \
        (type(fout).__name__, type(tout).__name__)
    if isinstance(tout, tuple) and hasattr(tout, "_fields"):
        assert hasattr(fout, "_fields") or len(tout._fields) == 0
    idx = range(len(tl)) if compare is None else compare
    for i in idx:
        a, b = fl_[i], tl[i]
        assert tuple(a.shape) == tuple(b.shape), (i, tuple(a.shape), tuple(b.shape))
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1], (i, a.dtype, b.dtype)
        tol = rtol if rtol is not None else (2e-5 if b.dtype == torch.float32 else 1e-7)
        np.testing.assert_allclose(npy(a).astype(np.float64), b.detach().numpy().astype(np.float64),
                                   rtol=tol, atol=tol, equal_nan=True, err_msg=f"output {i}")
    if not (grad and fl):
        return
    outs = [(a, b) for i, (a, b) in enumerate(zip(fl_, tl)) if i in idx and b.requires_grad]
    if not outs or any(b.numel() == 0 for _, b in outs):
        return
    rng = np.random.default_rng(seed)
    tloss = 0
    floss = 0
    for a, b in outs:
        w = rng.standard_normal(tuple(b.shape)).astype(x.dtype)
        tloss = tloss + (b * torch.from_numpy(w)).sum()
        floss = floss + (a * fabric.from_numpy(w.copy())).sum()
    tloss.backward()
    floss.backward()
    if tx.grad is None:
        assert fx.grad is None or not np.any(npy(fx.grad))
        return
    tol = 1e-4 if x.dtype == np.float32 else 1e-6
    np.testing.assert_allclose(npy(fx.grad), tx.grad.numpy(), rtol=tol, atol=tol, equal_nan=True, err_msg="grad")


def _has_ties_along(x, axis):
    if x.ndim == 0 or x.size == 0:
        return False
    s = np.sort(x, axis=axis)
    return bool((np.diff(s, axis=axis) == 0).any())


if HAS_HYPOTHESIS:
    DTYPES = [np.float64, np.float32, np.int64, np.int32]

    @st.composite
    def arrays(draw, dtypes=DTYPES, max_dims=3, max_side=4, min_side=0, ties=True):
        """An array with 0..3 dims; floats either integer-valued (many ties) or continuous."""
        shape = tuple(draw(st.lists(st.integers(min_side, max_side), max_size=max_dims)))
        dtype = np.dtype(draw(st.sampled_from(dtypes)))
        seed = draw(st.integers(0, 2 ** 16))
        rng = np.random.default_rng(seed)
        if dtype.kind == "f" and not (ties and draw(st.booleans())):
            a = rng.standard_normal(shape)
        else:
            a = rng.integers(-2, 3, shape)
        a = np.asarray(a, dtype)
        if a.ndim >= 2 and draw(st.booleans()):  # non-contiguous, same values
            a = np.swapaxes(np.ascontiguousarray(np.swapaxes(a, -1, -2)), -1, -2)
        return a

    def dim_int(draw, nd):
        n = max(nd, 1)
        return draw(st.integers(-n, n - 1))

    def dims(draw, nd):
        """None, an int, or a tuple of distinct dims (possibly negative)."""
        kind = draw(st.sampled_from(["none", "int", "tuple"]))
        if kind == "none":
            return None
        if kind == "int" or nd == 0:
            return dim_int(draw, nd)
        picked = draw(st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd, unique=True))
        return tuple(d - nd if draw(st.booleans()) else d for d in picked)

    HSET = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

    DIM_OPS = {  # op(lib, t, dim, keepdim)
        "sum": lambda l, t, d, k: l.sum(t, d, k) if d is not None else l.sum(t),
        "nansum": lambda l, t, d, k: l.nansum(t, d, k),
        "mean": lambda l, t, d, k: l.mean(t, d, k),
        "nanmean": lambda l, t, d, k: l.nanmean(t, d, k),
        "amax": lambda l, t, d, k: l.amax(t, () if d is None else d, k),
        "amin": lambda l, t, d, k: l.amin(t, () if d is None else d, k),
        "logsumexp": lambda l, t, d, k: l.logsumexp(t, tuple(range(t.dim())) if d is None else d, k),
        "var": lambda l, t, d, k: l.var(t, d, keepdim=k),
        "std_c0": lambda l, t, d, k: l.std(t, d, keepdim=k, correction=0),
        "var_c2": lambda l, t, d, k: l.var(t, d, keepdim=k, correction=2),
        "std_mean": lambda l, t, d, k: l.std_mean(t, d, keepdim=k),
        "all": lambda l, t, d, k: l.all(t, d, k) if d is not None else l.all(t),
        "any": lambda l, t, d, k: l.any(t, d, k) if d is not None else l.any(t),
        "count_nonzero": lambda l, t, d, k: l.count_nonzero(t, d),
        "norm2": lambda l, t, d, k: l.norm(t, 2, d, k),
        "norm1": lambda l, t, d, k: l.norm(t, 1, d, k),
        "norm_inf": lambda l, t, d, k: l.norm(t, INF, d, k),
        "norm_-inf": lambda l, t, d, k: l.norm(t, -INF, d, k),
        "norm0": lambda l, t, d, k: l.norm(t, 0, d, k),
        "norm3": lambda l, t, d, k: l.norm(t, 3, d, k),
        "norm0.5": lambda l, t, d, k: l.norm(t, 0.5, d, k),
        "fro": lambda l, t, d, k: l.norm(t, "fro", d, k),
    }

    @pytest.mark.torch
    @HSET
    @given(data=st.data(), op=st.sampled_from(sorted(DIM_OPS)))
    def test_dim_reductions_like_torch(data, op):
        x = data.draw(arrays())
        d = dims(data.draw, x.ndim)
        k = data.draw(st.booleans())
        check_like_torch(lambda l, t: DIM_OPS[op](l, t, d, k), x)

    INT_DIM_OPS = {  # op(lib, t, dim, keepdim); compare: which outputs must agree exactly
        "max": (lambda l, t, d, k: l.max(t, d, k), None),
        "min": (lambda l, t, d, k: l.min(t, d, k), None),
        "argmax": (lambda l, t, d, k: l.argmax(t, d, k), None),
        "argmin": (lambda l, t, d, k: l.argmin(t, d, k), None),
        "median": (lambda l, t, d, k: l.median(t, d, k), None),
        "nanmedian": (lambda l, t, d, k: l.nanmedian(t, d, k), None),
        "prod": (lambda l, t, d, k: l.prod(t, d, k), None),
        "cumsum": (lambda l, t, d, k: l.cumsum(t, d), None),
        "cumprod": (lambda l, t, d, k: l.cumprod(t, d), None),
        "cummax": (lambda l, t, d, k: l.cummax(t, d), None),
        "cummin": (lambda l, t, d, k: l.cummin(t, d), None),
        "logcumsumexp": (lambda l, t, d, k: l.logcumsumexp(t, d), None),
        "sort": (lambda l, t, d, k: l.sort(t, d, k), None),          # rows <= 16: PyTorch's sort is stable
        "sort_stable": (lambda l, t, d, k: l.sort(t, dim=d, descending=k, stable=True), None),
        "argsort": (lambda l, t, d, k: l.argsort(t, d, k), None),
        "msort": (lambda l, t, d, k: l.msort(t), None),
        "mode": (lambda l, t, d, k: l.mode(t, d, k), None),           # rows <= 16: same tie rule
        "kthvalue": (lambda l, t, d, k: l.kthvalue(t, 2, d, k), [0]),  # tied indices are implementation-defined
        "topk": (lambda l, t, d, k: l.topk(t, 2, d, k), [0]),
        "quantile": (lambda l, t, d, k: l.quantile(t, 0.3, d, k), None),
        "nanquantile_nearest": (lambda l, t, d, k: l.nanquantile(t, 0.6, d, k, interpolation="nearest"), None),
    }

    @pytest.mark.torch
    @HSET
    @given(data=st.data(), op=st.sampled_from(sorted(INT_DIM_OPS)))
    def test_int_dim_ops_like_torch(data, op):
        x = data.draw(arrays())
        d = dim_int(data.draw, x.ndim)
        k = data.draw(st.booleans())
        f, compare = INT_DIM_OPS[op]
        grad = compare is None or not _has_ties_along(x, d if x.ndim else None)
        check_like_torch(lambda l, t: f(l, t, d, k), x, compare=compare, grad=grad)

    WHOLE_OPS = {
        "max": lambda l, t: l.max(t),
        "min": lambda l, t: l.min(t),
        "median": lambda l, t: l.median(t),
        "nanmedian": lambda l, t: l.nanmedian(t),
        "prod": lambda l, t: l.prod(t),
        "aminmax": lambda l, t: l.aminmax(t),
        "argmax": lambda l, t: l.argmax(t),
        "quantile_q": lambda l, t: l.quantile(t, l.tensor([0.0, 0.25, 0.5, 1.0], dtype=t.dtype)),
        "unique": lambda l, t: l.unique(t, return_inverse=True, return_counts=True),
        "unique_consecutive": lambda l, t: l.unique_consecutive(t, return_inverse=True, return_counts=True),
        "histc": lambda l, t: l.histc(t, 5),
        "var_all": lambda l, t: l.var(t),
    }

    @pytest.mark.torch
    @HSET
    @given(data=st.data(), op=st.sampled_from(sorted(WHOLE_OPS)))
    def test_whole_tensor_ops_like_torch(data, op):
        # unique/histc have no derivative in PyTorch either
        check_like_torch(WHOLE_OPS[op], data.draw(arrays()), grad=op not in ("unique", "unique_consecutive", "histc"))

    @pytest.mark.torch
    @HSET
    @given(data=st.data(), op=st.sampled_from(["max", "min", "median", "nanmedian", "sort", "cummax", "amax",
                                               "quantile", "nanquantile", "nansum", "nanmean", "argmin"]))
    def test_nan_handling_like_torch(data, op):
        x = data.draw(arrays(dtypes=[np.float64], min_side=1))
        rng = np.random.default_rng(data.draw(st.integers(0, 1000)))
        x = np.array(x)
        x[rng.random(x.shape) < 0.3] = np.nan
        d = dim_int(data.draw, x.ndim)
        f = {"max": lambda l, t: l.max(t, d), "min": lambda l, t: l.min(t, d),
             "median": lambda l, t: l.median(t, d), "nanmedian": lambda l, t: l.nanmedian(t, d),
             "sort": lambda l, t: l.sort(t, dim=d, stable=True), "cummax": lambda l, t: l.cummax(t, d),
             "amax": lambda l, t: l.amax(t, d), "quantile": lambda l, t: l.quantile(t, 0.4, d),
             "nanquantile": lambda l, t: l.nanquantile(t, 0.4, d), "nansum": lambda l, t: l.nansum(t, d),
             "nanmean": lambda l, t: l.nanmean(t, d), "argmin": lambda l, t: l.argmin(t, d)}[op]
        check_like_torch(f, x, grad=op in ("nansum", "nanmean", "max", "median", "sort", "cummax"))

    @pytest.mark.torch
    @HSET
    @given(data=st.data())
    def test_searchsorted_like_torch(data):
        seq = data.draw(arrays(dtypes=[np.float64, np.int64], max_dims=2, min_side=1))
        seq = np.sort(seq.reshape(1) if seq.ndim == 0 else seq, axis=-1)
        rng = np.random.default_rng(data.draw(st.integers(0, 1000)))
        if seq.ndim == 1:
            vals = rng.integers(-3, 4, tuple(data.draw(st.lists(st.integers(0, 3), max_size=2)))).astype(seq.dtype)
        else:
            vals = rng.integers(-3, 4, seq.shape[:-1] + (data.draw(st.integers(0, 4)),)).astype(seq.dtype)
        right = data.draw(st.booleans())
        import torch

        got = fabric.searchsorted(fabric.from_numpy(seq), fabric.from_numpy(vals), right=right)
        want = torch.searchsorted(torch.from_numpy(seq), torch.from_numpy(vals), right=right)
        np.testing.assert_array_equal(npy(got), want.numpy())
        if seq.ndim == 1:
            got = fabric.bucketize(fabric.from_numpy(vals), fabric.from_numpy(seq), right=right)
            want = torch.bucketize(torch.from_numpy(vals), torch.from_numpy(seq), right=right)
            np.testing.assert_array_equal(npy(got), want.numpy())
else:  # pragma: no cover
    @pytest.mark.skip(reason="hypothesis is not installed")
    def test_hypothesis_unavailable():
        pass


# --- tie-breaking (gradients follow PyTorch exactly) ------------------------------------

def _grad_of(f, x):
    t = T(x, fabric.float64, requires_grad=True)
    out = f(t)
    out = out[0] if isinstance(out, tuple) else out
    out.sum().backward()
    return npy(t.grad)


def test_max_dim_sends_gradient_to_returned_index():
    r = fabric.tensor([[1., 3., 3., 0.]]).max(1)
    assert r.indices.tolist() == [1]
    np.testing.assert_array_equal(_grad_of(lambda t: t.max(1), [[1., 3., 3., 0.]]), [[0, 1, 0, 0]])
    np.testing.assert_array_equal(_grad_of(lambda t: t.min(1), [[0., 3., 0., 0.]]), [[1, 0, 0, 0]])


def test_full_max_amax_and_median_spread_evenly():
    np.testing.assert_allclose(_grad_of(lambda t: t.max(), [1., 3., 3., 0.]), [0, .5, .5, 0])
    np.testing.assert_allclose(_grad_of(lambda t: t.amax(0), [1., 3., 3., 0.]), [0, .5, .5, 0])
    np.testing.assert_allclose(_grad_of(lambda t: t.amin(1), [[0., 3., 0., 0.]]), [[1 / 3, 0, 1 / 3, 1 / 3]])
    np.testing.assert_allclose(_grad_of(lambda t: t.median(), [1., 3., 3., 3.]), [0, 1 / 3, 1 / 3, 1 / 3])
    np.testing.assert_allclose(_grad_of(lambda t: t.aminmax(dim=1).max, [[1., 3., 3., 3.]]),
                               [[0, 1 / 3, 1 / 3, 1 / 3]])
    np.testing.assert_allclose(_grad_of(lambda t: t.norm(INF), [-3., 3., 1.]), [-.5, .5, 0])


def test_median_dim_index_is_the_stable_sort_position():
    x = fabric.tensor([[1., 3., 3., 0., 3.], [2., 2., 1., 1., 0.], [5., 5., 5., 5., 5.]])
    r = x.median(1)
    assert r.values.tolist() == [3., 1., 5.]
    assert r.indices.tolist() == [1, 3, 2]
    np.testing.assert_array_equal(_grad_of(lambda t: t.median(1), [[5., 5., 5., 5.]]), [[0, 1, 0, 0]])


def test_median_nan_returns_first_nan():
    r = fabric.tensor([2., float("nan"), 1., float("nan")]).median(0)
    assert math.isnan(r.values.item()) and r.indices.item() == 1
    r = fabric.tensor([2., float("nan"), 1., float("nan")]).nanmedian(0)
    assert r.values.item() == 1. and r.indices.item() == 2
    r = fabric.tensor([float("nan"), float("nan")]).nanmedian(0)
    assert math.isnan(r.values.item()) and r.indices.item() == 0


# The index PyTorch's CPU nanmedian gives an all-NaN row of length 1..59 (libstdc++'s nth_element).
_ALL_NAN_INDEX = [0, 0, 0, 2, 2, 3, 5, 6, 7, 8, 8, 9, 8, 9, 9, 10, 10, 11, 11, 12, 13, 14, 14, 15, 17, 18, 18, 19, 20,
                  21, 21, 22, 23, 24, 24, 25, 26, 27, 27, 28, 28, 29, 29, 30, 31, 32, 32, 33, 32, 33, 33, 34, 35, 36, 36,
                  37, 37, 38, 38]


def test_nanmedian_all_nan_row_index():
    for n, want in enumerate(_ALL_NAN_INDEX, 1):
        r = fabric.full((2, n), float("nan")).nanmedian(1)
        assert r.indices.tolist() == [want, want], n
    x = fabric.tensor([[float("nan")] * 5, [1., float("nan"), 3., 2., 0.]])
    assert x.nanmedian(1).indices.tolist() == [2, 0]


@pytest.mark.torch
def test_nanmedian_all_nan_rows_match_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).random((6, 1000))
    x[[0, 3]] = np.nan
    x[4, :990] = np.nan
    for dim, a in ((1, x), (0, x.T.copy())):
        r, t = fabric.tensor(a).nanmedian(dim), torch.tensor(a).nanmedian(dim)
        np.testing.assert_array_equal(r.indices.numpy(), t.indices.numpy())
        np.testing.assert_array_equal(r.values.numpy(), t.values.numpy())


def test_mode_smallest_most_frequent_last_occurrence():
    r = fabric.tensor([[3, 1, 3, 1, 2, 2], [1, 3, 3, 0, 3, 9]]).mode(1)
    assert r.values.tolist() == [1, 3]
    assert r.indices.tolist() == [3, 4]


def test_cummax_cummin_take_latest_index_on_ties_and_accumulate_gradient():
    r = fabric.tensor([1., 3., 3., 2., 3.]).cummax(0)
    assert r.values.tolist() == [1., 3., 3., 3., 3.]
    assert r.indices.tolist() == [0, 1, 2, 2, 4]
    np.testing.assert_array_equal(_grad_of(lambda t: t.cummax(0), [1., 3., 3., 2., 3.]), [1, 1, 2, 0, 1])
    r = fabric.tensor([1., float("nan"), 2., float("nan")]).cummin(0)
    assert r.indices.tolist() == [0, 1, 1, 3]


def test_sort_is_stable_and_descending_puts_nan_first():
    x = fabric.tensor([2., float("nan"), 1., 2., float("nan"), 1.])
    assert x.sort().indices.tolist() == [2, 5, 0, 3, 1, 4]
    assert x.sort(descending=True).indices.tolist() == [1, 4, 0, 3, 2, 5]
    assert x.argsort(descending=True).tolist() == [1, 4, 0, 3, 2, 5]


def test_argmax_ties_first_index_and_nan_wins():
    assert fabric.tensor([1., 3., 3.]).argmax().item() == 1
    assert fabric.tensor([1., float("nan"), 3., float("nan")]).argmax().item() == 1
    assert fabric.tensor([1., float("nan"), 0.]).argmin().item() == 1
    assert fabric.tensor([[1, 1], [0, 2]]).argmax(1, keepdim=True).tolist() == [[0], [1]]


def test_topk_and_kthvalue_ties_are_stable():
    x = fabric.tensor([3., 1., 3., 1., 2., 2.])
    assert x.topk(3).indices.tolist() == [0, 2, 4]
    assert x.topk(3, largest=False).indices.tolist() == [1, 3, 4]
    assert x.kthvalue(3).indices.item() == 4
    big = np.random.default_rng(0).integers(0, 5, (3, 200)).astype(np.float64)  # partition path
    for largest in (True, False):
        r = fabric.from_numpy(big).topk(7, largest=largest)
        order = np.argsort(-big if largest else big, axis=1, kind="stable")[:, :7]
        np.testing.assert_array_equal(npy(r.indices), order)
        np.testing.assert_array_equal(npy(r.values), np.take_along_axis(big, order, 1))


# --- namedtuples, out=, dtypes ------------------------------------------------------------

def test_return_types_are_namedtuples():
    x = fabric.tensor([[1., 5.], [7., 2.]])
    r = x.max(1)
    assert isinstance(r, fabric.return_types.max) and isinstance(r, tuple)
    assert r._fields == ("values", "indices")
    v, i = r
    assert v.tolist() == [5., 7.] and i.tolist() == [1, 0]
    assert repr(r).startswith("fabric.return_types.max(\nvalues=tensor(")
    for name in ("min", "sort", "topk", "kthvalue", "median", "nanmedian", "mode", "cummax", "cummin"):
        assert getattr(fabric.return_types, name)._fields == ("values", "indices")
    assert fabric.return_types.aminmax._fields == ("min", "max")
    assert type(x.aminmax()).__name__ == "aminmax"
    assert type(fabric.histogram(x, 2)).__name__ == "histogram"
    assert isinstance(fabric.var_mean(x, 1), tuple)


def test_out_arguments():
    x = fabric.tensor([[1., 5.], [7., 2.]])
    v, i = fabric.empty(0), fabric.empty(0, dtype=fabric.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = fabric.max(x, 1, out=(v, i))
    assert r.values is v and v.tolist() == [5., 7.] and i.tolist() == [1, 0]
    o = fabric.empty(2)
    assert fabric.amax(x, 0, out=o) is o and o.tolist() == [7., 5.]
    o = fabric.empty(2, 2)
    fabric.cumsum(x, 1, out=o)
    assert o.tolist() == [[1., 6.], [7., 9.]]
    s, si = fabric.empty(2, 2), fabric.empty(2, 2, dtype=fabric.int64)
    fabric.sort(x, 1, out=(s, si))
    assert s.tolist() == [[1., 5.], [2., 7.]] and si.tolist() == [[0, 1], [1, 0]]


def test_result_dtypes():
    i32 = fabric.tensor([1, 2, 3], dtype=fabric.int32)
    b = fabric.tensor([True, False, True])
    assert i32.sum().dtype == fabric.int64 and i32.prod().dtype == fabric.int64
    assert i32.cumsum(0).dtype == fabric.int64 and b.cumprod(0).dtype == fabric.int64
    assert i32.nansum().dtype == fabric.int64 and i32.amax().dtype == fabric.int32
    assert i32.argmax().dtype == fabric.int64 and b.sum().dtype == fabric.int64
    assert fabric.logsumexp(i32, 0).dtype == fabric.float32
    assert fabric.tensor([1, 2], dtype=fabric.uint8).all().dtype == fabric.uint8
    assert i32.all().dtype == fabric.bool and i32.count_nonzero().dtype == fabric.int64
    assert i32.prod(0, dtype=fabric.float64).dtype == fabric.float64
    assert i32.cumsum(0, dtype=fabric.int32).dtype == fabric.int32
    assert fabric.bincount(fabric.tensor([1, 2])).dtype == fabric.int64
    assert fabric.bincount(fabric.tensor([1, 2]), fabric.tensor([1., 2.])).dtype == fabric.float32
    assert fabric.bincount(fabric.tensor([1, 2]), fabric.tensor([1, 2])).dtype == fabric.float64
    assert fabric.searchsorted(fabric.tensor([1, 2]), fabric.tensor([1]), out_int32=True).dtype == fabric.int32


def test_dim_conventions():
    x = fabric.arange(6.).reshape(2, 3)
    assert x.sum(dim=()).item() == 15. and x.amax(dim=[]).item() == 5.
    assert x.count_nonzero(()).item() == 5
    assert x.all(dim=()).tolist() == [[False, True, True], [True, True, True]]  # PyTorch: no reduction
    assert x.any((0, 1), keepdim=True).shape == (1, 1)
    s = fabric.tensor(3.)
    assert s.sum(0).item() == 3. and s.amax(-1).item() == 3.
    assert s.max(0).indices.item() == 0 and s.sort().values.item() == 3.
    assert s.cumsum(0).item() == 3. and s.median(0).values.item() == 3.
    assert x.argmax(keepdim=True).shape == (1, 1)
    assert x.aminmax(keepdim=True).min.shape == (1, 1)


# --- errors (PyTorch's types and messages) -----------------------------------------------

ERRORS = [
    (lambda l: l.empty(0, 3).max(), RuntimeError, "Expected reduction dim to be specified"),
    (lambda l: l.empty(0, 3).max(0), IndexError, "Expected reduction dim 0 to have non-zero size"),
    (lambda l: l.empty(0, 3).amax(0), IndexError, "amax(): Expected reduction dim 0"),
    (lambda l: l.empty(0, 3).amax(), RuntimeError, "Expected reduction dim to be specified"),
    (lambda l: l.empty(0, 3).argmax(), IndexError, "argmax(): Expected reduction dim to be specified"),
    (lambda l: l.empty(0, 3).aminmax(), RuntimeError, "cannot compute aminmax over an empty dimension"),
    (lambda l: l.empty(0, 3).median(0), IndexError, "median(): Expected reduction dim 0"),
    (lambda l: l.empty(0, 3).mode(0), IndexError, "mode(): Expected reduction dim 0"),
    (lambda l: l.ones(2, 3).sum(2), IndexError, "Dimension out of range (expected to be in range of [-2, 1]"),
    (lambda l: l.ones(2, 3).amax((0, 0)), RuntimeError, "appears multiple times"),
    (lambda l: l.ones(2, 3).cumsum(-3), IndexError, "Dimension out of range"),
    (lambda l: l.ones(2, 3).prod((0, 1)), TypeError, ""),
    (lambda l: l.ones(2, 3).logsumexp(None), TypeError, ""),
    (lambda l: l.tensor([True]).argmax(), RuntimeError, "argmax(): does not support bool input"),
    (lambda l: l.tensor([1, 2]).var(), RuntimeError, "std and var only support floating point"),
    (lambda l: l.tensor([1, 2]).mean(), RuntimeError, "mean(): could not infer output dtype"),
    (lambda l: l.tensor([1, 2]).nanmean(), RuntimeError, "nanmean(): expected input to have floating point"),
    (lambda l: l.tensor([1, 2]).norm(), RuntimeError, "linalg.vector_norm: Expected a floating point"),
    (lambda l: l.empty(0, 3).norm(INF), RuntimeError, "cannot compute the inf norm on an empty tensor"),
    (lambda l: l.tensor([1, 2]).logcumsumexp(0), NotImplementedError, "not implemented for 'Long'"),
    (lambda l: l.ones(2, 3).kthvalue(4, 1), RuntimeError, "kthvalue(): selected number k out of range"),
    (lambda l: l.ones(2, 3).topk(4, 1), RuntimeError, "selected index k out of range"),
    (lambda l: l.ones(3).quantile(1.3), RuntimeError, "quantile() q must be in the range [0, 1] but got 1.3"),
    (lambda l: l.ones(3).quantile(l.tensor([1.3])), RuntimeError, "q values must be in the range [0, 1]"),
    (lambda l: l.ones(3).quantile(l.ones(1, 1)), RuntimeError, "quantile() q must be a scalar or 1D tensor"),
    (lambda l: l.ones(3).quantile(l.ones(1, dtype=l.float64)), RuntimeError, "same dtype as the input"),
    (lambda l: l.ones(3).quantile(0.5, interpolation="foo"), RuntimeError, "interpolation must be one of"),
    (lambda l: l.ones(0).quantile(0.5), RuntimeError, "quantile() input tensor must be non-empty"),
    (lambda l: l.tensor([1, 2]).quantile(0.5), RuntimeError, "must be either float or double dtype"),
    (lambda l: l.searchsorted(l.ones(2, 3), l.ones(3, 1)), RuntimeError, "boundaries tensor should be 1 dimension"),
    (lambda l: l.searchsorted(l.ones(3), l.ones(2), right=True, side="left"), RuntimeError,
     "side and right can't be set to opposites"),
    (lambda l: l.bucketize(l.ones(2), l.ones(2, 3)), RuntimeError, "boundaries tensor must be 1 dimension"),
    (lambda l: l.bincount(l.tensor([-1, 2])), RuntimeError, "bincount only supports 1-d non-negative integral"),
    (lambda l: l.bincount(l.tensor([[1, 2]])), RuntimeError, "bincount only supports 1-d non-negative integral"),
    (lambda l: l.bincount(l.tensor([1., 2.])), NotImplementedError, "not implemented for 'Float'"),
    (lambda l: l.bincount(l.tensor([1, 2]), l.tensor([1.])), RuntimeError, "weights should be 1-d and have"),
    (lambda l: l.bincount(l.tensor([1, 2]), minlength=-1), RuntimeError, "minlength should be >= 0"),
    (lambda l: l.tensor([1, 2]).histc(3), NotImplementedError, "not implemented for 'Long'"),
    (lambda l: l.tensor([1., 2.]).histc(3, 2, 1), RuntimeError, "torch.histc: max must be larger than min"),
    (lambda l: l.tensor([1., 2.]).histc(0), RuntimeError, "bins must be > 0"),
    (lambda l: l.tensor([1., INF]).histc(3), RuntimeError, "is not finite"),
    (lambda l: l.tensor(3.).unique(dim=0), IndexError, "Dimension specified as 0 but tensor has no dimensions"),
    (lambda l: l.ones(2, 3).median(keepdim=True), TypeError, ""),
    (lambda l: l.ones(2, 3).max(keepdim=True), TypeError, ""),
    (lambda l: l.tensor([True]).topk(1), RuntimeError, "topk does not support bool dtypes on CPU"),
    (lambda l: l.tensor([True]).kthvalue(1), NotImplementedError, "not implemented for 'Bool'"),
    (lambda l: l.tensor([True]).median(), NotImplementedError, "not implemented for 'Bool'"),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors(case):
    f, exc, msg = ERRORS[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(exc) as info:
            f(fabric)
    assert msg in str(info.value)


@pytest.mark.torch
@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors_match_torch(case):
    import torch

    f, exc, msg = ERRORS[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(exc) as info:
            f(torch)
    assert msg.replace("torch.", "") in str(info.value).replace("torch.", "")


def test_var_warns_on_too_few_degrees_of_freedom():
    with pytest.warns(UserWarning, match=r"var\(\): degrees of freedom is <= 0"):
        r = fabric.tensor([1.]).var()
    assert math.isnan(r.item())
    with pytest.warns(UserWarning, match=r"std\(\): degrees of freedom"):
        assert fabric.tensor([1., 2.]).std(correction=2).item() == INF
    with pytest.raises(RuntimeError, match="can't use both"):
        fabric.ones(3).var(0, True, correction=1)


def test_var_signatures():
    x = fabric.tensor([[1., 2., 4.], [0., 0., 3.]])
    np.testing.assert_allclose(npy(x.var(False)), np.var(npy(x)))
    np.testing.assert_allclose(npy(x.var(1, True, True)), np.var(npy(x), 1, ddof=1, keepdims=True))
    np.testing.assert_allclose(npy(x.std(1, correction=0.5)), np.sqrt(np.var(npy(x), 1) * 3 / 2.5), rtol=1e-6)
    v, m = fabric.var_mean(x, 1, keepdim=True)
    assert v.shape == (2, 1) and m.shape == (2, 1)


# --- products and scans with zeros (exact gradients, double backward) ----------------------

@pytest.mark.parametrize("x", [[[2., 0., 3., 4.]], [[0., 2., 0., 3.]], [[0., 0., 0., 5.]], [[1.5, 2., -1., 3.]]])
def test_prod_and_cumprod_gradients_with_zeros(x):
    a = T(x, fabric.float64, requires_grad=True)
    assert gradcheck(lambda t: t.prod(1), (a,))
    assert gradcheck(lambda t: t.prod(), (a,))
    assert gradcheck(lambda t: t.cumprod(1), (a,))
    assert gradgradcheck(lambda t: t.prod(1), (a,))
    assert gradgradcheck(lambda t: t.prod(), (a,))
    assert gradgradcheck(lambda t: t.cumprod(1), (a,))


@pytest.mark.torch
def test_prod_cumprod_zero_gradients_match_torch():
    import torch

    x = np.array([[2., 0., 3., 4., 0.5], [0., 2., 0., 3., 1.], [1., 2., 3., 0., 2.]])
    for f in (lambda t: t.prod(1), lambda t: t.prod(), lambda t: t.cumprod(1), lambda t: t.cumprod(0)):
        a = fabric.from_numpy(x.copy()).requires_grad_()
        b = torch.from_numpy(x.copy()).requires_grad_()
        g = np.random.default_rng(0).standard_normal(tuple(f(b).shape))
        ga, = fabric.autograd.grad(f(a), a, fabric.from_numpy(g.copy()), create_graph=True)
        gb, = torch.autograd.grad(f(b), b, torch.from_numpy(g.copy()), create_graph=True)
        np.testing.assert_allclose(npy(ga), gb.detach().numpy(), atol=1e-12)
        # second order, through the zero-safe formulas
        gga, = fabric.autograd.grad((ga * ga).sum(), a)
        ggb, = torch.autograd.grad((gb * gb).sum(), b)
        np.testing.assert_allclose(npy(gga), ggb.numpy(), atol=1e-10)


# --- numerical stability ------------------------------------------------------------------

def test_logsumexp_and_logcumsumexp_do_not_overflow():
    x = fabric.tensor([1e4, 1e4, -1e4], dtype=fabric.float32, requires_grad=True)
    y = fabric.logsumexp(x, 0)
    assert abs(y.item() - (1e4 + math.log(2))) < 1e-2
    y.backward()
    np.testing.assert_allclose(npy(x.grad), [0.5, 0.5, 0.], atol=1e-3)  # float32 ulp of 1e4
    z = fabric.tensor([1e4, -1e4, 1e4], dtype=fabric.float64, requires_grad=True)
    c = z.logcumsumexp(0)
    np.testing.assert_allclose(npy(c), [1e4, 1e4, 1e4 + math.log(2)])
    c.sum().backward()
    assert np.isfinite(npy(z.grad)).all()
    assert fabric.logsumexp(fabric.tensor([-INF, -INF]), 0).item() == -INF
    assert fabric.logsumexp(fabric.tensor([INF, 1.]), 0).item() == INF
    assert fabric.logsumexp(fabric.empty(0, 2), 0).tolist() == [-INF, -INF]


def test_double_backward_of_selected_ops():
    rng = np.random.default_rng(3)
    a = fabric.from_numpy(rng.standard_normal((3, 4))).requires_grad_()
    for f in (lambda t: t.max(1).values, lambda t: t.amax(0), lambda t: t.std(1), lambda t: t.logsumexp(1),
              lambda t: t.norm(3, 1), lambda t: t.logcumsumexp(1), lambda t: t.cummax(0).values,
              lambda t: t.sort(1).values, lambda t: t.quantile(0.3, 1), lambda t: t.median(0).values):
        assert gradgradcheck(f, (a,))


# --- misc behaviour ------------------------------------------------------------------------

def test_max_min_binary_form():
    pytest.importorskip("fabric.ops.pointwise")
    a, b = fabric.tensor([1., 5.]), fabric.tensor([3., 2.])
    assert fabric.max(a, b).tolist() == [3., 5.] and a.min(b).tolist() == [1., 2.]
    assert fabric.max(a, other=b).tolist() == [3., 5.]


def test_searchsorted_sorter_and_scalars():
    seq = fabric.tensor([5., 1., 3.])
    sorter = seq.argsort()
    assert fabric.searchsorted(seq, fabric.tensor([2., 3.]), sorter=sorter).tolist() == [1, 1]
    assert fabric.searchsorted(seq, fabric.tensor([2., 3.]), sorter=sorter, side="right").tolist() == [1, 2]
    r = fabric.searchsorted(fabric.tensor([1, 2, 3]), 2)
    assert r.shape == () and r.item() == 1
    assert fabric.bucketize(3, fabric.tensor([1, 2, 3])).item() == 2
    nd = fabric.searchsorted(fabric.tensor([[1, 3, 5], [2, 4, 6]]), fabric.tensor([[3, 6], [1, 4]]))
    assert nd.tolist() == [[1, 3], [0, 1]]


def test_histogram_weights_and_bincount_weights():
    h = fabric.histogram(fabric.tensor([1., 1., 2., 3.]), 3, weight=fabric.tensor([1., 2., 3., 4.]))
    assert h.hist.tolist() == [3., 3., 4.]
    np.testing.assert_allclose(npy(h.bin_edges), [1., 5 / 3, 7 / 3, 3.], rtol=1e-6)
    assert fabric.bincount(fabric.tensor([0, 2, 2]), fabric.tensor([.5, 1., 2.]), minlength=4).tolist() == \
        [.5, 0., 3., 0.]


def test_unique_variants():
    x = fabric.tensor([[1, 3], [1, 3], [0, 2]])
    u, inv, cnt = x.unique(dim=0, return_inverse=True, return_counts=True)
    assert u.tolist() == [[0, 2], [1, 3]] and inv.tolist() == [1, 1, 0] and cnt.tolist() == [1, 2]
    u, inv = fabric.unique(fabric.tensor([3, 1, 2, 1]), sorted=False, return_inverse=True)
    assert u.tolist() == [1, 2, 3] and inv.tolist() == [2, 0, 1, 0]
    v, inv, cnt = fabric.unique_consecutive(fabric.tensor([1, 1, 2, 2, 1]), return_inverse=True,
                                            return_counts=True)
    assert v.tolist() == [1, 2, 1] and inv.tolist() == [0, 0, 1, 1, 2] and cnt.tolist() == [2, 2, 1]
    assert fabric.tensor([float("nan"), float("nan"), 1.]).unique().shape == (3,)  # NaNs are distinct


def test_norm_matrix_orders_go_to_linalg():
    x = fabric.tensor([[3., 0.], [0., 4.]])
    assert abs(fabric.norm(x, "fro").item() - 5.) < 1e-6
    np.testing.assert_allclose(npy(fabric.norm(x, dim=1)), [3., 4.])
    try:
        from fabric.linalg import matrix_norm  # noqa: F401
    except ImportError:
        with pytest.raises(NotImplementedError):
            fabric.norm(x, "nuc")
        return
    assert abs(fabric.norm(x, "nuc").item() - 7.) < 1e-5


@pytest.mark.parametrize("shape,axis", [((7,), 0), ((3, 9), 1), ((5, 4, 6), 0), ((2, 17), -1), ((0, 3), 1)])
def test_log_step_scan_matches_accumulate(shape, axis):
    """The CuPy path of cummax/cummin/mode (no ufunc.accumulate) run on NumPy."""
    from fabric.ops.reduce import _scan

    x = np.random.default_rng(1).integers(0, 20, shape).astype(np.float64)
    if x.size:
        x.reshape(-1)[::5] = np.nan
    for op in (np.maximum, np.minimum):
        np.testing.assert_array_equal(_scan(np, op, x, axis, native=False), op.accumulate(x, axis=axis))
    y = np.random.default_rng(2).standard_normal(shape) * 50  # logcumsumexp's scan
    np.testing.assert_allclose(_scan(np, np.logaddexp, y, axis, native=False), np.logaddexp.accumulate(y, axis=axis),
                               rtol=1e-12)


def test_no_python_loops_scale():
    """Large inputs finish quickly (vectorised paths: partition, gathers)."""
    import time

    x = fabric.from_numpy(np.random.default_rng(0).standard_normal((2000, 500)))
    t0 = time.perf_counter()
    x.topk(5, 1)
    x.median(1)
    x.kthvalue(100, 1)
    x.mode(1)
    x.cummax(1)
    x.quantile(fabric.tensor([0.1, 0.9], dtype=fabric.float64), 1)
    x.sort(1)
    fabric.searchsorted(x.sort(1).values, x[:, :10].contiguous())
    assert time.perf_counter() - t0 < 10.0


@pytest.mark.parametrize("dim", [None, 0])
def test_var_gradient_without_degrees_of_freedom(dim):
    """N - correction <= 0: PyTorch's var_backward gives +inf (nan where x == mean) for a whole-tensor var,
    and inf times the sign of x - mean along a dim."""
    x = fabric.tensor([0.125, -0.25, 0.5 / 3 + 1 / 24], dtype=fabric.float64, requires_grad=True)
    kw = {} if dim is None else {"dim": dim}
    with pytest.warns(UserWarning, match="degrees of freedom"):
        v = fabric.var(x, correction=3, **kw)
    v.backward()
    got = x.grad.tolist()
    if dim is None:
        assert got[0] == got[1] == math.inf
    else:
        assert got[0] == math.inf and got[1] == -math.inf
