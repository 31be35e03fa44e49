"""``fabric.distributions``: PyTorch's ``torch.distributions`` for the common distributions,
built from differentiable fabric ops (log_prob, rsample and entropy carry gradients).

Sampling draws PyTorch's streams (same ``manual_seed``, same samples) for Normal,
LogNormal, Uniform, Bernoulli, Categorical, OneHotCategorical, Exponential,
Laplace, Poisson and MultivariateNormal; Gamma, Beta, Dirichlet and Binomial sample
from NumPy generators seeded from fabric's stream (see docs/distributions.md).

Example::

    >>> import fabric
    >>> from fabric.distributions import Normal, kl_divergence
    >>> loc = fabric.tensor(0.5, requires_grad=True)
    >>> d = Normal(loc, 1.0)
    >>> d.log_prob(fabric.tensor(0.0)).backward()
    >>> loc.grad
    tensor(-0.5000)
"""
from __future__ import annotations

from . import constraints, kl, utils  # noqa: F401
from .discrete import Bernoulli, Binomial, Categorical, OneHotCategorical, Poisson
from .distribution import Distribution, ExponentialFamily
from .gamma import Beta, Dirichlet, Gamma
from .kl import kl_divergence, register_kl
from .multivariate_normal import Independent, MultivariateNormal
from .normal import LogNormal, Normal
from .uniform import Exponential, Laplace, Uniform

__all__ = ["Bernoulli", "Beta", "Binomial", "Categorical", "Dirichlet", "Distribution", "Exponential",
           "ExponentialFamily", "Gamma", "Independent", "Laplace", "LogNormal", "MultivariateNormal", "Normal",
           "OneHotCategorical", "Poisson", "Uniform", "constraints", "kl_divergence", "register_kl"]
