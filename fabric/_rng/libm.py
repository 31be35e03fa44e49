"""Bit-exact floating point as PyTorch's CPU kernels compute it: the build
flavour being matched (FMA contraction, the AVX2 ``normal_``), FMA emulation
by error-free transformations, libm results (``log``, ``exp``, ``sin`` ...,
through 80-bit long double with a ``math`` fallback near rounding
boundaries), and the AVX2 float Box-Muller replayed in float32.  See the
package docstring for why."""
from __future__ import annotations

import ctypes
import ctypes.util
import math
import os
import platform

import numpy as np

# --------------------------------------------------------------------------
# Build flavour of the PyTorch kernels being matched
# --------------------------------------------------------------------------

_FMA = True          # a * b + c contracted to an FMA in the vectorised builds
_AVX2_NORMAL = True  # float normal_ through avx_mathfun.h rather than libm


def _cpu_has_avx2() -> bool:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = line.split()
                    return "avx2" in flags and "fma" in flags
    except OSError:
        pass
    return True


def set_kernel_flavor(capability: str) -> None:
    """Match PyTorch running with ``ATEN_CPU_CAPABILITY=capability``.

    ``"avx2"``/``"avx512"`` (the x86-64 default): fused multiply-adds and the
    AVX2 float ``normal_``.  ``"default"``: neither.  ``"fma"``: fused
    multiply-adds with the scalar float ``normal_`` (presumed aarch64 build).

    >>> previous = kernel_flavor()
    >>> set_kernel_flavor("default"); kernel_flavor()
    'default'
    >>> set_kernel_flavor(previous)
    """
    global _FMA, _AVX2_NORMAL
    cap = capability.lower()
    if cap in ("avx2", "avx512", "avx512_vnni", "avx512_bf16", "amx"):
        _FMA, _AVX2_NORMAL = True, True
    elif cap == "default":
        _FMA, _AVX2_NORMAL = False, False
    elif cap == "fma":
        _FMA, _AVX2_NORMAL = True, False
    else:
        raise ValueError(f"unknown CPU capability {capability!r}")


def kernel_flavor() -> str:
    """The flavour set by :func:`set_kernel_flavor`: ``'avx2'``,
    ``'default'`` or ``'fma'``."""
    if _AVX2_NORMAL:
        return "avx2"
    return "fma" if _FMA else "default"


def _detect_flavor() -> str:
    env = os.environ.get("ATEN_CPU_CAPABILITY", "").lower()
    if platform.machine().lower() in ("x86_64", "amd64", "x86", "i686"):
        if env == "default" or not _cpu_has_avx2():
            return "default"
        return "avx2"
    return "default" if env == "default" else "fma"


set_kernel_flavor(_detect_flavor())


# --------------------------------------------------------------------------
# Exact floating-point helpers
# --------------------------------------------------------------------------

def _two_sum_err(a, b, s):
    """The rounding error of ``s = a + b`` (exact, Knuth)."""
    bb = s - a
    return (a - (s - bb)) + (b - bb)


def _fma64(a, b, c):
    """Correctly rounded ``a * b + c`` in float64 (arrays or scalars).

    Boldo & Melquiond's emulation: exact product (Dekker), exact sum of its
    high part with ``c``, the low parts added with rounding to odd, one final
    rounding.  Exact barring overflow/underflow.
    """
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    c = np.asarray(c, np.float64)
    p = a * b
    t = 134217729.0 * a
    ah = t - (t - a)
    al = a - ah
    t = 134217729.0 * b
    bh = t - (t - b)
    bl = b - bh
    pl = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    th = c + p
    tl = _two_sum_err(c, p, th)
    v = np.asarray(tl + pl)
    err = _two_sum_err(tl, pl, v)
    bits = v.view(np.int64)
    fix = (err != 0) & ((bits & 1) == 0)
    if np.count_nonzero(fix):
        bits = np.where(fix, bits + np.where((err > 0) == (v > 0), 1, -1), bits)
        v = bits.view(np.float64)
    return th + v


def _fma32(a, b, c):
    """Correctly rounded float32 ``a * b + c`` for float32 inputs.

    The product is exact in float64; the float64 sum is rounded once more to
    float32, which can only go wrong when it lands exactly on a float32
    halfway point, so only those elements are corrected.
    """
    s = np.multiply(a, b, dtype=np.float64)
    if s.shape == np.shape(c) or np.ndim(c) == 0:
        s += c
    else:
        s = s + c
    tie = (s.view(np.int64) & 0x1FFFFFFF) == 0x10000000
    if np.count_nonzero(tie):
        tie = np.flatnonzero(tie)
        flat = s.reshape(-1)
        st = flat[tie]
        p = np.multiply(_pick(a, tie), _pick(b, tie), dtype=np.float64)
        err = _two_sum_err(p, _pick(c, tie).astype(np.float64), st)
        step = np.where(err == 0, 0, np.where((err > 0) == (st > 0), 1, -1))
        flat[tie] = (st.view(np.int64) + step).view(np.float64)
    return s.astype(np.float32)


def _pick(x, idx):
    """``x.ravel()[idx]`` for an array, ``x`` itself for a scalar."""
    if np.ndim(x) == 0:
        return np.asarray(x)
    return x.reshape(-1)[idx]


def _madd32(a, b, c):
    """float32 ``a * b + c`` as PyTorch's build computes it (fused or not)."""
    if _FMA:
        return _chunked(_fma32, a, b, c, np.float32)
    return np.asarray(a * b + c, np.float32)


def _madd64(a, b, c):
    """float64 ``a * b + c`` as PyTorch's build computes it (fused or not)."""
    if _FMA:
        return _chunked(_fma64, a, b, c, np.float64)
    return a * b + c


_CHUNK = 1 << 14


def _chunked(fn, a, b, c, dtype):
    """Elementwise ``fn(a, b, c)`` evaluated in slices of ``_CHUNK``
    elements, so that its many temporaries stay in cache (about 3x faster
    on large arrays)."""
    shape = np.broadcast_shapes(np.shape(a), np.shape(b), np.shape(c))
    size = math.prod(shape)
    if size <= 2 * _CHUNK:
        return fn(a, b, c)
    ops = [np.asarray(x) if np.ndim(x) == 0 else np.broadcast_to(x, shape).reshape(-1)
           for x in (a, b, c)]
    out = np.empty(size, dtype)
    for i in range(0, size, _CHUNK):
        out[i:i + _CHUNK] = fn(*(x if x.ndim == 0 else x[i:i + _CHUNK] for x in ops))
    return out.reshape(shape)


def _call_elementwise(fn, x, dtype=np.float64):
    """``fn`` (a scalar libm function) over ``x``; C's results for the
    arguments where Python's ``math`` raises instead (log(0) = -inf ...)."""
    flat = x.ravel().tolist()
    try:
        out = np.fromiter(map(fn, flat), dtype, len(flat))
    except (ValueError, OverflowError):
        out = np.empty(len(flat), dtype)
        with np.errstate(all="ignore"):
            for i, v in enumerate(flat):
                try:
                    out[i] = fn(v)
                except (ValueError, OverflowError):
                    out[i] = getattr(np, fn.__name__)(np.float64(v))
    return out.reshape(x.shape)


# Largest distance from a float64 rounding boundary (in ulps) at which glibc
# may still round differently from the exact value: the documented error
# bounds are 0.519 ulp (log) and 0.511 ulp (exp); the margin covers the
# 80-bit evaluation's own error (< 0.001 ulp).
_LIBM_BAND = {"log": 0.47, "exp": 0.47, "sin": 0.44, "cos": 0.44}
_LONG_DOUBLE_OK = (
    np.finfo(np.longdouble).nmant >= 63 and platform.libc_ver()[0] == "glibc"
)
_numpy_matches_libm: dict[str, bool] = {}


def _numpy_is_libm(name: str) -> bool:
    """Whether NumPy's float64 ``name`` calls libm (true for sin/cos in
    NumPy 2.x; log/exp/tan/log1p use NumPy's own SIMD code instead)."""
    ok = _numpy_matches_libm.get(name)
    if ok is None:
        probe = np.linspace(0.001, 6.283, 2039)
        ok = bool(np.array_equal(getattr(np, name)(probe),
                                 _call_elementwise(getattr(math, name), probe)))
        _numpy_matches_libm[name] = ok
    return ok


def _libm(name: str, x: np.ndarray) -> np.ndarray:
    """C's ``name(x)`` elementwise on float64, bit for bit.

    ``name`` is one of log, log1p, exp, sin, cos, tan.
    """
    fn = getattr(math, name)
    if x.size < 64:
        return _call_elementwise(fn, x)
    if name in ("sin", "cos") and _numpy_is_libm(name):
        return getattr(np, name)(x)
    band = _LIBM_BAND.get(name)
    if band is None or not _LONG_DOUBLE_OK:
        return _call_elementwise(fn, x)
    with np.errstate(all="ignore"):
        yl = getattr(np, name)(x.astype(np.longdouble))
        y = yl.astype(np.float64)
        frac = np.abs((yl - y).astype(np.float64) / np.spacing(y))
    # At a power of two the ulp below is half np.spacing: decide those by libm.
    hard = ~(frac <= band) | ((y.view(np.int64) & 0xFFFFFFFFFFFFF) == 0)
    if hard.any():
        y[hard] = _call_elementwise(fn, x[hard])
    return y


_libm_c = None


def _libm_f32(name: str, x: np.ndarray) -> np.ndarray:
    """C's float function ``name`` (``logf``, ``sinf``, ...) elementwise."""
    global _libm_c
    if _libm_c is None:
        _libm_c = ctypes.CDLL(ctypes.util.find_library("m") or None)
    fn = getattr(_libm_c, name)
    fn.restype = ctypes.c_float
    fn.argtypes = [ctypes.c_float]
    return np.fromiter(map(fn, x.ravel().tolist()), np.float32, x.size).reshape(x.shape)


def _lgamma_c():
    """libm's ``lgamma`` (CPython's ``math.lgamma`` is its own code)."""
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("m") or None)
        fn = lib.lgamma
        fn.restype = ctypes.c_double
        fn.argtypes = [ctypes.c_double]
        return fn
    except (OSError, AttributeError):
        return math.lgamma


# --------------------------------------------------------------------------
# The AVX2 float Box-Muller of PyTorch (avx_mathfun.h), replayed in float32
# --------------------------------------------------------------------------

_f32 = np.float32
_LOG_POLY = [_f32(v) for v in (
    7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1,
    1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1,
    3.3333331174e-1)]
_SQRTHF = _f32(0.707106781186547524)
_LOG_Q1 = _f32(-2.12194440e-4)
_LOG_Q2 = _f32(0.693359375)
_FOPI = _f32(1.27323954473516)
_DP1 = _f32(-0.78515625)
_DP2 = _f32(-2.4187564849853515625e-4)
_DP3 = _f32(-3.77489497744594108e-8)
_COS_POLY = [_f32(v) for v in (2.443315711809948e-5, -1.388731625493765e-3,
                               4.166664568298827e-2)]
_SIN_POLY = [_f32(v) for v in (-1.9515295891e-4, 8.3321608736e-3,
                               -1.6666654611e-1)]
_ONE = _f32(1.0)
_HALF = _f32(0.5)
_TWO_PI_F = _f32(2.0 * math.pi)


def _avx2_log(x: np.ndarray) -> np.ndarray:
    """``log256_ps`` for float32 ``x`` in (0, 1], multiply-adds fused as
    GCC compiles them."""
    bits = x.view(np.int32)
    e = ((bits >> 23) - 126).astype(np.float32)
    m = ((bits & np.int32(-0x7F800001)) | np.int32(0x3F000000)).view(np.float32)
    small = m < _SQRTHF
    e = e - small.astype(np.float32)
    x = (m - _ONE) + np.where(small, m, _f32(0))
    z = x * x
    y = _fma32(_LOG_POLY[0], x, _LOG_POLY[1])
    for p in _LOG_POLY[2:]:
        y = _fma32(y, x, p)
    y = y * x
    y = _fma32(y, z, e * _LOG_Q1)
    y = y - z * _HALF                 # z * 0.5 is exact: fusing changes nothing
    x = x + y
    return _fma32(e, _LOG_Q2, x)


def _avx2_sincos(x: np.ndarray):
    """``sincos256_ps`` for float32 ``x >= 0``; returns (sin, cos)."""
    j = (x * _FOPI).astype(np.int32)
    j = (j + 1) & ~1
    y = j.astype(np.float32)
    # y is a small even integer, so y * DP1 and y * DP2 are exact.
    x = (x + y * _DP1) + y * _DP2
    x = _fma32(y, _DP3, x)
    z = x * x
    yc = _fma32(_COS_POLY[0], z, _COS_POLY[1])
    yc = _fma32(yc, z, _COS_POLY[2])
    yc = yc * z
    yc = _fma32(yc, z, -(z * _HALF))
    yc = yc + _ONE
    ys = _fma32(_SIN_POLY[0], z, _SIN_POLY[1])
    ys = _fma32(ys, z, _SIN_POLY[2])
    ys = ys * z
    ys = _fma32(ys, x, x)
    first = (j & 2) == 0
    s = np.where(first, ys, yc)
    c = np.where(first, yc, ys)
    s = np.where((j & 4) != 0, -s, s)
    c = np.where(((j - 2) & 4) == 0, -c, c)
    return s, c
