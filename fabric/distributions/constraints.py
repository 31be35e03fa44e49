"""Constraints on distribution parameters and values (``torch.distributions.constraints``).

A constraint's ``check(value)`` returns a boolean tensor: one entry per
event, so ``event_dim`` rightmost dims are reduced away.

Example::

    >>> import fabric
    >>> from fabric.distributions import constraints
    >>> constraints.positive.check(fabric.tensor([1.0, -1.0]))
    tensor([ True, False])
    >>> constraints.positive
    GreaterThan(lower_bound=0.0)
"""
from __future__ import annotations

__all__ = ["Constraint", "boolean", "dependent", "dependent_property", "greater_than", "greater_than_eq",
           "half_open_interval", "independent", "integer_interval", "interval", "is_dependent", "less_than",
           "lower_cholesky", "lower_triangular", "nonnegative", "nonnegative_integer", "one_hot", "positive",
           "positive_definite", "positive_integer", "real", "real_vector", "simplex", "symmetric",
           "unit_interval"]


def _fmt(v):
    """How PyTorch's f-strings print a bound: a 0-d tensor as its number."""
    if hasattr(v, "dim") and v.dim() == 0:
        return format(v.item())
    return str(v)


class Constraint:
    """Base class: a region over which a variable is valid."""

    is_discrete = False
    event_dim = 0

    def check(self, value):
        raise NotImplementedError(f"{type(self).__name__} does not implement check")

    def __repr__(self):
        return self.__class__.__name__[1:] + "()"


class _Dependent(Constraint):
    """Placeholder for a constraint that depends on other parameters (never checked)."""

    def __init__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        self._is_discrete = is_discrete
        self._event_dim = event_dim
        super().__init__()

    @property
    def is_discrete(self):
        if self._is_discrete is NotImplemented:
            raise NotImplementedError(".is_discrete cannot be determined statically")
        return self._is_discrete

    @property
    def event_dim(self):
        if self._event_dim is NotImplemented:
            raise NotImplementedError(".event_dim cannot be determined statically")
        return self._event_dim

    def __call__(self, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        if is_discrete is NotImplemented:
            is_discrete = self._is_discrete
        if event_dim is NotImplemented:
            event_dim = self._event_dim
        return _Dependent(is_discrete=is_discrete, event_dim=event_dim)

    def check(self, x):
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint) -> bool:
    """Whether ``constraint`` is a ``dependent`` placeholder (skipped by validation)."""
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """A property whose value is a constraint built from the distribution's parameters
    (``Uniform.support``); seen from the class it is a dependent constraint."""

    def __init__(self, fn=None, *, is_discrete=NotImplemented, event_dim=NotImplemented):
        property.__init__(self, fn)
        self._is_discrete = is_discrete
        self._event_dim = event_dim

    def __call__(self, fn):
        return _DependentProperty(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)


def dependent_property(fn=None, *, is_discrete=NotImplemented, event_dim=NotImplemented):
    """Decorator for a parameter-dependent ``support`` (``@dependent_property(is_discrete=True, event_dim=0)``)."""
    if fn is None:
        return _DependentProperty(is_discrete=is_discrete, event_dim=event_dim)
    return _DependentProperty(fn, is_discrete=is_discrete, event_dim=event_dim)


class _IndependentConstraint(Constraint):
    """``base_constraint`` with ``reinterpreted_batch_ndims`` more event dims."""

    def __init__(self, base_constraint, reinterpreted_batch_ndims):
        if not isinstance(base_constraint, Constraint):
            raise TypeError("base_constraint must be a Constraint")
        if not isinstance(reinterpreted_batch_ndims, int) or reinterpreted_batch_ndims < 0:
            raise ValueError("reinterpreted_batch_ndims must be a non-negative int")
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        super().__init__()

    @property
    def is_discrete(self):
        return self.base_constraint.is_discrete

    @property
    def event_dim(self):
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value):
        result = self.base_constraint.check(value)
        if result.dim() < self.reinterpreted_batch_ndims:
            expected = self.base_constraint.event_dim + self.reinterpreted_batch_ndims
            raise ValueError(f"Expected value.dim() >= {expected} but got {value.dim()}")
        result = result.reshape(result.shape[:result.dim() - self.reinterpreted_batch_ndims] + (-1,))
        return result.all(-1)

    def __repr__(self):
        return f"{self.__class__.__name__[1:]}({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value):
        return (value == 0) | (value == 1)


class _OneHot(Constraint):
    is_discrete = True
    event_dim = 1

    def check(self, value):
        is_boolean = (value == 0) | (value == 1)
        is_normalized = value.sum(-1).eq(1)
        return is_boolean.all(-1) & is_normalized


class _IntegerInterval(Constraint):
    is_discrete = True

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        return (value % 1 == 0) & (value >= self.lower_bound) & (value <= self.upper_bound)

    def __repr__(self):
        return (f"{self.__class__.__name__[1:]}(lower_bound={_fmt(self.lower_bound)}, "
                f"upper_bound={_fmt(self.upper_bound)})")


class _IntegerGreaterThan(Constraint):
    is_discrete = True

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value):
        return (value % 1 == 0) & (value >= self.lower_bound)

    def __repr__(self):
        return f"{self.__class__.__name__[1:]}(lower_bound={_fmt(self.lower_bound)})"


class _Real(Constraint):
    def check(self, value):
        return value == value


class _GreaterThan(Constraint):
    def __init__(self, lower_bound):
        self.lower_bound = lower_bound
        super().__init__()

    def check(self, value):
        return value > self.lower_bound

    def __repr__(self):
        return f"{self.__class__.__name__[1:]}(lower_bound={_fmt(self.lower_bound)})"


class _GreaterThanEq(_GreaterThan):
    def check(self, value):
        return value >= self.lower_bound


class _LessThan(Constraint):
    def __init__(self, upper_bound):
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        return value < self.upper_bound

    def __repr__(self):
        return f"{self.__class__.__name__[1:]}(upper_bound={_fmt(self.upper_bound)})"


class _Interval(Constraint):
    def __init__(self, lower_bound, upper_bound):
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        super().__init__()

    def check(self, value):
        return (value >= self.lower_bound) & (value <= self.upper_bound)

    def __repr__(self):
        return (f"{self.__class__.__name__[1:]}(lower_bound={_fmt(self.lower_bound)}, "
                f"upper_bound={_fmt(self.upper_bound)})")


class _HalfOpenInterval(_Interval):
    def check(self, value):
        return (value >= self.lower_bound) & (value < self.upper_bound)


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value):
        return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _LowerTriangular(Constraint):
    event_dim = 2

    def check(self, value):
        return (value.tril() == value).reshape(value.shape[:-2] + (-1,)).all(-1)


class _LowerCholesky(Constraint):
    event_dim = 2

    def check(self, value):
        lower = (value.tril() == value).reshape(value.shape[:-2] + (-1,)).all(-1)
        positive_diagonal = (value.diagonal(dim1=-2, dim2=-1) > 0).all(-1)
        return lower & positive_diagonal


class _Symmetric(Constraint):
    event_dim = 2

    def check(self, value):
        from .. import isclose

        square = value.shape[-2] == value.shape[-1]
        if not square:
            from .. import bool as bool_
            from .. import zeros

            return zeros(value.shape[:-2], dtype=bool_, device=value.device)
        return isclose(value, value.mT, atol=1e-6).all(-2).all(-1)


class _PositiveDefinite(_Symmetric):
    def check(self, value):
        from .. import linalg

        sym = super().check(value)
        if not bool(sym.all()):
            return sym
        return linalg.cholesky_ex(value).info.eq(0)


class _RealVector(_IndependentConstraint):
    def __init__(self):
        super().__init__(_Real(), 1)

    def __repr__(self):
        return "IndependentConstraint(Real(), 1)"


dependent = _Dependent()
boolean = _Boolean()
one_hot = _OneHot()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
integer_interval = _IntegerInterval
real = _Real()
real_vector = _RealVector()
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
unit_interval = _Interval(0.0, 1.0)
interval = _Interval
half_open_interval = _HalfOpenInterval
simplex = _Simplex()
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
symmetric = _Symmetric()
positive_definite = _PositiveDefinite()
independent = _IndependentConstraint
