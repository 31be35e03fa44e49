"""``torchvision.transforms.v2``: the names v2 shares with v1, as the v1
classes (plain images only: no ``tv_tensors`` boxes or masks yet), plus
``ToImage``/``ToDtype``.

Example::

    >>> import fabric
    >>> from fabric.vision.transforms import v2
    >>> v2.ToDtype(fabric.float32, scale=True)(fabric.tensor([[[255]]], dtype=fabric.uint8))
    tensor([[[1.]]])
"""
from __future__ import annotations

import numpy as np

import fabric

from ...._tensor import Tensor
from ....nn.modules.module import Module
from .. import functional as _F
from ..autoaugment import AutoAugment, AutoAugmentPolicy, RandAugment, TrivialAugmentWide
from ..transforms import (
    CenterCrop,
    ColorJitter,
    Compose,
    ConvertImageDtype,
    FiveCrop,
    GaussianBlur,
    Grayscale,
    InterpolationMode,
    Lambda,
    Normalize,
    Pad,
    PILToTensor,
    RandomAdjustSharpness,
    RandomAffine,
    RandomApply,
    RandomAutocontrast,
    RandomChoice,
    RandomCrop,
    RandomEqualize,
    RandomErasing,
    RandomGrayscale,
    RandomHorizontalFlip,
    RandomInvert,
    RandomOrder,
    RandomPosterize,
    RandomResizedCrop,
    RandomRotation,
    RandomSolarize,
    RandomVerticalFlip,
    Resize,
    TenCrop,
    ToPILImage,
)


class ToImage(Module):
    """PIL image or NumPy HxW[xC] array -> CxHxW tensor of the same dtype (tensors pass through)."""

    def forward(self, img):
        if isinstance(img, Tensor):
            return img
        if isinstance(img, np.ndarray):
            return fabric.from_numpy(np.ascontiguousarray(img.transpose(2, 0, 1) if img.ndim == 3 else img[None]))
        return _F.pil_to_tensor(img)


class ToDtype(Module):
    """Cast to ``dtype``; with ``scale=True`` rescale values as ``convert_image_dtype`` does."""

    def __init__(self, dtype, scale: bool = False) -> None:
        super().__init__()
        self.dtype = dtype
        self.scale = scale

    def forward(self, img: Tensor) -> Tensor:
        return _F.convert_image_dtype(img, self.dtype) if self.scale else img.to(self.dtype)


class ToPureTensor(Module):
    """Identity on plain tensors."""

    def forward(self, img):
        return img


__all__ = ["AutoAugment", "AutoAugmentPolicy", "CenterCrop", "ColorJitter", "Compose", "ConvertImageDtype",
           "FiveCrop", "GaussianBlur", "Grayscale", "InterpolationMode", "Lambda", "Normalize", "Pad",
           "PILToTensor", "RandAugment", "RandomAdjustSharpness", "RandomAffine", "RandomApply",
           "RandomAutocontrast", "RandomChoice", "RandomCrop", "RandomEqualize", "RandomErasing", "RandomGrayscale",
           "RandomHorizontalFlip", "RandomInvert", "RandomOrder", "RandomPosterize", "RandomResizedCrop",
           "RandomRotation", "RandomSolarize", "RandomVerticalFlip", "Resize", "TenCrop", "ToDtype", "ToImage",
           "ToPILImage", "ToPureTensor", "TrivialAugmentWide"]
