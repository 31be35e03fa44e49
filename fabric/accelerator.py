"""``torch.accelerator``: the device-agnostic face of the current accelerator.

fabric's one accelerator is CUDA (through CuPy): every function here answers
for it, and raises PyTorch's ``RuntimeError("Cannot access accelerator device
when none is available.")`` where PyTorch does when there is no GPU.

Example::

    >>> import fabric
    >>> device = fabric.accelerator.current_accelerator() if fabric.accelerator.is_available() else "cpu"
    >>> fabric.ones(2, device=device).sum().item()
    2.0
"""
from __future__ import annotations

import contextlib
import warnings

from . import cuda as _cuda

__all__ = ["current_accelerator", "current_device_idx", "current_device_index", "current_stream", "device_count",
           "device_index", "empty_cache", "get_device_capability", "get_memory_info", "is_available",
           "max_memory_allocated", "max_memory_reserved", "memory_allocated", "memory_reserved", "memory_stats",
           "reset_peak_memory_stats", "set_device_idx", "set_device_index", "set_stream", "synchronize"]

_NONE = "Cannot access accelerator device when none is available."


def _require() -> None:
    if not _cuda.is_available():
        raise RuntimeError(_NONE)


def _index(device) -> int:
    """A device index from ``None`` (current), an int, ``'cuda:N'`` or a device."""
    _require()
    if device is None:
        return _cuda.current_device()
    from ._device import device as _device

    if isinstance(device, int) and not isinstance(device, bool):
        return device
    d = _device(device)
    if d.type != "cuda":
        raise ValueError(f"{d.type} doesn't match the current accelerator cuda.")
    return _cuda.current_device() if d.index is None else d.index


def is_available() -> bool:
    """Whether an accelerator (a CUDA GPU through CuPy) can be used."""
    return _cuda.is_available()


def current_accelerator(check_available: bool = False):
    """``device('cuda')`` when CuPy can run here; None otherwise (and, with
    ``check_available``, when no GPU is visible)."""
    from ._device import device
    from .backends.cuda import is_built

    if not is_built() or (check_available and not is_available()):
        return None
    return device("cuda")


def device_count() -> int:
    """How many accelerator devices are visible (0 without one)."""
    return _cuda.device_count()


def current_device_index() -> int:
    """The index of the current accelerator device."""
    _require()
    return _cuda.current_device()


def current_device_idx() -> int:
    """Deprecated spelling of :func:`current_device_index`."""
    warnings.warn('"torch.accelerator.current_device_idx" is deprecated. Please use '
                  '"torch.accelerator.current_device_index" instead.', FutureWarning, stacklevel=2)
    return current_device_index()


def set_device_index(device, /) -> None:
    """Make ``device`` (an index, ``'cuda:N'`` or a device) the current accelerator device."""
    idx = _index(device)
    if idx >= 0:
        _cuda.set_device(idx)


def set_device_idx(device, /) -> None:
    """Deprecated spelling of :func:`set_device_index`."""
    warnings.warn('"torch.accelerator.set_device_idx" is deprecated. Please use '
                  '"torch.accelerator.set_device_index" instead.', FutureWarning, stacklevel=2)
    set_device_index(device)


@contextlib.contextmanager
def device_index(device, /):
    """Context manager: ``device`` current for the block (``None``: nothing changes)."""
    if device is None:
        yield
        return
    prev = current_device_index()
    set_device_index(device)
    try:
        yield
    finally:
        set_device_index(prev)


def synchronize(device=None, /) -> None:
    """Wait for all queued work on ``device`` (default: the current one)."""
    _cuda.synchronize(_index(device))


def current_stream(device=None, /):
    return _cuda.current_stream(_index(device))


def set_stream(stream) -> None:
    _require()
    _cuda.set_stream(stream)


def get_device_capability(device=None, /) -> dict:
    """The device's features: ``{'supported_dtypes': [...]}`` as PyTorch reports them."""
    from . import _dtype as D

    idx = _index(device)
    dtypes = [D.bool, D.uint8, D.int8, D.int16, D.int32, D.int64, D.float16, D.float32, D.float64]
    if _cuda.get_device_capability(idx) >= (8, 0):
        dtypes.append(D.bfloat16)
    return {"supported_dtypes": dtypes}


def empty_cache() -> None:
    _require()
    _cuda.empty_cache()


def get_memory_info(device_index=None, /) -> tuple:
    return _cuda.mem_get_info(_index(device_index))


def memory_stats(device_index=None, /) -> dict:
    return _cuda.memory_stats(_index(device_index))


def memory_allocated(device_index=None, /) -> int:
    return _cuda.memory_allocated(_index(device_index))


def max_memory_allocated(device_index=None, /) -> int:
    return _cuda.max_memory_allocated(_index(device_index))


def memory_reserved(device_index=None, /) -> int:
    return _cuda.memory_reserved(_index(device_index))


def max_memory_reserved(device_index=None, /) -> int:
    return _cuda.max_memory_reserved(_index(device_index))


def reset_peak_memory_stats(device_index=None, /) -> None:
    _cuda.reset_peak_memory_stats(_index(device_index))
