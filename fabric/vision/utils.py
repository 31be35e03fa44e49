"""``torchvision.utils``: ``make_grid`` (tensors only), ``save_image`` and
``draw_bounding_boxes`` (these two through Pillow, the ``vision`` extra).

Example::

    >>> import fabric
    >>> from fabric.vision.utils import make_grid
    >>> make_grid(fabric.zeros(5, 3, 4, 4), nrow=4, padding=1).shape
    fabric.Size([3, 11, 21])
"""
from __future__ import annotations

import math
import warnings

import numpy as np

import fabric

from .._tensor import Tensor
from .transforms import functional as TF
from .transforms._functional_pil import pil

__all__ = ["make_grid", "save_image", "draw_bounding_boxes"]


def make_grid(tensor, nrow: int = 8, padding: int = 2, normalize: bool = False, value_range=None,
              scale_each: bool = False, pad_value: float = 0.0) -> Tensor:
    """Tile a batch (B, C, H, W) or a list of images into one (C, H', W')
    image, ``nrow`` per row, ``padding`` pixels of ``pad_value`` between them.
    ``normalize`` rescales to [0, 1] by ``value_range`` (default: min/max, of
    each image when ``scale_each``). One-channel images become three."""
    if not isinstance(tensor, Tensor):
        if isinstance(tensor, list):
            for t in tensor:
                if not isinstance(t, Tensor):
                    raise TypeError(f"tensor or list of tensors expected, got a list containing {type(t)}")
        else:
            raise TypeError(f"tensor or list of tensors expected, got {type(tensor)}")
    if isinstance(tensor, list):
        tensor = fabric.stack(tensor, dim=0)
    if tensor.ndim == 2:
        tensor = tensor.unsqueeze(0)
    if tensor.ndim == 3:
        if tensor.shape[0] == 1:
            tensor = fabric.cat((tensor, tensor, tensor), 0)
        tensor = tensor.unsqueeze(0)
    if tensor.ndim == 4 and tensor.shape[1] == 1:
        tensor = fabric.cat((tensor, tensor, tensor), 1)
    if normalize is True:
        tensor = tensor.clone()
        if value_range is not None and not isinstance(value_range, tuple):
            raise TypeError("value_range has to be a tuple (min, max) if specified. min and max are numbers")

        def norm_ip(img, low, high):
            img.clamp_(min=low, max=high)
            img.sub_(low).div_(max(high - low, 1e-5))

        def norm_range(t, vr):
            if vr is not None:
                norm_ip(t, vr[0], vr[1])
            else:
                norm_ip(t, float(t.min()), float(t.max()))

        if scale_each is True:
            for t in tensor:
                norm_range(t, value_range)
        else:
            norm_range(tensor, value_range)
    if tensor.shape[0] == 1:
        return tensor.squeeze(0)
    nmaps = tensor.shape[0]
    xmaps = min(nrow, nmaps)
    ymaps = int(math.ceil(float(nmaps) / xmaps))
    height, width = int(tensor.shape[2] + padding), int(tensor.shape[3] + padding)
    num_channels = tensor.shape[1]
    grid = tensor.new_full((num_channels, height * ymaps + padding, width * xmaps + padding), pad_value)
    k = 0
    for y in range(ymaps):
        for x in range(xmaps):
            if k >= nmaps:
                break
            top, left = y * height + padding, x * width + padding
            grid[:, top:top + height - padding, left:left + width - padding] = tensor[k]
            k += 1
    return grid


def save_image(tensor, fp, format: str | None = None, **kwargs) -> None:
    """Save a tensor (or batch, tiled by :func:`make_grid` with ``kwargs``) as
    an image file; values in [0, 1] map to 0..255 (rounded)."""
    Image = pil()
    grid = make_grid(tensor, **kwargs)
    ndarr = grid.detach().mul(255).add_(0.5).clamp_(0, 255).permute(1, 2, 0).to("cpu", fabric.uint8).numpy()
    Image.fromarray(np.ascontiguousarray(ndarr)).save(fp, format=format)


def _generate_color_palette(num_objects: int) -> list[tuple[int, int, int]]:
    palette = np.array([2 ** 25 - 1, 2 ** 15 - 1, 2 ** 21 - 1], np.int64)
    return [tuple(int(v) for v in (i * palette) % 255) for i in range(num_objects)]


def _parse_colors(colors, num_objects: int):
    from PIL import ImageColor

    if colors is None:
        colors = _generate_color_palette(num_objects)
    elif isinstance(colors, list):
        if len(colors) < num_objects:
            raise ValueError(f"Number of colors must be equal or larger than the number of objects, but got "
                             f"{len(colors)} < {num_objects}.")
    elif not isinstance(colors, (tuple, str)):
        raise ValueError(f"`colors` must be a tuple or a string, or a list thereof, but got {colors}.")
    elif isinstance(colors, tuple) and len(colors) != 3:
        raise ValueError(f"If passed as tuple, colors should be an RGB triplet, but got {colors}.")
    else:
        colors = [colors] * num_objects
    return [ImageColor.getrgb(c) if isinstance(c, str) else tuple(c) for c in colors]


def draw_bounding_boxes(image: Tensor, boxes: Tensor, labels: list[str] | None = None, colors=None,
                        fill: bool = False, width: int = 1, font: str | None = None, font_size: int | None = None,
                        label_colors=None) -> Tensor:
    """Draw (xmin, ymin, xmax, ymax) ``boxes`` (and ``labels``) on a (C, H, W)
    uint8 or float image with Pillow; returns a new image of the same dtype."""
    from PIL import ImageDraw, ImageFont

    if not isinstance(image, Tensor):
        raise TypeError(f"Tensor expected, got {type(image)}")
    if not (image.dtype == fabric.uint8 or image.is_floating_point()):
        raise ValueError(f"The image dtype must be uint8 or float, got {image.dtype}")
    if image.ndim != 3:
        raise ValueError("Pass individual images, not batches")
    if image.shape[0] not in (1, 3):
        raise ValueError("Only grayscale and RGB images are supported")
    if bool((boxes[:, 0] > boxes[:, 2]).any()) or bool((boxes[:, 1] > boxes[:, 3]).any()):
        raise ValueError("Boxes need to be in (xmin, ymin, xmax, ymax) format. Use torchvision.ops.box_convert to "
                         "convert them")
    num_boxes = boxes.shape[0]
    if num_boxes == 0:
        warnings.warn("boxes doesn't contain any box. No box was drawn", stacklevel=2)
        return image
    if labels is None:
        labels = [None] * num_boxes
    elif len(labels) != num_boxes:
        raise ValueError(f"Number of boxes ({num_boxes}) and labels ({len(labels)}) mismatch. Please specify labels "
                         "for each box.")
    colors = _parse_colors(colors, num_objects=num_boxes)
    label_colors = _parse_colors(label_colors, num_objects=num_boxes) if label_colors else colors.copy()
    if font is None:
        txt_font = ImageFont.load_default() if font_size is None else ImageFont.load_default(size=font_size)
    else:
        txt_font = ImageFont.truetype(font=font, size=font_size or 10)
    if image.shape[0] == 1:
        image = fabric.tile(image, (3, 1, 1))
    original_dtype = image.dtype
    if original_dtype.is_floating_point:
        image = TF.convert_image_dtype(image, fabric.uint8)
    img_to_draw = TF.to_pil_image(image)
    draw = ImageDraw.Draw(img_to_draw, "RGBA") if fill else ImageDraw.Draw(img_to_draw)
    for bbox, color, label, label_color in zip(boxes.to(fabric.int64).tolist(), colors, labels, label_colors):
        if fill:
            draw.rectangle(bbox, width=width, outline=color, fill=tuple(color) + (100,))
        else:
            draw.rectangle(bbox, width=width, outline=color)
        if label is not None:
            margin = width + 1
            draw.text((bbox[0] + margin, bbox[1] + margin), label, fill=label_color, font=txt_font)
    out = TF.pil_to_tensor(img_to_draw)
    if original_dtype.is_floating_point:
        out = TF.convert_image_dtype(out, original_dtype)
    return out
