"""Normal (Gaussian) and LogNormal distributions.

Example::

    >>> import fabric
    >>> from fabric.distributions import Normal
    >>> Normal(0.0, 1.0).log_prob(fabric.tensor(0.0))
    tensor(-0.9189)
"""
from __future__ import annotations

import math

from . import constraints
from .distribution import Distribution, ExponentialFamily
from .utils import _is_number, _standard_normal, broadcast_all

__all__ = ["LogNormal", "Normal"]


class Normal(ExponentialFamily):
    """Normal distribution with mean ``loc`` and standard deviation ``scale``.

    ``sample`` and ``rsample`` draw the same streams as PyTorch's for the same seed.
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        batch_shape = () if _is_number(loc) and _is_number(scale) else self.loc.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Normal, batch_shape, _instance, ("loc", "scale"))

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def sample(self, sample_shape=()):
        from ..autograd import no_grad

        # torch.normal(loc, scale): standard normals, times scale, plus loc (each step rounded).
        shape = self._extended_shape(sample_shape)
        with no_grad():
            eps = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
            return eps * self.scale.expand(shape) + self.loc.expand(shape)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        var = self.scale ** 2
        return -((value - self.loc) ** 2) / (2 * var) - self.scale.log() - math.log(math.sqrt(2 * math.pi))

    def cdf(self, value):
        from .. import erf

        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + erf((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)))

    def icdf(self, value):
        from .. import erfinv

        return self.loc + self.scale * erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()

    @property
    def _natural_params(self):
        return (self.loc / self.scale.pow(2), -0.5 * self.scale.pow(2).reciprocal())

    def _log_normalizer(self, x, y):
        return -0.25 * x.pow(2) / y + 0.5 * (-math.pi / y).log()


class LogNormal(Distribution):
    """``exp(X)`` for ``X ~ Normal(loc, scale)``.

    PyTorch builds it as a TransformedDistribution of Normal with ExpTransform;
    fabric computes the same formulas directly (``base_dist`` is the Normal).
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.base_dist = Normal(loc, scale, validate_args=validate_args)
        super().__init__(self.base_dist.batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LogNormal, _instance)
        new.base_dist = self.base_dist.expand(batch_shape)
        super(LogNormal, new).__init__(new.base_dist.batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def loc(self):
        return self.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mean(self):
        return (self.loc + self.scale.pow(2) / 2).exp()

    @property
    def mode(self):
        return (self.loc - self.scale.square()).exp()

    @property
    def variance(self):
        scale_sq = self.scale.pow(2)
        return scale_sq.expm1() * (2 * self.loc + scale_sq).exp()

    def sample(self, sample_shape=()):
        from ..autograd import no_grad

        with no_grad():
            return self.base_dist.sample(sample_shape).exp()

    def rsample(self, sample_shape=()):
        return self.base_dist.rsample(sample_shape).exp()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        x = value.log()
        return (0.0 - x) + self.base_dist.log_prob(x)   # -log|dy/dx| + base log density, PyTorch's order

    def cdf(self, value):
        x = value.log()
        if self._validate_args:
            self.base_dist._validate_sample(x)
        return self.base_dist.cdf(x)

    def icdf(self, value):
        return self.base_dist.icdf(value).exp()

    def entropy(self):
        return self.base_dist.entropy() + self.loc
