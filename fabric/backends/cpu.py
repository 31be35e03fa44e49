"""``torch.backends.cpu``: the vector instruction set fabric's CPU kernels
(NumPy's) run with.

Example::

    >>> import fabric
    >>> fabric.backends.cpu.get_cpu_capability() in ("DEFAULT", "AVX2", "AVX512", "SVE256", "VSX", "Z VECTOR")
    True
"""
from __future__ import annotations

__all__ = ["get_cpu_capability"]


def get_cpu_capability() -> str:
    """``'AVX512'``, ``'AVX2'``, ``'SVE256'`` or ``'DEFAULT'``: the widest of
    PyTorch's levels that NumPy found on this CPU."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as features
    except ImportError:  # NumPy < 2
        from numpy.core._multiarray_umath import __cpu_features__ as features
    if all(features.get(f) for f in ("AVX512F", "AVX512CD", "AVX512BW", "AVX512DQ", "AVX512VL")):
        return "AVX512"
    if features.get("AVX2") and features.get("FMA3"):
        return "AVX2"
    if features.get("SVE"):
        return "SVE256"
    return "DEFAULT"
