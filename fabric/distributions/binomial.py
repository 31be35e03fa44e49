"""``torch.distributions.binomial`` path: ``Binomial`` lives in :mod:`fabric.distributions.discrete`."""
from .discrete import Binomial

__all__ = ["Binomial"]
