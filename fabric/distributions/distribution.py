"""``Distribution``: the base class of ``fabric.distributions`` (PyTorch's semantics).

Example::

    >>> import fabric
    >>> from fabric.distributions import Normal
    >>> d = Normal(fabric.zeros(3), 1.0)
    >>> d.batch_shape, d.event_shape
    (fabric.Size([3]), fabric.Size([]))
    >>> d.sample((2,)).shape
    fabric.Size([2, 3])
"""
from __future__ import annotations

import warnings

from . import constraints
from .utils import lazy_property

__all__ = ["Distribution"]


def _size(shape):
    from .. import Size

    return shape if isinstance(shape, Size) else Size(shape)


def _is_all_true(valid) -> bool:
    return bool(valid.all())


def _fmt_value(v):
    """How PyTorch's f-strings print a tensor: a 0-d tensor as its number."""
    return format(v.item()) if v.dim() == 0 else str(v)


class Distribution:
    """Abstract base class for probability distributions.

    ``batch_shape`` is the shape over which parameters are batched,
    ``event_shape`` the shape of one sample; ``validate_args`` checks
    parameters at construction and values in ``log_prob``/``cdf`` (on by
    default, like ``assert``; see :meth:`set_default_validate_args`).
    """

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument validation on or off for every distribution created afterwards."""
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = _size(batch_shape)
        self._event_shape = _size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set "
                              "`arg_constraints = {}` or initialize the distribution with "
                              "`validate_args=False` to turn off validation.", stacklevel=2)
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue
                if param not in self.__dict__ and isinstance(getattr(type(self), param, None), lazy_property):
                    continue   # a lazily computed parameterisation (logits from probs ...)
                value = getattr(self, param)
                if not _is_all_true(constraint.check(value)):
                    raise ValueError(
                        f"Expected parameter {param} ({type(value).__name__} of shape {tuple(value.shape)}) "
                        f"of distribution {self!r} to satisfy the constraint {constraint!r}, "
                        f"but found invalid values:\n{_fmt_value(value)}")
        super().__init__()

    def expand(self, batch_shape, _instance=None):
        """A new distribution with parameters expanded (no copy) to ``batch_shape``."""
        raise NotImplementedError(f"{type(self).__name__} does not implement expand")

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    @property
    def arg_constraints(self):
        raise NotImplementedError(f"{type(self).__name__} does not define arg_constraints")

    @property
    def support(self):
        raise NotImplementedError(f"{type(self).__name__} does not define support")

    @property
    def mean(self):
        raise NotImplementedError(f"{self.__class__} does not implement mean")

    @property
    def mode(self):
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError(f"{self.__class__} does not implement variance")

    @property
    def stddev(self):
        return self.variance.sqrt()

    def sample(self, sample_shape=()):
        """A sample of shape ``sample_shape + batch_shape + event_shape`` (no gradient)."""
        from ..autograd import no_grad

        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        """A reparameterised sample: gradients flow to the parameters."""
        raise NotImplementedError(f"{type(self).__name__} does not implement rsample")

    def sample_n(self, n: int):
        warnings.warn("`sample_n(n)` will be deprecated. Use `sample((n,))` instead.", FutureWarning, stacklevel=2)
        return self.sample(_size((n,)))

    def log_prob(self, value):
        raise NotImplementedError(f"{type(self).__name__} does not implement log_prob")

    def cdf(self, value):
        raise NotImplementedError(f"{type(self).__name__} does not implement cdf")

    def icdf(self, value):
        raise NotImplementedError(f"{type(self).__name__} does not implement icdf")

    def enumerate_support(self, expand=True):
        raise NotImplementedError(f"{type(self).__name__} does not implement enumerate_support")

    def entropy(self):
        raise NotImplementedError(f"{type(self).__name__} does not implement entropy")

    def perplexity(self):
        from .. import exp

        return exp(self.entropy())

    def _extended_shape(self, sample_shape=()):
        return _size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value) -> None:
        from .. import Tensor

        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = value.dim() - len(self._event_shape)
        if value.size()[event_dim_start:] != self._event_shape:
            raise ValueError(f"The right-most size of value must match event_shape: "
                             f"{value.size()} vs {self._event_shape}.")
        actual_shape = value.size()
        expected_shape = self._batch_shape + self._event_shape
        for i, j in zip(reversed(actual_shape), reversed(expected_shape)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: "
                                 f"{actual_shape} vs {expected_shape}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample validation. Please "
                          "initialize the distribution with `validate_args=False` to turn off validation.",
                          stacklevel=2)
            return
        if not _is_all_true(support.check(value)):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) "
                             f"to be within the support ({support!r}) of the distribution {self!r}, "
                             f"but found invalid values:\n{_fmt_value(value)}")

    def _expand_params(self, cls, batch_shape, _instance, names):
        """``expand`` for a distribution whose parameters ``names`` all have
        the batch shape (no event dims): each is expanded without a copy."""
        new = self._get_checked_instance(cls, _instance)
        batch_shape = _size(batch_shape)
        for name in names:
            setattr(new, name, getattr(self, name).expand(batch_shape))
        super(cls, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                                      "__init__ method must also define a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self):
        param_names = [k for k in self.arg_constraints if k in self.__dict__]
        shown = (self.__dict__[p] for p in param_names)
        args = ", ".join(f"{p}: {_fmt_value(v) if v.numel() == 1 else v.size()}" for p, v in zip(param_names, shown))
        return self.__class__.__name__ + "(" + args + ")"


class ExponentialFamily(Distribution):
    """Base class of the exponential-family distributions (Normal, Bernoulli, Gamma ...).

    Subclasses may define ``_natural_params`` and ``_log_normalizer``;
    fabric's KL registry uses closed forms instead of the Bregman fallback."""
