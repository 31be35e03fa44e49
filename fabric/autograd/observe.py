"""The one observation point of op dispatch.

The profiler, ``fabric.trace_ops`` and graph capture all watch ops through
this module.  Every dispatch entry (``Function.apply`` and its fast twins in
``autograd/function.py``, the Tensor operator fast paths, the autograd
engine's call of a node's backward, a DataLoader fetch) reads one attribute,
``hook.observer``; it is ``None`` unless something observes, so the cost of
this module when nothing observes is that single check.

While an observer is active the fast paths that skip ``_apply`` step aside
(their guard includes ``hook.observer is None``), so every op reaches
``_apply`` (or ``_apply_user``), which reports it once.  Fast paths change
speed, never results, so observing changes no value.

An observer implements two methods::

    class Printer(Observer):
        def begin(self, kind, what, args):   # kind: "op", "backward" or "region"
            return time.perf_counter()        # a token, handed back to end()
        def end(self, token, result):
            print(time.perf_counter() - token)

``kind == "op"``: ``what`` is the Function class and ``args`` the op's
arguments (Tensors and plain values); ``result`` its output.  ``"backward"``:
``what`` is the graph node, ``args`` the incoming gradients, ``result`` the
gradients it returns.  ``"region"``: ``what`` is a name (optimizer steps,
DataLoader fetches, ``record_function`` ranges).

Example::

    >>> import fabric
    >>> from fabric.autograd import observe
    >>> class Names(observe.Observer):
    ...     def __init__(self): self.seen = []
    ...     def begin(self, kind, what, args): self.seen.append(observe.event_name(kind, what))
    >>> names = Names()
    >>> with observe.observing(names):
    ...     y = fabric.ones(2, requires_grad=True) * 3.0
    >>> names.seen
    ['aten::mul']
"""
from __future__ import annotations

import contextlib
import re
import threading

__all__ = ["Observer", "observing", "add_observer", "remove_observer", "event_name", "hook"]


class Observer:
    """Base class: ``begin`` returns a token that ``end`` receives."""

    def begin(self, kind: str, what, args):
        return None

    def end(self, token, result) -> None:
        pass


class _Hook:
    """Holds the active dispatcher (``None``: nothing observes)."""

    __slots__ = ("observer",)

    def __init__(self):
        self.observer: _Dispatcher | None = None


hook = _Hook()


class _Dispatcher:
    """Fans one dispatch out to every active observer.

    An entry point that sees ``hook.observer`` set calls
    ``observer.claim()``; when it answers True the entry hands the call to
    :meth:`call`, which tells the observers and calls the entry again.  That
    second call must run the op itself, so ``call`` leaves a per-thread
    token that makes the very next ``claim()`` answer False; ops nested in
    it (a backward formula's ops, a user Function's forward) are observed.
    """

    def __init__(self, observers):
        self.observers = tuple(observers)
        self._tls = threading.local()

    def claim(self) -> bool:
        tls = self._tls
        if getattr(tls, "resume", False):
            tls.resume = False
            return False
        return True

    def open(self, kind, what, args):
        """Tell every observer that a range begins; returns what :meth:`close` needs."""
        return [(o, o.begin(kind, what, args)) for o in self.observers]

    def close(self, opened, result=None) -> None:
        for o, token in reversed(opened):
            o.end(token, result)

    def run(self, kind, what, args, fn, *fn_args):
        """Call ``fn(*fn_args)`` as a range (``fn`` is not an entry point that claims)."""
        opened = self.open(kind, what, args)
        result = None
        try:
            result = fn(*fn_args)
            return result
        finally:
            self.close(opened, result)

    def call(self, kind, what, args, entry, *entry_args):
        opened = self.open(kind, what, args)
        result = None
        self._tls.resume = True
        try:
            result = entry(*entry_args)
            return result
        finally:
            self._tls.resume = False
            self.close(opened, result)


_observers: list = []
_lock = threading.Lock()


def _install():
    hook.observer = _Dispatcher(_observers) if _observers else None


def add_observer(observer: Observer) -> None:
    """Start reporting every dispatch to ``observer``."""
    with _lock:
        _observers.append(observer)
        _install()


def remove_observer(observer: Observer) -> None:
    with _lock:
        for i, o in enumerate(_observers):
            if o is observer:
                del _observers[i]
                break
        _install()


@contextlib.contextmanager
def observing(observer: Observer):
    """``with observing(obs): ...`` reports the block's dispatches to ``obs``."""
    add_observer(observer)
    try:
        yield observer
    finally:
        remove_observer(observer)


def region(name: str, fn, *args):
    """Call ``fn(*args)`` as a named region when something observes."""
    d = hook.observer
    if d is None:
        return fn(*args)
    return d.call("region", name, (), fn, *args)


_NAMES: dict = {}
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def op_name(cls) -> str:
    """PyTorch-style name of a Function's op: ``Mul`` -> ``aten::mul``,
    ``MatMul`` (node ``MmBackward0``) -> ``aten::mm``; in-place ops end in
    ``_``; user Functions keep their class name."""
    name = _NAMES.get(cls)
    if name is None:
        if not getattr(cls, "_array_forward", False):
            name = cls.__name__
        else:
            node = cls._Node.__name__
            base = node.rstrip("0123456789")
            base = base[:-len("Backward")] if base.endswith("Backward") else base
            name = "aten::" + _CAMEL.sub("_", base).lower() + ("_" if cls._is_inplace else "")
        _NAMES[cls] = name
    return name


def event_name(kind: str, what) -> str:
    """The name an event of ``kind`` about ``what`` is shown under."""
    if kind == "op":
        return op_name(what)
    if kind == "backward":
        name = type(what).__name__
        return "torch::autograd::AccumulateGrad" if name == "AccumulateGrad" else name
    return str(what)
