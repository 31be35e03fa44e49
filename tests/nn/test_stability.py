"""Numerical stability at extreme inputs (1e4, -1e4, mixed, +-inf): softmax,
log_softmax, logsumexp, cross_entropy, BCE-with-logits, logsigmoid and
softplus stay finite and correct where the naive formulas overflow, in
float32 and float64, forward and backward."""
from __future__ import annotations

import numpy as np
import pytest

import fabric
import fabric.nn.functional as F

EXTREME = np.array([[1e4, 0.0, -1e4], [-1e4, -1e4, -1e4], [1e4, 1e4, -1e4], [5e3, -5e3, 1.0]])
DTYPES = [np.float32, np.float64]


def grad_tol(dtype):
    """Gradients of exp(x - lse) with |x| ~ 1e4: a saved lse of that size is
    itself rounded to the dtype (half an ulp of 1e4 is 5e-4 in float32, the
    precision of such logits to begin with), so the relative error is about
    eps * 1e4; PyTorch's logsumexp backward has the same.  float64 is exact
    to ~1e-12."""
    return {"rtol": 1e-3, "atol": 1e-3} if dtype == np.float32 else {"rtol": 1e-9, "atol": 1e-12}


def ce_tol(dtype):
    """cross_entropy works from the shifted logits x - max (nothing rounded at the
    logits' magnitude): its gradients are accurate to a few float32 ulp at 1e4."""
    return {"rtol": 1e-6, "atol": 2e-7} if dtype == np.float32 else {"rtol": 1e-9, "atol": 1e-12}


def T(a, dtype, grad=False):
    t = fabric.from_numpy(np.array(a, dtype=dtype))
    return t.requires_grad_() if grad else t


def _ref_log_softmax(x):
    x = x.astype(np.float64)
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_and_log_softmax_extremes(dtype):
    x = T(EXTREME, dtype, grad=True)
    with np.errstate(over="raise", invalid="raise"):  # no overflow / nan inside the kernels (underflow is fine)
        p = F.softmax(x, -1)
        lp = F.log_softmax(x, -1)
    ref = _ref_log_softmax(EXTREME)
    np.testing.assert_allclose(lp.detach().numpy(), ref, rtol=1e-6, atol=1e-3 if dtype == np.float32 else 1e-9)
    np.testing.assert_allclose(p.detach().numpy(), np.exp(ref), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(p.detach().numpy().sum(-1), 1.0, rtol=1e-6)
    assert lp.detach().numpy()[0, 2] == pytest.approx(-2e4, rel=1e-6)  # correct at -1e4, not -inf
    g = T(np.arange(12).reshape(4, 3) / 7.0, dtype)
    for y in (p, lp):
        gx, = fabric.autograd.grad(y, x, g, retain_graph=True)
        gg, = fabric.autograd.grad(y, x, g, retain_graph=True, create_graph=True)
        assert np.isfinite(gx.numpy()).all() and np.isfinite(gg.detach().numpy()).all()
        np.testing.assert_allclose(gx.numpy(), gg.detach().numpy(), rtol=1e-6, atol=1e-6)
    # softmin at the other end, and the dtype= upcast path
    np.testing.assert_allclose(F.softmin(T(-EXTREME, dtype), -1).numpy(), np.exp(ref), rtol=1e-6, atol=1e-7)
    assert np.isfinite(F.log_softmax(T(EXTREME, np.float32), -1, dtype=fabric.float64).numpy()).all()


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
def test_softmax_with_infinities():
    x = T([[np.inf, 0.0], [-np.inf, 0.0], [-np.inf, -np.inf]], np.float64)
    p = F.softmax(x, 1).numpy()
    np.testing.assert_array_equal(p[1], [0.0, 1.0])
    assert np.isnan(p[0]).any() and np.isnan(p[2]).all()  # inf - inf, as PyTorch
    np.testing.assert_array_equal(F.log_softmax(x, 1).numpy()[1], [-np.inf, 0.0])


@pytest.mark.parametrize("dtype", DTYPES)
def test_logsumexp_extremes(dtype):
    x = T(EXTREME, dtype, grad=True)
    with np.errstate(over="raise"):
        y = fabric.logsumexp(x, 1)
    m = EXTREME.max(1)
    ref = m + np.log(np.exp(EXTREME - m[:, None]).sum(1))
    np.testing.assert_allclose(y.detach().numpy(), ref, rtol=1e-6)
    y.sum().backward()
    assert np.isfinite(x.grad.numpy()).all()
    np.testing.assert_allclose(x.grad.numpy(), np.exp(_ref_log_softmax(EXTREME)), **grad_tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
def test_cross_entropy_extremes(dtype, label_smoothing):
    t = np.array([0, 1, 2, 2])
    x = T(EXTREME, dtype, grad=True)
    with np.errstate(over="raise"):
        loss = F.cross_entropy(x, T(t, np.int64), label_smoothing=label_smoothing, reduction="none")
    lp = _ref_log_softmax(EXTREME)
    ref = -(1 - label_smoothing) * lp[np.arange(4), t] - label_smoothing / 3 * lp.sum(1)
    np.testing.assert_allclose(loss.detach().numpy(), ref, rtol=1e-6, atol=1e-6 if dtype == np.float32 else 1e-9)
    assert loss.detach().numpy()[1] == pytest.approx(np.log(3) * (1 - label_smoothing) + label_smoothing * np.log(3),
                                                     rel=1e-5)
    loss.sum().backward()
    g = x.grad.numpy()
    assert np.isfinite(g).all()
    np.testing.assert_allclose(g.sum(1), 0.0, atol=ce_tol(dtype)["atol"])  # gradient rows of CE sum to 0
    p = np.exp(_ref_log_softmax(EXTREME))
    onehot = np.eye(3)[t]
    ref_g = (1 - label_smoothing) * (p - onehot) + label_smoothing / 3 * (3 * p - 1)
    np.testing.assert_allclose(g, ref_g, **ce_tol(dtype))
    # class-probability targets and the differentiable backward too
    x2 = T(EXTREME, dtype, grad=True)
    probs = T(np.eye(3)[t], dtype)
    l2 = F.cross_entropy(x2, probs, label_smoothing=label_smoothing, reduction="none")
    np.testing.assert_allclose(l2.detach().numpy(), loss.detach().numpy(), rtol=1e-6, atol=1e-6)
    gg, = fabric.autograd.grad(l2.sum(), x2, create_graph=True)
    np.testing.assert_allclose(gg.detach().numpy(), g, **ce_tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_bce_with_logits_extremes(dtype):
    x = np.array([1e4, -1e4, 1e4, -1e4, 100.0, -100.0, 0.0])
    t = np.array([1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.5])
    xt = T(x, dtype, grad=True)
    with np.errstate(over="raise"):
        loss = F.binary_cross_entropy_with_logits(xt, T(t, dtype), reduction="none",
                                                  pos_weight=T(np.full(7, 2.0), dtype))
    # exact: (1 - t) x + pw t softplus(-x) + ... written with softplus
    sp_neg = np.maximum(-x, 0) + np.log1p(np.exp(-np.abs(x)))   # softplus(-x) = -logsigmoid(x)
    ref = (1 - t) * x + (1 + (2.0 - 1) * t) * sp_neg
    np.testing.assert_allclose(loss.detach().numpy(), ref, rtol=1e-6, atol=1e-40)  # [4] is subnormal in float32
    assert loss.detach().numpy()[0] == 0 and loss.detach().numpy()[1] == 0
    loss.sum().backward()
    gx = xt.grad.numpy()
    assert np.isfinite(gx).all()
    sig = np.where(x >= 0, 1 / (1 + np.exp(-np.abs(x))), np.exp(-np.abs(x)) / (1 + np.exp(-np.abs(x))))
    np.testing.assert_allclose(gx, (1 - t) - (1 + t) * (1 - sig), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("dtype", DTYPES)
def test_logsigmoid_softplus_and_friends_extremes(dtype):
    x = T([-1e4, -100.0, 0.0, 100.0, 1e4], dtype, grad=True)
    with np.errstate(over="raise"):
        ls = F.logsigmoid(x)
        sp = F.softplus(x, beta=1.0, threshold=1e5)   # the linear shortcut off: the stable form must hold
        sm = F.soft_margin_loss(x, T(np.ones(5), dtype), reduction="none")
        mish = F.mish(x)
        silu = F.silu(x)
        gelu = F.gelu(x)
    ref_sp = np.array([0.0, np.log1p(np.exp(-100.0)), np.log(2.0), 100.0, 1e4])
    np.testing.assert_allclose(ls.detach().numpy(), -ref_sp[::-1], rtol=1e-6, atol=1e-40)
    np.testing.assert_allclose(sp.detach().numpy(), ref_sp, rtol=1e-6, atol=1e-38)
    np.testing.assert_allclose(sm.detach().numpy(), ref_sp[::-1], rtol=1e-6, atol=1e-40)
    np.testing.assert_allclose(mish.detach().numpy(), [0, -100 * np.tanh(ref_sp[1]), 0, 100, 1e4], rtol=1e-5,
                               atol=1e-30)
    np.testing.assert_allclose(silu.detach().numpy(), [0, -100 / (1 + np.exp(100)), 0, 100, 1e4], rtol=1e-5,
                               atol=1e-30)
    np.testing.assert_allclose(gelu.detach().numpy(), [0, 0, 0, 100, 1e4], rtol=1e-6)
    for y in (ls, sp, sm, mish, silu, gelu):
        gx, = fabric.autograd.grad(y.sum(), x, retain_graph=True)
        gg, = fabric.autograd.grad(y.sum(), x, create_graph=True)
        assert np.isfinite(gx.numpy()).all() and np.isfinite(gg.detach().numpy()).all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_elu_family_large_inputs(dtype):
    x = T([1e4, -1e4, 80.0], dtype, grad=True)
    with np.errstate(over="raise"):
        for y in (F.elu(x), F.selu(x), F.celu(x, 0.5)):
            gg, = fabric.autograd.grad(y.sum(), x, create_graph=True)
            assert np.isfinite(y.detach().numpy()).all() and np.isfinite(gg.detach().numpy()).all()
            hh, = fabric.autograd.grad(gg.sum(), x)
            assert np.isfinite(hh.numpy()).all()


@pytest.mark.torch
@pytest.mark.parametrize("dtype", DTYPES)
def test_extremes_match_torch(dtype):
    import torch
    import torch.nn.functional as TF

    x = EXTREME.astype(dtype)
    t = np.array([0, 1, 2, 2])
    cases = [
        (lambda m, a: m.softmax(a, -1), False),
        (lambda m, a: m.log_softmax(a, -1), False),
        (lambda m, a: m.logsigmoid(a), False),
        (lambda m, a: m.softplus(a), False),
        (lambda m, a: m.cross_entropy(a, m_t(m, t), label_smoothing=0.1), True),
        (lambda m, a: m.binary_cross_entropy_with_logits(a, m_t(m, (x > 0).astype(dtype))), False),
    ]

    def m_t(m, arr):
        return (fabric if m is F else torch).from_numpy(arr.copy())

    for fn, fused in cases:
        a = fabric.from_numpy(x.copy()).requires_grad_()
        b = torch.from_numpy(x.copy()).requires_grad_()
        y, ty = fn(F, a), fn(TF, b)
        np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-6, atol=1e-6)
        y.sum().backward()
        ty.sum().backward()
        tol = ce_tol(dtype) if fused else {"rtol": 1e-6, "atol": 1e-6}
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), **tol)
    lse = fabric.logsumexp(fabric.from_numpy(x.copy()), 1).numpy()
    np.testing.assert_allclose(lse, torch.logsumexp(torch.from_numpy(x.copy()), 1).numpy(), rtol=1e-6)
