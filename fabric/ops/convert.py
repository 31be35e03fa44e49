"""dtype and device conversion (``Tensor.to``), differentiable.

Example::

    >>> import fabric
    >>> fabric.tensor([1.5]).to(fabric.float64).dtype
    fabric.float64
"""
from __future__ import annotations

import builtins
import numbers
import warnings
from typing import Any

import numpy as np

from .._device import device as _Device
from .._tensor import Size, Tensor
from ..autograd.function import Function, _apply
from ..backends import backend_for, backend_of
from ._registry import declare_op
from ._registry import public_names as declared_names

__all__ = ["to_copy"]


def to_copy(t, dev, dt, copy=False, non_blocking=False):
    """The conversion behind ``Tensor.to``; returns ``t`` itself when nothing changes and ``copy`` is False."""
    x = t._data
    same_dev = dev is None or (dev.type == "cpu") == (x.__class__ is np.ndarray) and (
        dev.type == "cpu" or dev.index is None or dev.index == x.device.id)
    same_dt = dt is None or dt.to_numpy() == x.dtype
    if same_dev and same_dt and not copy:
        return t
    np_dtype = None if dt is None else dt.to_numpy()
    return _apply(_ToCopy, (t, dev, dt, non_blocking), (x, dev if not same_dev else None, np_dtype, non_blocking))


def _cast(x, np_dtype):
    """``x.astype(np_dtype)``; complex to real keeps the real part and warns, as PyTorch's copy does."""
    if x.dtype.kind == "c" and np_dtype.kind == "b":
        return x != 0
    if x.dtype.kind == "c" and np_dtype.kind != "c":
        warnings.warn("Casting complex values to real discards the imaginary part", UserWarning, stacklevel=5)
        x = x.real
    return x.astype(np_dtype)


class _ToCopy(Function):
    _array_forward = True
    _node_name = "ToCopyBackward0"

    @staticmethod
    def forward(ctx, x, dev, np_dtype, non_blocking):
        src = backend_of(x)
        ctx.src_device = "cpu" if x.__class__ is np.ndarray else f"cuda:{x.device.id}"
        moved = False
        if dev is not None:
            if dev.type == "cpu":
                # non_blocking: a pinned host buffer, filled asynchronously on the current stream
                x = src.to_numpy(x, non_blocking=True) if non_blocking else src.to_numpy(x)
            elif x.__class__ is np.ndarray:
                dst = backend_for(dev)
                x = dst.from_numpy(x, dev.index or 0, non_blocking=True) if non_blocking else dst.from_numpy(
                    x, dev.index or 0)
            else:  # cuda:i -> cuda:j, device to device
                x = backend_for(dev).to_device(x, dev.index or 0)
            moved = True
        if x.__class__ is not np.ndarray:
            # CuPy allocates on the current device: cast / copy on the array's own
            with backend_of(x).device_context(x.device.id):
                if np_dtype is not None and x.dtype != np_dtype:
                    return _cast(x, np_dtype)
                return x if moved else x.copy()
        if np_dtype is not None and x.dtype != np_dtype:
            return _cast(x, np_dtype)
        return x if moved else x.copy()

    @staticmethod
    def backward(ctx, gy):
        if str(gy.device) != ctx.src_device:
            gy = gy.to(ctx.src_device)
        return gy, None, None, None




# --- Tensor.new ---------------------------------------------------------------------------------------

@declare_op(top_level=False)
def new(self: Tensor, *args: Any, device: str | _Device | None = None) -> Tensor:
    """Legacy constructor of ``self``'s dtype and device: ``new()`` is empty,
    ``new(2, 3)`` / ``new(Size)`` zeros of that size (PyTorch: uninitialised),
    ``new(data)`` a tensor of the data, ``new(tensor)`` shares its memory.

    Example::

        >>> import fabric
        >>> fabric.zeros(1, dtype=fabric.int32).new([1, 2])
        tensor([1, 2], dtype=fabric.int32)
    """
    from .._creation import tensor as _tensor
    from .._creation import zeros

    dev = self.device if device is None else device
    if len(args) == 1 and isinstance(args[0], Tensor):
        t = args[0]
        if t._data.dtype != self._data.dtype:
            raise TypeError(f"expected {self.dtype} (got {t.dtype})")
        return Tensor._make(t._data, False, None, 0, t._shared_vc())
    if not args:
        return zeros(0, dtype=self.dtype, device=dev)
    if all(isinstance(a, numbers.Integral) and not isinstance(a, builtins.bool) for a in args):
        return zeros(*args, dtype=self.dtype, device=dev)
    if len(args) == 1 and isinstance(args[0], Size):
        return zeros(*args[0], dtype=self.dtype, device=dev)
    if len(args) == 1:
        return _tensor(args[0], dtype=self.dtype, device=dev)
    raise TypeError(f"new() received an invalid combination of arguments: {args!r}")


# --- detach, to_dlpack ---------------------------------------------------------------------------------------------


@declare_op(method=False)
def detach(input: Tensor) -> Tensor:
    return input.detach()


@declare_op(method=False)
def to_dlpack(tensor: Tensor) -> Any:
    return tensor.__dlpack__()


__all__ += declared_names(__name__)
