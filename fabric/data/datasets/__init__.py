"""Thin re-export of :mod:`fabric.vision.datasets` (one implementation): the
ready-made datasets moved there with the rest of torchvision's API.

Example::

    >>> from fabric.data import datasets
    >>> datasets.MNIST is __import__("fabric.vision.datasets", fromlist=["MNIST"]).MNIST
    True
"""
from __future__ import annotations

import sys

from ...vision.datasets import MNIST, Digits, FashionMNIST, digits, mnist
from ...vision.datasets import utils as _utils

sys.modules[__name__ + "._utils"] = _utils
sys.modules[__name__ + ".mnist"] = mnist
sys.modules[__name__ + ".digits"] = digits

__all__ = ["MNIST", "FashionMNIST", "Digits"]
