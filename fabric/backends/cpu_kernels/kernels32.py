"""float32 numba kernels whose loops LLVM vectorises: the transcendental ops (GELU, SiLU, the
softmax family) in float32 arithmetic with an exp that is plain arithmetic.

Why a second set: numba compiles ``math.exp``/``erfc`` to one libm call per element, which no
loop vectoriser can widen, so the float64-per-element kernels of :mod:`.kernels` ran 2-3x
*slower* than the NumPy reference's float32 SIMD passes (GELU forward 13.3 vs 4.5 ms on a
GPT-sized 1M-element tensor, CPU time).  :func:`exp32` is Cephes' ``expf`` (Cody-Waite range
reduction, a degree-7 polynomial, within 2 ulp; denormal results flushed to 0) with ``2**n``
built from its bits, so a loop over it compiles to SIMD code.  The formulas are the NumPy
twins' (``fused._gelu32`` etc.), op for op, so the two paths differ only by ``exp``'s last
bits.  Row sums accumulate in float64 (``fastmath={"reassoc"}`` on the reductions only, so
that they vectorise too).

Like :mod:`.kernels`, importing this module imports numba; only the backend does, lazily.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import types
from numba.extending import intrinsic

from ..fused import _INV_SQRT_2PI, _TAIL_MAX, _TAIL_P, _TAIL_P_HALF, _TAIL_Q, _TAIL_Q_HALF

_jit = numba.njit(cache=True, nogil=True, error_model="numpy")
_jit_sum = numba.njit(cache=True, nogil=True, error_model="numpy", fastmath={"reassoc"})
# the scalar helpers are inlined into the calling loop at numba's level: left to LLVM's inliner,
# a loop calling them several times kept the calls and ran scalar (measured 7x slower)
_jit_inline = numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")

F32 = np.float32


@intrinsic
def _bits_to_f32(typingctx, bits):
    """The float32 whose IEEE bits are the int32 ``bits`` (a register bitcast)."""
    sig = types.float32(types.int32)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float32))

    return sig, codegen


_LOG2E, _LN2_HI, _LN2_LO = F32(1.4426950408889634), F32(0.693359375), F32(-2.12194440e-4)
_E0, _E1, _E2, _E3, _E4, _E5 = (F32(c) for c in (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3,
                                                  4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1))
# Below _EXP_LO the result would be denormal: flushed to 0 instead (denormal arithmetic takes
# microcode assists on x86: a causal-masked softmax, rows half -inf, ran 3x slower with them).
# Above _EXP_HI the result overflows to inf.
_EXP_LO, _EXP_HI = F32(-87.33), F32(89.0)
_ZERO, _HALF, _ONE, _TWO = F32(0.0), F32(0.5), F32(1.0), F32(2.0)


@_jit_inline
def exp32(x):
    """``exp(x)`` for float32 ``x`` in float32 arithmetic: NaN, +-inf as ``np.exp``, results
    below the smallest normal float32 (x < -87.33) flushed to 0.  ``2**n`` is applied as two
    factors so that both stay normal numbers up to the overflow."""
    xc = x if x > _EXP_LO else _EXP_LO
    xc = xc if xc < _EXP_HI else _EXP_HI
    n = np.floor(xc * _LOG2E + _HALF)
    r = xc - n * _LN2_HI
    r = r - n * _LN2_LO
    p = ((((_E0 * r + _E1) * r + _E2) * r + _E3) * r + _E4) * r + _E5
    p = p * (r * r) + r + _ONE
    k = np.int32(n)
    k1 = k >> 1
    e = p * _bits_to_f32((k1 + 127) << 23) * _bits_to_f32((k - k1 + 127) << 23)  # pyright: ignore[reportCallIssue]  (an intrinsic: typingctx is numba's)
    e = e if x >= _EXP_LO else _ZERO
    return e if x == x else x


_P = tuple(F32(c) for c in _TAIL_P)
_Q = tuple(F32(c) for c in _TAIL_Q)
_PH = tuple(F32(c) for c in _TAIL_P_HALF)
_QH = tuple(F32(c) for c in _TAIL_Q_HALF)
_TAIL_MAX32, _TAIL_MAX_HALF32 = F32(_TAIL_MAX), F32(_TAIL_MAX / 2)
_INV_SQRT_2PI32 = F32(_INV_SQRT_2PI)


@_jit_inline
def _ratio(a, p0, p1, p2, p3, p4, q0, q1, q2, q3, q4):
    """``P(a) / Q(a)``, P of degree 4 and Q monic of degree 5, Horner as ``fused._tail_ratio``."""
    p = (((a * p0 + p1) * a + p2) * a + p3) * a + p4
    q = ((((a + q0) * a + q1) * a + q2) * a + q3) * a + q4
    return p / q


# --- activations (flat arrays) ------------------------------------------------------------
@_jit
def gelu_fwd(x, out):
    """``max(x, 0) - |x| Phi(-|x|)``: ``fused._gelu32`` element by element."""
    for i in range(x.shape[0]):
        y = x[i] * _HALF
        b = abs(y)
        y = y + b
        b = b if b < _TAIL_MAX_HALF32 else _TAIL_MAX_HALF32
        e = exp32((b * b) * F32(-2.0))
        p = _ratio(b, _PH[0], _PH[1], _PH[2], _PH[3], _PH[4], _QH[0], _QH[1], _QH[2], _QH[3], _QH[4])
        out[i] = y - (p * e) * b


@_jit
def gelu_bwd(x, gy, out):
    """``gy * (K + H(x) (1 - 2K))``, ``K = Phi(-a) - a phi(a)``: ``fused._gelu_backward32``."""
    for i in range(x.shape[0]):
        a = abs(x[i])
        g = a * _INV_SQRT_2PI32
        a = a if a < _TAIL_MAX32 else _TAIL_MAX32
        e = exp32((a * a) * F32(-0.5))
        p = _ratio(a, _P[0], _P[1], _P[2], _P[3], _P[4], _Q[0], _Q[1], _Q[2], _Q[3], _Q[4])
        k = (p - g) * e
        h = _ONE if x[i] > _ZERO else _ZERO
        out[i] = ((k * F32(-2.0) + _ONE) * h + k) * gy[i]


@_jit
def silu_fwd(x, out):
    """``x / (1 + exp(-x))`` (-0 where exp overflows, as the reference)."""
    for i in range(x.shape[0]):
        out[i] = x[i] / (exp32(-x[i]) + _ONE)


@_jit
def silu_bwd(x, gy, out):
    """``gy * s (1 + x min(e s, 1))``, ``e = exp(-x)``, ``s = 1 / (1 + e)``."""
    for i in range(x.shape[0]):
        e = exp32(-x[i])
        s = _ONE / (e + _ONE)
        t = e * s
        t = t if t <= _ONE else _ONE
        out[i] = ((x[i] * t + _ONE) * s) * gy[i]


# --- row kernels (2-D C-contiguous (rows, cols)): separate max / exp / sum / scale passes, each
# a vector loop (one fused exp-and-sum loop measured slower: the float64 sum held the exp back) -
@_jit
def _row_max(x, i):
    """The row's maximum, NaN when the row starts with NaN (any other NaN reaches the output
    through ``exp(x - m)`` anyway)."""
    m = x[i, 0]
    for j in range(x.shape[1]):
        v = x[i, j]
        m = v if v > m else m
    return m


@_jit_sum
def _row_sum(x, i):
    s = 0.0
    for j in range(x.shape[1]):
        s += x[i, j]
    return s


@_jit
def _exp_shifted(x, i, m, out, k):
    """``out[k, j] = exp(x[i, j] - m)``."""
    for j in range(x.shape[1]):
        out[k, j] = exp32(x[i, j] - m)


@_jit
def softmax_fwd(x, out):
    for i in range(x.shape[0]):
        _exp_shifted(x, i, _row_max(x, i), out, i)
        inv = F32(1.0 / _row_sum(out, i))
        for j in range(x.shape[1]):
            out[i, j] = out[i, j] * inv


@_jit
def safe_softmax_inplace(s):
    """Softmax of each row of ``s`` in place; a row of all -inf gives zeros."""
    for i in range(s.shape[0]):
        m = _row_max(s, i)
        if m == -np.inf:
            m = _ZERO
        for j in range(s.shape[1]):     # in place: not _exp_shifted, whose alias check fails here
            s[i, j] = exp32(s[i, j] - m)
        t = _row_sum(s, i)
        inv = F32(1.0 / t) if t != 0.0 else _ONE
        for j in range(s.shape[1]):
            s[i, j] = s[i, j] * inv


@_jit
def log_softmax_fwd(x, out):
    for i in range(x.shape[0]):
        m = _row_max(x, i)
        _exp_shifted(x, i, m, out, i)
        ls = F32(np.log(_row_sum(out, i)))
        for j in range(x.shape[1]):
            out[i, j] = (x[i, j] - m) - ls


@_jit_sum
def softmax_bwd(y, gy, out):
    for i in range(y.shape[0]):
        d = 0.0
        for j in range(y.shape[1]):
            d += gy[i, j] * y[i, j]
        d32 = F32(d)
        for j in range(y.shape[1]):
            out[i, j] = (gy[i, j] - d32) * y[i, j]


@_jit
def log_softmax_bwd(y, gy, out):
    for i in range(y.shape[0]):
        s = F32(_row_sum(gy, i))
        for j in range(y.shape[1]):
            out[i, j] = gy[i, j] - exp32(y[i, j]) * s


# --- cross entropy (the contract of kernels.cross_entropy_fwd/bwd) --------------------------
@_jit_sum
def _weighted_row_sum(x, i, m, w):
    zs = 0.0
    for j in range(x.shape[1]):
        zs += w[j] * (x[i, j] - m)
    return zs


@_jit
def cross_entropy_fwd(x, target, w, ignore_index, eps, loss, lse):
    n, c = x.shape
    wsum = 0.0
    for j in range(c):
        wsum += w[j]
    row = np.empty((1, c), np.float32)
    for i in range(n):
        m = _row_max(x, i)
        _exp_shifted(x, i, m, row, 0)
        ls = np.log(_row_sum(row, 0))
        lse[i] = ls
        t = target[i]
        if t == ignore_index:
            loss[i] = 0.0
        elif t < 0 or t >= c:
            loss[i] = np.nan
        else:
            li = (ls - (x[i, t] - m)) * w[t]
            if eps != 0.0:
                li = li * (1.0 - eps) + (eps / c) * (wsum * ls - _weighted_row_sum(x, i, m, w))
            loss[i] = li


@_jit
def cross_entropy_bwd(x, lse, target, w, ignore_index, eps, g_loss, out):
    n, c = x.shape
    wsum = 0.0
    for j in range(c):
        wsum += w[j]
    for i in range(n):
        t = target[i]
        if t == ignore_index:
            for j in range(c):
                out[i, j] = _ZERO
            continue
        g = float(g_loss[i])
        valid = 0 <= t < c
        wt = w[t] if valid else 1.0
        a = F32(g * ((1.0 - eps) * wt + eps * wsum / c))
        m = _row_max(x, i)
        ls = lse[i]
        for j in range(c):
            out[i, j] = a * exp32((x[i, j] - m) - ls)
        if eps != 0.0:
            ge = F32(g * (eps / c))
            for j in range(c):
                out[i, j] = out[i, j] - ge * w[j]
        if valid:
            out[i, t] = out[i, t] - F32(g * (1.0 - eps) * wt)


# --- layer norm (statistics in float64, the normalisation in float32) -----------------------
@_jit_sum
def _row_var(x, i, mu):
    v = 0.0
    for j in range(x.shape[1]):
        d = x[i, j] - mu
        v += d * d
    return v


@_jit
def layer_norm_fwd(x, w, b, eps, out, mean, rstd):
    """``w``/``b`` of length 0 mean no affine weight / bias."""
    n, c = x.shape
    for i in range(n):
        mu = _row_sum(x, i) / c
        r = 1.0 / np.sqrt(_row_var(x, i, mu) / c + eps)
        mean[i] = mu
        rstd[i] = r
        mu32, r32 = F32(mu), F32(r)
        if w.shape[0] and b.shape[0]:
            for j in range(c):
                out[i, j] = ((x[i, j] - mu32) * r32) * w[j] + b[j]
        elif w.shape[0]:
            for j in range(c):
                out[i, j] = ((x[i, j] - mu32) * r32) * w[j]
        elif b.shape[0]:
            for j in range(c):
                out[i, j] = ((x[i, j] - mu32) * r32) + b[j]
        else:
            for j in range(c):
                out[i, j] = (x[i, j] - mu32) * r32


@_jit_sum
def layer_norm_bwd(gy, x, w, mean, rstd, gx):
    n, c = x.shape
    for i in range(n):
        mu = F32(mean[i])
        r = F32(rstd[i])
        s1 = 0.0
        s2 = 0.0
        if w.shape[0]:
            for j in range(c):
                g = gy[i, j] * w[j]
                s1 += g * (x[i, j] - mu)
                s2 += g
        else:
            for j in range(c):
                g = gy[i, j]
                s1 += g * (x[i, j] - mu)
                s2 += g
        c1 = F32(s1 * r * r / c)
        c2 = F32(s2 * r / c)
        if w.shape[0]:
            for j in range(c):
                gx[i, j] = (gy[i, j] * w[j]) * r - (x[i, j] - mu) * r * c1 - c2
        else:
            for j in range(c):
                gx[i, j] = gy[i, j] * r - (x[i, j] - mu) * r * c1 - c2
