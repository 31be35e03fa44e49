"""``torch.distributions.independent`` path: ``Independent`` lives in
:mod:`fabric.distributions.multivariate_normal`."""
from .multivariate_normal import Independent

__all__ = ["Independent"]
