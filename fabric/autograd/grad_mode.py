"""Grad modes: ``no_grad``, ``enable_grad``, ``set_grad_enabled``,
``inference_mode`` — context managers and decorators, thread-local.

Example::

    >>> import fabric
    >>> x = fabric.ones(2, requires_grad=True)
    >>> with fabric.no_grad():
    ...     (x * 2).requires_grad
    False
"""
from __future__ import annotations

import functools
import inspect
import threading
from typing import Any

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled"]


class _GradState(threading.local):
    enabled = True
    inference = False
    anomaly = False
    anomaly_check_nan = True


state = _GradState()


class _AnyThread:
    """Process-wide flags the per-op paths read before the (slower) thread-local state."""

    __slots__ = ("anomaly",)

    def __init__(self):
        self.anomaly = 0  # threads with anomaly detection on


any_thread = _AnyThread()


def set_anomaly(enabled: bool, check_nan: bool = True) -> None:
    """Turn anomaly detection on or off for this thread."""
    enabled = bool(enabled)
    if enabled != state.anomaly:
        any_thread.anomaly += 1 if enabled else -1
    state.anomaly = enabled
    state.anomaly_check_nan = check_nan


def is_grad_enabled() -> bool:
    """True unless inside ``no_grad`` / ``inference_mode`` / ``set_grad_enabled(False)``."""
    return state.enabled


def is_inference_mode_enabled() -> bool:
    return state.inference


class _DecoratorContextManager:
    """Base for grad-mode objects usable as ``with`` blocks and as decorators."""

    def __call__(self, func):
        if inspect.isclass(func):
            raise TypeError("grad-mode decorators apply to functions, not classes")
        if inspect.isgeneratorfunction(func):
            @functools.wraps(func)
            def gen_wrapper(*args, **kwargs):
                gen = func(*args, **kwargs)
                with self.clone():
                    response = gen.send(None)
                while True:
                    try:
                        sent = yield response
                    except GeneratorExit:
                        gen.close()
                        raise
                    with self.clone():
                        try:
                            response = gen.send(sent)
                        except StopIteration as e:
                            return e.value
            return gen_wrapper

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)
        return wrapper

    def clone(self) -> Any:  # an instance of the subclass, which defines __enter__/__exit__
        return self.__class__()


class no_grad(_DecoratorContextManager):
    """Disable gradient recording: ops inside produce tensors with
    ``requires_grad=False``."""

    def __init__(self, orig_func=None):
        self.prev = True
        if orig_func is not None and callable(orig_func):  # used as @no_grad without ()
            self._wrapped = _DecoratorContextManager.__call__(self, orig_func)

    def __new__(cls, orig_func=None) -> Any:  # the decorated function when used as a bare @no_grad
        self = super().__new__(cls)
        if orig_func is not None and callable(orig_func):
            self.__init__()
            return _DecoratorContextManager.__call__(self, orig_func)
        return self

    def __enter__(self):
        self.prev = state.enabled
        state.enabled = False

    def __exit__(self, *exc):
        state.enabled = self.prev


class enable_grad(_DecoratorContextManager):
    """Re-enable gradient recording inside a ``no_grad`` block."""

    def __enter__(self):
        self.prev = state.enabled
        state.enabled = True

    def __exit__(self, *exc):
        state.enabled = self.prev


class set_grad_enabled(_DecoratorContextManager):
    """Set grad mode on (True) or off (False). Takes effect immediately, so
    ``set_grad_enabled(False)`` also works as a plain call."""

    def __init__(self, mode: bool):
        self.prev = state.enabled
        self.mode = bool(mode)
        state.enabled = self.mode

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        state.enabled = self.prev

    def clone(self):
        return self.__class__(self.mode)


class inference_mode(_DecoratorContextManager):
    """Like ``no_grad`` (fabric has no separate inference tensors: tensors
    made here are ordinary tensors that do not require grad)."""

    def __init__(self, mode: bool = True):
        self.mode = mode

    def __new__(cls, mode=True):
        self = super().__new__(cls)
        if callable(mode):
            self.__init__(True)
            return _DecoratorContextManager.__call__(self, mode)
        return self

    def __enter__(self):
        self.prev = (state.enabled, state.inference)
        if self.mode:
            state.enabled = False
            state.inference = True

    def __exit__(self, *exc):
        state.enabled, state.inference = self.prev

    def clone(self):
        return self.__class__(self.mode)
