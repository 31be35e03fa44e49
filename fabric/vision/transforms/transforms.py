"""torchvision's v1 transform classes. Random transforms draw from fabric's
global generator with the calls torchvision makes, in the same order
(``rand(1) < p`` for a flip, ``randint(0, n, (1,))`` for a crop offset,
``empty(1).uniform_(a, b)`` for a factor, ``randperm(4)`` for ColorJitter's
order), so the same seed makes the same choices as torchvision.

Example::

    >>> import numpy as np
    >>> from fabric.vision import transforms as T
    >>> t = T.Compose([T.ToTensor(), T.Normalize((0.5,), (0.5,))])
    >>> t(np.full((2, 2), 255, dtype=np.uint8))
    tensor([[[1., 1.],
             [1., 1.]]])
"""
from __future__ import annotations

import math
import numbers
import random
import warnings
from collections.abc import Sequence

import numpy as np

import fabric

from ..._tensor import Tensor
from ...autograd.grad_mode import is_grad_enabled
from ...nn.modules.module import Module
from . import functional as F
from .functional import InterpolationMode, _interp

__all__ = ["Compose", "ToTensor", "PILToTensor", "ConvertImageDtype", "ToPILImage", "Normalize", "Resize",
           "CenterCrop", "Pad", "Lambda", "RandomApply", "RandomChoice", "RandomOrder", "RandomCrop",
           "RandomHorizontalFlip", "RandomVerticalFlip", "RandomResizedCrop", "FiveCrop", "TenCrop", "ColorJitter",
           "RandomRotation", "RandomAffine", "Grayscale", "RandomGrayscale", "RandomErasing", "GaussianBlur",
           "InterpolationMode", "RandomInvert", "RandomPosterize", "RandomSolarize", "RandomAdjustSharpness",
           "RandomAutocontrast", "RandomEqualize"]


def _rand_below(p: float) -> bool:
    """``torch.rand(1) < p``: one draw from the global generator."""
    return fabric.rand(1).item() < p


def _uniform(a: float, b: float) -> float:
    """``torch.empty(1).uniform_(a, b).item()`` (float32, as torchvision's draw)."""
    return fabric.empty(1).uniform_(float(a), float(b)).item()


def _randint(high: int) -> int:
    return fabric.randint(0, high, size=(1,)).item()


def _setup_size(size, error_msg: str):
    if isinstance(size, numbers.Number):
        return int(size), int(size)
    if isinstance(size, Sequence) and len(size) == 1:
        return size[0], size[0]
    if len(size) != 2:
        raise ValueError(error_msg)
    return size


def _check_sequence_input(x, name: str, req_sizes) -> None:
    msg = req_sizes[0] if len(req_sizes) < 2 else " or ".join([str(s) for s in req_sizes])
    if not isinstance(x, Sequence):
        raise TypeError(f"{name} should be a sequence of length {msg}.")
    if len(x) not in req_sizes:
        raise ValueError(f"{name} should be a sequence of length {msg}.")


def _setup_angle(x, name: str, req_sizes=(2,)) -> list[float]:
    if isinstance(x, numbers.Number):
        if x < 0:
            raise ValueError(f"If {name} is a single number, it must be positive.")
        x = [-x, x]
    else:
        _check_sequence_input(x, name, req_sizes)
    return [float(d) for d in x]


def _tensor_fill(img, fill):
    """torchvision's fill for tensors: one float per channel."""
    if isinstance(img, (Tensor, np.ndarray)):
        channels = F.get_dimensions(img)[0]
        if isinstance(fill, (int, float)):
            return [float(fill)] * channels
        return [float(f) for f in fill]
    return fill


class Compose:
    """Apply ``transforms`` one after the other."""

    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, img):
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self) -> str:
        body = "".join(f"\n    {t}" for t in self.transforms)
        return f"{self.__class__.__name__}({body}\n)"


class ToTensor:
    """HxW[xC] image (PIL or NumPy) -> CxHxW tensor; uint8 -> float in [0, 1]."""

    def __call__(self, pic) -> Tensor:
        return F.to_tensor(pic)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}()"


class PILToTensor:
    """PIL image -> CxHxW tensor of the same dtype."""

    def __call__(self, pic) -> Tensor:
        return F.pil_to_tensor(pic)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}()"


class ConvertImageDtype(Module):
    """Convert a tensor image to ``dtype``, rescaling the values."""

    def __init__(self, dtype) -> None:
        super().__init__()
        self.dtype = dtype

    def forward(self, image):
        return F.convert_image_dtype(image, self.dtype)


class ToPILImage:
    """Tensor or NumPy image -> PIL image (needs Pillow)."""

    def __init__(self, mode=None):
        self.mode = mode

    def __call__(self, pic):
        return F.to_pil_image(pic, self.mode)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(" + (f"mode={self.mode}" if self.mode is not None else "") + ")"


class Normalize(Module):
    """``(x - mean[c]) / std[c]`` per channel of a float tensor (..., C, H, W)."""

    def __init__(self, mean, std, inplace: bool = False):
        super().__init__()
        self.mean = mean
        self.std = std
        self.inplace = inplace
        self._cache = {}  # (numpy dtype, array class, device) -> (mean, std) shaped for (C, 1, 1)

    def _stats(self, tensor: Tensor):
        a = tensor._data
        key = (a.dtype, a.__class__, getattr(getattr(a, "device", None), "id", None))
        stats = self._cache.get(key)
        if stats is None:
            mean = fabric.as_tensor(self.mean, dtype=tensor.dtype, device=tensor.device)
            std = fabric.as_tensor(self.std, dtype=tensor.dtype, device=tensor.device)
            if bool((std == 0).any()):
                raise ValueError(f"std evaluated to zero after conversion to {tensor.dtype}, leading to division "
                                 "by zero.")
            stats = self._cache[key] = (mean.view(-1, 1, 1) if mean.ndim == 1 else mean,
                                        std.view(-1, 1, 1) if std.ndim == 1 else std)
        return stats

    def forward(self, tensor: Tensor) -> Tensor:
        if not isinstance(tensor, Tensor):
            raise TypeError(f"img should be Tensor Image. Got {type(tensor)}")
        if not tensor.is_floating_point():
            raise TypeError(f"Input tensor should be a float tensor. Got {tensor.dtype}.")
        if tensor.ndim < 3:
            raise ValueError("Expected tensor to be a tensor image of size (..., C, H, W). Got tensor.size() = "
                             f"{tensor.size()}")
        mean, std = self._stats(tensor)
        if tensor._requires_grad and is_grad_enabled():  # recorded by autograd
            return tensor.sub_(mean).div_(std) if self.inplace else (tensor - mean) / std
        # data path: the same float arithmetic straight on the arrays, without per-op overhead
        a = tensor._data
        if self.inplace:
            a -= mean._data
            a /= std._data
            tensor._bump_version()
            return tensor
        out = a - mean._data
        out /= std._data
        return Tensor._make(out, False)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(mean={self.mean}, std={self.std})"


class Resize(Module):
    """Resize to ``size`` ((h, w), or an int for the smaller edge)."""

    def __init__(self, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
        super().__init__()
        if not isinstance(size, (int, Sequence)):
            raise TypeError(f"Size should be int or sequence. Got {type(size)}")
        if isinstance(size, Sequence) and len(size) not in (1, 2):
            raise ValueError("If size is a sequence, it should have 1 or 2 values")
        self.size = size
        self.max_size = max_size
        self.interpolation = _interp(interpolation)
        self.antialias = antialias

    def forward(self, img):
        return F.resize(img, self.size, self.interpolation, self.max_size, self.antialias)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(size={self.size}, interpolation={self.interpolation.value}, "
                f"max_size={self.max_size}, antialias={self.antialias})")


class CenterCrop(Module):
    """Crop the center ``size``."""

    def __init__(self, size):
        super().__init__()
        self.size = _setup_size(size, error_msg="Please provide only two dimensions (h, w) for size.")

    def forward(self, img):
        return F.center_crop(img, self.size)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(size={self.size})"


class Pad(Module):
    """Pad all sides (see :func:`functional.pad`)."""

    def __init__(self, padding, fill=0, padding_mode: str = "constant"):
        super().__init__()
        if not isinstance(padding, (numbers.Number, tuple, list)):
            raise TypeError("Got inappropriate padding arg")
        if not isinstance(fill, (numbers.Number, tuple, list)):
            raise TypeError("Got inappropriate fill arg")
        if padding_mode not in ["constant", "edge", "reflect", "symmetric"]:
            raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
        if isinstance(padding, Sequence) and len(padding) not in [1, 2, 4]:
            raise ValueError(f"Padding must be an int or a 1, 2, or 4 element tuple, not a {len(padding)} element "
                             "tuple")
        self.padding = padding
        self.fill = fill
        self.padding_mode = padding_mode

    def forward(self, img):
        return F.pad(img, self.padding, self.fill, self.padding_mode)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(padding={self.padding}, fill={self.fill}, "
                f"padding_mode={self.padding_mode})")


class Lambda:
    """Wrap a function as a transform."""

    def __init__(self, lambd):
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got {type(lambd).__name__!r}")
        self.lambd = lambd

    def __call__(self, img):
        return self.lambd(img)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}()"


class RandomTransforms:
    """Base of the transforms that pick from a list."""

    def __init__(self, transforms):
        if not isinstance(transforms, Sequence):
            raise TypeError("Argument transforms should be a sequence")
        self.transforms = transforms

    def __call__(self, *args, **kwargs):
        raise NotImplementedError()

    def __repr__(self) -> str:
        body = "".join(f"\n    {t}" for t in self.transforms)
        return f"{self.__class__.__name__}({body}\n)"


class RandomApply(Module):
    """Apply all of ``transforms`` with probability ``p``."""

    def __init__(self, transforms, p: float = 0.5):
        super().__init__()
        self.transforms = transforms
        self.p = p

    def forward(self, img):
        if self.p < fabric.rand(1).item():
            return img
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self) -> str:
        body = "".join(f"\n    {t}" for t in self.transforms)
        return f"{self.__class__.__name__}(\n    p={self.p}{body}\n)"


class RandomOrder(RandomTransforms):
    """Apply ``transforms`` in a random order (Python's ``random``, as torchvision)."""

    def __call__(self, img):
        order = list(range(len(self.transforms)))
        random.shuffle(order)
        for i in order:
            img = self.transforms[i](img)
        return img


class RandomChoice(RandomTransforms):
    """Apply one of ``transforms``, chosen with weights ``p`` (Python's ``random``, as torchvision)."""

    def __init__(self, transforms, p=None):
        super().__init__(transforms)
        if p is not None and not isinstance(p, Sequence):
            raise TypeError("Argument p should be a sequence")
        self.p = p

    def __call__(self, *args):
        t = random.choices(self.transforms, weights=self.p)[0]
        return t(*args)

    def __repr__(self) -> str:
        return f"{super().__repr__()}(p={self.p})"


class RandomCrop(Module):
    """Crop a random ``size`` window, after optional ``padding`` (int, (lr, tb)
    or (left, top, right, bottom)) with ``fill`` / ``padding_mode``;
    ``pad_if_needed`` pads images smaller than ``size``."""

    @staticmethod
    def get_params(img, output_size):
        """(top, left, height, width) of a random crop of ``output_size``."""
        _, h, w = F.get_dimensions(img)
        th, tw = output_size
        if h < th or w < tw:
            raise ValueError(f"Required crop size {(th, tw)} is larger than input image size {(h, w)}")
        if w == tw and h == th:
            return 0, 0, h, w
        i = _randint(h - th + 1)
        j = _randint(w - tw + 1)
        return i, j, th, tw

    def __init__(self, size, padding=None, pad_if_needed: bool = False, fill=0, padding_mode: str = "constant"):
        super().__init__()
        self.size = tuple(_setup_size(size, error_msg="Please provide only two dimensions (h, w) for size."))
        if padding is not None and not isinstance(padding, (numbers.Number, tuple, list)):
            raise TypeError("Got inappropriate padding arg")
        if isinstance(padding, (tuple, list)) and len(padding) not in (1, 2, 4):
            raise ValueError(f"Padding must be an int or a 1, 2, or 4 element tuple, not a {len(padding)} element "
                             "tuple")
        if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
            raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
        self.padding = padding
        self.pad_if_needed = pad_if_needed
        self.fill = fill
        self.padding_mode = padding_mode

    def forward(self, img):
        if self.padding is not None:
            img = F.pad(img, self.padding, self.fill, self.padding_mode)
        _, height, width = F.get_dimensions(img)
        if self.pad_if_needed and width < self.size[1]:
            img = F.pad(img, [self.size[1] - width, 0], self.fill, self.padding_mode)
        if self.pad_if_needed and height < self.size[0]:
            img = F.pad(img, [0, self.size[0] - height], self.fill, self.padding_mode)
        i, j, h, w = self.get_params(img, self.size)
        return F.crop(img, i, j, h, w)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(size={self.size}, padding={self.padding})"


class RandomHorizontalFlip(Module):
    """Mirror left-right with probability ``p``."""

    def __init__(self, p: float = 0.5):
        super().__init__()
        self.p = p

    def forward(self, img):
        if _rand_below(self.p):
            return F.hflip(img)
        return img

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(p={self.p})"


class RandomVerticalFlip(Module):
    """Mirror top-bottom with probability ``p``."""

    def __init__(self, p: float = 0.5):
        super().__init__()
        self.p = p

    def forward(self, img):
        if _rand_below(self.p):
            return F.vflip(img)
        return img

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(p={self.p})"


class RandomResizedCrop(Module):
    """Crop a random area (``scale`` of the image, aspect ``ratio``) and resize it to ``size``."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                 interpolation=InterpolationMode.BILINEAR, antialias: bool | None = True):
        super().__init__()
        self.size = _setup_size(size, error_msg="Please provide only two dimensions (h, w) for size.")
        if not isinstance(scale, Sequence):
            raise TypeError("Scale should be a sequence")
        if not isinstance(ratio, Sequence):
            raise TypeError("Ratio should be a sequence")
        if (scale[0] > scale[1]) or (ratio[0] > ratio[1]):
            warnings.warn("Scale and ratio should be of kind (min, max)", stacklevel=2)
        self.interpolation = _interp(interpolation)
        self.antialias = antialias
        self.scale = scale
        self.ratio = ratio

    @staticmethod
    def get_params(img, scale, ratio) -> tuple[int, int, int, int]:
        """(top, left, height, width) of a random crop: up to 10 tries, else the center crop."""
        _, height, width = F.get_dimensions(img)
        area = height * width
        log_ratio = fabric.log(fabric.tensor(ratio))
        for _ in range(10):
            target_area = area * _uniform(scale[0], scale[1])
            aspect_ratio = fabric.exp(fabric.empty(1).uniform_(float(log_ratio[0]), float(log_ratio[1]))).item()
            w = int(round(math.sqrt(target_area * aspect_ratio)))
            h = int(round(math.sqrt(target_area / aspect_ratio)))
            if 0 < w <= width and 0 < h <= height:
                i = _randint(height - h + 1)
                j = _randint(width - w + 1)
                return i, j, h, w
        in_ratio = float(width) / float(height)
        if in_ratio < min(ratio):
            w = width
            h = int(round(w / min(ratio)))
        elif in_ratio > max(ratio):
            h = height
            w = int(round(h * max(ratio)))
        else:
            w, h = width, height
        return (height - h) // 2, (width - w) // 2, h, w

    def forward(self, img):
        i, j, h, w = self.get_params(img, self.scale, self.ratio)
        return F.resized_crop(img, i, j, h, w, self.size, self.interpolation, antialias=self.antialias)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(size={self.size}, scale={tuple(round(s, 4) for s in self.scale)}, "
                f"ratio={tuple(round(r, 4) for r in self.ratio)}, interpolation={self.interpolation.value}, "
                f"antialias={self.antialias})")


class FiveCrop(Module):
    """The four corner crops and the center crop."""

    def __init__(self, size):
        super().__init__()
        self.size = _setup_size(size, error_msg="Please provide only two dimensions (h, w) for size.")

    def forward(self, img):
        return F.five_crop(img, self.size)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(size={self.size})"


class TenCrop(Module):
    """:class:`FiveCrop` of the image and of its flipped copy."""

    def __init__(self, size, vertical_flip: bool = False):
        super().__init__()
        self.size = _setup_size(size, error_msg="Please provide only two dimensions (h, w) for size.")
        self.vertical_flip = vertical_flip

    def forward(self, img):
        return F.ten_crop(img, self.size, self.vertical_flip)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(size={self.size}, vertical_flip={self.vertical_flip})"


class ColorJitter(Module):
    """Random brightness, contrast, saturation and hue, applied in a random order."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0) -> None:
        super().__init__()
        self.brightness = self._check_input(brightness, "brightness")
        self.contrast = self._check_input(contrast, "contrast")
        self.saturation = self._check_input(saturation, "saturation")
        self.hue = self._check_input(hue, "hue", center=0, bound=(-0.5, 0.5), clip_first_on_zero=False)

    @staticmethod
    def _check_input(value, name, center=1, bound=(0, float("inf")), clip_first_on_zero=True):
        if isinstance(value, numbers.Number):
            if value < 0:
                raise ValueError(f"If {name} is a single number, it must be non negative.")
            value = [center - float(value), center + float(value)]
            if clip_first_on_zero:
                value[0] = max(value[0], 0.0)
        elif isinstance(value, (tuple, list)) and len(value) == 2:
            value = [float(value[0]), float(value[1])]
        else:
            raise TypeError(f"{name} should be a single number or a list/tuple with length 2.")
        if not bound[0] <= value[0] <= value[1] <= bound[1]:
            raise ValueError(f"{name} values should be between {bound}, but got {value}.")
        if value[0] == value[1] == center:
            return None
        return tuple(value)

    @staticmethod
    def get_params(brightness, contrast, saturation, hue):
        """The order (``randperm(4)``) then each factor, drawn in this order."""
        fn_idx = fabric.randperm(4)
        b = None if brightness is None else _uniform(brightness[0], brightness[1])
        c = None if contrast is None else _uniform(contrast[0], contrast[1])
        s = None if saturation is None else _uniform(saturation[0], saturation[1])
        h = None if hue is None else _uniform(hue[0], hue[1])
        return fn_idx, b, c, s, h

    def forward(self, img):
        fn_idx, b, c, s, h = self.get_params(self.brightness, self.contrast, self.saturation, self.hue)
        for fn_id in fn_idx.tolist():
            if fn_id == 0 and b is not None:
                img = F.adjust_brightness(img, b)
            elif fn_id == 1 and c is not None:
                img = F.adjust_contrast(img, c)
            elif fn_id == 2 and s is not None:
                img = F.adjust_saturation(img, s)
            elif fn_id == 3 and h is not None:
                img = F.adjust_hue(img, h)
        return img

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(brightness={self.brightness}, contrast={self.contrast}, "
                f"saturation={self.saturation}, hue={self.hue})")


class RandomRotation(Module):
    """Rotate by an angle drawn uniformly from ``degrees``."""

    def __init__(self, degrees, interpolation=InterpolationMode.NEAREST, expand=False, center=None, fill=0):
        super().__init__()
        self.interpolation = _interp(interpolation)
        self.degrees = _setup_angle(degrees, name="degrees", req_sizes=(2,))
        if center is not None:
            _check_sequence_input(center, "center", req_sizes=(2,))
        self.center = center
        self.expand = expand
        if fill is None:
            fill = 0
        elif not isinstance(fill, (Sequence, numbers.Number)):
            raise TypeError("Fill should be either a sequence or a number.")
        self.fill = fill

    @staticmethod
    def get_params(degrees: list[float]) -> float:
        return float(_uniform(float(degrees[0]), float(degrees[1])))

    def forward(self, img):
        fill = _tensor_fill(img, self.fill)
        angle = self.get_params(self.degrees)
        return F.rotate(img, angle, self.interpolation, self.expand, self.center, fill)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(degrees={self.degrees}, interpolation={self.interpolation.value}, "
                f"expand={self.expand}" + (f", center={self.center}" if self.center is not None else "")
                + (f", fill={self.fill}" if self.fill is not None else "") + ")")


class RandomAffine(Module):
    """Random rotation, translation, scale and shear, keeping the center fixed."""

    def __init__(self, degrees, translate=None, scale=None, shear=None, interpolation=InterpolationMode.NEAREST,
                 fill=0, center=None):
        super().__init__()
        self.interpolation = _interp(interpolation)
        self.degrees = _setup_angle(degrees, name="degrees", req_sizes=(2,))
        if translate is not None:
            _check_sequence_input(translate, "translate", req_sizes=(2,))
            for t in translate:
                if not (0.0 <= t <= 1.0):
                    raise ValueError("translation values should be between 0 and 1")
        self.translate = translate
        if scale is not None:
            _check_sequence_input(scale, "scale", req_sizes=(2,))
            for s in scale:
                if s <= 0:
                    raise ValueError("scale values should be positive")
        self.scale = scale
        self.shear = _setup_angle(shear, name="shear", req_sizes=(2, 4)) if shear is not None else shear
        if fill is None:
            fill = 0
        elif not isinstance(fill, (Sequence, numbers.Number)):
            raise TypeError("Fill should be either a sequence or a number.")
        self.fill = fill
        if center is not None:
            _check_sequence_input(center, "center", req_sizes=(2,))
        self.center = center

    @staticmethod
    def get_params(degrees, translate, scale_ranges, shears, img_size):
        """(angle, (tx, ty), scale, (shear_x, shear_y)), drawn in this order; ``img_size`` is [width, height]."""
        angle = float(_uniform(float(degrees[0]), float(degrees[1])))
        if translate is not None:
            max_dx = float(translate[0] * img_size[0])
            max_dy = float(translate[1] * img_size[1])
            tx = int(round(_uniform(-max_dx, max_dx)))
            ty = int(round(_uniform(-max_dy, max_dy)))
            translations = (tx, ty)
        else:
            translations = (0, 0)
        scale = float(_uniform(scale_ranges[0], scale_ranges[1])) if scale_ranges is not None else 1.0
        shear_x = shear_y = 0.0
        if shears is not None:
            shear_x = float(_uniform(shears[0], shears[1]))
            if len(shears) == 4:
                shear_y = float(_uniform(shears[2], shears[3]))
        return angle, translations, scale, (shear_x, shear_y)

    def forward(self, img):
        fill = _tensor_fill(img, self.fill)
        _, height, width = F.get_dimensions(img)
        ret = self.get_params(self.degrees, self.translate, self.scale, self.shear, [width, height])
        return F.affine(img, *ret, interpolation=self.interpolation, fill=fill, center=self.center)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(degrees={self.degrees})"


class Grayscale(Module):
    """RGB -> greyscale with 1 or 3 output channels."""

    def __init__(self, num_output_channels: int = 1):
        super().__init__()
        self.num_output_channels = num_output_channels

    def forward(self, img):
        return F.rgb_to_grayscale(img, num_output_channels=self.num_output_channels)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(num_output_channels={self.num_output_channels})"


class RandomGrayscale(Module):
    """Greyscale (keeping the channel count) with probability ``p``."""

    def __init__(self, p: float = 0.1):
        super().__init__()
        self.p = p

    def forward(self, img):
        num_output_channels = F.get_dimensions(img)[0]
        if _rand_below(self.p):
            return F.rgb_to_grayscale(img, num_output_channels=num_output_channels)
        return img

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(p={self.p})"


class RandomErasing(Module):
    """With probability ``p``, erase a random rectangle of a tensor image
    (``value``: a number, per-channel values, or ``'random'`` for normal noise)."""

    def __init__(self, p=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0, inplace=False):
        super().__init__()
        if not isinstance(value, (numbers.Number, str, tuple, list)):
            raise TypeError("Argument value should be either a number or str or a sequence")
        if isinstance(value, str) and value != "random":
            raise ValueError("If value is str, it should be 'random'")
        if not isinstance(scale, Sequence):
            raise TypeError("Scale should be a sequence")
        if not isinstance(ratio, Sequence):
            raise TypeError("Ratio should be a sequence")
        if (scale[0] > scale[1]) or (ratio[0] > ratio[1]):
            warnings.warn("Scale and ratio should be of kind (min, max)", stacklevel=2)
        if scale[0] < 0 or scale[1] > 1:
            raise ValueError("Scale should be between 0 and 1")
        if p < 0 or p > 1:
            raise ValueError("Random erasing probability should be between 0 and 1")
        self.p = p
        self.scale = scale
        self.ratio = ratio
        self.value = value
        self.inplace = inplace

    @staticmethod
    def get_params(img, scale, ratio, value=None):
        img_c, img_h, img_w = img.shape[-3], img.shape[-2], img.shape[-1]
        area = img_h * img_w
        log_ratio = fabric.log(fabric.tensor(ratio))
        for _ in range(10):
            erase_area = area * _uniform(scale[0], scale[1])
            aspect_ratio = fabric.exp(fabric.empty(1).uniform_(float(log_ratio[0]), float(log_ratio[1]))).item()
            h = int(round(math.sqrt(erase_area * aspect_ratio)))
            w = int(round(math.sqrt(erase_area / aspect_ratio)))
            if not (h < img_h and w < img_w):
                continue
            if value is None:
                v = fabric.empty([img_c, h, w], dtype=fabric.float32).normal_()
            else:
                v = fabric.tensor(value)[:, None, None]
            i = _randint(img_h - h + 1)
            j = _randint(img_w - w + 1)
            return i, j, h, w, v
        return 0, 0, img_h, img_w, img

    def forward(self, img):
        if _rand_below(self.p):
            if isinstance(self.value, (int, float)):
                value = [float(self.value)]
            elif isinstance(self.value, str):
                value = None
            else:
                value = [float(v) for v in list(self.value)]
            if value is not None and len(value) not in (1, img.shape[-3]):
                raise ValueError("If value is a sequence, it should have either a single value or "
                                 f"{img.shape[-3]} (number of input channels)")
            x, y, h, w, v = self.get_params(img, scale=self.scale, ratio=self.ratio, value=value)
            return F.erase(img, x, y, h, w, v, self.inplace)
        return img

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(p={self.p}, scale={self.scale}, ratio={self.ratio}, value={self.value}, "
                f"inplace={self.inplace})")


class GaussianBlur(Module):
    """Gaussian blur with a sigma drawn uniformly from ``sigma``."""

    def __init__(self, kernel_size, sigma=(0.1, 2.0)):
        super().__init__()
        self.kernel_size = _setup_size(kernel_size, "Kernel size should be a tuple/list of two integers")
        for ks in self.kernel_size:
            if ks <= 0 or ks % 2 == 0:
                raise ValueError("Kernel size value should be an odd and positive number.")
        if isinstance(sigma, numbers.Number):
            if sigma <= 0:
                raise ValueError("If sigma is a single number, it must be positive.")
            sigma = (sigma, sigma)
        elif isinstance(sigma, Sequence) and len(sigma) == 2:
            if not 0.0 < sigma[0] <= sigma[1]:
                raise ValueError("sigma values should be positive and of the form (min, max).")
        else:
            raise ValueError("sigma should be a single number or a list/tuple with length 2.")
        self.sigma = sigma

    @staticmethod
    def get_params(sigma_min: float, sigma_max: float) -> float:
        return _uniform(sigma_min, sigma_max)

    def forward(self, img):
        sigma = self.get_params(self.sigma[0], self.sigma[1])
        return F.gaussian_blur(img, self.kernel_size, [sigma, sigma])

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(kernel_size={self.kernel_size}, sigma={self.sigma})"


class _RandomPointOp(Module):
    """Apply a functional op with probability ``p`` (``rand(1) < p``)."""

    def __init__(self, p: float = 0.5):
        super().__init__()
        self.p = p

    def _op(self, img):
        raise NotImplementedError  # each subclass names its op

    def forward(self, img):
        if _rand_below(self.p):
            return self._op(img)
        return img

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(p={self.p})"


class RandomInvert(_RandomPointOp):
    """Invert the colors with probability ``p``."""

    def _op(self, img):
        return F.invert(img)


class RandomPosterize(_RandomPointOp):
    """Posterize to ``bits`` with probability ``p``."""

    def __init__(self, bits: int, p: float = 0.5):
        super().__init__(p)
        self.bits = bits

    def _op(self, img):
        return F.posterize(img, self.bits)


class RandomSolarize(_RandomPointOp):
    """Solarize above ``threshold`` with probability ``p``."""

    def __init__(self, threshold: float, p: float = 0.5):
        super().__init__(p)
        self.threshold = threshold

    def _op(self, img):
        return F.solarize(img, self.threshold)


class RandomAdjustSharpness(_RandomPointOp):
    """Adjust the sharpness by ``sharpness_factor`` with probability ``p``."""

    def __init__(self, sharpness_factor: float, p: float = 0.5):
        super().__init__(p)
        self.sharpness_factor = sharpness_factor

    def _op(self, img):
        return F.adjust_sharpness(img, self.sharpness_factor)


class RandomAutocontrast(_RandomPointOp):
    """Autocontrast with probability ``p``."""

    def _op(self, img):
        return F.autocontrast(img)


class RandomEqualize(_RandomPointOp):
    """Equalize the histogram with probability ``p``."""

    def _op(self, img):
        return F.equalize(img)
