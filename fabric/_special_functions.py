"""Special functions on NumPy / CuPy arrays: one home for each numeric routine.

erf, erfc, erfinv, erfcx, lgamma, digamma, polygamma and the Hurwitz zeta
function, written once against ``xp`` (NumPy or CuPy) in float64, with their
measured accuracy.  The CPU reference ops (``fabric.erf`` ...), the backends'
reference twins (``backends/fused.py``: GELU's normal CDF) and
``fabric.special`` all evaluate these, so they cannot disagree.  This module
sits below the backends: it imports only NumPy.

Example::

    >>> import numpy as np
    >>> from fabric import _special_functions as sf
    >>> sf.evaluate(sf.erf, np, np.array([0.0, 1.0], np.float32)).tolist()
    [0.0, 0.8427007794380188]
"""
from __future__ import annotations

import math

import numpy as np

_SQRT_PI = math.sqrt(math.pi)
_2_OVER_SQRT_PI = 2.0 / _SQRT_PI

try:  # NumPy keeps its floating-point error state in a context variable
    from numpy._core._ufunc_config import _extobj_contextvar as _NP_ERRSTATE

    with np.errstate(all="ignore"):
        _NP_QUIET = _NP_ERRSTATE.get()
except ImportError:  # pragma: no cover - other NumPy layouts
    _NP_ERRSTATE = None


class quiet:
    """Silence NumPy's divide/overflow/invalid warnings: PyTorch returns
    inf/nan quietly.  Setting NumPy's context variable directly costs a
    fraction of ``np.errstate`` (this wraps every float forward)."""

    __slots__ = ("token",)

    def __enter__(self):
        if _NP_ERRSTATE is not None:
            self.token = _NP_ERRSTATE.set(_NP_QUIET)
        else:  # pragma: no cover
            self.token = np.errstate(all="ignore")
            self.token.__enter__()

    def __exit__(self, *exc):
        if _NP_ERRSTATE is not None:
            _NP_ERRSTATE.reset(self.token)
        else:  # pragma: no cover
            self.token.__exit__(*exc)


# Bernoulli numbers B2, B4, ..., B18 feed the asymptotic series of lgamma,
# digamma and the Euler-Maclaurin tail of the Hurwitz zeta function.
_BERNOULLI = ((1, 6), (-1, 30), (1, 42), (-1, 30), (5, 66), (-691, 2730), (7, 6), (-3617, 510), (43867, 798))
_CHUNK = 16384  # elements per chunk: the kernels' temporaries stay in cache


def horner(z, coeffs):
    """``coeffs[0] * z**n + ... + coeffs[n]`` (highest degree first), in place."""
    r = z * coeffs[0]
    r += coeffs[1]
    for c in coeffs[2:]:
        r *= z
        r += c
    return r


def evaluate(kernel, xp, x, *args):
    """Evaluate a float64 kernel ``kernel(xp, x64, *args)`` and return the
    result in ``x``'s dtype.  Large NumPy arrays go in cache-sized chunks:
    the kernels chain dozens of elementwise steps, which then run from cache
    instead of memory (about 2x faster)."""
    x64 = x if x.dtype == np.float64 else x.astype(np.float64)
    if xp is np and x64.size > 2 * _CHUNK:
        flat = x64.reshape(-1)
        y = np.empty(flat.size)
        for i in range(0, flat.size, _CHUNK):
            y[i:i + _CHUNK] = kernel(np, flat[i:i + _CHUNK], *args)
        y = y.reshape(x.shape)
    else:
        y = kernel(xp, x64, *args)
    return y if x.dtype == np.float64 else xp.asarray(y).astype(x.dtype)


# erf for |x| < 0.5: Taylor series, 13 terms (relative error < 1e-16 there).
_ERF_TAYLOR = [_2_OVER_SQRT_PI * (-1) ** n / (math.factorial(n) * (2 * n + 1)) for n in range(13)][::-1]
# erfcx(x) = exp(x**2) erfc(x) for x >= 0.5: with u = 1 / (x + 3) and
# s = 1 - 7 u (s in (-1, 1]), (x + 3) erfcx(x) is a smooth function of s;
# these are the power-basis coefficients of its degree-20 Chebyshev
# interpolant (computed with mpmath at 40 digits; max relative error 5.6e-16
# on [0.5, 1e6], checked against mpmath).
_ERFCX_POLY = (
    -6.977263665909366e-10, -1.9637173334189254e-10, 7.879777426381315e-09, 3.922774913077425e-09,
    -5.784388772598018e-08, -4.038972757420314e-08, 4.072439693611071e-07, 2.7837314549268073e-07,
    -3.1784594382919136e-06, -6.859804598846953e-07, 2.7642608347424635e-05, -2.5286239680650586e-05,
    -0.0002315272343458437, 0.0007631143458009388, 0.000575279899673889, -0.012338549338262115,
    0.05413190824975311, -0.15596654978034075, 0.3460562090899456, -0.6277955952806208,
    0.9589962033754297,
)


def _exp_neg_square(xp, a):
    """``exp(-a**2)`` to about 1 ulp: ``a = hi + lo`` with ``hi * hi`` exact,
    so the large exponent carries no rounding error."""
    a = xp.minimum(xp.abs(a), 30.0)
    hi = xp.floor(a * 4096.0) * (1.0 / 4096.0)
    lo = a - hi
    return xp.exp(-hi * hi) * xp.exp(-(2.0 * hi + lo) * lo)


def erf_erfc(xp, x):
    """``(erf(x), erfc(x))`` in float64.

    |x| < 0.5: Taylor series of erf.  |x| >= 0.5: erfc(|x|) =
    exp(-x**2) * erfcx(|x|) with erfcx from the polynomial above; erf = 1 -
    erfc.  Measured against mpmath on 5000 points in [-27, 27] plus tiny
    values: max relative error 6.4e-16 (erf), 6.8e-16 (erfc).
    """
    a = xp.abs(x)
    small = a < 0.5
    e_small = horner(x * x, _ERF_TAYLOR)
    e_small *= x
    u = 1.0 / (a + 3.0)
    c = horner(1.0 - 7.0 * u, _ERFCX_POLY)
    c *= u
    c *= _exp_neg_square(xp, a)
    erf = xp.where(small, e_small, xp.copysign(1.0 - c, x))
    erfc = xp.where(small, 1.0 - e_small, xp.where(x < 0, 2.0 - c, c))
    return erf, erfc


def erf(xp, x):
    return erf_erfc(xp, x)[0]


def erfc(xp, x):
    return erf_erfc(xp, x)[1]


def erfinv(xp, y):
    """Inverse error function: Winitzki's closed-form guess (relative error
    ~2e-3), then two Halley steps on erf(x) = |y| (on erfc(x) = 1 - |y| in
    the tails, where 1 - |y| is exact).  Max relative error vs mpmath 1.8e-15
    on [-1, 1] incl. 1 - 1e-16."""
    a = xp.abs(y)
    w = -xp.log1p(-a * a)
    b = 2.0 / (math.pi * 0.147) - w / 2.0
    e = w / 0.147
    r = xp.sqrt(b * b + e)
    x = xp.sqrt(xp.where(b >= 0, e / (r + b), r - b))  # sqrt(r - b) without cancellation
    for _ in range(2):
        erf, erfc = erf_erfc(xp, x)
        f = xp.where(a <= 0.5, erf - a, (1.0 - a) - erfc)
        u = f / (_2_OVER_SQRT_PI * _exp_neg_square(xp, x))
        x = x - u / (1.0 + x * u)  # Halley: f'' = -2 x f'
    x = xp.where(a < 1, x, xp.where(a == 1, math.inf, math.nan))
    return xp.copysign(x, y)


# Stirling series of lgamma: B_2k / (2k (2k - 1)), k = 1..7 (highest first).
_LGAMMA_SERIES = [n / d / ((2 * k + 2) * (2 * k + 1)) for k, (n, d) in enumerate(_BERNOULLI[:7])][::-1]
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def lgamma(xp, x):
    """log|Gamma(x)|: Stirling's series at z >= 10 (truncation error < 1e-17),
    z < 10 shifted up by 10 with the recurrence, reflection for x < 0.
    Measured against mpmath: relative error <= 1e-13 (away from the zeros
    at 1 and 2, where the absolute error is <= 4e-15); +inf at 0 and the
    negative integers."""
    neg = x < 0
    z = xp.where(neg, 1.0 - x, x)
    small = z < 10
    prod = z
    for k in range(1, 10):
        prod = prod * (z + k)
    zs = xp.where(small, z + 10.0, z)
    r = 1.0 / zs
    st = (zs - 0.5) * xp.log(zs) - zs + _HALF_LOG_2PI + r * horner(r * r, _LGAMMA_SERIES)
    res = xp.where(small, st - xp.log(xp.abs(prod)), st)
    sin_pi_x = xp.abs(xp.sin(math.pi * (x - xp.round(x))))  # exact argument reduction
    out = xp.where(neg, (math.log(math.pi) - res) - xp.log(sin_pi_x), res)
    return xp.where(xp.isinf(x), math.inf, out)


# Asymptotic series of digamma: B_2k / (2k), k = 1..7 (highest first).
_PSI_SERIES = [n / d / (2 * k + 2) for k, (n, d) in enumerate(_BERNOULLI[:7])][::-1]


def digamma(xp, x):
    """digamma: asymptotic series at z >= 10, the recurrence below, the
    reflection formula for x < 0.  Relative error vs mpmath <= 8e-15 (away
    from the zero at 1.4616, absolute error <= 1.2e-15 there).  As PyTorch:
    -inf at 0, +inf at -0.0, nan at negative integers."""
    neg = x < 0
    z = xp.where(neg, 1.0 - x, x)
    small = z < 10
    acc = 1.0 / z
    for k in range(1, 10):
        acc = acc + 1.0 / (z + k)
    zs = xp.where(small, z + 10.0, z)
    r2 = 1.0 / (zs * zs)
    asym = xp.log(zs) - 0.5 / zs - r2 * horner(r2, _PSI_SERIES)
    res = xp.where(small, asym - acc, asym)
    n = xp.round(x)
    refl = res - math.pi / xp.tan(math.pi * (x - n))
    return xp.where(neg, xp.where(x == n, math.nan, refl), res)


def _cot_derivative_poly(n):
    """Integer coefficients (highest first) of P_n with
    d^n/dx^n cot(pi x) = pi**n P_n(cot(pi x)): P_0 = c, P_k+1 = -(1 + c**2) P_k'."""
    p = [0, 1]  # lowest degree first
    for _ in range(n):
        d = [k * a for k, a in enumerate(p)][1:] or [0]
        p = [0] * (len(d) + 2)
        for k, a in enumerate(d):
            p[k] -= a
            p[k + 2] -= a
    return p[::-1]


def polygamma(xp, x, n):
    """The n-th derivative of digamma: (-1)**(n+1) n! zeta(n+1, x) for
    x >= 0; for x < 0 the reflection formula
    psi_n(x) = (-1)**(n+1) ((-1)**n pi d^n/dx^n cot(pi x) - psi_n(1 - x))."""
    if n == 0:
        return digamma(xp, x)
    neg = x < 0
    q = xp.where(neg, 1.0 - x, xp.abs(x))  # abs: -0.0 is a pole like +0.0
    res = (-1) ** (n + 1) * math.factorial(n) * hurwitz_zeta(xp, xp.full(q.shape, n + 1.0), q)
    if bool(neg.any()):
        cot = 1.0 / xp.tan(math.pi * (x - xp.round(x)))
        d = math.pi ** (n + 1) * horner(cot, _cot_derivative_poly(n))
        res = xp.where(neg, (-1) ** (n + 1) * ((-1) ** n * d - res), res)
    # at +-inf PyTorch gives trigamma 0 and nan, higher orders nan and +-inf
    pos_inf = 0.0 if n == 1 else math.nan
    neg_inf = math.nan if n == 1 else (-1) ** (n + 1) * math.inf
    return xp.where(x == math.inf, pos_inf, xp.where(x == -math.inf, neg_inf, res))


def exp_square(xp, a):
    """``exp(a**2)`` without the rounding error of squaring: ``a = hi + lo``
    with ``hi * hi`` exact."""
    a = xp.abs(a)
    hi = xp.floor(a * 4096.0) * (1.0 / 4096.0)
    lo = a - hi
    return xp.exp(hi * hi) * xp.exp((2.0 * hi + lo) * lo)


def erfcx(xp, x):
    """``exp(x**2) erfc(x)``: |x| < 0.5 from erf's Taylor series; x >= 0.5
    from fabric's Chebyshev fit of erfcx (see ``ops.pointwise._erf_erfc``);
    x <= -0.5 as ``2 exp(x**2) - erfcx(-x)`` (inf below about -26.6)."""
    a = xp.abs(x)
    e_small = horner(x * x, _ERF_TAYLOR)
    e_small *= x
    u = 1.0 / (a + 3.0)
    c = horner(1.0 - 7.0 * u, _ERFCX_POLY)
    c *= u
    ex2 = exp_square(xp, x)
    y = xp.where(a < 0.5, ex2 * (1.0 - e_small), xp.where(x < 0, 2.0 * ex2 - c, c))
    return xp.where(x == -math.inf, math.inf, y)


# Hurwitz zeta: B_2j / (2j)! for j = 1..12 (Euler-Maclaurin tail).
_BERNOULLI_2J = [(1, 6), (-1, 30), (1, 42), (-1, 30), (5, 66), (-691, 2730), (7, 6), (-3617, 510), (43867, 798),
                 (-174611, 330), (854513, 138), (-236364091, 2730)]
_EM = [n / d / math.factorial(2 * j) for j, (n, d) in enumerate(_BERNOULLI_2J, start=1)]


def hurwitz_zeta(xp, s, q):
    """zeta(s, q) = sum_k (q + k)**-s: terms summed until q + k >= 10 + s
    (or they no longer matter), then the Euler-Maclaurin tail with 12
    Bernoulli terms.  Edge values as Cephes (PyTorch): inf at s == 1 and at
    q a non-positive integer, nan for s < 1, for q < 0 with non-integer s,
    zeta(+inf, q) is inf for q < 1, 1 at q = 1, nan above."""
    s, q = xp.broadcast_arrays(s, q)
    ok = (s > 1) & xp.isfinite(s) & xp.isfinite(q) & (q > -1e300)
    ss = xp.where(ok, s, 2.0)
    qs = xp.where(ok & ((q > 0) | (q != xp.floor(q))), q, 1.0)
    with quiet():
        acc = xp.zeros_like(ss)
        z = qs
        n_max = xp.where(qs < 10 + ss, xp.ceil(10 + ss - qs), 0.0)
        limit = int(n_max.max()) if n_max.size else 0
        for k in range(limit):
            active = k < n_max
            term = xp.where(active, z ** -ss, 0.0)
            acc = acc + term
            z = xp.where(active, z + 1.0, z)
            if k % 8 == 7 and not bool((active & (xp.abs(term) > 1e-18 * xp.abs(acc))).any()):
                break
        zs = z ** -ss
        tail = z ** (1.0 - ss) / (ss - 1) - 0.5 * zs  # not z * zs: zs underflows first for huge z
        rising, zr, w2 = ss, zs / z, 1.0 / (z * z)
        for j, c in enumerate(_EM, start=1):
            tail = tail + c * rising * zr
            rising = rising * (ss + 2 * j - 1) * (ss + 2 * j)
            zr = zr * w2
        y = acc + zs + tail
    # Edge values in the order Cephes (PyTorch) checks them, innermost first.
    y = xp.where(xp.isnan(s) | xp.isnan(q) | (q == math.inf), math.nan, y)
    y = xp.where(s == math.inf, xp.where(q < 1, math.inf, xp.where(q == 1, 1.0, math.nan)), y)
    y = xp.where((q <= 0) & (q != xp.floor(q)) & (s != xp.floor(s)), math.nan, y)
    y = xp.where((q <= 0) & (q == xp.floor(q)), math.inf, y)
    return xp.where(s == 1, math.inf, xp.where(s < 1, math.nan, y))


# --- modified Bessel functions I0, I1 (fabric.i0, special.i0/i1/i0e/i1e) ------------------
#
# I_nu(x) for nu in {0, 1} in float64: the power series
#     sum_k (x/2)^(2k+nu) / (k! (k+nu)!)          (all terms positive: no cancellation)
# for |x| <= 30 (48 terms reach 1e-18 relative there), and the asymptotic series
#     e^x / sqrt(2 pi x) * sum_k (-1)^k a_k / x^k,  a_k = a_{k-1} (4 nu^2 - (2k-1)^2) / (8k)
# beyond (25 terms: truncation error below 1e-19 at x = 30).  Measured against
# torch.special.i0/i1 (Cephes) in float64: within a few 1e-15 relative.
_SERIES_MAX = 30.0
_SERIES_TERMS = 48
_ASYMPTOTIC_TERMS = 25


def _asymptotic_coeffs(nu):
    a, out = 1.0, [1.0]
    for k in range(1, _ASYMPTOTIC_TERMS + 1):
        a *= (4.0 * nu * nu - (2 * k - 1) ** 2) / (8.0 * k)
        out.append(a * (-1) ** k)
    return out[::-1]  # highest power first, for Horner


_ASYM = {0: _asymptotic_coeffs(0), 1: _asymptotic_coeffs(1)}


def bessel_i(xp, x, nu, scaled=False):
    """I_0 or I_1 of a float array, evaluated in float64 (``scaled``: ``exp(-|x|) I_nu(x)``,
    finite for every finite x; fabric.special.i0e/i1e)."""
    dt = x.dtype
    with quiet():
        a = xp.abs(x.astype(np.float64))
        xs = xp.minimum(a, _SERIES_MAX) * 0.5
        q = xs * xs
        term = xs.copy() if nu else xp.ones_like(xs)
        s = term.copy()
        for k in range(1, _SERIES_TERMS):
            term *= q
            term /= k * (k + nu)
            s += term
        if scaled:
            s *= xp.exp(-2.0 * xs)
        big = a > _SERIES_MAX
        if a.size and bool(big.any()):
            xl = xp.maximum(a, _SERIES_MAX)
            z = 1.0 / xl
            c = _ASYM[nu]
            acc = xp.full(xl.shape, c[0])
            for ck in c[1:]:
                acc *= z
                acc += ck
            scale = 1.0 if scaled else xp.exp(xl)
            s = xp.where(big, scale / xp.sqrt(2.0 * math.pi * xl) * acc, s)
        s = xp.where(xp.isnan(a), a, s)
        if nu:
            s = xp.copysign(s, x)
    return s.astype(dt, copy=False)
