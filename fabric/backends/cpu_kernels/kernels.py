"""numba kernels: the CPU twins of the CUDA fused set (see ``fabric/backends/fused.py`` for
each op's contract and NumPy reference).

Kernels take contiguous float32/float64 arrays (2-D ``(rows, cols)`` for the row ops, flat
for the pointwise ones), write into preallocated outputs, accumulate row sums in float64, and
run rows in parallel (``prange``).  They are compiled on first use and cached on disk
(``cache=True``); importing this module imports numba, so only
:mod:`fabric.backends.cpu_kernels.backend` does, lazily.
"""
from __future__ import annotations

from math import erfc, exp, sqrt, tanh

import numba
import numpy as np
from numba import prange

_jit = numba.njit(cache=True, nogil=True, error_model="numpy")
# Row loops are written with ``prange`` but compiled serially for now: numba's default
# threading layer here (workqueue) aborts on concurrent launches from two Python threads
# (DataParallel, data-loader threads), and the fusion, not the core count, is the win on a
# shared 2-core machine.  ``parallel=True`` with the TBB or OpenMP layer is the next lever.
_pjit = _jit

_SQRT_HALF = 0.7071067811865476
_SQRT_2_OVER_PI = 0.7978845608028654
_INV_SQRT_2PI = 0.3989422804014327
_GELU_C = 0.044715


# --- softmax backward (the softmax forward, log-softmax and cross entropy: kernels32 for float32,
# the NumPy reference for float64, whose SIMD exp beats a libm call per element) ------------
@_pjit
def softmax_bwd(y, gy, out):
    for i in prange(y.shape[0]):
        d = 0.0
        for j in range(y.shape[1]):
            d += gy[i, j] * y[i, j]
        for j in range(y.shape[1]):
            out[i, j] = (gy[i, j] - d) * y[i, j]


# --- layer / RMS norm -----------------------------------------------------------------------
@_pjit
def layer_norm_fwd(x, w, b, eps, out, mean, rstd):
    """``w``/``b`` of length 0 mean no affine weight / bias."""
    n, c = x.shape
    for i in prange(n):
        s = 0.0
        for j in range(c):
            s += x[i, j]
        mu = s / c
        v = 0.0
        for j in range(c):
            d = x[i, j] - mu
            v += d * d
        r = 1.0 / sqrt(v / c + eps)
        mean[i] = mu
        rstd[i] = r
        for j in range(c):
            y = (x[i, j] - mu) * r
            if w.shape[0]:
                y *= w[j]
            if b.shape[0]:
                y += b[j]
            out[i, j] = y


@_pjit
def layer_norm_bwd(gy, x, w, mean, rstd, gx):
    n, c = x.shape
    for i in prange(n):
        mu = float(mean[i])
        r = float(rstd[i])
        s1 = 0.0
        s2 = 0.0
        for j in range(c):
            g = gy[i, j] * w[j] if w.shape[0] else float(gy[i, j])
            s1 += g * (x[i, j] - mu) * r
            s2 += g
        c1 = s1 * r / c
        c2 = s2 * r / c
        for j in range(c):
            g = gy[i, j] * w[j] if w.shape[0] else float(gy[i, j])
            gx[i, j] = g * r - (x[i, j] - mu) * r * c1 - c2


@_jit
def norm_bwd_params(gy, x, mean, rstd, gw, gb):
    """Column sums ``gw = sum_i gy * (x - mean) * rstd`` and ``gb = sum_i gy`` (``gb`` of length 0:
    not wanted; ``mean`` of length 0: RMS norm, no centring).  Row by row into float64
    accumulators (contiguous reads; serial by design: rows in parallel would race on the sums)."""
    n, c = x.shape
    sw = np.zeros(c)
    sb = np.zeros(c)
    for i in range(n):
        mu = float(mean[i]) if mean.shape[0] else 0.0
        r = float(rstd[i])
        for j in range(c):
            g = float(gy[i, j])
            sw[j] += g * ((x[i, j] - mu) * r)
            sb[j] += g
    for j in range(c):
        gw[j] = sw[j]
        if gb.shape[0]:
            gb[j] = sb[j]


@_pjit
def rms_norm_fwd(x, w, eps, out, rstd):
    n, c = x.shape
    for i in prange(n):
        s = 0.0
        for j in range(c):
            s += x[i, j] * x[i, j]
        r = 1.0 / sqrt(s / c + eps)
        rstd[i] = r
        for j in range(c):
            y = x[i, j] * r
            if w.shape[0]:
                y *= w[j]
            out[i, j] = y


@_pjit
def rms_norm_bwd(gy, x, w, rstd, gx):
    n, c = x.shape
    for i in prange(n):
        r = float(rstd[i])
        s = 0.0
        for j in range(c):
            g = gy[i, j] * w[j] if w.shape[0] else float(gy[i, j])
            s += g * x[i, j]
        k = -(r * r * r) * s / c
        for j in range(c):
            g = gy[i, j] * w[j] if w.shape[0] else float(gy[i, j])
            gx[i, j] = x[i, j] * k + g * r


# --- activations (flat arrays) --------------------------------------------------------------
@_jit
def _gelu(x, tanh_approx):
    if tanh_approx:
        return 0.5 * x * (1.0 + tanh(_SQRT_2_OVER_PI * x * (1.0 + _GELU_C * x * x)))
    return 0.5 * x * erfc(-x * _SQRT_HALF)


@_jit
def _gelu_grad(x, tanh_approx):
    x2 = x * x
    if tanh_approx:
        t = tanh(_SQRT_2_OVER_PI * x * (1.0 + _GELU_C * x2))
        return 0.5 * x * (1.0 - t * t) * (_SQRT_2_OVER_PI * (1.0 + 3.0 * _GELU_C * x2)) + 0.5 * (1.0 + t)
    return 0.5 * erfc(-x * _SQRT_HALF) + x * _INV_SQRT_2PI * exp(-0.5 * x2)


@_jit
def _silu(x):
    return x / (1.0 + exp(-x))


@_jit
def _silu_grad(x):
    e = exp(-x)
    s = 1.0 / (1.0 + e)
    t = e * s
    if not t <= 1.0:       # inf * 0 at x = -inf: 1 - s is 1 there
        t = 1.0
    return s * (1.0 + x * t)


@_jit
def _act(z, act):
    """act: 0 none, 1 relu, 2 gelu, 3 gelu_tanh, 4 silu."""
    if act == 1:
        return z if (z > 0 or z != z) else 0.0
    if act == 2:
        return _gelu(z, False)
    if act == 3:
        return _gelu(z, True)
    if act == 4:
        return _silu(z)
    return z


@_jit
def _act_grad(z, act):
    if act == 1:
        return 1.0 if z > 0 else 0.0
    if act == 2:
        return _gelu_grad(z, False)
    if act == 3:
        return _gelu_grad(z, True)
    if act == 4:
        return _silu_grad(z)
    return 1.0


@_pjit
def act_fwd(x, act, out):
    for i in prange(x.shape[0]):
        out[i] = _act(float(x[i]), act)


@_pjit
def act_bwd(x, gy, act, out):
    for i in prange(x.shape[0]):
        out[i] = gy[i] * _act_grad(float(x[i]), act)


@_pjit
def bias_act_fwd(x, bias, act, out):
    n, c = x.shape
    for i in prange(n):
        for j in range(c):
            out[i, j] = _act(float(x[i, j]) + float(bias[j]), act)


@_pjit
def bias_act_bwd(x, bias, gy, act, gx, gb):
    n, c = x.shape
    for i in prange(n):
        for j in range(c):
            gx[i, j] = gy[i, j] * _act_grad(float(x[i, j]) + float(bias[j]), act)
    for j in prange(c):
        s = 0.0
        for i in range(n):
            s += gx[i, j]
        gb[j] = s


# --- dropout: the Philox4x32-10 stream of fused.dropout -------------------------------------
@_jit
def _philox(c0, c1, c2, c3, k0, k1):
    mask = np.uint64(0xFFFFFFFF)
    for r in range(10):
        if r:
            k0 = (k0 + np.uint64(0x9E3779B9)) & mask
            k1 = (k1 + np.uint64(0xBB67AE85)) & mask
        p0 = c0 * np.uint64(0xD2511F53)
        p1 = c2 * np.uint64(0xCD9E8D57)
        n0 = (p1 >> np.uint64(32)) ^ c1 ^ k0
        n2 = (p0 >> np.uint64(32)) ^ c3 ^ k1
        c1 = p1 & mask
        c3 = p0 & mask
        c0 = n0
        c2 = n2
    return c0, c1, c2, c3


@_pjit
def dropout_fwd(x, threshold, scale, off_lo, off_hi, k0, k1, out, keep):
    n = x.shape[0]
    groups = (n + 3) // 4
    mask = np.uint64(0xFFFFFFFF)
    for g in prange(groups):
        gg = np.uint64(g)
        w0, w1, w2, w3 = _philox(gg & mask, gg >> np.uint64(32), off_lo, off_hi, k0, k1)
        base = 4 * g
        for j in range(4):
            i = base + j
            if i < n:
                word = w0 if j == 0 else (w1 if j == 1 else (w2 if j == 2 else w3))
                k = word < threshold
                keep[i] = k
                out[i] = x[i] * scale if k else x[i] * 0
    return


# --- embedding backward, max pooling, col2im ------------------------------------------------
@_pjit
def embedding_bwd(idx, gy, out):
    """Rows of ``gy`` summed into ``out[idx]``: parallel over the embedding dimension so that
    no two threads write one element."""
    d = gy.shape[1]
    for j in prange(d):
        for k in range(idx.shape[0]):
            out[idx[k], j] += gy[k, j]


@_jit
def _max_pool2x2(x, out, ind):
    """The 2x2 stride-2 unpadded windows (every window in bounds): the general kernel's
    rule as branch-free selects over the four positions, so the row loop vectorises."""
    p_, h, w = x.shape
    oh, ow = out.shape[1], out.shape[2]
    for p in range(p_):
        for oy in range(oh):
            r0, r1 = 2 * oy, 2 * oy + 1
            for ox in range(ow):
                c0 = 2 * ox
                best = x[p, r0, c0]
                bi = r0 * w + c0
                v = x[p, r0, c0 + 1]
                take = v > best or v != v
                best = v if take else best
                bi = r0 * w + c0 + 1 if take else bi
                v = x[p, r1, c0]
                take = v > best or v != v
                best = v if take else best
                bi = r1 * w + c0 if take else bi
                v = x[p, r1, c0 + 1]
                take = v > best or v != v
                best = v if take else best
                bi = r1 * w + c0 + 1 if take else bi
                out[p, oy, ox] = best
                ind[p, oy, ox] = bi


@_pjit
def max_pool2d_fwd(x, kh, kw, sh, sw, ph, pw, dh, dw, out, ind):
    """``x`` (planes, H, W); windows that see only padding or -inf report their first
    in-bounds position; NaN wins (the last one), ties keep the first maximum."""
    p_, h, w = x.shape
    oh, ow = out.shape[1], out.shape[2]
    if (kh == 2 and kw == 2 and sh == 2 and sw == 2 and ph == 0 and pw == 0 and dh == 1 and dw == 1
            and 2 * oh <= h and 2 * ow <= w):
        _max_pool2x2(x, out, ind)
        return
    for p in prange(p_):
        for oy in range(oh):
            h0 = oy * sh - ph
            for ox in range(ow):
                w0 = ox * sw - pw
                best = -np.inf
                bi = -1
                first = -1
                for i in range(kh):
                    hh = h0 + i * dh
                    if hh < 0 or hh >= h:
                        continue
                    for j in range(kw):
                        ww = w0 + j * dw
                        if ww < 0 or ww >= w:
                            continue
                        if first < 0:
                            first = hh * w + ww
                        v = x[p, hh, ww]
                        if v > best or v != v:
                            best = v
                            bi = hh * w + ww
                out[p, oy, ox] = best
                ind[p, oy, ox] = bi if bi >= 0 else first


@_pjit
def max_pool2d_bwd(gy, ind, hw, out):
    """``out`` (planes, H*W) float64 accumulators, zeroed."""
    planes, k = gy.shape
    for p in prange(planes):
        for q in range(k):
            out[p, ind[p, q]] += gy[p, q]


@_pjit
def col2im_2d(cols, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow, out):
    """``cols`` (N, C, kh, kw, oh*ow) summed into ``out`` (N, C, H, W), zeroed; parallel over
    the (N, C) planes so every plane has one writer."""
    n, c, h, w = out.shape
    for nc in prange(n * c):
        b = nc // c
        ch = nc % c
        for i in range(kh):
            for j in range(kw):
                for oy in range(oh):
                    hh = oy * sh - ph + i * dh
                    if hh < 0 or hh >= h:
                        continue
                    for ox in range(ow):
                        ww = ox * sw - pw + j * dw
                        if 0 <= ww < w:
                            out[b, ch, hh, ww] += cols[b, ch, i, j, oy * ow + ox]


# --- optimizers (one flat parameter at a time) ----------------------------------------------
# The scalars arrive in the parameters' dtype (the backend casts them), so a float32 update is
# float32 arithmetic throughout, in the reference's operation order: the same bits as the NumPy
# twin (which rounds each Python scalar to float32 too), and a loop LLVM vectorises (float64
# scalars made every element a float64 computation with scalar sqrt and division: slower than
# NumPy's ~13 float32 SIMD passes).  The flags are loop-invariant branches LLVM unswitches.
@_jit
def sgd_update(p, g, buf, lr, momentum, one_minus_dampening, weight_decay, has_momentum, nesterov,
               maximize, first_step):
    """``buf`` of length 0 when ``momentum == 0``."""
    for i in range(p.shape[0]):
        gi = -g[i] if maximize else g[i]
        if weight_decay != 0:
            gi = gi + weight_decay * p[i]
        if has_momentum:
            if first_step:
                b = gi
            else:
                b = buf[i] * momentum + one_minus_dampening * gi
            buf[i] = b
            gi = gi + momentum * b if nesterov else b
        p[i] = p[i] - lr * gi


@_jit
def adam_update(p, g, m, v, vmax, one_minus_beta1, beta2, one_minus_beta2, eps, weight_decay, decay,
                amsgrad, maximize, decoupled, step_size, bc2_sqrt):
    """``vmax`` of length 0 unless ``amsgrad``; ``decay = 1 - lr * weight_decay`` (AdamW)."""
    for i in range(p.shape[0]):
        gi = -g[i] if maximize else g[i]
        pi = p[i]
        if weight_decay != 0:
            if decoupled:
                pi = pi * decay
            else:
                gi = gi + weight_decay * pi
        mi = m[i] + (gi - m[i]) * one_minus_beta1
        vi = v[i] * beta2 + (gi * gi) * one_minus_beta2
        m[i] = mi
        v[i] = vi
        if amsgrad:
            if vi > vmax[i] or vi != vi:   # NaN in either propagates, as np.maximum
                vmax[i] = vi
            vi = vmax[i]
        p[i] = pi - (mi / (sqrt(vi) / bc2_sqrt + eps)) * step_size


# --- the CPU generator's mt19937 stream: bernoulli masks in compiled code --------------------
# Bit for bit NumPy's MT19937 (the engine behind fabric's PyTorch-exact CPU generator): the
# reference twist and tempering, words drawn from ``key[pos:]`` and a twist whenever pos
# reaches 624.  Both twist loops and the tempering vectorise (the recurrence reads words 1 and
# 397 ahead, or 227 behind).
_U32 = np.uint64(0xFFFFFFFF)
_UPPER, _LOWER, _MATRIX = np.uint64(0x80000000), np.uint64(0x7FFFFFFF), np.uint64(0x9908B0DF)
_ONE_U, _SHIFT_1 = np.uint64(1), np.uint64(1)


@_jit
def _mt_twist(mt):
    for i in range(227):
        y = (np.uint64(mt[i]) & _UPPER) | (np.uint64(mt[i + 1]) & _LOWER)
        mt[i] = np.uint64(mt[i + 397]) ^ (y >> _SHIFT_1) ^ ((y & _ONE_U) * _MATRIX)
    for i in range(227, 623):
        y = (np.uint64(mt[i]) & _UPPER) | (np.uint64(mt[i + 1]) & _LOWER)
        mt[i] = np.uint64(mt[i - 227]) ^ (y >> _SHIFT_1) ^ ((y & _ONE_U) * _MATRIX)
    y = (np.uint64(mt[623]) & _UPPER) | (np.uint64(mt[0]) & _LOWER)
    mt[623] = np.uint64(mt[396]) ^ (y >> _SHIFT_1) ^ ((y & _ONE_U) * _MATRIX)


@_jit
def mt19937_words(key, pos, out):
    """Fill ``out`` (uint32) with the next tempered words of the state ``(key, pos)``; ``key``
    is advanced in place and the new ``pos`` returned."""
    n = out.shape[0]
    k = 0
    while k < n:
        if pos == 624:
            _mt_twist(key)
            pos = 0
        m = min(624 - pos, n - k)
        for j in range(m):
            y = np.uint64(key[pos + j])
            y ^= y >> np.uint64(11)
            y ^= (y << np.uint64(7)) & np.uint64(0x9D2C5680)
            y ^= (y << np.uint64(15)) & np.uint64(0xEFC60000)
            y ^= y >> np.uint64(18)
            out[k + j] = y & _U32
        pos += m
        k += m
    return pos


@_jit
def mt19937_bernoulli53(key, pos, threshold, out):
    """``out[i] = 1`` where the i-th 53-bit uniform (two words, the first one's low 21 bits
    high) is below ``threshold / 2**53``, else 0: ``(uniform53(n) < p).astype(out.dtype)``
    with ``threshold = p * 2**53`` (exact: a power-of-two scaling).  Returns the new pos."""
    n = out.shape[0]
    words = np.empty(2 * n, np.uint32)
    pos = mt19937_words(key, pos, words)
    for i in range(n):
        v = ((np.uint64(words[2 * i]) & np.uint64(0x1FFFFF)) << np.uint64(32)) | np.uint64(words[2 * i + 1])
        out[i] = 1 if np.float64(v) < threshold else 0
    return pos
