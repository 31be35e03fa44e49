"""Ready-made datasets: :class:`MNIST` and :class:`FashionMNIST` (IDX files,
torchvision's layout, optional checked download) and :class:`Digits`
(scikit-learn's 8x8 digits, offline).

Example::

    >>> from fabric.data import datasets
    >>> sorted(datasets.__all__)
    ['Digits', 'FashionMNIST', 'MNIST']
"""
from __future__ import annotations

from .digits import Digits
from .mnist import MNIST, FashionMNIST

__all__ = ["MNIST", "FashionMNIST", "Digits"]
