"""Tensor creation: ``tensor``, ``zeros``, ``arange``, ``rand`` ...

Example::

    >>> import fabric
    >>> fabric.arange(3)
    tensor([0, 1, 2])
    >>> fabric.full((2,), 7.0)
    tensor([7., 7.])
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from . import _dtype as D
from . import _layout
from ._device import as_device
from ._errors import out_of_memory
from ._tensor import Tensor, _to_array
from .backends import backend_for
from .ops._util import checked_scalar, factory_size, overflows, scalar_value, shape_args

__all__ = ["tensor", "as_tensor", "asarray", "from_numpy", "from_dlpack", "zeros", "ones", "full", "empty",
           "zeros_like", "ones_like", "full_like", "empty_like", "arange", "range", "linspace", "logspace", "eye",
           "scalar_tensor", "empty_strided", "frombuffer", "tril_indices", "triu_indices"]


def _require_grad(t):
    """``requires_grad=True`` of a factory function (PyTorch's message differs from requires_grad_'s)."""
    if t._data.dtype.kind not in "fc":
        raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
    return t.requires_grad_(True)


def _finish(arr, device, requires_grad):
    """Place a NumPy array on ``device`` and wrap it."""
    if device is not None:
        dev = as_device(device)
        if dev.type != "cpu":
            arr = backend_for(dev).from_numpy(arr, dev.index or 0)
    t = Tensor._make(arr, False)
    if requires_grad:
        _require_grad(t)
    return t


def _infer_np_dtype(data):
    """PyTorch's dtype inference for Python data: float → default dtype,
    int → int64, bool → bool; NumPy arrays keep their dtype."""
    try:
        arr = _to_array(data)
    except ValueError as e:
        raise ValueError(f"expected sequence of equal-length lists: {e}") from None
    if isinstance(data, (np.ndarray, np.generic, Tensor)):
        if arr.dtype.kind not in "fiubc":
            raise TypeError(f"can't convert np.ndarray of type numpy.{arr.dtype}. The only supported types are: "
                            "float64, float32, float16, complex64, complex128, int64, int32, int16, int8, uint8, "
                            "and bool.")
        return arr, D.from_numpy_dtype(arr.dtype).np
    kind = arr.dtype.kind
    if kind == "f":
        return arr, D.get_default_dtype().np
    if kind in "iu":
        if arr.dtype == np.uint64 and arr.size and arr.max() > np.iinfo(np.int64).max:
            raise ValueError("Overflow when unpacking long long")
        return arr, np.dtype(np.int64)
    if kind == "b":
        return arr, np.dtype(np.bool_)
    if kind == "c":
        return arr, D.get_default_complex_dtype().np
    leaf = _first_leaf(data)
    if kind == "U" or kind == "S" or isinstance(leaf, (str, bytes)):
        raise ValueError(f"too many dimensions '{type(leaf).__name__}'")
    if kind == "O" and isinstance(leaf, builtins.int):  # an int beyond 64 bits
        raise ValueError("Overflow when unpacking long long")
    if kind == "O":
        raise RuntimeError(f"Could not infer dtype of {type(leaf).__name__}")
    raise TypeError(f"can't convert data of dtype {arr.dtype}")


def _check_fits(arr, np_dtype):
    """Python numbers bound for an integer dtype must fit (PyTorch raises
    rather than wrapping ``tensor([300], dtype=uint8)``)."""
    for v in (arr.min().item(), arr.max().item()):
        if overflows(v, np_dtype):
            raise RuntimeError(f"value cannot be converted to type {np_dtype.name} without overflow")


def _first_leaf(data):
    while isinstance(data, (list, tuple)) and data:
        data = data[0]
    return data


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False) -> Tensor:
    """A new tensor that copies ``data`` (nested lists, numbers, arrays, Tensors)."""
    if isinstance(data, Tensor):
        import warnings

        warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.clone().detach() or "
                      "sourceTensor.clone().detach().requires_grad_(True), rather than torch.tensor(sourceTensor).",
                      UserWarning, stacklevel=2)
        src = data.detach()
        if device is None:
            device = src.device
        out = src.to(dtype=D.to_dtype(dtype) if dtype is not None else None, device=device, copy=True)
        return _require_grad(out) if requires_grad else out
    if hasattr(data, "__cuda_array_interface__"):  # a CuPy (or other CUDA) array: copied on the device
        out = _from_cuda_array(data).to(device=as_device(device) if device is not None else None,
                                        dtype=D.to_dtype(dtype) if dtype is not None else None, copy=True)
        return _require_grad(out) if requires_grad else out
    arr, inferred = _infer_np_dtype(data)
    np_dtype = D.to_dtype(dtype).to_numpy() if dtype is not None else inferred
    from_python = not isinstance(data, (np.ndarray, np.generic))
    if from_python and arr.dtype.kind == "c" and np_dtype.kind != "c":
        raise TypeError("must be real number, not complex")
    if np_dtype.kind in "iu" and arr.size and arr.dtype.kind in "fiu" and from_python:
        _check_fits(arr, np_dtype)
    arr = np.array(arr, dtype=np_dtype, copy=True)
    return _finish(arr, device, requires_grad)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Like :func:`tensor` but shares memory with NumPy arrays / Tensors when it can."""
    if isinstance(data, Tensor):
        return data.to(device=as_device(device) if device is not None else None,
                       dtype=D.to_dtype(dtype) if dtype is not None else None)
    if isinstance(data, np.ndarray) and (device is None or as_device(device).type == "cpu"):
        t = from_numpy(data)
        return t.to(D.to_dtype(dtype)) if dtype is not None else t
    if hasattr(data, "__cuda_array_interface__"):  # shares memory when device and dtype allow
        return _from_cuda_array(data).to(device=as_device(device) if device is not None else None,
                                         dtype=D.to_dtype(dtype) if dtype is not None else None)
    return tensor(data, dtype=dtype, device=device)


def _from_cuda_array(data) -> Tensor:
    """A tensor over a CUDA array (``__cuda_array_interface__``: CuPy, Numba ...), no copy."""
    from ._device import device as _device

    arr = backend_for(_device("cuda", 0)).xp.asarray(data)
    if arr.dtype.kind not in "fiubc":
        raise TypeError(f"can't convert a CUDA array of type {arr.dtype}")
    return Tensor._make(arr, False)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False) -> Tensor:
    if copy:
        t = tensor(obj, dtype=dtype, device=device)
    else:
        t = as_tensor(obj, dtype=dtype, device=device)
    return _require_grad(t) if requires_grad else t


def from_numpy(ndarray) -> Tensor:
    """A tensor sharing memory with a NumPy array (writes show in both)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    D.from_numpy_dtype(ndarray.dtype)
    if ndarray.dtype.byteorder not in "=|":
        raise ValueError("given numpy array has byte order different from the native byte order. Conversion "
                         "between byte orders is currently not supported.")
    if not ndarray.flags.writeable:
        import warnings

        warnings.warn("The given NumPy array is not writable, and PyTorch does not support non-writable tensors.",
                      UserWarning, stacklevel=2)
    return Tensor._make(ndarray, False)


def from_dlpack(ext) -> Tensor:
    """A tensor sharing memory with any DLPack producer (NumPy, CuPy, PyTorch ...)."""
    dev_type, dev_id = ext.__dlpack_device__()
    if dev_type == 1:  # kDLCPU
        return Tensor._make(np.from_dlpack(ext), False)
    if dev_type == 2:  # kDLCUDA
        import cupy

        return Tensor._make(cupy.from_dlpack(ext), False)
    raise RuntimeError(f"from_dlpack: unsupported DLPack device type {dev_type}")


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False) -> Tensor:
    arr = np.frombuffer(buffer, dtype=D.to_dtype(dtype).np, count=count, offset=offset)
    return _finish(arr, None, requires_grad)


def _np_dtype(dtype, default=None):
    if dtype is None:
        return (default or D.get_default_dtype()).to_numpy()
    return D.to_dtype(dtype).to_numpy()


def _check_size(shape, dtype, name=None):
    """PyTorch's checks before allocating: no negative sizes, and a byte
    count that fits in int64 (``empty(2**62)`` raises, not NumPy's error)."""
    numel = 1
    for d in shape:
        if d < 0:
            if name == "zeros":
                raise RuntimeError("zeros: Dimension size must be non-negative.")
            raise RuntimeError(f"Trying to create tensor with negative dimension {d}: {list(shape)}")
        numel *= d
    if numel * np.dtype(dtype).itemsize >= 2 ** 63:
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)}")


def _filled(shape, value, dtype, device, requires_grad, name=None):
    """A filled tensor, made directly on its device."""
    _check_size(shape, dtype, name)
    if value is not None and value not in (0, 1):  # 0 and 1 fit every dtype
        value = checked_scalar(scalar_value(value), np.dtype(dtype))
    dev = as_device(device) if device is not None else None
    try:
        if dev is None or dev.type == "cpu":
            arr = np.full(shape, value, dtype) if value is not None else np.empty(shape, dtype)
        else:
            be = backend_for(dev)
            with be.device_context(dev.index or 0):
                arr = be.xp.full(shape, value, dtype) if value is not None else be.xp.empty(shape, dtype)
    except MemoryError as e:
        raise out_of_memory(e) from None
    t = Tensor._make(arr, False)
    if requires_grad:
        _require_grad(t)
    return t


def zeros(*sizes, size=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
          pin_memory=False) -> Tensor:
    """A tensor of zeros (default dtype float32): ``zeros(2, 3)``, ``zeros((2, 3))`` or ``zeros(size=(2, 3))``."""
    return _out(out, _filled(factory_size("zeros", sizes, size), 0, _np_dtype(dtype), device, requires_grad,
                             "zeros"))


def ones(*sizes, size=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
         pin_memory=False) -> Tensor:
    """A tensor of ones (the size as for :func:`zeros`)."""
    return _out(out, _filled(factory_size("ones", sizes, size), 1, _np_dtype(dtype), device, requires_grad))


def empty(*sizes, size=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
          pin_memory=False, memory_format=None) -> Tensor:
    """An uninitialised tensor (the size as for :func:`zeros`)."""
    return _out(out, _filled(factory_size("empty", sizes, size), None, _np_dtype(dtype), device, requires_grad))


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False) -> Tensor:
    """An uninitialised tensor with the given strides (in elements)."""
    size, stride = tuple(size), tuple(stride)
    dt = _np_dtype(dtype)
    extent = 1 + builtins.sum((s - 1) * st for s, st in zip(size, stride)) if all(size) else 0
    dev = as_device(device) if device is not None else None
    if dev is not None and dev.type != "cpu":  # allocated on the device, so the strides survive
        be = backend_for(dev)
        with be.device_context(dev.index or 0):
            buf = be.xp.empty(max(extent, 0), dt)
        arr = be.as_strided(buf, size, tuple(st * dt.itemsize for st in stride))
        return _finish(arr, None, requires_grad)
    buf = np.empty(max(extent, 0), dt)
    arr = np.lib.stride_tricks.as_strided(buf, size, tuple(st * dt.itemsize for st in stride))
    return _finish(arr, device, requires_grad)


def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None, requires_grad=False,
         pin_memory=False) -> Tensor:
    """A tensor filled with ``fill_value``; the dtype follows the value's type."""
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    if dtype is None:
        if isinstance(fill_value, builtins.bool):
            dt = np.dtype(np.bool_)
        elif isinstance(fill_value, (builtins.int, np.integer)):
            dt = np.dtype(np.int64)
        elif isinstance(fill_value, (builtins.complex, np.complexfloating)):
            dt = D.get_default_complex_dtype().np
        else:
            dt = D.get_default_dtype().np
    else:
        dt = _np_dtype(dtype)
    return _out(out, _filled(shape_args((size,) if isinstance(size, (builtins.int, np.integer)) else (size,), "size"),
                             fill_value, dt, device, requires_grad))


def _out(out, result):
    if out is None:
        return result
    from .ops.inplace import copy_into_out

    return copy_into_out(out, result)


def _like(input, dtype, device):
    dt = input._data.dtype if dtype is None else D.to_dtype(dtype).to_numpy()
    dev = input.device if device is None else device
    return input._data.shape, dt, dev


def _filled_like(input, value, dt, dev, requires_grad, memory_format) -> Tensor:
    """``_filled`` laid out as ``memory_format`` (default: the input's own order, as PyTorch)."""
    shape = input._data.shape
    order = _layout.like_order(input._data, memory_format)
    if order is None:
        return _filled(shape, value, dt, dev, requires_grad)
    t = _filled(tuple(shape[d] for d in order), value, dt, dev, requires_grad)
    t._data = t._data.transpose(_layout.inverse_order(order))
    return t


def zeros_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None) -> Tensor:
    _, dt, dev = _like(input, dtype, device)
    return _filled_like(input, 0, dt, dev, requires_grad, memory_format)


def ones_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None) -> Tensor:
    _, dt, dev = _like(input, dtype, device)
    return _filled_like(input, 1, dt, dev, requires_grad, memory_format)


def empty_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None) -> Tensor:
    _, dt, dev = _like(input, dtype, device)
    return _filled_like(input, None, dt, dev, requires_grad, memory_format)


def full_like(input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None) -> Tensor:
    _, dt, dev = _like(input, dtype, device)
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    return _filled_like(input, fill_value, dt, dev, requires_grad, memory_format)


def _num(v):
    return v.item() if isinstance(v, Tensor) else v


def arange(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """Values ``start, start+step, ...`` below ``end``; int64 unless a bound is a float."""
    if end is None:
        start, end = 0, start
    start, end, step = _num(start), _num(end), _num(step)
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0 and end != start:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    is_float = any(isinstance(v, (builtins.float, np.floating)) for v in (start, end, step))
    if dtype is None:
        dt = D.get_default_dtype().np if is_float else np.dtype(np.int64)
    else:
        dt = _np_dtype(dtype)
    if dt.kind == "c":
        name = "ComplexFloat" if dt == np.complex64 else "ComplexDouble"
        raise NotImplementedError(f"\"arange_cpu\" not implemented for '{name}'")
    n = builtins.max(0, math.ceil((end - start) / step))
    _check_size((n,), dt)
    try:
        if dt.kind == "f" or is_float:
            arr = (start + np.arange(n, dtype=np.float64) * step).astype(dt)
        else:
            arr = (builtins.int(start) + np.arange(n, dtype=np.int64) * builtins.int(step)).astype(dt)
    except MemoryError as e:
        raise out_of_memory(e) from None
    return _out(out, _finish(arr, device, requires_grad))


def range(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    """Deprecated in PyTorch: like arange but includes ``end``; float by default."""
    if end is None:
        start, end = 0, start
    n = builtins.int(math.floor((end - start) / step)) + 1
    arr = (start + np.arange(n, dtype=np.float64) * step).astype(_np_dtype(dtype))
    return _finish(arr, device, requires_grad)


def linspace(start, end, steps, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    start, end = _num(start), _num(end)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    if isinstance(start, complex) or isinstance(end, complex) or (dtype is not None and D.to_dtype(dtype).is_complex):
        dt = D.to_dtype(dtype) if dtype is not None else D.get_default_complex_dtype()
        start, end = complex(start), complex(end)
        re, im = (linspace(a, b, steps, dtype=dt.to_real())._data for a, b in ((start.real, end.real),
                                                                                (start.imag, end.imag)))
        return _out(out, _finish((re + 1j * im).astype(dt.np), device, requires_grad))
    dt = _np_dtype(dtype)
    # PyTorch's kernel: step and values computed in the output dtype (double
    # for integers); the first half counts up from start, the second half
    # down from end, so both endpoints are exact.
    # PyTorch's vectorised kernel uses fused multiply-adds: emulated for
    # float32/float16 by computing the product and sum in float64.
    ct = dt if dt.kind == "f" else np.dtype(np.float64)
    if steps == 1:
        arr = np.array([start], dtype=ct)
    else:
        s0, e0 = ct.type(start), ct.type(end)
        step = np.float64((e0 - s0) / ct.type(builtins.max(steps - 1, 1)))
        idx = np.arange(steps, dtype=np.float64)
        half = steps // 2
        with np.errstate(over="ignore", invalid="ignore"):
            arr = np.where(idx < half, np.float64(s0) + step * idx, np.float64(e0) - step * (steps - 1 - idx))
    if dt.kind in "iu":
        arr = np.trunc(arr)
    return _out(out, _finish(arr.astype(dt), device, requires_grad))


def logspace(start, end, steps, base=10.0, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False):
    """``base ** linspace(start, end, steps)``."""
    lin = linspace(start, end, steps, dtype=D.float64)._data
    arr = np.power(base, lin).astype(_np_dtype(dtype))
    return _out(out, _finish(arr, device, requires_grad))


def eye(n, m=None, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """Identity matrix (``n`` x ``m``)."""
    if n < 0 or (m is not None and m < 0):
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    return _out(out, _finish(np.eye(n, m, dtype=_np_dtype(dtype)), device, requires_grad))


def scalar_tensor(s, *, dtype=None, layout=None, device=None, requires_grad=False):
    dt = _np_dtype(dtype)
    return _finish(np.array(checked_scalar(scalar_value(s), dt), dtype=dt), device, requires_grad)


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """Row and column indices (a 2 x N tensor) of the lower triangle of a
    ``row`` x ``col`` matrix, row-major as in PyTorch."""
    r, c = np.tril_indices(row, offset, col)
    return _finish(np.stack([r, c]).astype(_np_dtype(dtype, D.int64)), device, False)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """Row and column indices (a 2 x N tensor) of the upper triangle."""
    r, c = np.triu_indices(row, offset, col)
    return _finish(np.stack([r, c]).astype(_np_dtype(dtype, D.int64)), device, False)


# --- the legacy typed constructors (fabric.FloatTensor ...) --------------------------------------------------------

__all__ += ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor", "ShortTensor",
            "CharTensor", "ByteTensor", "BoolTensor"]


class _LegacyTensorType(type):
    """The legacy typed constructors (``fabric.FloatTensor`` ...): calling one
    makes a CPU tensor of its dtype, ``isinstance`` checks dtype and device,
    and ``Tensor.type(fabric.LongTensor)`` converts."""

    def __call__(cls, *args, device=None):
        return empty(0, dtype=cls._legacy_dtype, device=device).new(*args)

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype is cls._legacy_dtype and obj.device.type == "cpu"

    def __repr__(cls):
        return f"<class 'fabric.{cls.__name__}'>"


def _legacy_type(name, dtype):
    return _LegacyTensorType(name, (), {"_legacy_dtype": dtype, "dtype": dtype, "__module__": "fabric",
                                        "__doc__": f"Legacy constructor of {dtype} CPU tensors, e.g. "
                                                   f"``fabric.{name}([1, 2])``."})


FloatTensor = _legacy_type("FloatTensor", D.float32)
DoubleTensor = _legacy_type("DoubleTensor", D.float64)
HalfTensor = _legacy_type("HalfTensor", D.float16)
BFloat16Tensor = _legacy_type("BFloat16Tensor", D.bfloat16)
LongTensor = _legacy_type("LongTensor", D.int64)
IntTensor = _legacy_type("IntTensor", D.int32)
ShortTensor = _legacy_type("ShortTensor", D.int16)
CharTensor = _legacy_type("CharTensor", D.int8)
ByteTensor = _legacy_type("ByteTensor", D.uint8)
BoolTensor = _legacy_type("BoolTensor", D.bool)
