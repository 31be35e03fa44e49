"""``fabric.fx.symbolic_trace`` and ``Tracer``: run ``forward`` on proxies and record a :class:`Graph`.

Example::

    >>> import fabric
    >>> from fabric import fx
    >>> def f(x, y):
    ...     return fabric.relu(x) + y.sum(dim=0)
    >>> gm = fx.symbolic_trace(f)
    >>> [n.op for n in gm.graph.nodes]
    ['placeholder', 'placeholder', 'call_function', 'call_method', 'call_function', 'output']
    >>> gm(fabric.tensor([-1.0, 2.0]), fabric.ones(3, 2)).tolist()
    [3.0, 5.0]
"""
from __future__ import annotations

import builtins
import inspect
import types
from collections.abc import Callable
from typing import Any

from .._device import device as _device_cls
from .._dtype import dtype as _dtype_cls
from .._tensor import Tensor
from ..nn.modules.container import Sequential
from ..nn.modules.module import Module
from ._patch import Patcher
from .graph import Graph
from .graph_module import GraphModule
from .node import Node, map_aggregate
from .proxy import Proxy, TraceError, TracerBase

__all__ = ["Tracer", "symbolic_trace", "wrap", "PH"]

_wrapped_fns_to_patch: list[tuple[dict, str]] = []
_BASE_TYPES = (int, float, bool, str, complex, bytes, type(None), type(Ellipsis), _dtype_cls, _device_cls, slice)


class PHBase:
    """Marks a ``concrete_args`` entry that should stay an input (a placeholder)."""

    def __repr__(self) -> str:
        return "PH"


PH = PHBase()


def wrap(fn_or_name):
    """Record calls to a module-level function as ``call_function`` nodes instead of tracing into it.

    Call at module scope: ``fx.wrap("my_fn")`` or as a decorator ``@fx.wrap``.

    Example::

        >>> from fabric import fx
        >>> def helper(x):
        ...     return len(x)          # would fail on a Proxy
        >>> _ = fx.wrap(helper)
    """
    frame = inspect.currentframe().f_back
    if frame.f_code.co_name != "<module>" and frame.f_globals is not frame.f_locals:
        raise NotImplementedError("wrap must be called at the top level of a module")
    name = fn_or_name if isinstance(fn_or_name, str) else fn_or_name.__name__
    if not isinstance(fn_or_name, str) and not callable(fn_or_name):
        raise AssertionError("Unsupported type for global function! Must be either a callable or string name")
    _wrapped_fns_to_patch.append((frame.f_globals, name))
    return fn_or_name


class Tracer(TracerBase):
    """Turns ``forward`` into a :class:`Graph`; subclass and override ``is_leaf_module`` / ``create_proxy`` ...

    Modules defined in ``fabric.nn`` (but not ``Sequential``) are leaves: they
    become ``call_module`` nodes.  Other modules are traced through.
    """

    def __init__(self, autowrap_modules=(), autowrap_functions=(), param_shapes_constant: bool = False):
        self._autowrap_functions = tuple(autowrap_functions)
        self._autowrap_modules = tuple(autowrap_modules)
        self.param_shapes_constant = param_shapes_constant
        self.root: Module | None = None
        self.graph: Graph | None = None
        self.submodule_paths: dict[int, str] | None = None
        self.tensor_attrs: dict[int, str] = {}
        self.scope = ""

    # --- what becomes a node --------------------------------------------------------
    def is_leaf_module(self, m: Module, module_qualified_name: str) -> bool:
        mod = type(m).__module__
        return (mod.startswith("fabric.nn") or mod.startswith("torch.nn")) and not isinstance(m, Sequential)

    def path_of_module(self, mod: Module) -> str:
        path = self.submodule_paths.get(id(mod))
        if path is None:
            raise NameError("module is not installed as a submodule")
        return path

    def call_module(self, m: Module, forward: Callable, args: tuple, kwargs: dict):
        """A leaf becomes one ``call_module`` node; any other module is traced through."""
        module_qualified_name = self.path_of_module(m)
        if not self.is_leaf_module(m, module_qualified_name):
            fwd = type(m).forward
            if hasattr(fwd, "__globals__"):
                self._patcher.patch_globals(fwd.__globals__)
            return forward(*args, **kwargs)
        return self.create_proxy("call_module", module_qualified_name, args, kwargs)

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict):
        """A parameter or buffer read through ``self.name`` becomes a (cached) ``get_attr`` node."""
        if isinstance(attr_val, Tensor):
            path = self.tensor_attrs.get(id(attr_val))
            if path is not None:
                proxy = parameter_proxy_cache.get(path)
                if proxy is None:
                    proxy = parameter_proxy_cache[path] = self.create_proxy("get_attr", path, (), {})
                return proxy
        return attr_val

    def create_arg(self, a: Any):
        """Turn an argument into what a node stores: nodes, constants, ``get_attr`` for tensors."""
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, Node):
            return a
        if isinstance(a, tuple):
            return type(a)(*(self.create_arg(e) for e in a)) if hasattr(a, "_fields") else \
                tuple(self.create_arg(e) for e in a)
        if isinstance(a, list):
            return [self.create_arg(e) for e in a]
        if isinstance(a, dict):
            return {k: self.create_arg(v) for k, v in a.items()}
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop), self.create_arg(a.step))
        if isinstance(a, Tensor):
            path = self.tensor_attrs.get(id(a))
            if path is None:
                i = 0
                while hasattr(self.root, f"_tensor_constant{i}"):
                    i += 1
                path = f"_tensor_constant{i}"
                setattr(self.root, path, a)
                self.tensor_attrs[id(a)] = path
            return self.create_node("get_attr", path, (), {})
        if isinstance(a, Module):
            path = self.submodule_paths.get(id(a)) if self.submodule_paths else None
            if path:  # a submodule passed as a value (a branch of control_flow.cond): read it with get_attr
                return self.create_node("get_attr", path, (), {})
            raise TraceError(f"a module ({type(a).__name__}) cannot be passed as an argument while tracing; "
                             "call it instead")
        if isinstance(a, _BASE_TYPES) or callable(a):
            return a
        if type(a).__module__.startswith("numpy"):
            return a
        raise NotImplementedError(f"argument of type: {type(a)}")

    # --- tracing ---------------------------------------------------------------------
    def _collect_paths(self, root: Module) -> None:
        self.submodule_paths = {id(m): name for name, m in root.named_modules(remove_duplicate=False)
                                if name or m is root}
        self.submodule_paths[id(root)] = ""
        self.tensor_attrs = {}
        for name, p in root.named_parameters(remove_duplicate=False):
            self.tensor_attrs.setdefault(id(p), name)
        for name, b in root.named_buffers(remove_duplicate=False):
            self.tensor_attrs.setdefault(id(b), name)

    def trace(self, root, concrete_args: dict | None = None) -> Graph:
        """Trace ``root`` (a Module or a function) and return its graph."""
        if isinstance(root, Module):
            self.root = root
            fn = type(root).forward
        else:
            self.root = Module()
            fn = root
        self._collect_paths(self.root)
        self.graph = Graph(tracer_cls=type(self))
        fn_globals = getattr(fn, "__globals__", {})
        parameter_proxy_cache: dict = {}
        tracer = self

        with Patcher() as patcher:
            self._patcher = patcher
            args = self._create_args_for_root(fn, isinstance(root, Module), concrete_args)
            orig_getattr = Module.__getattr__
            orig_call = Module.__call__

            def module_getattr_wrapper(mod, attr):
                val = orig_getattr(mod, attr)
                return tracer.getattr(attr, val, parameter_proxy_cache)

            def module_call_wrapper(mod, *a, **kw):
                def forward(*a2, **kw2):
                    return orig_call(mod, *a2, **kw2)
                return tracer.call_module(mod, forward, a, kw)

            patcher.patch_attr(Module, "__getattr__", module_getattr_wrapper)
            patcher.patch_attr(Module, "__call__", module_call_wrapper)
            patcher.patch_namespaces()
            patcher.patch_globals(fn_globals)
            patcher.patch_wrapped(_wrapped_fns_to_patch)
            for m in self._autowrap_modules:
                patcher.patch_module_functions(m)
            for f in self._autowrap_functions:
                patcher.patch_wrapped([(getattr(f, "__globals__", fn_globals), f.__name__)])
            result = self._finish(self._root_callable(fn)(*args))
            self.create_node("output", "output", (self.create_arg(result),), {}, type_expr=None)
        self._patcher = None
        self.submodule_paths = None
        return self.graph

    def _root_callable(self, fn):
        """The function actually called with the placeholders' proxies."""
        return _without_varargs(fn)

    def _finish(self, result):
        """Hook on the value ``forward`` returned, before the output node is made."""
        return result

    def _create_args_for_root(self, fn, is_module: bool, concrete_args: dict | None) -> list:
        sig = inspect.signature(fn)
        params = list(sig.parameters.values())
        args: list = [self.root] if is_module else []
        if is_module:
            params = params[1:]
        concrete_args = dict(concrete_args or {})
        for p in params:
            default = () if p.default is inspect.Parameter.empty else (p.default,)
            if p.kind is inspect.Parameter.VAR_POSITIONAL:
                args.append(self.create_proxy("placeholder", f"*{p.name}", (), {}))
                continue
            if p.kind in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.KEYWORD_ONLY):
                raise NotImplementedError(f"fabric.fx cannot trace a forward with keyword-only or **{p.name} "
                                          "parameters; pass them through concrete_args or a wrapper")
            if p.name in concrete_args:
                value = concrete_args.pop(p.name)
                counter = [0]

                def replace_ph(x, name=p.name, default=default, counter=counter):
                    counter[0] += 1
                    out = self.create_proxy("placeholder", f"{name}_{counter[0]}", default, {})
                    return out if isinstance(x, PHBase) else x
                args.append(map_aggregate(value, replace_ph))
                continue
            args.append(self.create_proxy("placeholder", p.name, default, {}))
        if concrete_args:
            raise TypeError(f"concrete_args names unknown parameters: {sorted(concrete_args)}")
        return args


def _without_varargs(fn):
    """``def f(x, *rest)`` as ``def f(x, rest)``: the ``*rest`` placeholder's proxy is passed as one value, so
    ``rest[0]`` records a getitem (as torch.fx does)."""
    co = getattr(fn, "__code__", None)
    if co is None or not co.co_flags & inspect.CO_VARARGS:
        return fn
    new_co = co.replace(co_flags=co.co_flags & ~inspect.CO_VARARGS, co_argcount=co.co_argcount + 1)
    new = types.FunctionType(new_co, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    new.__kwdefaults__ = fn.__kwdefaults__
    return new


def symbolic_trace(root, concrete_args: dict | None = None) -> GraphModule:
    """Trace a module or function into a :class:`GraphModule`.

    Example::

        >>> import fabric
        >>> from fabric import fx, nn
        >>> class M(nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.lin = nn.Linear(3, 4)
        ...     def forward(self, x):
        ...         return fabric.relu(self.lin(x)) + 1
        >>> print(fx.symbolic_trace(M()).code.strip())
        def forward(self, x):
            lin = self.lin(x);  x = None
            relu = fabric.relu(lin);  lin = None
            add = relu + 1;  relu = None
            return add
    """
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if isinstance(root, Module) else root.__name__
    return GraphModule(tracer.root, graph, name)


builtins_getattr = builtins.getattr
