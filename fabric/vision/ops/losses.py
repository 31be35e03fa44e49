"""``sigmoid_focal_loss`` (RetinaNet's loss), as torchvision.

Example::

    >>> import fabric
    >>> from fabric.vision.ops import sigmoid_focal_loss
    >>> sigmoid_focal_loss(fabric.tensor([0.0]), fabric.tensor([1.0]))
    tensor([0.0433])
"""
from __future__ import annotations

import fabric

from ..._tensor import Tensor
from ...nn import functional as F

__all__ = ["sigmoid_focal_loss"]


def sigmoid_focal_loss(inputs: Tensor, targets: Tensor, alpha: float = 0.25, gamma: float = 2,
                       reduction: str = "none") -> Tensor:
    """Binary cross-entropy on logits, scaled by ``(1 - p_t) ** gamma`` (and by
    ``alpha_t`` when ``alpha >= 0``) so that easy examples weigh less."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"Invalid Value for arg 'reduction': '{reduction} \n Supported reduction modes: 'none', "
                         "'mean', 'sum'")
    p = fabric.sigmoid(inputs)
    ce_loss = F.binary_cross_entropy_with_logits(inputs, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    loss = ce_loss * ((1 - p_t) ** gamma)
    if alpha >= 0:
        loss = (alpha * targets + (1 - alpha) * (1 - targets)) * loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss
