"""``fabric.cuda``: CUDA devices through CuPy (optional).

Everything here answers cleanly on a machine without CuPy or a GPU:
``is_available()`` is False and ``device_count()`` is 0.

Example::

    >>> import fabric
    >>> fabric.cuda.is_available() in (True, False)
    True
"""
from __future__ import annotations

import functools

__all__ = ["is_available", "device_count", "current_device", "set_device", "synchronize", "manual_seed",
           "manual_seed_all", "memory_allocated", "max_memory_allocated", "empty_cache", "unavailable_reason",
           "device", "get_device_name", "is_bf16_supported"]


@functools.lru_cache(maxsize=None)
def _probe():
    """(device count, reason) — never raises."""
    try:
        import cupy
    except ImportError:
        return 0, "CuPy is not installed (pip install 'fabric-dl[cuda12]')"
    except Exception as e:  # a broken CuPy install
        return 0, f"CuPy failed to import: {e}"
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # e.g. cudaErrorInsufficientDriver / cudaErrorNoDevice
        return 0, f"CuPy found no usable CUDA device: {e}"
    if n == 0:
        return 0, "CuPy found no CUDA device"
    return n, ""


def is_available() -> bool:
    """True when CuPy is installed and sees at least one GPU."""
    return _probe()[0] > 0


def device_count() -> int:
    return _probe()[0]


def unavailable_reason() -> str:
    """Why CUDA is unavailable ('' when it is available)."""
    return _probe()[1]


def _require():
    if not is_available():
        raise RuntimeError(f"CUDA is not available: {unavailable_reason()}")


def current_device() -> int:
    _require()
    import cupy

    return cupy.cuda.runtime.getDevice()


def set_device(device) -> None:
    _require()
    import cupy

    idx = device if isinstance(device, int) else (getattr(device, "index", None) or 0)
    cupy.cuda.runtime.setDevice(idx)


class device:
    """Context manager that makes a CUDA device current."""

    def __init__(self, device):
        self.idx = device if isinstance(device, int) else (getattr(device, "index", None) or 0)

    def __enter__(self):
        _require()
        import cupy

        self.prev = cupy.cuda.runtime.getDevice()
        cupy.cuda.runtime.setDevice(self.idx)

    def __exit__(self, *exc):
        import cupy

        cupy.cuda.runtime.setDevice(self.prev)


def get_device_name(device=None) -> str:
    _require()
    import cupy

    idx = 0 if device is None else (device if isinstance(device, int) else device.index or 0)
    return cupy.cuda.runtime.getDeviceProperties(idx)["name"].decode()


def synchronize(device=None) -> None:
    _require()
    import cupy

    cupy.cuda.Device(0 if device is None else (device if isinstance(device, int) else device.index or 0)).synchronize()


def memory_allocated(device=None) -> int:
    if not is_available():
        return 0
    import cupy

    return cupy.get_default_memory_pool().used_bytes()


_peak = 0


def max_memory_allocated(device=None) -> int:
    global _peak
    _peak = max(_peak, memory_allocated(device))
    return _peak


def reset_peak_memory_stats(device=None) -> None:
    global _peak
    _peak = 0


def empty_cache() -> None:
    if is_available():
        import cupy

        cupy.get_default_memory_pool().free_all_blocks()


def is_bf16_supported() -> bool:
    return False


_generators: dict = {}


def _default_generator(index: int):
    _require()
    g = _generators.get(index)
    if g is None:
        from ..random import Generator

        g = _generators[index] = Generator(f"cuda:{index}")
    return g


def _seed_all_if_initialized(seed: int) -> None:
    for g in _generators.values():
        g.manual_seed(seed)


def manual_seed(seed) -> None:
    """Seed the current CUDA device's generator (a no-op without CUDA)."""
    if is_available():
        _default_generator(current_device()).manual_seed(seed)


def manual_seed_all(seed) -> None:
    """Seed every CUDA device's generator (a no-op without CUDA)."""
    for i in range(device_count()):
        _default_generator(i).manual_seed(seed)
