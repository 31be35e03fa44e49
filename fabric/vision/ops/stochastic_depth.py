"""``stochastic_depth``: drop whole residual branches (per sample, ``'row'``,
or for the whole batch, ``'batch'``) and rescale the survivors; the mask is
drawn with ``bernoulli_`` from fabric's generator, as torchvision does.

Example::

    >>> import fabric
    >>> from fabric.vision.ops import stochastic_depth
    >>> stochastic_depth(fabric.ones(2, 3), 0.5, "row", training=False)
    tensor([[1., 1., 1.],
            [1., 1., 1.]])
"""
from __future__ import annotations

import fabric

from ..._tensor import Tensor
from ...nn.modules.module import Module

__all__ = ["stochastic_depth", "StochasticDepth"]


def stochastic_depth(input: Tensor, p: float, mode: str, training: bool = True) -> Tensor:
    """Zero each row (or the whole batch) with probability ``p``; survivors are divided by ``1 - p``."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"drop probability has to be between 0 and 1, but got {p}")
    if mode not in ("batch", "row"):
        raise ValueError(f"mode has to be either 'batch' or 'row', but got {mode}")
    if not training or p == 0.0:
        return input
    survival_rate = 1.0 - p
    size = [input.shape[0]] + [1] * (input.ndim - 1) if mode == "row" else [1] * input.ndim
    noise = fabric.empty(size, dtype=input.dtype, device=input.device).bernoulli_(survival_rate)
    if survival_rate > 0.0:
        noise.div_(survival_rate)
    return input * noise


class StochasticDepth(Module):
    """Module form of :func:`stochastic_depth` (active in training mode only)."""

    def __init__(self, p: float, mode: str) -> None:
        super().__init__()
        self.p = p
        self.mode = mode

    def forward(self, input: Tensor) -> Tensor:
        return stochastic_depth(input, self.p, self.mode, self.training)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(p={self.p}, mode={self.mode})"
