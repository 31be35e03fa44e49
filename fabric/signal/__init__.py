"""Signal processing: ``fabric.signal.windows`` is ``torch.signal.windows``.

Example::

    >>> import fabric
    >>> fabric.signal.windows.hann(3)
    tensor([0., 1., 0.])
"""
from __future__ import annotations

from . import windows

__all__ = ["windows"]
