"""Pointwise ops and sums on sparse COO tensors: the unary ops PyTorch runs on
COO (values only, pattern kept), PyTorch's error for the others, sparse * sparse
/ dense, sparse + sparse, pow, div, sparse.sum(dim); gradients by gradcheck in
float64 and against PyTorch (result pattern, coalesced flag, values)."""
from __future__ import annotations

import numpy as np
import pytest

import fabric
from fabric.autograd import gradcheck, gradgradcheck
from fabric.sparse import _pointwise

IDX = [[0, 1, 1, 0], [2, 0, 2, 2]]  # (0, 2) twice: uncoalesced
VAL = [0.3, -0.4, 0.5, 0.1]
# function forms through the dense entry point (the bool-valued ones as methods: test below)
UNARY = sorted(_pointwise.COO_UNARY - {"isnan", "isinf", "isposinf", "isneginf", "signbit", "conj_physical"})


def _s(lib, idx=IDX, val=VAL, shape=(2, 3), dtype=None, coalesce=False):
    dtype = dtype or lib.float64
    s = lib.sparse_coo_tensor(lib.tensor(idx), lib.tensor(val, dtype=dtype), shape)
    return s.coalesce() if coalesce else s


def _fn(lib, name):
    return getattr(lib.nn.functional, name) if name == "relu" else getattr(lib, name)


def _same(ours, theirs, values=True):
    assert ours.is_sparse and theirs.is_sparse
    assert tuple(ours.shape) == tuple(theirs.shape) and ours.is_coalesced() == theirs.is_coalesced()
    np.testing.assert_array_equal(ours._indices().numpy(), theirs._indices().numpy())
    if values:
        np.testing.assert_allclose(ours._values().detach().numpy(), theirs._values().detach().numpy(), rtol=1e-12)


@pytest.mark.parametrize("name", UNARY)
def test_unary_on_values(name):
    s = _s(fabric)
    r = _fn(fabric, name)(s)
    c = s.coalesce()
    want = _fn(fabric, name)(c._values())
    assert r.is_sparse and r.shape == s.shape
    if name in ("neg", "positive"):  # the linear ones keep the duplicate entries
        np.testing.assert_array_equal(r._indices().numpy(), s._indices().numpy())
        np.testing.assert_allclose(r._values().numpy(), _fn(fabric, name)(s._values()).numpy())
    else:
        np.testing.assert_array_equal(r._indices().numpy(), c._indices().numpy())
        np.testing.assert_allclose(r._values().numpy(), want.numpy())


def test_unary_method_int_input_and_bool_ops():
    s = _s(fabric)
    np.testing.assert_allclose(s.sin().values().numpy(), np.sin([0.4, -0.4, 0.5]))
    np.testing.assert_allclose(s.square().values().numpy(), np.square([0.4, -0.4, 0.5]))
    i = fabric.sparse_coo_tensor([[0, 1]], [4, 9], (3,))
    r = fabric.sqrt(i)
    assert r.dtype == fabric.float32 and r.values().tolist() == [2.0, 3.0]
    n = fabric.sparse_coo_tensor([[0, 1]], [float("nan"), 1.0], (3,)).isnan()
    assert n.dtype == fabric.bool and n.values().tolist() == [True, False]


def test_binary_function_forms():
    s, t, d = _s(fabric), _s(fabric, [[0, 1], [1, 1]], [1.0, 3.0]), fabric.ones(2, 3, dtype=fabric.float64)
    ref_s, ref_t = s.to_dense().numpy(), t.to_dense().numpy()
    for got, want in ((fabric.mul(s, 2), 2 * ref_s), (fabric.mul(d, s), ref_s), (fabric.mul(s, t), ref_s * ref_t),
                      (fabric.add(s, t), ref_s + ref_t), (fabric.sub(s, t, alpha=2), ref_s - 2 * ref_t),
                      (fabric.div(s, 4), ref_s / 4), (fabric.pow(s, 3), ref_s ** 3), (fabric.square(s), ref_s ** 2)):
        assert got.is_sparse
        np.testing.assert_allclose(got.to_dense().numpy(), want, rtol=1e-14)
    np.testing.assert_allclose(fabric.add(d, s).numpy(), 1 + ref_s)
    with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported"):
        fabric.add(s, d)


def test_unsupported_unary_raises_pytorchs_error():
    s = _s(fabric)
    for fn, name in ((fabric.cos, "cos"), (fabric.exp, "exp"), (fabric.sigmoid, "sigmoid"),
                     (fabric.nn.functional.gelu, "gelu")):
        with pytest.raises(NotImplementedError, match=f"Could not run 'aten::{name}' with arguments from the "
                                                      "'SparseCPU' backend"):
            fn(s)
    with pytest.raises(NotImplementedError, match="aten::reciprocal"):
        2 / s
    with pytest.raises(RuntimeError, match="cannot raise to zeroth power on sparse tensor"):
        s ** 0


@pytest.mark.parametrize("name", ["sin", "tanh", "sqrt", "abs", "relu", "expm1", "square"])
def test_unary_gradcheck(name):
    f = _fn(fabric, name) if name != "square" else fabric.sparse.SparseTensor.square
    v = fabric.tensor([0.3, 0.4, 0.5, 0.1], dtype=fabric.float64, requires_grad=True)

    def run(vals):
        return f(fabric.sparse_coo_tensor(IDX, vals, (2, 3))).to_dense()

    assert gradcheck(run, (v,)) and gradgradcheck(run, (v,))


def test_binary_and_sum_gradcheck():
    a = fabric.tensor(VAL, dtype=fabric.float64, requires_grad=True)
    b = fabric.tensor([1.5, 2.0, -1.0], dtype=fabric.float64, requires_grad=True)
    d = fabric.randn(2, 3, dtype=fabric.float64, requires_grad=True)

    def run(va, vb, dense):
        s = fabric.sparse_coo_tensor(IDX, va, (2, 3))
        t = fabric.sparse_coo_tensor([[0, 1, 0], [2, 1, 1]], vb, (2, 3))
        return ((s * t).to_dense() + (s * dense).to_dense() + (s + t).to_dense() + (s ** 3).to_dense()
                + fabric.sparse.sum(s * 2.5, 1).to_dense().unsqueeze(1) + (s / 4).to_dense())

    assert gradcheck(run, (a, b, d)) and gradgradcheck(run, (a, b, d))


def test_sum_dims():
    x = np.zeros((3, 2, 4))
    x[0, 1] = 1
    x[2, 0, 1] = 5
    x[2, 1] = 2
    s = fabric.tensor(x).to_sparse(2)
    for dim in (0, 1, 2, (0, 1), (1, 2), (0, 2), (0, 1, 2), -1):
        r = fabric.sparse.sum(s, dim)
        np.testing.assert_allclose(r.to_dense().numpy(), x.sum(dim))
        assert r.is_sparse == (dim not in ((0, 1), (0, 1, 2)))
    assert fabric.sparse.sum(s).item() == x.sum()
    k = s.sum(0, keepdim=True)
    assert k.shape == (1, 2, 4) and k.is_coalesced()
    np.testing.assert_allclose(k.to_dense().numpy(), x.sum(0, keepdims=True))
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times"):
        fabric.sparse.sum(s, (0, 0))
    with pytest.raises(IndexError, match="Dimension out of range"):
        fabric.sparse.sum(s, 3)


@pytest.mark.torch
@pytest.mark.parametrize("name", UNARY)
def test_unary_matches_torch(name):
    import torch
    _same(_fn(fabric, name)(_s(fabric)), _fn(torch, name)(_s(torch)))


@pytest.mark.torch
def test_binary_patterns_match_torch():
    import torch
    a_, b_, u_ = ([[0, 1], [0, 1]], [1., 2.]), ([[0, 1, 1], [0, 1, 2]], [10., 20., 30.]), ([[0, 0, 1], [0, 0, 1]],
                                                                                         [1., 2., 3.])
    for x, y in ((a_, b_), (b_, a_), (u_, b_), (b_, u_), (a_, u_)):
        for cx in (False, True):
            for cy in (False, True):
                ours = _s(fabric, *x, coalesce=cx) * _s(fabric, *y, coalesce=cy)
                theirs = _s(torch, *x, coalesce=cx) * _s(torch, *y, coalesce=cy)
                _same(ours, theirs)
    s, d = (_s(fabric), fabric.tensor([1., 2., 3.], dtype=fabric.float64)), (_s(torch), torch.tensor([1., 2., 3.],
                                                                                                      dtype=torch.float64))
    for f in (lambda s, d: s * d, lambda s, d: d * s, lambda s, d: s * 2, lambda s, d: s / 2, lambda s, d: s // 0.25,
              lambda s, d: s + s * 3, lambda s, d: s - s.coalesce(), lambda s, d: s.sub(s, alpha=2),
              lambda s, d: s ** 2, lambda s, d: s.pow(-1.5), lambda s, d: s.sum(0), lambda s, d: s.sum(1)):
        _same(f(*s), f(*d))
    np.testing.assert_allclose((fabric.ones(2, 3) + _s(fabric)).numpy(), (torch.ones(2, 3) + _s(torch)).numpy())


@pytest.mark.torch
def test_gradients_match_torch():
    """fabric's gradient of a sparse leaf lives on the leaf's entries (autograd flows through its
    values); PyTorch's mul/add backward may add entries outside them: compared on the leaf's entries."""
    import torch

    def run(lib):
        s = _s(lib, coalesce=True).requires_grad_()
        t = _s(lib, [[0, 1, 0], [2, 1, 1]], [1.5, 2.0, -1.0], coalesce=True).requires_grad_()
        d = lib.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
        out = s * t + s * d + lib.sparse.sum(s ** 2, 0).to_dense().sum() * t + (s * 3 + t) * t
        out.to_dense().pow(2).sum().backward()
        return s, t, d

    for ours, theirs in zip(run(fabric), run(torch)):
        g, tg = ours.grad, theirs.grad
        assert g.is_sparse == ours.is_sparse  # PyTorch gives the dense leaf `d` a sparse gradient
        if g.is_sparse:
            mask = ours.detach().to_dense().numpy() != 0
            np.testing.assert_array_equal(g.coalesce().indices().numpy(), np.array(np.nonzero(mask)))
            np.testing.assert_allclose(g.to_dense().numpy(), tg.to_dense().numpy() * mask, rtol=1e-12)
        else:
            np.testing.assert_allclose(g.numpy(), tg.to_dense().numpy(), rtol=1e-12)
