"""``torch.distributions.log_normal`` path: ``LogNormal`` lives in :mod:`fabric.distributions.normal`."""
from .normal import LogNormal

__all__ = ["LogNormal"]
