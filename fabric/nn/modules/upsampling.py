"""``Upsample``, ``UpsamplingNearest2d`` and ``UpsamplingBilinear2d``
(wrappers over :func:`F.interpolate`).

Example::

    >>> import fabric
    >>> fabric.nn.Upsample(scale_factor=2, mode='bilinear')(fabric.randn(1, 1, 3, 3)).shape
    fabric.Size([1, 1, 6, 6])
"""
from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]


class Upsample(Module):
    """Resize to ``size`` or by ``scale_factor`` with ``mode`` (see :func:`F.interpolate`).

    Example::

        >>> import fabric
        >>> fabric.nn.Upsample(scale_factor=2)
        Upsample(scale_factor=2.0, mode='nearest')
    """

    __constants__ = ["size", "scale_factor", "mode", "align_corners", "name", "recompute_scale_factor"]

    def __init__(self, size=None, scale_factor=None, mode: str = "nearest", align_corners=None,
                 recompute_scale_factor=None) -> None:
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(factor) for factor in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def __setstate__(self, state):
        if "recompute_scale_factor" not in state:
            state["recompute_scale_factor"] = True
        super().__setstate__(state)

    def extra_repr(self) -> str:
        if self.scale_factor is not None:
            info = "scale_factor=" + repr(self.scale_factor)
        else:
            info = "size=" + repr(self.size)
        info += ", mode=" + repr(self.mode)
        return info


class UpsamplingNearest2d(Upsample):
    """Nearest-neighbour 2-D upsampling (``Upsample(mode='nearest')``).

    Example::

        >>> import fabric
        >>> fabric.nn.UpsamplingNearest2d(scale_factor=2)(fabric.arange(4.0).reshape(1, 1, 2, 2))[0, 0, 0]
        tensor([0., 0., 1., 1.])
    """

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear 2-D upsampling with ``align_corners=True``.

    Example::

        >>> import fabric
        >>> fabric.nn.UpsamplingBilinear2d(scale_factor=2)(fabric.arange(1.0, 5.0).reshape(1, 1, 2, 2))[0, 0, 0]
        tensor([1.0000, 1.3333, 1.6667, 2.0000])
    """

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
