"""Loss modules (PyTorch's ``torch.nn`` losses): constructor arguments,
buffers (``weight``, ``pos_weight``) and legacy ``size_average``/``reduce``
handling as in PyTorch; ``forward`` calls :mod:`fabric.nn.functional`.

Example::

    >>> import fabric
    >>> from fabric import nn
    >>> loss = nn.CrossEntropyLoss(label_smoothing=0.1)
    >>> loss(fabric.zeros(2, 3), fabric.tensor([0, 2]))
    tensor(1.0986)
"""
from __future__ import annotations

import warnings

from .. import functional as F
from ..functional._loss import legacy_get_string
from .distance import PairwiseDistance
from .module import Module

__all__ = [
    "L1Loss", "NLLLoss", "NLLLoss2d", "PoissonNLLLoss", "GaussianNLLLoss", "KLDivLoss", "MSELoss", "BCELoss",
    "BCEWithLogitsLoss", "HingeEmbeddingLoss", "MultiLabelMarginLoss", "SmoothL1Loss", "HuberLoss", "SoftMarginLoss",
    "CrossEntropyLoss", "MultiLabelSoftMarginLoss", "CosineEmbeddingLoss", "MarginRankingLoss", "MultiMarginLoss",
    "TripletMarginLoss", "TripletMarginWithDistanceLoss", "CTCLoss",
]


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__()
        if size_average is not None or reduce is not None:
            self.reduction = legacy_get_string(size_average, reduce)
        else:
            self.reduction = reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class L1Loss(_Loss):
    """Mean absolute error.

    >>> import fabric
    >>> fabric.nn.L1Loss()(fabric.tensor([1.0, -1.0]), fabric.zeros(2))
    tensor(1.)
    """

    __constants__ = ["reduction"]

    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class NLLLoss(_WeightedLoss):
    """Negative log likelihood of log-probabilities at class indices.

    >>> import fabric
    >>> fabric.nn.NLLLoss()(fabric.tensor([[-1.0, -2.0]]), fabric.tensor([1]))
    tensor(2.)
    """

    __constants__ = ["ignore_index", "reduction"]

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class NLLLoss2d(NLLLoss):
    """Deprecated alias of :class:`NLLLoss`."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean") -> None:
        warnings.warn("`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead as a drop-in replacement and see "
                      "https://pytorch.org/docs/main/nn.html#torch.nn.NLLLoss for more details.", FutureWarning,
                      stacklevel=2)
        super().__init__(weight, size_average, ignore_index, reduce, reduction)


class PoissonNLLLoss(_Loss):
    """Poisson negative log likelihood.

    >>> import fabric
    >>> fabric.nn.PoissonNLLLoss()(fabric.zeros(1), fabric.tensor([2.0]))
    tensor(1.)
    """

    __constants__ = ["log_input", "full", "eps", "reduction"]

    def __init__(self, log_input: bool = True, full: bool = False, size_average=None, eps: float = 1e-8,
                 reduce=None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_input = log_input
        self.full = full
        self.eps = eps

    def forward(self, log_input, target):
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full, eps=self.eps,
                                  reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """Gaussian negative log likelihood with predicted variances.

    >>> import fabric
    >>> fabric.nn.GaussianNLLLoss()(fabric.ones(1), fabric.zeros(1), fabric.ones(1))
    tensor(0.5000)
    """

    __constants__ = ["full", "eps", "reduction"]

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean") -> None:
        super().__init__(None, None, reduction)
        self.full = full
        self.eps = eps

    def forward(self, input, target, var):
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps, reduction=self.reduction)


class KLDivLoss(_Loss):
    """KL divergence with log-probability ``input``.

    >>> import fabric
    >>> fabric.nn.KLDivLoss(reduction="batchmean")
    KLDivLoss()
    """

    __constants__ = ["reduction"]

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", log_target: bool = False) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class MSELoss(_Loss):
    """Mean squared error.

    >>> import fabric
    >>> fabric.nn.MSELoss()(fabric.tensor([2.0]), fabric.zeros(1))
    tensor(4.)
    """

    __constants__ = ["reduction"]

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class BCELoss(_WeightedLoss):
    """Binary cross entropy on probabilities.

    >>> import fabric
    >>> fabric.nn.BCELoss()(fabric.tensor([0.5]), fabric.ones(1))
    tensor(0.6931)
    """

    __constants__ = ["reduction"]

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross entropy on logits (stable), with ``weight`` and ``pos_weight``.

    >>> import fabric
    >>> fabric.nn.BCEWithLogitsLoss()(fabric.zeros(1), fabric.ones(1))
    tensor(0.6931)
    """

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean",
                 pos_weight=None) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight, pos_weight=self.pos_weight,
                                                  reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    """Hinge embedding loss for targets in {1, -1}.

    >>> import fabric
    >>> fabric.nn.HingeEmbeddingLoss()(fabric.tensor([0.5]), fabric.tensor([-1.0]))
    tensor(0.5000)
    """

    __constants__ = ["margin", "reduction"]

    def __init__(self, margin: float = 1.0, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input, target):
        return F.hinge_embedding_loss(input, target, margin=self.margin, reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    """Multi-label hinge loss (targets are class indices ended by -1).

    >>> import fabric
    >>> fabric.nn.MultiLabelMarginLoss()(fabric.tensor([[0.1, 0.2, 0.4, 0.8]]), fabric.tensor([[3, 0, -1, 1]]))
    tensor(0.8500)
    """

    __constants__ = ["reduction"]

    def forward(self, input, target):
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Smooth L1 loss with threshold ``beta``.

    >>> import fabric
    >>> fabric.nn.SmoothL1Loss()(fabric.tensor([0.5]), fabric.zeros(1))
    tensor(0.1250)
    """

    __constants__ = ["reduction"]

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", beta: float = 1.0) -> None:
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Huber loss with threshold ``delta``.

    >>> import fabric
    >>> fabric.nn.HuberLoss(delta=2.0)(fabric.tensor([3.0]), fabric.zeros(1))
    tensor(4.)
    """

    __constants__ = ["reduction", "delta"]

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        if not isinstance(delta, (float, int)):
            raise TypeError(f"delta must be a float or int, got: {type(delta)}")
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class SoftMarginLoss(_Loss):
    """Two-class logistic loss ``log(1 + exp(-y x))``.

    >>> import fabric
    >>> fabric.nn.SoftMarginLoss()(fabric.zeros(1), fabric.ones(1))
    tensor(0.6931)
    """

    __constants__ = ["reduction"]

    def forward(self, input, target):
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """Cross entropy of logits against class indices or class probabilities,
    with ``weight``, ``ignore_index`` and ``label_smoothing``.

    >>> import fabric
    >>> fabric.nn.CrossEntropyLoss()(fabric.zeros(1, 2), fabric.tensor([0]))
    tensor(0.6931)
    """

    __constants__ = ["ignore_index", "reduction", "label_smoothing"]

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean", label_smoothing: float = 0.0) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Multi-label one-versus-all logistic loss.

    >>> import fabric
    >>> fabric.nn.MultiLabelSoftMarginLoss()(fabric.zeros(1, 2), fabric.tensor([[1.0, 0.0]]))
    tensor(0.6931)
    """

    __constants__ = ["reduction"]

    def forward(self, input, target):
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight, reduction=self.reduction)


class CosineEmbeddingLoss(_Loss):
    """Cosine embedding loss for targets in {1, -1}.

    >>> import fabric
    >>> fabric.nn.CosineEmbeddingLoss()(fabric.ones(1, 2), fabric.ones(1, 2), fabric.tensor([1]))
    tensor(0.)
    """

    __constants__ = ["margin", "reduction"]

    def __init__(self, margin: float = 0.0, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class MarginRankingLoss(_Loss):
    """``max(0, -y (x1 - x2) + margin)``.

    >>> import fabric
    >>> fabric.nn.MarginRankingLoss()(fabric.ones(1), fabric.zeros(1), fabric.ones(1))
    tensor(0.)
    """

    __constants__ = ["margin", "reduction"]

    def __init__(self, margin: float = 0.0, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin, reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss (``p`` 1 or 2).

    >>> import fabric
    >>> fabric.nn.MultiMarginLoss()(fabric.tensor([[0.1, 0.2, 0.4, 0.8]]), fabric.tensor([3]))
    tensor(0.3250)
    """

    __constants__ = ["p", "margin", "reduction"]

    def __init__(self, p: int = 1, margin: float = 1.0, weight=None, size_average=None, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        if p != 1 and p != 2:
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.dim() != 1:
            raise ValueError(f"MultiMarginLoss: expected weight to be None or 1D tensor, got {weight.dim()}D "
                             "instead")
        self.p = p
        self.margin = margin

    def forward(self, input, target):
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin, weight=self.weight,
                                   reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """Triplet loss with the pairwise p-norm distance.

    >>> import fabric
    >>> fabric.nn.TripletMarginLoss(margin=0.5)
    TripletMarginLoss()
    """

    __constants__ = ["margin", "p", "eps", "swap", "reduction"]

    def __init__(self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6, swap: bool = False,
                 size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got {margin} instead")
        self.margin = margin
        self.p = p
        self.eps = eps
        self.swap = swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p, eps=self.eps,
                                     swap=self.swap, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """Triplet loss with a custom distance (default :class:`PairwiseDistance`).

    >>> import fabric
    >>> fabric.nn.TripletMarginWithDistanceLoss()
    TripletMarginWithDistanceLoss(
      (distance_function): PairwiseDistance()
    )
    """

    __constants__ = ["margin", "swap", "reduction"]

    def __init__(self, *, distance_function=None, margin: float = 1.0, swap: bool = False,
                 reduction: str = "mean") -> None:
        super().__init__(size_average=None, reduce=None, reduction=reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} "
                             "instead")
        self.distance_function = distance_function if distance_function is not None else PairwiseDistance()
        self.margin = margin
        self.swap = swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_with_distance_loss(anchor, positive, negative,
                                                   distance_function=self.distance_function, margin=self.margin,
                                                   swap=self.swap, reduction=self.reduction)


class CTCLoss(_Loss):
    """Connectionist Temporal Classification loss.

    >>> import fabric
    >>> fabric.nn.CTCLoss(blank=0, zero_infinity=True)
    CTCLoss()
    """

    __constants__ = ["blank", "reduction"]

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> None:
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction,
                          self.zero_infinity)
