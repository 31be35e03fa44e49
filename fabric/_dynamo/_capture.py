"""Capture one call of a module or function as an ``fx.Graph`` (the one IR).

Capture is concrete tracing (``fabric.fx._concrete``): the call runs on the real
inputs, so its result *is* the eager result, and every fabric op it performs is
recorded.  Whatever the graph cannot replay faithfully is a *graph break*: the
call's result is still returned, but the captured graph is discarded and that
guard entry runs eagerly from then on (``fullgraph=True`` raises instead).
Breaks: a Python value read from tensor data (``.item()``, ``bool(t)``,
``.tolist()``, ``int(t)``, ``.numpy()``), an op whose output shape depends on
data (``nonzero``, ``masked_select``, boolean-mask indexing ...), fabric
internals (``x._data``) read by a function the tracer does not see, a random
tensor made from Python arguments (``fabric.randn(3)``), an attribute assigned
on a module, a grad-mode change inside the call, a ``compiler.disable``d
function.  Backward is not captured separately: the replayed ops record
autograd as eager ops do, so ``.backward()`` gives eager's gradients.
"""
from __future__ import annotations

import operator

import numpy as np

from .._tensor import Tensor
from ..autograd.grad_mode import is_grad_enabled
from ..fx._concrete import ConcreteProxy, ConcreteTracer, _unwrap
from ..fx.graph_module import GraphModule
from ..nn.modules.module import Module

_DATA_KINDS = {"item", "tolist", "bool", "int", "float", "numpy"}
_DATA_DEPENDENT_SHAPE = {"nonzero", "masked_select", "unique", "unique_consecutive", "argwhere", "bincount",
                         "repeat_interleave", "masked_scatter", "histc", "histogram"}
_RANDOM_FACTORIES = ("rand", "randn", "randint", "randperm", "normal", "poisson", "multinomial", "bernoulli",
                     "empty")

_state: dict = {"depth": 0, "tracers": [], "disabled": 0}


def is_compiling() -> bool:
    return _state["depth"] > 0 and not _state["disabled"]


def current_tracer():
    """The tracer capturing now (None outside capture)."""
    return _state["tracers"][-1] if _state["tracers"] else None


class CompileTracer(ConcreteTracer):
    """A concrete tracer that records graph breaks instead of baking in unsafe constants."""

    def __init__(self):
        super().__init__()
        self.breaks: list[str] = []
        self.constant_tensors: dict[str, Tensor] = {}
        self._grad = is_grad_enabled()
        self.result_untrusted = False   # the traced run itself went wrong: its result must not be returned

    def graph_break(self, reason: str) -> None:
        self.breaks.append(reason)

    def on_constant(self, kind, value, where):
        if kind in _DATA_KINDS:
            self.graph_break(f"data-dependent Python value: {where}")

    def on_internal_read(self, attr, where):
        # fabric's internals (``x._data``) read by a function the tracer does not see: what it computes
        # would be baked into the graph as a constant, and the traced run's own result is suspect too
        self.graph_break(f"internal attribute {attr!r} read from a traced tensor by an untraced function")
        self.result_untrusted = True

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None, proxy_factory_fn=None):
        if is_grad_enabled() != self._grad:
            self.graph_break("grad mode changed inside the compiled call")
        tname = target if isinstance(target, str) else getattr(target, "__name__", "")
        if tname in ("backward", "grad", "register_hook", "retain_grad"):
            self.graph_break(f"{tname} inside the compiled call")
        elif tname in _DATA_DEPENDENT_SHAPE:
            self.graph_break(f"{tname} has a data-dependent output shape")
        elif target is operator.getitem and kind == "call_function":
            idx = _unwrap(args[1])
            for i in (idx if isinstance(idx, tuple) else (idx,)):
                if isinstance(i, Tensor) and i.dtype.np == np.bool_:
                    self.graph_break("boolean-mask indexing has a data-dependent output shape")
        return super().create_proxy(kind, target, args, kwargs, name, type_expr, proxy_factory_fn)

    def create_arg(self, a):
        if isinstance(a, Tensor) and not isinstance(a, ConcreteProxy) and id(a) not in self.tensor_attrs:
            # a tensor made inside the call from Python values: kept as a constant of the graph,
            # stored beside it (not on the user's module)
            path = f"_tensor_constant{len(self.constant_tensors)}"
            self.constant_tensors[path] = a
            self.tensor_attrs[id(a)] = path
        return super().create_arg(a)

    def _create_args_for_root(self, fn, is_module, concrete_args):
        import fabric
        tracer = self

        def random_guard(orig, name):
            def wrapped(*args, **kwargs):
                if not any(isinstance(a, ConcreteProxy) for a in (*args, *kwargs.values())):
                    tracer.graph_break(f"fabric.{name} called with Python arguments inside the compiled call")
                return orig(*args, **kwargs)
            return wrapped
        for name in _RANDOM_FACTORIES:
            if hasattr(fabric, name):
                self._patcher.patch_attr(fabric, name, random_guard(getattr(fabric, name), name))
        orig_setattr = Module.__setattr__

        def setattr_guard(mod, k, v):
            tracer.graph_break(f"attribute {k!r} assigned on a {type(mod).__name__} inside the compiled call")
            orig_setattr(mod, k, v)
        self._patcher.patch_attr(Module, "__setattr__", setattr_guard)
        try:
            return super()._create_args_for_root(fn, is_module, concrete_args)
        except NotImplementedError as e:     # e.g. keyword-only parameters: nothing has run yet
            raise CannotCapture(str(e)) from None


class CannotCapture(Exception):
    """The call cannot be traced at all; raised before any of it ran (the caller runs it eagerly)."""


# capture's result when the call could not even start being traced, or when the traced run itself went
# wrong (an untraced function read a traced tensor's internals): the caller runs the call eagerly, so the
# side effects of that traced run (random draws, running statistics) happened twice in that one case
NOT_RUN = object()


def capture(root, args: tuple, kwargs: dict):
    """Run ``root(*args, **kwargs)`` once while recording it.

    Returns ``(graph_module or None, result, breaks, bindings)``; the graph module
    is None when the call had graph breaks (``breaks`` says why).  ``bindings``
    lists ``(dict, name, tensor)`` for every parameter/buffer the graph holds: the
    graph is valid while ``dict[name] is tensor`` (a reassigned parameter invalidates it).
    """
    tracer = CompileTracer()
    _state["depth"] += 1
    _state["tracers"].append(tracer)
    try:
        graph = tracer.trace(root, args, kwargs)
    except CannotCapture as e:
        return None, NOT_RUN, [f"cannot trace: {e}"], []
    finally:
        _state["depth"] -= 1
        _state["tracers"].pop()
    result = tracer.trace_result
    if tracer.result_untrusted:
        return None, NOT_RUN, tracer.breaks, []
    if tracer.breaks:
        return None, result, tracer.breaks, []
    attrs: dict = dict(tracer.constant_tensors)
    owner = tracer.root
    bindings = []
    for node in graph.nodes:
        if node.op == "get_attr" and node.target not in attrs:
            *path, field = node.target.split(".")
            parent = owner
            for atom in path:
                parent = getattr(parent, atom)
            value = getattr(parent, field)
            attrs[node.target] = value
            for table in ("_parameters", "_buffers"):
                d = parent.__dict__.get(table)
                if d is not None and d.get(field) is value:
                    bindings.append((d, field, value))
        elif node.op == "call_module":   # not made by this tracer (no leaf modules); kept for safety
            attrs[node.target] = owner.get_submodule(node.target)
    name = type(root).__name__ if isinstance(root, Module) else getattr(root, "__name__", "fn")
    return GraphModule(attrs, graph, name), result, [], bindings
