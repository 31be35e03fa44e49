"""Distance modules: :class:`PairwiseDistance` and :class:`CosineSimilarity`.

Example::

    >>> import fabric
    >>> fabric.nn.CosineSimilarity(dim=0)(fabric.tensor([1.0, 0.0]), fabric.tensor([2.0, 0.0]))
    tensor(1.)
"""
from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["PairwiseDistance", "CosineSimilarity"]


class PairwiseDistance(Module):
    """``||x1 - x2 + eps||_p`` over the last dimension.

    >>> import fabric
    >>> fabric.nn.PairwiseDistance(eps=0.0)(fabric.tensor([[3.0, 4.0]]), fabric.zeros(1, 2))
    tensor([5.])
    """

    __constants__ = ["norm", "eps", "keepdim"]

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class CosineSimilarity(Module):
    """Cosine similarity along ``dim``.

    >>> import fabric
    >>> fabric.nn.CosineSimilarity()(fabric.tensor([[1.0, 0.0]]), fabric.tensor([[0.0, 1.0]]))
    tensor([0.])
    """

    __constants__ = ["dim", "eps"]

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)
