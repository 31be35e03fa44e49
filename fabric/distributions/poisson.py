"""``torch.distributions.poisson`` path: ``Poisson`` lives in :mod:`fabric.distributions.discrete`."""
from .discrete import Poisson

__all__ = ["Poisson"]
