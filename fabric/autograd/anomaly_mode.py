"""Anomaly detection: name the forward op whose backward produced NaN/inf.

Example::

    >>> import fabric
    >>> with fabric.autograd.detect_anomaly():
    ...     x = fabric.tensor([0.0], requires_grad=True)
    ...     y = fabric.sqrt(x) * 0
"""
from __future__ import annotations

import warnings

from .grad_mode import _DecoratorContextManager, set_anomaly, state

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled"]


def is_anomaly_enabled() -> bool:
    return state.anomaly


class detect_anomaly(_DecoratorContextManager):
    """Record forward stack traces; raise in backward when a function returns
    NaN (or inf) gradients, naming it and printing where it was created."""

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only "
                      "be enabled for debugging.", stacklevel=2)

    def __enter__(self):
        self.prev = (state.anomaly, state.anomaly_check_nan)
        set_anomaly(True, self.check_nan)

    def __exit__(self, *exc):
        set_anomaly(*self.prev)

    def clone(self):
        return self.__class__(self.check_nan)


class set_detect_anomaly(_DecoratorContextManager):
    """Turn anomaly detection on or off (immediately, and as a context)."""

    def __init__(self, mode: bool, check_nan: bool = True):
        self.prev = (state.anomaly, state.anomaly_check_nan)
        self.mode, self.check_nan = mode, check_nan
        set_anomaly(mode, check_nan)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        set_anomaly(*self.prev)

    def clone(self):
        return self.__class__(self.mode, self.check_nan)
