"""The numba kernel of :mod:`fabric._rng.normal_kernel` (importing this module imports numba):
PyTorch's AVX2 float Box-Muller, element by element, bit-identical to ``mt19937._box_muller16_f32``."""
from __future__ import annotations

import numba
import numpy as np

from . import libm

# float32 constants (numba freezes module globals; np.float32 ones stay float32)
p0, p1, p2, p3, p4, p5, p6, p7, p8 = libm._LOG_POLY
sqrthf, q1, q2 = libm._SQRTHF, libm._LOG_Q1, libm._LOG_Q2
fopi, dp1, dp2, dp3 = libm._FOPI, libm._DP1, libm._DP2, libm._DP3
c0, c1, c2 = libm._COS_POLY
s0, s1, s2 = libm._SIN_POLY
one, half, zero, minus_two = np.float32(1.0), np.float32(0.5), np.float32(0.0), np.float32(-2.0)
two_pi = libm._TWO_PI_F

@numba.njit(inline="always", cache=True)
def fma32(a, b, c, d64, i64):
    """``libm._fma32`` of float32 scalars: ``a * b`` is exact in float64; the float64 sum
    rounded again to float32 is wrong only on a float32 halfway point, where the float64
    rounding error decides the direction."""
    p = np.float64(a) * np.float64(b)
    cc = np.float64(c)
    s = p + cc
    d64[0] = s
    bits = i64[0]
    if (bits & 0x1FFFFFFF) == 0x10000000:
        bb = s - p
        err = (p - (s - bb)) + (cc - bb)
        if err != 0:
            i64[0] = bits + (1 if (err > 0) == (s > 0) else -1)
            s = d64[0]
    return np.float32(s)

@numba.njit(inline="always", cache=True)
def log_ps(x, d64, i64, f32buf, i32buf):
    """``libm._avx2_log`` of one float32 (bits read through the one-element buffers)."""
    f32buf[0] = x
    bits = i32buf[0]
    e = np.float32((bits >> 23) - 126)
    i32buf[0] = (bits & np.int32(-0x7F800001)) | np.int32(0x3F000000)
    m = f32buf[0]
    small = m < sqrthf
    if small:
        e = e - one
    x = (m - one) + (m if small else zero)
    z = x * x
    y = fma32(p0, x, p1, d64, i64)
    y = fma32(y, x, p2, d64, i64)
    y = fma32(y, x, p3, d64, i64)
    y = fma32(y, x, p4, d64, i64)
    y = fma32(y, x, p5, d64, i64)
    y = fma32(y, x, p6, d64, i64)
    y = fma32(y, x, p7, d64, i64)
    y = fma32(y, x, p8, d64, i64)
    y = y * x
    y = fma32(y, z, e * q1, d64, i64)
    y = y - z * half
    x = x + y
    return fma32(e, q2, x, d64, i64)

@numba.njit(inline="always", cache=True)
def sincos_ps(x, d64, i64):
    """``libm._avx2_sincos`` of one float32: (sin, cos)."""
    j = np.int32(x * fopi)
    j = (j + 1) & ~1
    y = np.float32(j)
    x = (x + y * dp1) + y * dp2
    x = fma32(y, dp3, x, d64, i64)
    z = x * x
    yc = fma32(c0, z, c1, d64, i64)
    yc = fma32(yc, z, c2, d64, i64)
    yc = yc * z
    yc = fma32(yc, z, -(z * half), d64, i64)
    yc = yc + one
    ys = fma32(s0, z, s1, d64, i64)
    ys = fma32(ys, z, s2, d64, i64)
    ys = ys * z
    ys = fma32(ys, x, x, d64, i64)
    if (j & 2) == 0:
        s, c = ys, yc
    else:
        s, c = yc, ys
    if (j & 4) != 0:
        s = -s
    if ((j - 2) & 4) == 0:
        c = -c
    return s, c

@numba.njit(cache=True)
def box_muller16_f32(u, mean, std):
    """``mt19937._box_muller16_f32`` (AVX2 flavour) of float32 uniforms ``(rows, 16)``."""
    d64 = np.empty(1, np.float64)
    i64 = d64.view(np.int64)
    f32buf = np.empty(1, np.float32)
    i32buf = f32buf.view(np.int32)
    out = np.empty(u.shape, np.float32)
    plain = mean == 0.0 and std == 1.0
    m32 = np.float32(mean)
    s32 = np.float32(std)
    for r in range(u.shape[0]):
        for k in range(8):
            radius = np.sqrt(minus_two * log_ps(one - u[r, k], d64, i64, f32buf, i32buf))
            s, c = sincos_ps(two_pi * u[r, 8 + k], d64, i64)
            lo = radius * c
            hi = radius * s
            if plain:  # fma(x, 1, 0): -0 becomes +0
                out[r, k] = lo + zero
                out[r, 8 + k] = hi + zero
            else:
                out[r, k] = fma32(lo, s32, m32, d64, i64)
                out[r, 8 + k] = fma32(hi, s32, m32, d64, i64)
    return out

