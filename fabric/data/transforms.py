"""Thin re-export of :mod:`fabric.vision.transforms` (one implementation).

Example::

    >>> from fabric.data import transforms as T
    >>> T.ToTensor is __import__("fabric.vision.transforms", fromlist=["ToTensor"]).ToTensor
    True
"""
from __future__ import annotations

from ..vision.transforms import *  # noqa: F403
from ..vision.transforms import __all__, functional  # noqa: F401
