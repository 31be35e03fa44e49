"""``torch.distributions.one_hot_categorical`` path: ``OneHotCategorical`` lives in
:mod:`fabric.distributions.discrete`."""
from .discrete import OneHotCategorical

__all__ = ["OneHotCategorical"]
