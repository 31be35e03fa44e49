"""``set_num_threads`` / ``get_num_threads``: the BLAS thread count.

fabric's intra-op parallelism is NumPy's BLAS (OpenBLAS in the NumPy
wheels). Small matrix products run faster on one thread, and on a loaded
machine OpenBLAS's spinning threads can slow training several-fold, so
scripts that call ``torch.set_num_threads(1)`` keep working as intended.
Uses threadpoolctl when installed, else NumPy's bundled OpenBLAS directly.

Example::

    >>> import fabric
    >>> fabric.set_num_threads(1); fabric.get_num_threads()
    1
"""
from __future__ import annotations

import ctypes
import glob
import os

__all__ = ["set_num_threads", "get_num_threads", "set_num_interop_threads", "get_num_interop_threads"]

_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads", "openblas_set_num_threads64_",
            "openblas_set_num_threads")
_GETTERS = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads", "openblas_get_num_threads64_",
            "openblas_get_num_threads")
_lib = None
_requested = None


def _openblas():
    """NumPy's bundled OpenBLAS, loaded by path (it is already in the process)."""
    global _lib
    if _lib is None:
        import numpy

        libs = glob.glob(os.path.join(os.path.dirname(numpy.__file__), "..", "numpy.libs", "*openblas*"))
        libs += glob.glob(os.path.join(os.path.dirname(numpy.__file__), ".dylibs", "*openblas*"))
        _lib = False
        for path in libs:
            try:
                lib = ctypes.CDLL(path)
            except OSError:
                continue
            if any(hasattr(lib, n) for n in _SETTERS):
                _lib = lib
                break
    return _lib or None


def set_num_threads(n: int) -> None:
    """Use ``n`` threads for BLAS-backed ops (matmul, conv GEMMs)."""
    global _requested
    n = int(n)
    if n < 1:
        raise RuntimeError(f"set_num_threads expects a positive integer, got {n}")
    _requested = n
    try:
        from threadpoolctl import threadpool_limits  # pyright: ignore[reportMissingImports] (optional)

        threadpool_limits(limits=n, user_api="blas")
        return
    except ImportError:
        pass
    lib = _openblas()
    if lib is not None:
        for name in _SETTERS:
            fn = getattr(lib, name, None)
            if fn is not None:
                fn(ctypes.c_int(n))
                return


def get_num_threads() -> int:
    """The BLAS thread count in use."""
    lib = _openblas()
    if lib is not None:
        for name in _GETTERS:
            fn = getattr(lib, name, None)
            if fn is not None:
                fn.restype = ctypes.c_int
                return int(fn())
    return _requested or os.cpu_count() or 1


_interop = 1


def set_num_interop_threads(n: int) -> None:
    """Accepted for compatibility: fabric runs ops one at a time."""
    global _interop
    _interop = int(n)


def get_num_interop_threads() -> int:
    return _interop
