"""``fork`` / ``wait`` and the ``Future`` they exchange.

fabric runs forked work at once, in the calling thread (what PyTorch does
outside TorchScript too), so a ``Future`` returned by ``fork`` is already
done; ``wait`` returns its value or re-raises the error it captured.

Example::

    >>> import fabric
    >>> fut = fabric.jit.fork(lambda a, b: a + b, 1, 2)
    >>> fabric.jit.wait(fut)
    3
"""
from __future__ import annotations

import threading

_PENDING = object()


class Future:
    """A value that may not exist yet (``torch.futures.Future``): ``set_result``,
    ``set_exception``, ``wait``, ``value``, ``done``, ``then``, ``add_done_callback``.

    Example::

        >>> f = Future()
        >>> g = f.then(lambda fut: fut.value() * 2)
        >>> f.set_result(21)
        >>> g.wait()
        42
    """

    def __init__(self):
        self._cond = threading.Condition()
        self._value = _PENDING
        self._error = None
        self._callbacks = []

    def done(self) -> bool:
        return self._value is not _PENDING or self._error is not None

    def _finish(self, value, error):
        with self._cond:
            if self.done():
                raise RuntimeError("Future can only be marked completed once.")
            self._value, self._error = value, error
            callbacks, self._callbacks = self._callbacks, []
            self._cond.notify_all()
        for cb in callbacks:
            cb(self)

    def set_result(self, result) -> None:
        self._finish(result, None)

    def set_exception(self, result) -> None:
        if not isinstance(result, BaseException):
            raise TypeError(f"{result} is of type {type(result)}, not an Exception.")
        self._finish(_PENDING, result)

    def wait(self):
        with self._cond:
            while not self.done():
                self._cond.wait()
        return self.value()

    def value(self):
        if self._error is not None:
            raise self._error
        if self._value is _PENDING:
            raise RuntimeError("Future is not completed yet")
        return self._value

    def add_done_callback(self, callback) -> None:
        with self._cond:
            if not self.done():
                self._callbacks.append(callback)
                return
        callback(self)

    def then(self, callback) -> Future:
        out = Future()

        def run(fut):
            try:
                out.set_result(callback(fut))
            except Exception as e:  # the chained future carries the callback's error
                out.set_exception(e)

        self.add_done_callback(run)
        return out


def fork(func, *args, **kwargs) -> Future:
    """Start ``func(*args, **kwargs)`` and return a :class:`Future` of its result
    (run at once; errors are re-raised by ``wait``)."""
    fut = Future()
    try:
        result = func(*args, **kwargs)
    except Exception as e:
        fut.set_exception(e)
    else:
        fut.set_result(result)
    return fut


def wait(future: Future):
    """The result of a :func:`fork` (re-raises the error it ended with)."""
    return future.wait()
