"""``torch.distributions.exponential`` path: ``Exponential`` lives in :mod:`fabric.distributions.uniform`."""
from .uniform import Exponential

__all__ = ["Exponential"]
