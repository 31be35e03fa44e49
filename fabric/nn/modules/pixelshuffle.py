"""``PixelShuffle`` and ``PixelUnshuffle`` (sub-pixel convolution layouts).

Example::

    >>> import fabric
    >>> fabric.nn.PixelShuffle(2)(fabric.randn(1, 8, 3, 3)).shape
    fabric.Size([1, 2, 6, 6])
"""
from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["PixelShuffle", "PixelUnshuffle"]


class PixelShuffle(Module):
    """(*, C * r**2, H, W) -> (*, C, H * r, W * r) (see :func:`F.pixel_shuffle`).

    Example::

        >>> import fabric
        >>> fabric.nn.PixelShuffle(3)
        PixelShuffle(upscale_factor=3)
    """

    __constants__ = ["upscale_factor"]

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(*, C, H * r, W * r) -> (*, C * r**2, H, W) (see :func:`F.pixel_unshuffle`).

    Example::

        >>> import fabric
        >>> fabric.nn.PixelUnshuffle(2)(fabric.randn(1, 2, 6, 6)).shape
        fabric.Size([1, 8, 3, 3])
    """

    __constants__ = ["downscale_factor"]

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"
