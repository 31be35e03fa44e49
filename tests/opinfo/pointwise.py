"""OpInfo entries for the elementwise ops (fabric/ops/pointwise.py).

Samples stay away from kinks and poles (gradcheck uses central
differences); ties for maximum/minimum/clamp are separate samples, checked
against PyTorch's gradient (and by gradcheck where the central difference
equals PyTorch's tie rule).
"""
from __future__ import annotations

import math

import numpy as np

from . import COMPLEX, FLOATS, INTS, OpInfo, SampleInput, binary_samples, make, unary_samples

BOOL = (np.bool_,)
INTS_BOOL = INTS + BOOL


def _vec(fn):
    """A NumPy reference from a scalar ``math`` function (float64 results)."""
    return np.vectorize(fn, otypes=[np.float64])


def _quiet(fn):
    def ref(*args, **kwargs):
        with np.errstate(all="ignore"):
            return fn(*args, **kwargs)
    return ref


def _same_dtype(fn):
    """Reference for ops that keep the input dtype (NumPy may upcast)."""
    def ref(x, *args, **kwargs):
        return np.asarray(fn(x, *args, **kwargs)).astype(np.asarray(x).dtype)
    return ref


def _sign(x):
    return np.where(np.isnan(x), 0, np.sign(x)).astype(x.dtype) if x.dtype.kind == "f" else np.sign(x)


def _np_angle(x):
    """PyTorch's angle of a real number (0 at -0.0, where NumPy's np.angle gives pi)."""
    if x.dtype.kind == "c":
        return np.angle(x)
    x = x if x.dtype.kind == "f" else x.astype(np.float32)
    return np.where(np.isnan(x), x, np.where(x < 0, np.pi, 0.0)).astype(x.dtype)


def _with_specials(dtype, rng):
    """Samples holding nan/inf/-inf/-0.0 (floats) next to ordinary values."""
    out = unary_samples()(dtype, rng)
    if np.dtype(dtype).kind == "f":
        out.append(SampleInput(np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.5, -2.0], dtype), name="specials"))
    return out


def _nan_to_num_samples(dtype, rng):
    out = unary_samples()(dtype, rng)
    if np.dtype(dtype).kind == "f":
        sp = np.array([np.nan, np.inf, -np.inf, 1.5, -2.0], dtype)
        out += [SampleInput(sp, name="specials"),
                SampleInput(sp.copy(), kwargs={"nan": 1.0, "posinf": 2.0, "neginf": -3.0}, name="values")]
    return out


def _round_samples(dtype, rng):
    out = unary_samples(away_from=[-2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2])(dtype, rng)
    if np.dtype(dtype).kind == "f":
        out += [SampleInput(np.array([0.5, 1.5, 2.5, -0.5, -2.5], dtype), name="half_to_even", grad=False),
                SampleInput(make(rng, (3, 4), dtype, low=-50, high=50), kwargs={"decimals": 1}, name="decimals"),
                SampleInput(make(rng, (5,), dtype, low=-5000, high=5000), kwargs={"decimals": -2},
                            name="negative_decimals")]
    return out


def _logit_samples(dtype, rng):
    out = unary_samples(low=0.05, high=0.95)(dtype, rng)
    out.append(SampleInput(make(rng, (6,), dtype, low=0.2, high=0.8), (0.1,), name="eps"))
    out.append(SampleInput(np.array([0.05, 0.3, 0.95], dtype), kwargs={"eps": 0.1}, name="eps_clamped",
                           grad=False))
    return out


def _polygamma_samples(dtype, rng):
    return [
        SampleInput(1, (make(rng, (5,), dtype, low=0.3, high=4.0),), name="n1"),
        SampleInput(2, (make(rng, (3, 2), dtype, low=0.3, high=4.0),), name="n2"),
        SampleInput(3, (make(rng, (), dtype, low=0.3, high=4.0),), name="n3_0d"),
        SampleInput(1, (make(rng, (4,), dtype, low=-2.8, high=-0.2, away_from=[-2, -1]),), name="negative"),
        SampleInput(0, (make(rng, (4,), dtype, low=0.3, high=4.0),), name="n0"),
        SampleInput(2, (make(rng, (0, 2), dtype),), name="empty"),
    ]


def _ties(dtype, rng, shape=(3, 4)):
    a = make(rng, shape, dtype)
    b = make(rng, shape, dtype)
    b.flat[::2] = a.flat[::2]
    return a, b


def _max_min_samples(dtype, rng, ties_grad=True):
    out = binary_samples(rhs_scalar=None)(dtype, rng)
    a, b = _ties(dtype, rng)
    out.append(SampleInput(a, (b,), name="ties", grad=ties_grad))
    if np.dtype(dtype).kind == "f":
        out.append(SampleInput(np.array([np.nan, 1.0, np.nan, 2.0], dtype), (np.array([1.0, np.nan, np.nan, 3.0],
                                                                                        dtype),),
                               name="nan", grad=False))
    return out


def _fmax_samples(dtype, rng):
    return _max_min_samples(dtype, rng, ties_grad=False)  # ties go to input: not a central difference


def _compare_samples(dtype, rng):
    out = binary_samples(rhs_scalar=1)(dtype, rng)
    a, b = _ties(dtype, rng)
    out.append(SampleInput(a, (b,), name="ties"))
    if np.dtype(dtype).kind == "f":
        out.append(SampleInput(make(rng, (3,), dtype), (1.5,), name="float_scalar"))
    return out


def _logical_samples(dtype, rng):
    def m(shape):
        a = make(rng, shape, dtype, low=-1, high=1)
        if a.size:
            a.flat[::3] = 0
        return a
    return [SampleInput(m((3, 4)), (m((3, 4)),), name="same"),
            SampleInput(m((3, 1)), (m((1, 4)),), name="broadcast"),
            SampleInput(m(()), (m((2,)),), name="0d"),
            SampleInput(m((0, 2)), (m((2,)),), name="empty")]


def _bitwise_samples(dtype, rng):
    out = binary_samples(low=-20, high=20, rhs_scalar=3)(dtype, rng)
    return out


def _shift_samples(dtype, rng):
    def m(shape, low, high):
        return make(rng, shape, dtype, low=low, high=high)
    return [SampleInput(m((3, 4), -50, 50), (m((3, 4), 0, 6),), name="same"),
            SampleInput(m((3, 1), -50, 50), (m((4,), 0, 6),), name="broadcast"),
            SampleInput(m((5,), -50, 50), (2,), name="scalar"),
            SampleInput(m((), -50, 50), (m((), 0, 6),), name="0d")]


def _isclose_samples(dtype, rng):
    a = make(rng, (3, 4), dtype)
    noise = make(rng, (3, 4), dtype, low=-1e-4, high=1e-4) if np.dtype(dtype).kind == "f" else 0
    b = (a + noise * (rng.random((3, 4)) > 0.5)).astype(dtype)
    out = [SampleInput(a, (b,), name="near"), SampleInput(a, (b,), {"rtol": 0, "atol": 0}, name="exact"),
           SampleInput(a, (b[0],), {"atol": 1e-3}, name="broadcast")]
    if np.dtype(dtype).kind == "f":
        sp = np.array([np.nan, np.inf, -np.inf, 1.0], dtype)
        out += [SampleInput(sp, (sp.copy(),), name="specials"),
                SampleInput(sp, (sp.copy(),), {"equal_nan": True}, name="equal_nan")]
    return out


def _where_samples(dtype, rng):
    def c(shape):
        return np.asarray(rng.random(shape) > 0.5)
    m = lambda *s: make(rng, s, dtype)
    return [
        SampleInput(c((3, 4)), (m(3, 4), m(3, 4)), name="same"),
        SampleInput(c((3, 1)), (m(1, 4), m(3, 4)), name="broadcast"),
        SampleInput(c((4,)), (m(3, 4), 0.0 if np.dtype(dtype).kind == "f" else 0), name="scalar_other"),
        SampleInput(c(()), (m(), m()), name="0d"),
        SampleInput(c((0, 3)), (m(3), m(0, 3)), name="empty"),
        SampleInput(c((4, 3)), (make(rng, (4, 3), dtype, noncontig=True), m(4, 3)), name="noncontig"),
    ]


def _np_clamp(x, min=None, max=None):
    y = x if min is None else np.maximum(x, min)
    return y if max is None else np.minimum(y, max)


def _clamp_samples(dtype, rng):
    m = lambda *s, **k: make(rng, s, dtype, **k)
    f = np.dtype(dtype).kind == "f"
    lo, hi = (-0.5, 0.7) if f else (-1, 1)
    out = [
        SampleInput(m(3, 4, away_from=[lo, hi]), (lo, hi), name="both"),
        SampleInput(m(5, away_from=[lo]), kwargs={"min": lo}, name="min_only"),
        SampleInput(m(5, away_from=[hi]), kwargs={"max": hi}, name="max_only"),
        SampleInput(m(4, 3, noncontig=True, away_from=[lo, hi]), (lo, hi), name="noncontig"),
        SampleInput(m(0, 2), (lo, hi), name="empty"),
        SampleInput(m(3, 4), (m(3, 4, low=-2, high=0), m(4, low=0, high=2)), name="tensor_bounds"),
        SampleInput(m(3, 4), (m(3, 1), None), name="tensor_min"),
        SampleInput(m(3, 4), (None, m(4)), name="tensor_max"),
        SampleInput(m(6), (m(6, low=0.5, high=1), m(6, low=-1, high=0)), name="min_above_max"),
        SampleInput(np.array([lo, hi, 0, lo - 1, hi + 1], dtype), (lo, hi), name="at_bounds", grad=False),
    ]
    return out


def _clamp_min_samples(dtype, rng):
    m = lambda *s, **k: make(rng, s, dtype, **k)
    return [SampleInput(m(3, 4, away_from=[0.3]), (0.3 if np.dtype(dtype).kind == "f" else 0,), name="scalar"),
            SampleInput(m(3, 4), (m(4),), name="tensor"),
            SampleInput(m(), (0,), name="0d"),
            SampleInput(m(0, 4), (1,), name="empty")]


def _lerp_samples(dtype, rng):
    m = lambda *s, **k: make(rng, s, dtype, **k)
    return [
        SampleInput(m(3, 4), (m(3, 4), 0.3), name="scalar_weight"),
        SampleInput(m(3, 4), (m(4), 0.8), name="broadcast_end"),
        SampleInput(m(3, 4), (m(3, 4), m(3, 4, low=-0.5, high=1.5)), name="tensor_weight"),
        SampleInput(m(3, 1), (m(1, 4), m(4)), name="broadcast_all"),
        SampleInput(m(), (m(), m()), name="0d"),
        SampleInput(m(0, 2), (m(2), 0.5), name="empty"),
    ]


def _np_lerp(a, b, w):
    return a + w * (b - a)


def _addc_samples(divide):
    def gen(dtype, rng):
        m = lambda *s, **k: make(rng, s, dtype, **k)
        den = {"low": 0.5, "high": 2.0} if divide else {}
        return [
            SampleInput(m(3, 4), (m(3, 4), m(3, 4, **den)), name="same"),
            SampleInput(m(3, 4), (m(4), m(3, 1, **den)), {"value": 0.5}, name="broadcast_value"),
            SampleInput(m(), (m(), m(**den)), {"value": -2}, name="0d"),
            SampleInput(m(1, 4), (m(3, 1), m(4, **den)), name="broadcast_input"),
            SampleInput(m(0, 3), (m(3), m(3, **den)), name="empty"),
        ]
    return gen


def _div_rounding_samples(dtype, rng):
    out = []
    for mode in ("trunc", "floor"):
        for s in binary_samples(positive_rhs=True, away_from=[0.0])(dtype, rng):
            s.kwargs = {"rounding_mode": mode}
            s.name = f"{mode}_{s.name}"
            out.append(s)
    return out


def _np_div_rounding(a, b, rounding_mode):
    with np.errstate(all="ignore"):
        if rounding_mode == "floor":
            return np.floor_divide(a, b)
        q = np.trunc(np.true_divide(a, b))
        return q.astype(np.result_type(a, b)) if np.result_type(a, b).kind in "iu" else q


def _xlogy_samples(dtype, rng):
    out = binary_samples(positive_rhs=True, away_from=[0.0])(dtype, rng)
    out.append(SampleInput(np.array([0.0, 0.0, 1.5], dtype), (np.array([0.5, 2.0, 3.0], dtype),), name="zero_x"))
    return out


def _np_xlogy(x, y):
    with np.errstate(all="ignore"):
        return np.where((x == 0) & ~np.isnan(y), 0.0, x * np.log(y))


def _np_isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def _np_sinc(x):
    return np.sinc(x)


def _np_logit(x, eps=None):
    if eps is not None:
        x = np.clip(x, eps, 1 - eps)
    return np.log(x / (1 - x))


_SPECIAL = {"erf": math.erf, "erfc": math.erfc, "lgamma": math.lgamma}


def _unary(name, ref, low=-2.0, high=2.0, positive=False, away_from=None, dtypes=FLOATS, inplace=True, **kw):
    return OpInfo(name, ref, unary_samples(low=low, high=high, positive=positive, away_from=away_from),
                  dtypes=dtypes, inplace=name + "_" if inplace else None, **kw)


def _binary(name, ref, samples=None, dtypes=FLOATS, inplace=False, **kw):
    return OpInfo(name, ref, samples or binary_samples(rhs_scalar=None), dtypes=dtypes,
                  inplace=name + "_" if inplace else None, **kw)


_KINKS = [-2, -1, 0, 1, 2]
_NOT_DIFF = {"differentiable": False}

OPS = [
    # --- unary ---------------------------------------------------------------------------------
    _unary("abs", np.abs, away_from=0.0, dtypes=FLOATS + INTS, complex_dtypes=COMPLEX),
    _unary("absolute", np.abs, away_from=0.0, dtypes=FLOATS + INTS, complex_dtypes=COMPLEX),
    _unary("sign", _sign, away_from=0.0, dtypes=FLOATS + INTS),
    _unary("sgn", _sign, away_from=0.0, dtypes=FLOATS + INTS, torch_name="sign",
           notes="compared with torch.sign: torch.sgn's real gradient is a ZeroTensor"),
    _unary("sqrt", np.sqrt, positive=True, complex_dtypes=COMPLEX),
    _unary("rsqrt", lambda x: 1 / np.sqrt(x), positive=True, rtol=1e-5, complex_dtypes=COMPLEX),
    _unary("square", np.square, dtypes=FLOATS + INTS, complex_dtypes=COMPLEX),
    _unary("reciprocal", np.reciprocal, away_from=0.0, low=-2, high=2, complex_dtypes=COMPLEX),
    _unary("exp2", lambda x: np.power(np.asarray(2, x.dtype), x), complex_dtypes=COMPLEX),
    _unary("expm1", np.expm1, complex_dtypes=COMPLEX),
    _unary("log2", np.log2, positive=True, complex_dtypes=COMPLEX),
    _unary("log10", np.log10, positive=True, complex_dtypes=COMPLEX),
    _unary("log1p", np.log1p, low=-0.7, high=2.0, complex_dtypes=COMPLEX),
    _unary("sin", np.sin, complex_dtypes=COMPLEX),
    _unary("cos", np.cos, complex_dtypes=COMPLEX),
    _unary("tan", np.tan, low=-1.2, high=1.2, complex_dtypes=COMPLEX),
    _unary("asin", np.arcsin, low=-0.9, high=0.9, complex_dtypes=COMPLEX),
    _unary("arcsin", np.arcsin, low=-0.9, high=0.9, complex_dtypes=COMPLEX),
    _unary("acos", np.arccos, low=-0.9, high=0.9, complex_dtypes=COMPLEX),
    _unary("arccos", np.arccos, low=-0.9, high=0.9, complex_dtypes=COMPLEX),
    _unary("atan", np.arctan, complex_dtypes=COMPLEX),
    _unary("arctan", np.arctan, complex_dtypes=COMPLEX),
    _unary("sinh", np.sinh, complex_dtypes=COMPLEX),
    _unary("cosh", np.cosh, complex_dtypes=COMPLEX),
    _unary("tanh", np.tanh, complex_dtypes=COMPLEX),
    _unary("asinh", np.arcsinh, complex_dtypes=COMPLEX),
    _unary("arcsinh", np.arcsinh, complex_dtypes=COMPLEX),
    _unary("acosh", np.arccosh, low=1.2, high=3.0, complex_dtypes=COMPLEX),
    _unary("arccosh", np.arccosh, low=1.2, high=3.0, complex_dtypes=COMPLEX),
    _unary("atanh", np.arctanh, low=-0.9, high=0.9, complex_dtypes=COMPLEX),
    _unary("arctanh", np.arctanh, low=-0.9, high=0.9, complex_dtypes=COMPLEX),
    _unary("sigmoid", lambda x: 1 / (1 + np.exp(-x)), low=-5, high=5, complex_dtypes=COMPLEX),
    OpInfo("logit", _np_logit, _logit_samples, inplace="logit_", rtol=1e-5),
    _unary("erf", _vec(math.erf), low=-3, high=3),
    _unary("erfc", _vec(math.erfc), low=-3, high=3, rtol=1e-5),
    _unary("erfinv", None, low=-0.95, high=0.95, grad_rtol=1e-3),
    _unary("lgamma", _vec(math.lgamma), low=-2.8, high=4.0, away_from=[-2, -1, 0], rtol=1e-5, atol=1e-5),
    _unary("digamma", None, low=-2.8, high=4.0, away_from=[-2, -1, 0]),
    OpInfo("polygamma", None, _polygamma_samples, method=""),
    _unary("floor", _same_dtype(np.floor), away_from=_KINKS, dtypes=FLOATS + INTS),
    _unary("ceil", _same_dtype(np.ceil), away_from=_KINKS, dtypes=FLOATS + INTS),
    _unary("trunc", _same_dtype(np.trunc), away_from=_KINKS, dtypes=FLOATS + INTS),
    _unary("fix", _same_dtype(np.trunc), away_from=_KINKS, dtypes=FLOATS + INTS),
    OpInfo("round", _same_dtype(lambda x, decimals=0: np.round(x, decimals)), _round_samples, dtypes=FLOATS + INTS,
           inplace="round_"),
    _unary("frac", lambda x: x - np.trunc(x), away_from=_KINKS),
    _unary("relu", _same_dtype(lambda x: np.maximum(x, 0)), away_from=0.0, dtypes=FLOATS + INTS),
    OpInfo("nan_to_num", np.nan_to_num, _nan_to_num_samples, dtypes=FLOATS + INTS, inplace="nan_to_num_"),
    _unary("positive", lambda x: x, dtypes=FLOATS + INTS, inplace=False),
    _unary("deg2rad", np.deg2rad, low=-360, high=360),
    _unary("rad2deg", np.rad2deg),
    _unary("sinc", _np_sinc, away_from=0.0, rtol=1e-5, complex_dtypes=COMPLEX),
    _unary("angle", _np_angle, away_from=0.0, inplace=False, dtypes=FLOATS + INTS, complex_dtypes=COMPLEX),
    OpInfo("isnan", np.isnan, _with_specials, dtypes=FLOATS + INTS, **_NOT_DIFF),
    OpInfo("isinf", np.isinf, _with_specials, dtypes=FLOATS + INTS, **_NOT_DIFF),
    OpInfo("isposinf", np.isposinf, _with_specials, dtypes=FLOATS + INTS, **_NOT_DIFF),
    OpInfo("isneginf", np.isneginf, _with_specials, dtypes=FLOATS + INTS, **_NOT_DIFF),
    OpInfo("isfinite", np.isfinite, _with_specials, dtypes=FLOATS + INTS, **_NOT_DIFF),
    OpInfo("isreal", np.isreal, _with_specials, dtypes=FLOATS + INTS, **_NOT_DIFF),
    OpInfo("signbit", np.signbit, _with_specials, dtypes=FLOATS + INTS, **_NOT_DIFF),
    OpInfo("logical_not", np.logical_not, _with_specials, dtypes=FLOATS + INTS_BOOL, inplace="logical_not_",
           **_NOT_DIFF),
    OpInfo("bitwise_not", np.invert, unary_samples(low=-20, high=20), dtypes=INTS_BOOL, inplace="bitwise_not_",
           **_NOT_DIFF),
    # --- binary --------------------------------------------------------------------------------
    OpInfo("div", _np_div_rounding, _div_rounding_samples, dtypes=FLOATS + INTS, inplace="div_",
           notes="rounding_mode='trunc' | 'floor'"),
    _binary("floor_divide", _quiet(np.floor_divide), binary_samples(positive_rhs=True, away_from=[0.0]),
            dtypes=FLOATS + INTS, inplace=True, **_NOT_DIFF),
    _binary("remainder", _quiet(np.remainder), binary_samples(positive_rhs=True, away_from=[0.0]),
            dtypes=FLOATS + INTS, inplace=True),
    _binary("fmod", _quiet(np.fmod), binary_samples(positive_rhs=True, away_from=[0.0]), dtypes=FLOATS + INTS,
            inplace=True),
    _binary("float_power", np.float_power, binary_samples(low=0.5, high=2.0), dtypes=FLOATS + INTS,
            inplace=True),
    _binary("atan2", np.arctan2, inplace=True),
    _binary("arctan2", np.arctan2, inplace=True),
    _binary("maximum", np.maximum, _max_min_samples, dtypes=FLOATS + INTS),
    _binary("minimum", np.minimum, _max_min_samples, dtypes=FLOATS + INTS),
    _binary("fmax", np.fmax, _fmax_samples, dtypes=FLOATS + INTS),
    _binary("fmin", np.fmin, _fmax_samples, dtypes=FLOATS + INTS),
    _binary("hypot", np.hypot, inplace=True),
    _binary("logaddexp", np.logaddexp),
    _binary("logaddexp2", np.logaddexp2),
    _binary("xlogy", _np_xlogy, _xlogy_samples, inplace=True),
    _binary("copysign", np.copysign, binary_samples(away_from=[0.0], rhs_scalar=-1.5), inplace=True),
    _binary("nextafter", np.nextafter, inplace=True, **_NOT_DIFF),
    *[_binary(name, ref, _compare_samples, dtypes=FLOATS + INTS, inplace=True, **_NOT_DIFF)
      for name, ref in (("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
                        ("gt", np.greater), ("ge", np.greater_equal), ("greater", np.greater),
                        ("greater_equal", np.greater_equal), ("less", np.less), ("less_equal", np.less_equal),
                        ("not_equal", np.not_equal))],
    *[_binary(name, ref, _logical_samples, dtypes=FLOATS + INTS_BOOL, inplace=True, **_NOT_DIFF)
      for name, ref in (("logical_and", np.logical_and), ("logical_or", np.logical_or),
                        ("logical_xor", np.logical_xor))],
    *[_binary(name, ref, _bitwise_samples, dtypes=INTS_BOOL, inplace=True, **_NOT_DIFF)
      for name, ref in (("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
                        ("bitwise_xor", np.bitwise_xor))],
    _binary("bitwise_left_shift", np.left_shift, _shift_samples, dtypes=INTS, inplace=True, **_NOT_DIFF),
    _binary("bitwise_right_shift", np.right_shift, _shift_samples, dtypes=INTS, inplace=True, **_NOT_DIFF),
    OpInfo("isclose", _np_isclose, _isclose_samples, dtypes=FLOATS + INTS, **_NOT_DIFF),
    OpInfo("allclose", lambda *a, **k: bool(_np_isclose(*a, **k).all()), _isclose_samples, dtypes=FLOATS + INTS,
           torch_name="", **_NOT_DIFF, notes="returns a Python bool (compared with torch in test_pointwise)"),
    OpInfo("equal", lambda a, b, **k: a.shape == b.shape and bool((a == b).all()),
           lambda d, r: [s for s in _isclose_samples(d, r) if not s.kwargs], dtypes=FLOATS + INTS, torch_name="",
           **_NOT_DIFF),
    # --- ternary and misc ----------------------------------------------------------------------
    OpInfo("where", np.where, _where_samples, dtypes=FLOATS + INTS, method=""),
    OpInfo("clamp", _np_clamp, _clamp_samples, dtypes=FLOATS + INTS, inplace="clamp_"),
    OpInfo("clip", _np_clamp, _clamp_samples, dtypes=FLOATS + INTS, inplace="clip_"),
    OpInfo("clamp_min", lambda x, m: np.maximum(x, m), _clamp_min_samples, dtypes=FLOATS + INTS,
           inplace="clamp_min_"),
    OpInfo("clamp_max", lambda x, m: np.minimum(x, m), _clamp_min_samples, dtypes=FLOATS + INTS,
           inplace="clamp_max_"),
    OpInfo("lerp", _np_lerp, _lerp_samples, inplace="lerp_", rtol=1e-5),
    OpInfo("addcmul", lambda x, a, b, value=1: x + value * a * b, _addc_samples(False), inplace="addcmul_",
           rtol=1e-5),
    OpInfo("addcdiv", lambda x, a, b, value=1: x + value * a / b, _addc_samples(True), inplace="addcdiv_",
           rtol=1e-5),
]
