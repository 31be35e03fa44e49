"""``torch.distributions.laplace`` path: ``Laplace`` lives in :mod:`fabric.distributions.uniform`."""
from .uniform import Laplace

__all__ = ["Laplace"]
