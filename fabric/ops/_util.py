"""Helpers shared by the op modules: operand promotion, dims, shapes."""
from __future__ import annotations

import builtins
import numbers
from typing import Any, NoReturn

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor, _wrap_dim
from ..backends import backend_of

_ndarray = np.ndarray
_SCALARS = (builtins.float, builtins.int, builtins.bool, builtins.complex)


def device_mismatch(a, b) -> NoReturn:
    raise RuntimeError("Expected all tensors to be on the same device, but found at least two devices, "
                       f"{a.device} and {b.device}!")


def _same_device(a, b, ad, bd):
    """Check devices; a 0-d CPU tensor may join a CUDA op (as in PyTorch)."""
    if ad.__class__ is _ndarray and bd.__class__ is _ndarray:
        return ad, bd
    if ad.__class__ is not _ndarray and bd.__class__ is not _ndarray:
        if ad.device.id != bd.device.id:
            device_mismatch(a, b)
        return ad, bd
    if ad.__class__ is _ndarray and ad.ndim == 0:
        return backend_of(bd).xp.asarray(ad), bd
    if bd.__class__ is _ndarray and bd.ndim == 0:
        return ad, backend_of(ad).xp.asarray(bd)
    device_mismatch(a, b)


_BOUNDS: dict = {}


def _int_bounds(dt):
    r = _BOUNDS.get(dt)
    if r is None:
        info = np.iinfo(dt)
        r = _BOUNDS[dt] = (builtins.int(info.min), builtins.int(info.max))
    return r


def scalar_value(v):
    """A Python number from a number-like (NumPy scalar, bool, int, float)."""
    if v.__class__ in _SCALARS:
        return v
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, numbers.Number):
        return v
    raise TypeError(f"expected a Tensor or a number, got {type(v).__name__}")


def binary_operands(a, b):
    """Promote two operands (Tensors or numbers) to PyTorch's result dtype.

    Returns ``(a, b, x, y)``: the original operands (numbers normalised) and
    what forward receives (arrays, or a Python number for a scalar operand).
    """
    if isinstance(a, Tensor):
        ad = a._data
        if isinstance(b, Tensor):
            bd = b._data
            if ad.dtype is not bd.dtype and ad.dtype != bd.dtype:
                rt = D.binary_result_np(ad, True, bd)
                if ad.dtype != rt:
                    ad = ad.astype(rt)
                if bd.dtype != rt:
                    bd = bd.astype(rt)
            if ad.__class__ is not _ndarray or bd.__class__ is not _ndarray:
                ad, bd = _same_device(a, b, ad, bd)
            return a, b, ad, bd
        if b.__class__ not in _SCALARS:
            b = scalar_value(b)
        rt = D.binary_result_np(ad, False, b)
        if ad.dtype is not rt and ad.dtype != rt:
            ad = ad.astype(rt)
        y = b
        if b.__class__ is builtins.int and rt.kind in "iu":
            lo, hi = _int_bounds(rt)
            if not lo <= b <= hi:  # PyTorch wraps out-of-range Python ints; NumPy would raise
                y = np.array(b).astype(rt)
        return a, b, ad, y
    if isinstance(b, Tensor):
        b, a, bd, ad = binary_operands(b, a)
        return a, b, ad, bd
    raise TypeError(f"expected at least one Tensor operand, got {type(a).__name__} and {type(b).__name__}")


def float_operands(a, b):
    """Like :func:`binary_operands` but lifts integer results to the default
    float dtype (true division, atan2, ...).

    Integer operands are converted to float directly, never through the
    narrow integer type first: ``uint8 / 256`` divides by 256, not by 0.
    """
    if isinstance(a, Tensor) and a._data.dtype.kind in "fc" or isinstance(b, Tensor) and b._data.dtype.kind in "fc":
        return binary_operands(a, b)
    if isinstance(a, Tensor):
        if not isinstance(b, Tensor) and b.__class__ not in _SCALARS:
            b = scalar_value(b)
        rt = D.binary_result_np(a._data, isinstance(b, Tensor), b._data if isinstance(b, Tensor) else b)
    elif isinstance(b, Tensor):
        if a.__class__ not in _SCALARS:
            a = scalar_value(a)
        rt = D.binary_result_np(b._data, False, a)
    else:
        raise TypeError(f"expected at least one Tensor operand, got {type(a).__name__} and {type(b).__name__}")
    if rt.kind in "fc":
        return binary_operands(a, b)
    ft = D.get_default_dtype().np
    x = a._data.astype(ft) if isinstance(a, Tensor) else builtins.float(a)
    y = b._data.astype(ft) if isinstance(b, Tensor) else builtins.float(b)
    if isinstance(a, Tensor) and isinstance(b, Tensor) and (x.__class__ is not _ndarray or y.__class__ is not _ndarray):
        x, y = _same_device(a, b, x, y)
    return a, b, x, y


_C_NAMES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int", "int64": "int64_t",
            "float16": "c10::Half", "float32": "float", "float64": "double", "bfloat16": "c10::BFloat16"}


def overflows(value, np_dtype):
    """PyTorch's ``c10::overflows``: would converting Python number ``value``
    to ``np_dtype`` overflow?  Unsigned types accept negative integers down
    to -max (they wrap, as two's complement arithmetic does); floating types accept
    inf and nan; bool accepts anything."""
    kind = np_dtype.kind
    if kind == "b" or kind == "c":
        return False
    if isinstance(value, builtins.complex):  # a real dtype takes a complex number only without imaginary part
        if value.imag != 0:
            return True
        value = value.real
    if kind in "iu":
        if isinstance(value, builtins.float) and value != value:
            return True
        info = np.iinfo(np_dtype)
        lo = builtins.int(info.min) if kind == "i" or isinstance(value, builtins.float) else -builtins.int(info.max)
        return not lo <= value <= builtins.int(info.max)
    if kind == "f":
        if value != value or value in (builtins.float("inf"), builtins.float("-inf")):
            return False
        m = builtins.float(np.finfo(np_dtype).max)
        try:
            return not -m <= builtins.float(value) <= m
        except OverflowError:
            return True
    return False


def checked_scalar(value, np_dtype, names=_C_NAMES):
    """``value`` (a Python number) for filling a tensor of ``np_dtype``; raises
    PyTorch's RuntimeError when it does not fit (``fill_``, ``full``,
    ``masked_fill``, ``clamp`` bounds, ``where`` and ``setitem`` scalars)."""
    if overflows(value, np_dtype):
        raise RuntimeError(f"value cannot be converted to type {names.get(np_dtype.name, np_dtype.name)} "
                           "without overflow")
    if value.__class__ is builtins.complex and np_dtype.kind != "c":
        value = value.real  # overflows() made sure the imaginary part is zero
    if np_dtype.kind == "u" and value < 0:
        return builtins.int(value) % (builtins.int(np.iinfo(np_dtype).max) + 1)
    return value


_COMPLEX_NAMES = {"complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def reject_complex(t, exc, message):
    """Raise ``exc(message)`` when Tensor ``t`` is complex (ops PyTorch does not define
    for complex numbers: orderings, rounding ...); ``{dtype}`` in ``message`` becomes
    PyTorch's scalar-type name (``ComplexFloat``)."""
    d = getattr(t, "_data", None)
    if d is not None and d.dtype.kind == "c":
        raise exc(message.replace("{dtype}", _COMPLEX_NAMES.get(d.dtype.name, d.dtype.name)))


def float_array(x):
    """``x`` itself when floating, else cast to the default float dtype
    (exp/log/sqrt of an integer tensor give a float tensor, as in PyTorch)."""
    if x.dtype.kind in "fc":
        return x
    return x.astype(D.get_default_dtype().np)


def xp_of(array) -> Any:
    """The array module (NumPy or CuPy) that owns ``array``."""
    return np if array.__class__ is _ndarray else backend_of(array).xp


def normalize_dims(dim, ndim):
    """``dim`` (None, int, or sequence) as a sorted tuple of non-negative axes."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (builtins.int, np.integer)):
        return (_wrap_dim(dim, ndim),)
    dims = tuple(_wrap_dim(d, ndim) for d in dim)
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"dim {dims} appears multiple times in the list of dims")
    return tuple(sorted(dims))


def shape_args(args, name="shape"):
    """Accept ``f(2, 3)``, ``f((2, 3))``, ``f([2, 3])`` or ``f(Size)``."""
    if len(args) == 1 and not isinstance(args[0], (builtins.int, np.integer)):
        a = args[0]
        if isinstance(a, Tensor):
            return tuple(builtins.int(v) for v in a.tolist()) if a.ndim else (builtins.int(a.item()),)
        args = tuple(a)
    out = []
    for s in args:
        if isinstance(s, Tensor):
            s = s.item()
        if not isinstance(s, (builtins.int, np.integer)) or isinstance(s, builtins.bool):
            raise TypeError(f"{name} must be a sequence of ints, but got an element of type {type(s).__name__}")
        out.append(builtins.int(s))
    return tuple(out)


def factory_size(fname, args, size):
    """The shape of a factory called as ``f(2, 3)``, ``f((2, 3))`` or ``f(size=(2, 3))``."""
    if size is None:
        return shape_args(args, "size")
    if args:
        raise TypeError(f"{fname}() got multiple values for argument 'size'")
    if isinstance(size, (builtins.int, np.integer)):
        raise TypeError(f"{fname}(): argument 'size' must be tuple of ints, not {type(size).__name__}")
    return shape_args((size,), "size")


def infer_size(shape, numel):
    """Resolve one -1 in a target shape; error if the sizes do not match."""
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in shape:
        if s != -1:
            if s < 0:
                raise RuntimeError(f"invalid shape dimension {s}")
            known *= s
    if neg:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = list(shape)
        shape[neg[0]] = numel // known
        return tuple(shape)
    if known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return tuple(shape)
