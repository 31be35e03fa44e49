"""``torch.distributions.beta`` path: ``Beta`` lives in :mod:`fabric.distributions.gamma`."""
from .gamma import Beta

__all__ = ["Beta"]
