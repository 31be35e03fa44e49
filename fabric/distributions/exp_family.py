"""``torch.distributions.exp_family`` path: ``ExponentialFamily`` lives in :mod:`fabric.distributions.distribution`."""
from .distribution import ExponentialFamily

__all__ = ["ExponentialFamily"]
