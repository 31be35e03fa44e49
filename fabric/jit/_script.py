"""``ScriptModule`` / ``ScriptFunction`` and ``fabric.jit.script``.

Both hold a ``fabric.fx`` graph and run the Python code generated from it
(``.code``); a ``ScriptModule`` keeps the scripted module's parameters,
buffers and submodule tree (so ``state_dict()`` has the same keys, and
``.to()`` / ``.eval()`` behave as on the original).

Example::

    >>> import fabric
    >>> @fabric.jit.script
    ... def clip_steps(x, n: int):
    ...     for _ in range(n):
    ...         if x.sum() > 1:
    ...             x = x / 2
    ...     return x
    >>> clip_steps(fabric.tensor([4.0, 4.0]), 3)
    tensor([0.5000, 0.5000])
"""
from __future__ import annotations

import inspect

from .. import fx
from ..nn.modules.module import Module
from . import frontend
from ._compiler import Compiler, _ModuleRef

__all__ = ["ScriptModule", "ScriptFunction", "RecursiveScriptModule", "script"]


class _Signature:
    """Argument names and types checked on every call (TorchScript's call-time type check)."""

    def __init__(self, qualname: str, sig):
        self.qualname = qualname
        self.items = [(name, jt, default) for name, jt, default in sig]

    def declaration(self) -> str:
        return f"{self.qualname}(" + ", ".join(f"{jt} {n}" for n, jt, _ in self.items) + ")"

    def check(self, args, kwargs):
        items = self.items
        if len(args) > len(items):
            raise RuntimeError(f"{self.qualname}() expected at most {len(items)} argument(s) but received "
                               f"{len(args)} argument(s). Declaration: {self.declaration()}")
        for i, (name, jt, default) in enumerate(items):
            if i < len(args):
                value = args[i]
            elif name in kwargs:
                value = kwargs[name]
            elif default is not inspect.Parameter.empty:
                continue
            else:
                raise RuntimeError(f"{self.qualname}() is missing value for argument '{name}'. "
                                   f"Declaration: {self.declaration()}")
            if not jt.accepts(value):
                raise RuntimeError(f"{self.qualname}() Expected a value of type '{jt}' for argument '{name}' but "
                                   f"instead found type '{type(value).__name__}'.\nPosition: {i}\n"
                                   f"Value: {value!r}\nDeclaration: {self.declaration()}")


class ScriptFunction:
    """A compiled function: ``.graph``, ``.code``, ``.schema``; calling it runs the graph.

    Example::

        >>> import fabric
        >>> @fabric.jit.script
        ... def add(a, b):
        ...     return a + b
        >>> add(fabric.ones(2), fabric.ones(2))
        tensor([2., 2.])
    """

    def __init__(self, graph_module, signature: _Signature, original=None, name: str = "fn"):
        self._gm = graph_module
        self._signature = signature
        self._original = original
        self.__name__ = self.__qualname__ = name
        self.__doc__ = getattr(original, "__doc__", None)

    @property
    def graph(self) -> fx.Graph:
        return self._gm.graph

    @property
    def code(self) -> str:
        return self._gm.code

    @property
    def name(self) -> str:
        return self.__name__

    @property
    def schema(self) -> str:
        return self._signature.declaration()

    def __call__(self, *args, **kwargs):
        self._signature.check(args, kwargs)
        return self._gm(*args, **kwargs)

    def save(self, f, _extra_files=None) -> None:
        from ._serialization import save

        save(self, f, _extra_files=_extra_files)

    def __repr__(self) -> str:
        return f"<fabric.jit.ScriptFunction object {self.__name__}>"


class ScriptModule(fx.GraphModule):
    """A compiled module: a ``GraphModule`` (``.graph``, ``.code``) that keeps the original
    module's parameters, buffers and submodule tree and checks argument types on call.

    Example::

        >>> import fabric
        >>> m = fabric.jit.script(fabric.nn.Linear(3, 2))
        >>> list(m.state_dict()) == ['weight', 'bias']
        True
    """

    def __init__(self, tree: Module, graph: fx.Graph, class_name: str, signature: _Signature | None = None,
                 methods: dict | None = None):
        super().__init__(tree, graph, class_name=class_name)
        # adopt the original tree in its own order, so state_dict keys and order are the original's
        self._modules.clear()
        self._parameters.clear()
        self._buffers.clear()
        for name, p in tree._parameters.items():
            self._parameters[name] = p
        for name, buf in tree._buffers.items():
            self._buffers[name] = buf
        self._non_persistent_buffers_set = set(getattr(tree, "_non_persistent_buffers_set", ()))
        for name, child in tree._modules.items():
            self._modules[name] = child
        self.training = tree.training
        object.__setattr__(self, "_signature", signature)
        object.__setattr__(self, "_methods", dict(methods or {}))
        self.original_name = class_name

    def __call__(self, *args, **kwargs):
        sig = self.__dict__.get("_signature")
        if sig is not None:
            sig.check(args, kwargs)
        return super().__call__(*args, **kwargs)

    def __getattr__(self, name):
        methods = self.__dict__.get("_methods")
        if methods and name in methods:
            return methods[name]
        return super().__getattr__(name)

    def save(self, f, _extra_files=None) -> None:
        from ._serialization import save

        save(self, f, _extra_files=_extra_files)

    @property
    def inlined_graph(self) -> fx.Graph:
        return self.graph


RecursiveScriptModule = ScriptModule


class _ScriptMethod:
    """An exported method of a ScriptModule (``@fabric.jit.export``), compiled like ``forward``."""

    def __init__(self, owner: ScriptModule, gm, signature: _Signature, name: str):
        self._owner, self._gm, self._signature, self.__name__ = owner, gm, signature, name

    @property
    def graph(self):
        return self._gm.graph

    @property
    def code(self):
        return self._gm.code

    def __call__(self, *args, **kwargs):
        self._signature.check(args, kwargs)
        return self._gm(*args, **kwargs)


def _mirror(module: Module, extra: dict) -> Module:
    """A plain ``Module`` tree holding ``module``'s parameters, buffers and children (the same objects),
    plus the control-flow sub-GraphModules in ``extra`` at the top."""
    from ..nn import Module as _M
    from ..nn import ModuleDict, ModuleList, Sequential

    tree = type(module)() if type(module) in (ModuleList, Sequential, ModuleDict) else _M()
    tree.training = module.training
    for name, p in module._parameters.items():
        tree._parameters[name] = p
    for name, b in module._buffers.items():
        tree._buffers[name] = b
    tree._non_persistent_buffers_set = set(getattr(module, "_non_persistent_buffers_set", ()))
    for name, child in module._modules.items():
        # control-flow graphs of an already scripted child are kept as they are
        tree._modules[name] = child if child is None or isinstance(child, fx.GraphModule) and \
            not isinstance(child, ScriptModule) else _mirror(child, {})
    for name, gm in extra.items():
        tree._modules[name] = gm
    return tree


def _compile(fn, self_ref=None):
    comp = Compiler(self_ref.module if self_ref is not None else None)
    b, sig = comp.compile_function(fn, self_ref)
    return b, sig, comp


def _script_function(fn) -> ScriptFunction:
    b, sig, _ = _compile(fn)
    gm = fx.GraphModule(dict(b.submodules), b.graph, class_name=fn.__name__)
    return ScriptFunction(gm, _Signature(fn.__name__, sig), original=fn, name=fn.__name__)


def _script_module(module: Module) -> ScriptModule:
    from ._modifiers import FunctionModifiers, modifier_of

    cls = type(module)
    if not hasattr(cls, "forward") or cls.forward is Module.forward:
        raise RuntimeError(f"'{cls.__name__}' has no forward method to script")
    ref = _ModuleRef(module, "")
    b, sig, _ = _compile(cls.forward, ref)
    tree = _mirror(module, b.submodules)
    sm = ScriptModule(tree, b.graph, cls.__name__, _Signature("forward", sig))
    methods = {}
    for name in dir(cls):
        fn = getattr(cls, name, None)
        if name != "forward" and inspect.isfunction(fn) and modifier_of(fn) == FunctionModifiers.EXPORT:
            mb, msig, _ = _compile(fn, ref)
            mtree = _mirror(module, mb.submodules)
            mgm = fx.GraphModule(mtree, mb.graph, class_name=f"{cls.__name__}_{name}")
            # share the scripted module's tree: the method reads the same parameters
            methods[name] = _ScriptMethod(sm, mgm, _Signature(name, msig), name)
    object.__setattr__(sm, "_methods", methods)
    return sm


def script(obj, optimize=None, _frames_up: int = 0, _rcb=None, example_inputs=None):
    """Compile a function or an ``nn.Module`` (its ``forward`` and ``@export`` methods) to a graph.

    Supported: ``if`` / ``for ... in range(...)`` / ``while`` over tensors and numbers (kept as
    control flow), typed arguments (``int``, ``float``, ``bool``, ``Tensor``, ``List``,
    ``Optional``, ``Tuple``), calls to other functions, methods and submodules (inlined).
    Anything else raises ``fabric.jit.frontend.NotSupportedError`` naming the construct and line.

    Example::

        >>> import fabric
        >>> @fabric.jit.script
        ... def relu_twice(x):
        ...     return fabric.relu(x) * 2
        >>> relu_twice(fabric.tensor([-1.0, 2.0]))
        tensor([0., 4.])
    """
    if isinstance(obj, (ScriptModule, ScriptFunction)):
        return obj
    if isinstance(obj, Module):
        return _script_module(obj)
    if inspect.isclass(obj):
        raise NotImplementedError(f"fabric.jit.script of a class ({obj.__name__}) is not supported; script an "
                                  "instance of an nn.Module or a function")
    if inspect.isfunction(obj) or inspect.ismethod(obj):
        if obj.__name__ == "<lambda>":
            raise frontend.NotSupportedError(None, None, "lambda functions cannot be scripted")
        return _script_function(obj)
    raise RuntimeError(f"Type '{type(obj).__name__}' cannot be compiled since it inherits from nn.Module, pass "
                       "an instance instead" if isinstance(obj, type) else
                       f"fabric.jit.script cannot compile an object of type {type(obj).__name__}")
