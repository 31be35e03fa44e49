"""``fabric.cpu``: PyTorch's ``torch.cpu`` module (the CPU device needs no setup).

Example::

    >>> import fabric
    >>> fabric.cpu.is_available(), fabric.cpu.device_count(), fabric.cpu.current_device()
    (True, 1, 'cpu')
"""
from __future__ import annotations

from . import amp

__all__ = ["amp", "current_device", "device_count", "is_available", "is_initialized", "set_device", "synchronize"]


def is_available() -> bool:
    return True


def is_initialized() -> bool:
    return True


def synchronize(device=None) -> None:
    """CPU work is synchronous in fabric: returns at once."""
    return


def current_device() -> str:
    return "cpu"


def device_count() -> int:
    return 1


def set_device(device) -> None:
    """Only one CPU device exists; accepted for compatibility, as in PyTorch."""
    return
