"""dtypes and PyTorch's type-promotion rules.

One function, :func:`result_type`, decides the computation dtype of every op.

Example::

    >>> import fabric
    >>> fabric.promote_types(fabric.int64, fabric.float16)
    fabric.float16
"""
from __future__ import annotations

import builtins as _builtins
from typing import Any

import numpy as np

__all__ = [
    "dtype", "float16", "half", "bfloat16", "float32", "float", "float64", "double",
    "int8", "int16", "int32", "int", "int64", "long", "short", "uint8", "bool",
    "complex64", "cfloat", "complex128", "cdouble",
    "get_default_dtype", "get_default_complex_dtype", "set_default_dtype", "promote_types", "result_type", "can_cast",
    "finfo", "iinfo",
]

_CATEGORY_BOOL, _CATEGORY_INT, _CATEGORY_FLOAT, _CATEGORY_COMPLEX = 0, 1, 2, 3


class dtype:
    """A tensor element type. Compare with ``==``; ``to_numpy`` gives the NumPy dtype."""

    __slots__ = ("name", "np", "itemsize", "is_floating_point", "is_signed", "is_complex", "_category")

    def __init__(self, name: str, np_dtype, category: _builtins.int):
        self.name = name
        self.np = np.dtype(np_dtype) if np_dtype is not None else None
        self.itemsize = self.np.itemsize if self.np is not None else 2
        self.is_floating_point = category == _CATEGORY_FLOAT
        self.is_signed = category >= _CATEGORY_FLOAT or (self.np is not None and self.np.kind == "i")
        self.is_complex = category == _CATEGORY_COMPLEX
        self._category = category

    def __repr__(self) -> str:
        return f"fabric.{self.name}"

    def __reduce__(self):
        return (_dtype_by_name, (self.name,))

    def to_real(self) -> dtype:
        """The dtype of this complex dtype's parts (``self`` when real), as PyTorch's."""
        return to_real(self)

    def to_complex(self) -> dtype:
        """The complex dtype with this dtype's precision, as PyTorch's."""
        return to_complex(self)

    def to_numpy(self):
        if self.np is None:
            raise TypeError(
                f"fabric.{self.name} needs the optional 'ml_dtypes' package (NumPy has no {self.name})"
            )
        return self.np

    @property
    def is_floating(self) -> _builtins.bool:  # pragma: no cover - convenience alias
        return self.is_floating_point


try:  # bfloat16 only through ml_dtypes, an optional dependency
    import ml_dtypes as _ml_dtypes

    _BF16 = np.dtype(_ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - depends on the environment
    _BF16 = None

float16 = half = dtype("float16", np.float16, _CATEGORY_FLOAT)
bfloat16 = dtype("bfloat16", _BF16, _CATEGORY_FLOAT)
float32 = float = dtype("float32", np.float32, _CATEGORY_FLOAT)
float64 = double = dtype("float64", np.float64, _CATEGORY_FLOAT)
int8 = dtype("int8", np.int8, _CATEGORY_INT)
int16 = short = dtype("int16", np.int16, _CATEGORY_INT)
int32 = int = dtype("int32", np.int32, _CATEGORY_INT)
int64 = long = dtype("int64", np.int64, _CATEGORY_INT)
uint8 = dtype("uint8", np.uint8, _CATEGORY_INT)
bool = dtype("bool", np.bool_, _CATEGORY_BOOL)
complex64 = cfloat = dtype("complex64", np.complex64, _CATEGORY_COMPLEX)
complex128 = cdouble = dtype("complex128", np.complex128, _CATEGORY_COMPLEX)

ALL_DTYPES = (float16, bfloat16, float32, float64, int8, int16, int32, int64, uint8, bool, complex64, complex128)
_BY_NAME = {d.name: d for d in ALL_DTYPES}
_BY_NP = {d.np: d for d in ALL_DTYPES if d.np is not None}
# NumPy dtypes without a fabric twin map onto the nearest one PyTorch would use.
_NP_FALLBACK = {np.dtype(np.uint16): int32, np.dtype(np.uint32): int64, np.dtype(np.uint64): int64}


def _dtype_by_name(name: str) -> dtype:
    return _BY_NAME[name]


def from_numpy_dtype(np_dtype) -> dtype:
    """The fabric dtype of a NumPy dtype (TypeError if there is none)."""
    try:
        return _BY_NP[np_dtype]
    except KeyError:
        pass
    np_dtype = np.dtype(np_dtype)
    if np_dtype in _BY_NP:
        return _BY_NP[np_dtype]
    if np_dtype in _NP_FALLBACK:
        return _NP_FALLBACK[np_dtype]
    raise TypeError(
        f"can't convert np.ndarray of type numpy.{np_dtype}. The only supported types are: "
        "float64, float32, float16, complex64, complex128, int64, int32, int16, int8, uint8, and bool."
    )


def to_dtype(value) -> dtype:
    """Accept a fabric dtype, a NumPy dtype, a Python type or a dtype name."""
    if value.__class__ is dtype:
        return value
    if value is builtins_float:
        return float64
    if value is builtins_int:
        return int64
    if value is builtins_bool:
        return bool
    if value is builtins_complex:
        return complex128
    if isinstance(value, str):
        name = value.replace("torch.", "").replace("fabric.", "")
        aliases = {"float": "float32", "double": "float64", "half": "float16", "long": "int64",
                   "int": "int32", "short": "int16", "cfloat": "complex64", "cdouble": "complex128"}
        name = aliases.get(name, name)
        if name in _BY_NAME:
            return _BY_NAME[name]
    try:
        return from_numpy_dtype(np.dtype(value))
    except TypeError:
        raise
    except Exception:
        raise TypeError(f"not a dtype: {value!r}") from None


builtins_float, builtins_int, builtins_bool = _builtins.float, _builtins.int, _builtins.bool
builtins_complex = _builtins.complex

_default_dtype = float32


def get_default_dtype() -> dtype:
    """The dtype of float tensors created from Python floats (float32 unless changed)."""
    return _default_dtype


def set_default_dtype(d) -> None:
    """Set the default floating dtype (float16, float32 or float64)."""
    global _default_dtype
    d = to_dtype(d)
    if not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default_dtype = d
    _PROMOTE_CACHE.clear()


def default_float_np():
    return _default_dtype.np


def to_complex(d: dtype) -> dtype:
    """The complex dtype whose parts are ``d`` (PyTorch's ``toComplexType``);
    complex dtypes map to themselves.  fabric has no complex32: float16 and
    bfloat16 map to complex64."""
    if d._category == _CATEGORY_COMPLEX:
        return d
    return complex128 if d is float64 else complex64


def to_real(d: dtype) -> dtype:
    """The dtype of the real and imaginary parts of complex ``d`` (``d`` itself when real)."""
    if d is complex64:
        return float32
    if d is complex128:
        return float64
    return d


def get_default_complex_dtype() -> dtype:
    """The dtype of tensors made from Python complex numbers: the complex
    twin of the default float dtype (complex64 unless float64 is the default)."""
    return to_complex(_default_dtype)


def promote_types(a: dtype, b: dtype) -> dtype:
    """PyTorch's ``promote_types``: the smallest dtype both can be cast to
    without losing category (a float beats any int, an int beats bool)."""
    if a is b:
        return a
    if a._category != b._category:
        hi, lo = (a, b) if a._category > b._category else (b, a)
        if hi._category == _CATEGORY_COMPLEX and lo is float64:
            return complex128  # complex keeps the wider float's precision
        return hi
    if {a, b} == {float16, bfloat16}:
        return float32
    if bfloat16 in (a, b):
        other = b if a is bfloat16 else a
        return bfloat16 if other.itemsize <= 2 and other is not float16 else other
    return _BY_NP[np.promote_types(a.np, b.np)]


def _combine(higher, lower):
    """PyTorch's combine_categories for dim > zero-dim > scalar priority."""
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.is_complex:
        return higher
    if lower.is_complex:
        return to_complex(higher) if higher.is_floating_point else lower
    if higher.is_floating_point:
        return higher
    if higher is bool or lower.is_floating_point:
        return promote_types(higher, lower)
    return higher


_PROMOTE_CACHE: dict = {}


def _scalar_dtype(value):
    cls = value.__class__
    if cls is builtins_bool:
        return bool
    if cls is builtins_int:
        return int64
    if cls is builtins_float:
        return _default_dtype
    if isinstance(value, (np.bool_,)):
        return bool
    if isinstance(value, np.integer):
        return int64
    if isinstance(value, np.floating):
        return _default_dtype
    if cls is builtins_complex or isinstance(value, (complex, np.complexfloating)):
        return to_complex(_default_dtype)
    raise TypeError(f"unsupported operand type {cls.__name__}")


_Tensor: Any = None  # set by fabric._tensor: Tensor sits above dtypes (result_type tells Tensors by class)


def result_type(*operands) -> dtype:
    """The dtype PyTorch computes ``op(*operands)`` in, before op-specific
    adjustments (true division and float functions lift ints to the default
    float, comparisons return bool). Operands are Tensors or Python numbers.
    """
    Tensor = _Tensor

    dim = zero = wrapped = None
    for o in operands:
        if isinstance(o, Tensor):
            d = _BY_NP.get(o._data.dtype) or from_numpy_dtype(o._data.dtype)
            if o._data.ndim:
                dim = d if dim is None else promote_types(dim, d)
            else:
                zero = d if zero is None else promote_types(zero, d)
        elif o is not None:
            d = _scalar_dtype(o)
            wrapped = d if wrapped is None else promote_types(wrapped, d)
    return _combine(dim, _combine(zero, wrapped))


def binary_result_np(a, b_is_tensor: _builtins.bool, b):
    """Fast path of :func:`result_type` for ``array op other``: returns the
    NumPy dtype. ``a`` is an array; ``b`` an array (if ``b_is_tensor``) or a
    Python scalar. Cached on (dtype, zero-dim, dtype, zero-dim)."""
    if b_is_tensor:
        key = (a.dtype, a.ndim == 0, b.dtype, b.ndim == 0)
    else:
        key = (a.dtype, a.ndim == 0, b.__class__)
    r = _PROMOTE_CACHE.get(key)
    if r is None:
        da = from_numpy_dtype(a.dtype)
        if b_is_tensor:
            db = from_numpy_dtype(b.dtype)
            if a.ndim and not b.ndim:
                r = _combine(da, db)
            elif b.ndim and not a.ndim:
                r = _combine(db, da)
            else:
                r = promote_types(da, db)
        else:
            db = _scalar_dtype(b)
            r = _combine(da, db)
        r = r.np
        _PROMOTE_CACHE[key] = r
    return r


def can_cast(from_: dtype, to: dtype) -> _builtins.bool:
    """PyTorch's ``can_cast``: False only when casting lowers the category."""
    return from_._category <= to._category


def is_complex_np(np_dtype) -> _builtins.bool:
    """Whether a NumPy dtype is complex (the check ops use on arrays)."""
    return np_dtype.kind == "c"


class finfo:
    """Machine limits of a floating dtype, like ``torch.finfo``."""

    def __init__(self, type=None):
        d = to_real(to_dtype(type)) if type is not None else _default_dtype  # complex: its parts' limits
        if not d.is_floating_point:
            raise TypeError(f"finfo is only for floating dtypes, got {d}")
        info = np.finfo(d.to_numpy())
        self.bits = info.bits
        self.eps = float_(info.eps)
        self.max = float_(info.max)
        self.min = float_(info.min)
        self.tiny = self.smallest_normal = float_(info.tiny)
        self.resolution = float_(info.resolution)
        self.dtype = d.name

    def __repr__(self):
        return (f"finfo(resolution={self.resolution}, min={self.min}, max={self.max}, eps={self.eps}, "
                f"smallest_normal={self.tiny}, tiny={self.tiny}, dtype={self.dtype})")


class iinfo:
    """Machine limits of an integer dtype, like ``torch.iinfo``."""

    def __init__(self, type):
        d = to_dtype(type)
        if d.is_floating_point or d.is_complex:
            raise TypeError(f"iinfo is only for integer dtypes, got {d}")
        info = np.iinfo(d.np) if d is not bool else None
        self.bits = d.np.itemsize * 8
        self.max = _builtins.int(info.max) if info else 1
        self.min = _builtins.int(info.min) if info else 0
        self.dtype = d.name

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


float_ = builtins_float
