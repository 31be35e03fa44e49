"""Image operations on PIL images, through Pillow itself (the optional
``vision`` extra: ``pip install 'fabric-dl[vision]'``), as torchvision does.

Example::

    >>> from fabric.vision.transforms import _functional_pil as F_pil
    >>> F_pil._is_pil_image(3)
    False
"""
from __future__ import annotations

import numbers

import numpy as np

_HINT = "this needs Pillow, fabric's optional 'vision' extra: pip install 'fabric-dl[vision]' (or Pillow itself)"


def pil():
    """The ``PIL.Image`` module, or ImportError naming the extra to install."""
    try:
        from PIL import Image
    except ImportError as e:
        raise ImportError(f"fabric.vision: {_HINT}") from e
    return Image


def _is_pil_image(img) -> bool:
    return type(img).__module__.startswith("PIL.") and hasattr(img, "getbands")


def _check(img) -> None:
    if not _is_pil_image(img):
        raise TypeError(f"img should be PIL Image. Got {type(img)}")


def get_dimensions(img) -> list[int]:
    _check(img)
    channels = len(img.getbands()) if hasattr(img, "getbands") else img.channels
    width, height = img.size
    return [channels, height, width]


def get_image_size(img) -> list[int]:
    _check(img)
    return list(img.size)


def get_image_num_channels(img) -> int:
    _check(img)
    return len(img.getbands())


def hflip(img):
    _check(img)
    return img.transpose(pil().Transpose.FLIP_LEFT_RIGHT)


def vflip(img):
    _check(img)
    return img.transpose(pil().Transpose.FLIP_TOP_BOTTOM)


def adjust_brightness(img, brightness_factor: float):
    _check(img)
    from PIL import ImageEnhance

    return ImageEnhance.Brightness(img).enhance(brightness_factor)


def adjust_contrast(img, contrast_factor: float):
    _check(img)
    from PIL import ImageEnhance

    return ImageEnhance.Contrast(img).enhance(contrast_factor)


def adjust_saturation(img, saturation_factor: float):
    _check(img)
    from PIL import ImageEnhance

    return ImageEnhance.Color(img).enhance(saturation_factor)


def adjust_hue(img, hue_factor: float):
    if not (-0.5 <= hue_factor <= 0.5):
        raise ValueError(f"hue_factor ({hue_factor}) is not in [-0.5, 0.5].")
    _check(img)
    Image = pil()
    input_mode = img.mode
    if input_mode in {"L", "1", "I", "F"}:
        return img
    h, s, v = img.convert("HSV").split()
    np_h = np.array(h, dtype=np.uint8)
    with np.errstate(over="ignore"):  # uint8 wrap-around is the intended hue rotation
        np_h += np.array(hue_factor * 255).astype(np.int8).astype(np.uint8)
    h = Image.fromarray(np_h, "L")
    return Image.merge("HSV", (h, s, v)).convert(input_mode)


def adjust_gamma(img, gamma: float, gain: float = 1.0):
    _check(img)
    if gamma < 0:
        raise ValueError("Gamma should be a non-negative real number")
    input_mode = img.mode
    img = img.convert("RGB")
    gamma_map = [int((255 + 1 - 1e-3) * gain * pow(ele / 255.0, gamma)) for ele in range(256)] * 3
    return img.point(gamma_map).convert(input_mode)


def _parse_fill(fill, img, name: str = "fillcolor") -> dict:
    num_channels = get_image_num_channels(img)
    if fill is None:
        fill = 0
    if isinstance(fill, (int, float)) and num_channels > 1:
        fill = tuple([fill] * num_channels)
    if isinstance(fill, (list, tuple)):
        if len(fill) == 1:
            fill = fill * num_channels
        elif len(fill) != num_channels:
            raise ValueError("The number of elements in 'fill' does not match the number of channels of the image "
                             f"({len(fill)} != {num_channels})")
        fill = tuple(fill)
    if img.mode != "F":
        fill = tuple(int(x) for x in fill) if isinstance(fill, (list, tuple)) else int(fill)
    return {name: fill}


def pad(img, padding, fill=0, padding_mode: str = "constant"):
    _check(img)
    Image = pil()
    if not isinstance(padding, (numbers.Number, tuple, list)):
        raise TypeError("Got inappropriate padding arg")
    if fill is not None and not isinstance(fill, (numbers.Number, str, tuple, list)):
        raise TypeError("Got inappropriate fill arg")
    if not isinstance(padding_mode, str):
        raise TypeError("Got inappropriate padding_mode arg")
    if isinstance(padding, list):
        padding = tuple(padding)
    if isinstance(padding, tuple) and len(padding) not in (1, 2, 4):
        raise ValueError(f"Padding must be an int or a 1, 2, or 4 element tuple, not a {len(padding)} element tuple")
    if isinstance(padding, tuple) and len(padding) == 1:
        padding = padding[0]
    if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
        raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
    if not isinstance(padding, (tuple, list)):
        pad_left = pad_right = pad_top = pad_bottom = int(padding)
    elif len(padding) == 2:
        pad_left = pad_right = padding[0]
        pad_top = pad_bottom = padding[1]
    else:
        pad_left, pad_top, pad_right, pad_bottom = padding
    if padding_mode == "constant":
        from PIL import ImageOps

        opts = _parse_fill(fill, img, name="fill")
        if img.mode == "P":
            palette = img.getpalette()
            image = ImageOps.expand(img, border=(pad_left, pad_top, pad_right, pad_bottom), **opts)
            image.putpalette(palette)
            return image
        return ImageOps.expand(img, border=(pad_left, pad_top, pad_right, pad_bottom), **opts)
    p = [pad_left, pad_top, pad_right, pad_bottom]
    cropping = -np.minimum(p, 0)
    if cropping.any():
        crop_left, crop_top, crop_right, crop_bottom = cropping
        img = img.crop((crop_left, crop_top, img.width - crop_right, img.height - crop_bottom))
    pad_left, pad_top, pad_right, pad_bottom = np.maximum(p, 0)
    palette = img.getpalette() if img.mode == "P" else None
    arr = np.asarray(img)
    widths = ((pad_top, pad_bottom), (pad_left, pad_right)) + (((0, 0),) if arr.ndim == 3 else ())
    out = Image.fromarray(np.pad(arr, widths, mode=padding_mode))
    if palette is not None:
        out.putpalette(palette)
    return out


def crop(img, top: int, left: int, height: int, width: int):
    _check(img)
    return img.crop((left, top, left + width, top + height))


def resize(img, size: list[int], interpolation: int):
    _check(img)
    if not (isinstance(size, list) and len(size) == 2):
        raise TypeError(f"Got inappropriate size arg: {size}")
    return img.resize(tuple(size[::-1]), interpolation)


def affine(img, matrix: list[float], interpolation: int, fill=None):
    _check(img)
    opts = _parse_fill(fill, img)
    return img.transform(img.size, pil().Transform.AFFINE, matrix, interpolation, **opts)


def rotate(img, angle: float, interpolation: int, expand: bool = False, center=None, fill=None):
    _check(img)
    opts = _parse_fill(fill, img)
    return img.rotate(angle, interpolation, expand, center, **opts)


def to_grayscale(img, num_output_channels: int):
    _check(img)
    Image = pil()
    if num_output_channels == 1:
        return img.convert("L")
    if num_output_channels == 3:
        np_img = np.array(img.convert("L"), dtype=np.uint8)
        return Image.fromarray(np.dstack([np_img, np_img, np_img]), "RGB")
    raise ValueError("num_output_channels should be either 1 or 3")


def invert(img):
    _check(img)
    from PIL import ImageOps

    return ImageOps.invert(img)


def posterize(img, bits: int):
    _check(img)
    from PIL import ImageOps

    return ImageOps.posterize(img, bits)


def solarize(img, threshold: int):
    _check(img)
    from PIL import ImageOps

    return ImageOps.solarize(img, threshold)


def adjust_sharpness(img, sharpness_factor: float):
    _check(img)
    from PIL import ImageEnhance

    return ImageEnhance.Sharpness(img).enhance(sharpness_factor)


def autocontrast(img):
    _check(img)
    from PIL import ImageOps

    return ImageOps.autocontrast(img)


def equalize(img):
    _check(img)
    from PIL import ImageOps

    return ImageOps.equalize(img)
