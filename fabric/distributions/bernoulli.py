"""``torch.distributions.bernoulli`` path: ``Bernoulli`` lives in :mod:`fabric.distributions.discrete`."""
from .discrete import Bernoulli

__all__ = ["Bernoulli"]
