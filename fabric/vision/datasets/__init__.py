"""torchvision's datasets: MNIST and friends (IDX files), CIFAR10/100 (the
python tarballs, read without running pickle code), SVHN (SciPy), FakeData,
ImageFolder/DatasetFolder (Pillow), plus fabric's offline ``Digits``.

Images come as uint8 NumPy arrays (HxW or HxWxC) holding what torchvision's
PIL images hold, so ``transforms.ToTensor()`` gives the same tensors without
Pillow; ImageFolder's default loader returns PIL images (it needs Pillow).

Example::

    >>> from fabric.vision import datasets
    >>> datasets.MNIST.resources[0][0]
    'train-images-idx3-ubyte.gz'
"""
from __future__ import annotations

from . import utils  # noqa: F401
from .cifar import CIFAR10, CIFAR100
from .digits import Digits
from .fakedata import FakeData
from .folder import DatasetFolder, ImageFolder
from .mnist import EMNIST, KMNIST, MNIST, FashionMNIST
from .svhn import SVHN
from .vision import VisionDataset

__all__ = ["MNIST", "FashionMNIST", "KMNIST", "EMNIST", "CIFAR10", "CIFAR100", "SVHN", "FakeData", "DatasetFolder",
           "ImageFolder", "VisionDataset", "Digits"]
