"""Core arithmetic: add, sub, mul, div, neg, pow, exp, log, matmul.

Each op is a Function (forward on arrays, backward with Tensor ops) plus a
public function that promotes operands as PyTorch does.

Example::

    >>> import fabric
    >>> fabric.add(fabric.tensor([1, 2]), 2.5)
    tensor([3.5000, 4.5000])
"""
from __future__ import annotations

import math

import numpy as np

from .._tensor import Tensor
from ..autograd.function import NO_SAVE_CTX as _NO_CTX
from ..autograd.function import Function, _apply, _apply_elementwise, _normalize, _record_elementwise
from ..autograd.grad_mode import state as _state
from ..autograd.observe import hook as _hook
from ._jvp import broadcast_tangents, jvp_sum
from ._registry import declare_op
from ._registry import public_names as declared_names
from ._util import binary_operands, checked_scalar, float_array, float_operands, xp_of

_ndarray = np.ndarray
_make = Tensor._make

__all__ = ["rdiv"]  # (the reflected ``/``, an operator helper) + the declared ops (end of module)


def _out(result, out):
    if out is None:
        return result
    from .inplace import copy_into_out

    return copy_into_out(out, result)


class Add(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, a, b):
        return a + b

    @staticmethod
    def backward(ctx, gy):
        return gy, gy

    @staticmethod
    def jvp(ctx, ta, tb):
        return broadcast_tangents(ctx, ta, tb)


class Sub(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, a, b):
        if getattr(a, "dtype", None) == bool and getattr(b, "dtype", bool) == bool:  # noqa: E721 (NumPy dtype equality)
            raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                               "Use the `^` or `logical_xor()` operator instead.")
        return a - b

    @staticmethod
    def backward(ctx, gy):
        return gy, -gy

    @staticmethod
    def jvp(ctx, ta, tb):
        return broadcast_tangents(ctx, ta, None if tb is None else -tb)


class Mul(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, gy):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        return (gy * b if need_a else None), (gy * a if need_b else None)

    @staticmethod
    def jvp(ctx, ta, tb):
        a, b = ctx.saved_tensors
        return jvp_sum([None if ta is None else ta * b, None if tb is None else a * tb], (a, b), (ta, tb))


class Div(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a / b

    @staticmethod
    def backward(ctx, gy):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        ga = gy / b if need_a else None
        gb = -gy * a / (b * b) if need_b else None
        return ga, gb

    @staticmethod
    def jvp(ctx, ta, tb):
        a, b = ctx.saved_tensors
        return jvp_sum([None if ta is None else ta / b, None if tb is None else -tb * a / (b * b)], (a, b), (ta, tb))


class Neg(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x):
        if x.dtype == bool:
            raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
                               "to invert a mask, use the `~` or `logical_not()` operator instead.")
        return -x

    @staticmethod
    def backward(ctx, gy):
        return -gy

    @staticmethod
    def jvp(ctx, t):
        return -t


class Exp(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x):
        y = xp_of(x).exp(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, gy):
        y, = ctx.saved_tensors
        return gy * y

    @staticmethod
    def jvp(ctx, t):
        y, = ctx.saved_tensors
        return NotImplemented if t.is_complex() else t * y


class Log(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        xp = xp_of(x)
        with _np_errstate(xp):
            return xp.log(x)

    @staticmethod
    def backward(ctx, gy):
        x, = ctx.saved_tensors
        return gy / x

    @staticmethod
    def jvp(ctx, t):
        x, = ctx.saved_tensors
        return NotImplemented if t.is_complex() else t / x


class PowScalar(Function):
    """x ** c for a Python number c."""
    _array_forward = True
    _node_name = "PowBackward0"

    @staticmethod
    def forward(ctx, x, c):
        ctx.save_for_backward(x)
        ctx.c = c
        xp = xp_of(x)
        if x.dtype.kind in "iub" and isinstance(c, int) and c < 0:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        with _np_errstate(xp):
            if c == 2:
                return x * x
            if c == 0.5:
                return xp.sqrt(x)
            return xp.power(x, c) if x.dtype.kind == "f" or not isinstance(c, float) else xp.power(x, c)

    @staticmethod
    def backward(ctx, gy):
        x, = ctx.saved_tensors
        c = ctx.c
        if c == 0:
            return gy * 0, None
        if c == 1:
            return gy, None
        if c == 2:
            return gy * (2 * x), None
        return gy * (c * pow(x, c - 1)), None

    @staticmethod
    def jvp(ctx, t, _):
        if t.is_complex():
            return NotImplemented
        return PowScalar.backward(ctx, t)[0]   # elementwise: J t = J^T t


class PowTensor(Function):
    """a ** b with both Tensors (or a a Python number)."""
    _array_forward = True
    _node_name = "PowBackward1"

    @staticmethod
    def forward(ctx, a, b):
        xp = xp_of(b if not hasattr(a, "dtype") else a)
        if hasattr(b, "dtype") and b.dtype.kind in "iu" and (not hasattr(a, "dtype") or a.dtype.kind in "iu"):
            y = _int_power(xp, a, b)
        else:
            with _np_errstate(xp):
                y = xp.power(a, b)
        ctx.save_for_backward(a, b, y)
        return y

    @staticmethod
    def backward(ctx, gy):
        a, b, y = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        ga = gb = None
        if need_a:
            ga = gy * b * pow(a, b - 1)
        if need_b:
            from .pointwise import where

            la = log(a) if isinstance(a, Tensor) else _log_scalar(a)
            # d/db a**b = a**b log a; PyTorch defines it as 0 where a == 0 and b >= 0 (real part of b)
            gb = gy * y * la
            if isinstance(a, Tensor):
                gb = where((a == 0) & (b.real >= 0), gb * 0, gb)
        return ga, gb


class PowScalarBase(PowTensor):
    """number ** tensor (PyTorch names its node PowBackward2)."""
    _array_forward = True
    _node_name = "PowBackward2"


def _int_power(xp, a, b):
    """Integer ``a ** b`` with PyTorch's rule for negative exponents (an
    integer result: 1 ** -n = 1, (-1) ** -n = +-1, anything else 0)."""
    neg = b < 0
    if not bool(neg.any()):
        return xp.power(a, b)
    y = xp.power(a, xp.where(neg, 0, b))
    one = a == 1
    minus_one = a == -1
    sign = xp.where(b % 2 == 0, 1, -1).astype(y.dtype)
    return xp.where(neg, xp.where(one, 1, xp.where(minus_one, sign, 0)).astype(y.dtype), y)


def _log_scalar(a):
    import math

    if isinstance(a, complex):
        import cmath

        return cmath.log(a) if a else complex("-inf")
    return math.log(a) if a > 0 else (float("-inf") if a == 0 else float("nan"))


def _matmul_error(a, b):
    """Raise PyTorch's error for a matmul of these shapes (its message
    depends on how the operands fold into mm / mv / bmm)."""
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {a.ndim}D "
                           f"and {b.ndim}D")
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_C_NAMES.get(a.dtype.name)} != "
                           f"{_C_NAMES.get(b.dtype.name)}")
    if a.dtype.kind == "b":
        kernel = "dot" if a.ndim == b.ndim == 1 else "addmv_impl_cpu" if b.ndim == 1 else \
            "addmm_impl_cpu_" if b.ndim == 2 else "bmm"
        raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')
    k = a.shape[-1]
    if a.ndim == 1 and b.ndim == 1:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{k}] and src [{b.shape[0]}] to have the same "
                           f"number of elements, but got {k} and {b.shape[0]} elements respectively")
    rows = math.prod(a.shape[:-1])
    if b.ndim == 1:  # folded into mv
        raise RuntimeError(f"size mismatch, got input ({rows}), mat ({rows}x{k}), vec ({b.shape[0]})")
    if b.ndim == 2:  # folded into mm
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{k} and {b.shape[0]}x{b.shape[1]})")
    ba, bb = a.shape[:-2], b.shape[:-2]
    n = max(len(ba), len(bb))
    ba, bb = (1,) * (n - len(ba)) + ba, (1,) * (n - len(bb)) + bb
    for i, (x, y) in enumerate(zip(ba, bb)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b ({y}) at non-singleton "
                               f"dimension {i}")
    batch = math.prod(max(x, y) for x, y in zip(ba, bb))
    raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{batch}, {k}] but got: "
                       f"[{batch}, {b.shape[-2]}].")


class MatMul(Function):
    _array_forward = True
    _node_name = "MmBackward0"

    @staticmethod
    def forward(ctx, a, b):
        if a.ndim == 0 or b.ndim == 0 or a.shape[-1] != b.shape[-2 if b.ndim > 1 else 0] or a.dtype != b.dtype \
                or a.dtype.kind == "b":
            _matmul_error(a, b)
        ctx.save_for_backward(a, b)
        try:
            return a @ b
        except ValueError:  # batch dims that do not broadcast
            _matmul_error(a, b)

    @staticmethod
    def backward(ctx, gy):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        ga = gb = None
        if a.ndim == 1 and b.ndim == 1:
            return (gy * b if need_a else None), (gy * a if need_b else None)
        if a.ndim == 1:
            g2 = gy.unsqueeze(-2)
            if need_a:
                ga = matmul(g2, b.mT).squeeze(-2)
            if need_b:
                gb = matmul(a.unsqueeze(-1), g2)
            return ga, gb
        if b.ndim == 1:
            g2 = gy.unsqueeze(-1)
            if need_a:
                ga = matmul(g2, b.unsqueeze(0))
            if need_b:
                gb = matmul(a.mT, g2).squeeze(-1)
            return ga, gb
        if need_a:
            ga = matmul(gy, b.mT)
        if need_b:
            gb = matmul(a.mT, gy)
        return ga, gb

    @staticmethod
    def jvp(ctx, ta, tb):
        a, b = ctx.saved_tensors   # bilinear: (a + ta) @ (b + tb) to first order
        if ta is None:
            return matmul(a, tb)
        return matmul(ta, b) if tb is None else matmul(ta, b) + matmul(a, tb)


class _np_errstate:
    """Silence NumPy's divide/invalid warnings (PyTorch returns inf/nan quietly)."""

    __slots__ = ("xp", "old")

    def __init__(self, xp):
        self.xp = xp

    def __enter__(self):
        import numpy as np

        if self.xp is np:
            self.old = np.seterr(divide="ignore", invalid="ignore", over="ignore")

    def __exit__(self, *exc):
        import numpy as np

        if self.xp is np:
            np.seterr(**self.old)




def _bool_sub_error():
    raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to "
                       "invert a mask, use the `~` or `logical_not()` operator instead.")


def _is_bool(v):
    return (isinstance(v, Tensor) and v._data.dtype == bool) or v.__class__ is bool


def _broadcast_error(a, b):
    """PyTorch's message for operands whose shapes do not broadcast."""
    sa = tuple(a.shape) if isinstance(a, Tensor) else ()
    sb = tuple(b.shape) if isinstance(b, Tensor) else ()
    n = max(len(sa), len(sb))
    pa, pb = (1,) * (n - len(sa)) + sa, (1,) * (n - len(sb)) + sb
    for d in range(n - 1, -1, -1):
        if pa[d] != pb[d] and pa[d] != 1 and pb[d] != 1:
            return RuntimeError(f"The size of tensor a ({pa[d]}) must match the size of tensor b ({pb[d]}) at "
                                f"non-singleton dimension {d}")
    return None


def binary(cls, a, b, floats_only=False):
    try:
        return _binary(cls, a, b, floats_only)
    except ValueError:
        err = _broadcast_error(a, b)
        if err is None:
            raise
        raise err from None
    except Exception:
        for t in (a, b):  # a sparse operand (its placeholder array fails the dense path): fabric/sparse
            if isinstance(t, Tensor) and t._sparse:
                return t._pointwise(cls, (a, b), ())
        raise


def _binary(cls, a, b, floats_only=False):
    """``cls`` applied to Tensor ``a`` and ``b`` (Tensor or Python number) with promotion: the general path
    behind :func:`operator`'s fast path."""
    if cls is Sub and (_is_bool(a) or _is_bool(b)) and not (_is_bool(a) and _is_bool(b)):
        _bool_sub_error()
    if floats_only:
        a, b, x, y = float_operands(a, b)
    else:
        a, b, x, y = binary_operands(a, b)
    return _apply(cls, (a, b), (x, y))


def operator(cls, floats_only=False):
    """The Tensor operator method (``__add__`` ...) for ``cls``: the common
    cases — two CPU tensors of one dtype, or a float tensor and a Python
    number — run inline here and skip promotion; the rest go through
    :func:`binary`."""
    forward = cls.forward

    def op(a, b):
        x = a._data
        if x.__class__ is _ndarray and _hook.observer is None:  # observed ops go through _apply
            bc = b.__class__
            if bc is float or bc is int:
                if x.dtype.kind == "f":
                    if a._requires_grad and _state.enabled:
                        return _record_elementwise(cls, a, b, x, b)
                    out = forward(_NO_CTX, x, b)
                    return _make(out if out.__class__ is _ndarray else _normalize(out), False)
            elif bc is Tensor or isinstance(b, Tensor):
                y = b._data
                if y.__class__ is _ndarray and x.dtype is y.dtype and (not floats_only or x.dtype.kind == "f"):
                    try:
                        if (a._requires_grad or b._requires_grad) and _state.enabled:
                            return _record_elementwise(cls, a, b, x, y)
                        out = forward(_NO_CTX, x, y)
                    except ValueError:
                        err = _broadcast_error(a, b)
                        if err is None:
                            raise
                        raise err from None
                    return _make(out if out.__class__ is _ndarray else _normalize(out), False)
        return binary(cls, a, b, floats_only)

    op.__name__ = op.__qualname__ = f"__{cls.__name__.lower()}__"
    return op


# ``Tensor.__add__`` ... and the Tensor path of ``add`` ...: the fast path is written once, in ``operator``.
add_operator, sub_operator, mul_operator = operator(Add), operator(Sub), operator(Mul)
div_operator = operator(Div, floats_only=True)


# PyTorch names dtypes by their C++ scalar types in matmul's dtype error
_C_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
            "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
            "bool": "bool"}


def _times(value, alpha):
    """``alpha * value`` for add/sub's ``alpha=`` (``value`` a Tensor or a number)."""
    return mul(value, alpha) if isinstance(value, Tensor) else value * alpha


@declare_op()
def add(input: Tensor, other: Tensor | float, *, alpha: float = 1, out: Tensor | None = None) -> Tensor:
    """``input + alpha * other`` with PyTorch's type promotion."""
    if alpha != 1:
        other = _times(other, alpha)
    if out is None and isinstance(input, Tensor):
        return add_operator(input, other)
    a, b, x, y = binary_operands(input, other)
    return _out(_apply(Add, (a, b), (x, y)), out)


@declare_op(aliases=("subtract",))
def sub(input: Tensor, other: Tensor | float, *, alpha: float = 1, out: Tensor | None = None) -> Tensor:
    """``input - alpha * other``."""
    if alpha != 1:
        other = _times(other, alpha)
    if out is None and isinstance(input, Tensor):
        return sub_operator(input, other)
    if _is_bool(input) or _is_bool(other):
        _bool_sub_error()
    a, b, x, y = binary_operands(input, other)
    return _out(_apply(Sub, (a, b), (x, y)), out)


subtract = sub


@declare_op()
def rsub(input: Tensor, other: Tensor | float, *, alpha: float = 1) -> Tensor:
    """``other - alpha * input`` (the reflected ``-``)."""
    if alpha != 1:
        input = _times(input, alpha)
    if _is_bool(input) or _is_bool(other):
        if _is_bool(input) and _is_bool(other):
            raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` "
                               "or `logical_xor()` operator instead.")
        _bool_sub_error()
    a, b, x, y = binary_operands(other, input)
    return _apply(Sub, (a, b), (x, y))


@declare_op(aliases=("multiply",))
def mul(input: Tensor, other: Tensor | float, *, out: Tensor | None = None) -> Tensor:
    """Elementwise product with broadcasting."""
    if out is None and isinstance(input, Tensor):
        return mul_operator(input, other)
    a, b, x, y = binary_operands(input, other)
    return _out(_apply(Mul, (a, b), (x, y)), out)


multiply = mul


@declare_op(aliases=("divide", "true_divide"))
def div(input: Tensor, other: Tensor | float, *, rounding_mode: str | None = None, out: Tensor | None = None) -> Tensor:
    """True division (integers give the default float dtype), or floor /
    trunc division with ``rounding_mode``."""
    if rounding_mode is not None:
        from . import pointwise

        return _out(pointwise.div_rounding(input, other, rounding_mode), out)
    if out is None and isinstance(input, Tensor):
        return div_operator(input, other)
    a, b, x, y = float_operands(input, other)
    return _out(_apply(Div, (a, b), (x, y)), out)


divide = div
true_divide = div


def rdiv(input: Tensor, other: Tensor | float) -> Tensor:
    """``other / input`` (the reflected ``/``)."""
    a, b, x, y = float_operands(other, input)
    return _apply(Div, (a, b), (x, y))


@declare_op(aliases=("negative",))
def neg(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    return _out(_apply(Neg, (input,), (input._data,)), out)


negative = neg


@declare_op()
def exp(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    r = _apply_elementwise(Exp, input, float_array(input._data))
    return r if out is None else _out(r, out)


@declare_op()
def log(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    r = _apply_elementwise(Log, input, float_array(input._data))
    return r if out is None else _out(r, out)


@declare_op()
def pow(input: Tensor, exponent: Tensor | float, *, out: Tensor | None = None) -> Tensor:
    """``input ** exponent``; either may be a Python number."""
    if not isinstance(exponent, Tensor):
        a, c, x, c2 = binary_operands(input, exponent)
        if x.dtype.kind in "iu" and c.__class__ is int:  # the exponent must fit the integer type
            checked_scalar(c, x.dtype)
        return _out(_apply(PowScalar, (a, c), (x, c2)), out)
    cls = PowTensor if isinstance(input, Tensor) else PowScalarBase
    a, b, x, y = binary_operands(input, exponent)
    if (y if cls is PowScalarBase else x).dtype.kind == "b":
        raise NotImplementedError('"pow" not implemented for \'Bool\'')
    return _out(_apply(cls, (a, b), (x, y)), out)


@declare_op()
def matmul(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Matrix product with NumPy/PyTorch broadcasting of batch dims and
    1-D operands."""
    try:
        x, y = input._data, other._data
    except AttributeError:
        x = y = None
    if x.__class__ is _ndarray and y.__class__ is _ndarray and x.dtype is y.dtype and x.ndim == 2 and y.ndim == 2 \
            and out is None and _hook.observer is None:  # the common matrix product: checks in MatMul.forward
        if (input._requires_grad or other._requires_grad) and _state.enabled:
            return _record_elementwise(MatMul, input, other, x, y, True)
        if x.shape[1] == y.shape[0] and x.dtype.kind != "b":
            return _make(x @ y, False)  # MatMul.forward without a graph
        _matmul_error(x, y)
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise TypeError(f"matmul(): argument 'other' (position 2) must be Tensor, not "
                        f"{type(other if isinstance(input, Tensor) else input).__name__}")
    if input._sparse or other._sparse:  # a sparse operand: fabric/sparse
        return _out(input.mm(other) if input._sparse else other._rmm(input), out)
    x, y = input._data, other._data
    if x.dtype != y.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_C_NAMES.get(x.dtype.name)} != "
                           f"{_C_NAMES.get(y.dtype.name)}")
    if x.__class__ is not y.__class__:
        from ._util import device_mismatch

        device_mismatch(input, other)
    return _out(_apply(MatMul, (input, other), (x, y)), out)


__all__ += declared_names(__name__)
