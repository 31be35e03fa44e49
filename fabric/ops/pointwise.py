"""Elementwise ops: unary math, binary arithmetic, comparisons, logical and
bitwise ops, ``where``, ``clamp``, ``lerp``, ``addcmul``/``addcdiv`` and
their in-place variants.

Each differentiable op is a Function whose backward is one short formula in
Tensor ops (so double backward works), written next to its forward in the
spirit of PyTorch's ``derivatives.yaml``.  The unary ops share one small base
class, :class:`_Unary`: each is a single table row (name, forward on arrays,
what backward saves, gradient).

dtypes follow PyTorch: float functions (``sqrt``, ``sin``, ``erf`` ...) give
the default float dtype for integer and bool inputs; comparisons and
predicates give bool and record no graph; ``floor``/``round``/``sign`` keep
integer dtypes.  An in-place variant computes the out-of-place result, checks
that it can be cast to ``self``'s dtype and shape, writes it into ``self`` and
makes ``self`` that result (new ``grad_fn``, version bumped).

Special functions (erf, erfc, erfinv, lgamma, digamma, polygamma) evaluate the
float64 kernels of :mod:`fabric._special_functions` (methods and measured
accuracy are described there).

Example::

    >>> import fabric
    >>> x = fabric.tensor([-1.0, 0.5, 2.0], requires_grad=True)
    >>> y = fabric.clamp(x, min=0.0, max=1.0)
    >>> y.sum().backward()
    >>> x.grad
    tensor([0., 1., 0.])
"""
from __future__ import annotations

import builtins
import functools
import math
import numbers

import numpy as np

from .. import _dtype as D
from .. import _special_functions as _sf
from .._special_functions import quiet as _quiet
from .._tensor import Tensor
from ..autograd.function import (
    Function,
    _apply,
    _apply1,
    _apply_elementwise,
    _check_inplace,
    _normalize,
    _rebase_view,
    check_no_internal_overlap,
)
from ..autograd.grad_mode import state as _state
from ._batching import elementwise
from ._jvp import jvp_sum
from ._registry import declare, declare_op
from ._registry import public_names as declared_names
from ._util import (
    _SCALARS,
    _same_device,
    binary_operands,
    checked_scalar,
    float_array,
    float_operands,
    reject_complex,
    scalar_value,
    xp_of,
)
from .arith import exp, mul, pow
from .inplace import copy_into_out
from .reduce import _return_type
from .reduce import sum as _sum

__all__: list[str] = []  # + the declared ops (end of module)

_ndarray = np.ndarray
_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_SQRT_PI = math.sqrt(math.pi)
_2_OVER_SQRT_PI = 2.0 / _SQRT_PI


# --- small helpers -------------------------------------------------------------

def _out(result, out):
    return result if out is None else copy_into_out(out, result)


def _data(t, name, arg="input", pos=1):
    """``t``'s array; a TypeError naming the argument when ``t`` is not a Tensor."""
    try:
        return t._data
    except AttributeError:
        raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not "
                        f"{type(t).__name__}") from None


def _need_tensor(name, other, arg="other", pos=2):
    if not isinstance(other, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not {type(other).__name__}")


_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
               "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
               "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def _tname(np_dtype):
    """PyTorch's C++ name of a dtype, as its error messages print it (``Float``)."""
    return _TYPE_NAMES.get(str(np_dtype), str(np_dtype))


def _cname(np_dtype):
    """The C++ scalar name PyTorch's dtype checks print (``float``, ``double``)."""
    return {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
            "int64": "long int", "int32": "int", "bool": "bool"}.get(str(np_dtype), str(np_dtype))


def _unsupported(kernel, x):
    """PyTorch's error for a dtype a kernel is not compiled for."""
    dev = "cpu" if x.__class__ is _ndarray else "cuda"
    raise NotImplementedError(f'"{kernel}_{dev}" not implemented for \'{_tname(x.dtype)}\'')


def _default_float():
    return D.get_default_dtype().np


def _xp2(x, y):
    """The array module of a binary op's operands (one may be a Python number)."""
    return xp_of(y) if x.__class__ in _SCALARS else xp_of(x)


def _arrays(xp, x, y):
    """Both operands as arrays: a Python number becomes a 0-d array of the
    other operand's (already promoted) dtype."""
    if x.__class__ in _SCALARS:
        return xp.asarray(x, dtype=y.dtype), y
    if y.__class__ in _SCALARS:
        return x, xp.asarray(y, dtype=x.dtype)
    return x, y


def _one_device(tensors, arrays):
    """An op's operand arrays on one device: a 0-d CPU tensor may join a CUDA
    op (it is copied over), any other mix raises PyTorch's device error.
    Entries that are not arrays (numbers, None) are left alone."""
    ref = None
    for k, a in enumerate(arrays):
        if hasattr(a, "dtype") and a.__class__ is not _ndarray:
            ref = k
            break
    if ref is not None:
        for k, a in enumerate(arrays):
            if k != ref and hasattr(a, "dtype"):
                _, arrays[k] = _same_device(tensors[ref], tensors[k], arrays[ref], a)
    return arrays


def _zeros_like(t):
    """A constant zero gradient shaped like ``t``."""
    return Tensor._make(xp_of(t._data).zeros_like(t._data), False)


def _wrap(array):
    """A new Tensor (no graph) holding an op's array result."""
    return Tensor._make(_normalize(array), False)


def _check_zero_division(y):
    """Integer division by zero is an error in PyTorch (NumPy returns 0)."""
    if getattr(y, "dtype", None) is not None:
        if y.dtype.kind in "iub" and bool((y == 0).any()):
            raise RuntimeError("ZeroDivisionError")
    elif y == 0 and y.__class__ is not builtins.float:
        raise RuntimeError("ZeroDivisionError")


def _broadcast_error(*operands):
    """PyTorch's error for operands whose shapes do not broadcast."""
    shapes = [tuple(o.shape) for o in operands if isinstance(o, Tensor) or hasattr(o, "ndim")]
    nd = builtins.max(len(sh) for sh in shapes)
    padded = [(1,) * (nd - len(sh)) + sh for sh in shapes]
    for d in range(nd - 1, -1, -1):
        sizes = [sh[d] for sh in padded if sh[d] != 1]
        if any(v != sizes[0] for v in sizes):
            other = next(v for v in sizes if v != sizes[0])
            return RuntimeError(f"The size of tensor a ({sizes[0]}) must match the size of tensor b ({other}) at "
                                f"non-singleton dimension {d}")
    return RuntimeError(f"shapes {[list(sh) for sh in shapes]} cannot be broadcast together")


def _broadcasting(fn):
    """Raise PyTorch's RuntimeError (not NumPy's ValueError) when the
    operands of ``fn`` do not broadcast."""
    @functools.wraps(fn)
    def op(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except ValueError as e:
            if "broadcast" not in str(e):
                raise
            raise _broadcast_error(*args, *kwargs.values()) from None
    return op


# --- in-place ops ---------------------------------------------------------------

def _inplace(self, fn, args, arrays, saves_self=True):
    """``self.<op>_(...)``: run Function ``fn`` out of place on ``args``
    (``args[0]`` is ``self``), then write the result into ``self``.

    When autograd records the op, ``self`` becomes the result (its new
    ``grad_fn`` is the op's node; for a view, the base's history is rebased
    through CopySlices, as in PyTorch).  If backward reads ``self``'s old
    value (``saves_self``), it reads a copy that keeps ``self``'s old
    history, like PyTorch's ``original_self``.
    """
    if _recording(self, args):
        if saves_self or any(a is self for a in args[1:]):
            old = Tensor._make(self._data.copy(), self._requires_grad, self.grad_fn, self._output_nr)
            args = tuple(old if a is self else a for a in args)
            arrays = [old._data if v is self._data else v for v in arrays]
        return _commit(self, _apply(fn, args, arrays), True)
    return _commit(self, _apply(fn, args, arrays), False)


def _recording(self, args):
    """Whether an in-place op on ``self`` must be recorded; raises PyTorch's
    errors for leaves that require grad and for views of them."""
    if not _state.enabled:
        return False
    for a in args:
        if isinstance(a, Tensor) and a._requires_grad:
            _check_inplace(self)
            return True
    if self._base is not None and self._base._requires_grad:
        _check_inplace(self)  # a view made under no_grad, modified with grad mode on
    return False


def _commit(self, result, recorded):
    """Write an out-of-place ``result`` into ``self`` (PyTorch's casting and
    shape rules for in-place ops) and hand ``self`` its graph."""
    r = result._data
    x = self._data
    check_no_internal_overlap(x)
    if r.shape != x.shape:
        raise RuntimeError(f"output with shape {list(x.shape)} doesn't match the broadcast shape {list(r.shape)}")
    if r.dtype != x.dtype and not D.can_cast(D.from_numpy_dtype(r.dtype), D.from_numpy_dtype(x.dtype)):
        raise RuntimeError(f"result type {_tname(r.dtype)} can't be cast to the desired output type "
                           f"{_tname(x.dtype)}")
    x[...] = r
    self._bump_version()
    if recorded:
        node = result.grad_fn
        if node is not None:
            if self._base is not None:
                _rebase_view(self, node)
            else:
                self.grad_fn = node
                self._output_nr = result._output_nr
            self._requires_grad = True
        elif self.grad_fn is not None:  # a result without gradient: self's old history no longer applies
            self.grad_fn = None
            self._requires_grad = False
    return self


def _check_float_inplace(self, name):
    if self._data.dtype.kind not in "fc":
        raise RuntimeError(f"result type Float can't be cast to the desired output type {_tname(self._data.dtype)}")


# --- unary ops ---------------------------------------------------------------------

class _Unary(Function):
    """An elementwise op ``y = f(x)`` with gradient ``df(gy, x, y)``.

    Subclasses come from :func:`_unary`, one table row each: ``f(xp, x)``
    works on arrays, ``df`` on Tensors (so it is itself differentiable) and
    reads only what the row says it saves (``x``, ``y``).
    """

    _array_forward = True
    _save_x = _save_y = False

    @classmethod
    def forward(cls, ctx, x):
        xp = xp_of(x)
        with _quiet():
            y = cls.f(xp, x)
        if y.__class__ is not x.__class__:
            y = xp.asarray(y)  # NumPy returns scalars for 0-d inputs
        if cls._save_x or cls._save_y:
            ctx.save_for_backward(x if cls._save_x else None, y if cls._save_y else None)
        return y

    @classmethod
    def backward(cls, ctx, gy):
        x, y = ctx.saved_tensors or (None, None)
        return cls.df(gy, x, y)

    @classmethod
    def jvp(cls, ctx, t):
        # Elementwise: the Jacobian is diagonal, so J t = J^T t = df(t, x, y) (real dtypes; a complex
        # gradient is conjugated, so complex tangents take forward_ad's double-backward fallback).
        if t.is_complex():
            return NotImplemented
        x, y = ctx.saved_tensors or (None, None)
        return cls.df(t, x, y)


def _unary(name, f, saves, df, node=None, complex_native=False):
    """Make the Function class ``name`` (node ``<name>Backward0`` unless
    ``node`` says otherwise) from one table row.  ``complex_native``: ``df``
    is written for complex inputs itself (the op is not holomorphic)."""
    attrs = {"f": staticmethod(f), "df": staticmethod(df), "_save_x": "x" in saves, "_save_y": "y" in saves,
             "__module__": __name__, "__qualname__": name, "_node_name": node, "_complex_native": complex_native}
    return type(Function)(name, (_Unary,), attrs)


def _zero_grad(gy, x, y):
    return _zeros_like(gy)


def _round_int(name):
    """Rounding ops keep integer tensors unchanged (a copy), as PyTorch."""
    return lambda xp, x: getattr(xp, name)(x) if x.dtype.kind == "f" else x.copy()


def _sigmoid(xp, x):
    """``1 / (1 + exp(-x))`` in one buffer (four passes, one allocation)."""
    y = xp.empty_like(x)
    xp.negative(x, out=y)
    xp.exp(y, out=y)
    y += 1
    return xp.reciprocal(y, out=y)


def _sign(xp, x):
    if x.dtype.kind == "c":  # sgn: z / |z|, 0 at 0
        a = xp.abs(x)
        return xp.where(a == 0, 0, x / xp.where(a == 0, 1, a)).astype(x.dtype, copy=False)
    if x.dtype.kind != "f":
        return x.copy() if x.dtype.kind == "b" else xp.sign(x)
    y = (x > 0).astype(x.dtype)  # 0 for nan and -0.0, as PyTorch
    y -= x < 0
    return y


def _acosh_slope(x):
    """``1 / sqrt(x^2 - 1)``; for complex ``x`` as ``1 / (sqrt(x - 1) sqrt(x + 1))``, acosh's branch."""
    if x.is_complex():
        return rsqrt(x - 1) * rsqrt(x + 1)
    return rsqrt(x * x - 1)


def _sgn_grad(gy, x, y):
    """Gradient of ``sgn(z) = z / |z|``: the part of ``gy`` orthogonal to ``sgn(z)``, over ``|z|``."""
    if not y.is_complex():
        return _zeros_like(gy)
    a = x.abs()
    g = (gy - (gy * y.conj()).real * y) / a
    return where(a == 0, 0.0, g)


def _angle_grad(gy, x, y):
    """Gradient of ``angle(z)``: ``gy * i z / |z|^2`` (0 at 0; 0 for real inputs)."""
    if not x.is_complex():
        return _zeros_like(gy)
    a2 = (x * x.conj()).real
    return where(a2 == 0, 0.0, gy * x / a2 * 1j)


# The table: forward on arrays, what backward saves, gradient in Tensor ops.
#                  name          forward f(xp, x)                                  saves  gradient df(gy, x, y)
Abs = _unary("Abs", lambda xp, x: xp.abs(x), "x", lambda gy, x, y: gy * sgn(x), complex_native=True)
Sign = _unary("Sign", _sign, "", _zero_grad)
Sgn = _unary("Sgn", _sign, "xy", _sgn_grad, complex_native=True)
Sqrt = _unary("Sqrt", lambda xp, x: xp.sqrt(x), "y", lambda gy, x, y: gy / (2 * y))
Rsqrt = _unary("Rsqrt", lambda xp, x: xp.reciprocal(xp.sqrt(x)), "y", lambda gy, x, y: -0.5 * gy * y ** 3)
Reciprocal = _unary("Reciprocal", lambda xp, x: xp.reciprocal(x), "y", lambda gy, x, y: -gy * y * y)
Exp2 = _unary("Exp2", lambda xp, x: xp.exp2(x), "y", lambda gy, x, y: gy * y * _LN2)
Expm1 = _unary("Expm1", lambda xp, x: xp.expm1(x), "y", lambda gy, x, y: gy * (y + 1))
Log2 = _unary("Log2", lambda xp, x: xp.log2(x), "x", lambda gy, x, y: gy / (x * _LN2))
Log10 = _unary("Log10", lambda xp, x: xp.log10(x), "x", lambda gy, x, y: gy / (x * _LN10))
Log1p = _unary("Log1p", lambda xp, x: xp.log1p(x), "x", lambda gy, x, y: gy / (x + 1), node="Log1PBackward0")
Sin = _unary("Sin", lambda xp, x: xp.sin(x), "x", lambda gy, x, y: gy * cos(x))
Cos = _unary("Cos", lambda xp, x: xp.cos(x), "x", lambda gy, x, y: gy * -sin(x))
Tan = _unary("Tan", lambda xp, x: xp.tan(x), "y", lambda gy, x, y: gy * (1 + y * y))
Asin = _unary("Asin", lambda xp, x: xp.arcsin(x), "x", lambda gy, x, y: gy * rsqrt(1 - x * x))
Acos = _unary("Acos", lambda xp, x: xp.arccos(x), "x", lambda gy, x, y: -gy * rsqrt(1 - x * x))
Atan = _unary("Atan", lambda xp, x: xp.arctan(x), "x", lambda gy, x, y: gy / (x * x + 1))
Sinh = _unary("Sinh", lambda xp, x: xp.sinh(x), "x", lambda gy, x, y: gy * cosh(x))
Cosh = _unary("Cosh", lambda xp, x: xp.cosh(x), "x", lambda gy, x, y: gy * sinh(x))
Tanh = _unary("Tanh", lambda xp, x: xp.tanh(x), "y", lambda gy, x, y: gy * (1 - y * y))
Asinh = _unary("Asinh", lambda xp, x: xp.arcsinh(x), "x", lambda gy, x, y: gy * rsqrt(x * x + 1))
Acosh = _unary("Acosh", lambda xp, x: xp.arccosh(x), "x", lambda gy, x, y: gy * _acosh_slope(x))
Atanh = _unary("Atanh", lambda xp, x: xp.arctanh(x), "x", lambda gy, x, y: gy / (1 - x * x))
Sigmoid = _unary("Sigmoid", lambda xp, x: _sigmoid(xp, x), "y", lambda gy, x, y: gy * y * (1 - y))
Erf = _unary("Erf", lambda xp, x: _sf.evaluate(_sf.erf, xp, x), "x",
             lambda gy, x, y: gy * _2_OVER_SQRT_PI * exp(-x * x))
Erfc = _unary("Erfc", lambda xp, x: _sf.evaluate(_sf.erfc, xp, x), "x",
              lambda gy, x, y: gy * -_2_OVER_SQRT_PI * exp(-x * x))
Erfinv = _unary("Erfinv", lambda xp, x: _sf.evaluate(_sf.erfinv, xp, x), "y",
                lambda gy, x, y: gy * (0.5 * _SQRT_PI) * exp(y * y))
Lgamma = _unary("Lgamma", lambda xp, x: _sf.evaluate(_sf.lgamma, xp, x), "x", lambda gy, x, y: gy * digamma(x))
Digamma = _unary("Digamma", lambda xp, x: _sf.evaluate(_sf.digamma, xp, x), "x", lambda gy, x, y: gy * polygamma(1, x))
Floor = _unary("Floor", _round_int("floor"), "", _zero_grad)
Ceil = _unary("Ceil", _round_int("ceil"), "", _zero_grad)
Trunc = _unary("Trunc", _round_int("trunc"), "", _zero_grad)
Round = _unary("Round", _round_int("round"), "", _zero_grad)
Frac = _unary("Frac", lambda xp, x: x - xp.trunc(x), "", lambda gy, x, y: gy)
Relu = _unary("Relu", lambda xp, x: xp.maximum(x, 0), "y", lambda gy, x, y: gy * (y > 0))
Deg2Rad = _unary("Deg2Rad", lambda xp, x: x * (math.pi / 180), "", lambda gy, x, y: gy * (math.pi / 180))
Rad2Deg = _unary("Rad2Deg", lambda xp, x: x * (180 / math.pi), "", lambda gy, x, y: gy * (180 / math.pi))


def _sinc(xp, x):
    px = math.pi * x
    return xp.where(x == 0, 1.0, xp.sin(px) / px).astype(x.dtype, copy=False)


def _sinc_grad(gy, x, y):
    px = math.pi * x
    return gy * where(x == 0, 0.0, (px * cos(px) - sin(px)) / (px * x))


Sinc = _unary("Sinc", _sinc, "x", _sinc_grad)


def _angle(xp, x):
    """The argument of a real number: pi below 0, 0 at and above (-0.0 too), nan for nan."""
    if x.dtype.kind == "c":
        return xp.angle(x)
    y = xp.where(x < 0, x.dtype.type(math.pi), x.dtype.type(0))
    return xp.where(xp.isnan(x), x, y)


Angle = _unary("Angle", _angle, "x", _angle_grad, complex_native=True)


def _no_complex_kernel(kernel, suffix=True):
    """``complex_error`` of an op whose kernel PyTorch does not build for complex dtypes."""
    def error(x):
        dev = ("_cpu" if x.__class__ is _ndarray else "_cuda") if suffix else ""
        raise NotImplementedError(f'"{kernel}{dev}" not implemented for \'{_tname(x.dtype)}\'')
    return error


def _complex_unsupported(message, exc=NotImplementedError):
    """``complex_error`` raising ``exc(message)``."""
    def error(x):
        raise exc(message)
    return error


def _jvp_of(F):
    """``F``'s JVP rule for the registry's slot (None: forward AD differentiates its backward twice)."""
    return None if F.jvp is Function.jvp else F.jvp


def _float_fn(F, name, summary, example_in, example_out, aliases=(), module=__name__, method=True, inplace=True,
              complex_error=None):
    """The public ``name(input, *, out=None)`` and in-place ``name_(self)``
    of a float function, declared in the op registry: integer and bool inputs
    give the default float dtype (in place they are an error, as in PyTorch).
    Complex inputs are computed in their dtype, unless ``complex_error(x)``
    is given: it raises PyTorch's error for an op without complex support."""
    def op(input, *, out=None):
        x = _data(input, name)
        if x.dtype.kind != "f":
            if x.dtype.kind == "c":
                if complex_error is not None:
                    complex_error(x)
                r = _apply_elementwise(F, input, x)
                return r if out is None else copy_into_out(out, r)
            x = x.astype(_default_float())
        r = _apply_elementwise(F, input, x)
        return r if out is None else copy_into_out(out, r)

    def op_(self):
        x = _data(self, name + "_")
        if x.dtype.kind != "f":
            if x.dtype.kind == "c" and complex_error is not None:
                complex_error(x)
            elif x.dtype.kind != "c":
                _check_float_inplace(self, name)
        return _inplace(self, F, (self,), [x], F._save_x)

    op.__name__ = op.__qualname__ = name
    op_.__name__ = op_.__qualname__ = name + "_"
    op.__doc__ = (f"{summary} Integer and bool inputs give the default float dtype.\n\n"
                  f"Example::\n\n    >>> fabric.{name}(fabric.tensor({example_in}))\n    {example_out}\n")
    op_.__doc__ = f"In-place :func:`{name}`."
    op.__module__ = op_.__module__ = module
    decl = declare(op, inplace=op_ if method and inplace else None, aliases=aliases, fusion="elementwise",
                   method=method, vmap=elementwise(op), jvp=_jvp_of(F))
    return decl.function, op_


def _same_dtype_fn(F, name, kinds, summary, example_in, example_out, kernel=None, aliases=(), complex_error=None):
    """Public op and in-place op for a unary op that keeps its input dtype;
    dtypes whose kind is not in ``kinds`` raise NotImplementedError (complex
    ones ``complex_error(x)`` when given)."""
    kernel = kernel or name

    def op(input, *, out=None):
        x = _data(input, name)
        if x.dtype.kind not in kinds:
            if complex_error is not None and x.dtype.kind == "c":
                complex_error(x)
            _unsupported(kernel, x)
        r = _apply_elementwise(F, input, x)
        return r if out is None else copy_into_out(out, r)

    def op_(self):
        x = _data(self, name + "_")
        if x.dtype.kind not in kinds:
            if complex_error is not None and x.dtype.kind == "c":
                complex_error(x)
            _unsupported(kernel, x)
        if F is Abs and x.dtype.kind == "c":
            raise RuntimeError("In-place abs is not supported for complex tensors.")
        return _inplace(self, F, (self,), [x], F._save_x)

    op.__name__ = op.__qualname__ = name
    op_.__name__ = op_.__qualname__ = name + "_"
    op.__doc__ = (f"{summary}\n\nExample::\n\n    >>> fabric.{name}(fabric.tensor({example_in}))\n"
                  f"    {example_out}\n")
    op_.__doc__ = f"In-place :func:`{name}`."
    declare(op, inplace=op_, aliases=aliases, fusion="elementwise", vmap=elementwise(op), jvp=_jvp_of(F))
    return op, op_


abs, abs_ = _same_dtype_fn(Abs, "abs", "fiuc", "Absolute value (not for bool).", "[-1.5, 2.0]",
                           "tensor([1.5000, 2.0000])", aliases=("absolute",))
absolute, absolute_ = abs, abs_
sign, sign_ = _same_dtype_fn(Sign, "sign", "fiub", "-1, 0 or 1 by the sign of each element (0 for nan).",
                             "[-2.0, 0.0, 3.0]", "tensor([-1.,  0.,  1.])", complex_error=_complex_unsupported(
                                 "Unlike NumPy, torch.sign is not intended to support complex numbers. Please use "
                                 "torch.sgn instead."))
sgn, sgn_ = _same_dtype_fn(Sgn, "sgn", "fiubc", "The sign, as :func:`sign` for real tensors; z / abs(z) for complex.",
                           "[-2.0, 3.0]",
                           "tensor([-1.,  1.])")
sqrt, sqrt_ = _float_fn(Sqrt, "sqrt", "Square root.", "[4.0, 9.0]", "tensor([2., 3.])")
rsqrt, rsqrt_ = _float_fn(Rsqrt, "rsqrt", "Reciprocal of the square root.", "[4.0, 0.25]",
                          "tensor([0.5000, 2.0000])")
reciprocal, reciprocal_ = _float_fn(Reciprocal, "reciprocal", "``1 / x``.", "[2.0, 4.0]",
                                    "tensor([0.5000, 0.2500])")
exp2, exp2_ = _float_fn(Exp2, "exp2", "``2 ** x``.", "[3.0]", "tensor([8.])")
expm1, expm1_ = _float_fn(Expm1, "expm1", "``exp(x) - 1``, accurate for small x.", "[0.0]", "tensor([0.])")
log2, log2_ = _float_fn(Log2, "log2", "Base-2 logarithm.", "[8.0]", "tensor([3.])")
log10, log10_ = _float_fn(Log10, "log10", "Base-10 logarithm.", "[10.0]", "tensor([1.])")
log1p, log1p_ = _float_fn(Log1p, "log1p", "``log(1 + x)``, accurate for small x.", "[0.0]", "tensor([0.])")
sin, sin_ = _float_fn(Sin, "sin", "Sine.", "[0.0]", "tensor([0.])")
cos, cos_ = _float_fn(Cos, "cos", "Cosine.", "[0.0]", "tensor([1.])")
tan, tan_ = _float_fn(Tan, "tan", "Tangent.", "[0.0]", "tensor([0.])")
asin, asin_ = _float_fn(Asin, "asin", "Arcsine.", "[1.0]", "tensor([1.5708])", aliases=("arcsin",))
acos, acos_ = _float_fn(Acos, "acos", "Arccosine.", "[1.0]", "tensor([0.])", aliases=("arccos",))
atan, atan_ = _float_fn(Atan, "atan", "Arctangent.", "[1.0]", "tensor([0.7854])", aliases=("arctan",))
sinh, sinh_ = _float_fn(Sinh, "sinh", "Hyperbolic sine.", "[0.0]", "tensor([0.])")
cosh, cosh_ = _float_fn(Cosh, "cosh", "Hyperbolic cosine.", "[0.0]", "tensor([1.])")
tanh, tanh_ = _float_fn(Tanh, "tanh", "Hyperbolic tangent.", "[0.0]", "tensor([0.])")
asinh, asinh_ = _float_fn(Asinh, "asinh", "Inverse hyperbolic sine.", "[0.0]", "tensor([0.])", aliases=("arcsinh",))
acosh, acosh_ = _float_fn(Acosh, "acosh", "Inverse hyperbolic cosine.", "[1.0]", "tensor([0.])", aliases=("arccosh",))
atanh, atanh_ = _float_fn(Atanh, "atanh", "Inverse hyperbolic tangent.", "[0.0]", "tensor([0.])", aliases=("arctanh",))
arcsin, arcsin_, arccos, arccos_, arctan, arctan_ = asin, asin_, acos, acos_, atan, atan_
arcsinh, arcsinh_, arccosh, arccosh_, arctanh, arctanh_ = asinh, asinh_, acosh, acosh_, atanh, atanh_
sigmoid, sigmoid_ = _float_fn(Sigmoid, "sigmoid", "The logistic function ``1 / (1 + exp(-x))``.", "[0.0]",
                              "tensor([0.5000])")
erf, erf_ = _float_fn(Erf, "erf", "The error function (max relative error ~6e-16 in float64).", "[0.0]",
                      "tensor([0.])",
    complex_error=_no_complex_kernel("erf_vml"))
erfc, erfc_ = _float_fn(Erfc, "erfc", "``1 - erf(x)``, accurate in the tails.", "[0.0]", "tensor([1.])",
    complex_error=_no_complex_kernel("erfc_vml"))
erfinv, erfinv_ = _float_fn(Erfinv, "erfinv", "Inverse of :func:`erf` on [-1, 1].", "[0.0]", "tensor([0.])",
    complex_error=_no_complex_kernel("erfinv_vml"))
lgamma, lgamma_ = _float_fn(Lgamma, "lgamma", "``log|Gamma(x)|``.", "[3.0]", "tensor([0.6931])",
    complex_error=_no_complex_kernel("lgamma_vml"))
digamma, digamma_ = _float_fn(Digamma, "digamma", "Derivative of :func:`lgamma`.", "[1.0]", "tensor([-0.5772])",
    complex_error=_no_complex_kernel("digamma", suffix=False))
deg2rad, deg2rad_ = _float_fn(Deg2Rad, "deg2rad", "Degrees to radians.", "[180.0]", "tensor([3.1416])",
    complex_error=_complex_unsupported("deg2rad is not supported for complex tensors.", RuntimeError))
rad2deg, rad2deg_ = _float_fn(Rad2Deg, "rad2deg", "Radians to degrees.", "[3.14159265]", "tensor([180.])",
    complex_error=_complex_unsupported("rad2deg is not supported for complex tensors.", RuntimeError))
angle, _ = _float_fn(Angle, "angle", "The argument (angle) of each element: pi for negative numbers, else 0.",
                     "[-1.5, 0.0, 2.0]", "tensor([3.1416, 0.0000, 0.0000])", inplace=False)
sinc, sinc_ = _float_fn(Sinc, "sinc", "The normalised sinc ``sin(pi x) / (pi x)`` (1 at 0).", "[0.0, 0.5]",
                        "tensor([1.0000, 0.6366])")
floor, floor_ = _same_dtype_fn(Floor, "floor", "fiu", "Round down (integer tensors are unchanged).", "[-1.5, 1.5]",
                               "tensor([-2.,  1.])",
    complex_error=_complex_unsupported("floor is not supported for complex inputs"))
ceil, ceil_ = _same_dtype_fn(Ceil, "ceil", "fiu", "Round up (integer tensors are unchanged).", "[-1.5, 1.5]",
                             "tensor([-1.,  2.])",
    complex_error=_complex_unsupported("ceil is not supported for complex inputs"))
trunc, trunc_ = _same_dtype_fn(Trunc, "trunc", "fiu", "Round towards zero (integer tensors are unchanged).",
                               "[-1.5, 1.5]", "tensor([-1.,  1.])", aliases=("fix",),
    complex_error=_complex_unsupported("trunc is not supported for complex inputs"))
fix, fix_ = trunc, trunc_
frac, frac_ = _same_dtype_fn(Frac, "frac", "f", "The fractional part ``x - trunc(x)`` (float tensors only).",
                             "[-1.5, 2.25]", "tensor([-0.5000,  0.2500])")


class RoundDecimals(Function):
    """``round(x, decimals=d)``: as PyTorch, ``nearbyint(x * 10**d) / 10**d``
    (``nearbyint(x / 10**-d) * 10**-d`` for negative d), in float32 for half."""

    _array_forward = True
    _node_name = "RoundBackward1"

    @staticmethod
    def forward(ctx, x, decimals):
        xp = xp_of(x)
        v = x.astype(np.float32) if x.dtype.itemsize < 4 else x
        with _quiet():
            if decimals >= 0:
                scale = 10.0 ** decimals
                y = xp.round(v * scale) / scale
            else:
                scale = 10.0 ** -decimals
                y = xp.round(v / scale) * scale
        return xp.asarray(y).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, gy):
        return _zeros_like(gy), None


@declare_op()
def round(input: Tensor, *, decimals: int = 0, out: Tensor | None = None) -> Tensor:
    """Round half to even, to ``decimals`` decimal places (integer tensors
    are unchanged when ``decimals`` is 0).

    Example::

        >>> fabric.round(fabric.tensor([0.5, 1.5, 2.567]), decimals=0)
        tensor([0., 2., 3.])
    """
    x = _data(input, "round")
    if not isinstance(decimals, (builtins.int, np.integer)) or isinstance(decimals, builtins.bool):
        raise TypeError(f"round(): argument 'decimals' must be int, not {type(decimals).__name__}")
    if x.dtype.kind not in "fiu" or (decimals and x.dtype.kind != "f"):
        _unsupported("round", x)
    if decimals == 0:
        r = _apply(Round, (input,), (x,))
    else:
        r = _apply(RoundDecimals, (input, None), (x, builtins.int(decimals)))
    return _out(r, out)


@declare_op()
def round_(self: Tensor, *, decimals: int = 0) -> Tensor:
    """In-place :func:`round`."""
    x = _data(self, "round_")
    if x.dtype.kind not in "fiu" or (decimals and x.dtype.kind != "f"):
        _unsupported("round", x)
    if decimals == 0:
        return _inplace(self, Round, (self,), [x], False)
    return _inplace(self, RoundDecimals, (self, None), [x, builtins.int(decimals)], False)


@declare_op()
def relu(input: Tensor) -> Tensor:
    """``max(x, 0)`` (nan stays nan; integer tensors keep their dtype).

    Example::

        >>> fabric.relu(fabric.tensor([-1.0, 2.0]))
        tensor([0., 2.])
    """
    x = _data(input, "relu")
    if x.dtype == np.bool_:
        raise RuntimeError("Boolean inputs not supported for relu")
    if x.dtype.kind == "c":
        raise NotImplementedError("clamp is not supported for complex types")
    return _apply_elementwise(Relu, input, x)


@declare_op()
def relu_(input: Tensor) -> Tensor:
    """In-place :func:`relu`."""
    x = _data(input, "relu_")
    if x.dtype == np.bool_:
        raise RuntimeError("Boolean inputs not supported for relu")
    if x.dtype.kind == "c":
        raise NotImplementedError("clamp is not supported for complex types")
    if not _recording(input, (input,)):  # nothing to record: write straight into x
        xp_of(x).maximum(x, 0, out=x)
        input._bump_version()
        return input
    return _inplace(input, Relu, (input,), [x], False)


@declare_op()
def square(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """``x * x`` (bool gives int64, as PyTorch's ``pow(x, 2)``).

    Example::

        >>> fabric.square(fabric.tensor([-2, 3]))
        tensor([4, 9])
    """
    _data(input, "square")
    return _out(pow(input, 2), out)


@declare_op()
def square_(self: Tensor) -> Tensor:
    """In-place :func:`square`."""
    from .arith import PowScalar

    a, c, x, c2 = binary_operands(self, 2)
    return _inplace(self, PowScalar, (a, c), [x, c2], True)


@declare_op()
def positive(input: Tensor) -> Tensor:
    """``input`` itself (not for bool), as ``+x``."""
    x = _data(input, "positive")
    if x.dtype == np.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


class Logit(Function):
    """``log(x / (1 - x))``, with x clamped to ``[eps, 1 - eps]`` when eps is given."""

    _array_forward = True

    @staticmethod
    def forward(ctx, x, eps):
        xp = xp_of(x)
        ctx.eps = eps
        ctx.save_for_backward(x)
        with _quiet():
            z = x if eps is None else xp.clip(x, eps, 1 - eps)
            return xp.asarray(xp.log(z / (1 - z)))

    @staticmethod
    def backward(ctx, gy):
        x, = ctx.saved_tensors
        eps = ctx.eps
        g = gy / (x * (1 - x))
        if eps is None:  # outside [0, 1] the derivative is nan, as PyTorch
            return where((x < 0) | (x > 1), math.nan, g), None
        return where((x < eps) | (x > 1 - eps), 0.0, g), None


@declare_op()
def logit(input: Tensor, eps: float | None = None, *, out: Tensor | None = None) -> Tensor:
    """The inverse of :func:`sigmoid`; ``eps`` clamps the input to ``[eps, 1 - eps]``.

    Example::

        >>> fabric.logit(fabric.tensor([0.5]))
        tensor([0.])
    """
    x = _data(input, "logit")
    if x.dtype.kind != "f":
        x = x.astype(_default_float())
    return _out(_apply(Logit, (input, None), (x, None if eps is None else builtins.float(eps))), out)


@declare_op()
def logit_(self: Tensor, eps: float | None = None) -> Tensor:
    """In-place :func:`logit`."""
    _check_float_inplace(self, "logit_")
    return _inplace(self, Logit, (self, None), [self._data, None if eps is None else builtins.float(eps)])


class Polygamma(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, n):
        ctx.n = n
        ctx.save_for_backward(x)
        with _quiet():
            return xp_of(x).asarray(_sf.evaluate(_sf.polygamma, xp_of(x), x, n))

    @staticmethod
    def backward(ctx, gy):
        x, = ctx.saved_tensors
        return gy * polygamma(ctx.n + 1, x), None


class _PolygammaInplace(Polygamma):
    _node_name = "PolygammaBackward1"  # PyTorch's name for ``Tensor.polygamma_(n)``


def _check_polygamma_n(n):
    if not isinstance(n, (builtins.int, np.integer)) or isinstance(n, builtins.bool):
        raise TypeError(f"polygamma(): argument 'n' (position 1) must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return builtins.int(n)


def polygamma(n: int, input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The n-th derivative of :func:`digamma` (n = 0 is digamma itself).

    Example::

        >>> fabric.polygamma(1, fabric.tensor([1.0]))
        tensor([1.6449])
    """
    n = _check_polygamma_n(n)
    x = _data(input, "polygamma", "input", 2)
    if x.dtype.kind != "f":
        x = x.astype(_default_float())
    return _out(_apply(Polygamma, (input, None), (x, n)), out)


def polygamma_(self: Tensor, n: int) -> Tensor:
    """In-place ``self = polygamma(n, self)`` (``Tensor.polygamma_(n)``)."""
    n = _check_polygamma_n(n)
    _check_float_inplace(self, "polygamma_")
    return _inplace(self, _PolygammaInplace, (self, None), [self._data, n])


class NanToNum(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, nan, posinf, neginf):
        ctx.save_for_backward(x)
        return xp_of(x).asarray(xp_of(x).nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf))

    @staticmethod
    def backward(ctx, gy):
        x, = ctx.saved_tensors
        return gy * isfinite(x), None, None, None


@declare_op()
def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None, *,
               out: Tensor | None = None) -> Tensor:
    """Replace nan, +inf and -inf (by default with 0 and the dtype's largest
    and smallest finite values); integer tensors are unchanged.

    Example::

        >>> fabric.nan_to_num(fabric.tensor([float("nan"), 1.0]))
        tensor([0., 1.])
    """
    x = _data(input, "nan_to_num")
    if x.dtype.kind != "f":
        return _out(_wrap(x.copy()), out)
    return _out(_apply(NanToNum, (input, None, None, None), (x, nan, posinf, neginf)), out)


@declare_op()
def nan_to_num_(self: Tensor, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None) -> Tensor:
    """In-place :func:`nan_to_num`."""
    x = _data(self, "nan_to_num_")
    if x.dtype.kind != "f":
        self._bump_version()
        return self
    return _inplace(self, NanToNum, (self, None, None, None), [x, nan, posinf, neginf])


# --- predicates (bool results, no graph) ---------------------------------------------

@declare_op()
def isnan(input: Tensor) -> Tensor:
    """True where the element is nan.

    Example::

        >>> fabric.isnan(fabric.tensor([1.0, float("nan")]))
        tensor([False,  True])
    """
    x = _data(input, "isnan")
    xp = xp_of(x)
    return _wrap(xp.isnan(x) if x.dtype.kind in "fc" else xp.zeros(x.shape, bool))


@declare_op()
def isinf(input: Tensor) -> Tensor:
    """True where the element is +inf or -inf."""
    x = _data(input, "isinf")
    xp = xp_of(x)
    return _wrap(xp.isinf(x) if x.dtype.kind in "fc" else xp.zeros(x.shape, bool))


@declare_op()
def isposinf(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """True where the element is +inf."""
    x = _data(input, "isposinf")
    reject_complex(input, RuntimeError, "isposinf does not support complex inputs.")
    xp = xp_of(x)
    return _out(_wrap(x == math.inf if x.dtype.kind == "f" else xp.zeros(x.shape, bool)), out)


@declare_op()
def isneginf(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """True where the element is -inf."""
    x = _data(input, "isneginf")
    reject_complex(input, RuntimeError, "isneginf does not support complex inputs.")
    xp = xp_of(x)
    return _out(_wrap(x == -math.inf if x.dtype.kind == "f" else xp.zeros(x.shape, bool)), out)


@declare_op()
def isfinite(input: Tensor) -> Tensor:
    """True where the element is neither inf nor nan.

    Example::

        >>> fabric.isfinite(fabric.tensor([1.0, float("inf")]))
        tensor([ True, False])
    """
    x = _data(input, "isfinite")
    xp = xp_of(x)
    return _wrap(xp.isfinite(x) if x.dtype.kind in "fc" else xp.ones(x.shape, bool))


@declare_op()
def isreal(input: Tensor) -> Tensor:
    """True where the imaginary part is zero (everywhere for real dtypes).

    Example::

        >>> fabric.isreal(fabric.tensor([1 + 0j, 1j]))
        tensor([ True, False])
    """
    x = _data(input, "isreal")
    return _wrap(x.imag == 0 if x.dtype.kind == "c" else xp_of(x).ones(x.shape, bool))


@declare_op()
def signbit(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """True where the sign bit is set (also for -0.0).

    Example::

        >>> fabric.signbit(fabric.tensor([-0.0, 1.0]))
        tensor([ True, False])
    """
    x = _data(input, "signbit")
    xp = xp_of(x)
    if x.dtype.kind == "f":
        return _out(_wrap(xp.signbit(x)), out)
    return _out(_wrap(x < 0 if x.dtype.kind == "i" else xp.zeros(x.shape, bool)), out)


@declare_op()
def logical_not(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """True where the element is zero.

    Example::

        >>> fabric.logical_not(fabric.tensor([0, 3]))
        tensor([ True, False])
    """
    x = _data(input, "logical_not")
    return _out(_wrap(xp_of(x).logical_not(x)), out)


@declare_op()
def logical_not_(self: Tensor) -> Tensor:
    """In-place :func:`logical_not` (the result is cast to ``self``'s dtype)."""
    return _inplace_no_grad(self, logical_not(self))


@declare_op()
def bitwise_not(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Bitwise NOT of integer tensors (logical NOT of bool tensors), ``~x``.

    Example::

        >>> fabric.bitwise_not(fabric.tensor([0, 5]))
        tensor([-1, -6])
    """
    x = _data(input, "bitwise_not")
    if x.dtype.kind not in "iub":
        _unsupported("bitwise_not", x)
    return _out(_wrap(xp_of(x).invert(x)), out)


@declare_op()
def bitwise_not_(self: Tensor) -> Tensor:
    """In-place :func:`bitwise_not`."""
    return _inplace_no_grad(self, bitwise_not(self))


def _inplace_no_grad(self, result):
    """Finish an in-place op whose result has no gradient (logical, bitwise)."""
    return _commit(self, result, _recording(self, (self,)))


# --- binary ops ----------------------------------------------------------------------

class DivRounding(Function):
    """``div(a, b, rounding_mode='trunc' | 'floor')``: its gradient is zero."""

    _array_forward = True
    _node_name = "DivBackward2"

    @staticmethod
    def forward(ctx, a, b, mode):
        xp = _xp2(a, b)
        with _quiet():
            return xp.asarray(_div_floor(xp, a, b) if mode == "floor" else _div_trunc(xp, a, b))

    @staticmethod
    def backward(ctx, gy):
        return _zeros_like(gy), _zeros_like(gy), None


def _int_kind(v):
    return v.dtype.kind in "iub" if hasattr(v, "dtype") else v.__class__ is not builtins.float


def _div_floor(xp, a, b):
    if _int_kind(a) and _int_kind(b):
        _check_zero_division(b)
    return xp.floor_divide(a, b)


def _div_trunc(xp, a, b):
    if _int_kind(a) and _int_kind(b):
        _check_zero_division(b)
        q = xp.floor_divide(a, b)
        # floor and trunc differ where the division is inexact and the signs differ
        return q + ((q * b != a) & ((a < 0) != (b < 0)))
    return xp.trunc(xp.true_divide(a, b))


_ROUNDING_MODES = ("trunc", "floor")


@_broadcasting
def div_rounding(a, b, mode):
    """``div(a, b, rounding_mode=mode)`` with ``mode`` 'trunc' or 'floor':
    the quotient rounded, in the promoted dtype (integers stay integers).

    Example::

        >>> fabric.div(fabric.tensor([-7, 7]), 2, rounding_mode="trunc")
        tensor([-3,  3])
    """
    if mode not in _ROUNDING_MODES:
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{mode}'")
    a, b, x, y = binary_operands(a, b)
    if getattr(x, "dtype", getattr(y, "dtype", None)) == np.bool_:
        _unsupported("div_" + mode, x if hasattr(x, "dtype") else y)
    return _apply(DivRounding, (a, b, None), (x, y, mode))


class FloorDivide(Function):
    """``a // b`` rounding down; PyTorch does not differentiate it."""

    _array_forward = True
    _node_name = "NotImplemented"

    @staticmethod
    def forward(ctx, a, b):
        xp = _xp2(a, b)
        with _quiet():
            return xp.asarray(_div_floor(xp, a, b))

    @staticmethod
    def backward(ctx, gy):
        raise RuntimeError("the derivative for 'floor_divide' is not implemented.")




class Remainder(Function):
    """``a - b * floor(a / b)``: the result has the sign of ``b``, as Python's ``%``."""

    _array_forward = True
    _node_name = "RemainderBackward1"

    @staticmethod
    def forward(ctx, a, b):
        xp = _xp2(a, b)
        if _int_kind(a) and _int_kind(b):
            _check_zero_division(b)
        ctx.save_for_backward(a, b)
        with _quiet():
            return xp.asarray(xp.remainder(a, b))

    @staticmethod
    def backward(ctx, gy):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        return (gy if need_a else None), (-gy * div_rounding(a, b, "floor") if need_b else None)


class Fmod(Function):
    """C's ``fmod``: the result has the sign of ``a``."""

    _array_forward = True
    _node_name = "FmodBackward1"

    @staticmethod
    def forward(ctx, a, b):
        xp = _xp2(a, b)
        if _int_kind(a) and _int_kind(b):
            _check_zero_division(b)
        ctx.save_for_backward(a, b)
        with _quiet():
            return xp.asarray(xp.fmod(a, b))

    @staticmethod
    def backward(ctx, gy):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        return (gy if need_a else None), (-gy * div_rounding(a, b, "trunc") if need_b else None)


def _no_bool(name, x, y):
    if getattr(x, "dtype", None) == np.bool_ or getattr(y, "dtype", None) == np.bool_:
        _unsupported(name, x if hasattr(x, "dtype") else y)






@declare_op()
@_broadcasting
def float_power(input: Tensor, exponent: Tensor | float, *, out: Tensor | None = None) -> Tensor:
    """``input ** exponent`` computed in float64 (either may be a number).

    Example::

        >>> fabric.float_power(fabric.tensor([2]), 3)
        tensor([8.], dtype=fabric.float64)
    """
    base = input.to(D.float64) if isinstance(input, Tensor) else builtins.float(scalar_value(input))
    if isinstance(exponent, Tensor):
        exponent = exponent.to(D.float64)
    elif not isinstance(base, Tensor):
        raise TypeError("float_power(): expected at least one Tensor argument")
    else:
        exponent = builtins.float(scalar_value(exponent))
    return _out(pow(base, exponent), out)


@declare_op()
def float_power_(self: Tensor, exponent: Tensor | float) -> Tensor:
    """In-place :func:`float_power` (``self`` must be float64)."""
    if self._data.dtype != np.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype {_tname(self._data.dtype)} but the "
                           "operation's result requires dtype Double")
    return pow_(self, exponent.to(D.float64) if isinstance(exponent, Tensor) else builtins.float(exponent))


@declare_op()
@_broadcasting
def pow_(self: Tensor, exponent: Tensor | float) -> Tensor:
    """In-place :func:`fabric.pow`.

    Example::

        >>> fabric.tensor([2.0, 3.0]).pow_(2)
        tensor([4., 9.])
    """
    from .arith import PowScalar, PowTensor

    a, b, x, y = binary_operands(self, exponent)
    return _inplace(self, PowTensor if isinstance(exponent, Tensor) else PowScalar, (a, b), [x, y])


@declare_op()
def true_divide_(self: Tensor, other: Tensor | float) -> Tensor:
    """In-place true division (as ``div_``)."""
    from .inplace import div_

    return div_(self, other)


class _Binary(Function):
    """An elementwise op ``y = f(a, b)`` with gradients ``df(gy, a, b, y) -> (ga, gb)``.

    Subclasses come from :func:`_binary`, one table row each, as :class:`_Unary`'s: ``f(xp, a, b)``
    works on arrays, ``df`` on Tensors; backward has both inputs, and the output where the row saves it.
    """

    _array_forward = True
    _save_y = _quiet = False

    @classmethod
    def forward(cls, ctx, a, b):
        xp = xp_of(a)
        if cls._quiet:  # rows whose kernel may warn (overflow ...): silenced as PyTorch is silent
            with _quiet():
                y = xp.asarray(cls.f(xp, a, b))
        else:
            y = xp.asarray(cls.f(xp, a, b))
        if cls._save_y:
            ctx.save_for_backward(a, b, y)
        else:
            ctx.save_for_backward(a, b)
        return y

    @classmethod
    def backward(cls, ctx, gy):
        saved = ctx.saved_tensors
        return cls.df(gy, saved[0], saved[1], saved[2] if cls._save_y else None)

    @classmethod
    def jvp(cls, ctx, ta, tb):
        # Elementwise, as _Unary.jvp: each input's term is its gradient formula applied to its tangent.
        saved = ctx.saved_tensors
        a, b, y = saved[0], saved[1], saved[2] if cls._save_y else None
        return jvp_sum([None if ta is None else cls.df(ta, a, b, y)[0], None if tb is None else cls.df(tb, a, b, y)[1]],
                       (a, b), (ta, tb))


def _binary(name, f, saves, df, quiet=False):
    """Make the Function class ``name`` (node ``<name>Backward0``) from one table row; ``saves`` is
    "ab" (the inputs) or "aby" (and the output)."""
    attrs = {"f": staticmethod(f), "df": staticmethod(df), "_save_y": saves == "aby", "_quiet": quiet,
             "__module__": __name__, "__qualname__": name}
    return type(Function)(name, (_Binary,), attrs)


def _atan2_grad(gy, a, b, y):
    d = a * a + b * b
    r = where(d == 0, 0.0, reciprocal(d))  # 0 at the origin, as PyTorch
    return gy * b * r, gy * -a * r


def _max_grad(gy, a, b, y):  # ties split the gradient evenly; with a nan both sides get all of it
    g = where(a == b, gy / 2, gy)
    return where(a < b, 0.0, g), where(a > b, 0.0, g)


def _min_grad(gy, a, b, y):
    g = where(a == b, gy / 2, gy)
    return where(a > b, 0.0, g), where(a < b, 0.0, g)


def _fmax_grad(gy, a, b, y):  # ties go to ``a``; a nan loses to a number
    to_a = (a >= b) | isnan(b)
    return where(to_a, gy, 0.0), where(to_a, 0.0, gy)


def _fmin_grad(gy, a, b, y):
    to_a = (a <= b) | isnan(b)
    return where(to_a, gy, 0.0), where(to_a, 0.0, gy)


# name, forward on arrays, what backward saves, gradients (Tensor ops)
Atan2 = _binary("Atan2", lambda xp, a, b: xp.arctan2(a, b), "ab", _atan2_grad)
Maximum = _binary("Maximum", lambda xp, a, b: xp.maximum(a, b), "ab", _max_grad)
Minimum = _binary("Minimum", lambda xp, a, b: xp.minimum(a, b), "ab", _min_grad)
Fmax = _binary("Fmax", lambda xp, a, b: xp.fmax(a, b), "ab", _fmax_grad)
Fmin = _binary("Fmin", lambda xp, a, b: xp.fmin(a, b), "ab", _fmin_grad)
Hypot = _binary("Hypot", lambda xp, a, b: xp.hypot(a, b), "aby", lambda gy, a, b, y: (gy * a / y, gy * b / y))
def _logaddexp(xp, a, b):
    """``log(exp(a) + exp(b))``; NumPy has no complex logaddexp: shift by the larger real part."""
    if a.dtype.kind != "c":
        return xp.logaddexp(a, b)
    m = xp.maximum(a.real, b.real)
    m = xp.where(xp.isfinite(m), m, 0)
    return m + xp.log(xp.exp(a - m) + xp.exp(b - m))


Logaddexp = _binary("Logaddexp", _logaddexp, "ab",
                    lambda gy, a, b, y: (gy / (1 + exp(b - a)), gy / (1 + exp(a - b))), quiet=True)
Logaddexp2 = _binary("Logaddexp2", lambda xp, a, b: xp.logaddexp2(a, b), "ab",
                     lambda gy, a, b, y: (gy / (1 + exp2(b - a)), gy / (1 + exp2(a - b))), quiet=True)


class Xlogy(Function):
    """``x * log(y)``, 0 where x == 0 (unless y is nan)."""

    _array_forward = True

    @staticmethod
    def forward(ctx, a, b):
        xp = _xp2(a, b)
        ctx.save_for_backward(a, b)
        x, y = _arrays(xp, a, b)
        with _quiet():
            return xp.asarray(xp.where((x == 0) & ~xp.isnan(y), 0, x * xp.log(y)).astype(x.dtype, copy=False))

    @staticmethod
    def backward(ctx, gy):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        ga = gb = None
        if need_a:
            ga = where((a == 0) & (b <= 0), 0.0, xlogy(gy, b))
        if need_b:
            gb = gy * a / b
        return ga, gb


class Copysign(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, a, b):
        y = xp_of(a).asarray(xp_of(a).copysign(a, b))
        ctx.save_for_backward(a, y)
        return y

    @staticmethod
    def backward(ctx, gy):
        a, y = ctx.saved_tensors
        return gy * where(a == 0, 0.0, y / a), (_zeros_like(gy) if ctx.needs_input_grad[1] else None)


class Nextafter(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, a, b):
        return xp_of(a).asarray(xp_of(a).nextafter(a, b))

    @staticmethod
    def backward(ctx, gy):
        raise RuntimeError("the derivative for 'nextafter' is not implemented.")


def _both_tensors(name, input, other):
    _data(input, name)
    _need_tensor(name, other)
    return binary_operands(input, other)


def _both_tensors_float(name, input, other):
    a, b, x, y = _both_tensors(name, input, other)
    if x.dtype.kind != "f":
        _unsupported(name.rstrip("_"), x)
    return a, b, x, y


def _both_tensors_float_or_complex(name, input, other):
    a, b, x, y = _both_tensors(name, input, other)
    if x.dtype.kind not in "fc":
        _unsupported(name.rstrip("_"), x)
    return a, b, x, y


def _complex_ok(x):
    """``complex_error`` of a binary op defined for complex numbers."""


def _both_tensors_lifted(name, input, other):
    _data(input, name)
    _need_tensor(name, other)
    return float_operands(input, other)


def _tensor_number_lifted(name, input, other):
    _data(input, name)
    return float_operands(input, other)


def _numbers_lifted(name, input, other):
    return float_operands(input, other)


def _numbers_no_bool(name, input, other):
    a, b, x, y = binary_operands(input, other)
    _no_bool(name.rstrip("_"), x, y)
    return a, b, x, y


def _tensor_number_no_bool(name, input, other):
    _data(input, name)
    return _numbers_no_bool(name, input, other)


def _renamed(F, node):
    """Function ``F`` with its graph node called ``node``."""
    return type(Function)(F.__name__, (F,), {"_node_name": node, "__module__": __name__,
                                              "__qualname__": F.__qualname__})


def _is_complex_operand(x, y):
    """Whether a binary op's promoted operands (arrays or numbers) are complex."""
    return getattr(x, "dtype", getattr(y, "dtype", None)).kind == "c"


def _binary_fn(F, name, prepare, doc, saves_self=True, scalar_other=None, scalar_self=None, inplace=True, aliases=(),
               complex_error=None):
    """The public ``name(input, other, *, out=None)`` and in-place
    ``name_(self, other)`` of binary op ``F``; ``prepare(name, input, other)``
    checks the arguments as PyTorch does and promotes them.  PyTorch names
    the node differently when ``other`` (``scalar_other``) or ``input``
    (``scalar_self``) is a number.  Complex operands raise
    ``complex_error(x)`` (default: PyTorch's missing-kernel error)."""
    F_other = _renamed(F, scalar_other) if scalar_other else F
    F_self = _renamed(F, scalar_self) if scalar_self else F
    complex_error = complex_error or _no_complex_kernel(name)

    def op(input, other, *, out=None):
        a, b, x, y = prepare(name, input, other)
        if _is_complex_operand(x, y):
            complex_error(x)
        G = F_other if b.__class__ in _SCALARS else F_self if a.__class__ in _SCALARS else F
        return _out(_apply(G, (a, b), (x, y)), out)

    def op_(self, other):
        _, b, x, y = prepare(name + "_", self, other)
        if _is_complex_operand(x, y):
            complex_error(x)
        return _inplace(self, F_other if b.__class__ in _SCALARS else F, (self, b), [x, y], saves_self)

    op.__name__ = op.__qualname__ = name
    op_.__name__ = op_.__qualname__ = name + "_"
    op.__doc__ = doc
    op_.__doc__ = f"In-place :func:`{name}`."
    op, op_ = _broadcasting(op), _broadcasting(op_)
    decl = declare(op, inplace=op_ if inplace else None, aliases=aliases, fusion="elementwise",
                   vmap=elementwise(op), jvp=_jvp_of(F))
    return decl.function, op_


floor_divide, floor_divide_ = _binary_fn(FloorDivide, "floor_divide", _numbers_no_bool,
                                         complex_error=_no_complex_kernel("div_floor"), doc="""\
    ``input // other`` rounding down, as Python's ``//`` (either may be a
    number; not differentiable, as in PyTorch).

    Example::

        >>> fabric.floor_divide(fabric.tensor([-7, 7]), 2)
        tensor([-4,  3])
    """, saves_self=False)
remainder, remainder_ = _binary_fn(Remainder, "remainder", _numbers_no_bool, """\
    Python's ``%``: the remainder has the sign of ``other`` (either may be a number).

    Example::

        >>> fabric.remainder(fabric.tensor([-3, 3]), 2)
        tensor([1, 1])
    """, scalar_other="RemainderBackward0")
fmod, fmod_ = _binary_fn(Fmod, "fmod", _tensor_number_no_bool, """\
    C's ``fmod``: the remainder has the sign of ``input``.

    Example::

        >>> fabric.fmod(fabric.tensor([-3, 3]), 2)
        tensor([-1,  1])
    """, scalar_other="FmodBackward0")
atan2, atan2_ = _binary_fn(Atan2, "atan2", _both_tensors_lifted, """\
    Angle of the point ``(other, input)``, in [-pi, pi].

    Example::

        >>> fabric.atan2(fabric.tensor([1.0]), fabric.tensor([1.0]))
        tensor([0.7854])
    """, aliases=("arctan2",))
arctan2, arctan2_ = atan2, atan2_
maximum, _ = _binary_fn(Maximum, "maximum", _both_tensors, complex_error=_complex_unsupported(
    "maximum not implemented for complex tensors.", RuntimeError), doc="""\
    Elementwise maximum; nan wins; a tie splits the gradient evenly.

    Example::

        >>> fabric.maximum(fabric.tensor([1, 5]), fabric.tensor([3, 2]))
        tensor([3, 5])
    """, inplace=False)
minimum, _ = _binary_fn(Minimum, "minimum", _both_tensors, complex_error=_complex_unsupported(
    "minimum not implemented for complex tensors.", RuntimeError), doc="""\
    Elementwise minimum; nan wins; a tie splits the gradient evenly.

    Example::

        >>> fabric.minimum(fabric.tensor([1, 5]), fabric.tensor([3, 2]))
        tensor([1, 2])
    """, inplace=False)
fmax, _ = _binary_fn(Fmax, "fmax", _both_tensors, complex_error=_complex_unsupported(
    "fmax not implemented for complex tensors.", RuntimeError), doc="""\
    Elementwise maximum ignoring nan (nan only where both are nan).

    Example::

        >>> fabric.fmax(fabric.tensor([1.0, float("nan")]), fabric.tensor([3.0, 2.0]))
        tensor([3., 2.])
    """, inplace=False)
fmin, _ = _binary_fn(Fmin, "fmin", _both_tensors, complex_error=_complex_unsupported(
    "fmin not implemented for complex tensors.", RuntimeError), doc="""\
    Elementwise minimum ignoring nan (nan only where both are nan).

    Example::

        >>> fabric.fmin(fabric.tensor([1.0, float("nan")]), fabric.tensor([3.0, 2.0]))
        tensor([1., 2.])
    """, inplace=False)
hypot, hypot_ = _binary_fn(Hypot, "hypot", _both_tensors_float, """\
    ``sqrt(input**2 + other**2)`` without overflow (float tensors only).

    Example::

        >>> fabric.hypot(fabric.tensor([3.0]), fabric.tensor([4.0]))
        tensor([5.])
    """)
logaddexp, _ = _binary_fn(Logaddexp, "logaddexp", _both_tensors_float_or_complex, complex_error=_complex_ok,
                          doc="""\
    ``log(exp(input) + exp(other))`` without overflow (float tensors only).

    Example::

        >>> fabric.logaddexp(fabric.tensor([0.0]), fabric.tensor([0.0]))
        tensor([0.6931])
    """, inplace=False)
logaddexp2, _ = _binary_fn(Logaddexp2, "logaddexp2", _both_tensors_float, """\
    ``log2(2**input + 2**other)`` without overflow (float tensors only).

    Example::

        >>> fabric.logaddexp2(fabric.tensor([1.0]), fabric.tensor([1.0]))
        tensor([2.])
    """, inplace=False)
xlogy, xlogy_ = _binary_fn(Xlogy, "xlogy", _numbers_lifted, """\
    ``input * log(other)``, 0 where ``input`` is 0 unless ``other`` is nan
    (either may be a number).

    Example::

        >>> fabric.xlogy(fabric.tensor([0.0, 2.0]), fabric.tensor([0.0, 1.0]))
        tensor([0., 0.])
    """, scalar_self="XlogyBackward1", scalar_other="XlogyBackward2")
copysign, copysign_ = _binary_fn(Copysign, "copysign", _tensor_number_lifted, """\
    ``|input|`` with the sign of ``other`` (a tensor or a number).

    Example::

        >>> fabric.copysign(fabric.tensor([1.0, 2.0]), -0.0)
        tensor([-1., -2.])
    """, scalar_other="CopysignBackward1")
nextafter, nextafter_ = _binary_fn(Nextafter, "nextafter", _both_tensors_float, """\
    The next float after ``input`` towards ``other`` (not differentiable).

    Example::

        >>> fabric.nextafter(fabric.tensor([1.0]), fabric.tensor([2.0])) > 1
        tensor([True])
    """, saves_self=False)


# --- comparisons, logical and bitwise ops (no gradient) --------------------------------

def _compare_fn(ufunc, name):
    ordered = ufunc not in ("equal", "not_equal")
    no_complex = _no_complex_kernel(name)

    def op(input, other, *, out=None):
        _data(input, name)
        _a, _b, x, y = binary_operands(input, other)
        if ordered and _is_complex_operand(x, y):
            no_complex(x)
        xp = _xp2(x, y)
        return _out(_wrap(getattr(xp, ufunc)(x, y)), out)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = (f"``input {_CMP_SYMBOL[ufunc]} other`` elementwise, after type promotion; a bool tensor.\n\n"
                  f"    Example::\n\n        >>> fabric.{name}(fabric.tensor([1, 2, 3]), 2)\n"
                  f"        {_CMP_EXAMPLE[ufunc]}\n")
    return _broadcasting(op)


_CMP_SYMBOL = {"equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=", "greater": ">",
               "greater_equal": ">="}
_CMP_EXAMPLE = {"equal": "tensor([False,  True, False])", "not_equal": "tensor([ True, False,  True])",
                "less": "tensor([ True, False, False])", "less_equal": "tensor([ True,  True, False])",
                "greater": "tensor([False, False,  True])", "greater_equal": "tensor([False,  True,  True])"}

eq = _compare_fn("equal", "eq")
ne = _compare_fn("not_equal", "ne")
lt = _compare_fn("less", "lt")
le = _compare_fn("less_equal", "le")
gt = _compare_fn("greater", "gt")
ge = _compare_fn("greater_equal", "ge")
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne


class _CompareInplace(Function):
    """``self.eq_(other)`` and friends: the comparison written as 0/1 in
    ``self``'s dtype; its gradient is zero (node ``EqBackward0`` ...)."""

    _array_forward = True

    @classmethod
    def forward(cls, ctx, x, y, dtype):
        return xp_of(x).asarray(getattr(_xp2(x, y), cls.ufunc)(x, y)).astype(dtype)

    @staticmethod
    def backward(ctx, gy):
        return _zeros_like(gy), (_zeros_like(gy) if ctx.needs_input_grad[1] else None), None


def _compare_inplace_fn(ufunc, name, node):
    F = type(Function)(node, (_CompareInplace,), {"ufunc": ufunc, "__module__": __name__, "__qualname__": node})

    def op_(self, other):
        _a, b, x, y = binary_operands(self, other)
        if ufunc not in ("equal", "not_equal") and _is_complex_operand(x, y):
            _no_complex_kernel(name)(x)
        return _inplace(self, F, (self, b, None), [x, y, self._data.dtype], False)

    op_.__name__ = op_.__qualname__ = name + "_"
    op_.__doc__ = f"In-place :func:`{name}`: 1 where true, 0 where false, in ``self``'s dtype."
    return _broadcasting(op_)


eq_ = _compare_inplace_fn("equal", "eq", "Eq")
ne_ = _compare_inplace_fn("not_equal", "ne", "Ne")
lt_ = _compare_inplace_fn("less", "lt", "Lt")
le_ = _compare_inplace_fn("less_equal", "le", "Le")
gt_ = _compare_inplace_fn("greater", "gt", "Gt")
ge_ = _compare_inplace_fn("greater_equal", "ge", "Ge")
greater_, greater_equal_, less_, less_equal_, not_equal_ = gt_, ge_, lt_, le_, ne_
for _fn, _fn_, _aliases in ((eq, eq_, ()), (ne, ne_, ("not_equal",)), (lt, lt_, ("less",)), (le, le_, ("less_equal",)),
                            (gt, gt_, ("greater",)), (ge, ge_, ("greater_equal",))):
    declare(_fn, inplace=_fn_, aliases=_aliases, fusion="elementwise")


def _logical_fn(ufunc, name, example):
    def op(input, other, *, out=None):
        x = _data(input, name)
        _need_tensor(name, other)
        x, y = _one_device((input, other), [x, other._data])
        return _out(_wrap(getattr(xp_of(x), ufunc)(x, y)), out)

    def op_(self, other):
        return _inplace_no_grad(self, op(self, other))

    op.__name__ = op.__qualname__ = name
    op_.__name__ = op_.__qualname__ = name + "_"
    op.__doc__ = (f"Elementwise logical {name.split('_')[1].upper()} (nonzero is true); a bool tensor.\n\n"
                  f"    Example::\n\n        >>> fabric.{name}(fabric.tensor([0, 1, 2]), fabric.tensor([1, 1, 0]))\n"
                  f"        {example}\n")
    op_.__doc__ = f"In-place :func:`{name}` (the result is cast to ``self``'s dtype)."
    return declare(_broadcasting(op), inplace=op_, fusion="elementwise").function, op_


logical_and, logical_and_ = _logical_fn("logical_and", "logical_and", "tensor([False,  True, False])")
logical_or, logical_or_ = _logical_fn("logical_or", "logical_or", "tensor([True, True, True])")
logical_xor, logical_xor_ = _logical_fn("logical_xor", "logical_xor", "tensor([ True, False,  True])")


def _int_operands(name, kernel, input, other, allow_bool=True):
    _a, _b, x, y = binary_operands(input, other)
    ref = x if hasattr(x, "dtype") else y
    if ref.dtype.kind not in ("iub" if allow_bool else "iu"):
        _unsupported(kernel, ref)
    return x, y


def _bitwise_fn(ufunc, name, kernel, example):
    def op(input, other, *, out=None):
        x, y = _int_operands(name, kernel, input, other)
        return _out(_wrap(getattr(_xp2(x, y), ufunc)(x, y)), out)

    def op_(self, other):
        return _inplace_no_grad(self, op(self, other))

    op.__name__ = op.__qualname__ = name
    op_.__name__ = op_.__qualname__ = name + "_"
    op.__doc__ = (f"Elementwise bitwise {name.split('_')[1].upper()} of integer or bool tensors (either may be "
                  f"a number).\n\n    Example::\n\n        >>> fabric.{name}(fabric.tensor([12]), 10)\n"
                  f"        {example}\n")
    op_.__doc__ = f"In-place :func:`{name}`."
    return declare(_broadcasting(op), inplace=op_, fusion="elementwise").function, op_


bitwise_and, bitwise_and_ = _bitwise_fn("bitwise_and", "bitwise_and", "bitwise_and", "tensor([8])")
bitwise_or, bitwise_or_ = _bitwise_fn("bitwise_or", "bitwise_or", "bitwise_or", "tensor([14])")
bitwise_xor, bitwise_xor_ = _bitwise_fn("bitwise_xor", "bitwise_xor", "bitwise_xor", "tensor([6])")


def _shift(xp, x, y, left):
    """Shifts with PyTorch's rules: a shift by a negative amount or by at
    least the bit width gives 0 (left) or the sign fill (right)."""
    if x.__class__ in _SCALARS:
        x = xp.asarray(x, dtype=y.dtype)
    bits = x.dtype.itemsize * 8
    limit = bits if left or x.dtype.kind == "u" else bits - 1
    fill = xp.right_shift(x, bits - 1) if not left and x.dtype.kind == "i" else xp.zeros_like(x)
    if y.__class__ in _SCALARS:
        if y < 0 or y >= limit:
            return xp.asarray(xp.broadcast_to(fill, x.shape)).copy()
        return xp.left_shift(x, y) if left else xp.right_shift(x, y)
    bad = (y < 0) | (y >= limit)
    safe = xp.where(bad, 0, y).astype(x.dtype, copy=False)
    shifted = xp.left_shift(x, safe) if left else xp.right_shift(x, safe)
    return xp.where(bad, fill, shifted).astype(x.dtype, copy=False)


@declare_op()
@_broadcasting
def bitwise_left_shift(input: Tensor, other: Tensor | float, *, out: Tensor | None = None) -> Tensor:
    """``input << other`` for integer tensors (either may be a number).

    Example::

        >>> fabric.bitwise_left_shift(fabric.tensor([1, 3]), 2)
        tensor([ 4, 12])
    """
    x, y = _int_operands("bitwise_left_shift", "lshift", input, other, allow_bool=False)
    return _out(_wrap(_shift(_xp2(x, y), x, y, True)), out)


@declare_op()
@_broadcasting
def bitwise_right_shift(input: Tensor, other: Tensor | float, *, out: Tensor | None = None) -> Tensor:
    """``input >> other`` (arithmetic shift) for integer tensors (either may be a number).

    Example::

        >>> fabric.bitwise_right_shift(fabric.tensor([-8, 8]), 2)
        tensor([-2,  2])
    """
    x, y = _int_operands("bitwise_right_shift", "rshift", input, other, allow_bool=False)
    return _out(_wrap(_shift(_xp2(x, y), x, y, False)), out)


@declare_op()
def bitwise_left_shift_(self: Tensor, other: Tensor | float) -> Tensor:
    """In-place :func:`bitwise_left_shift`."""
    return _inplace_no_grad(self, bitwise_left_shift(self, other))


@declare_op()
def bitwise_right_shift_(self: Tensor, other: Tensor | float) -> Tensor:
    """In-place :func:`bitwise_right_shift`."""
    return _inplace_no_grad(self, bitwise_right_shift(self, other))


@declare_op()
@_broadcasting
def isclose(input: Tensor, other: Tensor | float, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Tensor:
    """``|input - other| <= atol + rtol * |other|`` elementwise (and equal
    infinities); both tensors must have the same dtype.

    Example::

        >>> fabric.isclose(fabric.tensor([1.0, 2.0]), fabric.tensor([1.0 + 1e-9, 2.1]))
        tensor([ True, False])
    """
    x = _data(input, "isclose")
    _need_tensor("isclose", other)
    y = other._data
    if x.dtype != y.dtype:
        raise RuntimeError(f"{_tname(x.dtype)} did not match {_tname(y.dtype)}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
    x, y = _one_device((input, other), [x, y])
    xp = xp_of(x)
    close = x == y
    if equal_nan and x.dtype.kind == "f":
        close |= xp.isnan(x) & xp.isnan(y)
    if rtol or atol:
        with _quiet():
            if x.dtype.kind == "b":
                x, y = x.astype(_default_float()), y.astype(_default_float())
            allowed = atol + xp.abs(rtol * (y if y.dtype.kind == "f" else y.astype(_default_float())))
            actual = xp.abs(x - y)
            close |= xp.isfinite(actual) & (actual <= allowed)
    return _wrap(close)


@declare_op()
def allclose(input: Tensor, other: Tensor | float, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> bool:
    """Whether :func:`isclose` holds everywhere (a Python bool).

    Example::

        >>> fabric.allclose(fabric.tensor([1.0]), fabric.tensor([1.0 + 1e-9]))
        True
    """
    return builtins.bool(isclose(input, other, rtol, atol, equal_nan)._data.all())


@declare_op()
def equal(input: Tensor, other: Tensor) -> bool:
    """Whether both tensors have the same shape and the same values (a Python bool).

    Example::

        >>> fabric.equal(fabric.tensor([1, 2]), fabric.tensor([1.0, 2.0]))
        True
    """
    x = _data(input, "equal")
    _need_tensor("equal", other)
    if x.shape != other._data.shape:
        return False
    return builtins.bool(eq(input, other)._data.all())


# --- where, clamp, lerp, addcmul, addcdiv ----------------------------------------------

class Where(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, c, a, b):
        ctx.save_for_backward(c)
        return xp_of(c).where(c, a, b)

    @staticmethod
    def backward(ctx, gy):
        c, = ctx.saved_tensors
        _, need_a, need_b = ctx.needs_input_grad
        return None, (where(c, gy, 0.0) if need_a else None), (where(c, 0.0, gy) if need_b else None)

    @staticmethod
    def jvp(ctx, _, ta, tb):
        c, = ctx.saved_tensors
        meta = ctx._input_meta
        if meta is not None and (ta is None and meta[1] is None or tb is None and meta[2] is None):
            return NotImplemented   # the output's shape depends on an operand the node did not record
        t = where(c, 0.0 if ta is None else ta, 0.0 if tb is None else tb)
        if meta is None:
            return t
        shape = np.broadcast_shapes(tuple(c.shape), *[tuple(m[0]) for m in meta[1:]])
        return t if tuple(t.shape) == shape else t.expand(shape)


@_broadcasting
def where(condition: Tensor, input: Tensor | float | None = None, other: Tensor | float | None = None, *,
          out: Tensor | None = None) -> Tensor | tuple[Tensor, ...]:
    """``input`` where ``condition`` is true, else ``other`` (broadcast; either
    may be a number).  ``where(condition)`` is ``nonzero(condition, as_tuple=True)``.

    Example::

        >>> fabric.where(fabric.tensor([True, False]), fabric.tensor([1.0, 2.0]), 0.0)
        tensor([1., 0.])
    """
    if input is None and other is None:
        from .indexing import nonzero

        return nonzero(condition, as_tuple=True)
    c = _data(condition, "where", "condition", 1)
    if c.dtype != np.bool_:
        if c.dtype != np.uint8:
            raise RuntimeError("where expected condition to be a boolean tensor, but got a tensor with dtype "
                               f"{_tname(c.dtype)}")
        c = c.astype(bool)
    if isinstance(input, Tensor) or isinstance(other, Tensor):
        a, b, x, y = binary_operands(input, other)
        if not isinstance(b, Tensor):
            y = checked_scalar(b, x.dtype)
        elif not isinstance(a, Tensor):
            x = checked_scalar(a, y.dtype)
        c, x, y = _one_device((condition, a, b), [c, x, y])
    else:
        a, b = scalar_value(input), scalar_value(other)
        dt = D.result_type(a, b).np
        xp = xp_of(c)
        x, y = xp.asarray(a, dtype=dt), xp.asarray(b, dtype=dt)
    return _out(_apply(Where, (condition, a, b), (c, x, y)), out)


def _tensor_where(self, condition, y):
    """``Tensor.where(condition, y)`` is ``where(condition, self, y)``."""
    return where(condition, self, y)


def _clamp_forward(xp, x, lo, hi, out=None):
    """``minimum(maximum(x, lo), hi)`` (nan propagates; ``hi`` wins when
    ``lo > hi``), in one pass when both bounds are given."""
    if lo is None:
        return xp.asarray(xp.minimum(x, hi, out=out))
    if hi is None:
        return xp.asarray(xp.maximum(x, lo, out=out))
    return xp.asarray(xp.clip(x, lo, hi, out=out))


class ClampScalar(Function):
    """clamp with number bounds: gradient passes where ``min <= x <= max``."""

    _array_forward = True
    _node_name = "ClampBackward1"

    @staticmethod
    def forward(ctx, x, lo, hi):
        ctx.lo, ctx.hi = lo, hi
        ctx.save_for_backward(x)
        return _clamp_forward(xp_of(x), x, lo, hi)

    @staticmethod
    def backward(ctx, gy):
        x, = ctx.saved_tensors
        lo, hi = ctx.lo, ctx.hi
        if lo is None:
            mask = x <= hi
        elif hi is None:
            mask = x >= lo
        else:
            mask = (x >= lo) & (x <= hi)
        return where(mask, gy, 0.0), None, None


class ClampTensor(Function):
    """clamp with tensor bounds (either may be None), PyTorch's gradient rules."""

    _array_forward = True
    _node_name = "ClampBackward0"

    @staticmethod
    def forward(ctx, x, lo, hi):
        ctx.save_for_backward(x, lo, hi)
        return _clamp_forward(xp_of(x), x, lo, hi)

    @staticmethod
    def backward(ctx, gy):
        x, lo, hi = ctx.saved_tensors
        need_x, need_lo, need_hi = ctx.needs_input_grad
        gx = glo = ghi = None
        if lo is not None and hi is not None:
            if need_x:
                gx = where((x >= lo) & (x <= hi), gy, 0.0)
            if need_lo:
                glo = where((x < lo) & (lo < hi), gy, 0.0)
            if need_hi:
                ghi = where((x > hi) | (hi < lo), gy, 0.0)
        elif lo is not None:
            gx = where(x >= lo, gy, 0.0) if need_x else None
            glo = where(x < lo, gy, 0.0) if need_lo else None
        else:
            gx = where(x <= hi, gy, 0.0) if need_x else None
            ghi = where(x > hi, gy, 0.0) if need_hi else None
        return gx, glo, ghi


class ClampMin(ClampScalar):
    _node_name = "ClampMinBackward0"


class ClampMax(ClampScalar):
    _node_name = "ClampMaxBackward0"


class ClampMinTensor(ClampTensor):
    _node_name = "ClampMinBackward1"


class ClampMaxTensor(ClampTensor):
    _node_name = "ClampMaxBackward1"


def _clamp_args(input, min, max, name):
    """(Function class, args, arrays) for clamp with PyTorch's promotion of
    the input with its bounds."""
    x = _data(input, name)
    if x.dtype.kind == "c":
        raise NotImplementedError("clamp is not supported for complex types")
    t_min, t_max = isinstance(min, Tensor), isinstance(max, Tensor)
    if t_min or t_max:
        if (min is not None and not t_min) or (max is not None and not t_max):
            raise TypeError(f"{name}() received an invalid combination of arguments: min and max must both be "
                            "Tensors or both be numbers")
        rt = D.result_type(*(t for t in (input, min, max) if t is not None)).np
        if rt == np.bool_:
            _unsupported("clamp", x)
        lo = None if min is None else min._data.astype(rt, copy=False)
        hi = None if max is None else max._data.astype(rt, copy=False)
        arrays = _one_device((input, min, max), [x.astype(rt, copy=False), lo, hi])
        return ClampTensor, (input, min, max), arrays
    lo = None if min is None else scalar_value(min)
    hi = None if max is None else scalar_value(max)
    if x.dtype.kind == "f" and lo.__class__ is not builtins.bool and hi.__class__ is not builtins.bool:
        rt = x.dtype
    else:
        rt = D.result_type(input, lo, hi).np
        if rt == np.bool_:
            _unsupported("clamp", x)
        if rt.kind in "iu":  # bounds that do not fit raise, as PyTorch's checked scalar conversion
            lo = None if lo is None else np.asarray(checked_scalar(lo, rt)).astype(rt)[()]
            hi = None if hi is None else np.asarray(checked_scalar(hi, rt)).astype(rt)[()]
    return ClampScalar, (input, None, None), [x.astype(rt, copy=False), lo, hi]


@declare_op(aliases=("clip",))
@_broadcasting
def clamp(input: Tensor, min: Tensor | float | None = None, max: Tensor | float | None = None, *,
          out: Tensor | None = None) -> Tensor:
    """Limit ``input`` to ``[min, max]`` (numbers or tensors; either may be
    None): ``minimum(maximum(input, min), max)``.  The gradient passes where
    ``min <= input <= max``, as PyTorch.

    Example::

        >>> fabric.clamp(fabric.tensor([-1.0, 0.5, 2.0]), min=0.0, max=1.0)
        tensor([0.0000, 0.5000, 1.0000])
    """
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    F, args, arrays = _clamp_args(input, min, max, "clamp")
    return _out(_apply(F, args, arrays), out)


clip = clamp


@declare_op(aliases=("clip_",))
@_broadcasting
def clamp_(self: Tensor, min: Tensor | float | None = None, max: Tensor | float | None = None) -> Tensor:
    """In-place :func:`clamp`."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    F, args, arrays = _clamp_args(self, min, max, "clamp_")
    x = self._data
    if F is ClampScalar and arrays[0] is x and not _recording(self, (self,)):
        _clamp_forward(xp_of(x), x, arrays[1], arrays[2], out=x)  # nothing to record: write straight into x
        self._bump_version()
        return self
    return _inplace(self, F, (self,) + args[1:], arrays)


clip_ = clamp_


@declare_op()
@_broadcasting
def clamp_min(input: Tensor, min: Tensor | float) -> Tensor:
    """``clamp(input, min=min)``.

    Example::

        >>> fabric.clamp_min(fabric.tensor([-1.0, 2.0]), 0.0)
        tensor([0., 2.])
    """
    F, args, arrays = _clamp_args(input, min, None, "clamp_min")
    return _apply(ClampMin if F is ClampScalar else ClampMinTensor, args, arrays)


@declare_op()
@_broadcasting
def clamp_max(input: Tensor, max: Tensor | float) -> Tensor:
    """``clamp(input, max=max)``.

    Example::

        >>> fabric.clamp_max(fabric.tensor([-1.0, 2.0]), 0.0)
        tensor([-1.,  0.])
    """
    F, args, arrays = _clamp_args(input, None, max, "clamp_max")
    return _apply(ClampMax if F is ClampScalar else ClampMaxTensor, args, arrays)


@declare_op()
@_broadcasting
def clamp_min_(self: Tensor, min: Tensor | float) -> Tensor:
    """In-place :func:`clamp_min`."""
    F, args, arrays = _clamp_args(self, min, None, "clamp_min_")
    return _inplace(self, ClampMin if F is ClampScalar else ClampMinTensor, (self,) + args[1:], arrays)


@declare_op()
@_broadcasting
def clamp_max_(self: Tensor, max: Tensor | float) -> Tensor:
    """In-place :func:`clamp_max`."""
    F, args, arrays = _clamp_args(self, None, max, "clamp_max_")
    return _inplace(self, ClampMax if F is ClampScalar else ClampMaxTensor, (self,) + args[1:], arrays)


def _lerp_forward(xp, a, b, w):
    """PyTorch's CPU kernel: ``fma(c, b - a, base)`` with ``(c, base) = (w, a)`` for ``|w| < 0.5``
    and ``(w - 1, b)`` otherwise (exact at w = 0 and w = 1).  For float16/float32 the fused
    multiply-add is reproduced in float64 (the product of two float32 numbers is exact there), so
    results match PyTorch's bit for bit; float64 rounds the product and the sum separately."""
    if a.dtype == np.float16:  # computed in float32 (PyTorch's opmath type), rounded once at the end
        f32 = np.dtype(np.float32)
        w = w.astype(f32) if hasattr(w, "astype") else w
        return _lerp_forward(xp, a.astype(f32), b.astype(f32), w).astype(a.dtype)
    d = b - a
    small = xp.abs(w) < 0.5
    if a.dtype == np.float32:
        w = xp.asarray(w, a.dtype)
        c = xp.where(small, w, w - xp.asarray(1, a.dtype)).astype(np.float64)
        base = xp.where(small, a, b).astype(np.float64)
        return xp.asarray(c * d.astype(np.float64) + base).astype(a.dtype, copy=False)
    c = xp.where(small, w, w - 1.0)
    return xp.asarray(_fma64(xp, xp.asarray(c, a.dtype), d, xp.where(small, a, b))).astype(a.dtype, copy=False)


def _fma64(xp, x, y, z):
    """``x * y + z`` in float64 with the rounding of a fused multiply-add (NumPy has none):
    Dekker's exact product plus an error-free sum.  Agrees with a true fma except in rare
    double-rounding ties; non-finite results fall back to the plain expression."""
    p = x * y
    t = 134217729.0 * x  # 2**27 + 1: split each factor into two 26-bit halves
    xh = t - (t - x)
    xl = x - xh
    t = 134217729.0 * y
    yh = t - (t - y)
    yl = y - yh
    e = ((xh * yh - p) + xh * yl + xl * yh) + xl * yl
    s = p + z
    bv = s - p
    r = s + (((p - (s - bv)) + (z - bv)) + e)
    return xp.where(xp.isfinite(r), r, s)


class LerpScalar(Function):
    _array_forward = True
    _node_name = "LerpBackward0"

    @staticmethod
    def forward(ctx, a, b, w):
        ctx.w = w
        return _lerp_forward(xp_of(a), a, b, w)

    @staticmethod
    def backward(ctx, gy):
        w = ctx.w
        return gy * (1 - w), gy * w, None


class LerpTensor(Function):
    _array_forward = True
    _node_name = "LerpBackward1"

    @staticmethod
    def forward(ctx, a, b, w):
        ctx.save_for_backward(a, b, w)
        return _lerp_forward(xp_of(a), a, b, w)

    @staticmethod
    def backward(ctx, gy):
        a, b, w = ctx.saved_tensors
        need_a, need_b, need_w = ctx.needs_input_grad
        return ((gy * (1 - w) if need_a else None), (gy * w if need_b else None),
                (gy * (b - a) if need_w else None))


def _lerp_args(input, end, weight, name):
    x = _data(input, name)
    _need_tensor(name, end, "end", 2)
    y = end._data
    if x.dtype.kind not in "fc":
        _unsupported("lerp_kernel_scalar" if not isinstance(weight, Tensor) else "lerp_kernel_tensor", x)
    if y.dtype != x.dtype:
        raise RuntimeError(f"expected dtype {_cname(x.dtype)} for `end` but got dtype {_cname(y.dtype)}")
    if isinstance(weight, Tensor):
        w = weight._data
        if w.dtype != x.dtype and w.ndim:
            raise RuntimeError(f"expected dtype {_cname(x.dtype)} for `weight` but got dtype {_cname(w.dtype)}")
        arrays = _one_device((input, end, weight), [x, y, w.astype(x.dtype, copy=False)])
        return LerpTensor, (input, end, weight), arrays
    return LerpScalar, (input, end, None), _one_device((input, end), [x, y]) + [scalar_value(weight)]


@declare_op()
@_broadcasting
def lerp(input: Tensor, end: Tensor, weight: Tensor | float, *, out: Tensor | None = None) -> Tensor:
    """Linear interpolation ``input + weight * (end - input)`` (``weight`` a
    number or a tensor).

    Example::

        >>> fabric.lerp(fabric.tensor([0.0, 1.0]), fabric.tensor([10.0, 3.0]), 0.5)
        tensor([5., 2.])
    """
    F, args, arrays = _lerp_args(input, end, weight, "lerp")
    return _out(_apply(F, args, arrays), out)


@declare_op()
@_broadcasting
def lerp_(self: Tensor, end: Tensor, weight: Tensor | float) -> Tensor:
    """In-place :func:`lerp`."""
    F, args, arrays = _lerp_args(self, end, weight, "lerp_")
    return _inplace(self, F, args, arrays, F is LerpTensor)


def _three_operands(name, input, t1, t2):
    """Promote three tensors to their common dtype (PyTorch's rules)."""
    x = _data(input, name)
    _need_tensor(name, t1, "tensor1", 2)
    _need_tensor(name, t2, "tensor2", 3)
    rt = D.result_type(input, t1, t2).np
    if rt == np.bool_:
        _unsupported(name.rstrip("_"), x)
    arrays = [t._data if t._data.dtype == rt else t._data.astype(rt) for t in (input, t1, t2)]
    return rt, _one_device((input, t1, t2), arrays)


class Addcmul(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, t1, t2, value):
        ctx.value = value
        ctx.save_for_backward(t1, t2)
        return xp_of(x).asarray(x + value * t1 * t2 if value != 1 else x + t1 * t2)

    @staticmethod
    def backward(ctx, gy):
        t1, t2 = ctx.saved_tensors
        v = ctx.value
        _, need1, need2 = ctx.needs_input_grad[:3]
        return gy, (gy * t2 * v if need1 else None), (gy * t1 * v if need2 else None), None


class Addcdiv(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, t1, t2, value):
        ctx.value = value
        ctx.save_for_backward(t1, t2)
        with _quiet():
            return xp_of(x).asarray(x + value * t1 / t2)

    @staticmethod
    def backward(ctx, gy):
        t1, t2 = ctx.saved_tensors
        v = ctx.value
        _, need1, need2 = ctx.needs_input_grad[:3]
        return gy, (gy * v / t2 if need1 else None), (-gy * v * t1 / (t2 * t2) if need2 else None), None


def _addc_value(rt, value):
    value = scalar_value(value)
    return builtins.int(value) if rt.kind in "iub" else value


@declare_op()
@_broadcasting
def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: float = 1, out: Tensor | None = None) -> Tensor:
    """``input + value * tensor1 * tensor2``.

    Example::

        >>> fabric.addcmul(fabric.tensor([1.0]), fabric.tensor([2.0]), fabric.tensor([3.0]), value=0.5)
        tensor([4.])
    """
    rt, arrays = _three_operands("addcmul", input, tensor1, tensor2)
    return _out(_apply(Addcmul, (input, tensor1, tensor2, None), arrays + [_addc_value(rt, value)]), out)


_ADDCDIV_INT = ("Integer division with addcdiv is no longer supported, and in a future  release addcdiv will "
                "perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented "
                "as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as "
                "(input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the "
                "latter implementation: (input + value * tensor1 / tensor2), for all dtypes.")


@declare_op()
@_broadcasting
def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: float = 1, out: Tensor | None = None) -> Tensor:
    """``input + value * tensor1 / tensor2`` (tensor1 and tensor2 must not both be integer).

    Example::

        >>> fabric.addcdiv(fabric.tensor([1.0]), fabric.tensor([2.0]), fabric.tensor([4.0]), value=2)
        tensor([2.])
    """
    _data(input, "addcdiv")
    if isinstance(tensor1, Tensor) and isinstance(tensor2, Tensor) and tensor1._data.dtype.kind in "iub" \
            and tensor2._data.dtype.kind in "iub":
        raise RuntimeError(_ADDCDIV_INT)
    rt, arrays = _three_operands("addcdiv", input, tensor1, tensor2)
    return _out(_apply(Addcdiv, (input, tensor1, tensor2, None), arrays + [_addc_value(rt, value)]), out)


@declare_op()
@_broadcasting
def addcmul_(self: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: float = 1) -> Tensor:
    """In-place :func:`addcmul`."""
    rt, arrays = _three_operands("addcmul_", self, tensor1, tensor2)
    return _inplace(self, Addcmul, (self, tensor1, tensor2, None), arrays + [_addc_value(rt, value)], False)


@declare_op()
@_broadcasting
def addcdiv_(self: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: float = 1) -> Tensor:
    """In-place :func:`addcdiv`."""
    if tensor1._data.dtype.kind in "iub" and tensor2._data.dtype.kind in "iub":
        raise RuntimeError(_ADDCDIV_INT)
    rt, arrays = _three_operands("addcdiv_", self, tensor1, tensor2)
    return _inplace(self, Addcdiv, (self, tensor1, tensor2, None), arrays + [_addc_value(rt, value)], False)


# --- in-place variants of arith ops ----------------------------------------------------


@declare_op(aliases=("negative_",))
def neg_(self: Tensor) -> Tensor:
    """In-place negation.

    Example::

        >>> fabric.tensor([1, -2]).neg_()
        tensor([-1,  2])
    """
    from .arith import Neg

    return _inplace(self, Neg, (self,), [_data(self, "neg_")], False)


negative_ = neg_


@declare_op()
def exp_(self: Tensor) -> Tensor:
    """In-place :func:`fabric.exp`."""
    from .arith import Exp

    _check_float_inplace(self, "exp_")
    return _inplace(self, Exp, (self,), [self._data], False)


@declare_op()
def log_(self: Tensor) -> Tensor:
    """In-place :func:`fabric.log`."""
    from .arith import Log

    _check_float_inplace(self, "log_")
    return _inplace(self, Log, (self,), [self._data], True)


# --- reflected operators --------------------------------------------------------------------

def scalar_tensor_like(value, ref):
    """A 0-d tensor holding the Python number ``value`` on ``ref``'s device,
    with the dtype PyTorch gives a number (bool, int64 or the default float).
    (The reflected operators pass numbers straight to the ops instead, which
    promotes them as PyTorch's wrapped numbers: ``2 ** x`` keeps x's dtype.)"""
    value = scalar_value(value)
    dt = D.result_type(value).np
    return Tensor._make(xp_of(ref._data).asarray(value, dtype=dt), False)


def _tensor_polygamma(self, n):
    """``Tensor.polygamma(n)`` is ``polygamma(n, self)``."""
    return polygamma(n, self)


# Methods whose argument order differs from the function's
declare(where, method=_tensor_where)
declare(polygamma, method=_tensor_polygamma, inplace=polygamma_)



# --- the composite in-place helper, gcd / lcm / heaviside, ldexp / frexp, i0, mvlgamma -----------------



def _const(array):
    return Tensor._make(array, False)


def _inplace_from(self, compute, others=(), saves_self=True):
    """``self.<op>_(...)`` for a composite op: ``compute(t)`` builds the
    out-of-place result from ``t`` (``self`` or, when autograd records and
    backward reads ``self``'s old value, a copy keeping its history), which
    is then written into ``self`` (see :func:`fabric.ops.pointwise._inplace`)."""
    if _recording(self, (self,) + tuple(others)):
        src = self
        if saves_self:
            src = Tensor._make(self._data.copy(), self._requires_grad, self.grad_fn, self._output_nr)
        return _commit(self, compute(src), True)
    return _commit(self, compute(self), False)


# --- gcd / lcm / heaviside ---------------------------------------------------------------------

def _integer_operands(input, other, name):
    if not isinstance(other, Tensor):
        raise TypeError(f"{name}(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")
    _, _, x, y = binary_operands(input, other)
    if x.dtype.kind not in "iu":
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{_tname(x.dtype)}'")
    return x, y


@declare_op()
def gcd(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise greatest common divisor of integer tensors (non-negative).

    Example::

        >>> fabric.gcd(fabric.tensor([12, -4, 0]), fabric.tensor([18, 6, 0]))
        tensor([6, 2, 0])
    """
    x, y = _integer_operands(input, other, "gcd")
    return _const(xp_of(x).gcd(x, y))


@declare_op()
def lcm(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise least common multiple of integer tensors (non-negative).

    Example::

        >>> fabric.tensor([4, 3]).lcm(fabric.tensor([6, -5]))
        tensor([12, 15])
    """
    x, y = _integer_operands(input, other, "lcm")
    return _const(xp_of(x).lcm(x, y))


@declare_op()
def gcd_(input: Tensor, other: Tensor) -> Tensor:
    """In-place :func:`gcd`."""
    return _commit(input, gcd(input, other), False)


@declare_op()
def lcm_(input: Tensor, other: Tensor) -> Tensor:
    """In-place :func:`lcm`."""
    return _commit(input, lcm(input, other), False)


class Heaviside(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, v):
        xp = xp_of(x)
        return xp.where(x == 0, v, (x > 0).astype(x.dtype)).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, gy):
        raise RuntimeError("derivative for aten::heaviside is not implemented")


def _heaviside_checks(input, values, name, position):
    if not isinstance(values, Tensor):
        raise TypeError(f"{name}(): argument 'values' (position {position}) must be Tensor, "
                        f"not {type(values).__name__}")
    if values._data.dtype != input._data.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")


@declare_op()
def heaviside(input: Tensor, values: Tensor, *, out: Tensor | None = None) -> Tensor:
    """0 where ``input < 0``, ``values`` where ``input == 0``, 1 where ``input > 0``
    (``values`` a tensor of ``input``'s dtype, broadcast; no derivative, as PyTorch).

    Example::

        >>> fabric.heaviside(fabric.tensor([-1.0, 0.0, 2.0]), fabric.tensor([0.5]))
        tensor([0.0000, 0.5000, 1.0000])
    """
    _heaviside_checks(input, values, "heaviside", 2)
    x, v = _same_device(input, values, input._data, values._data)
    r = _apply(Heaviside, (input, values), (x, v))
    if out is not None:
        return copy_into_out(out, r)
    return r


@declare_op(top_level=False)
def heaviside_(self: Tensor, values: Tensor) -> Tensor:
    """In-place ``heaviside``: 0 where ``self < 0``, ``values`` where
    ``self == 0``, 1 where ``self > 0`` (``values`` of ``self``'s dtype)."""
    _heaviside_checks(self, values, "heaviside_", 1)
    return _inplace(self, Heaviside, (self, values), [self._data, values._data], False)


# --- ldexp / frexp ----------------------------------------------------------------------------

@declare_op()
def ldexp(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """``input * 2 ** other`` (a float result, differentiable in both).

    Example::

        >>> fabric.ldexp(fabric.tensor([1.0, 3.0]), fabric.tensor([2, -1]))
        tensor([4.0000, 1.5000])
    """
    if not isinstance(other, Tensor):
        raise TypeError(f"ldexp(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")
    rt = D.result_type(input, other)
    if not rt.is_floating_point:
        rt = D.get_default_dtype()
    # 2 ** other in the result dtype (float64 reaches 2 ** 1023); exact for integer exponents
    r = mul(input if input.dtype is rt else input.to(rt), exp2(other if other.dtype is rt else other.to(rt)))
    if out is not None:
        return copy_into_out(out, r)
    return r


@declare_op()
def ldexp_(input: Tensor, other: Tensor) -> Tensor:
    """In-place :func:`ldexp` (``input`` must be floating)."""
    if input._data.dtype.kind != "f":
        raise RuntimeError(f"ldexp can't be cast to the desired output type {_tname(input._data.dtype)}")
    if not isinstance(other, Tensor):
        raise TypeError(f"ldexp_(): argument 'other' (position 1) must be Tensor, not {type(other).__name__}")
    return _inplace_from(input, lambda t: ldexp(t, other), (other,), saves_self=True)


_frexp_t = _return_type("frexp", ("mantissa", "exponent"))


class Frexp(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x):
        xp = xp_of(x)
        m, e = xp.frexp(x)
        e = e.astype(np.int32, copy=False)
        ctx.e = e
        return m, e

    @staticmethod
    def backward(ctx, gm, ge):
        e = ctx.e
        xp = xp_of(e)
        scale = xp.ldexp(xp.ones((), gm._data.dtype), -e)
        return gm * _const(scale)


@declare_op()
def frexp(input: Tensor, *, out: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """``input = mantissa * 2 ** exponent`` with ``0.5 <= |mantissa| < 1``;
    returns ``(mantissa, exponent)`` (exponent int32).

    Example::

        >>> fabric.frexp(fabric.tensor([8.0, 0.75]))
        fabric.return_types.frexp(
        mantissa=tensor([0.5000, 0.7500]),
        exponent=tensor([4, 0], dtype=fabric.int32))
    """
    if input._data.dtype.kind != "f":
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    m, e = _apply1(Frexp, input, (input._data,))
    if out is not None:
        copy_into_out(out[0], m)
        copy_into_out(out[1], e)
        return _frexp_t(out[0], out[1])
    return _frexp_t(m, e)


# --- i0 (and i1, its derivative); the kernel is _special_functions.bessel_i -------------------------

class I0(Function):
    _array_forward = True
    _node_name = "I0Backward0"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _sf.bessel_i(xp_of(x), x, 0)

    @staticmethod
    def backward(ctx, gy):
        x, = ctx.saved_tensors
        return gy * _i1(x)


class I1(Function):
    _array_forward = True
    _node_name = "SpecialI1Backward0"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _sf.bessel_i(xp_of(x), x, 1)

    @staticmethod
    def backward(ctx, gy):
        x, = ctx.saved_tensors
        zero = x == 0
        safe = where(zero, 1.0, x)  # I1'(x) = I0(x) - I1(x)/x, -> 1/2 at 0
        return gy * where(zero, 0.5, i0(x) - _i1(safe) / safe)


def _i1(x):
    return _apply1(I1, x, (x._data,))


@declare_op()
def i0(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Modified Bessel function of the first kind, order 0 (float result;
    its gradient is I1, computed internally).

    Example::

        >>> fabric.i0(fabric.tensor([0.0, 1.0]))
        tensor([1.0000, 1.2661])
    """
    r = _apply1(I0, input, (float_array(input._data),))
    if out is not None:
        return copy_into_out(out, r)
    return r


@declare_op()
def i0_(input: Tensor) -> Tensor:
    """In-place :func:`i0` (floating tensors)."""
    if input._data.dtype.kind != "f":
        raise RuntimeError(f"result type Float can't be cast to the desired output type {_tname(input._data.dtype)}")
    return _inplace(input, I0, (input,), [input._data], True)


# --- mvlgamma -------------------------------------------------------------------------------------

@declare_op()
def mvlgamma(input: Tensor, p: int) -> Tensor:
    """Multivariate log-gamma of dimension ``p``:
    ``p(p-1)/4 log(pi) + sum_{j<p} lgamma(input - j/2)``.

    Example::

        >>> fabric.mvlgamma(fabric.tensor([2.5]), 2)
        tensor([0.8570])
    """
    if isinstance(p, builtins.bool) or not isinstance(p, numbers.Integral):
        raise TypeError(f"mvlgamma(): argument 'p' must be int, not {type(p).__name__}")
    p = builtins.int(p)
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    x = input
    if x._data.dtype.kind != "f":
        x = x.to(D.get_default_dtype())
    xd = x._data
    offsets = _const(xp_of(xd).arange(p, dtype=xd.dtype) * xd.dtype.type(-0.5))
    r = _sum(lgamma(x.unsqueeze(-1) + offsets), -1)
    return r + (p * (p - 1) / 4.0) * math.log(math.pi)


@declare_op(top_level=False)
def mvlgamma_(input: Tensor, p: int) -> Tensor:
    """In-place :func:`mvlgamma` (floating tensors)."""
    if input._data.dtype.kind != "f":
        raise RuntimeError(f"mvlgamma: result type {_tname(input._data.dtype)} can't be cast to the desired output "
                           "type Float")
    return _inplace_from(input, lambda t: mvlgamma(t, p), (), saves_self=True)


__all__ += declared_names(__name__)
