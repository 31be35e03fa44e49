"""``fabric.utils``: ``fabric.utils.data`` is :mod:`fabric.data` under
PyTorch's name, so ``torch.utils.data`` code runs unchanged.

Example::

    >>> import fabric.utils.data, fabric.data
    >>> fabric.utils.data.Dataset is fabric.data.Dataset
    True
"""
from __future__ import annotations

from . import data

__all__ = ["data"]
