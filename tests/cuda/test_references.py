"""The NumPy reference twins in fabric.backends.fused, against naive formulas
and (where installed) torch."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from fabric.backends import fused

rng = np.random.default_rng(1234)


def close(a, b, tol=1e-6):
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=tol, atol=tol)


# ---- naive formulas -------------------------------------------------------------
def test_softmax_naive_and_stable():
    x = rng.standard_normal((4, 7))
    e = np.exp(x)
    close(fused.softmax(np, x, -1), e / e.sum(-1, keepdims=True))
    close(fused.softmax(np, x + 1000.0, -1), e / e.sum(-1, keepdims=True))
    close(fused.log_softmax(np, x + 1000.0, 0), np.log(e / e.sum(0, keepdims=True)))
    assert fused.softmax(np, np.float16(x), 1).dtype == np.float16
    assert fused.softmax(np, np.zeros((0, 3)), -1).shape == (0, 3)


def test_softmax_masked_rows():
    x = np.array([[0.0, -np.inf, 0.0], [-np.inf] * 3])
    with np.errstate(invalid="ignore"):
        y = fused.softmax(np, x, -1)
    close(y[0], [0.5, 0, 0.5])
    assert np.isnan(y[1]).all()     # as PyTorch


def test_softmax_backward_is_jacobian_product():
    x, gy = rng.standard_normal((3, 5)), rng.standard_normal((3, 5))
    y = fused.softmax(np, x, -1)
    jac = np.einsum("ri,ij->rij", y, np.eye(5)) - np.einsum("ri,rj->rij", y, y)
    close(fused.softmax_backward(np, y, gy, -1), np.einsum("rij,ri->rj", jac, gy))
    ly = fused.log_softmax(np, x, -1)
    ljac = np.eye(5)[None] - y[:, None, :]
    close(fused.log_softmax_backward(np, ly, gy, -1), np.einsum("rij,ri->rj", ljac, gy))


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy_naive(weighted, smoothing):
    n, c = 6, 5
    x, t = rng.standard_normal((n, c)), rng.integers(0, c, n)
    t[2] = -1
    w = rng.random(c) + 0.5 if weighted else np.ones(c)
    logp = x - np.log(np.exp(x).sum(1, keepdims=True))
    want = np.array([0.0 if t[i] == -1 else
                     (1 - smoothing) * -w[t[i]] * logp[i, t[i]] - smoothing / c * (w * logp[i]).sum()
                     for i in range(n)])
    loss, saved = fused.cross_entropy(np, x, t, w if weighted else None, -1, smoothing)
    close(loss, want)
    # backward: central differences of sum(g * loss)
    g = rng.random(n)
    gx = fused.cross_entropy_backward(np, saved, t, w if weighted else None, -1, smoothing, g)
    h, num = 1e-6, np.zeros_like(x)
    for i in range(n):
        for j in range(c):
            xp_, xm = x.copy(), x.copy()
            xp_[i, j] += h
            xm[i, j] -= h
            lp = fused.cross_entropy(np, xp_, t, w if weighted else None, -1, smoothing)[0]
            lm = fused.cross_entropy(np, xm, t, w if weighted else None, -1, smoothing)[0]
            num[i, j] = (g * (lp - lm)).sum() / (2 * h)
    close(gx, num, 1e-5)


def test_layer_norm_and_rms_norm_naive():
    x = rng.standard_normal((2, 3, 8)) * 3 + 5
    w, b = rng.standard_normal(8), rng.standard_normal(8)
    y, mean, rstd = fused.layer_norm(np, x, w, b, 1e-5)
    close(rstd, 1 / np.sqrt(x.var(-1) + 1e-5))
    close(y, (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5) * w + b)
    close(mean, x.mean(-1))
    y, _rstd = fused.rms_norm(np, x, w, 1e-6)
    close(y, x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w)
    y16, mean16, _ = fused.layer_norm(np, x.astype(np.float16), None, None, 1e-5)
    assert y16.dtype == np.float16 and mean16.dtype == np.float32


def _numgrad(f, x, gy, h=1e-6):
    num = np.zeros_like(x)
    it = np.nditer(x, flags=["multi_index"])
    for _ in it:
        i = it.multi_index
        xp_, xm = x.copy(), x.copy()
        xp_[i] += h
        xm[i] -= h
        num[i] = ((f(xp_) - f(xm)) * gy).sum() / (2 * h)
    return num


def test_norm_backwards_numeric():
    x, gy = rng.standard_normal((3, 6)), rng.standard_normal((3, 6))
    w, b = rng.standard_normal(6), rng.standard_normal(6)
    _, mean, rstd = fused.layer_norm(np, x, w, b, 1e-5)
    gx, gw, gb = fused.layer_norm_backward(np, gy, x, w, mean, rstd)
    close(gx, _numgrad(lambda v: fused.layer_norm(np, v, w, b, 1e-5)[0], x, gy), 1e-5)
    close(gw, _numgrad(lambda v: fused.layer_norm(np, x, v, b, 1e-5)[0], w, gy), 1e-5)
    close(gb, gy.sum(0))
    _, rstd = fused.rms_norm(np, x, w, 1e-6)
    gx, gw = fused.rms_norm_backward(np, gy, x, w, rstd)
    close(gx, _numgrad(lambda v: fused.rms_norm(np, v, w, 1e-6)[0], x, gy), 1e-5)
    close(gw, _numgrad(lambda v: fused.rms_norm(np, x, v, 1e-6)[0], w, gy), 1e-5)


@pytest.mark.parametrize("act", fused.ACTIVATIONS)
def test_activation_backwards_numeric(act):
    x = rng.standard_normal((3, 4)) + 0.05      # away from relu's kink
    bias, gy = rng.standard_normal(4), rng.standard_normal((3, 4))
    gx, gb = fused.bias_act_backward(np, x, bias, gy, act)
    close(gx, _numgrad(lambda v: fused.bias_act(np, v, bias, act), x, gy), 1e-5)
    close(gb, gx.sum(0))


def test_gelu_silu_naive():
    import math
    x = np.linspace(-6, 6, 41)
    close(fused.gelu(np, x), [v * 0.5 * (1 + math.erf(v / math.sqrt(2))) for v in x])
    close(fused.gelu(np, x, "tanh"), 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))))
    close(fused.silu(np, x), x / (1 + np.exp(-x)))
    for ap in ("none", "tanh"):
        close(fused.gelu_backward(np, x, np.ones_like(x), ap),
              _numgrad(lambda v, ap=ap: fused.gelu(np, v, ap), x, np.ones_like(x)), 1e-6)
    close(fused.silu_backward(np, x, np.ones_like(x)), _numgrad(lambda v: fused.silu(np, v), x, np.ones_like(x)))
    with np.errstate(over="raise"):
        fused.silu(np, np.array([-1000.0, 1000.0]))


# ---- accuracy: large logits, activation tails, special values ----------------------------------
def _log_softmax64(x):
    x = x.astype(np.float64)
    z = x - x.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def _naive_cross_entropy64(x, t, w, eps, g):
    """Float64 loss and gradient of the logits ``x`` (any dtype, read exactly)."""
    n, c = x.shape
    lp = _log_softmax64(x)
    p, rows = np.exp(lp), np.arange(n)
    w = np.ones(c) if w is None else w.astype(np.float64)
    loss = -(1 - eps) * w[t] * lp[rows, t] - eps / c * (lp * w).sum(1)
    onehot = np.eye(c)[t]
    grad = (1 - eps) * w[t][:, None] * (p - onehot) + eps / c * (w.sum() * p - w)
    return loss, grad * g[:, None]


@pytest.mark.parametrize("dt,offset,tol", [(np.float32, 1e4, (1e-5, 2e-7)), (np.float32, -3e5, (1e-5, 2e-7)),
                                           (np.float16, 3e4, (2e-3, 2e-4))])
@pytest.mark.parametrize("weighted,smoothing", [(False, 0.0), (True, 0.15)])
def test_cross_entropy_large_logits(dt, offset, tol, weighted, smoothing):
    """Loss and gradient come from the shifted logits x - max, so they keep full precision
    however large the logits (a saved max + lse rounded to float32 is off by eps * |x|,
    i.e. ~5e-4 relative in every probability at 1e4)."""
    n, c = 6, 40
    x = (offset + rng.standard_normal((n, c)) * 3 * (1 if dt == np.float32 else 20)).astype(dt)
    t = rng.integers(0, c, n)
    w = (rng.random(c) + 0.5).astype(dt) if weighted else None
    g = (rng.random(n) + 0.5).astype(dt)
    loss, saved = fused.cross_entropy(np, x, t, w, -100, smoothing)
    gx = fused.cross_entropy_backward(np, saved, t, w, -100, smoothing, g)
    want_loss, want_gx = _naive_cross_entropy64(x, t, w, smoothing, g.astype(np.float64))
    rtol, atol = tol
    assert loss.dtype == gx.dtype == dt and saved[1].dtype == fused.acc_dtype(dt)
    np.testing.assert_allclose(loss.astype(np.float64), want_loss, rtol=rtol, atol=atol * 10)
    np.testing.assert_allclose(gx.astype(np.float64), want_gx, rtol=rtol, atol=atol)
    close(saved[1], np.log(np.exp(x - x.max(1, keepdims=True).astype(np.float64)).sum(1)), rtol)


def test_log_softmax_large_logits():
    x = (1e4 + rng.standard_normal((5, 30)) * 3).astype(np.float32)
    np.testing.assert_allclose(fused.log_softmax(np, x, -1), _log_softmax64(x), rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(fused.softmax(np, x, -1), np.exp(_log_softmax64(x)), rtol=2e-6, atol=1e-9)


def _activations64(x):
    """Float64 gelu, gelu', silu, silu' of ``x`` (math.erfc: no scipy needed)."""
    import math
    x = x.astype(np.float64)
    phi = 0.5 * np.vectorize(math.erfc)(-x / math.sqrt(2))
    with np.errstate(over="ignore"):
        e = np.exp(-x)
    s = 1 / (1 + e)
    return {"gelu": x * phi, "gelu_backward": phi + x * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi),
            "silu": x * s, "silu_backward": s * (1 + x * np.minimum(e * s, 1))}


def _float32_activations(x):
    ones = np.ones_like(x)
    return {"gelu": fused.gelu(np, x), "gelu_backward": fused.gelu_backward(np, x, ones),
            "silu": fused.silu(np, x), "silu_backward": fused.silu_backward(np, x, ones)}


def test_float32_activations_within_a_few_ulp(monkeypatch):
    """The float32 kernels (rational Gaussian tail for GELU, x / (1 + exp(-x)) for SiLU)
    against float64: a few ulp where values are O(1), growing like x**2 / 2 ulp in GELU's
    lower tail (the float32 rounding of x*x inside exp(-x*x/2)) - relative accuracy that
    1 + erf(x / sqrt(2)) loses completely there."""
    monkeypatch.setattr(fused, "_CHUNK", 4096)      # several chunks and a partial last one
    x = np.linspace(-13, 14, 40_001, dtype=np.float32)
    got, want = _float32_activations(x), _activations64(x)
    spacing = {k: np.spacing(np.abs(v).astype(np.float32)).astype(np.float64) for k, v in want.items()}
    x64 = x.astype(np.float64)
    bound = {"gelu": 6 + np.where(x64 < 0, x64 ** 2 / 2, 0), "silu": np.full_like(x64, 4)}
    for k in ("gelu", "silu"):
        assert got[k].dtype == np.float32
        ulps = np.abs(got[k] - want[k]) / spacing[k]
        assert (ulps <= bound[k]).all(), (k, x[np.argmax(ulps - bound[k])], ulps.max())
    # derivatives: the same, plus an absolute 4e-8 where they cross zero (x ~ -0.75, -1.28)
    for k, b in (("gelu_backward", bound["gelu"]), ("silu_backward", bound["silu"] + 2)):
        err = np.abs(got[k] - want[k])
        assert (err <= b * spacing[k] + 4e-8).all(), (k, x[np.argmax(err - b * spacing[k])], err.max())
    x16 = x.astype(np.float16)      # float16 is computed in float32
    want16 = _float32_activations(x16.astype(np.float32))
    for k, v in _float32_activations(x16).items():
        np.testing.assert_array_equal(v, want16[k].astype(np.float16))


def test_float32_activations_strided_and_tiny():
    x = rng.standard_normal((64, 100)).astype(np.float32) * 4
    assert x[:, ::3].size >= fused._MIN_FAST
    for xs in (x[:, ::3], x[:3, ::3]):       # the float32 kernels, the small-array path
        for k, v in _float32_activations(xs).items():
            np.testing.assert_allclose(v, _activations64(xs)[k], rtol=1e-5, atol=1e-7)
    assert fused.gelu(np, np.zeros((0, 3), np.float32)).shape == (0, 3)
    for dt in (np.float32, np.float64):   # 0-d
        one = np.array([1.5], dt)
        for ap in ("none", "tanh"):
            close(fused.gelu(np, np.array(1.5, dt), ap), fused.gelu(np, one, ap)[0])
            close(fused.gelu_backward(np, np.array(1.5, dt), np.array(1.0, dt), ap),
                  fused.gelu_backward(np, one, np.ones(1, dt), ap)[0])
        close(fused.silu(np, np.array(1.5, dt)), fused.silu(np, one)[0])
        close(fused.silu_backward(np, np.array(1.5, dt), np.array(1.0, dt)), fused.silu_backward(np, one, one * 0 + 1)[0])
    np.testing.assert_allclose(fused.gelu(np, np.float32([1e-30, -1e-30])), [5e-31, -5e-31], rtol=1e-6)


def test_float64_activations_accurate():
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 30
    x = np.concatenate([np.linspace(-30, 30, 301), [-1e-8, 1e-8, -37.5]])
    gelu = np.array([float(v * mpmath.ncdf(v)) for v in map(mpmath.mpf, x)])
    dgelu = np.array([float(mpmath.ncdf(v) + v * mpmath.npdf(v)) for v in map(mpmath.mpf, x)])
    # the size of the terms each result is summed from: Phi + x phi cancels near x = -0.75
    dgelu_terms = np.array([float(mpmath.ncdf(v) + abs(v) * mpmath.npdf(v)) for v in map(mpmath.mpf, x)])
    # erfc(-x / sqrt(2)) inherits the rounding of its argument: ~x**2 eps relative in the tail
    # (with SciPy's erfc or fabric's own NumPy erfc, whichever is installed)
    bound = 4e-16 * (1 + x * x / 2)
    for got, want, scale in ((fused.gelu(np, x), gelu, np.abs(gelu)),
                             (fused.gelu_backward(np, x, np.ones_like(x)), dgelu, dgelu_terms)):
        assert (np.abs(got - want) <= bound * scale + 1e-300).all()


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("reps", [1, 400])     # small arrays go through float64, large ones the float32 kernels
def test_activation_special_values(dt, reps):
    """+-inf and NaN give PyTorch's (float64) values: gelu(-inf), silu(-inf) and the
    gradients at +-inf are NaN; huge finite inputs neither overflow nor warn."""
    big = float(np.finfo(dt).max)
    x = np.tile(np.array([np.inf, -np.inf, np.nan, 0.0, big, -big, -1000.0], dt), reps)
    nan = np.nan
    want = {"gelu": [np.inf, nan, nan, 0, big, 0, 0], "gelu_backward": [nan, nan, nan, 0.5, 1, 0, 0],
            "silu": [np.inf, nan, nan, 0, big, 0, 0], "silu_backward": [nan, nan, nan, 0.5, 1, 0, 0]}
    want = {k: np.tile(v, reps) for k, v in want.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = {"gelu": fused.gelu(np, x), "gelu_backward": fused.gelu_backward(np, x, np.ones_like(x)),
               "silu": fused.silu(np, x), "silu_backward": fused.silu_backward(np, x, np.ones_like(x))}
    for k, v in got.items():
        assert v.dtype == dt
        np.testing.assert_array_equal(v.astype(np.float64), want[k], err_msg=k)


def test_infinities_do_not_warn():
    """inf - inf inside softmax / log_softmax / cross_entropy gives PyTorch's NaNs silently."""
    x = np.array([[np.inf, 0.0, 1.0], [-np.inf, 0.0, 1.0], [-np.inf] * 3, [np.nan, 0.0, 1.0]], np.float32)
    t = np.array([1, 1, 0, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y, ly = fused.softmax(np, x, -1), fused.log_softmax(np, x, -1)
        fused.softmax(np, x, 0), fused.log_softmax(np, x, 0)
        loss, saved = fused.cross_entropy(np, x, t, None, -100, 0.0)
        gx = fused.cross_entropy_backward(np, saved, t, None, -100, 0.0, np.ones(4, np.float32))
    want = np.exp(_log_softmax64(x[1:2, 1:]))[0]
    close(y[1], [0.0, *want])
    close(ly[1, 1:], np.log(want))
    assert ly[1, 0] == -np.inf
    assert np.isnan(y[[0, 2, 3]]).any(axis=1).all() and np.isnan(y[2]).all()    # as PyTorch
    assert np.isfinite(loss[1]) and np.isnan(loss[[0, 2, 3]]).all()
    assert np.isfinite(gx[1]).all() and gx[1, 0] == 0


# ---- dropout / Philox ------------------------------------------------------------------
KAT = [  # Random123 kat_vectors: counter (4 words), key (2 words) -> output
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


@pytest.mark.parametrize("ctr,key,want", KAT)
def test_philox_known_answers(ctr, key, want):
    c = [np.array([v], np.uint64) for v in ctr]
    assert tuple(int(w[0]) for w in fused.philox4x32(np, *c, *key)) == want


def test_dropout_reproducible_and_unbiased():
    x = np.ones(40_001, np.float32)
    y1, m1 = fused.dropout(np, x, 0.25, seed=7, offset=3)
    y2, m2 = fused.dropout(np, x, 0.25, seed=7, offset=3)
    _, m3 = fused.dropout(np, x, 0.25, seed=7, offset=4)
    _, m4 = fused.dropout(np, x, 0.25, seed=8, offset=3)
    assert (m1 == m2).all() and (y1 == y2).all()
    assert (m1 != m3).any() and (m1 != m4).any()
    assert abs(m1.mean() - 0.75) < 0.01
    close(y1, m1 / 0.75)
    assert y1.dtype == np.float32 and m1.dtype == bool
    assert fused.dropout(np, x, 0.0, 1, 0)[1].all() and not fused.dropout(np, x, 1.0, 1, 0)[0].any()


# ---- embedding, im2col, pooling ------------------------------------------------------------
@pytest.mark.parametrize("num,n", [(7, 30), (5000, 3000)])   # one-hot path, sort + reduceat path
def test_embedding_backward_naive(num, n):
    idx = rng.integers(0, num, n)
    gy = rng.standard_normal((n, 3))
    want = np.zeros((num, 3))
    np.add.at(want, idx, gy)
    close(fused.embedding_backward(np, idx, gy, num), want)
    want[idx[0]] = 0
    close(fused.embedding_backward(np, idx.reshape(-1, 1), gy.reshape(n, 1, 3), num, idx[0]), want)


def _naive_im2col(x, k, s, p, d):
    n, c, h, w = x.shape
    xp_ = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    oh = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    out = np.zeros((n, c, k[0], k[1], oh, ow))
    for i in range(k[0]):
        for j in range(k[1]):
            for a in range(oh):
                for b in range(ow):
                    out[:, :, i, j, a, b] = xp_[:, :, a * s[0] + i * d[0], b * s[1] + j * d[1]]
    return out.reshape(n, c * k[0] * k[1], oh * ow)


@pytest.mark.parametrize("k,s,p,d", [((3, 3), (1, 1), (1, 1), (1, 1)), ((2, 3), (2, 1), (0, 1), (1, 2))])
def test_im2col_col2im_naive_and_adjoint(k, s, p, d):
    x = rng.standard_normal((2, 3, 6, 7))
    cols = fused.im2col(np, x, k, s, p, d)
    close(cols, _naive_im2col(x, k, s, p, d))
    c = rng.standard_normal(cols.shape)
    back = fused.col2im(np, c, x.shape, k, s, p, d)
    close((cols * c).sum(), (x * back).sum())     # col2im is im2col's adjoint
    x1 = rng.standard_normal((2, 3, 9))
    close(fused.im2col(np, x1, 3, 2, 1, 2), _naive_im2col(x1[:, :, None], (1, 3), (1, 2), (0, 1), (1, 2)))


def test_max_pool_naive():
    x = rng.standard_normal((2, 2, 5, 6))
    y, idx = fused.max_pool2d(np, x, 2, 2, 0, 1, True)
    assert y.shape == (2, 2, 3, 3)
    for a in range(3):
        for b in range(3):
            win = x[:, :, 2 * a: 2 * a + 2, 2 * b: 2 * b + 2]
            close(y[:, :, a, b], win.max(axis=(2, 3)))
    close(np.take_along_axis(x.reshape(2, 2, -1), idx.reshape(2, 2, -1), 2).reshape(y.shape), y)
    g = fused.max_pool2d_backward(np, np.ones_like(y), idx, x.shape)
    assert g.sum() == y.size and set(np.unique(g)) <= {0.0, 1.0}


def test_max_pool_nan_and_all_neg_inf():
    x = np.full((1, 1, 2, 4), -np.inf)
    x[0, 0, 1, 3] = np.nan
    x[0, 0, 0, 2] = np.nan
    y, idx = fused.max_pool2d(np, x, 2, 2, 0, 1, False)
    assert idx.tolist() == [[[[0, 7]]]] and np.isinf(y[0, 0, 0, 0]) and np.isnan(y[0, 0, 0, 1])


# ---- optimizers: multi-tensor == per-tensor loop -----------------------------------------------
def test_optimizer_grouping_matches_single_tensor():
    shapes = [(3,), (50_000,), (4, 5), (1,)]
    ps = [rng.standard_normal(s) for s in shapes]
    gs = [rng.standard_normal(s) for s in shapes]
    ms = [np.zeros(s) for s in shapes]
    vs = [np.zeros(s) for s in shapes]
    ps2, ms2, vs2 = [p.copy() for p in ps], [m.copy() for m in ms], [v.copy() for v in vs]
    fused.adam_step(np, ps, gs, ms, vs, None, 1, 1e-2, weight_decay=0.1)
    for i in range(len(shapes)):   # one tensor per call: no grouping
        fused.adam_step(np, [ps2[i]], [gs[i]], [ms2[i]], [vs2[i]], None, 1, 1e-2, weight_decay=0.1)
    for a, b in zip(ps + ms + vs, ps2 + ms2 + vs2):
        np.testing.assert_array_equal(a, b)


# ---- torch ----------------------------------------------------------------------------------
@pytest.mark.torch
class TestAgainstTorch:
    def setup_method(self):
        self.torch = pytest.importorskip("torch")
        self.F = self.torch.nn.functional

    def t(self, a, grad=False):
        return self.torch.tensor(a, requires_grad=grad)

    def test_softmax_family(self):
        x, gy = rng.standard_normal((4, 9)), rng.standard_normal((4, 9))
        for ax in (0, 1):
            for fn, name in ((self.torch.softmax, "softmax"), (self.torch.log_softmax, "log_softmax")):
                xt = self.t(x, True)
                yt = fn(xt, ax)
                yt.backward(self.t(gy))
                y = getattr(fused, name)(np, x, ax)
                close(y, yt.detach().numpy())
                close(getattr(fused, name + "_backward")(np, y, gy, ax), xt.grad.numpy())

    @pytest.mark.parametrize("weighted", [False, True])
    @pytest.mark.parametrize("smoothing", [0.0, 0.3])
    def test_cross_entropy(self, weighted, smoothing):
        x, t = rng.standard_normal((8, 6)), rng.integers(0, 6, 8)
        t[[1, 5]] = -100
        w = rng.random(6) + 0.2 if weighted else None
        g = rng.random(8)
        xt = self.t(x, True)
        lt = self.F.cross_entropy(xt, self.t(t), None if w is None else self.t(w), ignore_index=-100,
                                  label_smoothing=smoothing, reduction="none")
        lt.backward(self.t(g))
        loss, saved = fused.cross_entropy(np, x, t, w, -100, smoothing)
        close(loss, lt.detach().numpy())
        close(fused.cross_entropy_backward(np, saved, t, w, -100, smoothing, g), xt.grad.numpy())
        mean = self.F.cross_entropy(self.t(x), self.t(t), None if w is None else self.t(w),
                                    label_smoothing=smoothing)   # the documented 'mean' contract
        valid = t != -100
        denom = (w[t[valid]] if w is not None else np.ones(valid.sum())).sum()
        close(loss.sum() / denom, mean.item())

    def test_norms(self):
        x, gy = rng.standard_normal((3, 4, 10)), rng.standard_normal((3, 4, 10))
        w, b = rng.standard_normal(10), rng.standard_normal(10)
        xt, wt, bt = self.t(x, True), self.t(w, True), self.t(b, True)
        yt = self.F.layer_norm(xt, (10,), wt, bt, 1e-5)
        yt.backward(self.t(gy))
        y, mean, rstd = fused.layer_norm(np, x, w, b, 1e-5)
        close(y, yt.detach().numpy())
        for a, bb in zip(fused.layer_norm_backward(np, gy, x, w, mean, rstd), (xt.grad, wt.grad, bt.grad)):
            close(a, bb.numpy())
        xt, wt = self.t(x, True), self.t(w, True)
        yt = self.F.rms_norm(xt, (10,), wt, 1e-6)
        yt.backward(self.t(gy))
        y, rstd = fused.rms_norm(np, x, w, 1e-6)
        close(y, yt.detach().numpy())
        for a, bb in zip(fused.rms_norm_backward(np, gy, x, w, rstd), (xt.grad, wt.grad)):
            close(a, bb.numpy())

    def test_activations(self):
        x, gy = rng.standard_normal((5, 7)) * 3, rng.standard_normal((5, 7))
        for ap in ("none", "tanh"):
            xt = self.t(x, True)
            self.F.gelu(xt, approximate=ap).backward(self.t(gy))
            close(fused.gelu(np, x, ap), self.F.gelu(self.t(x), approximate=ap).numpy())
            close(fused.gelu_backward(np, x, gy, ap), xt.grad.numpy())
        xt = self.t(x, True)
        self.F.silu(xt).backward(self.t(gy))
        close(fused.silu(np, x), self.F.silu(self.t(x)).numpy())
        close(fused.silu_backward(np, x, gy), xt.grad.numpy())

    def test_embedding_backward(self):
        idx = rng.integers(0, 9, (4, 5))
        gy = rng.standard_normal((4, 5, 3))
        wt = self.t(rng.standard_normal((9, 3)), True)
        self.F.embedding(self.t(idx), wt, padding_idx=2).backward(self.t(gy))
        close(fused.embedding_backward(np, idx, gy, 9, 2), wt.grad.numpy())

    def test_unfold_fold(self):
        x = rng.standard_normal((2, 3, 7, 8))
        kw = {"kernel_size": (3, 2), "stride": (2, 1), "padding": (1, 1), "dilation": (1, 2)}
        cols = fused.im2col(np, x, (3, 2), (2, 1), (1, 1), (1, 2))
        close(cols, self.F.unfold(self.t(x), **kw).numpy())
        close(fused.col2im(np, cols, x.shape, (3, 2), (2, 1), (1, 1), (1, 2)),
              self.F.fold(self.t(cols), (7, 8), **kw).numpy())

    @pytest.mark.parametrize("k,s,p,d,ceil", [(2, 2, 0, 1, False), (3, 2, 1, 1, True), (3, 1, 1, 2, False),
                                              ((2, 3), (1, 2), (1, 0), (2, 1), True)])
    def test_max_pool(self, k, s, p, d, ceil):
        x = rng.permutation(2 * 3 * 9 * 10).reshape(2, 3, 9, 10).astype(np.float64)   # no ties
        xt = self.t(x, True)
        yt, it = self.F.max_pool2d(xt, k, s, p, d, ceil_mode=ceil, return_indices=True)
        gy = rng.standard_normal(tuple(yt.shape))
        yt.backward(self.t(gy))
        y, idx = fused.max_pool2d(np, x, k, s, p, d, ceil)
        close(y, yt.detach().numpy())
        np.testing.assert_array_equal(idx, it.numpy())
        close(fused.max_pool2d_backward(np, gy, idx, x.shape), xt.grad.numpy())

    @pytest.mark.parametrize("cfg", [{"momentum": 0.0}, {"momentum": 0.9},
                                     {"momentum": 0.9, "dampening": 0.3, "weight_decay": 0.1},
                                     {"momentum": 0.8, "nesterov": True, "weight_decay": 0.01, "maximize": True}])
    def test_sgd(self, cfg):
        shapes = [(4, 3), (7,), (30_000,)]
        ps = [rng.standard_normal(s) for s in shapes]
        tp = [self.torch.tensor(p.copy(), requires_grad=True) for p in ps]
        opt = self.torch.optim.SGD(tp, lr=0.05, foreach=False, **cfg)
        bufs = [np.zeros(s) for s in shapes] if cfg["momentum"] else None
        for step in range(3):
            gs = [rng.standard_normal(s) for s in shapes]
            for t_, g in zip(tp, gs):
                t_.grad = self.torch.tensor(g)
            opt.step()
            fused.sgd_step(np, ps, gs, bufs, 0.05, first_step=step == 0, **cfg)
        for p, t_ in zip(ps, tp):
            close(p, t_.detach().numpy(), 1e-12)

    @pytest.mark.parametrize("cfg", [{}, {"weight_decay": 0.1}, {"amsgrad": True, "maximize": True},
                                     {"weight_decay": 0.1, "decoupled_weight_decay": True, "amsgrad": True}])
    def test_adam(self, cfg):
        shapes = [(4, 3), (7,), (30_000,)]
        ps = [rng.standard_normal(s) for s in shapes]
        tp = [self.torch.tensor(p.copy(), requires_grad=True) for p in ps]
        kw = dict(cfg)
        cls = self.torch.optim.AdamW if kw.pop("decoupled_weight_decay", False) else self.torch.optim.Adam
        opt = cls(tp, lr=0.01, betas=(0.8, 0.95), eps=1e-6, foreach=False, **kw)
        if cls is self.torch.optim.Adam:
            cfg = dict(cfg, decoupled_weight_decay=False)
        ms, vs, vmax = ([np.zeros(s) for s in shapes] for _ in range(3))
        for step in range(1, 4):
            gs = [rng.standard_normal(s) for s in shapes]
            for t_, g in zip(tp, gs):
                t_.grad = self.torch.tensor(g)
            opt.step()
            fused.adam_step(np, ps, gs, ms, vs, vmax, step, 0.01, 0.8, 0.95, 1e-6, **cfg)
        for p, t_ in zip(ps, tp):
            close(p, t_.detach().numpy(), 1e-10)
