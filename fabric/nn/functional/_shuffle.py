"""``channel_shuffle``: ShuffleNet's channel interleaving, as a reshape and a
transpose (so it is differentiable to any order for free).

Example::

    >>> import fabric
    >>> import fabric.nn.functional as F
    >>> F.channel_shuffle(fabric.arange(6.0).reshape(1, 6, 1), 3).flatten()
    tensor([0., 2., 4., 1., 3., 5.])
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..._tensor import Tensor

__all__ = ["channel_shuffle"]


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Split the channels of ``input`` (N, C, *) into ``groups`` groups and
    interleave them: (N, g, C/g, *) -> (N, C/g, g, *) -> (N, C, *).

    Example::

        >>> import fabric
        >>> import fabric.nn.functional as F
        >>> F.channel_shuffle(fabric.arange(4.0).reshape(1, 4, 1), 2).flatten()
        tensor([0., 2., 1., 3.])
    """
    if isinstance(groups, bool) or not hasattr(groups, "__index__"):
        raise TypeError(f"channel_shuffle(): argument 'groups' (position 2) must be int, not {type(groups).__name__}")
    groups = groups.__index__()
    shape = tuple(input.shape)
    if len(shape) <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes {list(shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    c = shape[1]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    return input.reshape(shape[0], groups, c // groups, *shape[2:]).transpose(1, 2).reshape(shape)
