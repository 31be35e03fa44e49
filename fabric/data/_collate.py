"""``default_collate`` and ``default_convert``: turn a list of samples into a
batch (and NumPy data into tensors) exactly like ``torch.utils.data``:

* Tensor -> stacked Tensor (new leading batch dimension)
* NumPy array -> stacked Tensor; NumPy scalar -> Tensor of its dtype
* ``float`` -> float64 Tensor, ``int`` -> int64 Tensor (``bool`` -> bool)
* ``str`` / ``bytes`` -> the list unchanged
* Mapping, namedtuple, Sequence -> the same container of collated fields
  (plain tuples become lists, as in PyTorch)

Example::

    >>> from fabric.data import default_collate
    >>> default_collate([(0, 1.5, "a"), (1, 2.5, "b")])
    [tensor([0, 1]), tensor([1.5000, 2.5000], dtype=fabric.float64), ('a', 'b')]
"""
from __future__ import annotations

import collections.abc
import copy
import re
from collections.abc import Callable

import numpy as np

from .. import _dtype as D
from .._creation import as_tensor, tensor
from .._tensor import Tensor
from ..autograd.grad_mode import state as _grad_state
from ..ops.join import stack

__all__ = ["collate", "default_collate", "default_convert", "default_collate_fn_map", "collate_tensor_fn",
           "collate_numpy_array_fn", "collate_numpy_scalar_fn", "collate_float_fn", "collate_int_fn",
           "collate_str_fn"]

np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}")


def default_convert(data):
    """Convert NumPy arrays and scalars (also inside mappings, namedtuples
    and sequences) to Tensors; leave everything else as it is. The DataLoader
    uses it when automatic batching is off (``batch_size=None``).

    Example::

        >>> import numpy as np
        >>> default_convert([np.array([0, 1]), "x"])
        [tensor([0, 1]), 'x']
    """
    elem_type = type(data)
    if isinstance(data, Tensor):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_"):
        if elem_type.__name__ == "ndarray" and np_str_obj_array_pattern.search(data.dtype.str) is not None:
            return data
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({key: default_convert(data[key]) for key in data})
                return clone
            return elem_type({key: default_convert(data[key]) for key in data})
        except TypeError:
            return {key: default_convert(data[key]) for key in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return elem_type([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def collate(batch, *, collate_fn_map: dict[type | tuple[type, ...], Callable] | None = None):
    """Collate ``batch`` (a list of samples) field by field; the leaves are
    handed to the function registered in ``collate_fn_map`` for their type
    (exact type first, then the first key they are an instance of)."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type in collate_fn_map:
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update({key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map) for key in elem})
                return clone
            return elem_type({key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map) for key in elem})
        except TypeError:
            return {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(*(collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = copy.copy(elem)
                for i, samples in enumerate(transposed):
                    clone[i] = collate(samples, collate_fn_map=collate_fn_map)
                return clone
            return elem_type([collate(samples, collate_fn_map=collate_fn_map) for samples in transposed])
        except TypeError:
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
    raise TypeError(default_collate_err_msg_format.format(elem_type))


def collate_tensor_fn(batch, *, collate_fn_map=None):
    """``stack(batch, 0)``. Without autograd to record, equal shapes and
    dtypes are stacked straight on the arrays (one call, no graph)."""
    first = batch[0]._data
    cls, shape, dt = first.__class__, first.shape, first.dtype
    plain = True
    track = _grad_state.enabled
    for t in batch:
        a = t._data
        if a.__class__ is not cls or a.shape != shape or a.dtype != dt or (track and t._requires_grad):
            plain = False
            break
    if not plain:
        return stack(list(batch), 0)
    if cls is np.ndarray:
        out = np.stack([t._data for t in batch])
    else:
        from ..backends import backend_of

        out = backend_of(first).xp.stack([t._data for t in batch])
    return Tensor._make(out, False)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    elem = batch[0]
    if np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    shape, dt = elem.shape, elem.dtype
    if all(b.shape == shape and b.dtype == dt for b in batch):
        D.from_numpy_dtype(dt)  # PyTorch's error for unsupported dtypes, before the copy
        return as_tensor(np.stack(batch))
    return collate([as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    arr = np.array(batch)
    if arr.dtype == object:
        return as_tensor(batch)
    return as_tensor(arr)


def collate_float_fn(batch, *, collate_fn_map=None):
    return tensor(batch, dtype=D.float64)


def collate_int_fn(batch, *, collate_fn_map=None):
    return tensor(batch)


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


default_collate_fn_map: dict[type | tuple[type, ...], Callable] = {Tensor: collate_tensor_fn}
# ndarray also covers np.memmap; the scalar hierarchy skips string scalars
default_collate_fn_map[np.ndarray] = collate_numpy_array_fn
default_collate_fn_map[(np.bool_, np.number, np.object_)] = collate_numpy_scalar_fn
default_collate_fn_map[float] = collate_float_fn
default_collate_fn_map[int] = collate_int_fn
default_collate_fn_map[str] = collate_str_fn
default_collate_fn_map[bytes] = collate_str_fn


def default_collate(batch):
    """Stack a list of samples into a batch, field by field (see the module
    docstring for the type mapping). The DataLoader's default ``collate_fn``.

    Example::

        >>> default_collate([{"x": 0, "y": 1}, {"x": 100, "y": 100}])
        {'x': tensor([  0, 100]), 'y': tensor([  1, 100])}
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)
