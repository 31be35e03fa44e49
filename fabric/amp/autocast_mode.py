"""``autocast``: regions where listed ops run in float16 or float32 (PyTorch's ``torch.amp.autocast_mode``).

Example::

    >>> import fabric
    >>> a = fabric.ones(2, 2)
    >>> with fabric.autocast("cpu", dtype=fabric.float16):
    ...     (a @ a).dtype, (a + a).dtype
    (fabric.float16, fabric.float32)
    >>> (a @ a).dtype
    fabric.float32
"""
from __future__ import annotations

import collections.abc
import functools
import warnings

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor
from ..ops import _autocast as _policy

__all__ = [
    "autocast",
    "autocast_decorator",
    "autocast_decrement_nesting",
    "autocast_increment_nesting",
    "clear_autocast_cache",
    "custom_bwd",
    "custom_fwd",
    "get_autocast_cpu_dtype",
    "get_autocast_dtype",
    "get_autocast_gpu_dtype",
    "is_autocast_available",
    "is_autocast_cache_enabled",
    "is_autocast_cpu_enabled",
    "is_autocast_enabled",
    "set_autocast_cache_enabled",
    "set_autocast_cpu_dtype",
    "set_autocast_cpu_enabled",
    "set_autocast_dtype",
    "set_autocast_enabled",
    "set_autocast_gpu_dtype",
]

_TORCH_DEVICE_TYPES = ("cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, maia, xla, lazy, vulkan, "
                       "mps, meta, hpu, mtia, privateuseone")


def _check_device_type(device_type, fn):
    if not isinstance(device_type, str):
        raise TypeError(f"{fn}(): argument 'device_type' must be str, not {type(device_type).__name__}")
    if device_type not in _policy.DEVICE_TYPES:
        known = {d.strip() for d in _TORCH_DEVICE_TYPES.split(",")}
        if device_type.split(":")[0] in known:
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        raise RuntimeError(f"Expected one of {_TORCH_DEVICE_TYPES} device type at start of device string: "
                           f"{device_type}")
    return device_type


def is_autocast_available(device_type: str) -> bool:
    """True for the device types ``autocast`` accepts ("cpu", "cuda", and PyTorch's other accelerator names,
    which fabric keeps state for but has no tensors on)."""
    if not isinstance(device_type, str):
        raise TypeError(f"is_autocast_available(): argument 'device_type' must be str, not "
                        f"{type(device_type).__name__}")
    if device_type in _policy.DEVICE_TYPES:
        return True
    if device_type.split(":")[0] in {d.strip() for d in _TORCH_DEVICE_TYPES.split(",")}:
        return False
    raise RuntimeError(f"Expected one of {_TORCH_DEVICE_TYPES} device type at start of device string: "
                       f"{device_type}")


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is on for ``device_type`` in this thread; without an argument, for "cuda" (as in
    PyTorch)."""
    if device_type is None:
        return _policy.is_enabled("cuda")
    return _policy.is_enabled(_check_device_type(device_type, "is_autocast_enabled"))


def set_autocast_enabled(*args) -> None:
    """``set_autocast_enabled(device_type, enabled)`` or ``set_autocast_enabled(enabled)`` (CUDA)."""
    if len(args) == 1:
        device_type, enabled = "cuda", args[0]
    elif len(args) == 2:
        device_type, enabled = args
        if not isinstance(device_type, str):
            raise TypeError(f"set_autocast_enabled(): argument 'enabled' (position 1) must be bool, not "
                            f"{type(device_type).__name__}")
    else:
        raise TypeError(f"set_autocast_enabled() received an invalid combination of arguments - got {len(args)} "
                        f"arguments, but expected (str device_type, bool enabled) or (bool enabled)")
    if not isinstance(enabled, bool):
        pos = len(args)
        raise TypeError(f"set_autocast_enabled(): argument 'enabled' (position {pos}) must be bool, not "
                        f"{type(enabled).__name__}")
    _policy.set_enabled(_check_device_type(device_type, "set_autocast_enabled"), enabled)


def get_autocast_dtype(device_type: str):
    """The lower-precision dtype autocast uses for ``device_type`` in this thread (defaults: float16 for
    "cuda", bfloat16 for "cpu", as in PyTorch)."""
    return _policy.get_dtype(_check_device_type(device_type, "get_autocast_dtype"))


def set_autocast_dtype(device_type: str, dtype) -> None:
    """Set the lower-precision dtype for ``device_type`` (thread-local)."""
    if not isinstance(dtype, D.dtype):
        raise TypeError(f"set_autocast_dtype(): argument 'dtype' (position 2) must be torch.dtype, not "
                        f"{type(dtype).__name__}")
    _policy.set_dtype(_check_device_type(device_type, "set_autocast_dtype"), dtype)


def is_autocast_cache_enabled() -> bool:
    return _policy.state.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Turn the weight-cast cache on or off (thread-local; see docs/amp.md)."""
    _policy.state.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    """Drop the cached lower-precision casts of parameters (done when the outermost autocast region ends)."""
    _policy.clear_cache()


def autocast_increment_nesting() -> int:
    _policy.state.nesting += 1
    return _policy.state.nesting


def autocast_decrement_nesting() -> int:
    _policy.state.nesting -= 1
    return _policy.state.nesting


def _deprecated(old, new):
    warnings.warn(f"torch.{old} is deprecated. Please use torch.{new} instead.", DeprecationWarning, stacklevel=3)


def is_autocast_cpu_enabled() -> bool:
    _deprecated("is_autocast_cpu_enabled()", "is_autocast_enabled('cpu')")
    return _policy.is_enabled("cpu")


def set_autocast_cpu_enabled(enabled: bool) -> None:
    _deprecated("set_autocast_cpu_enabled(enabled)", "set_autocast_enabled('cpu', enabled)")
    set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype():
    _deprecated("get_autocast_cpu_dtype()", "get_autocast_dtype('cpu')")
    return _policy.get_dtype("cpu")


def set_autocast_cpu_dtype(dtype) -> None:
    _deprecated("set_autocast_cpu_dtype(dtype)", "set_autocast_dtype('cpu', dtype)")
    set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype():
    _deprecated("get_autocast_gpu_dtype()", "get_autocast_dtype('cuda')")
    return _policy.get_dtype("cuda")


def set_autocast_gpu_dtype(dtype) -> None:
    _deprecated("set_autocast_gpu_dtype(dtype)", "set_autocast_dtype('cuda', dtype)")
    set_autocast_dtype("cuda", dtype)


def autocast_decorator(autocast_instance, func):
    @functools.wraps(func)
    def decorate_autocast(*args, **kwargs):
        with autocast_instance:
            return func(*args, **kwargs)

    return decorate_autocast


def _cuda_available() -> bool:
    from .. import cuda

    return cuda.is_available()


class autocast:
    """Context manager / decorator: inside, listed ops run in ``dtype`` (lower-precision list) or float32
    (float32 list); see docs/amp.md for the lists per device type.

    ``dtype`` defaults to :func:`get_autocast_dtype` (float16 for "cuda", bfloat16 for "cpu").  fabric has no
    bfloat16 arithmetic, so an enabled autocast whose dtype is bfloat16 raises RuntimeError: pass
    ``dtype=fabric.float16``.  ``enabled=False`` accepts any arguments and disables autocast in the region.
    The state is thread-local; regions nest.

    Example::

        >>> import fabric
        >>> lin = fabric.nn.Linear(3, 2)
        >>> with fabric.autocast("cpu", dtype=fabric.float16):
        ...     y = lin(fabric.ones(4, 3))
        ...     with fabric.autocast("cpu", enabled=False):
        ...         z = lin(fabric.ones(4, 3))
        >>> y.dtype, z.dtype
        (fabric.float16, fabric.float32)
    """

    def __init__(self, device_type: str, dtype=None, enabled: bool = True, cache_enabled: bool | None = None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self.device = device_type
        if not is_autocast_available(device_type):
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else cache_enabled
        if enabled:
            if device_type == "cuda" and not _cuda_available():
                warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.", stacklevel=2)
                enabled = False
            elif self.fast_dtype is D.bfloat16:
                raise RuntimeError(_policy.BF16_ERROR)
            elif self.fast_dtype is not D.float16:
                name = device_type.upper()
                warnings.warn(f"In {name} autocast, but the target dtype is not supported. Disabling autocast.\n"
                              f"{name} Autocast only supports dtypes of fabric.bfloat16, fabric.float16 "
                              f"currently.", stacklevel=2)
                enabled = False
        self._enabled = enabled

    def __enter__(self):
        self.prev_cache_enabled = is_autocast_cache_enabled()
        self.prev = _policy.is_enabled(self.device)
        self.prev_fastdtype = _policy.get_dtype(self.device)
        _policy.set_enabled(self.device, self._enabled)
        if isinstance(self.fast_dtype, D.dtype):
            _policy.set_dtype(self.device, self.fast_dtype)
        autocast_increment_nesting()
        set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if autocast_decrement_nesting() == 0:
            clear_autocast_cache()
        _policy.set_enabled(self.device, self.prev)
        _policy.set_dtype(self.device, self.prev_fastdtype)
        set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError(f"autocast()(func) requires a callable, but got {type(func).__name__}. "
                            f"Did you mean to use autocast as a context manager? For example:\n"
                            f"    with torch.autocast(device_type=...):\n"
                            f"        output = model(input)")
        return autocast_decorator(self, func)


def _cast(value, device_type: str, dtype):
    """Cast floating tensors on ``device_type`` (not float64) inside ``value`` (containers included)."""
    if isinstance(value, Tensor):
        eligible = value.is_floating_point() and value.device.type == device_type and value.dtype is not D.float64
        return value.to(dtype) if eligible else value
    if isinstance(value, (str, bytes, np.ndarray)):
        return value
    if isinstance(value, collections.abc.Mapping):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, collections.abc.Iterable):
        iterable = (_cast(v, device_type, dtype) for v in value)
        if isinstance(value, (list, tuple)):
            return type(value)(iterable)
        return iterable
    return value


def custom_fwd(fwd=None, *, device_type: str, cast_inputs=None):
    """Decorator for ``forward`` of a custom ``autograd.Function``: records the autocast state for
    :func:`custom_bwd`; with ``cast_inputs``, inside an autocast region, casts floating tensor arguments to it
    and runs ``forward`` with autocast disabled.

    Example::

        >>> import fabric
        >>> class Double(fabric.autograd.Function):
        ...     @staticmethod
        ...     @fabric.amp.custom_fwd(device_type="cpu", cast_inputs=fabric.float32)
        ...     def forward(ctx, x):
        ...         return x * 2
        ...     @staticmethod
        ...     @fabric.amp.custom_bwd(device_type="cpu")
        ...     def backward(ctx, g):
        ...         return g * 2
        >>> with fabric.autocast("cpu", dtype=fabric.float16):
        ...     Double.apply(fabric.ones(2).half()).dtype
        fabric.float32
    """
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        args[0]._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        autocast_context = is_autocast_enabled(device_type)
        args[0]._fwd_used_autocast = False
        if autocast_context:
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str):
    """Decorator for ``backward`` of a custom ``autograd.Function``: runs it with the autocast state its
    ``forward`` (decorated with :func:`custom_fwd`) saw."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        with autocast(device_type=device_type, enabled=args[0]._fwd_used_autocast, dtype=args[0]._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd
