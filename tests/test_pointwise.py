"""Elementwise ops beyond the OpInfo matrix: result dtypes and type
promotion against PyTorch (every dtype, 0-d tensors, Python numbers),
reflected operators, error types, numerical edge cases and special-function
accuracy, in-place autograd, and hypothesis-driven shapes/broadcasting."""
from __future__ import annotations

import math

import numpy as np
import pytest

import fabric

try:
    from hypothesis import assume, given
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp
except ImportError:  # pragma: no cover
    given = None

needs_hypothesis = pytest.mark.skipif(given is None, reason="hypothesis is not installed")

DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64")

UNARY = [
    "abs", "absolute", "sign", "sgn", "sqrt", "rsqrt", "square", "reciprocal", "exp", "exp2", "expm1", "log",
    "log2", "log10", "log1p", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh",
    "acosh", "atanh", "sigmoid", "logit", "erf", "erfc", "erfinv", "lgamma", "digamma", "floor", "ceil", "round",
    "trunc", "fix", "frac", "relu", "nan_to_num", "positive", "deg2rad", "rad2deg", "sinc", "isnan", "isinf",
    "isposinf", "isneginf", "isfinite", "isreal", "signbit", "logical_not", "bitwise_not", "neg",
]

BINARY = [
    "add", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod", "float_power", "atan2", "maximum",
    "minimum", "fmax", "fmin", "hypot", "logaddexp", "logaddexp2", "xlogy", "copysign", "nextafter", "eq", "ne",
    "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
    "bitwise_left_shift", "bitwise_right_shift",
]


def _np_values(dtype, signed=True):
    if dtype == "bool":
        return np.array([True, False, True, True])
    if dtype == "uint8":
        return np.array([3, 2, 5, 1], dtype)
    return np.array([-3, 2, 5, -1] if signed else [3, 2, 5, 1], dtype)


def _np_values2(dtype):
    if dtype == "bool":
        return np.array([True, True, False, True])
    if dtype == "uint8":
        return np.array([2, 1, 3, 4], dtype)
    return np.array([2, -1, 3, 4], dtype)


def _dt(t):
    return str(t.dtype).split(".")[-1]


def _to(lib, v):
    if isinstance(v, np.ndarray):
        return fabric.from_numpy(v.copy()) if lib is fabric else __import__("torch").from_numpy(v.copy())
    return v


def _run(lib, fn, *args, **kwargs):
    """(result, None) or (None, exception type)."""
    try:
        return fn(*[_to(lib, a) for a in args], **kwargs), None
    except Exception as e:
        return None, type(e)


def _tol(dtype_name):
    return {"float16": 2e-3, "float32": 2e-6}.get(dtype_name, 1e-12)


def _np_of(t):
    """NumPy values of a fabric or torch tensor (torch's ZeroTensor gradients included)."""
    if t is None:
        return None
    t = t.detach()
    if hasattr(t, "_is_zerotensor") and t._is_zerotensor():
        return np.zeros(tuple(t.shape))
    return t.numpy()


def _compare(ours, theirs, err, terr, what):
    if terr is not None:
        assert err is not None, f"{what}: torch raises {terr.__name__}, fabric returned {ours}"
        assert issubclass(err, terr) or issubclass(terr, err), \
            f"{what}: torch raises {terr.__name__}, fabric raises {err.__name__}"
        return
    assert err is None, f"{what}: fabric raises {err.__name__}, torch returns {theirs}"
    if isinstance(theirs, bool):
        assert ours is theirs or ours == theirs, what
        return
    assert _dt(ours) == _dt(theirs), f"{what}: dtype {_dt(ours)} vs torch {_dt(theirs)}"
    assert tuple(ours.shape) == tuple(theirs.shape), what
    tv = theirs.detach().numpy()
    ov = ours.detach().numpy()
    if tv.dtype.kind == "f":
        rtol = _tol(str(tv.dtype))
        np.testing.assert_allclose(ov.astype(np.float64), tv.astype(np.float64), rtol=rtol, atol=rtol,
                                   equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(ov, tv, err_msg=what)


# --- unary: result dtype and values for every dtype ------------------------------------

@pytest.mark.torch
@pytest.mark.parametrize("name", UNARY)
def test_unary_dtypes_match_torch(name):
    import torch

    for dt in DTYPES:
        v = _np_values(dt, signed=name not in ("sqrt", "rsqrt", "log", "log2", "log10", "lgamma", "digamma"))
        if name in ("asin", "acos", "atanh", "erfinv", "logit"):
            v = (v.astype(np.float64) / 8).astype(dt) if dt[0] == "f" else v
        ours, err = _run(fabric, getattr(fabric, name), v)
        theirs, terr = _run(torch, getattr(torch, name), v)
        _compare(ours, theirs, err, terr, f"{name}({dt})")


@pytest.mark.torch
@pytest.mark.parametrize("name", [n for n in UNARY if hasattr(fabric.Tensor, n + "_")])
def test_unary_inplace_dtypes_match_torch(name):
    import torch

    for dt in DTYPES:
        v = _np_values(dt, signed=False)
        if name in ("asin", "acos", "atanh", "erfinv", "logit") and dt[0] == "f":
            v = (v.astype(np.float64) / 8).astype(dt)
        x = fabric.from_numpy(v.copy())
        tx = torch.from_numpy(v.copy())
        ours, err = _run(fabric, lambda t: getattr(t, name + "_")(), x)
        theirs, terr = _run(torch, lambda t: getattr(t, name + "_")(), tx)
        _compare(ours, theirs, err, terr, f"{name}_({dt})")
        if err is None:
            assert ours is x and x._version == 1


# --- binary: type promotion with tensors, 0-d tensors and Python numbers ---------------------

_OPERANDS = [
    ("i64", "i64"), ("i32", "i64_0d"), ("i32", 3), ("i32", -2), ("u8", "i8"), ("u8", 2), ("b", "b"), ("b", True),
    ("b", 3), ("i64", 2.5), ("i32", "f16"), ("f16", 3), ("f16", 2.5), ("f16", "f32_0d"), ("f32", "f64"),
    ("f32_0d", "f16_0d"), ("f32_0d", 2.5), ("f64", True), ("i16", "u8_0d"), (3, "i32"), (2.5, "i64"), (2, "f16"),
]
_CODES = {"b": "bool", "u8": "uint8", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
          "f16": "float16", "f32": "float32", "f64": "float64"}


def _operand(code, second):
    if not isinstance(code, str):
        return code
    zero_d = code.endswith("_0d")
    dt = _CODES[code.removesuffix("_0d")]
    v = _np_values2(dt) if second else _np_values(dt)
    return np.array(v[1]) if zero_d else v


@pytest.mark.torch
@pytest.mark.parametrize("name", BINARY)
def test_binary_promotion_matches_torch(name):
    import torch

    for ca, cb in _OPERANDS:
        a, b = _operand(ca, False), _operand(cb, True)
        ours, err = _run(fabric, getattr(fabric, name), a, b)
        theirs, terr = _run(torch, getattr(torch, name), a, b)
        _compare(ours, theirs, err, terr, f"{name}({ca}, {cb})")


@pytest.mark.torch
@pytest.mark.parametrize("name", [n for n in BINARY if n not in ("add", "mul", "div", "true_divide")
                                  and hasattr(fabric.Tensor, n + "_")])
def test_binary_inplace_promotion_matches_torch(name):
    import torch

    for ca, cb in _OPERANDS:
        if not isinstance(ca, str):
            continue
        a, b = _operand(ca, False), _operand(cb, True)
        x, tx = fabric.from_numpy(a.copy()), torch.from_numpy(a.copy())
        ours, err = _run(fabric, lambda t, o: getattr(t, name + "_")(o), x, b)
        theirs, terr = _run(torch, lambda t, o: getattr(t, name + "_")(o), tx, b)
        _compare(ours, theirs, err, terr, f"{name}_({ca}, {cb})")
        if err is not None:  # a failed in-place op leaves self untouched
            np.testing.assert_array_equal(x.numpy(), a)


@pytest.mark.torch
def test_div_rounding_modes_match_torch():
    import torch

    for mode in ("trunc", "floor"):
        for ca, cb in _OPERANDS:
            a, b = _operand(ca, False), _operand(cb, True)
            ours, err = _run(fabric, fabric.div, a, b, rounding_mode=mode)
            theirs, terr = _run(torch, torch.div, a, b, rounding_mode=mode)
            _compare(ours, theirs, err, terr, f"div({ca}, {cb}, {mode})")


@pytest.mark.torch
@pytest.mark.parametrize("dt", DTYPES)
def test_reflected_operators_match_torch(dt):
    import torch

    v = _np_values(dt, signed=False)
    for zero_d in (False, True):
        arr = np.array(v[0]) if zero_d else v
        x, tx = fabric.from_numpy(arr.copy()), torch.from_numpy(arr.copy())
        for expr in ("2 ** x", "2.5 ** x", "5 // x", "5.5 // x", "5 % x", "-7.5 % x", "1 << x",
                     "64 >> x", "3 & x", "3 | x", "3 ^ x", "True & x", "-x", "x ** 2", "x // 2", "x % 2",
                     "x << 1", "x >> 1", "2 / x", "x == 2", "2 < x", "x != 2.5"):
            ours, err = _run(fabric, lambda t, e=expr: eval(e, {"x": t}), x)
            theirs, terr = _run(torch, lambda t, e=expr: eval(e, {"x": t}), tx)
            _compare(ours, theirs, err, terr, f"{expr} with x: {dt}{' 0-d' if zero_d else ''}")


@pytest.mark.torch
def test_where_and_ternary_promotion_match_torch():
    import torch

    cond = np.array([True, False, True, True])
    cases = [("f32", "f64"), ("i32", 2.5), (1, 0), (1.0, 0), (True, False), ("i64", "f16_0d"), ("b", 3), (2, "u8")]
    for ca, cb in cases:
        a, b = _operand(ca, False), _operand(cb, True)
        ours, err = _run(fabric, fabric.where, cond, a, b)
        theirs, terr = _run(torch, torch.where, cond, a, b)
        _compare(ours, theirs, err, terr, f"where(c, {ca}, {cb})")
    for code in ("i64", "i32", "f16", "f32", "b", "u8"):
        x = _operand(code, False)
        for lo, hi in ((0, 3), (0.5, None), (None, 2), (-1.5, 2.5), (True, None), (3, -1)):
            ours, err = _run(fabric, fabric.clamp, x, lo, hi)
            theirs, terr = _run(torch, torch.clamp, x, lo, hi)
            _compare(ours, theirs, err, terr, f"clamp({code}, {lo}, {hi})")
        for other in ("i64", "f32", "f64_0d"):
            o = _operand(other, True)
            for fname in ("clamp_min", "clamp_max"):
                ours, err = _run(fabric, getattr(fabric, fname), x, o)
                theirs, terr = _run(torch, getattr(torch, fname), x, o)
                _compare(ours, theirs, err, terr, f"{fname}({code}, {other})")
            hi = np.asarray(o + 2)
            ours, err = _run(fabric, fabric.clamp, x, o, hi)
            theirs, terr = _run(torch, torch.clamp, x, o, hi)
            _compare(ours, theirs, err, terr, f"clamp({code}, tensor {other})")
    for a, b, c in (("f32", "f32", "f32"), ("i64", "i64", "i64"), ("i32", "f16", "f64"), ("f32_0d", "i64", "i64"),
                    ("b", "b", "b")):
        xa, xb, xc = _operand(a, False), _operand(b, True), _operand(c, True)
        for fname in ("addcmul", "addcdiv"):
            for value in (1, 2, 0.5):
                ours, err = _run(fabric, getattr(fabric, fname), xa, xb, xc, value=value)
                theirs, terr = _run(torch, getattr(torch, fname), xa, xb, xc, value=value)
                _compare(ours, theirs, err, terr, f"{fname}({a}, {b}, {c}, value={value})")
    f32 = np.array([1.0, 2.0], np.float32)
    for end, w in ((f32, 0.25), (f32.astype(np.float64), 0.5), (f32, f32), (f32, f32.astype(np.float64)),
                   (f32, np.array(0.5)), (f32, 2)):
        ours, err = _run(fabric, fabric.lerp, f32 * 3, end, w)
        theirs, terr = _run(torch, torch.lerp, f32 * 3, end, w)
        _compare(ours, theirs, err, terr, f"lerp(f32, {end.dtype}, {w!r})")


# --- errors -----------------------------------------------------------------------------------

def _bad_calls(lib):
    """Calls that PyTorch rejects; ``lib`` is fabric or torch."""
    t = lib.tensor
    f = t([1.0, 2.0])
    i = t([1, 2])
    b = t([True, False])
    return {
        "abs(bool)": lambda: lib.abs(b),
        "frac(int)": lambda: lib.frac(i),
        "floor(bool)": lambda: lib.floor(b),
        "round(int, decimals)": lambda: lib.round(i, decimals=1),
        "round(float decimals)": lambda: lib.round(f, decimals=1.5),
        "bitwise_not(float)": lambda: lib.bitwise_not(f),
        "bitwise_and(float)": lambda: lib.bitwise_and(f, f),
        "bitwise_or(int, 2.5)": lambda: lib.bitwise_or(i, 2.5),
        "shift(bool)": lambda: lib.bitwise_left_shift(b, b),
        "relu(bool)": lambda: lib.relu(b),
        "positive(bool)": lambda: lib.positive(b),
        "neg(bool)": lambda: lib.neg(b),
        "sqrt_(int)": lambda: i.clone().sqrt_(),
        "sigmoid_(bool)": lambda: b.clone().sigmoid_(),
        "add_ broadcast": lambda: f.clone().add_(t([[1.0], [2.0]])),
        "atan2_(int)": lambda: i.clone().atan2_(i),
        "remainder_(int, float)": lambda: i.clone().remainder_(2.5),
        "eq_ broadcast": lambda: f.clone().eq_(t([[1.0], [2.0]])),
        "float_power_(float32)": lambda: f.clone().float_power_(2),
        "where(float cond)": lambda: lib.where(f, f, f),
        "where(shape)": lambda: lib.where(t([True, False, True]), f, f),
        "maximum(shape)": lambda: lib.maximum(f, t([1.0, 2.0, 3.0])),
        "maximum(number)": lambda: lib.maximum(f, 2.0),
        "atan2(number)": lambda: lib.atan2(f, 2.0),
        "logical_and(number)": lambda: lib.logical_and(f, 1),
        "fmod(number, tensor)": lambda: lib.fmod(2, f),
        "sqrt(list)": lambda: lib.sqrt([1.0]),
        "hypot(int)": lambda: lib.hypot(i, i),
        "logaddexp(int)": lambda: lib.logaddexp(i, i),
        "nextafter(int)": lambda: lib.nextafter(i, i),
        "isclose(dtypes)": lambda: lib.isclose(f, f.double()),
        "isclose(rtol<0)": lambda: lib.isclose(f, f, rtol=-1),
        "isclose(atol<0)": lambda: lib.isclose(f, f, atol=-1),
        "clamp(no bounds)": lambda: lib.clamp(f),
        "clamp(mixed bounds)": lambda: lib.clamp(f, min=f, max=1.0),
        "lerp(dtype end)": lambda: lib.lerp(f, f.double(), 0.5),
        "lerp(dtype weight)": lambda: lib.lerp(f, f, f.double()),
        "lerp(int)": lambda: lib.lerp(i, i, 0.5),
        "polygamma(n<0)": lambda: lib.polygamma(-1, f),
        "polygamma(float n)": lambda: lib.polygamma(1.5, f),
        "div(mode)": lambda: lib.div(f, f, rounding_mode="round"),
        "floor_divide(int, 0)": lambda: lib.floor_divide(i, 0),
        "remainder(int, 0)": lambda: lib.remainder(i, t([1, 0])),
        "fmod(int, 0)": lambda: lib.fmod(i, 0),
        "div trunc(int, 0)": lambda: lib.div(i, 0, rounding_mode="trunc"),
        "floor_divide(bool)": lambda: lib.floor_divide(b, b),
        "remainder(bool)": lambda: lib.remainder(b, b),
        "addcdiv(int)": lambda: lib.addcdiv(f, i, i),
        "addcmul(shape)": lambda: lib.addcmul(f, f, t([1.0, 2.0, 3.0])),
        "float_power(numbers)": lambda: lib.float_power(2, 3),
        "leaf in-place": lambda: t([1.0], requires_grad=True).sin_(),
        "leaf in-place clamp": lambda: t([1.0], requires_grad=True).clamp_(0, 1),
    }


@pytest.mark.torch
@pytest.mark.parametrize("case", list(_bad_calls(fabric)))
def test_errors_match_torch(case):
    import torch

    with pytest.raises(Exception) as theirs:
        _bad_calls(torch)[case]()
    with pytest.raises(Exception) as ours:
        _bad_calls(fabric)[case]()
    assert issubclass(ours.type, theirs.type) or issubclass(theirs.type, ours.type), \
        f"{case}: torch raises {theirs.type.__name__}: {theirs.value}; fabric raises {ours.type.__name__}: {ours.value}"


def test_error_messages():
    f = fabric.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        fabric.tensor([1, 2]).sqrt_()
    with pytest.raises(RuntimeError, match=r"output with shape \[2\] doesn't match the broadcast shape \[2, 2\]"):
        f.clone().mul_(fabric.ones(2, 2))
    with pytest.raises(RuntimeError, match="where expected condition to be a boolean tensor"):
        fabric.where(f, f, f)
    with pytest.raises(NotImplementedError, match="\"bitwise_and_cpu\" not implemented for 'Float'"):
        fabric.bitwise_and(f, f)
    with pytest.raises(TypeError, match=r"maximum\(\): argument 'other' \(position 2\) must be Tensor, not float"):
        fabric.maximum(f, 2.0)
    with pytest.raises(RuntimeError, match="Float did not match Double"):
        fabric.isclose(f, f.double())
    with pytest.raises(RuntimeError, match="expected dtype float for `end` but got dtype double"):
        fabric.lerp(f, f.double(), 0.5)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        fabric.tensor([1, 2]) // 0
    with pytest.raises(RuntimeError, match="the derivative for 'floor_divide' is not implemented"):
        (fabric.tensor([3.0], requires_grad=True) // 2).sum().backward()
    x = fabric.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError):
        x.add_(fabric.ones(2, 2))
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])  # untouched after the error
    assert x._version == 0


# --- numerical edge cases ------------------------------------------------------------------------

_SPECIAL_VALUES = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-300, -1e-300, 5e-324, 1e300, -1e300, 0.5,
                            -0.5, 1.0, -1.0, 2.0, -2.0, 3.7, -3.7, 40.0, -40.0, 710.0, -745.0, 1e15 + 0.5])


@pytest.mark.torch
@pytest.mark.parametrize("name", [n for n in UNARY if n not in ("bitwise_not",)])
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_unary_special_values_match_torch(name, dtype):
    import torch

    with np.errstate(all="ignore"):
        v = _SPECIAL_VALUES.astype(dtype)
    ours, err = _run(fabric, getattr(fabric, name), v)
    theirs, terr = _run(torch, getattr(torch, name), v)
    _compare(ours, theirs, err, terr, f"{name}({dtype} specials)")
    if err is None and ours.dtype.is_floating_point and name not in ("lgamma", "digamma", "erfinv", "relu"):
        # signed zeros as PyTorch (relu(-0.0) is +0.0 in fabric: NumPy's maximum, see docs/ops.md)
        o, t = ours.numpy(), theirs.numpy()
        zero = (t == 0) & (o == 0)
        np.testing.assert_array_equal(np.signbit(o[zero]), np.signbit(t[zero]), err_msg=f"{name}: sign of zero")


@pytest.mark.torch
def test_binary_special_values_match_torch():
    import torch

    v = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 7.0])
    a, b = np.meshgrid(v, v)
    a, b = a.ravel(), b.ravel()
    for name in ("floor_divide", "remainder", "fmod", "atan2", "maximum", "minimum", "fmax", "fmin", "hypot",
                 "logaddexp", "logaddexp2", "xlogy", "copysign", "nextafter", "pow", "float_power", "eq", "lt",
                 "ge"):
        ours, err = _run(fabric, getattr(fabric, name), a, b)
        theirs, terr = _run(torch, getattr(torch, name), a, b)
        _compare(ours, theirs, err, terr, f"{name}(specials)")
    for mode in ("trunc", "floor"):
        ours, err = _run(fabric, fabric.div, a, b, rounding_mode=mode)
        theirs, terr = _run(torch, torch.div, a, b, rounding_mode=mode)
        _compare(ours, theirs, err, terr, f"div({mode}, specials)")
        o, t = ours.numpy(), theirs.numpy()
        zero = (t == 0) & (o == 0)
        np.testing.assert_array_equal(np.signbit(o[zero]), np.signbit(t[zero]), err_msg=f"div {mode}: signed zero")
    ours = fabric.isclose(fabric.from_numpy(a), fabric.from_numpy(b), equal_nan=True)
    theirs = torch.isclose(torch.from_numpy(a), torch.from_numpy(b), equal_nan=True)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    x = np.array([np.nan, 1.5, -2.0, np.inf])
    for c in (0.0, -0.0, 1.0, float("nan")):
        ours, err = _run(fabric, fabric.clamp, x, c, None)
        theirs, terr = _run(torch, torch.clamp, x, c, None)
        _compare(ours, theirs, err, terr, f"clamp(min={c})")
    cond = np.array([True, False, True, False])
    ours, _ = _run(fabric, fabric.where, cond, x, np.array([np.inf, np.nan, 0.0, -0.0]))
    theirs, _ = _run(torch, torch.where, cond, x, np.array([np.inf, np.nan, 0.0, -0.0]))
    _compare(ours, theirs, None, None, "where(nan/inf)")


@pytest.mark.torch
def test_integer_edge_cases_match_torch():
    import torch

    for dt in ("int8", "uint8", "int32", "int64"):
        info = np.iinfo(dt)
        a = np.array([info.min, info.max, -7 if info.min < 0 else 7, 7, 0, 1], dt)
        b = np.array([-1 if info.min < 0 else 1, 3, 2, -2 if info.min < 0 else 2, 5, info.max], dt)
        for name in ("floor_divide", "remainder", "fmod", "maximum", "bitwise_xor", "mul", "sub", "square", "abs",
                     "sign", "neg"):
            fn = getattr(fabric, name)
            args = (a,) if name in ("square", "abs", "sign", "neg") else (a, b)
            ours, err = _run(fabric, fn, *args)
            theirs, terr = _run(torch, getattr(torch, name), *args)
            if name in ("floor_divide", "remainder", "fmod") and info.min < 0:
                continue  # INT_MIN // -1 overflows (undefined in C); both wrap differently
            _compare(ours, theirs, err, terr, f"{name}({dt} edges)")
        for div_mode in ("trunc", "floor"):
            for lhs, rhs in ((a[2:], b[2:]),):
                ours, err = _run(fabric, fabric.div, lhs, rhs, rounding_mode=div_mode)
                theirs, terr = _run(torch, torch.div, lhs, rhs, rounding_mode=div_mode)
                _compare(ours, theirs, err, terr, f"div {div_mode} ({dt})")
        shifts = np.array([0, 1, 7, 8, 31, 32, 63, 64, -1, 100], np.int64)
        vals = np.full(shifts.shape, -5 if info.min < 0 else 5, dt)
        for name in ("bitwise_left_shift", "bitwise_right_shift"):
            s = shifts.astype(dt) if dt != "uint8" else np.clip(shifts, 0, 255).astype(dt)
            ours, err = _run(fabric, getattr(fabric, name), vals, s)
            theirs, terr = _run(torch, getattr(torch, name), vals, s)
            _compare(ours, theirs, err, terr, f"{name}({dt})")
            for k in (0, 3, 7, 8, 63, 64, -1):
                ours, err = _run(fabric, getattr(fabric, name), vals, k)
                theirs, terr = _run(torch, getattr(torch, name), vals, k)
                _compare(ours, theirs, err, terr, f"{name}({dt}, {k})")


@pytest.mark.torch
def test_special_functions_accuracy_vs_torch():
    """float64 accuracy of the NumPy-only special functions, against torch
    (which uses libm / Cephes): relative 1e-13 or better (1e-12 for
    polygamma), absolute 1e-14 near the zeros of lgamma and digamma."""
    import torch

    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-6, 6, 4000), rng.uniform(-0.5, 0.5, 500), np.geomspace(1e-300, 1, 100),
                        -np.geomspace(1e-300, 1, 100), rng.uniform(-28, 28, 500)])
    for name in ("erf", "erfc"):
        ours = getattr(fabric, name)(fabric.from_numpy(x)).numpy()
        theirs = getattr(torch, name)(torch.from_numpy(x)).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=2e-15, atol=1e-300, err_msg=name)  # 1e-300: subnormals
    y = np.concatenate([rng.uniform(-1, 1, 4000), 1 - np.geomspace(2.3e-16, 0.1, 200), np.geomspace(1e-300, 0.1, 50)])
    np.testing.assert_allclose(fabric.erfinv(fabric.from_numpy(y)).numpy(), torch.erfinv(torch.from_numpy(y)).numpy(),
                               rtol=1e-13, err_msg="erfinv")
    g = np.concatenate([rng.uniform(0, 40, 3000), rng.uniform(-20, 0, 2000), np.geomspace(1e-300, 1e300, 200)])
    for name in ("lgamma", "digamma"):
        ours = getattr(fabric, name)(fabric.from_numpy(g)).numpy()
        theirs = getattr(torch, name)(torch.from_numpy(g)).numpy()
        near_zero = np.abs(theirs) < 0.5
        np.testing.assert_allclose(ours[~near_zero], theirs[~near_zero], rtol=1e-12, err_msg=name)
        np.testing.assert_allclose(ours[near_zero], theirs[near_zero], rtol=0, atol=1e-14, err_msg=name)
    p = np.concatenate([rng.uniform(0.05, 30, 1000), rng.uniform(-5, 0, 500)])
    for n in (1, 2, 3, 6):
        ours = fabric.polygamma(n, fabric.from_numpy(p)).numpy()
        theirs = torch.polygamma(n, torch.from_numpy(p)).numpy()
        # torch's trigamma (n = 1) is a short asymptotic series, accurate to ~1e-9
        np.testing.assert_allclose(ours, theirs, rtol=2e-9 if n == 1 else 1e-12, err_msg=f"polygamma {n}")


def test_special_functions_against_math():
    x = np.linspace(-8, 8, 2001)
    np.testing.assert_allclose(fabric.erf(fabric.from_numpy(x)).numpy(), [math.erf(v) for v in x], rtol=1e-15,
                               atol=1e-300)
    np.testing.assert_allclose(fabric.erfc(fabric.from_numpy(x)).numpy(), [math.erfc(v) for v in x], rtol=2e-15)
    y = np.linspace(-0.999, 0.999, 999)
    back = fabric.erf(fabric.erfinv(fabric.from_numpy(y))).numpy()
    np.testing.assert_allclose(back, y, rtol=1e-15, atol=1e-16)
    g = np.linspace(0.01, 50, 2001)
    np.testing.assert_allclose(fabric.lgamma(fabric.from_numpy(g)).numpy(), [math.lgamma(v) for v in g],
                               rtol=1e-13, atol=1e-14)
    # digamma is the derivative of lgamma; polygamma(1) of digamma (central differences)
    h = 1e-5
    d = (fabric.lgamma(fabric.from_numpy(g + h)) - fabric.lgamma(fabric.from_numpy(g - h))) / (2 * h)
    np.testing.assert_allclose(fabric.digamma(fabric.from_numpy(g)).numpy(), d.numpy(), rtol=1e-6, atol=1e-6)
    assert abs(fabric.digamma(fabric.tensor([1.0], dtype=fabric.float64)).item() + 0.5772156649015329) < 1e-15
    assert abs(fabric.polygamma(1, fabric.tensor([1.0], dtype=fabric.float64)).item() - math.pi ** 2 / 6) < 1e-15
    big = fabric.erf(fabric.from_numpy(np.linspace(-3, 3, 100000)))  # chunked path
    np.testing.assert_allclose(big.numpy()[::997], [math.erf(v) for v in np.linspace(-3, 3, 100000)[::997]],
                               rtol=1e-15, atol=1e-300)


def test_float32_special_functions_computed_in_float64():
    x = fabric.tensor([0.3, -1.7, 2.5])
    for name, ref in (("erf", math.erf), ("erfc", math.erfc), ("lgamma", math.lgamma)):
        y = getattr(fabric, name)(x)
        assert y.dtype == fabric.float32
        np.testing.assert_allclose(y.numpy(), np.float32([ref(v) for v in x.numpy().astype(np.float64)]), rtol=0)


# --- gradients: node names, ties, in-place autograd, double backward -----------------------------

_GRAD_CASES = {
    "abs": lambda m, x, y: m.abs(x), "sqrt": lambda m, x, y: m.sqrt(x.abs()),
    "square": lambda m, x, y: m.square(x), "sigmoid": lambda m, x, y: m.sigmoid(x),
    "logit": lambda m, x, y: m.logit(m.sigmoid(x)), "logit_eps": lambda m, x, y: m.logit(m.sigmoid(x), eps=0.3),
    "erfinv": lambda m, x, y: m.erfinv(m.tanh(x)), "lgamma": lambda m, x, y: m.lgamma(x.abs() + 0.5),
    "polygamma": lambda m, x, y: m.polygamma(2, x.abs() + 0.5), "round_dec": lambda m, x, y: m.round(x, decimals=1),
    "floor": lambda m, x, y: m.floor(x), "frac": lambda m, x, y: m.frac(x), "relu": lambda m, x, y: m.relu(x),
    "nan_to_num": lambda m, x, y: m.nan_to_num(x / (x - x.detach())), "sinc": lambda m, x, y: m.sinc(x),
    "div_floor": lambda m, x, y: m.div(x, y, rounding_mode="floor"), "remainder": lambda m, x, y: m.remainder(x, y),
    "remainder_s": lambda m, x, y: m.remainder(x, 1.5), "fmod": lambda m, x, y: m.fmod(x, y),
    "fmod_s": lambda m, x, y: m.fmod(x, 1.5), "float_power": lambda m, x, y: m.float_power(x.abs(), y),
    "atan2": lambda m, x, y: m.atan2(x, y), "maximum": lambda m, x, y: m.maximum(x, y),
    "fmin": lambda m, x, y: m.fmin(x, y), "hypot": lambda m, x, y: m.hypot(x, y),
    "logaddexp": lambda m, x, y: m.logaddexp(x, y), "logaddexp2": lambda m, x, y: m.logaddexp2(x, y),
    "xlogy": lambda m, x, y: m.xlogy(x, y.abs()), "xlogy_s": lambda m, x, y: m.xlogy(x, 2.0),
    "copysign": lambda m, x, y: m.copysign(x, y), "copysign_s": lambda m, x, y: m.copysign(x, -1.0),
    "where": lambda m, x, y: m.where(x > 0, x, y), "where_s": lambda m, x, y: m.where(x > 0, x, 0.0),
    "clamp": lambda m, x, y: m.clamp(x, -0.5, 0.5), "clamp_t": lambda m, x, y: m.clamp(x, y, y + 1),
    "clamp_min": lambda m, x, y: m.clamp_min(x, 0.1), "clamp_min_t": lambda m, x, y: m.clamp_min(x, y),
    "clamp_max": lambda m, x, y: m.clamp_max(x, 0.1), "clamp_max_t": lambda m, x, y: m.clamp_max(x, y),
    "lerp": lambda m, x, y: m.lerp(x, y, 0.3), "lerp_t": lambda m, x, y: m.lerp(x, y, y),
    "addcmul": lambda m, x, y: m.addcmul(x, x, y, value=0.5), "addcdiv": lambda m, x, y: m.addcdiv(x, x, y),
    "rpow": lambda m, x, y: 2 ** x,
}


@pytest.mark.torch
@pytest.mark.parametrize("case", list(_GRAD_CASES))
def test_grad_fn_names_and_double_backward_match_torch(case):
    import torch

    rng = np.random.default_rng(3)
    xv, yv = rng.uniform(-2, 2, 6), rng.uniform(0.5, 2, 6) * np.sign(rng.uniform(-1, 1, 6))
    res = []
    for lib in (fabric, torch):
        x = lib.tensor(xv, requires_grad=True)
        y = lib.tensor(yv, requires_grad=True)
        out = _GRAD_CASES[case](lib, x, y)
        name = type(out.grad_fn).__name__ if out.grad_fn is not None else None
        gy = lib.tensor(np.linspace(-1, 1, 6))
        g = lib.autograd.grad(out, (x, y), gy, create_graph=True, allow_unused=True)
        needs = [gi for gi in g if gi is not None and gi.requires_grad]
        gg = lib.autograd.grad(sum((gi * gi).sum() for gi in needs), (x, y), allow_unused=True) if needs \
            else (None, None)
        res.append((name, out, g, gg))
    (n1, o1, g1, gg1), (n2, o2, g2, gg2) = res
    if case != "rpow":  # fabric.pow (arith) names the number-base node PowBackward1
        assert n1 == n2, f"{case}: node {n1} vs torch {n2}"
    np.testing.assert_allclose(_np_of(o1), _np_of(o2), rtol=1e-12, atol=1e-12, equal_nan=True)
    for what, ours, theirs in (("grad", g1, g2), ("double backward", gg1, gg2)):
        for a, b in zip(ours, theirs):
            a, b = _np_of(a), _np_of(b)
            if b is None or a is None:
                assert not np.any(a if b is None else b), f"{what} {case}: only one side has a gradient"
                continue
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12, equal_nan=True, err_msg=f"{what} {case}")


def test_reflected_remainder_gradient():
    """``3.5 % y``: PyTorch does not differentiate remainder(number, tensor);
    fabric gives the derivative -floor(3.5 / y)."""
    y = fabric.tensor([0.8, 1.5, -2.0], dtype=fabric.float64, requires_grad=True)
    (3.5 % y).sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), -np.floor(3.5 / y.detach().numpy()))


@pytest.mark.torch
def test_tie_gradients_match_torch():
    import torch

    a = np.array([1.0, 2.0, 3.0, np.nan, 1.0])
    b = np.array([1.0, 1.0, 4.0, 2.0, np.nan])
    for name in ("maximum", "minimum", "fmax", "fmin"):
        grads = []
        for lib in (fabric, torch):
            x, y = lib.tensor(a, requires_grad=True), lib.tensor(b, requires_grad=True)
            getattr(lib, name)(x, y).sum().backward()
            grads.append((x.grad.numpy(), y.grad.numpy()))
        np.testing.assert_array_equal(grads[0][0], grads[1][0], err_msg=name)
        np.testing.assert_array_equal(grads[0][1], grads[1][1], err_msg=name)
    v = np.array([0.0, 1.0, 0.5, -1.0, 2.0, 1.0])
    lo, hi = np.array([0.0, 0.0, 0.5, 0.0, 3.0, 1.0]), np.array([1.0, 1.0, 0.5, 0.5, 2.5, 1.0])
    for bounds in ((0.0, 1.0), (0.5, 0.5), (lo, hi), (lo, None), (None, hi)):
        grads = []
        for lib in (fabric, torch):
            x = lib.tensor(v, requires_grad=True)
            bs = [lib.tensor(q, requires_grad=True) if isinstance(q, np.ndarray) else q for q in bounds]
            lib.clamp(x, *bs).sum().backward()
            grads.append([x.grad.numpy()] + [q.grad.numpy() for q in bs if hasattr(q, "grad")])
        for ga, gb in zip(*grads):
            np.testing.assert_array_equal(ga, gb, err_msg=f"clamp {bounds}")


_INPLACE = {
    "abs_": lambda t: t.abs_(), "sqrt_": lambda t: t.abs_().sqrt_(), "exp_": lambda t: t.exp_(),
    "neg_": lambda t: t.neg_(), "relu_": lambda t: t.relu_(), "sigmoid_": lambda t: t.sigmoid_(),
    "tanh_": lambda t: t.tanh_(), "sin_": lambda t: t.sin_(), "clamp_": lambda t: t.clamp_(-0.5, 0.5),
    "clamp_t": lambda t: t.clamp_(min=t.detach() * 0 - 0.5), "pow_": lambda t: t.pow_(3),
    "pow_t": lambda t: t.abs_().pow_(t.detach() * 0 + 1.5), "square_": lambda t: t.square_(),
    "log_": lambda t: t.abs_().log_(), "erf_": lambda t: t.erf_(), "lgamma_": lambda t: t.abs_().lgamma_(),
    "lerp_": lambda t: t.lerp_(t.detach() * 2, 0.25), "addcmul_": lambda t: t.addcmul_(t.detach() + 1, t.detach() * 2, value=0.5),
    "atan2_": lambda t: t.atan2_(t.detach() + 3), "remainder_": lambda t: t.remainder_(0.7),
    "floor_": lambda t: t.floor_(), "logit_": lambda t: t.abs_().mul_(0.3).logit_(),
    "xlogy_": lambda t: t.xlogy_(2.0), "copysign_": lambda t: t.copysign_(-1.0),
    "hypot_": lambda t: t.hypot_(t.detach() - 1),
    "reciprocal_": lambda t: t.reciprocal_(), "polygamma_": lambda t: t.abs_().polygamma_(1),
}


@pytest.mark.torch
@pytest.mark.parametrize("case", list(_INPLACE))
def test_inplace_autograd_matches_torch(case):
    """In-place on a non-leaf: same values, node, version bump, gradients and
    second derivatives as PyTorch (ops whose backward needs the old value read
    a copy that keeps its history)."""
    import torch

    v = np.array([0.3, -1.2, 0.8, 1.7])
    res = []
    for lib in (fabric, torch):
        x = lib.tensor(v, requires_grad=True)
        y = x * 1.5
        v0 = y._version
        r = _INPLACE[case](y)
        assert r is y and y._version > v0
        out = (y * lib.tensor([1.0, 2.0, 3.0, 4.0])).sum()
        g, = lib.autograd.grad(out, x, create_graph=True)
        gg = lib.autograd.grad((g * g).sum(), x, allow_unused=True)[0] if g.requires_grad else None
        res.append((type(y.grad_fn).__name__, y.detach().numpy().copy(), _np_of(g), _np_of(gg)))
    (n1, y1, g1, gg1), (n2, y2, g2, gg2) = res
    assert n1 == n2, f"{case}: {n1} vs {n2}"
    rtol = 1e-8 if case == "polygamma_" else 1e-10  # torch's trigamma is accurate to ~1e-9 only
    np.testing.assert_allclose(y1, y2, rtol=rtol, err_msg=case)
    np.testing.assert_allclose(g1, g2, rtol=rtol, atol=1e-12, err_msg=case)
    if gg2 is None or gg1 is None:
        assert not np.any(gg1 if gg2 is None else gg2), case
    else:
        np.testing.assert_allclose(gg1, gg2, rtol=rtol * 10, atol=1e-12, err_msg=case)


def test_inplace_bookkeeping():
    x = fabric.tensor([0.5, 1.0], requires_grad=True)
    y = x * 2
    z = y.sin()  # saves y
    y.exp_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
    w = fabric.tensor([1.0, 4.0])
    view = w[1:]
    view.sqrt_()
    assert w.tolist() == [1.0, 2.0] and w._version == view._version == 1
    with fabric.no_grad():
        p = fabric.tensor([-1.0, 2.0], requires_grad=True)
        p.clamp_(min=0)  # allowed on a leaf under no_grad
    assert p.tolist() == [0.0, 2.0] and p.grad_fn is None
    q = fabric.tensor([1.0, 2.0], requires_grad=True) * 1
    q.eq_(fabric.tensor([1.0, 3.0]))
    assert q.tolist() == [1.0, 0.0] and type(q.grad_fn).__name__ == "EqBackward0"
    i = fabric.tensor([5, 6])
    assert i.bitwise_and_(3).tolist() == [1, 2] and i._version == 1


# --- where, methods, out=, misc ---------------------------------------------------------------------

def test_where_forms():
    c = fabric.tensor([[True, False], [False, True]])
    rows, cols = fabric.where(c)
    assert rows.tolist() == [0, 1] and cols.tolist() == [0, 1]
    x = fabric.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert x.where(c, 0.0).tolist() == [[1.0, 0.0], [0.0, 4.0]]
    assert fabric.where(c, 1, 0).dtype == fabric.int64
    assert fabric.where(c, 1.0, 0).dtype == fabric.float32
    assert fabric.where(c.to(fabric.uint8), x, -x).tolist() == [[1.0, -2.0], [-3.0, 4.0]]


def test_method_forms_and_out():
    x = fabric.tensor([0.5, 1.5], dtype=fabric.float64)
    assert x.polygamma(1).tolist() == fabric.polygamma(1, x).tolist()
    assert x.clamp(max=1.0).tolist() == [0.5, 1.0]
    assert x.clip(min=1.0).tolist() == [1.0, 1.5]
    out = fabric.empty(2, dtype=fabric.float64)
    r = fabric.sqrt(x, out=out)
    assert r is out and np.allclose(out.numpy(), np.sqrt([0.5, 1.5]))
    out = fabric.empty(0, dtype=fabric.float64)  # an empty out is resized silently
    fabric.maximum(x, fabric.tensor([1.0, 1.0], dtype=fabric.float64), out=out)
    assert out.tolist() == [1.0, 1.5]
    mask = fabric.empty(2, dtype=fabric.bool)
    fabric.lt(x, 1.0, out=mask)
    assert mask.tolist() == [True, False]
    assert fabric.positive(x) is x
    assert fabric.allclose(x, x + 1e-12) is True and fabric.equal(x, x.clone()) is True
    assert fabric.equal(x, x[:1]) is False
    assert fabric.isreal(x).all().item()
    assert (x.abs() == abs(x)).all().item()


def test_scalar_tensor_like():
    from fabric.ops.pointwise import scalar_tensor_like  # an internal helper (not a torch name)

    ref = fabric.tensor([1.0], dtype=fabric.float16)
    assert scalar_tensor_like(2, ref).dtype == fabric.int64
    assert scalar_tensor_like(2.5, ref).dtype == fabric.float32
    assert scalar_tensor_like(True, ref).dtype == fabric.bool
    assert scalar_tensor_like(2, ref).ndim == 0


def test_integer_inputs_give_default_float_dtype():
    i = fabric.tensor([1, 2, 3])
    for name in ("sqrt", "exp2", "sin", "sigmoid", "erf", "lgamma", "digamma", "deg2rad", "reciprocal", "atan"):
        assert getattr(fabric, name)(i).dtype == fabric.float32, name
    fabric.set_default_dtype(fabric.float64)
    assert fabric.sqrt(i).dtype == fabric.float64 and fabric.atan2(i, i).dtype == fabric.float64
    assert fabric.xlogy(i, 2).dtype == fabric.float64


# --- hypothesis: shapes, broadcasting, dtypes ----------------------------------------------------------

_FLOAT_UNARY = {"abs": (-3, 3), "sqrt": (0.1, 3), "exp": (-3, 3), "log1p": (-0.5, 3), "sin": (-3, 3),
                "tanh": (-3, 3), "sigmoid": (-5, 5), "erf": (-3, 3), "erfinv": (-0.9, 0.9), "lgamma": (0.1, 5),
                "digamma": (0.1, 5), "atan": (-3, 3), "reciprocal": (0.2, 3), "relu": (-3, 3), "floor": (-3, 3),
                "round": (-3, 3), "sign": (-3, 3), "expm1": (-3, 3), "asinh": (-3, 3), "sinc": (0.1, 3)}
_FLOAT_BINARY = {"maximum": (-3, 3), "minimum": (-3, 3), "atan2": (-3, 3), "hypot": (-3, 3),
                 "logaddexp": (-3, 3), "xlogy": (0.1, 3), "copysign": (-3, 3), "fmod": (0.5, 3),
                 "remainder": (0.5, 3), "fmax": (-3, 3), "lt": (-3, 3), "eq": (-1, 1), "float_power": (0.5, 2)}

if given is not None:
    @needs_hypothesis
    @pytest.mark.torch
    @given(name=st.sampled_from(sorted(_FLOAT_UNARY)), data=st.data(),
           shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4),
           dtype=st.sampled_from(["float32", "float64"]), transpose=st.booleans())
    def test_unary_shapes_match_torch(name, data, shape, dtype, transpose):
        import torch

        lo, hi = _FLOAT_UNARY[name]
        a = data.draw(hnp.arrays(dtype, shape, elements=st.floats(float(np.float32(lo)), float(np.float32(hi)),
                                                                  width=32)))
        if transpose and a.ndim >= 2:
            a = np.swapaxes(a, 0, -1)  # non-contiguous input
        x = fabric.from_numpy(a).requires_grad_(True)
        tx = torch.from_numpy(a.copy()).requires_grad_(True)
        y, ty = getattr(fabric, name)(x), getattr(torch, name)(tx)
        _compare(y, ty, None, None, f"{name}{a.shape}")
        if y.requires_grad and y.numel():
            gy = np.linspace(-1, 1, y.numel()).reshape(y.shape).astype(dtype)
            y.backward(fabric.from_numpy(gy))
            ty.backward(torch.from_numpy(gy))
            np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-4 if dtype == "float32" else 1e-10,
                                       atol=1e-6)

    @needs_hypothesis
    @pytest.mark.torch
    @given(name=st.sampled_from(sorted(_FLOAT_BINARY)), data=st.data(),
           shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=4),
           dtypes=st.tuples(st.sampled_from(["float32", "float64", "int64", "int32"]),
                            st.sampled_from(["float32", "float64", "int64", "float16"])))
    def test_binary_broadcasting_matches_torch(name, data, shapes, dtypes):
        import torch

        lo, hi = _FLOAT_BINARY[name]
        arrays = []
        for shape, dt in zip(shapes.input_shapes, dtypes):
            el = (st.integers(int(np.ceil(lo)), int(hi)) if dt.startswith("int")
                  else st.floats(float(np.float16(lo)), float(np.float16(hi)), width=16))
            arrays.append(data.draw(hnp.arrays(dt, shape, elements=el)))
        a, b = arrays
        diff = [v.dtype.kind == "f" for v in (a, b)]
        x = fabric.from_numpy(a.copy()).requires_grad_(diff[0])
        y = fabric.from_numpy(b.copy()).requires_grad_(diff[1])
        tx = torch.from_numpy(a.copy()).requires_grad_(diff[0])
        ty = torch.from_numpy(b.copy()).requires_grad_(diff[1])
        out, err = _run(fabric, getattr(fabric, name), x, y)
        tout, terr = _run(torch, getattr(torch, name), tx, ty)
        _compare(out, tout, err, terr, f"{name}({a.dtype}{a.shape}, {b.dtype}{b.shape})")
        if err is None and out.requires_grad and out.numel():
            gy = np.linspace(-1, 1, out.numel()).reshape(out.shape).astype(str(tout.dtype).split(".")[-1])
            out.backward(fabric.from_numpy(gy))
            tout.backward(torch.from_numpy(gy))
            for ours, theirs in ((x, tx), (y, ty)):
                if theirs.grad is not None:
                    rtol = 1e-10 if ours.dtype == fabric.float64 else 2e-3
                    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=rtol, atol=rtol)
                    assert ours.grad.shape == ours.shape

    @needs_hypothesis
    @pytest.mark.torch
    @given(data=st.data(), shapes=hnp.mutually_broadcastable_shapes(num_shapes=3, min_dims=0, max_dims=3,
                                                                     max_side=3),
           op=st.sampled_from(["where", "clamp", "lerp", "addcmul", "addcdiv"]))
    def test_ternary_broadcasting_matches_torch(data, shapes, op):
        import torch

        s0, s1, s2 = shapes.input_shapes
        a = data.draw(hnp.arrays("float64", s0, elements=st.floats(-2, 2)))
        b = data.draw(hnp.arrays("float64", s1, elements=st.floats(-2, 2)))
        c = data.draw(hnp.arrays("float64", s2, elements=st.floats(0.5, 2)))
        res = []
        for lib in (torch, fabric):
            ta, tb, tc = (lib.tensor(v, requires_grad=True) for v in (a, b, c))
            if op == "where":
                out = lib.where(lib.tensor(a > 0), tb, tc)
            elif op == "clamp":
                out = lib.clamp(ta, tb, tb + tc)
            elif op == "lerp":
                out = lib.lerp(ta, tb, tc)
            else:
                out = getattr(lib, op)(ta, tb, tc, value=0.5)
            try:
                out.sum().backward()
            except RuntimeError:
                # torch's clamp backward fails for a 0-d input with broadcast bounds
                assume(lib is not torch)
                raise
            res.append((out.detach().numpy(), [t.grad.numpy() if t.grad is not None else None for t in (ta, tb, tc)]))
        res.reverse()
        np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-12, atol=1e-12)
        for ga, gb in zip(res[0][1], res[1][1]):
            if gb is None:
                assert ga is None or not ga.any()
            else:
                np.testing.assert_allclose(ga, gb, rtol=1e-10, atol=1e-12)

    @needs_hypothesis
    @pytest.mark.torch
    @given(data=st.data(), dtype=st.sampled_from(["int8", "uint8", "int16", "int32", "int64"]),
           shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=2, max_side=4),
           name=st.sampled_from(["floor_divide", "remainder", "fmod", "bitwise_and", "bitwise_xor",
                                 "bitwise_left_shift", "bitwise_right_shift", "maximum", "div_trunc", "div_floor"]))
    def test_integer_ops_match_torch(data, dtype, shapes, name):
        import torch

        info = np.iinfo(dtype)
        a = data.draw(hnp.arrays(dtype, shapes.input_shapes[0],
                                 elements=st.integers(builtin_max(info.min, -100), builtin_min(info.max, 100))))
        if name.startswith("bitwise_") and "shift" in name:
            el = st.integers(0 if info.min == 0 else -2, info.bits + 2)
        else:
            el = st.integers(builtin_max(info.min, -9), builtin_min(info.max, 9)).filter(lambda v: v != 0)
        b = data.draw(hnp.arrays(dtype, shapes.input_shapes[1], elements=el))
        if name.startswith("div_"):
            ours, err = _run(fabric, fabric.div, a, b, rounding_mode=name[4:])
            theirs, terr = _run(torch, torch.div, a, b, rounding_mode=name[4:])
        else:
            ours, err = _run(fabric, getattr(fabric, name), a, b)
            theirs, terr = _run(torch, getattr(torch, name), a, b)
        _compare(ours, theirs, err, terr, f"{name}({dtype})")

builtin_max, builtin_min = max, min


def test_no_numpy_warnings():
    """nan/inf results come quietly, as in PyTorch (no RuntimeWarning)."""
    import warnings

    x = fabric.tensor([-1.0, 0.0, 1e30, -1e30, float("nan"), float("inf")])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in ("sqrt", "rsqrt", "log2", "log10", "log1p", "reciprocal", "asin", "acos", "acosh", "atanh",
                     "sigmoid", "exp2", "expm1", "sinh", "cosh", "tan", "sin", "erfinv", "lgamma", "digamma",
                     "logit", "sinc"):
            getattr(fabric, name)(x)
        fabric.polygamma(2, x)
        for name in ("remainder", "fmod", "floor_divide", "xlogy", "logaddexp", "atan2", "hypot"):
            getattr(fabric, name)(x, x.flip(0) if hasattr(x, "flip") else x)
        fabric.div(x, 0.0, rounding_mode="trunc")
        fabric.div(x, 0.0, rounding_mode="floor")
        fabric.addcdiv(x, x, fabric.zeros(6))
        fabric.isclose(x, x)


@pytest.mark.torch
def test_polygamma_edges_match_torch():
    import torch

    v = np.array([0.0, -0.0, -2.5, np.inf, -np.inf, np.nan, 3.0, 1e-300, 1e300, -1e6 - 0.25, -30.7])
    for n in range(5):
        ours = fabric.polygamma(n, fabric.from_numpy(v)).numpy()
        theirs = torch.polygamma(n, torch.from_numpy(v)).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, equal_nan=True, err_msg=f"polygamma({n})")
    # negative integers are poles: fabric gives inf where torch's trigamma gives a huge finite value
    assert fabric.polygamma(1, fabric.tensor([-1.0, -3.0])).isinf().all().item()


@pytest.mark.torch
@pytest.mark.parametrize("op", ["sin_", "clamp_", "relu_", "sigmoid_", "pow_", "atan2_", "lerp_", "floor_",
                                "addcdiv_"])
def test_inplace_on_views_matches_torch(op):
    """An in-place op on a view rewrites the base's history (CopySlices)."""
    import torch

    calls = {"sin_": lambda v, lib: v.sin_(), "clamp_": lambda v, lib: v.clamp_(-0.5, 0.5),
             "relu_": lambda v, lib: v.relu_(), "sigmoid_": lambda v, lib: v.sigmoid_(),
             "pow_": lambda v, lib: v.pow_(2), "atan2_": lambda v, lib: v.atan2_(v.detach() + 2),
             "lerp_": lambda v, lib: v.lerp_(v.detach() * 3, 0.5), "floor_": lambda v, lib: v.floor_(),
             "addcdiv_": lambda v, lib: v.addcdiv_(v.detach() + 1, v.detach() + 2, value=0.5)}
    res = []
    for lib in (fabric, torch):
        x = lib.tensor([0.3, -1.2, 0.8, 1.7, -0.4, 2.2], dtype=lib.float64, requires_grad=True)
        y = x * 2
        calls[op](y[1:5:2], lib)
        out = (y * lib.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], dtype=lib.float64)).sum()
        g, = lib.autograd.grad(out, x, create_graph=True)
        gg = lib.autograd.grad((g * g).sum(), x)[0] if g.requires_grad else None
        res.append((type(y.grad_fn).__name__, y.detach().numpy().copy(), _np_of(g), _np_of(gg)))
    assert res[0][0] == res[1][0] == "CopySlices"
    for a, b in zip(res[0][1:], res[1][1:]):
        if a is None or b is None:
            assert not np.any(a if b is None else b)
        else:
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, err_msg=op)


def test_inplace_on_no_grad_view_with_grad_mode_raises():
    x = fabric.tensor([1.0, 2.0], requires_grad=True) * 1
    with fabric.no_grad():
        v = x[:1]
    with pytest.raises(RuntimeError, match="view was created in no_grad mode"):
        v.relu_()
    with pytest.raises(RuntimeError, match="view was created in no_grad mode"):
        v.sin_()
    with fabric.no_grad():
        v.relu_()  # fine: both in no_grad


@pytest.mark.torch
@pytest.mark.parametrize("dt", ["int32", "int64", "uint8", "float32", "float64", "bool"])
def test_augmented_assignment_operators_match_torch(dt):
    import torch

    v = _np_values(dt, signed=False)
    import operator as op

    for stmt, fn, other in (("//=", op.ifloordiv, 2), ("%=", op.imod, 3), ("**=", op.ipow, 2), ("<<=", op.ilshift, 1),
                            (">>=", op.irshift, 1), ("&=", op.iand, 3), ("|=", op.ior, 4), ("^=", op.ixor, 1),
                            ("&=", op.iand, True), ("//=", op.ifloordiv, 2.5), ("**=", op.ipow, 0.5)):
        res = []
        for lib in (fabric, torch):
            x = _to(lib, v)
            try:
                r = fn(x, other)
                assert r is x  # in place
                res.append((r, None))
            except Exception as e:
                res.append((None, type(e)))
        (ours, err), (theirs, terr) = res
        stmt = f"x {stmt} {other!r}"
        _compare(ours, theirs, err, terr, f"{stmt} with {dt}")


def test_add_sub_alpha_with_a_python_number_other():
    import fabric

    x = fabric.arange(3.0)
    assert fabric.add(x, 2, alpha=3).tolist() == [6.0, 7.0, 8.0]
    assert fabric.sub(x, 2, alpha=3).tolist() == [-6.0, -5.0, -4.0]
    assert fabric.rsub(x, 1, alpha=2).tolist() == [1.0, -1.0, -3.0]
    assert x.clone().add_(1, alpha=2).tolist() == [2.0, 3.0, 4.0]
    assert x.clone().sub_(1, alpha=2).tolist() == [-2.0, -1.0, 0.0]


@pytest.mark.torch
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_lerp_is_bit_identical_to_torch(dtype):
    """PyTorch's CPU lerp is a fused multiply-add (float16 via float32); fabric reproduces its rounding."""
    import torch

    import fabric

    rng = np.random.default_rng(1)
    a, b, wt = (rng.standard_normal(4000).astype(dtype) for _ in range(3))
    for w in (0.1, 0.5, 0.9, -0.3, 1.7):
        got = fabric.lerp(fabric.tensor(a), fabric.tensor(b), w).numpy()
        want = torch.lerp(torch.tensor(a), torch.tensor(b), w).numpy()
        assert got.tobytes() == want.tobytes()
    got = fabric.lerp(fabric.tensor(a), fabric.tensor(b), fabric.tensor(wt)).numpy()
    assert got.tobytes() == torch.lerp(torch.tensor(a), torch.tensor(b), torch.tensor(wt)).numpy().tobytes()
