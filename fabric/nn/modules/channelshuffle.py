"""``ChannelShuffle``: the module form of :func:`F.channel_shuffle`.

Example::

    >>> import fabric
    >>> fabric.nn.ChannelShuffle(2)(fabric.arange(4.0).reshape(1, 4, 1)).flatten()
    tensor([0., 2., 1., 3.])
"""
from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["ChannelShuffle"]


class ChannelShuffle(Module):
    """Divide the channels of an (N, C, *) input into ``groups`` groups and
    interleave them (ShuffleNet).

    Example::

        >>> import fabric
        >>> fabric.nn.ChannelShuffle(3)
        ChannelShuffle(groups=3)
    """

    __constants__ = ["groups"]

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"
