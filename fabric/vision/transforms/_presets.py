"""The preprocessing that comes with pretrained weights
(``weights.transforms()``): resize, center crop, to float, normalize.

Example::

    >>> from fabric.vision.transforms._presets import ImageClassification
    >>> ImageClassification(crop_size=224).resize_size
    [256]
"""
from __future__ import annotations

import fabric

from ..._tensor import Tensor
from ...nn.modules.module import Module
from . import functional as F
from .functional import InterpolationMode

__all__ = ["ImageClassification"]


class ImageClassification(Module):
    """``resize(resize_size)`` -> ``center_crop(crop_size)`` -> float in [0, 1] -> ``normalize(mean, std)``."""

    def __init__(self, *, crop_size: int, resize_size: int = 256, mean=(0.485, 0.456, 0.406),
                 std=(0.229, 0.224, 0.225), interpolation=InterpolationMode.BILINEAR, antialias: bool | None = True):
        super().__init__()
        self.crop_size = [crop_size]
        self.resize_size = [resize_size]
        self.mean = list(mean)
        self.std = list(std)
        self.interpolation = interpolation
        self.antialias = antialias

    def forward(self, img) -> Tensor:
        img = F.resize(img, self.resize_size, interpolation=self.interpolation, antialias=self.antialias)
        img = F.center_crop(img, self.crop_size)
        if not isinstance(img, Tensor):
            img = F.pil_to_tensor(img) if not hasattr(img, "ndim") else fabric.from_numpy(
                img.transpose(2, 0, 1).copy() if img.ndim == 3 else img[None].copy())
        img = F.convert_image_dtype(img, fabric.float)
        return F.normalize(img, mean=self.mean, std=self.std)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(\n    crop_size={self.crop_size}\n    resize_size={self.resize_size}\n"
                f"    mean={self.mean}\n    std={self.std}\n    interpolation={self.interpolation}\n)")
