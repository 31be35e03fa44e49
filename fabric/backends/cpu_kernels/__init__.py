"""Optional numba CPU kernels (the ``cpu`` extra: ``pip install fabric-dl[cpu]``).

:func:`enabled` says whether the CPU backend uses them: numba is installed and the
environment variable ``FABRIC_CPU_KERNELS`` is not ``0``.  The check only looks for numba
(``importlib.util.find_spec``); numba itself is imported on the first kernel call, so
``import fabric`` stays NumPy-only and fast.  The NumPy twins in ``fabric/backends/fused.py``
stay the reference, and the default without the extra.

Example::

    >>> from fabric.backends import cpu_kernels
    >>> isinstance(cpu_kernels.enabled(), bool)
    True
"""
from __future__ import annotations

import importlib.util
import os

__all__ = ["enabled"]


def enabled() -> bool:
    """Whether the numba kernels are available and not disabled by ``FABRIC_CPU_KERNELS=0``."""
    if os.environ.get("FABRIC_CPU_KERNELS", "1").strip().lower() in ("0", "false", "no", "off"):
        return False
    return importlib.util.find_spec("numba") is not None
