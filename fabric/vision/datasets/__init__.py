"""torchvision's datasets: MNIST and friends (IDX files), CIFAR10/100 (the
python tarballs, read without running pickle code), SVHN (SciPy), FakeData,
ImageFolder/DatasetFolder (Pillow), plus fabric's offline ``Digits``.

Example::

    >>> from fabric.vision import datasets
    >>> datasets.MNIST.resources[0][0]
    'train-images-idx3-ubyte.gz'
"""
from __future__ import annotations

from . import utils  # noqa: F401
from .digits import Digits
from .mnist import MNIST, FashionMNIST

__all__ = ["MNIST", "FashionMNIST", "Digits"]
