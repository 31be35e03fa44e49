"""``torch.distributions.categorical`` path: ``Categorical`` lives in :mod:`fabric.distributions.discrete`."""
from .discrete import Categorical

__all__ = ["Categorical"]
