"""Reference implementations ("twins") of the fused ops.

Every function takes the array namespace ``xp`` (``numpy`` or ``cupy``) first
and works on raw arrays.  They are what the CPU backend runs and what the
CUDA kernels in ``fabric/backends/cuda/kernels`` are tested against, so they
are written to be exact, numerically stable and vectorised (no Python loops
over elements or rows).

float16 inputs are computed in float32 and the results cast back, which is
what the kernels do ("float16 storage, float32 accumulation").  Saved
statistics (``mean``, ``rstd``, ``lse``) are kept in the accumulation dtype.

Example::

    >>> import numpy as np
    >>> from fabric.backends import fused
    >>> fused.softmax(np, np.array([[0.0, np.log(3.0)]]), -1).round(3).tolist()
    [[0.25, 0.75]]
"""
from __future__ import annotations

import math

import numpy as np

from .. import _special_functions as _sf
from .._rng.philox import _philox_words, philox4x32  # the counter-based stream: one home

__all__ = [
    "ACTIVATIONS",
    "adam_step",
    "bias_act",
    "bias_act_backward",
    "col2im",
    "conv_output_size",
    "cross_entropy",
    "cross_entropy_backward",
    "dropout",
    "dropout_threshold",
    "embedding_backward",
    "gelu",
    "gelu_backward",
    "im2col",
    "layer_norm",
    "layer_norm_backward",
    "log_softmax",
    "log_softmax_backward",
    "max_pool2d",
    "max_pool2d_backward",
    "philox4x32",
    "pool_output_size",
    "rms_norm",
    "rms_norm_backward",
    "sgd_step",
    "silu",
    "silu_backward",
    "softmax",
    "softmax_backward",
]

_SQRT_HALF = 0.7071067811865476      # 1/sqrt(2)
_SQRT_2_OVER_PI = 0.7978845608028654  # sqrt(2/pi)
_INV_SQRT_2PI = 0.3989422804014327    # 1/sqrt(2*pi)
_GELU_C = 0.044715


def acc_dtype(dtype) -> np.dtype:
    """The dtype computations on ``dtype`` are carried out in (float16 -> float32)."""
    dtype = np.dtype(dtype)
    return np.dtype(np.float32) if dtype == np.float16 else dtype


def _up(x):
    """``x`` in its accumulation dtype (a copy only for float16)."""
    return x.astype(np.float32) if x.dtype == np.float16 else x


def _down(y, dtype):
    return y.astype(dtype, copy=False)


# --------------------------------------------------------------------------
# softmax / log_softmax
# --------------------------------------------------------------------------
def _nonfinite(xp, m) -> bool:
    """Whether NumPy row maxima ``m`` hold an inf or NaN: then ``x - max`` makes the NaNs
    PyTorch returns (inf - inf) and NumPy's "invalid value" warning is silenced.  A check over
    the maxima only (one value per row), so the common path costs nothing extra."""
    return xp is np and not np.isfinite(m).all()


def _rowdot(xp, a, b):
    """``sum(a * b, axis=-1)`` without the product temporary on NumPy."""
    if xp is np:
        return np.vecdot(a, b)
    return (a * b).sum(axis=-1)


def _softmax(xp, x, m, axis):
    y = _up(x) - m
    xp.exp(y, out=y)
    y /= y.sum(axis=axis, keepdims=True)
    return _down(y, x.dtype)


def softmax(xp, x, axis: int = -1):
    """Numerically stable softmax along ``axis``.

    >>> softmax(np, np.zeros((1, 4)), -1).tolist()
    [[0.25, 0.25, 0.25, 0.25]]
    """
    if x.size == 0:
        return xp.empty_like(x)
    m = x.max(axis=axis, keepdims=True)
    if _nonfinite(xp, m):
        with np.errstate(invalid="ignore"):
            return _softmax(xp, x, m, axis)
    return _softmax(xp, x, m, axis)


def softmax_backward(xp, y, gy, axis: int = -1):
    """Gradient of softmax given its output ``y``: ``y * (gy - sum(gy * y))``.

    >>> y = softmax(np, np.zeros((1, 2)), -1)
    >>> softmax_backward(np, y, np.array([[1.0, 0.0]]), -1).tolist()
    [[0.25, -0.25]]
    """
    if y.size == 0:
        return xp.empty_like(gy)
    ya, ga = _up(y), _up(gy)
    if xp is np:
        dot = np.expand_dims(np.vecdot(ga, ya, axis=axis), axis)
    else:
        dot = (ga * ya).sum(axis=axis, keepdims=True)
    gx = ga - dot
    gx *= ya
    return _down(gx, gy.dtype)


def _log_softmax(xp, x, m, axis):
    z = _up(x) - m
    s = xp.exp(z).sum(axis=axis, keepdims=True)
    z -= xp.log(s, out=s)
    return _down(z, x.dtype)


def log_softmax(xp, x, axis: int = -1):
    """Numerically stable log-softmax along ``axis``.

    >>> np.exp(log_softmax(np, np.array([[1000.0, 1000.0]]), -1)).tolist()
    [[0.5, 0.5]]
    """
    if x.size == 0:
        return xp.empty_like(x)
    m = x.max(axis=axis, keepdims=True)
    if _nonfinite(xp, m):
        with np.errstate(invalid="ignore"):
            return _log_softmax(xp, x, m, axis)
    return _log_softmax(xp, x, m, axis)


def log_softmax_backward(xp, y, gy, axis: int = -1):
    """Gradient of log_softmax given its output ``y``: ``gy - exp(y) * sum(gy)``.

    >>> y = log_softmax(np, np.zeros((1, 2)), -1)
    >>> log_softmax_backward(np, y, np.array([[1.0, 0.0]]), -1).tolist()
    [[0.5, -0.5]]
    """
    if y.size == 0:
        return xp.empty_like(gy)
    ya, ga = _up(y), _up(gy)
    gx = xp.exp(ya)
    gx *= -ga.sum(axis=axis, keepdims=True)
    gx += ga
    return _down(gx, gy.dtype)


# --------------------------------------------------------------------------
# cross entropy (fused with log_softmax)
# --------------------------------------------------------------------------
def cross_entropy(xp, logits, target, weight=None, ignore_index: int = -100,
                  label_smoothing: float = 0.0):
    """Per-row cross-entropy of ``logits`` (N, C) against class indices ``target`` (N,).

    Exactly ``torch.nn.functional.cross_entropy(..., reduction='none')``:

        loss_i = (1 - eps) * w[t_i] * (-log p_i[t_i]) + eps / C * sum_c w[c] * (-log p_i[c])

    with ``w = 1`` when ``weight`` is None, ``p = softmax(logits)`` and
    ``loss_i = 0`` where ``t_i == ignore_index``.  The caller reduces: for
    ``reduction='mean'`` PyTorch divides ``loss.sum()`` by ``sum(w[t_i])`` over
    the rows that are not ignored (by the count of those rows when ``weight`` is
    None).  Targets outside ``[0, C)`` other than ``ignore_index`` are an error
    the caller must check (the kernel cannot raise).

    Returns ``(loss, saved)``: ``loss`` (N,) in the logits' dtype, and
    ``saved = (logits, lse)`` with ``lse = log(sum(exp(x - max(x))))`` per row
    (N,), the log-sum-exp of the row shifted by its maximum, in the
    accumulation dtype; pass ``saved`` unchanged to :func:`cross_entropy_backward`.
    Everything is computed from the shifted logits ``x - max(x)``, and the
    backward recomputes the row maximum instead of saving ``max + lse``:
    rounded to float32, that sum is off by up to 5e-4 at logits ~1e4, and so
    (relatively) would be every probability of the gradient.

    >>> loss, saved = cross_entropy(np, np.zeros((2, 4)), np.array([1, -100]))
    >>> loss.round(4).tolist()
    [1.3863, 0.0]
    """
    n, c = logits.shape
    if n == 0:
        return xp.empty((0,), logits.dtype), (logits, xp.empty((0,), acc_dtype(logits.dtype)))
    if c == 0:
        raise ValueError("cross_entropy needs at least one class")
    m = logits.max(axis=1, keepdims=True)
    if _nonfinite(xp, m):
        with np.errstate(invalid="ignore"):
            return _cross_entropy(xp, logits, m, target, weight, ignore_index, label_smoothing)
    return _cross_entropy(xp, logits, m, target, weight, ignore_index, label_smoothing)


def _cross_entropy(xp, logits, m, target, weight, ignore_index, label_smoothing):
    c = logits.shape[1]
    z = _up(logits) - m                      # x - max: exact near the max
    valid = target != ignore_index
    t = xp.where(valid, target, 0).astype(np.int64, copy=False)
    loss = -xp.take_along_axis(z, t[:, None], axis=1)[:, 0]        # -(x[t] - max)
    wa = None if weight is None else _up(weight).astype(z.dtype, copy=False)
    if label_smoothing:
        zsum = z.sum(axis=1) if wa is None else _rowdot(xp, z, wa)
    xp.exp(z, out=z)
    lse = xp.log(z.sum(axis=1))
    loss += lse                                                   # -log p[t]
    if wa is not None:
        loss *= wa[t]
    if label_smoothing:
        wsum = c if wa is None else wa.sum()
        smooth = wsum * lse                                       # sum_c w[c] (lse - (x_c - max))
        smooth -= zsum
        loss *= 1.0 - label_smoothing
        loss += (label_smoothing / c) * smooth
    loss = xp.where(valid, loss, 0)
    return _down(loss, logits.dtype), (logits, lse)


def cross_entropy_backward(xp, saved, target, weight, ignore_index: int,
                           label_smoothing: float, g_loss):
    """Gradient of :func:`cross_entropy` wrt the logits, for the per-row
    upstream gradient ``g_loss`` (N,):

        g_i * [((1-eps) w[t_i] + eps W / C) p_ij - (1-eps) w[t_i] [j == t_i] - eps w_j / C]

    (``W = sum(w)``), and zero for ignored rows; ``p_ij = exp(x_ij - max_i) * exp(-lse_i)``
    with the row maximum recomputed (see :func:`cross_entropy`).

    >>> loss, saved = cross_entropy(np, np.zeros((1, 2)), np.array([0]))
    >>> cross_entropy_backward(np, saved, np.array([0]), None, -100, 0.0, np.ones(1)).tolist()
    [[-0.5, 0.5]]
    """
    logits, lse = saved
    if logits.shape[0] == 0:
        return xp.empty_like(logits)
    m = logits.max(axis=1, keepdims=True)
    if _nonfinite(xp, m):
        with np.errstate(invalid="ignore"):
            return _cross_entropy_backward(xp, logits, m, lse, target, weight, ignore_index,
                                           label_smoothing, g_loss)
    return _cross_entropy_backward(xp, logits, m, lse, target, weight, ignore_index,
                                   label_smoothing, g_loss)


def _cross_entropy_backward(xp, logits, m, lse, target, weight, ignore_index, label_smoothing,
                            g_loss):
    n, c = logits.shape
    gx = _up(logits) - m
    valid = target != ignore_index
    t = xp.where(valid, target, 0)
    g = xp.where(valid, _up(g_loss).astype(gx.dtype, copy=False), 0)
    eps = float(label_smoothing)
    if weight is None:
        a = g
        gt = g * (1.0 - eps)
    else:
        wa = _up(weight).astype(gx.dtype, copy=False)
        wt = wa[t]
        a = g * ((1.0 - eps) * wt + eps * wa.sum() / c)
        gt = g * (1.0 - eps) * wt
    xp.exp(gx, out=gx)
    gx *= (a * xp.exp(-lse))[:, None]               # a * p
    gx[xp.arange(n), t] -= gt
    if eps:
        if weight is None:
            gx -= (g * (eps / c))[:, None]
        else:
            gx -= (g * (eps / c))[:, None] * wa[None, :]
    return _down(gx, logits.dtype)


# --------------------------------------------------------------------------
# normalisation over the last dimension
# --------------------------------------------------------------------------
def layer_norm(xp, x, weight=None, bias=None, eps: float = 1e-5):
    """Layer norm over the last dimension.  Returns ``(y, mean, rstd)``;
    ``mean`` and ``rstd`` have shape ``x.shape[:-1]`` and the accumulation dtype.

    >>> y, mean, rstd = layer_norm(np, np.array([[1.0, 3.0]]), None, None, 0.0)
    >>> y.tolist(), mean.tolist(), rstd.tolist()
    ([[-1.0, 1.0]], [2.0], [1.0])
    """
    acc = acc_dtype(x.dtype)
    if x.shape[-1] == 0:
        stat = xp.full(x.shape[:-1], np.nan, acc)
        return xp.empty_like(x), stat, stat.copy()
    xa = _up(x)
    mean = xa.mean(axis=-1)
    y = xa - mean[..., None]
    var = _rowdot(xp, y, y)
    var /= x.shape[-1]
    var += eps
    rstd = 1.0 / xp.sqrt(var)
    y *= rstd[..., None]
    if weight is not None:
        y *= weight
    if bias is not None:
        y += bias
    return _down(y, x.dtype), mean, rstd.astype(acc, copy=False)


def _sum_leading(xp, a):
    return a.reshape(-1, a.shape[-1]).sum(axis=0)


def _coldot(xp, a, b):
    """``sum(a * b)`` over all but the last dimension, without the product temporary on NumPy."""
    a2, b2 = a.reshape(-1, a.shape[-1]), b.reshape(-1, b.shape[-1])
    if xp is np:
        return np.einsum("ij,ij->j", a2, b2)
    return (a2 * b2).sum(axis=0)


def layer_norm_backward(xp, gy, x, weight, mean, rstd, has_bias: bool = True):
    """Gradients of :func:`layer_norm`: ``(gx, gweight, gbias)``.

    ``gweight`` is None when ``weight`` is None, ``gbias`` when ``has_bias``
    is False.

        gx = rstd * (g - mean(g) - xhat * mean(g * xhat)),  g = gy * weight

    >>> x = np.array([[1.0, 3.0]]); y, m, r = layer_norm(np, x, None, None, 0.0)
    >>> gx, gw, gb = layer_norm_backward(np, np.array([[1.0, 1.0]]), x, None, m, r)
    >>> gx.tolist(), gw, gb.tolist()
    ([[0.0, 0.0]], None, [1.0, 1.0])
    """
    ga = _up(gy)
    xhat = _up(x) - mean[..., None]
    r = rstd[..., None]
    xhat *= r
    g = ga * weight if weight is not None else ga
    c = max(x.shape[-1], 1)
    c1 = _rowdot(xp, g, xhat)
    c1 *= rstd / c
    c2 = g.sum(axis=-1)
    c2 *= rstd / c
    gweight = gbias = None
    pdtype = weight.dtype if weight is not None else gy.dtype
    if weight is not None:
        gweight = _down(_coldot(xp, xhat, ga), pdtype)
    if has_bias:
        gbias = _down(_sum_leading(xp, ga), pdtype)
    xhat *= c1[..., None]
    gx = xp.multiply(g, r, out=g if g is not gy else None)
    gx -= xhat
    gx -= c2[..., None]
    return _down(gx, gy.dtype), gweight, gbias


def rms_norm(xp, x, weight=None, eps: float = 1e-6):
    """RMS norm over the last dimension: ``x * rstd * weight`` with
    ``rstd = 1 / sqrt(mean(x**2) + eps)``.  Returns ``(y, rstd)``.

    >>> y, rstd = rms_norm(np, np.array([[3.0, 4.0]]), None, 0.0)
    >>> (y * np.sqrt(12.5)).round(6).tolist()
    [[3.0, 4.0]]
    """
    xa = _up(x)
    if x.shape[-1] == 0:
        return xp.empty_like(x), xp.full(x.shape[:-1], np.nan, xa.dtype)
    ms = _rowdot(xp, xa, xa)
    ms /= x.shape[-1]
    ms += eps
    rstd = 1.0 / xp.sqrt(ms)
    y = xa * rstd[..., None]
    if weight is not None:
        y *= weight
    return _down(y, x.dtype), rstd.astype(xa.dtype, copy=False)


def rms_norm_backward(xp, gy, x, weight, rstd):
    """Gradients of :func:`rms_norm`: ``(gx, gweight)``
    (``gweight`` None when ``weight`` is None):

        gx = rstd * (g - x * rstd**2 * mean(g * x)),  g = gy * weight

    >>> x = np.array([[3.0, 4.0]]); y, r = rms_norm(np, x, None, 0.0)
    >>> gx, gw = rms_norm_backward(np, np.zeros((1, 2)), x, None, r)
    >>> gx.tolist(), gw
    ([[0.0, 0.0]], None)
    """
    xa, ga = _up(x), _up(gy)
    g = ga * weight if weight is not None else ga
    c = max(x.shape[-1], 1)
    k = _rowdot(xp, g, xa)
    k *= -(rstd * rstd * rstd) / c
    gx = xa * k[..., None]
    r = rstd[..., None]
    gx += g * r if g is ga else xp.multiply(g, r, out=g)
    gweight = None
    if weight is not None:
        gweight = _down(_coldot(xp, ga, xa * r), weight.dtype)
    return _down(gx, gy.dtype), gweight


# --------------------------------------------------------------------------
# activations
# --------------------------------------------------------------------------
# Float32 GELU on NumPy: Phi(-a) = exp(-a*a/2) * P(a) / Q(a) for a = |x| <= 15 (Phi(-15) ~ 4e-51
# underflows), P of degree 4, Q monic of degree 5: a relative-error fit of erfcx(a/sqrt(2))/2 with
# float32 coefficients (max relative error 1.8e-8 on [0, 15] against scipy's float64 erfcx).
# Listed highest degree first.
_TAIL_P = (0.39894649386405945, 3.927719831466675, 17.675052642822266, 42.20265197753906,
           48.027896881103516)
_TAIL_Q = (9.845914840698242, 45.29105758666992, 115.81849670410156, 161.04676818847656,
           96.05579376220703)
_TAIL_MAX = 15.0
# The forward works with b = |x| / 2: P(2b) / Q(2b) = 2**-5 P'(b) / Q'(b) with Q' monic, and
# the factor 2 of a * Phi(-a) = 2b * Phi(-2b) folded into P' (exact power-of-two rescalings).
_TAIL_P_HALF = tuple(c * 2.0 ** -i for i, c in enumerate(_TAIL_P))
_TAIL_Q_HALF = tuple(c * 2.0 ** -(i + 1) for i, c in enumerate(_TAIL_Q))
_CHUNK = 1 << 16   # elements per chunk of the float32 activation passes: the ~6 buffers stay in L2
_MIN_FAST = 1 << 11  # below this many elements the ~30 ufunc calls cost more than float64 erfc


def _chunked(kernel, nscratch: int, out, *arrays) -> None:
    """``kernel(out, *arrays, *scratch)`` over flat cache-sized chunks of
    same-shaped contiguous NumPy arrays (``nscratch`` scratch buffers)."""
    flat_out = out.reshape(-1)
    flat = [a.reshape(-1) for a in arrays]
    k = min(_CHUNK, flat_out.size)
    scratch = [np.empty(k, out.dtype) for _ in range(nscratch)]
    with np.errstate(over="ignore", invalid="ignore"):   # inf inputs give NaN/inf as in PyTorch
        for i in range(0, flat_out.size, k):
            j = min(i + k, flat_out.size)
            kernel(flat_out[i:j], *[a[i:j] for a in flat], *[s[:j - i] for s in scratch])


def _fast32(xp, x) -> bool:
    """Whether the float32 NumPy kernels below apply (float16 is computed in float32)."""
    return xp is np and x.dtype == np.float32 and x.size >= _MIN_FAST


def _tail_ratio(a, p, q, pc, qc) -> None:
    """``p = P(a) / Q(a)`` in place (``q`` is scratch) for the coefficient tuples ``pc`` and
    monic ``qc``; Horner with every step in place."""
    np.multiply(a, pc[0], out=p)
    p += pc[1]
    for c in pc[2:]:
        p *= a
        p += c
    np.add(a, qc[0], out=q)
    for c in qc[1:]:
        q *= a
        q += c
    p /= q


def _gelu32(y, x, b, e, p, q) -> None:
    """y = max(x, 0) - |x| Phi(-|x|), all float32 (~27 passes, no branches, no cancellation:
    x Phi(x) for x < 0 is -|x| Phi(-|x|) directly)."""
    np.multiply(x, 0.5, out=y)
    np.abs(y, out=b)
    y += b                                # max(x, 0) without overflow; NaN at -inf as PyTorch
    np.minimum(b, _TAIL_MAX / 2, out=b)
    np.multiply(b, b, out=e)
    e *= -2.0
    np.exp(e, out=e)                      # exp(-x*x/2)
    _tail_ratio(b, p, q, _TAIL_P_HALF, _TAIL_Q_HALF)
    p *= e
    p *= b                                # |x| Phi(-|x|)
    y -= p


def _gelu_backward32(gx, x, gy, a, e, p, q) -> None:
    """gx = gy * (Phi(x) + x phi(x)) in float32.  With K = Phi(-a) - a phi(a) (a = |x|) the
    derivative is K for x < 0 and 1 - K for x > 0 (both 1/2 at 0)."""
    np.abs(x, out=a)
    np.multiply(a, _INV_SQRT_2PI, out=gx)   # a / sqrt(2 pi), unclamped: NaN at +-inf as PyTorch
    np.minimum(a, _TAIL_MAX, out=a)
    np.multiply(a, a, out=e)
    e *= -0.5
    np.exp(e, out=e)
    _tail_ratio(a, p, q, _TAIL_P, _TAIL_Q)
    p -= gx
    p *= e                                  # K
    np.greater(x, 0, out=gx)                # H(x) as 0.0 / 1.0
    np.multiply(p, -2.0, out=q)
    q += 1.0
    q *= gx
    q += p                                  # K + H (1 - 2K)
    np.multiply(q, gy, out=gx)


def _phi(xp, x):
    """The standard normal CDF ``Phi(x) = erfc(-x / sqrt(2)) / 2`` in ``x``'s dtype (float64
    on NumPy: relatively accurate in the lower tail too), with the erfc of ``fabric.erfc``."""
    return 0.5 * _sf.evaluate(_sf.erfc, xp, x * -_SQRT_HALF)


def gelu(xp, x, approximate: str = "none"):
    """GELU: ``x * Phi(x)`` ('none') or the tanh approximation ('tanh').

    float32 (and float16) arrays on NumPy: ``max(x, 0) - |x| Phi(-|x|)`` with a
    float32 rational approximation of the Gaussian tail, within 5 ulp of the
    float64 value for x > -1 and ``6 + x**2 / 2`` ulp below (the float32
    rounding of ``x*x`` in ``exp(-x*x/2)``; the ``1 + erf`` form loses all
    relative precision there).  float64, and arrays of fewer than 2048
    elements: ``x * erfc(-x / sqrt(2)) / 2`` in float64.

    >>> gelu(np, np.array([0.0, 1.0])).round(4).tolist()
    [0.0, 0.8413]
    """
    xa = _up(x)
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")
    if approximate == "none" and _fast32(xp, xa):
        y = np.empty(xa.shape, xa.dtype)   # C order: _chunked writes through reshape(-1)
        _chunked(_gelu32, 4, y, np.ascontiguousarray(xa))
        return _down(y, x.dtype)
    with np.errstate(over="ignore", invalid="ignore"):   # inf inputs: PyTorch's inf / NaN, no warning
        if approximate == "tanh":
            y = xa * xa
            y *= _GELU_C
            y += 1.0
            y *= xa
            y *= _SQRT_2_OVER_PI
            y = xp.tanh(y)
            y += 1.0
            y *= xa
            y *= 0.5
        else:
            if xp is np:       # small float16 / float32 arrays: float64 erfc, rounded once
                xa = xa.astype(np.float64, copy=False)
            y = _phi(xp, xa)
            y *= xa
    return _down(y, x.dtype)


def _gelu_tanh_backward32(gx, x, gy, x2, t, v) -> None:
    """gx = gy * (0.5 (1 + t) + 0.5 x (1 - t**2) k (1 + 3 c x**2)), t = tanh(k x (1 + c x**2))."""
    np.multiply(x, x, out=x2)
    np.multiply(x2, _GELU_C * _SQRT_2_OVER_PI, out=t)
    t += _SQRT_2_OVER_PI
    t *= x
    np.tanh(t, out=t)
    np.multiply(x2, 1.5 * _GELU_C * _SQRT_2_OVER_PI, out=v)
    v += 0.5 * _SQRT_2_OVER_PI              # 0.5 k (1 + 3 c x**2)
    v *= x
    np.multiply(t, t, out=x2)
    np.subtract(1.0, x2, out=x2)
    v *= x2
    t *= 0.5
    v += t
    v += 0.5
    np.multiply(v, gy, out=gx)


def gelu_backward(xp, x, gy, approximate: str = "none"):
    """Gradient of :func:`gelu`.

    >>> gelu_backward(np, np.array([0.0]), np.array([1.0])).tolist()
    [0.5]
    """
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")
    xa, ga = _up(x), _up(gy)
    if _fast32(xp, xa) and ga.dtype == xa.dtype and ga.shape == xa.shape:
        d = np.empty(xa.shape, xa.dtype)
        kernel = _gelu_backward32 if approximate == "none" else _gelu_tanh_backward32
        _chunked(kernel, 4 if approximate == "none" else 3, d, np.ascontiguousarray(xa),
                 np.ascontiguousarray(ga))
        return _down(d, gy.dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        x2 = xa * xa
        if approximate == "tanh":
            t = xp.tanh(_SQRT_2_OVER_PI * xa * (1.0 + _GELU_C * x2))
            d = 0.5 * xa * (1.0 - t * t) * (_SQRT_2_OVER_PI * (1.0 + 3.0 * _GELU_C * x2))
            d += 0.5 * (1.0 + t)
        else:
            if xp is np:
                xa = xa.astype(np.float64, copy=False)
                x2 = xa * xa
            d = _phi(xp, xa)
            x2 *= -0.5
            d += xa * _INV_SQRT_2PI * xp.exp(x2)   # +-inf * 0 is NaN, as PyTorch
        d *= ga
    return _down(d, gy.dtype)


def _silu32(y, x, t) -> None:
    """y = x / (1 + exp(-x)): exp overflows to inf for x < -88.7 and y is -0 there (PyTorch's
    float32 value), NaN at -inf as PyTorch."""
    np.negative(x, out=t)
    np.exp(t, out=t)
    t += 1.0
    np.divide(x, t, out=y)


def _silu_backward32(gx, x, gy, e, s) -> None:
    """gx = gy * s (1 + x (1 - s)), s = 1 / (1 + e), e = exp(-x); 1 - s = e s without
    cancellation (fmin(e s, 1) is 1 where e s is inf * 0)."""
    np.negative(x, out=e)
    np.exp(e, out=e)
    np.add(e, 1.0, out=s)
    np.divide(1.0, s, out=s)
    e *= s
    np.fmin(e, 1.0, out=e)                  # 1 - s
    e *= x
    e += 1.0
    e *= s
    np.multiply(e, gy, out=gx)


def silu(xp, x):
    """SiLU (swish): ``x * sigmoid(x)``, computed as ``x / (1 + exp(-x))``.

    >>> silu(np, np.array([0.0, 1.0])).round(4).tolist()
    [0.0, 0.7311]
    """
    xa = _up(x)
    if _fast32(xp, xa):
        y = np.empty(xa.shape, xa.dtype)
        _chunked(_silu32, 1, y, np.ascontiguousarray(xa))
        return _down(y, x.dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        t = xp.exp(-xa)
        t += 1.0
        return _down(xa / t, x.dtype)


def silu_backward(xp, x, gy):
    """Gradient of :func:`silu`: ``gy * s * (1 + x * (1 - s))``, ``s = sigmoid(x)``.

    >>> silu_backward(np, np.array([0.0]), np.array([1.0])).tolist()
    [0.5]
    """
    xa, ga = _up(x), _up(gy)
    if _fast32(xp, xa) and ga.dtype == xa.dtype and ga.shape == xa.shape:
        d = np.empty(xa.shape, xa.dtype)
        _chunked(_silu_backward32, 2, d, np.ascontiguousarray(xa), np.ascontiguousarray(ga))
        return _down(d, gy.dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        e = xp.exp(-xa)
        s = 1.0 / (1.0 + e)
        e *= s
        d = xp.fmin(e, 1.0)
        d *= xa
        d += 1.0
        d *= s
        d *= ga
    return _down(d, gy.dtype)


ACTIVATIONS = ("none", "relu", "gelu", "gelu_tanh", "silu")


def _act(xp, z, act):
    if act == "none":
        return z
    if act == "relu":
        return xp.maximum(z, 0)
    if act == "gelu":
        return gelu(xp, z, "none")
    if act == "gelu_tanh":
        return gelu(xp, z, "tanh")
    if act == "silu":
        return silu(xp, z)
    raise ValueError(f"act must be one of {ACTIVATIONS}, got {act!r}")


def bias_act(xp, x, bias, act: str):
    """``act(x + bias)`` with ``bias`` added along the last dimension.

    >>> bias_act(np, np.array([[-1.0, 1.0]]), np.array([0.5, 0.5]), "relu").tolist()
    [[0.0, 1.5]]
    """
    z = _up(x) + _up(bias)
    return _down(_act(xp, z, act), x.dtype)


def bias_act_backward(xp, x, bias, gy, act: str):
    """Gradients of :func:`bias_act`: ``(gx, gbias)``.

    >>> gx, gb = bias_act_backward(np, np.array([[-1.0, 1.0]]), np.zeros(2), np.ones((1, 2)), "relu")
    >>> gx.tolist(), gb.tolist()
    ([[0.0, 1.0]], [0.0, 1.0])
    """
    z = _up(x) + _up(bias)
    ga = _up(gy)
    if act == "none":
        gz = ga
    elif act == "relu":
        gz = ga * (z > 0)
    elif act == "gelu":
        gz = gelu_backward(xp, z, ga, "none")
    elif act == "gelu_tanh":
        gz = gelu_backward(xp, z, ga, "tanh")
    elif act == "silu":
        gz = silu_backward(xp, z, ga)
    else:
        raise ValueError(f"act must be one of {ACTIVATIONS}, got {act!r}")
    return _down(gz, gy.dtype), _down(_sum_leading(xp, gz), bias.dtype)


# --------------------------------------------------------------------------
# dropout with a counter-based RNG
# --------------------------------------------------------------------------
_U32 = 0xFFFFFFFF


def dropout_threshold(p: float) -> int:
    """The uint32 threshold: an element is kept iff its random word < threshold."""
    return min(round((1.0 - p) * 2.0 ** 32), _U32)


def dropout(xp, x, p: float, seed: int, offset: int):
    """Inverted dropout with a Philox4x32-10 mask.  Returns ``(y, mask)``
    where ``mask`` is boolean and ``y = x * mask / (1 - p)``.

    Element ``i`` (in C order) is kept iff word ``i % 4`` of
    ``philox(counter=(i//4 lo, i//4 hi, offset lo, offset hi), key=(seed lo, seed hi))``
    is below :func:`dropout_threshold`, so the same ``(seed, offset)`` gives
    the same mask here and in the CUDA kernel; callers advance ``offset``
    (by one per call is enough) to get fresh masks.

    >>> y, mask = dropout(np, np.ones(8), 0.5, seed=0, offset=0)
    >>> bool(((y == 0) | (y == 2)).all() and y.sum() == 2 * mask.sum())
    True
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if p == 0.0:
        return x.copy(), xp.ones(x.shape, dtype=bool)
    if p == 1.0:
        return xp.zeros_like(x), xp.zeros(x.shape, dtype=bool)
    words = _philox_words(xp, x.size, seed, offset)
    mask = (words < np.uint32(dropout_threshold(p))).reshape(x.shape)
    scale = 1.0 / (1.0 - p)
    y = _up(x) * mask
    y *= scale
    return _down(y, x.dtype), mask


# --------------------------------------------------------------------------
# embedding backward
# --------------------------------------------------------------------------
def embedding_backward(xp, indices, gy, num_weights: int, padding_idx=None):
    """Gradient of an embedding lookup wrt the weight (``num_weights``, D):
    rows of ``gy`` (``indices.shape + (D,)``) summed per index; the
    ``padding_idx`` row (negative counts from the end) gets zero.

    >>> embedding_backward(np, np.array([1, 1, 0]), np.ones((3, 2)), 3).tolist()
    [[1.0, 1.0], [2.0, 2.0], [0.0, 0.0]]
    """
    d = gy.shape[-1]
    idx = indices.reshape(-1)
    g = _up(gy).reshape(-1, d)
    out = xp.zeros((num_weights, d), g.dtype)
    if idx.size and d:
        if xp is not np:
            xp.add.at(out, idx, g)
        elif num_weights * idx.size <= (1 << 22):
            # small vocabularies: a one-hot matmul runs in BLAS
            onehot = (xp.arange(num_weights)[:, None] == idx[None, :]).astype(g.dtype)
            out = onehot @ g
        else:
            order = xp.argsort(idx, kind="stable")
            s = idx[order]
            starts = xp.flatnonzero(xp.concatenate(([True], s[1:] != s[:-1])))
            out[s[starts]] = np.add.reduceat(g[order], starts, axis=0)
    if padding_idx is not None:
        out[padding_idx] = 0
    return _down(out, gy.dtype)


# --------------------------------------------------------------------------
# im2col / col2im, max pooling
# --------------------------------------------------------------------------
def _tuple(v, n: int) -> tuple:
    if isinstance(v, (tuple, list)):
        if len(v) != n:
            raise ValueError(f"expected {n} values, got {v!r}")
        return tuple(int(e) for e in v)
    return (int(v),) * n


def conv_output_size(size: int, k: int, s: int, p: int, d: int) -> int:
    """Output length of a convolution window along one dimension."""
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def _conv_geometry(ndim, kernel_size, stride, padding, dilation):
    """Normalise to 2-D parameters ((kh, kw), (sh, sw), (ph, pw), (dh, dw))."""
    if ndim not in (1, 2):
        raise ValueError(f"only 1-D and 2-D windows are supported, got {ndim}-D")
    k, s, p, d = (_tuple(v, ndim) for v in (kernel_size, stride, padding, dilation))
    if ndim == 1:
        k, s, p, d = (1,) + k, (1,) + s, (0,) + p, (1,) + d
    return k, s, p, d


def im2col(xp, x, kernel_size, stride=1, padding=0, dilation=1):
    """Unfold sliding windows of ``x`` (N, C, L) or (N, C, H, W) into
    ``cols`` of shape (N, C * kh * kw, L_out) - the layout of
    ``torch.nn.functional.unfold``: row ``c * kh * kw + i * kw + j`` holds
    input channel ``c`` at kernel offset ``(i, j)``, column ``oh * OW + ow``
    the output position.  Convolution is then ``weight.reshape(O, -1) @ cols``.

    >>> im2col(np, np.arange(4.0).reshape(1, 1, 4), 2).tolist()
    [[[0.0, 1.0, 2.0], [1.0, 2.0, 3.0]]]
    """
    ndim = x.ndim - 2
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = _conv_geometry(ndim, kernel_size, stride, padding, dilation)
    x4 = x[:, :, None, :] if ndim == 1 else x
    n, c, h, w = x4.shape
    oh, ow = conv_output_size(h, kh, sh, ph, dh), conv_output_size(w, kw, sw, pw, dw)
    if oh <= 0 or ow <= 0:
        raise ValueError(f"input {x.shape} is too small for kernel {kernel_size}")
    if ph or pw:
        x4 = xp.pad(x4, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    s0, s1, s2, s3 = x4.strides
    view = xp.lib.stride_tricks.as_strided(
        x4, (n, c, kh, kw, oh, ow), (s0, s1, dh * s2, dw * s3, sh * s2, sw * s3))
    return view.reshape(n, c * kh * kw, oh * ow)


def col2im(xp, cols, input_shape, kernel_size, stride=1, padding=0, dilation=1):
    """The adjoint of :func:`im2col`: sums each column entry back into the
    input position it was read from.  ``input_shape`` is (N, C, L) or (N, C, H, W).

    >>> col2im(np, np.ones((1, 2, 3)), (1, 1, 4), 2).tolist()
    [[[1.0, 2.0, 2.0, 1.0]]]
    """
    ndim = len(input_shape) - 2
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = _conv_geometry(ndim, kernel_size, stride, padding, dilation)
    n, c = input_shape[:2]
    h, w = (1, input_shape[2]) if ndim == 1 else input_shape[2:]
    oh, ow = conv_output_size(h, kh, sh, ph, dh), conv_output_size(w, kw, sw, pw, dw)
    cols6 = cols.reshape(n, c, kh, kw, oh, ow)
    xpad = xp.zeros((n, c, h + 2 * ph, w + 2 * pw), cols.dtype)
    for i in range(kh):
        for j in range(kw):
            xpad[:, :, i * dh: i * dh + sh * (oh - 1) + 1: sh,
                 j * dw: j * dw + sw * (ow - 1) + 1: sw] += cols6[:, :, i, j]
    out = xpad[:, :, ph: ph + h, pw: pw + w] if (ph or pw) else xpad
    return xp.ascontiguousarray(out).reshape(tuple(input_shape))


def pool_output_size(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """PyTorch's pooling output length (the last window must start inside the
    input or left padding when ``ceil_mode``)."""
    num = size + 2 * p - d * (k - 1) - 1
    out = (-(-num // s) if ceil_mode else num // s) + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def max_pool2d(xp, x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False):
    """2-D max pooling of ``x`` (N, C, H, W).  Returns ``(y, indices)`` where
    ``indices`` (int64) are flat positions ``h * W + w`` in each input plane,
    PyTorch's convention.  NaN wins (the last NaN of a window), ties keep the
    first maximum, and padding never wins.

    >>> y, i = max_pool2d(np, np.arange(16.0).reshape(1, 1, 4, 4), 2)
    >>> y.tolist(), i.tolist()
    ([[[[5.0, 7.0], [13.0, 15.0]]]], [[[[5, 7], [13, 15]]]])
    """
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = (
        _tuple(kernel_size, 2), _tuple(stride if stride is not None else kernel_size, 2),
        _tuple(padding, 2), _tuple(dilation, 2))
    if ph > kh // 2 or pw > kw // 2:
        raise ValueError("pad should be at most half of effective kernel size")
    n, c, h, w = x.shape
    oh = pool_output_size(h, kh, sh, ph, dh, ceil_mode)
    ow = pool_output_size(w, kw, sw, pw, dw, ceil_mode)
    if oh <= 0 or ow <= 0:
        raise ValueError(f"input {x.shape} is too small for kernel {kernel_size}")
    need_h, need_w = (oh - 1) * sh + dh * (kh - 1) + 1, (ow - 1) * sw + dw * (kw - 1) + 1
    xa = x
    if ph or pw or need_h > h + ph or need_w > w + pw:
        xa = xp.pad(x, ((0, 0), (0, 0), (ph, max(need_h - h - ph, ph)), (pw, max(need_w - w - pw, pw))),
                    constant_values=-np.inf)
    best = xp.full((n, c, oh, ow), -np.inf, x.dtype)
    kidx = xp.full((n, c, oh, ow), -1, np.int64)
    for i in range(kh):
        for j in range(kw):
            v = xa[:, :, i * dh: i * dh + sh * (oh - 1) + 1: sh, j * dw: j * dw + sw * (ow - 1) + 1: sw]
            upd = (v > best) | xp.isnan(v)
            xp.copyto(best, v, where=upd)
            xp.copyto(kidx, i * kw + j, where=upd)
    # windows holding only -inf report their first in-bounds position, as PyTorch does
    h0 = xp.arange(oh) * sh - ph
    w0 = xp.arange(ow) * sw - pw
    i0 = xp.maximum(-(h0 // dh), 0)     # first kernel row inside the input
    j0 = xp.maximum(-(w0 // dw), 0)
    first = i0[:, None] * kw + j0[None, :]
    kidx = xp.where(kidx < 0, first, kidx)
    hh = h0[:, None] + (kidx // kw) * dh
    ww = w0[None, :] + (kidx % kw) * dw
    return best, (hh * w + ww).astype(np.int64, copy=False)


def max_pool2d_backward(xp, gy, indices, input_shape):
    """Gradient of :func:`max_pool2d`: ``gy`` summed into the input positions
    named by ``indices``.

    >>> y, i = max_pool2d(np, np.arange(4.0).reshape(1, 1, 2, 2), 2)
    >>> max_pool2d_backward(np, np.ones_like(y), i, (1, 1, 2, 2)).tolist()
    [[[[0.0, 0.0], [0.0, 1.0]]]]
    """
    n, c, h, w = input_shape
    planes = n * c
    flat = indices.reshape(planes, -1) + (xp.arange(planes, dtype=np.int64) * (h * w))[:, None]
    gx = xp.bincount(flat.reshape(-1), weights=gy.reshape(-1).astype(np.float64, copy=False),
                     minlength=planes * h * w)
    return gx.astype(gy.dtype, copy=False).reshape(tuple(input_shape))


# --------------------------------------------------------------------------
# optimizer steps (in place, lists of arrays = one parameter group)
# --------------------------------------------------------------------------
_SMALL = 1 << 14   # tensors below this many elements are updated together


def _grouped(xp, tensors: list, fn) -> None:
    """Apply ``fn(*arrays)`` (in place) to each position of the parallel lists
    in ``tensors``: large tensors one by one, the small ones concatenated into
    one pass and written back (one set of ufunc calls instead of one per tensor)."""
    n = len(tensors[0])
    small = [i for i in range(n) if tensors[0][i].size < _SMALL]
    if len(small) < 2:
        small = []
    small_set = set(small)
    for i in range(n):
        if i not in small_set:
            fn(*[t[i] if t is not None else None for t in tensors])
    if small:
        flat = [None if t is None else xp.concatenate([t[i].reshape(-1) for i in small])
                for t in tensors]
        fn(*flat)
        for t, f in zip(tensors, flat):
            if t is None:
                continue
            pos = 0
            for i in small:
                a = t[i]
                a[...] = f[pos: pos + a.size].reshape(a.shape)
                pos += a.size


def sgd_step(xp, params, grads, momentum_bufs, lr: float, momentum: float = 0.0,
             dampening: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False,
             maximize: bool = False, first_step: bool = False) -> None:
    """One in-place SGD step for a parameter group, exactly
    ``torch.optim.SGD`` (single-tensor): with ``g = -grad if maximize else grad``,

        g += weight_decay * p
        buf = g if first_step else momentum * buf + (1 - dampening) * g
        g = g + momentum * buf if nesterov else buf
        p -= lr * g

    ``momentum_bufs`` (arrays shaped like the params, or None when
    ``momentum == 0``) are updated in place; ``first_step`` says that they
    hold no history yet (PyTorch's ``buf is None``).  ``grads`` are not modified.

    >>> p = [np.ones(2)]; sgd_step(np, p, [np.ones(2)], None, lr=0.5); p[0].tolist()
    [0.5, 0.5]
    """
    if not params:
        return

    def update(p, g, buf):
        g = -g if maximize else g.copy()
        if weight_decay:
            g += weight_decay * p
        if momentum:
            if first_step:
                buf[...] = g
            else:
                buf *= momentum
                buf += (1.0 - dampening) * g
            if nesterov:
                g += momentum * buf
            else:
                g = buf
        p -= lr * g

    _grouped(xp, [params, grads, momentum_bufs if momentum else None], update)


def adam_step(xp, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, step: int,
              lr: float = 1e-3, beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8,
              weight_decay: float = 0.0, amsgrad: bool = False, maximize: bool = False,
              decoupled_weight_decay: bool = False) -> None:
    """One in-place Adam (``decoupled_weight_decay=False``) or AdamW step for a
    parameter group, exactly ``torch.optim.Adam``/``AdamW`` (single-tensor).
    ``step`` is the step number after incrementing (1 on the first call); the
    bias corrections are computed here, on the host:

        p *= 1 - lr * wd                   (AdamW)    |  g += wd * p   (Adam)
        m += (1 - beta1) * (g - m);  v = beta2 * v + (1 - beta2) * g * g
        vmax = max(vmax, v)                (amsgrad; the denominator uses vmax)
        p -= lr / (1 - beta1**step) * m / (sqrt(v) / sqrt(1 - beta2**step) + eps)

    >>> p, m, v = [np.ones(1)], [np.zeros(1)], [np.zeros(1)]
    >>> adam_step(np, p, [np.ones(1)], m, v, None, step=1, lr=0.1); p[0].round(6).tolist()
    [0.9]
    """
    if not params:
        return
    bc1 = 1.0 - beta1 ** step
    bc2_sqrt = math.sqrt(1.0 - beta2 ** step)
    step_size = lr / bc1

    def update(p, g, m, v, vmax):
        g = -g if maximize else g
        if weight_decay:
            if decoupled_weight_decay:
                p *= 1.0 - lr * weight_decay
            else:
                g = g + weight_decay * p
        # one scratch buffer and in-place ufuncs: the same float32 operations
        # as the expression form, without five fresh temporaries per tensor
        t = xp.empty_like(m)  # (a ufunc result on 0-d inputs would be a scalar)
        xp.subtract(g, m, out=t)
        t *= 1.0 - beta1
        m += t
        xp.multiply(g, g, out=t)
        t *= 1.0 - beta2
        v *= beta2
        v += t
        if amsgrad:
            xp.maximum(vmax, v, out=vmax)
            xp.sqrt(vmax, out=t)
        else:
            xp.sqrt(v, out=t)
        t /= bc2_sqrt
        t += eps
        xp.divide(m, t, out=t)
        t *= step_size
        p -= t

    _grouped(xp, [params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs if amsgrad else None], update)
