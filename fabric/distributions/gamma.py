"""Gamma, Dirichlet and Beta distributions.

log_prob, entropy, mean and variance match PyTorch. Sampling uses NumPy's
gamma sampler (Marsaglia-Tsang) seeded from fabric's stream, so
``manual_seed`` reproduces fabric's samples but not PyTorch's, and the
reparameterised ``rsample`` (PyTorch's implicit gamma gradient) is not
implemented: ``has_rsample`` is False here.

Example::

    >>> import fabric
    >>> from fabric.distributions import Gamma
    >>> Gamma(2.0, 1.0).log_prob(fabric.tensor(1.0))
    tensor(-1.)
"""
from __future__ import annotations

from . import constraints
from .distribution import ExponentialFamily, _size
from .utils import _from_host, _host_rng, _is_number, _to_host, broadcast_all

__all__ = ["Beta", "Dirichlet", "Gamma"]

_NO_RSAMPLE = ("{} has no rsample in fabric: PyTorch's reparameterised gamma sampler "
               "(_standard_gamma with its implicit gradient) is not implemented; use sample()")


def _standard_gamma(alpha_host):
    """Gamma(alpha, 1) draws (float64) for a host array of concentrations."""
    return _host_rng().standard_gamma(alpha_host.astype("float64"))


class Gamma(ExponentialFamily):
    """Gamma distribution with shape ``concentration`` and ``rate`` (= 1 / scale)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = False
    _mean_carrier_measure = 0

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        batch_shape = () if _is_number(concentration) and _is_number(rate) else self.concentration.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Gamma, batch_shape, _instance, ("concentration", "rate"))

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def sample(self, sample_shape=()):
        import numpy as np

        shape = self._extended_shape(sample_shape)
        alpha = np.broadcast_to(_to_host(self.concentration), shape)
        value = _standard_gamma(alpha) / np.broadcast_to(_to_host(self.rate), shape)
        value = value.astype(self.rate._data.dtype)
        np.maximum(value, np.finfo(value.dtype).tiny, out=value)
        return _from_host(value, self.rate)

    def rsample(self, sample_shape=()):
        raise NotImplementedError(_NO_RSAMPLE.format("Gamma"))

    def log_prob(self, value):
        from .. import as_tensor

        value = as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return (self.concentration.xlogy(self.rate) + (self.concentration - 1).xlogy(value)
                - self.rate * value - self.concentration.lgamma())

    def entropy(self):
        return (self.concentration - self.rate.log() + self.concentration.lgamma()
                + (1.0 - self.concentration) * self.concentration.digamma())

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        try:
            from ..special import gammainc
        except ImportError:
            raise NotImplementedError("Gamma.cdf needs fabric.special.gammainc, which is not available") from None
        return gammainc(self.concentration, self.rate * value)

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return (x + 1).lgamma() + (x + 1) * (-y.reciprocal()).log()


class Dirichlet(ExponentialFamily):
    """Dirichlet distribution over the simplex with ``concentration`` (last dim = event)."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = False

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = _size(batch_shape)
        new.concentration = self.concentration.expand(batch_shape + self.event_shape)
        super(Dirichlet, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=()):
        import numpy as np

        shape = self._extended_shape(sample_shape)
        g = _standard_gamma(np.broadcast_to(_to_host(self.concentration), shape))
        total = g.sum(-1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            x = g / total
        # All gammas underflowed to 0 (tiny concentrations): put the mass on the largest concentration,
        # the limit of the normalised draw.
        bad = ~(total[..., 0] > 0)
        if bad.any():
            alpha = np.broadcast_to(_to_host(self.concentration), shape)[bad]
            x[bad] = np.eye(shape[-1])[alpha.argmax(-1)]
        dt = self.concentration._data.dtype
        x = x.astype(dt)
        np.clip(x, np.finfo(dt).tiny, None, out=x)
        return _from_host(x, self.concentration)

    def rsample(self, sample_shape=()):
        raise NotImplementedError(_NO_RSAMPLE.format("Dirichlet"))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return ((self.concentration - 1.0).xlogy(value).sum(-1) + self.concentration.sum(-1).lgamma()
                - self.concentration.lgamma().sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        from ..nn.functional import one_hot

        concentrationm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concentrationm1 / concentrationm1.sum(-1, True)
        mask = (self.concentration < 1).all(dim=-1)
        mode[mask] = one_hot(mode[mask].argmax(dim=-1), concentrationm1.shape[-1]).to(mode)
        return mode

    @property
    def variance(self):
        con0 = self.concentration.sum(-1, True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self):
        k = self.concentration.size(-1)
        a0 = self.concentration.sum(-1)
        return (self.concentration.lgamma().sum(-1) - a0.lgamma() - (k - a0) * a0.digamma()
                - ((self.concentration - 1.0) * self.concentration.digamma()).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - x.sum(-1).lgamma()


class Beta(ExponentialFamily):
    """Beta distribution on [0, 1] with ``concentration1`` (alpha) and ``concentration0`` (beta)."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = False

    def __init__(self, concentration1, concentration0, validate_args=None):
        from .. import stack, tensor

        if _is_number(concentration1) and _is_number(concentration0):
            c1c0 = tensor([float(concentration1), float(concentration0)])
        else:
            concentration1, concentration0 = broadcast_all(concentration1, concentration0)
            c1c0 = stack([concentration1, concentration0], -1)
        self._dirichlet = Dirichlet(c1c0, validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Beta, batch_shape, _instance, ("_dirichlet",))

    @property
    def concentration1(self):
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self):
        return self._dirichlet.concentration[..., 1]

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def sample(self, sample_shape=()):
        return self._dirichlet.sample(sample_shape).select(-1, 0)

    def rsample(self, sample_shape=()):
        raise NotImplementedError(_NO_RSAMPLE.format("Beta"))

    def log_prob(self, value):
        from .. import stack

        if self._validate_args:
            self._validate_sample(value)
        return self._dirichlet.log_prob(stack([value, 1.0 - value], -1))

    def entropy(self):
        return self._dirichlet.entropy()

    @property
    def _natural_params(self):
        return (self.concentration1, self.concentration0)

    def _log_normalizer(self, x, y):
        return x.lgamma() + y.lgamma() - (x + y).lgamma()
