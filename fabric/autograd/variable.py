"""``Variable``: the legacy (pre-0.4) autograd wrapper, kept as PyTorch keeps it.

Tensors and Variables merged long ago: ``Variable(t)`` returns a plain Tensor
that shares ``t``'s data and version counter (like ``t.detach()``), with
``requires_grad`` set as asked; ``volatile`` only warns.
``isinstance(x, Variable)`` is True for every Tensor.

Example::

    >>> import fabric
    >>> from fabric.autograd import Variable
    >>> t = fabric.ones(2)
    >>> v = Variable(t, requires_grad=True)
    >>> v.requires_grad, isinstance(t, Variable)
    (True, True)
"""
from __future__ import annotations

import warnings

__all__ = ["Variable"]


class VariableMeta(type):
    def __instancecheck__(cls, other):
        from .._tensor import Tensor  # autograd is imported by _tensor: resolve at call time

        return isinstance(other, Tensor)


class Variable(metaclass=VariableMeta):
    """``Variable(data=None, requires_grad=False, volatile=False)``: a Tensor
    aliasing ``data`` (an empty float tensor when ``data`` is None)."""

    def __new__(cls, data=None, requires_grad=False, volatile=False):
        from .. import _creation
        from .._tensor import Tensor

        if data is None:
            data = _creation.tensor([])
        elif not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        requires_grad = bool(requires_grad)
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                          UserWarning, stacklevel=2)
            if requires_grad:
                raise ValueError("Variable can't be volatile and require_grad at the same time!")
        if requires_grad and data._data.dtype.kind not in "fc":
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        out = data.detach()
        if requires_grad:
            out.requires_grad_(True)
        return out
