"""Graph inspection and saved-tensor hooks, as in ``torch.autograd.graph``.

Example::

    >>> import fabric
    >>> x = fabric.tensor([1.0, 2.0], requires_grad=True)
    >>> seen = []
    >>> with fabric.autograd.graph.saved_tensors_hooks(lambda t: seen.append(t) or t, lambda t: t):
    ...     y = (x * x).sum()
    >>> y.backward(); x.grad, len(seen)
    (tensor([2., 4.]), 2)
"""
from __future__ import annotations

import functools
import threading
from typing import Any, NamedTuple

from . import function as _function
from .engine import _GraphTask, will_execute
from .function import Node, RemovableHandle

__all__ = ["saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks", "register_multi_grad_hook",
           "allow_mutation_on_saved_tensors", "Node", "GradientEdge", "get_gradient_edge", "increment_version",
           "RemovableHandle"]


class GradientEdge(NamedTuple):
    """Where a given tensor's gradient is computed in the graph: ``(node,
    output_nr)``.  ``autograd.grad(loss, get_gradient_edge(x))`` equals
    ``autograd.grad(loss, x)``."""

    node: Any
    output_nr: int
    ownership_token: Any = None


def _grad_fn_or_acc(t):
    if isinstance(t, GradientEdge):
        return t.node
    if t.requires_grad and t.grad_fn is None:
        return t._grad_accumulator_node()
    return t.grad_fn


def get_gradient_edge(tensor) -> GradientEdge:
    """The :class:`GradientEdge` of ``tensor`` (its grad_fn, or its
    AccumulateGrad node for a leaf).

    Example::

        >>> import fabric
        >>> x = fabric.tensor(3.0, requires_grad=True)
        >>> y = x * x
        >>> fabric.autograd.grad(y * 2, fabric.autograd.graph.get_gradient_edge(y))
        (tensor(2.),)
    """
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does not require gradients")
    if tensor.grad_fn is not None:
        from .function import _edge

        node, nr = _edge(tensor)
        return GradientEdge(node, nr)
    return GradientEdge(tensor._grad_accumulator_node(), 0)


def increment_version(tensor) -> None:
    """Bump the version counter of ``tensor`` (or of each tensor in an
    iterable), as an in-place op would: saved copies of it then fail their
    version check in backward."""
    for t in ((tensor,) if hasattr(tensor, "_bump_version") else tensor):  # a Tensor, or an iterable of them
        t._bump_version()


class saved_tensors_hooks:
    """Inside this context, every tensor an op saves for backward is passed
    to ``pack_hook`` and the result is stored instead; backward calls
    ``unpack_hook`` on it to get the tensor back.  Nested contexts: the
    innermost wins.  (Values a built-in op keeps as plain attributes of its
    node rather than through ``save_for_backward`` are not hooked.)
    """

    def __init__(self, pack_hook, unpack_hook) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> None:
        if _disabled.message is not None:
            raise RuntimeError(_disabled.message)
        local = _function.saved_hooks_local
        local.stack = local.stack + ((self.pack_hook, self.unpack_hook),)
        _function.saved_hooks.append(None)

    def __exit__(self, *exc) -> None:
        local = _function.saved_hooks_local
        local.stack = local.stack[:-1]
        _function.saved_hooks.pop()


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are moved to CPU in forward and back to their device in
    backward (``pin_memory`` is accepted; host memory is not pinned here).

    Example::

        >>> import fabric
        >>> x = fabric.tensor([1.0, 2.0], requires_grad=True)
        >>> with fabric.autograd.graph.save_on_cpu():
        ...     y = (x.exp() * x).sum()
        >>> y.backward(); x.grad
        tensor([ 5.4366, 22.1672])
    """

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack_to_cpu(t):
            return (t.device, t.cpu())

        def unpack_from_cpu(packed):
            device, t = packed
            return t.to(device)

        super().__init__(pack_to_cpu, unpack_from_cpu)


class _Disabled(threading.local):
    message: Any = None


_disabled = _Disabled()


class disable_saved_tensors_hooks:
    """Context (or decorator) inside which entering ``saved_tensors_hooks``
    raises ``RuntimeError(error_message)``."""

    def __init__(self, error_message: str) -> None:
        self.error_message = error_message

    def __enter__(self) -> None:
        self._prev = _disabled.message
        _disabled.message = self.error_message

    def __exit__(self, *exc) -> None:
        _disabled.message = self._prev

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(self.error_message):
                return fn(*args, **kwargs)
        return wrapper


class _MultiHandle:
    __slots__ = ("handles",)

    def __init__(self, handles) -> None:
        self.handles = handles

    def remove(self) -> None:
        for h in self.handles:
            h.remove()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


def register_multi_grad_hook(tensors, fn, *, mode: str = "all"):
    """Run ``fn`` once per backward pass over the gradients of ``tensors``.

    ``mode="all"``: ``fn(grads)`` after every gradient of ``tensors`` that
    this pass computes is ready (``None`` for the others).  ``mode="any"``:
    ``fn(grad)`` with the first one computed.

    Example::

        >>> import fabric
        >>> a = fabric.ones(2, requires_grad=True); b = fabric.ones(2, requires_grad=True)
        >>> c = a * b
        >>> h = fabric.autograd.graph.register_multi_grad_hook((a, b, c), lambda g: print([x is not None for x in g]))
        >>> c.sum().backward(inputs=(a,))
        [True, False, True]
    """
    supported_modes = ("all", "any")
    if mode not in supported_modes:
        raise ValueError(f"Expects mode to be one of {supported_modes} but got {mode}")
    lock = threading.Lock()
    tensors = tuple(tensors)
    if mode == "all":
        count: dict = {}
        buffer: dict = {}
        nodes = [_grad_fn_or_acc(t) for t in tensors]
        n = len(tensors)

        def inner(idx):
            def hook(grad):
                task = _GraphTask.current
                tid = -1 if task is None else task[0]
                with lock:
                    seen = count.get(tid, 0)
                    count[tid] = seen + 1
                    buf = buffer.setdefault(tid, [None] * n)
                    if seen == 0:
                        buffer[(tid, "calls")] = sum(map(will_execute, nodes))
                buf[idx] = grad
                if seen == buffer[(tid, "calls")] - 1:
                    del count[tid], buffer[tid], buffer[(tid, "calls")]
                    fn(buf)
            return hook

        handles = tuple(t.register_hook(inner(i)) for i, t in enumerate(tensors))
    else:
        ran: dict = {}

        @functools.wraps(fn)
        def wrapped(grad):
            task = _GraphTask.current
            tid = -1 if task is None else task[0]
            with lock:
                prev = ran.get(tid, False)
                ran[tid] = True
            if not prev:
                fn(grad)

        handles = tuple(t.register_hook(wrapped) for t in tensors if t.requires_grad)
    return _MultiHandle(handles)


class allow_mutation_on_saved_tensors:
    """Not supported: fabric raises on in-place changes of saved tensors."""

    def __enter__(self):
        raise NotImplementedError("fabric.autograd.graph.allow_mutation_on_saved_tensors is not supported; clone "
                                  "the tensor before modifying it in place")

    def __exit__(self, *exc):
        return None
