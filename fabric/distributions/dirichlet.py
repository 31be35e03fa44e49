"""``torch.distributions.dirichlet`` path: ``Dirichlet`` lives in :mod:`fabric.distributions.gamma`."""
from .gamma import Dirichlet

__all__ = ["Dirichlet"]
