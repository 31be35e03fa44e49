"""``pin_memory=True``: copy the CPU arrays of a batch into page-locked
(pinned) host memory, so that later host-to-GPU copies are faster and can be
asynchronous. Needs CUDA through CuPy; without it the DataLoader warns (like
PyTorch without an accelerator) and leaves batches as they are.

Example::

    >>> from fabric.data._pin import pin_memory
    >>> pin_memory("text")
    'text'
"""
from __future__ import annotations

import collections.abc
import copy

import numpy as np

from .._tensor import Tensor

__all__ = ["pin_memory", "pinning_available"]


def pinning_available() -> bool:
    from .. import cuda

    return cuda.is_available()


def _pin_array(arr: np.ndarray) -> np.ndarray:
    import cupyx

    out = cupyx.empty_pinned(arr.shape, arr.dtype)
    out[...] = arr
    return out


def pin_memory(data, device=None):
    """``data`` with every CPU Tensor (also inside containers) copied into
    pinned memory; ``pin_memory()`` methods of custom types are called."""
    if isinstance(data, Tensor):
        arr = data._data
        if arr.__class__ is not np.ndarray:
            return data
        return Tensor._make(_pin_array(arr), data._requires_grad)
    if hasattr(data, "pin_memory"):
        return data.pin_memory()
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({k: pin_memory(sample, device) for k, sample in data.items()})
                return clone
            return type(data)({k: pin_memory(sample, device) for k, sample in data.items()})
        except TypeError:
            return {k: pin_memory(sample, device) for k, sample in data.items()}
    if isinstance(data, tuple):
        if hasattr(data, "_fields"):  # namedtuple
            return type(data)(*(pin_memory(sample, device) for sample in data))
        return type(data)(pin_memory(sample, device) for sample in data)
    if isinstance(data, collections.abc.Sequence):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, item in enumerate(data):
                    clone[i] = pin_memory(item, device)
                return clone
            return type(data)([pin_memory(sample, device) for sample in data])
        except TypeError:
            return [pin_memory(sample, device) for sample in data]
    return data
