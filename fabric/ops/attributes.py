"""Tensor predicates and attributes: ``is_inference``, ``is_nonzero``,
``is_same_size``, ``get_device``, ``output_nr``, and the shared memory a CPU
tensor's data can live in (``is_shared``, ``share_memory_``).

``is_inference()`` is always False: fabric has no inference tensors
(``inference_mode`` is ``no_grad``).  ``share_memory_()`` copies a CPU
tensor's data into anonymous shared memory (``memfd``, the kind the
DataLoader's workers use), so forked processes see each other's writes; views
made *before* the call keep the old memory (PyTorch moves the storage under
them), and calling it on a view raises.  ``is_shared()`` is True for data
living in a shared memory mapping (also DataLoader batches) and for CUDA
tensors.  Without POSIX shared memory (Windows) ``share_memory_()`` returns
``self`` unchanged.

Example::

    >>> import fabric
    >>> fabric.tensor([0.5]).is_nonzero()
    True
    >>> fabric.zeros(1).get_device()
    -1
"""
from __future__ import annotations

import builtins

import numpy as np

from .. import _shared_memory
from .._tensor import Tensor
from ._registry import declare_op
from ._registry import public_names as declared_names

__all__: list[str] = []  # + the declared ops (end of module)

_ndarray = np.ndarray


@declare_op()
def is_inference(input: Tensor) -> bool:
    """False: fabric has no inference tensors (``inference_mode`` acts as
    ``no_grad``; its results are ordinary tensors)."""
    return False


@declare_op()
def is_nonzero(input: Tensor) -> bool:
    """The truth value of a one-element tensor.

    Example::

        >>> import fabric
        >>> fabric.tensor([0.5]).is_nonzero()
        True
    """
    n = input._data.size
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return builtins.bool(input._data.reshape(-1)[0])


@declare_op()
def is_same_size(input: Tensor, other: Tensor) -> bool:
    """Whether two tensors have the same shape.

    Example::

        >>> import fabric
        >>> fabric.is_same_size(fabric.ones(2), fabric.zeros(2))
        True
    """
    if not isinstance(other, Tensor):
        raise TypeError(f"is_same_size(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}")
    return input._data.shape == other._data.shape


@declare_op()
def get_device(input: Tensor) -> int:
    """-1 for a CPU tensor, the device index for a CUDA tensor.

    Example::

        >>> import fabric
        >>> fabric.zeros(1).get_device()
        -1
    """
    d = input._data
    return -1 if d.__class__ is _ndarray else builtins.int(d.device.id)


def _output_nr(self) -> int:
    """Which output of its ``grad_fn`` this tensor is (0 for leaves)."""
    return self._output_nr


@declare_op(top_level=False)
def is_shared(self: Tensor) -> bool:
    """Whether the data lives in shared memory (after :func:`share_memory_`,
    in a DataLoader worker's batch, or any CUDA tensor)."""
    d = self._data
    if d.__class__ is not _ndarray:
        return True
    return _shared_memory.in_shared_mapping(d)


@declare_op(top_level=False)
def share_memory_(self: Tensor) -> Tensor:
    """Move a CPU tensor's data into anonymous shared memory, which other
    processes can map (forked children, and any process the tensor is sent
    to through ``fabric.multiprocessing``); a no-op for CUDA tensors and
    shared data.  Views made before the call keep the old memory; calling it
    on a view raises.

    Example::

        >>> import fabric
        >>> t = fabric.ones(2).share_memory_()
        >>> t.is_shared()
        True
    """
    d = self._data
    if d.__class__ is not _ndarray or _shared_memory.in_shared_mapping(d):
        return self
    if self._base is not None:
        raise RuntimeError("share_memory_(): fabric cannot move a view into shared memory; call it on the base "
                           "tensor before taking views")
    if not _shared_memory.available:
        return self
    arr = _shared_memory.empty(d.shape, d.dtype)
    arr[...] = d
    self._data = arr
    return self


# ``output_nr`` is a read-only attribute, not a method: installed here.
if "output_nr" not in Tensor.__dict__:
    Tensor.output_nr = property(_output_nr, doc=_output_nr.__doc__)


# --- is_signed, is_complex, typename -------------------------------------------------------------------------------



@declare_op(method=False)
def is_signed(input: Tensor) -> bool:
    return input.is_signed()


@declare_op(method=False)
def is_complex(input: Tensor) -> bool:
    return input.is_complex()


@declare_op(method=False)
def typename(obj: object) -> str:
    if isinstance(obj, Tensor):
        return obj.type()
    return type(obj).__module__ + "." + type(obj).__qualname__


__all__ += declared_names(__name__)
