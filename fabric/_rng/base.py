"""What the CPU (mt19937) and CUDA (Philox) generators share: the dtype
tables and the argument rules of PyTorch's samplers (shapes, dtypes,
``random_``'s bounds, casts of float64/int64 draws to the result dtype)."""
from __future__ import annotations

import math

import numpy as np

_DEFAULT_SEED = 67280421310721
_INT64_MIN = -(1 << 63)
_U64_MASK = (1 << 64) - 1

_F16 = np.dtype(np.float16)
_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_FLOATS = (_F16, _F32, _F64)
_DIGITS = {_F16: 11, _F32: 24, _F64: 53}
_FLOAT_RANGE = {dt: (float(np.finfo(dt).min), float(np.finfo(dt).max)) for dt in _FLOATS}
try:  # bfloat16 exists in NumPy only through the optional ml_dtypes package
    import ml_dtypes as _ml_dtypes

    _BF16 = np.dtype(_ml_dtypes.bfloat16)
    _FLOATS += (_BF16,)
    _DIGITS[_BF16] = 8
    _FLOAT_RANGE[_BF16] = (float(_ml_dtypes.finfo(_BF16).min), float(_ml_dtypes.finfo(_BF16).max))
except ImportError:
    _BF16 = None
# Computed in float and rounded down; c10::Half and c10::BFloat16 are built
# from a float, so casts from double go through float32.
_REDUCED = tuple(dt for dt in (_F16, _BF16) if dt is not None)


def _shape_of(shape) -> tuple:
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(map(int, shape))


def _cast(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``static_cast<scalar_t>`` of float64/int64 values (float16 and
    bfloat16 through float32)."""
    if dtype in _REDUCED and values.dtype != _F32:
        values = values.astype(np.float32)
    return values.astype(dtype, copy=False)


_DTYPES: dict = {}


def _dtype(dtype) -> np.dtype:
    """``np.dtype(dtype)``, memoised (it is on every call's path)."""
    try:
        return _DTYPES[dtype]
    except (KeyError, TypeError):
        dt = np.dtype(dtype)
        try:
            _DTYPES[dtype] = dt
        except TypeError:
            pass
        return dt


def _float_dtype(dtype, what: str) -> np.dtype:
    dt = _dtype(dtype)
    if dt not in _FLOAT_RANGE:
        raise NotImplementedError(f"{what} expects a floating point dtype, got {dt}")
    return dt


def _to_float_scalar(v: float, dt: np.dtype) -> float:
    """``v`` rounded to ``dt`` (float16/bfloat16 through float32)."""
    if dt in _REDUCED:
        return float(np.asarray(v, np.float32).astype(dt))
    return float(dt.type(v))


def _update_from(frm: int, dt: np.dtype) -> int:
    """Smallest valid ``from`` for float ``dt`` (random_from_to_impl)."""
    with np.errstate(over="ignore"):
        f = _to_float_scalar(frm + 1, dt)
    if not math.isfinite(f):
        return frm
    if int(f) < frm:
        mag = abs(frm + 1)
        n = mag.bit_length() - 1 if mag else 0
        frm = int(f) + (1 << (n - _DIGITS[dt] + 1))
    return frm


def _update_to(to: int, dt: np.dtype) -> int:
    with np.errstate(over="ignore"):
        f = _to_float_scalar(to - 1, dt)
    if not math.isfinite(f):
        return to
    if int(f) >= to:
        mag = abs(to - 1)
        n = mag.bit_length() - 1 if mag else 0
        to = int(f) - (1 << (n - _DIGITS[dt] + 1))
    return to


def _check_in_range(frm: int, to_inc: int, dt: np.dtype) -> None:
    if dt in _FLOATS:
        lo, hi = _FLOAT_RANGE[dt]
    elif dt == np.bool_:
        lo, hi = 0, 1
    else:
        info = np.iinfo(dt)
        lo, hi = int(info.min), int(info.max)
        if dt == np.uint64:
            hi = (1 << 63) - 1
    if not lo <= frm <= hi:
        raise RuntimeError(f"from is out of bounds for {dt}")
    if not lo <= to_inc <= hi:
        raise RuntimeError(f"to - 1 is out of bounds for {dt}")


def _random_range(low, high, dt):
    """Resolve ``random_``'s bounds as PyTorch does (shared by the CPU and CUDA
    generators): ``(span, base)`` for draws ``base + u % span``, or None for
    the full int64 range (a raw 64-bit draw). Raises on invalid bounds."""
    frm = 0 if low is None else int(low)
    if high is not None:
        to = int(high)
        if frm >= to:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={frm} >= to={to}")
        if dt in _FLOATS:
            frm, to = _update_from(frm, dt), _update_to(to, dt)
            if frm >= to:
                raise RuntimeError("random_ expects 'from' casted to dtype to be less than 'to' casted to dtype")
        _check_in_range(frm, to - 1, dt)
        return (to - frm) & _U64_MASK, frm
    if frm != _INT64_MIN:
        if dt in _FLOATS:
            to_inc = 1 << _DIGITS[dt]
            frm = _update_from(frm, dt)
            if frm >= to_inc:
                raise RuntimeError("random_ expects 'from' casted to dtype to be less than or equal to 'to_inc' "
                                   "casted to dtype")
        elif dt == np.bool_:
            to_inc = 1
        else:
            to_inc = int(np.iinfo(dt).max)
        _check_in_range(frm, to_inc, dt)
        return (to_inc - frm + 1) & _U64_MASK, frm
    if dt not in (np.dtype(np.int64), _F32, _F64, _BF16):
        raise NotImplementedError("random_ over the full int64 range handles only int64, float32, float64 and "
                                  "bfloat16")
    return None
