"""Window functions of SciPy's ``signal.windows`` family: ``torch.signal.windows``.

Example::

    >>> import fabric
    >>> fabric.signal.windows.bartlett(5)
    tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000])
"""
from __future__ import annotations

from .windows import (
    bartlett,
    blackman,
    cosine,
    exponential,
    gaussian,
    general_cosine,
    general_hamming,
    hamming,
    hann,
    kaiser,
    nuttall,
)

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine", "general_hamming",
           "hamming", "hann", "kaiser", "nuttall"]
