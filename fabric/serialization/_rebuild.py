"""What a checkpoint's pickle may call: storage types and tensor rebuilders.

Every function here checks its arguments before it allocates anything and
raises PyTorch's exception classes (``RuntimeError`` for impossible sizes,
strides or offsets).  A rebuilt tensor is a view of its storage, so tensors
that shared memory when saved share it again after loading.

Example::

    >>> import numpy as np
    >>> from fabric.serialization._rebuild import LoadedStorage, _rebuild_tensor_v2
    >>> s = LoadedStorage(np.arange(6, dtype=np.float32))
    >>> _rebuild_tensor_v2(s, 1, (2,), (2,), False, None).tolist()
    [1.0, 3.0]
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor

# PyTorch's legacy storage class names and the dtypes they hold.
STORAGE_DTYPES = {"FloatStorage": "float32", "DoubleStorage": "float64", "HalfStorage": "float16",
                  "BFloat16Storage": "bfloat16", "LongStorage": "int64", "IntStorage": "int32",
                  "ShortStorage": "int16", "CharStorage": "int8", "ByteStorage": "uint8", "BoolStorage": "bool",
                  "ComplexFloatStorage": "complex64", "ComplexDoubleStorage": "complex128",
                  "QInt8Storage": "qint8", "QUInt8Storage": "quint8", "QInt32Storage": "qint32",
                  "QUInt4x2Storage": "quint4x2", "QUInt2x4Storage": "quint2x4"}
STORAGE_NAMES = {v: k for k, v in STORAGE_DTYPES.items()}


class StorageType:
    """What ``torch.FloatStorage`` & co. resolve to: an immutable dtype tag.

    The same object serves every load, so it refuses attribute writes (a
    crafted file must not be able to retag ``FloatStorage`` as int32).
    """

    __slots__ = ("_dtype_name",)

    def __init__(self, dtype_name):
        object.__setattr__(self, "_dtype_name", dtype_name)

    def __setattr__(self, name, value):
        raise AttributeError(f"'StorageType' object attribute '{name}' is read-only")

    def __delattr__(self, name):
        raise AttributeError(f"'StorageType' object attribute '{name}' is read-only")

    @property
    def dtype_name(self):
        return self._dtype_name

    def __repr__(self):
        return f"StorageType(dtype=torch.{self._dtype_name})"


class LoadedStorage:
    """A storage read from a checkpoint: a flat NumPy or CuPy array."""

    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    @property
    def dtype(self):
        return D.from_numpy_dtype(self.array.dtype)


def _ints(name, values):
    if not isinstance(values, (tuple, list)) or not all(isinstance(v, int) for v in values):
        raise TypeError(f"_rebuild_tensor: {name} must be a tuple of ints, got {values!r}")
    return tuple(int(v) for v in values)


def _view(storage, offset, size, stride):
    """``storage`` seen with ``size``/``stride`` from element ``offset`` (PyTorch's ``set_`` checks)."""
    if not isinstance(storage, LoadedStorage):
        raise AttributeError(f"'{type(storage).__name__}' object has no attribute 'dtype'")
    if not isinstance(offset, int):
        raise TypeError(f"_rebuild_tensor: storage offset must be an int, got {offset!r}")
    size, stride = _ints("size", size), _ints("stride", stride)
    if len(size) != len(stride):
        raise RuntimeError(f"unequal size length ({len(size)}) and stride length ({len(stride)})")
    if any(s < 0 for s in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(size)}: {list(size)}")
    if any(st < 0 for st in stride):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(size)} and strides={list(stride)}")
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    arr = storage.array
    xp_mod = type(arr).__module__.split(".")[0]
    itemsize = arr.itemsize
    if 0 in size:
        if xp_mod == "numpy":
            return np.empty(size, arr.dtype)
        import cupy

        with cupy.cuda.Device(arr.device.id):
            return cupy.empty(size, arr.dtype)
    needed = offset + 1 + sum((s - 1) * st for s, st in zip(size, stride))
    if needed > arr.size:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, and "
                           f"itemsize {itemsize} requiring a storage size of {needed * itemsize} are out of bounds "
                           f"for storage of size {arr.size * itemsize}")
    byte_strides = tuple(st * itemsize for st in stride)
    if xp_mod == "numpy":
        # np.ndarray(buffer=...) keeps ``arr`` as the base, so a later save finds the shared storage again
        return np.ndarray(size, arr.dtype, buffer=arr, offset=offset * itemsize, strides=byte_strides)
    import cupy

    return cupy.ndarray(size, arr.dtype, memptr=arr.data + offset * itemsize, strides=byte_strides)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks, metadata=None):
    t = Tensor._make(_view(storage, storage_offset, size, stride))
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_tensor(storage, storage_offset, size, stride):
    return _rebuild_tensor_v2(storage, storage_offset, size, stride, False, None)


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype, metadata=None):
    if not isinstance(dtype, D.dtype):
        raise TypeError(f"_rebuild_tensor_v3: expected a dtype, got {dtype!r}")
    raw = storage.array if isinstance(storage, LoadedStorage) else None
    if raw is not None and raw.dtype != dtype.to_numpy():
        raw = raw.view(np.uint8)
        raw = raw[: raw.size - raw.size % dtype.itemsize].view(dtype.to_numpy())
        storage = LoadedStorage(raw)
    return _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks)


def _rebuild_parameter(data, requires_grad, backward_hooks):
    from ..nn.parameter import Parameter

    if not isinstance(data, Tensor):
        raise TypeError(f"Parameter(): argument 'data' must be a Tensor, not {type(data).__name__}")
    return Parameter(data, requires_grad)


def _set_obj_state(obj, state):
    """Apply ``state`` (a dict, or a ``(dict, slots dict)`` pair) to a freshly rebuilt object."""
    if isinstance(state, tuple):
        if len(state) != 2:
            raise RuntimeError(f"Invalid serialized state: {state!r}")
        dict_state, slots_state = state
    else:
        dict_state, slots_state = state, None
    if dict_state:
        for k, v in dict_state.items():
            setattr(obj, k, v)
    if slots_state:
        for k, v in slots_state.items():
            setattr(obj, k, v)
    return obj


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    return _set_obj_state(_rebuild_parameter(data, requires_grad, backward_hooks), state)


_REBUILDERS = (_rebuild_tensor, _rebuild_tensor_v2, _rebuild_tensor_v3, _rebuild_parameter,
               _rebuild_parameter_with_state)


def _rebuild_from_type_v2(func, new_type, args, state):
    """A tensor subclass: rebuild the tensor with ``func``, then give it ``new_type`` and ``state``."""
    if func not in _REBUILDERS and func is not _rebuild_device_tensor_from_cpu_tensor:
        raise RuntimeError(f"_rebuild_from_type_v2: {func!r} is not a tensor rebuild function")
    ret = func(*args)
    if type(ret) is not new_type:
        if not (isinstance(new_type, type) and issubclass(new_type, Tensor)):
            raise RuntimeError(f"_rebuild_from_type_v2: {new_type!r} is not a Tensor subclass")
        from ..nn.parameter import _alias

        ret = _alias(new_type, ret, ret.requires_grad)
    setstate = getattr(type(ret), "__setstate__", None)
    if setstate is not None and setstate is not getattr(Tensor, "__setstate__", None):
        ret.__setstate__(state)
    else:
        _set_obj_state(ret, state)
    return ret


def _rebuild_device_tensor_from_cpu_tensor(data, dtype, device, requires_grad):
    t = data.to(device=device, dtype=dtype)
    if requires_grad:
        t.requires_grad_(True)
    return t


def unsupported(name):
    """A stand-in for a name PyTorch's loader allows but fabric cannot build (quantized, sparse, nested ...)."""

    def refuse(*args, **kwargs):
        raise NotImplementedError(f"fabric.load: the checkpoint uses torch.{name}, which fabric does not support "
                                  "(quantized, sparse, nested, meta and wrapper-subclass tensors)")

    refuse.__name__ = refuse.__qualname__ = name.rsplit(".", 1)[-1]
    return refuse
