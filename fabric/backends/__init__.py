"""Backend dispatch: one object per device type, found only through
:func:`backend_of` (from an array) and :func:`backend_for` (from a device).

Ops are written once against ``backend.xp`` (``numpy`` or ``cupy``); the few
primitives where the two libraries differ, and the fused hot paths, are
methods of :class:`Backend`.  The CuPy backend is imported lazily, so
``import fabric`` never needs CuPy.

Example::

    >>> import numpy as np
    >>> from fabric.backends import backend_of
    >>> backend_of(np.zeros(3)).name
    'cpu'
"""
from __future__ import annotations

import numpy as np

from .base import Backend
from .numpy_backend import NumpyBackend

__all__ = ["Backend", "backend_of", "backend_for", "cpu_backend", "cupy_backend"]

cpu_backend = NumpyBackend()
_cupy_backend = None


def cupy_backend():
    """The CuPy backend, created on first use. Raises RuntimeError (saying
    why) when CuPy is missing or finds no CUDA device."""
    global _cupy_backend
    if _cupy_backend is None:
        from .cupy_backend import CupyBackend

        _cupy_backend = CupyBackend()
    return _cupy_backend


def backend_of(array) -> Backend:
    """The backend that owns ``array`` (a NumPy or CuPy array)."""
    if array.__class__ is np.ndarray or isinstance(array, (np.ndarray, np.generic)):
        return cpu_backend
    return cupy_backend()


def backend_for(device) -> Backend:
    """The backend for a ``fabric.device`` (or anything with ``.type``)."""
    if device.type == "cpu":
        return cpu_backend
    if device.type == "cuda":
        return cupy_backend()
    raise RuntimeError(f"no backend for device type {device.type!r}")
