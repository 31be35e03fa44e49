"""AutoAugment, RandAugment and TrivialAugmentWide with torchvision's
policies, magnitude tables and draws (``randint``/``rand`` from fabric's
generator in torchvision's order), on uint8 tensors, PIL images and NumPy
images.

Example::

    >>> import fabric
    >>> from fabric.vision.transforms import RandAugment
    >>> img = fabric.randint(0, 256, (3, 8, 8), dtype=fabric.uint8)
    >>> RandAugment(num_ops=2)(img).shape
    fabric.Size([3, 8, 8])
"""
from __future__ import annotations

import math
from enum import Enum

import fabric

from ..._tensor import Tensor
from ...nn.modules.module import Module
from . import functional as F
from .functional import InterpolationMode

__all__ = ["AutoAugmentPolicy", "AutoAugment", "RandAugment", "TrivialAugmentWide"]


def _apply_op(img, op_name: str, magnitude: float, interpolation: InterpolationMode, fill):
    if op_name == "ShearX":
        # torchvision shears by atan(magnitude) around the top-left corner, as the original AutoAugment
        return F.affine(img, angle=0.0, translate=[0, 0], scale=1.0, shear=[math.degrees(math.atan(magnitude)), 0.0],
                        interpolation=interpolation, fill=fill, center=[0, 0])
    if op_name == "ShearY":
        return F.affine(img, angle=0.0, translate=[0, 0], scale=1.0, shear=[0.0, math.degrees(math.atan(magnitude))],
                        interpolation=interpolation, fill=fill, center=[0, 0])
    if op_name == "TranslateX":
        return F.affine(img, angle=0.0, translate=[int(magnitude), 0], scale=1.0, interpolation=interpolation,
                        shear=[0.0, 0.0], fill=fill)
    if op_name == "TranslateY":
        return F.affine(img, angle=0.0, translate=[0, int(magnitude)], scale=1.0, interpolation=interpolation,
                        shear=[0.0, 0.0], fill=fill)
    if op_name == "Rotate":
        return F.rotate(img, magnitude, interpolation=interpolation, fill=fill)
    if op_name == "Brightness":
        return F.adjust_brightness(img, 1.0 + magnitude)
    if op_name == "Color":
        return F.adjust_saturation(img, 1.0 + magnitude)
    if op_name == "Contrast":
        return F.adjust_contrast(img, 1.0 + magnitude)
    if op_name == "Sharpness":
        return F.adjust_sharpness(img, 1.0 + magnitude)
    if op_name == "Posterize":
        return F.posterize(img, int(magnitude))
    if op_name == "Solarize":
        return F.solarize(img, magnitude)
    if op_name == "AutoContrast":
        return F.autocontrast(img)
    if op_name == "Equalize":
        return F.equalize(img)
    if op_name == "Invert":
        return F.invert(img)
    if op_name == "Identity":
        return img
    raise ValueError(f"The provided operator {op_name} is not recognized.")


def _fill_for(img, fill):
    if isinstance(img, Tensor) or hasattr(img, "ndim"):
        if isinstance(fill, (int, float)):
            return [float(fill)] * F.get_dimensions(img)[0]
        if fill is not None:
            return [float(f) for f in fill]
    return fill


def _posterize_bins(num_bins: int, top: int) -> Tensor:
    return 8 - (fabric.arange(num_bins) / ((num_bins - 1) / top)).round().int()


class AutoAugmentPolicy(Enum):
    """Policies learned on ImageNet, CIFAR-10 and SVHN."""

    IMAGENET = "imagenet"
    CIFAR10 = "cifar10"
    SVHN = "svhn"


_POLICIES = {
    AutoAugmentPolicy.IMAGENET: [
        (("Posterize", 0.4, 8), ("Rotate", 0.6, 9)), (("Solarize", 0.6, 5), ("AutoContrast", 0.6, None)),
        (("Equalize", 0.8, None), ("Equalize", 0.6, None)), (("Posterize", 0.6, 7), ("Posterize", 0.6, 6)),
        (("Equalize", 0.4, None), ("Solarize", 0.2, 4)), (("Equalize", 0.4, None), ("Rotate", 0.8, 8)),
        (("Solarize", 0.6, 3), ("Equalize", 0.6, None)), (("Posterize", 0.8, 5), ("Equalize", 1.0, None)),
        (("Rotate", 0.2, 3), ("Solarize", 0.6, 8)), (("Equalize", 0.6, None), ("Posterize", 0.4, 6)),
        (("Rotate", 0.8, 8), ("Color", 0.4, 0)), (("Rotate", 0.4, 9), ("Equalize", 0.6, None)),
        (("Equalize", 0.0, None), ("Equalize", 0.8, None)), (("Invert", 0.6, None), ("Equalize", 1.0, None)),
        (("Color", 0.6, 4), ("Contrast", 1.0, 8)), (("Rotate", 0.8, 8), ("Color", 1.0, 2)),
        (("Color", 0.8, 8), ("Solarize", 0.8, 7)), (("Sharpness", 0.4, 7), ("Invert", 0.6, None)),
        (("ShearX", 0.6, 5), ("Equalize", 1.0, None)), (("Color", 0.4, 0), ("Equalize", 0.6, None)),
        (("Equalize", 0.4, None), ("Solarize", 0.2, 4)), (("Solarize", 0.6, 5), ("AutoContrast", 0.6, None)),
        (("Invert", 0.6, None), ("Equalize", 1.0, None)), (("Color", 0.6, 4), ("Contrast", 1.0, 8)),
        (("Equalize", 0.8, None), ("Equalize", 0.6, None)),
    ],
    AutoAugmentPolicy.CIFAR10: [
        (("Invert", 0.1, None), ("Contrast", 0.2, 6)), (("Rotate", 0.7, 2), ("TranslateX", 0.3, 9)),
        (("Sharpness", 0.8, 1), ("Sharpness", 0.9, 3)), (("ShearY", 0.5, 8), ("TranslateY", 0.7, 9)),
        (("AutoContrast", 0.5, None), ("Equalize", 0.9, None)), (("ShearY", 0.2, 7), ("Posterize", 0.3, 7)),
        (("Color", 0.4, 3), ("Brightness", 0.6, 7)), (("Sharpness", 0.3, 9), ("Brightness", 0.7, 9)),
        (("Equalize", 0.6, None), ("Equalize", 0.5, None)), (("Contrast", 0.6, 7), ("Sharpness", 0.6, 5)),
        (("Color", 0.7, 7), ("TranslateX", 0.5, 8)), (("Equalize", 0.3, None), ("AutoContrast", 0.4, None)),
        (("TranslateY", 0.4, 3), ("Sharpness", 0.2, 6)), (("Brightness", 0.9, 6), ("Color", 0.2, 8)),
        (("Solarize", 0.5, 2), ("Invert", 0.0, None)), (("Equalize", 0.2, None), ("AutoContrast", 0.6, None)),
        (("Equalize", 0.2, None), ("Equalize", 0.6, None)), (("Color", 0.9, 9), ("Equalize", 0.6, None)),
        (("AutoContrast", 0.8, None), ("Solarize", 0.2, 8)), (("Brightness", 0.1, 3), ("Color", 0.7, 0)),
        (("Solarize", 0.4, 5), ("AutoContrast", 0.9, None)), (("TranslateY", 0.9, 9), ("TranslateY", 0.7, 9)),
        (("AutoContrast", 0.9, None), ("Solarize", 0.8, 3)), (("Equalize", 0.8, None), ("Invert", 0.1, None)),
        (("TranslateY", 0.7, 9), ("AutoContrast", 0.9, None)),
    ],
    AutoAugmentPolicy.SVHN: [
        (("ShearX", 0.9, 4), ("Invert", 0.2, None)), (("ShearY", 0.9, 8), ("Invert", 0.7, None)),
        (("Equalize", 0.6, None), ("Solarize", 0.6, 6)), (("Invert", 0.9, None), ("Equalize", 0.6, None)),
        (("Equalize", 0.6, None), ("Rotate", 0.9, 3)), (("ShearX", 0.9, 4), ("AutoContrast", 0.8, None)),
        (("ShearY", 0.9, 8), ("Invert", 0.4, None)), (("ShearY", 0.9, 5), ("Solarize", 0.2, 6)),
        (("Invert", 0.9, None), ("AutoContrast", 0.8, None)), (("Equalize", 0.6, None), ("Rotate", 0.9, 3)),
        (("ShearX", 0.9, 4), ("Solarize", 0.3, 3)), (("ShearY", 0.8, 8), ("Invert", 0.7, None)),
        (("Equalize", 0.9, None), ("TranslateY", 0.6, 6)), (("Invert", 0.9, None), ("Equalize", 0.6, None)),
        (("Contrast", 0.3, 3), ("Rotate", 0.8, 4)), (("Invert", 0.8, None), ("TranslateY", 0.0, 2)),
        (("ShearY", 0.7, 6), ("Solarize", 0.4, 8)), (("Invert", 0.6, None), ("Rotate", 0.8, 4)),
        (("ShearY", 0.3, 7), ("TranslateX", 0.9, 3)), (("ShearX", 0.1, 6), ("Invert", 0.6, None)),
        (("Solarize", 0.7, 2), ("TranslateY", 0.6, 7)), (("ShearY", 0.8, 4), ("Invert", 0.8, None)),
        (("ShearX", 0.7, 9), ("TranslateY", 0.8, 3)), (("ShearY", 0.8, 5), ("AutoContrast", 0.7, None)),
        (("ShearX", 0.7, 2), ("Invert", 0.1, None)),
    ],
}


def _common_space(num_bins: int, image_size) -> dict:
    # image_size is (height, width)
    return {
        "ShearX": (fabric.linspace(0.0, 0.3, num_bins), True),
        "ShearY": (fabric.linspace(0.0, 0.3, num_bins), True),
        "TranslateX": (fabric.linspace(0.0, 150.0 / 331.0 * image_size[1], num_bins), True),
        "TranslateY": (fabric.linspace(0.0, 150.0 / 331.0 * image_size[0], num_bins), True),
        "Rotate": (fabric.linspace(0.0, 30.0, num_bins), True),
        "Brightness": (fabric.linspace(0.0, 0.9, num_bins), True),
        "Color": (fabric.linspace(0.0, 0.9, num_bins), True),
        "Contrast": (fabric.linspace(0.0, 0.9, num_bins), True),
        "Sharpness": (fabric.linspace(0.0, 0.9, num_bins), True),
        "Posterize": (_posterize_bins(num_bins, 4), False),
        "Solarize": (fabric.linspace(255.0, 0.0, num_bins), False),
        "AutoContrast": (fabric.tensor(0.0), False),
        "Equalize": (fabric.tensor(0.0), False),
    }


class AutoAugment(Module):
    """Apply one of ``policy``'s 25 sub-policies (two ops with probabilities and magnitudes)."""

    def __init__(self, policy: AutoAugmentPolicy = AutoAugmentPolicy.IMAGENET,
                 interpolation: InterpolationMode = InterpolationMode.NEAREST, fill=None) -> None:
        super().__init__()
        self.policy = policy
        self.interpolation = interpolation
        self.fill = fill
        if policy not in _POLICIES:
            raise ValueError(f"The provided policy {policy} is not recognized.")
        self.policies = _POLICIES[policy]

    def _augmentation_space(self, num_bins: int, image_size) -> dict:
        space = _common_space(num_bins, image_size)
        space["Invert"] = (fabric.tensor(0.0), False)
        return space

    @staticmethod
    def get_params(transform_num: int):
        """(sub-policy index, the two application draws, the two sign draws), in torchvision's order."""
        policy_id = int(fabric.randint(transform_num, (1,)).item())
        probs = fabric.rand((2,))
        signs = fabric.randint(2, (2,))
        return policy_id, probs, signs

    def forward(self, img):
        fill = _fill_for(img, self.fill)
        _, height, width = F.get_dimensions(img)
        transform_id, probs, signs = self.get_params(len(self.policies))
        op_meta = self._augmentation_space(10, (height, width))
        for i, (op_name, p, magnitude_id) in enumerate(self.policies[transform_id]):
            if probs[i].item() <= p:
                magnitudes, signed = op_meta[op_name]
                magnitude = float(magnitudes[magnitude_id].item()) if magnitude_id is not None else 0.0
                if signed and int(signs[i]) == 0:
                    magnitude *= -1.0
                img = _apply_op(img, op_name, magnitude, interpolation=self.interpolation, fill=fill)
        return img

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(policy={self.policy}, fill={self.fill})"


class RandAugment(Module):
    """``num_ops`` ops drawn uniformly, all at ``magnitude`` (of ``num_magnitude_bins``), random signs."""

    def __init__(self, num_ops: int = 2, magnitude: int = 9, num_magnitude_bins: int = 31,
                 interpolation: InterpolationMode = InterpolationMode.NEAREST, fill=None) -> None:
        super().__init__()
        self.num_ops = num_ops
        self.magnitude = magnitude
        self.num_magnitude_bins = num_magnitude_bins
        self.interpolation = interpolation
        self.fill = fill

    def _augmentation_space(self, num_bins: int, image_size) -> dict:
        return {"Identity": (fabric.tensor(0.0), False), **_common_space(num_bins, image_size)}

    def forward(self, img):
        fill = _fill_for(img, self.fill)
        _, height, width = F.get_dimensions(img)
        op_meta = self._augmentation_space(self.num_magnitude_bins, (height, width))
        names = list(op_meta)
        for _ in range(self.num_ops):
            op_name = names[int(fabric.randint(len(op_meta), (1,)).item())]
            magnitudes, signed = op_meta[op_name]
            magnitude = float(magnitudes[self.magnitude].item()) if magnitudes.ndim > 0 else 0.0
            if signed and bool(fabric.randint(2, (1,))):
                magnitude *= -1.0
            img = _apply_op(img, op_name, magnitude, interpolation=self.interpolation, fill=fill)
        return img

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(num_ops={self.num_ops}, magnitude={self.magnitude}, "
                f"num_magnitude_bins={self.num_magnitude_bins}, interpolation={self.interpolation}, "
                f"fill={self.fill})")


class TrivialAugmentWide(Module):
    """One op drawn uniformly, at a uniformly drawn magnitude of the wide ranges."""

    def __init__(self, num_magnitude_bins: int = 31, interpolation: InterpolationMode = InterpolationMode.NEAREST,
                 fill=None) -> None:
        super().__init__()
        self.num_magnitude_bins = num_magnitude_bins
        self.interpolation = interpolation
        self.fill = fill

    def _augmentation_space(self, num_bins: int) -> dict:
        return {
            "Identity": (fabric.tensor(0.0), False),
            "ShearX": (fabric.linspace(0.0, 0.99, num_bins), True),
            "ShearY": (fabric.linspace(0.0, 0.99, num_bins), True),
            "TranslateX": (fabric.linspace(0.0, 32.0, num_bins), True),
            "TranslateY": (fabric.linspace(0.0, 32.0, num_bins), True),
            "Rotate": (fabric.linspace(0.0, 135.0, num_bins), True),
            "Brightness": (fabric.linspace(0.0, 0.99, num_bins), True),
            "Color": (fabric.linspace(0.0, 0.99, num_bins), True),
            "Contrast": (fabric.linspace(0.0, 0.99, num_bins), True),
            "Sharpness": (fabric.linspace(0.0, 0.99, num_bins), True),
            "Posterize": (_posterize_bins(num_bins, 6), False),
            "Solarize": (fabric.linspace(255.0, 0.0, num_bins), False),
            "AutoContrast": (fabric.tensor(0.0), False),
            "Equalize": (fabric.tensor(0.0), False),
        }

    def forward(self, img):
        fill = _fill_for(img, self.fill)
        op_meta = self._augmentation_space(self.num_magnitude_bins)
        op_name = list(op_meta)[int(fabric.randint(len(op_meta), (1,)).item())]
        magnitudes, signed = op_meta[op_name]
        magnitude = (float(magnitudes[int(fabric.randint(len(magnitudes), (1,), dtype=fabric.long).item())].item())
                     if magnitudes.ndim > 0 else 0.0)
        if signed and bool(fabric.randint(2, (1,))):
            magnitude *= -1.0
        return _apply_op(img, op_name, magnitude, interpolation=self.interpolation, fill=fill)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(num_magnitude_bins={self.num_magnitude_bins}, "
                f"interpolation={self.interpolation}, fill={self.fill})")
