"""``FakeData``: random images, the same as torchvision's for the same index
(each sample seeds the global generator with ``index + random_offset``,
draws ``randn(*image_size)`` then the label, and restores the generator).

Example::

    >>> from fabric.vision.datasets import FakeData
    >>> img, label = FakeData(size=2, image_size=(3, 4, 5))[0]
    >>> img.shape, img.dtype, isinstance(label, int)
    ((4, 5, 3), dtype('uint8'), True)
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import fabric

from .vision import VisionDataset, apply_transforms


class FakeData(VisionDataset):
    """``size`` random images of ``image_size`` (C, H, W) with labels in
    ``range(num_classes)``. A sample is (HxWxC uint8 NumPy array — HxW for one
    channel — holding what torchvision's PIL image holds, int label); the
    target transform receives the label as a 0-d tensor, as in torchvision."""

    def __init__(self, size: int = 1000, image_size: tuple[int, ...] = (3, 224, 224), num_classes: int = 10,
                 transform: Callable | None = None, target_transform: Callable | None = None,
                 random_offset: int = 0) -> None:
        super().__init__(None, transform=transform, target_transform=target_transform)
        self.size = size
        self.num_classes = num_classes
        self.image_size = image_size
        self.random_offset = random_offset

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        if index >= len(self):
            raise IndexError(f"{self.__class__.__name__} index out of range")
        rng_state = fabric.get_rng_state()
        fabric.manual_seed(index + self.random_offset)
        img = fabric.randn(*self.image_size)
        target = fabric.randint(0, self.num_classes, size=(1,), dtype=fabric.long)[0]
        fabric.set_rng_state(rng_state)
        # ToPILImage's conversion: x * 255 truncated to an integer, wrapped into uint8
        arr = (img.numpy() * np.float32(255)).astype(np.int64).astype(np.uint8)
        if arr.ndim == 3:
            arr = arr[0] if arr.shape[0] == 1 else np.ascontiguousarray(arr.transpose(1, 2, 0))
        arr, target = apply_transforms(self.transform, self.target_transform, arr, target)
        return arr, target.item()

    def __len__(self) -> int:
        return self.size
