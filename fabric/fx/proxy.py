"""``fabric.fx.Proxy``: a stand-in value that records what is done to it into a :class:`Graph`.

Operators record ``call_function`` nodes (``operator.add`` ...), attribute
reads ``getattr`` nodes, method calls ``call_method`` nodes.  Using a proxy in
Python control flow (``if proxy:``, ``len(proxy)``) raises :class:`TraceError`.

Example::

    >>> from fabric import fx
    >>> tracer = fx.Tracer(); tracer.graph = fx.Graph()
    >>> x = fx.Proxy(tracer.graph.placeholder("x"), tracer)
    >>> y = (x * 2).relu()
    >>> y.node.op, y.node.target
    ('call_method', 'relu')
"""
from __future__ import annotations

import dis
import inspect
import operator
import sys
from bisect import bisect_left

from .node import Node

__all__ = ["Proxy", "Attribute", "TraceError", "TracerBase"]


class TraceError(ValueError):
    pass


class TracerBase:
    """What a :class:`Proxy` needs from its tracer: ``create_proxy``, ``create_arg``, control-flow hooks."""

    graph = None
    record_stack_traces = False

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None) -> Node:
        node = self.graph.create_node(kind, target, args, kwargs, name, type_expr)
        if self.record_stack_traces:
            node.stack_trace = _user_stack()
        return node

    def proxy(self, node: Node) -> Proxy:
        return Proxy(node, self)

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None, proxy_factory_fn=None):
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        return self.proxy(node) if proxy_factory_fn is None else proxy_factory_fn(node)

    def create_arg(self, a):
        from .node import map_aggregate

        def leaf(x):
            if isinstance(x, Proxy):
                return x.node
            return x
        return map_aggregate(a, leaf)

    def to_bool(self, obj: Proxy) -> bool:
        raise TraceError("symbolically traced variables cannot be used as inputs to control flow")

    def iter(self, obj: Proxy):
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the Proxy is used in a loop "
                         "or as a *args or **kwargs function argument. See the fabric.fx docs on "
                         "docs/graph.md for a more detailed explanation of what types of control flow can be "
                         "traced, and check out the Proxy docstring for help troubleshooting Proxy iteration "
                         "errors")

    def keys(self, obj: Proxy):
        return Attribute(obj, "keys")()

    def to_len(self, obj: Proxy) -> int:
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want this call to "
                           "be recorded, please call fabric.fx.wrap('len') at module scope")


def _user_stack() -> str:
    """The traceback of the traced code, without fabric.fx's own frames."""
    import os
    import traceback
    here = os.path.dirname(os.path.abspath(__file__))
    frames = [f for f in traceback.extract_stack() if not os.path.abspath(f.filename).startswith(here)]
    return "".join(traceback.format_list(frames[-5:]))


class Proxy:
    """A traced value; ``proxy.node`` is the node that produces it."""

    def __init__(self, node: Node, tracer: TracerBase | None = None):
        self.node = node
        self.tracer = tracer

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    def __getattr__(self, k: str):
        if k.startswith("__") and k.endswith("__"):
            raise AttributeError(k)
        return Attribute(self, k)

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __iter__(self):
        # ``a, b = proxy`` unpacks into getitem nodes; any other iteration is control flow
        frame = inspect.currentframe().f_back
        insts = list(dis.get_instructions(frame.f_code))
        if sys.version_info >= (3, 11):
            idx = bisect_left([i.offset for i in insts], frame.f_lasti)
        else:
            idx = frame.f_lasti // 2
        if idx < len(insts) and insts[idx].opname == "UNPACK_SEQUENCE":
            return (self[i] for i in range(insts[idx].argval))
        return self.tracer.iter(self)

    def __bool__(self) -> bool:
        return self.tracer.to_bool(self)

    def __len__(self) -> int:
        return self.tracer.to_len(self)

    def keys(self):
        return self.tracer.keys(self)

    def __hash__(self) -> int:
        return id(self)

    def __abs__(self):
        return self.tracer.create_proxy("call_function", operator.abs, (self,), {})

    def __index__(self):
        raise TraceError("symbolically traced variables cannot be used as Python integers (__index__)")

    def __deepcopy__(self, memo):
        raise TraceError("Proxy objects cannot be deep-copied while tracing")


class Attribute(Proxy):
    """``proxy.attr``: a ``getattr`` node made on first use, or a ``call_method`` node when called."""

    def __init__(self, root: Proxy, attr: str):
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node = None

    @property
    def node(self) -> Node:
        if self._node is None:
            import builtins
            self._node = self.tracer.create_proxy("call_function", builtins.getattr, (self.root, self.attr), {}).node
        return self._node

    @node.setter
    def node(self, n):
        self._node = n

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


def _binary(fn):
    def impl(self, other):
        return self.tracer.create_proxy("call_function", fn, (self, other), {})

    def rimpl(self, other):
        return self.tracer.create_proxy("call_function", fn, (other, self), {})
    return impl, rimpl


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and_", "or_", "xor",
              "lshift", "rshift"):
    _fn = getattr(operator, _name)
    _dunder = _name.rstrip("_")
    _impl, _rimpl = _binary(_fn)
    setattr(Proxy, f"__{_dunder}__", _impl)
    setattr(Proxy, f"__r{_dunder}__", _rimpl)

for _name in ("eq", "ne", "lt", "le", "gt", "ge", "getitem"):
    setattr(Proxy, f"__{_name}__", _binary(getattr(operator, _name))[0])

for _name in ("neg", "pos", "invert"):
    def _unary(fn):
        def impl(self):
            return self.tracer.create_proxy("call_function", fn, (self,), {})
        return impl
    setattr(Proxy, f"__{_name}__", _unary(getattr(operator, _name)))

Proxy.__hash__ = lambda self: id(self)
