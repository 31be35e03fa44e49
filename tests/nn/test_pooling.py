"""Pooling: max / avg / adaptive / lp pooling and max unpooling against
PyTorch (values, indices, gradients), PyTorch's NaN / -inf / tie rules,
gradcheck and gradgradcheck, errors and messages."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import fabric
import fabric.nn.functional as F
from fabric.autograd import gradcheck, gradgradcheck

SHAPES = {1: (2, 3, 9), 2: (2, 3, 7, 6), 3: (1, 2, 5, 4, 6)}


def _x(shape, seed=0, dtype=np.float64):
    """Distinct values (no ties a perturbation could flip)."""
    n = int(np.prod(shape))
    return (np.random.default_rng(seed).permutation(n).reshape(shape) * 0.1 - n * 0.05).astype(dtype)


def _check(name, shape, args, kwargs=None, dtype=np.float64, unbatched=False, rtol=1e-10, atol=1e-12, grad=True):
    import torch

    kwargs = kwargs or {}
    x = _x(shape, dtype=dtype)
    if unbatched:
        x = x[0]
    fx, tx = fabric.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    fy = getattr(F, name)(fx, *args, **kwargs)
    ty = getattr(torch.nn.functional, name)(tx, *args, **kwargs)
    if isinstance(ty, tuple):
        np.testing.assert_array_equal(fy[1].numpy(), ty[1].numpy())
        assert fy[1].dtype == fabric.int64
        fy, ty = fy[0], ty[0]
    assert tuple(fy.shape) == tuple(ty.shape)
    np.testing.assert_allclose(fy.detach().numpy(), ty.detach().numpy(), rtol=rtol, atol=atol)
    if grad:
        g = np.random.default_rng(1).standard_normal(tuple(ty.shape)).astype(dtype)
        fy.backward(fabric.tensor(g))
        ty.backward(torch.tensor(g))
        np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=rtol, atol=atol)


WINDOWS = [  # kernel, stride, padding, dilation, ceil_mode
    (2, None, 0, 1, False), (3, 2, 1, 1, True), (3, 1, 1, 2, False), (2, 3, 1, 1, True), (3, 2, 0, 1, True),
    (1, 1, 0, 1, False), ((3, 2, 2), (1, 2, 1), (1, 0, 1), (1, 2, 1), False),
]


def _fit(v, nd):
    return tuple(v[:nd]) if isinstance(v, tuple) else v


@pytest.mark.torch
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("win", WINDOWS, ids=str)
def test_max_pool(nd, win):
    k, s, p, d, c = (_fit(v, nd) for v in win)
    _check(f"max_pool{nd}d", SHAPES[nd], (k, s, p, d, c), {"return_indices": True})
    _check(f"max_pool{nd}d", SHAPES[nd], (k, s, p, d, c), unbatched=True)


@pytest.mark.torch
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("win", [w for w in WINDOWS if w[3] == 1 or isinstance(w[3], tuple)], ids=str)
@pytest.mark.parametrize("count_include_pad", [True, False])
def test_avg_pool(nd, win, count_include_pad):
    k, s, p, _, c = (_fit(v, nd) for v in win)
    _check(f"avg_pool{nd}d", SHAPES[nd], (k, s, p, c, count_include_pad))
    if nd > 1:
        _check(f"avg_pool{nd}d", SHAPES[nd], (k, s, p, c, count_include_pad, 3))
    _check(f"avg_pool{nd}d", SHAPES[nd], (k, s, p, c, count_include_pad), unbatched=True)


@pytest.mark.torch
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("out", [1, 2, 3, 4, 7, "none"])
def test_adaptive_pools(nd, out):
    if out == "none":
        if nd == 1:
            return
        out = (None,) + (3,) * (nd - 1)
    _check(f"adaptive_avg_pool{nd}d", SHAPES[nd], (out,), rtol=1e-9, atol=1e-12)
    _check(f"adaptive_max_pool{nd}d", SHAPES[nd], (out, True))
    _check(f"adaptive_max_pool{nd}d", SHAPES[nd], (out,), unbatched=True)


@pytest.mark.torch
def test_large_and_global_windows():
    _check("max_pool2d", (2, 3, 8, 8), (8,), {"return_indices": True})
    _check("max_pool2d", (2, 3, 8, 12), (4,), {"return_indices": True})
    _check("avg_pool2d", (2, 3, 8, 12), (4,))
    _check("max_pool3d", (1, 2, 4, 4, 8), ((4, 4, 2),), {"return_indices": True})
    _check("adaptive_avg_pool2d", (2, 3, 8, 8), (1,))
    _check("adaptive_max_pool2d", (2, 3, 9, 8), (1, True))


@pytest.mark.torch
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_lp_pool(nd):
    import torch

    x = np.abs(_x(SHAPES[nd])) + 0.5
    for p, k, s, c in [(2, 2, None, False), (1.5, 3, 1, False), (3, 2, 2, True), (float("inf"), 2, 1, False)]:
        fx, tx = fabric.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        fy = getattr(F, f"lp_pool{nd}d")(fx, p, k, s, c)
        ty = getattr(torch.nn.functional, f"lp_pool{nd}d")(tx, p, k, s, c)
        np.testing.assert_allclose(fy.detach().numpy(), ty.detach().numpy(), rtol=1e-10)
        fy.sum().backward()
        ty.sum().backward()
        np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.torch
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32])
def test_max_pool_dtypes(dtype):
    import torch

    x = (np.random.default_rng(0).standard_normal((2, 3, 7, 7)) * 10).astype(dtype)
    fy, fi = F.max_pool2d(fabric.tensor(x), 3, 2, 1, return_indices=True)
    ty, ti = torch.nn.functional.max_pool2d(torch.tensor(x), 3, 2, 1, return_indices=True)
    assert fy.dtype == fabric.from_numpy(np.zeros(1, dtype)).dtype
    np.testing.assert_array_equal(fy.numpy(), ty.numpy())
    np.testing.assert_array_equal(fi.numpy(), ti.numpy())


@pytest.mark.torch
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_nan_inf_and_ties(nd):
    """NaN wins (the last NaN of a window), ties keep the first maximum, and a
    window of only -inf reports its first in-bounds element."""
    import torch

    base = np.array([[1, np.nan, 3, np.nan, 0], [-np.inf, -np.inf, 2, 2, 7], [-np.inf, -np.inf, 5, 5, 5],
                     [np.nan, 1, 5, 4, 4]], np.float32)
    x = {1: base.reshape(1, 4, 5), 2: base.reshape(1, 1, 4, 5),
         3: np.stack([base, base[::-1]]).reshape(1, 1, 2, 4, 5)}[nd]
    for k, s, p in [(2, 2, 0), (3, 1, 1), (2, 1, 1), (5, 5, 0)]:
        if nd == 3 and k > 2:
            continue
        fy, fi = getattr(F, f"max_pool{nd}d")(fabric.tensor(x), k, s, p, ceil_mode=True, return_indices=True)
        ty, ti = getattr(torch.nn.functional, f"max_pool{nd}d")(torch.tensor(x), k, s, p, ceil_mode=True,
                                                              return_indices=True)
        np.testing.assert_array_equal(fi.numpy(), ti.numpy())
        np.testing.assert_array_equal(fy.numpy(), ty.numpy())
    x2 = base.reshape(1, 1, 4, 5)
    fy, fi = F.adaptive_max_pool2d(fabric.tensor(x2), (3, 2), return_indices=True)
    ty, ti = torch.nn.functional.adaptive_max_pool2d(torch.tensor(x2), (3, 2), return_indices=True)
    np.testing.assert_array_equal(fi.numpy(), ti.numpy())
    np.testing.assert_array_equal(fy.numpy(), ty.numpy())


@pytest.mark.torch
@pytest.mark.parametrize("nd,shape,k,s,p,out", [
    (1, (2, 3, 8), 2, None, 0, None), (2, (2, 3, 7, 7), 3, 2, 1, None), (2, (3, 6, 6), 2, None, 0, (7, 7)),
    (2, (2, 3, 6, 6), 2, None, 0, (2, 3, 7, 6)), (3, (1, 2, 4, 4, 4), 2, None, 0, None)])
def test_max_unpool(nd, shape, k, s, p, out):
    import torch

    ty, ti = getattr(torch.nn.functional, f"max_pool{nd}d")(torch.tensor(_x(shape)), k, s, p, return_indices=True)
    v = np.random.default_rng(2).standard_normal(tuple(ty.shape))
    tv, fv = torch.tensor(v, requires_grad=True), fabric.tensor(v, requires_grad=True)
    tu = getattr(torch.nn.functional, f"max_unpool{nd}d")(tv, ti, k, s, p, out)
    fu = getattr(F, f"max_unpool{nd}d")(fv, fabric.tensor(ti.numpy()), k, s, p, out)
    np.testing.assert_array_equal(fu.detach().numpy(), tu.detach().numpy())
    g = np.random.default_rng(3).standard_normal(tuple(tu.shape))
    tu.backward(torch.tensor(g))
    fu.backward(fabric.tensor(g))
    np.testing.assert_array_equal(fv.grad.numpy(), tv.grad.numpy())


# --- gradients of every order ------------------------------------------------------------------

@pytest.mark.parametrize("case", [
    ("max_pool2d", (3, 2, 1)), ("max_pool1d", (2, 1, 1, 2, True)), ("max_pool3d", (2,)),
    ("avg_pool2d", (3, 2, 1, True, False)), ("avg_pool1d", (2,)), ("avg_pool3d", (2, 1, 1, False, True, 5)),
    ("adaptive_avg_pool2d", (3,)), ("adaptive_avg_pool1d", (7,)), ("adaptive_max_pool2d", ((2, 3),)),
    ("lp_pool2d", (2, 2)),
], ids=lambda c: f"{c[0]}{c[1]}")
def test_gradcheck_gradgradcheck(case):
    name, args = case
    nd = int(name[-2])
    shape = {1: (1, 2, 7), 2: (1, 2, 5, 4), 3: (1, 1, 4, 3, 4)}[nd]
    x = _x(shape, seed=4)
    if name.startswith("lp"):
        x = np.abs(x) + 0.5
    t = fabric.tensor(x, requires_grad=True)

    def f(t):
        return getattr(F, name)(t, *args)

    assert gradcheck(f, (t,))
    assert gradgradcheck(f, (t,))


def test_max_unpool_gradgradcheck():
    y, i = F.max_pool2d(fabric.tensor(_x((1, 2, 4, 4))), 2, return_indices=True)
    v = fabric.tensor(np.random.default_rng(0).standard_normal(tuple(y.shape)), requires_grad=True)
    assert gradcheck(lambda v: F.max_unpool2d(v, i, 2), (v,))
    assert gradgradcheck(lambda v: F.max_unpool2d(v, i, 2), (v,))


@pytest.mark.torch
def test_max_pool_double_backward_matches_torch():
    import torch

    x = _x((1, 2, 5, 5))
    res = []
    for lib, fn in ((fabric, F), (torch, torch.nn.functional)):
        t = lib.tensor(x, requires_grad=True)
        y1, y2 = fn.max_pool2d(t, 3, 2, 1), fn.avg_pool2d(t, 2, 1)
        g, = lib.autograd.grad((y1 * y1).sum() + (y2 * y2).sum(), [t], create_graph=True)
        (g * g).sum().backward()
        res.append(t.grad.detach().numpy())
    np.testing.assert_allclose(res[0], res[1], rtol=1e-10, atol=1e-12)


# --- errors: PyTorch's types and messages -----------------------------------------------------------------

def _errors(lib):
    fn = lib.nn.functional
    r = np.random.default_rng(0)

    def t(*s, dt=np.float32):
        return lib.tensor(r.standard_normal(s).astype(dt))

    x = t(2, 3, 6, 6)
    return [
        lambda: fn.max_pool2d(x, 3, padding=2),
        lambda: fn.max_pool2d(x, 7),
        lambda: fn.max_pool2d(t(3, 6), 2),
        lambda: fn.max_pool2d(t(2, 3, 4, 6, 6), 2),
        lambda: fn.max_pool2d(x, 2, stride=0),
        lambda: fn.max_pool2d(x, 2, dilation=0),
        lambda: fn.max_pool2d(x, 2, padding=-1),
        lambda: fn.max_pool2d(x, (2, 2, 2)),
        lambda: fn.max_pool2d(x, 2, stride=(1, 1, 1)),
        lambda: fn.max_pool2d(x, 3, dilation=2, padding=2),
        lambda: fn.max_pool2d(t(2, 0, 6, 6), 2),
        lambda: fn.max_pool1d(t(2, 3, 4, 5), 2),
        lambda: fn.max_pool1d(t(2, 3, 1), 2),
        lambda: fn.max_pool1d(t(2, 3, 6), 3, padding=2),
        lambda: fn.max_pool1d(t(2, 0, 6), 2),
        lambda: fn.max_pool3d(t(2, 3, 4), 2),
        lambda: fn.max_pool3d(t(2, 3, 6, 6, 6), 7),
        lambda: fn.max_pool3d(t(2, 0, 6, 6, 6), 2),
        lambda: fn.avg_pool2d(x, 3, padding=2),
        lambda: fn.avg_pool2d(x, 7),
        lambda: fn.avg_pool2d(x, 2, divisor_override=0),
        lambda: fn.avg_pool2d(t(1, 2, 3, 6, 6), 2),
        lambda: fn.avg_pool2d(t(2, 0, 6, 6), 2),
        lambda: fn.avg_pool2d(x, (2, 2, 2)),
        lambda: fn.avg_pool2d(t(2, 3, 6, 6).int(), 2),
        lambda: fn.avg_pool1d(t(3, 6, 4, 4), 2),
        lambda: fn.avg_pool1d(t(2, 3, 6), 7),
        lambda: fn.avg_pool3d(t(2, 0, 6, 6, 6), 2),
        lambda: fn.adaptive_avg_pool2d(t(6), 2),
        lambda: fn.adaptive_avg_pool2d(x, -1),
        lambda: fn.adaptive_avg_pool2d(t(2, 3, 0, 6), 2),
        lambda: fn.adaptive_avg_pool2d(x, (2, 2, 2)),
        lambda: fn.adaptive_avg_pool2d(x.int(), 2),
        lambda: fn.adaptive_max_pool2d(t(2, 3, 0, 6), 2),
        lambda: fn.adaptive_max_pool1d(t(5, 3, 4, 2), 3),
        lambda: fn.adaptive_avg_pool3d(t(5, 3, 4), 3),
        lambda: fn.max_unpool2d(t(2, 3, 3, 3), lib.zeros(2, 3, 3, 3).long(), 2, output_size=(8, 8)),
        lambda: fn.max_unpool2d(t(2, 3, 3, 3), lib.full((2, 3, 3, 3), 40).long(), 2),
        lambda: fn.max_unpool2d(t(2, 3, 3, 3), lib.zeros(2, 3, 3, 3).int(), 2),
        lambda: fn.max_unpool2d(t(2, 3, 3, 3), lib.zeros(2, 3, 3, 2).long(), 2),
        lambda: fn.max_unpool2d(t(3, 3), lib.zeros(3, 3).long(), 2),
    ]


@pytest.mark.torch
@pytest.mark.parametrize("i", range(len(_errors(fabric))))
def test_errors_match_torch(i):
    import torch

    with pytest.raises(Exception) as want:
        _errors(torch)[i]()
    with pytest.raises(type(want.value)) as got:
        _errors(fabric)[i]()
    assert str(got.value) == str(want.value)


def test_offset_and_fused_max_pool_agree():
    """The NumPy offset loop and the backend's fused max_pool2d (the GPU
    path) give the same values and indices."""
    from fabric.nn.functional import _pooling as P

    rng = np.random.default_rng(0)
    for (k, s, p, d, c), dt in itertools.product([(2, 2, 0, 1, False), (3, 2, 1, 1, True), (3, 1, 1, 2, False)],
                                                 (np.float32, np.float64)):
        x = rng.standard_normal((2, 3, 7, 6)).astype(dt)
        x[0, 0, :3, :3] = -np.inf
        x[1, 2, 2, 2] = np.nan
        y = F.max_pool2d(fabric.tensor(x), k, s, p, d, c)
        geom = P._pool_geom("max_pool2d", x.shape, (k, k), (s, s), (p, p), (d, d), c, "max")
        fy, fi = P._fused_max_pool(x, geom)
        oy, ok = P._max_pool_offsets(x, geom)
        np.testing.assert_array_equal(oy, fy)
        np.testing.assert_array_equal(P._plane_index(ok, geom), fi)
        np.testing.assert_array_equal(y.numpy(), fy)


@pytest.mark.torch
@pytest.mark.parametrize("k, s, p", [(3, 2, 1), (2, 2, 0), (3, 1, 1)])
def test_max_pool2d_gradients_are_bit_identical_to_torch(k, s, p):
    """Overlapping windows sum an input's gradients in PyTorch's order; a zero gradient is +0.0."""
    import torch

    rng = np.random.default_rng(k * 10 + s)
    x = rng.standard_normal((2, 3, 11, 9)).astype(np.float32)
    x[0, 0, :4, :4] = 1.0  # ties
    g = rng.standard_normal((2, 3) + tuple((n + 2 * p - k) // s + 1 for n in (11, 9))).astype(np.float32)
    g[1, 2] = -0.0
    grads = []
    for lib, fn in ((fabric, F.max_pool2d), (torch, torch.nn.functional.max_pool2d)):
        xt = lib.tensor(x, requires_grad=True)
        y = fn(xt, k, s, p)
        y.backward(lib.tensor(g))
        grads.append((y.detach().numpy(), xt.grad.numpy()))
    (yf, gf), (yt, gt) = grads
    assert yf.tobytes() == yt.tobytes()
    assert gf.tobytes() == gt.tobytes()
