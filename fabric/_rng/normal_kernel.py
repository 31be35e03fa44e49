"""A numba twin of the float32 AVX2 Box-Muller (``mt19937._box_muller16_f32``
with ``libm._AVX2_NORMAL``): the same float32 operations, one element at a
time, each fused multiply-add rounded exactly as ``libm._fma32`` rounds it, so
every drawn value is bit-identical to the NumPy replay (which stays the
reference; ``tests/test_rng.py`` checks the two agree).  The NumPy replay
makes ~150 array passes per element; this makes one.

Used for large draws when numba is installed (the ``cpu`` extra) and
``FABRIC_CPU_KERNELS`` is not ``0``; numba is imported and the kernel
(``_normal_numba.py``) compiled, cached on disk, on the first such draw.

Example::

    >>> import numpy as np
    >>> from fabric._rng import normal_kernel, mt19937
    >>> u = np.linspace(0.01, 0.99, 32, dtype=np.float32).reshape(2, 16)
    >>> f = normal_kernel.box_muller16_f32()
    >>> f is None or bool((f(u, 0.0, 1.0) == mt19937._box_muller16_f32(u, 0.0, 1.0)).all())
    True
"""
from __future__ import annotations

import os

import numpy as np

MIN_ELEMENTS = 1 << 16  # smaller draws keep the NumPy replay (no numba import for them)
_kernel = None          # the compiled kernel; False once numba turned out to be missing or disabled


def box_muller16_f32():
    """The compiled kernel ``f(u, mean, std)`` for float32 uniforms of shape
    ``(rows, 16)``, or None without numba (or with ``FABRIC_CPU_KERNELS=0``)."""
    global _kernel
    if _kernel is None:
        _kernel = False
        if os.environ.get("FABRIC_CPU_KERNELS", "1") != "0":
            try:
                _kernel = _compile()
                _kernel(np.full((1, 16), 0.5, np.float32), 0.0, 1.0)  # compiles (or loads the cache) now
            except Exception:  # no numba, or one that cannot build the kernel: the NumPy replay serves
                _kernel = False
    return _kernel or None


def _compile():
    from ._normal_numba import box_muller16_f32 as kernel  # imports numba
    return kernel
