"""Concrete tracing: run ``forward`` on real example inputs and record every fabric op it performs.

The core of ``jit.trace``.  A :class:`ConcreteProxy` carries a real value
beside its node: each recorded op is also computed, so any Python runs, and
tracing goes through every submodule down to fabric's public functions
(``F.linear``, ``fabric.matmul``, tensor methods and operators).

A Python value read out of a tensor (``.item()``, ``bool()``, ``len()``,
``int()``, ``.tolist()``; and shapes, reported with kind ``"shape"``) is
baked into the graph as a constant and reported to
:meth:`ConcreteTracer.on_constant`; ``jit.trace`` turns that into a
``TracerWarning``.  Functions modules keep as attributes (``self.activation =
F.gelu``) are recorded too; a traced tensor's internals (``x._data``) read by a
function the tracer does not see raise (:meth:`ConcreteTracer.on_internal_read`).

Example::

    >>> import fabric
    >>> from fabric import nn
    >>> from fabric.fx._concrete import concrete_trace
    >>> m = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
    >>> gm = concrete_trace(m, (fabric.ones(1, 3),))
    >>> [n.target.__name__ for n in gm.graph.nodes if n.op == "call_function"]
    ['linear', 'relu']
"""
from __future__ import annotations

import inspect
import operator
from typing import Any

from .._tensor import Tensor
from ..nn.modules.module import Module
from ._symbolic_trace import Tracer
from .graph import Graph
from .graph_module import GraphModule
from .node import map_aggregate
from .proxy import Proxy

__all__ = ["ConcreteProxy", "ConcreteTracer", "concrete_trace"]

# attributes of a tensor that are plain Python facts, read without a node
_META_ATTRS = {"shape": "shape", "ndim": "shape", "dtype": None, "device": None, "requires_grad": None,
               "is_cuda": None, "layout": None, "is_leaf": None, "is_sparse": None, "is_nested": None,
               "is_quantized": None, "is_meta": None, "names": None, "is_mkldnn": None, "grad_fn": None}
# methods whose result is a Python value taken from the tensor's data (or its shape)
_DATA_METHODS = {"item": "item", "tolist": "tolist", "numpy": "numpy", "__bool__": "bool", "__len__": "len",
                 "__int__": "int", "__float__": "float", "__index__": "int", "size": "shape", "dim": "shape",
                 "numel": "shape", "nelement": "shape", "stride": None, "is_contiguous": None,
                 "is_floating_point": None, "is_complex": None, "element_size": None, "data_ptr": None,
                 "get_device": None, "storage_offset": None, "equal": "bool", "allclose": "bool",
                 "type": None}


def _has_tensor(v) -> bool:
    if isinstance(v, Tensor):
        return True
    if isinstance(v, (tuple, list)):
        return any(_has_tensor(e) for e in v)
    if isinstance(v, dict):
        return any(_has_tensor(e) for e in v.values())
    return False


def _unwrap(a):
    return map_aggregate(a, lambda x: x.value if isinstance(x, ConcreteProxy) else x)


class ConcreteProxy(Proxy):
    """A proxy with a real ``value``; ``isinstance(p, fabric.Tensor)`` is True when the value is a tensor."""

    def __init__(self, node, tracer, value):
        self.node = node
        self.tracer = tracer
        self.value = value

    @property
    def __class__(self):
        return type(self.value) if isinstance(self.value, Tensor) else ConcreteProxy

    def __repr__(self) -> str:
        return f"ConcreteProxy({self.node.name}, {self.value!r})"

    def __getattr__(self, k: str):
        if k.startswith("__") and k.endswith("__"):
            raise AttributeError(k)
        value = getattr(self.value, k)
        if callable(value) and not isinstance(value, Tensor):
            return _BoundMethod(self, k)
        if k in _META_ATTRS:
            kind = _META_ATTRS[k]
            if kind is not None:
                self.tracer.on_constant(kind, value, f"{self.node.name}.{k}")
            return value
        if k.startswith("_") and isinstance(self.value, Tensor):
            self.tracer.on_internal_read(k, f"{self.node.name}.{k}")
        return self.tracer.create_proxy("call_function", getattr, (self, k), {})

    def __iter__(self):
        v = self.value
        if isinstance(v, Tensor):
            self.tracer.on_constant("len", len(v), f"iterating over {self.node.name}")
        return iter([self[i] for i in range(len(v))])

    def __len__(self) -> int:
        n = len(self.value)
        if isinstance(self.value, Tensor):
            self.tracer.on_constant("len", n, f"len({self.node.name})")
        return n

    def __bool__(self) -> bool:
        b = bool(self.value)
        if isinstance(self.value, Tensor):
            self.tracer.on_constant("bool", b, f"bool({self.node.name})")
        return b

    def __int__(self) -> int:
        return self._to_python(int, "int")

    def __float__(self) -> float:
        return self._to_python(float, "float")

    def __index__(self) -> int:
        return self._to_python(operator.index, "int")

    def __complex__(self):
        return self._to_python(complex, "float")

    def _to_python(self, fn, kind):
        v = fn(self.value)
        self.tracer.on_constant(kind, v, f"{kind}({self.node.name})")
        return v

    def __contains__(self, item):
        return _unwrap(item) in self.value

    def keys(self):
        return self.value.keys()

    def __format__(self, spec):
        return format(self.value, spec)

    def __array__(self, dtype=None, copy=None):
        self.tracer.on_constant("numpy", None, f"{self.node.name}.__array__")
        return self.value.__array__(dtype) if dtype is not None else self.value.__array__()

    # in-place operators are recorded as the in-place Tensor method
    def _inplace(name):
        def impl(self, other):
            return self.tracer.create_proxy("call_method", name, (self, other), {})
        return impl
    __iadd__ = _inplace("add_")
    __isub__ = _inplace("sub_")
    __imul__ = _inplace("mul_")
    __itruediv__ = _inplace("div_")
    del _inplace


class _BoundMethod:
    """``proxy.method`` before it is called: calling records ``call_method``."""

    def __init__(self, proxy: ConcreteProxy, name: str):
        self.proxy, self.name = proxy, name

    def __call__(self, *args, **kwargs):
        if self.name in _DATA_METHODS:
            value = getattr(self.proxy.value, self.name)(*_unwrap(args), **_unwrap(kwargs))
            kind = _DATA_METHODS[self.name]
            if kind is not None and isinstance(self.proxy.value, Tensor):
                self.proxy.tracer.on_constant(kind, value, f"{self.proxy.node.name}.{self.name}()")
            if not _has_tensor(value):
                return value
        return self.proxy.tracer.create_proxy("call_method", self.name, (self.proxy,) + args, kwargs)


class ConcreteTracer(Tracer):
    """Records the ops a call performs on real inputs; traces through every module.

    Subclasses override :meth:`on_constant` to react to Python values read from
    tensors (``jit.trace`` warns).  ``trace_result`` holds the eager result.
    """

    def __init__(self, leaf_modules: tuple = ()):
        super().__init__()
        self.leaf_modules = tuple(leaf_modules)
        self.trace_result = None
        self.constants: list[tuple[str, Any, str]] = []

    def on_constant(self, kind: str, value, where: str) -> None:
        """Called when a Python value read from a traced tensor is baked into the graph.

        ``kind`` is ``"item"``, ``"tolist"``, ``"bool"``, ``"len"``, ``"int"``, ``"float"``, ``"numpy"`` (data)
        or ``"shape"`` (sizes).  The default records it in ``self.constants``.
        """
        self.constants.append((kind, value, where))

    def on_internal_read(self, attr: str, where: str) -> None:
        """Called when fabric's internals of a traced tensor (``x._data``) are read through a proxy.

        Only a function the tracer does not record does that, and what it computes from the raw
        array would be frozen into the graph as a constant, so the default raises ``RuntimeError``.
        """
        raise RuntimeError(f"tracing read the internal attribute {attr!r} of a traced tensor ({where}): the function "
                           "reading it is not recorded, so its result would be a constant of the trace and wrong "
                           "on other inputs; call fabric's public functions there, or register it with fabric.fx.wrap")

    def is_leaf_module(self, m: Module, module_qualified_name: str) -> bool:
        return isinstance(m, self.leaf_modules) if self.leaf_modules else False

    def call_module(self, m: Module, forward, args, kwargs):
        if self.leaf_modules and isinstance(m, self.leaf_modules):
            return self.create_proxy("call_module", self.path_of_module(m), args, kwargs)
        fwd = type(m).forward
        if hasattr(fwd, "__globals__"):
            self._patcher.patch_globals(fwd.__globals__)
        self._patcher.patch_class(type(m))
        return forward(*args, **kwargs)

    def getattr(self, attr: str, attr_val, parameter_proxy_cache: dict):
        if isinstance(attr_val, Tensor):
            path = self.tensor_attrs.get(id(attr_val))
            if path is not None:
                proxy = parameter_proxy_cache.get(path)
                if proxy is None:
                    node = self.create_node("get_attr", path, (), {})
                    proxy = parameter_proxy_cache[path] = ConcreteProxy(node, self, attr_val)
                return proxy
        return attr_val

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None, proxy_factory_fn=None):
        a, kw = _unwrap(args), _unwrap(kwargs)
        if kind == "call_function":
            value = target(*a, **kw)
        elif kind == "call_method":
            value = getattr(a[0], target)(*a[1:], **kw)
        elif kind == "call_module":
            value = self.root.get_submodule(target)(*a, **kw)
        elif kind == "get_attr":
            value = self.root
            for atom in target.split("."):
                value = getattr(value, atom)
        else:
            raise ValueError(f"ConcreteTracer.create_proxy: unexpected kind {kind!r}")
        if not _has_tensor(value) and kind != "get_attr":
            return value  # a Python fact (a dtype, a bool of a shape check ...): a constant
        node = self.create_node(kind, target, self.create_arg(args), self.create_arg(kwargs), name, type_expr)
        return ConcreteProxy(node, self, value)

    def trace(self, root, example_inputs: tuple = (), example_kwarg_inputs: dict | None = None) -> Graph:
        """Trace ``root`` (a Module or a function) called on the example inputs."""
        self._example = (tuple(example_inputs), dict(example_kwarg_inputs or {}))
        return super().trace(root)

    def _create_args_for_root(self, fn, is_module: bool, concrete_args) -> list:
        args, kwargs = self._example
        if is_module:
            self._patcher.patch_class(type(self.root))
            _patch_stored_functions(self._patcher, self.root)
        sig = inspect.signature(fn)
        params = list(sig.parameters.values())[1 if is_module else 0:]
        bound = inspect.Signature(params).bind(*args, **kwargs)
        out: list = [self.root] if is_module else []
        for p in params:
            if p.name not in bound.arguments:
                continue
            value = bound.arguments[p.name]
            if p.kind is inspect.Parameter.VAR_POSITIONAL:
                for i, v in enumerate(value):
                    out.append(ConcreteProxy(self.create_node("placeholder", f"{p.name}_{i}", (), {}), self, v))
                continue
            if p.kind in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.KEYWORD_ONLY):
                raise NotImplementedError("concrete tracing passes inputs positionally; keyword-only parameters "
                                          "are not supported")
            out.append(ConcreteProxy(self.create_node("placeholder", p.name, (), {}), self, value))
        return out

    def _root_callable(self, fn):
        return fn   # *args elements are separate placeholders here

    def _finish(self, result):
        self.trace_result = _unwrap(result)
        return result


def _patch_stored_functions(patcher, root: Module) -> None:
    """Record the fabric functions that modules keep as instance attributes (TransformerEncoderLayer's
    ``self.activation = F.gelu``), which patching module globals and classes cannot reach."""
    from . import _patch
    _patch._scan()
    wrappable = _patch._wrappable
    assert wrappable is not None
    for m in root.modules():
        for name, obj in list(vars(m).items()):
            if callable(obj) and not isinstance(obj, (Module, Tensor)) and wrappable.get(id(obj)) is obj:
                patcher.patch_dict(vars(m), name, patcher.wrapper_for(obj))


def concrete_trace(root, example_inputs: tuple, example_kwarg_inputs: dict | None = None, *,
                   tracer: ConcreteTracer | None = None) -> GraphModule:
    """Trace ``root`` on real inputs into a :class:`GraphModule` (``tracer.trace_result`` holds the output)."""
    tracer = tracer if tracer is not None else ConcreteTracer()
    graph = tracer.trace(root, example_inputs, example_kwarg_inputs)
    name = type(root).__name__ if isinstance(root, Module) else getattr(root, "__name__", "traced")
    gm = GraphModule(tracer.root, graph, name)
    return gm
