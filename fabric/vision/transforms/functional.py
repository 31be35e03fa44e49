"""``torchvision.transforms.functional``: each function takes a tensor
(..., C, H, W), a PIL image (Pillow, the ``vision`` extra) or, as a fabric
extension, a NumPy HxW / HxWxC array (what fabric's datasets return without
Pillow; it goes through the tensor code and comes back as an array of the
same dtype).

Example::

    >>> import fabric
    >>> from fabric.vision.transforms import functional as TF
    >>> TF.center_crop(fabric.arange(16.0).reshape(1, 4, 4), [2, 2])
    tensor([[[ 5.,  6.],
             [ 9., 10.]]])
"""
from __future__ import annotations

import math
import numbers
import warnings
from enum import Enum
from typing import Any

import numpy as np

import fabric

from ..._tensor import Tensor
from . import _functional_pil as F_pil
from . import _functional_tensor as F_t

__all__ = ["InterpolationMode", "get_dimensions", "get_image_size", "get_image_num_channels", "to_tensor",
           "pil_to_tensor", "convert_image_dtype", "to_pil_image", "normalize", "resize", "pad", "crop",
           "center_crop", "resized_crop", "hflip", "vflip", "five_crop", "ten_crop", "adjust_brightness",
           "adjust_contrast", "adjust_saturation", "adjust_hue", "adjust_gamma", "rotate", "affine", "to_grayscale",
           "rgb_to_grayscale", "erase", "gaussian_blur", "invert", "posterize", "solarize", "adjust_sharpness",
           "autocontrast", "equalize"]


class InterpolationMode(Enum):
    """Interpolation modes (the value is the mode name PyTorch's
    ``interpolate`` uses; PIL images use the matching Pillow filter)."""

    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


_PIL_CODES = {InterpolationMode.NEAREST: 0, InterpolationMode.NEAREST_EXACT: 0, InterpolationMode.BILINEAR: 2,
              InterpolationMode.BICUBIC: 3, InterpolationMode.BOX: 4, InterpolationMode.HAMMING: 5,
              InterpolationMode.LANCZOS: 1}
pil_modes_mapping = _PIL_CODES
_FROM_INT = {0: InterpolationMode.NEAREST, 2: InterpolationMode.BILINEAR, 3: InterpolationMode.BICUBIC,
             4: InterpolationMode.BOX, 5: InterpolationMode.HAMMING, 1: InterpolationMode.LANCZOS}


def _interpolation_modes_from_int(i: int) -> InterpolationMode:
    return _FROM_INT[i]


def _interp(interpolation) -> InterpolationMode:
    if isinstance(interpolation, int):
        return _interpolation_modes_from_int(interpolation)
    if not isinstance(interpolation, InterpolationMode):
        raise TypeError("Argument interpolation should be a InterpolationMode or a corresponding Pillow integer "
                        "constant")
    return interpolation


def _is_numpy_image(img: Any) -> bool:
    return isinstance(img, np.ndarray) and img.ndim in (2, 3)


def _numpy_in(img: np.ndarray) -> Tensor:
    if img.ndim not in (2, 3):
        raise ValueError(f"pic should be 2/3 dimensional. Got {img.ndim} dimensions.")
    return fabric.from_numpy(np.ascontiguousarray(img.transpose(2, 0, 1) if img.ndim == 3 else img[None]))


def _numpy_out(t: Tensor, like: np.ndarray) -> np.ndarray:
    a = t.detach().cpu().numpy()
    return np.ascontiguousarray(a.transpose(1, 2, 0) if like.ndim == 3 else a[0])


def _dispatch(img, tensor_fn, pil_fn, *args, **kwargs):
    """Run the tensor or the PIL version of an op; NumPy images go through the
    tensor version and come back as arrays."""
    if isinstance(img, Tensor):
        return tensor_fn(img, *args, **kwargs)
    if isinstance(img, np.ndarray):
        return _numpy_out(tensor_fn(_numpy_in(img), *args, **kwargs), img)
    if pil_fn is None:
        raise TypeError(f"img should be Tensor Image. Got {type(img)}")
    if not F_pil._is_pil_image(img):
        raise TypeError(f"img should be PIL Image or Tensor. Got {type(img)}")
    return pil_fn(img, *args, **kwargs)


def get_dimensions(img) -> list[int]:
    """[channels, height, width] of an image."""
    if isinstance(img, Tensor):
        return F_t.get_dimensions(img)
    if isinstance(img, np.ndarray):
        return F_t.get_dimensions(_numpy_in(img))
    return F_pil.get_dimensions(img)


def get_image_size(img) -> list[int]:
    """[width, height] of an image."""
    c, h, w = get_dimensions(img)
    return [w, h]


def get_image_num_channels(img) -> int:
    return get_dimensions(img)[0]


def to_tensor(pic) -> Tensor:
    """PIL image or NumPy HxW[xC] array -> CxHxW tensor; uint8 becomes the
    default float dtype scaled to [0, 1], other dtypes are kept."""
    if not (F_pil._is_pil_image(pic) or isinstance(pic, np.ndarray)):
        raise TypeError(f"pic should be PIL Image or ndarray. Got {type(pic)}")
    if isinstance(pic, np.ndarray):
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        arr = pic
    else:
        mode_dtypes = {"I": np.int32, "I;16": np.int16 if pic.mode == "I;16" else np.uint16, "F": np.float32}
        arr = np.array(pic, mode_dtypes.get(pic.mode, np.uint8), copy=True)
        if pic.mode == "1":
            arr = 255 * arr
        arr = arr.reshape(pic.size[1], pic.size[0], len(pic.getbands()))
    if arr.ndim == 2:
        arr = arr[:, :, None]
    chw = arr.transpose(2, 0, 1)
    if chw.dtype == np.uint8:
        dt = fabric.get_default_dtype().to_numpy()
        out = np.empty(chw.shape, dt)
        np.divide(chw, dt.type(255), out=out, dtype=dt)  # to(float) then div(255), in one pass
        return Tensor._make(out, False)
    return fabric.from_numpy(np.ascontiguousarray(chw))


def pil_to_tensor(pic) -> Tensor:
    """PIL image -> CxHxW tensor of the same dtype (no scaling)."""
    if not F_pil._is_pil_image(pic):
        raise TypeError(f"pic should be PIL Image. Got {type(pic)}")
    arr = np.array(pic, copy=True)
    if pic.mode == "1":
        arr = arr.astype(np.uint8)
    arr = arr.reshape(pic.size[1], pic.size[0], len(pic.getbands()))
    return fabric.from_numpy(np.ascontiguousarray(arr.transpose(2, 0, 1)))


def convert_image_dtype(image: Tensor, dtype=fabric.float32) -> Tensor:
    """Convert a tensor image to ``dtype``, rescaling the values (uint8 255 <-> float 1.0)."""
    if not isinstance(image, Tensor):
        raise TypeError("Input img should be Tensor Image")
    return F_t.convert_image_dtype(image, dtype)


def to_pil_image(pic, mode: str | None = None):
    """Tensor (CxHxW) or NumPy (HxWxC) image -> PIL image (floats are scaled by 255)."""
    Image = F_pil.pil()
    if isinstance(pic, Tensor):
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        if pic.ndim == 2:
            pic = pic.unsqueeze(0)
        if pic.shape[-3] > 4:
            raise ValueError(f"pic should not have > 4 channels. Got {pic.shape[-3]} channels.")
    elif isinstance(pic, np.ndarray):
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        if pic.ndim == 2:
            pic = np.expand_dims(pic, 2)
        if pic.shape[-1] > 4:
            raise ValueError(f"pic should not have > 4 channels. Got {pic.shape[-1]} channels.")
    else:
        raise TypeError(f"pic should be Tensor or ndarray. Got {type(pic)}.")
    npimg = pic
    if isinstance(pic, Tensor):
        if pic.is_floating_point() and mode != "F":
            pic = pic.mul(255).byte()
        npimg = np.transpose(pic.detach().cpu().numpy(), (1, 2, 0))
    if not isinstance(npimg, np.ndarray):
        raise TypeError(f"Input pic must be a torch.Tensor or NumPy ndarray, not {type(npimg)}")
    if npimg.shape[2] == 1:
        expected_mode = None
        npimg = npimg[:, :, 0]
        if npimg.dtype == np.uint8:
            expected_mode = "L"
        elif npimg.dtype == np.int16:
            expected_mode = "I;16"
        elif npimg.dtype == np.int32:
            expected_mode = "I"
        elif npimg.dtype == np.float32:
            expected_mode = "F"
        if mode is not None and mode != expected_mode:
            raise ValueError(f"Incorrect mode ({mode}) supplied for input type {np.dtype}. Should be "
                             f"{expected_mode}")
        mode = expected_mode
    elif npimg.shape[2] == 2:
        if mode is not None and mode not in ["LA"]:
            raise ValueError("Only modes ['LA'] are supported for 2D inputs")
        if mode is None and npimg.dtype == np.uint8:
            mode = "LA"
    elif npimg.shape[2] == 4:
        if mode is not None and mode not in ["RGBA", "CMYK", "RGBX"]:
            raise ValueError("Only modes ['RGBA', 'CMYK', 'RGBX'] are supported for 4D inputs")
        if mode is None and npimg.dtype == np.uint8:
            mode = "RGBA"
    else:
        if mode is not None and mode not in ["RGB", "YCbCr", "HSV"]:
            raise ValueError("Only modes ['RGB', 'YCbCr', 'HSV'] are supported for 3D inputs")
        if mode is None and npimg.dtype == np.uint8:
            mode = "RGB"
    if mode is None:
        raise TypeError(f"Input type {npimg.dtype} is not supported")
    npimg = np.ascontiguousarray(npimg)
    size = (npimg.shape[1], npimg.shape[0])
    if mode == "I;16":
        return Image.frombytes(mode, size, npimg.astype("<u2").tobytes())
    if mode in ("L", "LA", "RGB", "RGBA", "I", "F") and npimg.dtype in (np.uint8, np.int32, np.float32):
        return Image.fromarray(npimg)  # Pillow infers exactly this mode from the array
    return Image.frombytes(mode, size, npimg.astype(np.uint8).tobytes())


def normalize(tensor: Tensor, mean: list[float], std: list[float], inplace: bool = False) -> Tensor:
    """``(tensor - mean[c]) / std[c]`` per channel of a float tensor image."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"img should be Tensor Image. Got {type(tensor)}")
    return F_t.normalize(tensor, mean=mean, std=std, inplace=inplace)


def _compute_resized_output_size(image_size: tuple[int, int], size: list[int] | None,
                                 max_size: int | None = None) -> list[int]:
    h, w = image_size
    if size is None or len(size) == 1:
        short, long = (w, h) if w <= h else (h, w)
        if size is None:
            new_short, new_long = int(max_size * short / long), max_size
        else:
            requested_new_short = size if isinstance(size, int) else size[0]
            new_short, new_long = requested_new_short, int(requested_new_short * long / short)
            if max_size is not None:
                if max_size <= requested_new_short:
                    raise ValueError(f"max_size = {max_size} must be strictly greater than the requested size for the "
                                     f"smaller edge size = {size}")
                if new_long > max_size:
                    new_short, new_long = int(max_size * new_short / new_long), max_size
        new_w, new_h = (new_short, new_long) if w <= h else (new_long, new_short)
    else:
        new_w, new_h = size[1], size[0]
    return [new_h, new_w]


def resize(img, size, interpolation=InterpolationMode.BILINEAR, max_size: int | None = None,
           antialias: bool | None = True):
    """Resize to ``size`` ((h, w), or an int for the smaller edge keeping the
    aspect ratio). Tensors are antialiased by default (bilinear/bicubic), as
    torchvision >= 0.17 and as PIL always is."""
    interpolation = _interp(interpolation)
    if isinstance(size, (list, tuple)):
        if len(size) not in (1, 2):
            raise ValueError(f"Size must be an int or a 1 or 2 element tuple/list, not a {len(size)} element "
                             "tuple/list")
        if max_size is not None and len(size) != 1:
            raise ValueError("max_size should only be passed if size specifies the length of the smaller edge, "
                             "i.e. size should be an int or a sequence of length 1 in torchscript mode.")
    elif isinstance(size, int):
        size = [size]
    elif size is not None:
        raise TypeError(f"Size should be int or sequence. Got {type(size)}")
    _, image_height, image_width = get_dimensions(img)
    output_size = _compute_resized_output_size((image_height, image_width), size, max_size)
    if [image_height, image_width] == output_size:
        return img
    if F_pil._is_pil_image(img):
        if antialias is False:
            warnings.warn("Anti-alias option is always applied for PIL Image input. Argument antialias is ignored.",
                          stacklevel=2)
        return F_pil.resize(img, size=output_size, interpolation=_PIL_CODES[interpolation])
    return _dispatch(img, F_t.resize, None, size=output_size, interpolation=interpolation.value, antialias=antialias)


def pad(img, padding, fill=0, padding_mode: str = "constant"):
    """Pad all sides: ``padding`` is an int, (left/right, top/bottom) or
    (left, top, right, bottom); modes constant, edge, reflect, symmetric."""
    return _dispatch(img, F_t.pad, F_pil.pad, padding=padding, fill=fill, padding_mode=padding_mode)


def crop(img, top: int, left: int, height: int, width: int):
    """The ``height x width`` window at (top, left), zero-padded where it leaves the image."""
    inside = top >= 0 and left >= 0
    if isinstance(img, np.ndarray) and inside and top + height <= img.shape[0] and left + width <= img.shape[1]:
        return img[top:top + height, left:left + width].copy()
    return _dispatch(img, F_t.crop, F_pil.crop, top, left, height, width)


def center_crop(img, output_size):
    """Crop the center ``output_size`` (int or (h, w)), padding with 0 when the image is smaller."""
    if isinstance(output_size, numbers.Number):
        output_size = (int(output_size), int(output_size))
    elif isinstance(output_size, (tuple, list)) and len(output_size) == 1:
        output_size = (output_size[0], output_size[0])
    _, image_height, image_width = get_dimensions(img)
    crop_height, crop_width = output_size
    if crop_width > image_width or crop_height > image_height:
        padding_ltrb = [(crop_width - image_width) // 2 if crop_width > image_width else 0,
                        (crop_height - image_height) // 2 if crop_height > image_height else 0,
                        (crop_width - image_width + 1) // 2 if crop_width > image_width else 0,
                        (crop_height - image_height + 1) // 2 if crop_height > image_height else 0]
        img = pad(img, padding_ltrb, fill=0)
        _, image_height, image_width = get_dimensions(img)
        if crop_width == image_width and crop_height == image_height:
            return img
    crop_top = int(round((image_height - crop_height) / 2.0))
    crop_left = int(round((image_width - crop_width) / 2.0))
    return crop(img, crop_top, crop_left, crop_height, crop_width)


def resized_crop(img, top: int, left: int, height: int, width: int, size, interpolation=InterpolationMode.BILINEAR,
                 antialias: bool | None = True):
    """:func:`crop` then :func:`resize`."""
    img = crop(img, top, left, height, width)
    return resize(img, size, interpolation, antialias=antialias)


def hflip(img):
    """Mirror left-right."""
    if isinstance(img, np.ndarray):
        return img[:, ::-1].copy()
    return _dispatch(img, F_t.hflip, F_pil.hflip)


def vflip(img):
    """Mirror top-bottom."""
    if isinstance(img, np.ndarray):
        return img[::-1].copy()
    return _dispatch(img, F_t.vflip, F_pil.vflip)


def five_crop(img, size):
    """The four corner crops and the center crop of ``size``."""
    if isinstance(size, numbers.Number):
        size = (int(size), int(size))
    elif isinstance(size, (tuple, list)) and len(size) == 1:
        size = (size[0], size[0])
    if len(size) != 2:
        raise ValueError("Please provide only two dimensions (h, w) for size.")
    _, image_height, image_width = get_dimensions(img)
    crop_height, crop_width = size
    if crop_width > image_width or crop_height > image_height:
        raise ValueError(f"Requested crop size {size} is bigger than input size {(image_height, image_width)}")
    tl = crop(img, 0, 0, crop_height, crop_width)
    tr = crop(img, 0, image_width - crop_width, crop_height, crop_width)
    bl = crop(img, image_height - crop_height, 0, crop_height, crop_width)
    br = crop(img, image_height - crop_height, image_width - crop_width, crop_height, crop_width)
    return tl, tr, bl, br, center_crop(img, [crop_height, crop_width])


def ten_crop(img, size, vertical_flip: bool = False):
    """:func:`five_crop` of the image and of its flipped copy."""
    if isinstance(size, numbers.Number):
        size = (int(size), int(size))
    elif isinstance(size, (tuple, list)) and len(size) == 1:
        size = (size[0], size[0])
    if len(size) != 2:
        raise ValueError("Please provide only two dimensions (h, w) for size.")
    first_five = five_crop(img, size)
    img = vflip(img) if vertical_flip else hflip(img)
    return first_five + five_crop(img, size)


def adjust_brightness(img, brightness_factor: float):
    """Blend with black: 0 gives black, 1 the original."""
    return _dispatch(img, F_t.adjust_brightness, F_pil.adjust_brightness, brightness_factor)


def adjust_contrast(img, contrast_factor: float):
    """Blend with the mean grey level."""
    return _dispatch(img, F_t.adjust_contrast, F_pil.adjust_contrast, contrast_factor)


def adjust_saturation(img, saturation_factor: float):
    """Blend with the greyscale image."""
    return _dispatch(img, F_t.adjust_saturation, F_pil.adjust_saturation, saturation_factor)


def adjust_hue(img, hue_factor: float):
    """Rotate the hue by ``hue_factor`` (in [-0.5, 0.5]) of a turn, through HSV."""
    if not (-0.5 <= hue_factor <= 0.5):
        raise ValueError(f"hue_factor ({hue_factor}) is not in [-0.5, 0.5].")
    return _dispatch(img, F_t.adjust_hue, F_pil.adjust_hue, hue_factor)


def adjust_gamma(img, gamma: float, gain: float = 1):
    """``gain * img ** gamma`` on [0, 1] intensities."""
    return _dispatch(img, F_t.adjust_gamma, F_pil.adjust_gamma, gamma, gain)


def _get_inverse_affine_matrix(center: list[float], angle: float, translate: list[float], scale: float,
                               shear: list[float], inverted: bool = True) -> list[float]:
    # The affine map is T * C * R * S * Sh * C^-1 (translate, center, rotate, scale, shear); the grid
    # sampler needs its inverse, written out here in closed form (det(R * Sh) == 1).
    rot = math.radians(angle)
    sx = math.radians(shear[0])
    sy = math.radians(shear[1])
    cx, cy = center
    tx, ty = translate
    a = math.cos(rot - sy) / math.cos(sy)
    b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    c = math.sin(rot - sy) / math.cos(sy)
    d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    if inverted:
        matrix = [x / scale for x in [d, -b, 0.0, -c, a, 0.0]]
        matrix[2] += matrix[0] * (-cx - tx) + matrix[1] * (-cy - ty)
        matrix[5] += matrix[3] * (-cx - tx) + matrix[4] * (-cy - ty)
        matrix[2] += cx
        matrix[5] += cy
    else:
        matrix = [x * scale for x in [a, b, 0.0, c, d, 0.0]]
        matrix[2] += matrix[0] * (-cx) + matrix[1] * (-cy)
        matrix[5] += matrix[3] * (-cx) + matrix[4] * (-cy)
        matrix[2] += cx + tx
        matrix[5] += cy + ty
    return matrix


def rotate(img, angle: float, interpolation=InterpolationMode.NEAREST, expand: bool = False, center=None,
           fill=None):
    """Rotate counter-clockwise by ``angle`` degrees around ``center`` (default: the image center)."""
    interpolation = _interp(interpolation)
    if not isinstance(angle, (int, float)):
        raise TypeError("Argument angle should be int or float")
    if center is not None and not isinstance(center, (list, tuple)):
        raise TypeError("Argument center should be a sequence")
    if F_pil._is_pil_image(img):
        return F_pil.rotate(img, angle=angle, interpolation=_PIL_CODES[interpolation], expand=expand, center=center,
                            fill=fill)
    center_f = [0.0, 0.0]
    if center is not None:
        _, height, width = get_dimensions(img)
        center_f = [1.0 * (c - s * 0.5) for c, s in zip(center, [width, height])]
    # rotate and affine turn opposite ways, hence -angle
    matrix = _get_inverse_affine_matrix(center_f, -angle, [0.0, 0.0], 1.0, [0.0, 0.0])
    return _dispatch(img, F_t.rotate, None, matrix=matrix, interpolation=interpolation.value, expand=expand,
                     fill=fill)


def affine(img, angle: float, translate: list[int], scale: float, shear, interpolation=InterpolationMode.NEAREST,
           fill=None, center=None):
    """Rotate (clockwise, degrees), translate, scale and shear, keeping the center fixed."""
    interpolation = _interp(interpolation)
    if not isinstance(angle, (int, float)):
        raise TypeError("Argument angle should be int or float")
    if not isinstance(translate, (list, tuple)):
        raise TypeError("Argument translate should be a sequence")
    if len(translate) != 2:
        raise ValueError("Argument translate should be a sequence of length 2")
    if scale <= 0.0:
        raise ValueError("Argument scale should be positive")
    if not isinstance(shear, (numbers.Number, list, tuple)):
        raise TypeError("Shear should be either a single value or a sequence of two values")
    angle = float(angle)
    translate = list(translate)
    if isinstance(shear, numbers.Number):
        shear = [shear, 0.0]
    shear = list(shear)
    if len(shear) == 1:
        shear = [shear[0], shear[0]]
    if len(shear) != 2:
        raise ValueError(f"Shear should be a sequence containing two values. Got {shear}")
    if center is not None and not isinstance(center, (list, tuple)):
        raise TypeError("Argument center should be a sequence")
    _, height, width = get_dimensions(img)
    if F_pil._is_pil_image(img):
        if center is None:
            center = [width * 0.5, height * 0.5]
        matrix = _get_inverse_affine_matrix(center, angle, translate, scale, shear)
        return F_pil.affine(img, matrix=matrix, interpolation=_PIL_CODES[interpolation], fill=fill)
    center_f = [0.0, 0.0]
    if center is not None:
        center_f = [1.0 * (c - s * 0.5) for c, s in zip(center, [width, height])]
    translate_f = [1.0 * t for t in translate]
    matrix = _get_inverse_affine_matrix(center_f, angle, translate_f, scale, shear)
    return _dispatch(img, F_t.affine, None, matrix=matrix, interpolation=interpolation.value, fill=fill)


def to_grayscale(img, num_output_channels: int = 1):
    """PIL image of any mode -> greyscale PIL image (1 or 3 channels)."""
    if F_pil._is_pil_image(img):
        return F_pil.to_grayscale(img, num_output_channels)
    raise TypeError("Input should be PIL Image")


def rgb_to_grayscale(img, num_output_channels: int = 1):
    """RGB -> greyscale with the ITU-R 601-2 luma weights (0.2989, 0.587, 0.114)."""
    return _dispatch(img, F_t.rgb_to_grayscale, F_pil.to_grayscale, num_output_channels)


def erase(img: Tensor, i: int, j: int, h: int, w: int, v: Tensor, inplace: bool = False) -> Tensor:
    """Set the ``h x w`` window at (i, j) of a tensor image to ``v``."""
    if not isinstance(img, Tensor):
        raise TypeError(f"img should be Tensor Image. Got {type(img)}")
    return F_t.erase(img, i, j, h, w, v, inplace=inplace)


def gaussian_blur(img, kernel_size, sigma=None):
    """Blur with a Gaussian kernel (odd ``kernel_size``), reflect-padded so the size is kept."""
    if not isinstance(kernel_size, (int, list, tuple)):
        raise TypeError(f"kernel_size should be int or a sequence of integers. Got {type(kernel_size)}")
    if isinstance(kernel_size, int):
        kernel_size = [kernel_size, kernel_size]
    if len(kernel_size) != 2:
        raise ValueError(f"If kernel_size is a sequence its length should be 2. Got {len(kernel_size)}")
    for ksize in kernel_size:
        if ksize % 2 == 0 or ksize < 0:
            raise ValueError(f"kernel_size should have odd and positive integers. Got {kernel_size}")
    if sigma is None:
        sigma = [ksize * 0.15 + 0.35 for ksize in kernel_size]
    if not isinstance(sigma, (int, float, list, tuple)):
        raise TypeError(f"sigma should be either float or sequence of floats. Got {type(sigma)}")
    if isinstance(sigma, (int, float)):
        sigma = [float(sigma), float(sigma)]
    if isinstance(sigma, (list, tuple)) and len(sigma) == 1:
        sigma = [sigma[0], sigma[0]]
    if len(sigma) != 2:
        raise ValueError(f"If sigma is a sequence, its length should be 2. Got {len(sigma)}")
    for s in sigma:
        if s <= 0.0:
            raise ValueError(f"sigma should have positive values. Got {sigma}")
    if F_pil._is_pil_image(img):
        return to_pil_image(F_t.gaussian_blur(pil_to_tensor(img), kernel_size, sigma), mode=img.mode)
    return _dispatch(img, F_t.gaussian_blur, None, kernel_size, sigma)


def invert(img):
    """``max - img`` (max 255 for uint8, 1.0 for floats)."""
    return _dispatch(img, F_t.invert, F_pil.invert)


def posterize(img, bits: int):
    """Keep the ``bits`` high bits of each channel (uint8 images)."""
    if not 0 <= bits <= 8:
        raise ValueError(f"The number if bits should be between 0 and 8. Got {bits}")
    return _dispatch(img, F_t.posterize, F_pil.posterize, bits)


def solarize(img, threshold: float):
    """Invert the pixels at or above ``threshold``."""
    return _dispatch(img, F_t.solarize, F_pil.solarize, threshold)


def adjust_sharpness(img, sharpness_factor: float):
    """Blend with a smoothed copy (0: blurred, 1: original, 2: sharper)."""
    return _dispatch(img, F_t.adjust_sharpness, F_pil.adjust_sharpness, sharpness_factor)


def autocontrast(img):
    """Stretch each channel to the full range."""
    return _dispatch(img, F_t.autocontrast, F_pil.autocontrast)


def equalize(img):
    """Histogram-equalize each channel (uint8 images)."""
    return _dispatch(img, F_t.equalize, F_pil.equalize)
