"""In-place ops (``add_``, ``mul_``, ``zero_``, ``copy_`` ...) and ``out=``.

An in-place op writes into its first argument, bumps the version counter
shared with views, and — when autograd records it — becomes the tensor's new
``grad_fn``.  In-place on a leaf that requires grad raises, as in PyTorch.

Example::

    >>> import fabric
    >>> x = fabric.zeros(2)
    >>> x.add_(1)._version
    1
"""
from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor
from ..autograd.function import Function, _apply
from ..backends import backend_of
from ._registry import declare, declare_op
from ._registry import public_names as declared_names
from ._util import binary_operands, checked_scalar, scalar_value, xp_of

__all__: list[str] = []  # + the declared ops (end of module)


def _inplace_operands(self, other, name):
    """Promote for ``self op= other``; the result must be castable to self's dtype."""
    a, b, x, y = binary_operands(self, other)
    rt = x.dtype if hasattr(x, "dtype") else None
    own = self._data.dtype
    if rt is not None and rt != own and not D.can_cast(D.from_numpy_dtype(rt), D.from_numpy_dtype(own)):
        raise RuntimeError(f"result type {_tname(rt)} can't be cast to the desired output type {_tname(own)}")
    x = self._data
    if hasattr(y, "dtype") and y.dtype != own and rt is not None and rt.kind == own.kind:
        pass
    if hasattr(y, "shape") and y.shape != x.shape:
        try:
            shape = np.broadcast_shapes(x.shape, y.shape)
        except ValueError:
            shape = None
        if shape != x.shape:
            raise RuntimeError(f"output with shape {list(x.shape)} doesn't match the broadcast shape "
                               f"{list(shape) if shape is not None else list(y.shape)}")
    return x, y, rt


def _tname(np_dtype):
    return {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int",
            "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool", "complex64": "ComplexFloat",
            "complex128": "ComplexDouble"}.get(str(np_dtype), str(np_dtype))


def _store(x, value):
    """Write ``value`` into array ``x`` with PyTorch's casting (same-kind or down)."""
    if hasattr(value, "dtype") and value.dtype != x.dtype:
        value = value.astype(x.dtype)
    x[...] = value
    return x


class AddInplace(Function):
    _array_forward = True
    _is_inplace = True
    _node_name = "AddBackward0"

    @staticmethod
    def forward(ctx, x, y, rt):
        if rt is not None and rt != x.dtype:
            return _store(x, x.astype(rt) + y)
        x += y
        return x

    @staticmethod
    def backward(ctx, gy):
        return gy, gy, None


class SubInplace(Function):
    _array_forward = True
    _is_inplace = True
    _node_name = "SubBackward0"

    @staticmethod
    def forward(ctx, x, y, rt):
        if rt is not None and rt != x.dtype:
            return _store(x, x.astype(rt) - y)
        x -= y
        return x

    @staticmethod
    def backward(ctx, gy):
        return gy, -gy, None


class MulInplace(Function):
    _array_forward = True
    _is_inplace = True
    _node_name = "MulBackward0"

    @staticmethod
    def forward(ctx, x, y, rt, x_old):
        # x_old: a clone of x (with x's history) when the other operand's
        # gradient needs x's value before the write
        ctx.save_for_backward(x_old, y)
        if rt is not None and rt != x.dtype:
            return _store(x, x.astype(rt) * y)
        x *= y
        return x

    @staticmethod
    def backward(ctx, gy):
        x_old, y = ctx.saved_tensors
        need_x, need_y = ctx.needs_input_grad[:2]
        return (gy * y if need_x else None), (gy * x_old if need_y else None), None, None


class DivInplace(Function):
    _array_forward = True
    _is_inplace = True
    _node_name = "DivBackward0"

    @staticmethod
    def forward(ctx, x, y, rt, x_old):
        ctx.save_for_backward(x_old, y)
        return _store(x, x / y)

    @staticmethod
    def backward(ctx, gy):
        x_old, y = ctx.saved_tensors
        need_x, need_y = ctx.needs_input_grad[:2]
        return (gy / y if need_x else None), (-gy * x_old / (y * y) if need_y else None), None, None


def _old_value(self, other):
    """A clone of ``self`` keeping its history, needed by ``other``'s gradient
    after ``self`` is overwritten (None when no gradient needs it)."""
    from ..autograd.grad_mode import state

    if state.enabled and isinstance(other, Tensor) and other._requires_grad:
        from .shape import clone

        return clone(self)
    return None


@declare_op()
def add_(self: Tensor, other: Tensor | float, *, alpha: float = 1) -> Tensor:
    """In-place ``self += alpha * other``."""
    if alpha != 1:
        from .arith import _times

        other = _times(other, alpha)
    x, y, rt = _inplace_operands(self, other, "add_")
    return _apply(AddInplace, (self, other, None), (x, y, rt))


@declare_op()
def sub_(self: Tensor, other: Tensor | float, *, alpha: float = 1) -> Tensor:
    """In-place ``self -= alpha * other``."""
    if alpha != 1:
        from .arith import _times

        other = _times(other, alpha)
    x, y, rt = _inplace_operands(self, other, "sub_")
    return _apply(SubInplace, (self, other, None), (x, y, rt))


@declare_op()
def mul_(self: Tensor, other: Tensor | float) -> Tensor:
    """In-place ``self *= other``."""
    x, y, rt = _inplace_operands(self, other, "mul_")
    old = _old_value(self, other)
    return _apply(MulInplace, (self, other, None, old), (x, y, rt, None if old is None else old._data))


@declare_op()
def div_(self: Tensor, other: Tensor | float, *, rounding_mode: str | None = None) -> Tensor:
    """In-place true division (floating tensors only)."""
    if rounding_mode is not None:
        from . import pointwise

        return copy_(self, pointwise.div_rounding(self, other, rounding_mode))
    if self._data.dtype.kind not in "fc":
        raise RuntimeError(f"result type Float can't be cast to the desired output type {_tname(self._data.dtype)}")
    x, y, rt = _inplace_operands(self, other, "div_")
    old = _old_value(self, other)
    return _apply(DivInplace, (self, other, None, old), (x, y, rt, None if old is None else old._data))


class Fill(Function):
    _array_forward = True
    _is_inplace = True
    _checks_overlap = False  # PyTorch fills an expanded tensor (every element is the one value)
    _node_name = "FillBackward0"

    @staticmethod
    def forward(ctx, x, value):
        x[...] = value
        return x

    @staticmethod
    def backward(ctx, gy):
        return gy * 0, (gy.sum() if ctx.needs_input_grad[1] else None)


@declare_op()
def zero_(self: Tensor) -> Tensor:
    """Fill with zeros in place."""
    return _apply(Fill, (self, 0), (self._data, 0))


@declare_op()
def fill_(self: Tensor, value: float | Tensor) -> Tensor:
    """Fill with ``value`` (a number or a 0-d tensor) in place."""
    if isinstance(value, Tensor):
        if value._data.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value._data.ndim} dimensions.")
        return _apply(Fill, (self, value), (self._data, value._data.astype(self._data.dtype)))
    return _apply(Fill, (self, value), (self._data, checked_scalar(scalar_value(value), self._data.dtype)))


class Copy(Function):
    _array_forward = True
    _is_inplace = True
    _node_name = "CopyBackwards"

    @staticmethod
    def forward(ctx, x, src):
        ctx.src_meta = (src.dtype, src.__class__ is np.ndarray)
        x[...] = src
        return x

    @staticmethod
    def backward(ctx, gy):
        return gy * 0, gy


@declare_op()
def copy_(self: Tensor, src: Tensor, non_blocking: bool = False) -> Tensor:
    """Copy ``src`` (broadcast, cast, moved across devices) into ``self``."""
    if not isinstance(src, Tensor):
        src_arr = xp_of(self._data).asarray(src, dtype=self._data.dtype)
        return _apply(Copy, (self, None), (self._data, src_arr))
    s = src._data
    if s.__class__ is not self._data.__class__:
        s = backend_of(self._data).from_numpy(backend_of(s).to_numpy(s),
                                              getattr(getattr(self._data, "device", None), "id", 0))
    if s.dtype != self._data.dtype:
        s = s.astype(self._data.dtype)
    try:
        np.broadcast_shapes(s.shape, self._data.shape)
        ok = np.broadcast_shapes(s.shape, self._data.shape) == self._data.shape
    except ValueError:
        ok = False
    if not ok:
        raise RuntimeError(f"The size of tensor a ({self._data.shape[-1] if self._data.ndim else 1}) must match the "
                           f"size of tensor b ({s.shape[-1] if s.ndim else 1}) at non-singleton dimension "
                           f"{max(self._data.ndim - 1, 0)}")
    return _apply(Copy, (self, src), (self._data, s))


def copy_into_out(out: Tensor, result: Tensor) -> Tensor:
    """Implement ``out=``: resize ``out`` if needed and copy ``result`` in."""
    if not isinstance(out, Tensor):
        raise TypeError(f"out must be a Tensor, got {type(out).__name__}")
    rt, ot = result._data.dtype, out._data.dtype
    if rt != ot and not D.can_cast(D.from_numpy_dtype(rt), D.from_numpy_dtype(ot)):
        raise RuntimeError(f"result type {_tname(rt)} can't be cast to the desired output type {_tname(ot)}")
    if out._data.shape != result._data.shape:
        if out._data.size != 0:
            import warnings

            warnings.warn(f"An output with one or more elements was resized since it had shape "
                          f"{list(out._data.shape)}, which does not match the required output shape "
                          f"{list(result._data.shape)}.", UserWarning, stacklevel=3)
        out._data = xp_of(out._data).empty(result._data.shape, out._data.dtype)
    if result._requires_grad and out._requires_grad:
        raise RuntimeError("functions with out=... arguments don't support automatic differentiation, but one of "
                           "the arguments requires grad.")
    out._data[...] = result._data
    out._bump_version()
    return out


# --- in-place aliases ----------------------------------------------------------------------------------


divide_ = div_
multiply_ = mul_
subtract_ = sub_
for _fn, _name in ((div_, "divide_"), (mul_, "multiply_"), (sub_, "subtract_")):  # Tensor methods only
    declare(_fn, name=_name, top_level=False)


# --- apply_ / map_ -------------------------------------------------------------------------------

_ndarray = np.ndarray


def _python_caster(dtype):
    return builtins.bool if dtype.kind == "b" else builtins.int if dtype.kind in "iu" else builtins.float


def _check_callable_target(self, name):
    if self._data.__class__ is not _ndarray:
        raise TypeError(f"{name} is only implemented on CPU tensors")
    if self._requires_grad:
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use var.detach().{name}() instead.")


@declare_op(top_level=False)
def apply_(self: Tensor, callable: Callable[..., Any]) -> Tensor:
    """Replace every element ``v`` by ``callable(v)`` (a Python number), in
    place; CPU only, and slow (one Python call per element).

    Example::

        >>> import fabric
        >>> fabric.tensor([1, 2, 3]).apply_(lambda v: v * 10)
        tensor([10, 20, 30])
    """
    _check_callable_target(self, "apply_")
    x = self._data
    cast = _python_caster(x.dtype)
    vals = np.fromiter((cast(callable(v)) for v in x.ravel().tolist()), x.dtype, count=x.size)
    x[...] = vals.reshape(x.shape)
    self._bump_version()
    return self


@declare_op(top_level=False)
def map_(self: Tensor, tensor: Tensor, callable: Callable[..., Any]) -> Tensor:
    """``self[i] = callable(self[i], tensor[i])`` elementwise in place
    (``tensor`` broadcast to ``self``'s shape, of ``self``'s dtype); CPU only.

    Example::

        >>> import fabric
        >>> fabric.tensor([1., 2.]).map_(fabric.tensor([10., 20.]), lambda a, b: a + b)
        tensor([11., 22.])
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"map_(): argument 'other' (position 1) must be Tensor, not {type(tensor).__name__}")
    _check_callable_target(self, "map_")
    x, y = self._data, tensor._data
    if y.dtype != x.dtype:
        raise TypeError(f"map_: expected {self.type()} for 'other' (got {tensor.type()})")
    if y.__class__ is not _ndarray:
        raise TypeError("map_ is only implemented on CPU tensors")
    try:
        yb = np.broadcast_to(y, x.shape)
    except ValueError:
        raise RuntimeError(f"The expanded size of the tensor must match the existing size: cannot expand "
                           f"{list(y.shape)} to {list(x.shape)}") from None
    cast = _python_caster(x.dtype)
    vals = np.fromiter((cast(callable(a, b)) for a, b in zip(x.ravel().tolist(), yb.ravel().tolist())), x.dtype,
                       count=x.size)
    x[...] = vals.reshape(x.shape)
    self._bump_version()
    return self


__all__ += declared_names(__name__)
