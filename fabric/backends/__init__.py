"""Backend dispatch (and ``torch.backends``' switches): one object per device type, found only through
:func:`backend_of` (from an array) and :func:`backend_for` (from a device).

Ops are written once against ``backend.xp`` (``numpy`` or ``cupy``); the few
primitives where the two libraries differ, and the fused hot paths, are
methods of :class:`Backend`.  The CuPy backend is imported lazily, so
``import fabric`` never needs CuPy.

The submodules ``cudnn``, ``cuda`` (with ``cuda.matmul``), ``mps``,
``mkldnn``, ``cpu`` and ``opt_einsum`` are PyTorch's ``torch.backends.*``
flag modules (``fabric.backends.cuda`` also holds the GPU kernels).

Example::

    >>> import numpy as np
    >>> from fabric.backends import backend_of
    >>> backend_of(np.zeros(3)).name
    'cpu'
"""
from __future__ import annotations

import importlib

import numpy as np

from . import _flags
from .base import Backend
from .numpy_backend import NumpyBackend

__all__ = ["Backend", "backend_of", "backend_for", "cpu_backend", "get_cupy_backend", "cpu", "cuda", "cudnn",
           "mkldnn", "mps", "opt_einsum"]


def _make_cpu_backend() -> Backend:
    """NumPy, plus the numba kernels where the ``cpu`` extra is installed and
    ``FABRIC_CPU_KERNELS`` is not ``0`` (numba itself is imported on the first kernel call);
    glibc keeps freed memory for reuse (:mod:`._malloc`, ``FABRIC_CPU_ALLOCATOR=system`` opts out)."""
    from . import _malloc, cpu_kernels

    _malloc.configure()
    if cpu_kernels.enabled():
        from .cpu_kernels.backend import NumbaBackend
        return NumbaBackend()
    return NumpyBackend()


cpu_backend = _make_cpu_backend()
_cupy_instance = None


def _get_cupy_backend():
    """The CuPy backend, created on first use. Raises RuntimeError (saying
    why) when CuPy is missing or finds no CUDA device."""
    global _cupy_instance
    if _cupy_instance is None:
        # imported by path: importing the submodule would rebind the package
        # attribute ``cupy_backend`` (this accessor's public name) to it
        module = importlib.import_module(".cupy_backend", __name__)
        _cupy_instance = module.CupyBackend()
        _flags.apply_to_new_cupy_backend()
    return _cupy_instance


def get_cupy_backend():
    """Public accessor for the CuPy backend (see :func:`_get_cupy_backend`)."""
    return _get_cupy_backend()


def backend_of(array) -> Backend:
    """The backend that owns ``array`` (a NumPy or CuPy array)."""
    if array.__class__ is np.ndarray or isinstance(array, (np.ndarray, np.generic)):
        return cpu_backend
    return _get_cupy_backend()


def backend_for(device) -> Backend:
    """The backend for a ``fabric.device`` (or anything with ``.type``)."""
    if device.type == "cpu":
        return cpu_backend
    if device.type == "cuda":
        return _get_cupy_backend()
    raise RuntimeError(f"no backend for device type {device.type!r}")


from . import cpu, cuda, cudnn, mkldnn, mps, opt_einsum  # noqa: E402  (torch.backends' flag modules)
