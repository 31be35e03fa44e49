"""``fabric.fx.GraphModule``: an ``nn.Module`` whose ``forward`` is generated from a :class:`Graph`.

Example::

    >>> import fabric
    >>> from fabric import fx, nn
    >>> gm = fx.symbolic_trace(nn.Sequential(nn.Linear(2, 3), nn.ReLU()))
    >>> print(gm.code.strip())
    def forward(self, input):
        input_1 = input
        _0 = getattr(self, "0")(input_1);  input_1 = None
        _1 = getattr(self, "1")(_0);  _0 = None
        return _1
    >>> gm(fabric.ones(4, 2)).shape
    fabric.Size([4, 3])
"""
from __future__ import annotations

import itertools
import linecache

from .._tensor import Tensor
from ..nn.modules.module import Module
from ..nn.parameter import Parameter
from .graph import Graph

__all__ = ["GraphModule"]

_counter = itertools.count()


def _copy_attr(from_module: Module, to_module: Module, target: str) -> None:
    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(from_module, item)
        t = getattr(to_module, item, None)
        if f is t:
            return
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        from_module, to_module = f, t
    orig = getattr(from_module, field)
    if isinstance(orig, Tensor) and not isinstance(orig, Parameter):
        persistent = field not in getattr(from_module, "_non_persistent_buffers_set", ()) \
            if field in getattr(from_module, "_buffers", {}) else True
        to_module.register_buffer(field, orig, persistent=persistent)
    else:
        setattr(to_module, field, orig)


def _assign_attr(obj, to_module: Module, target: str) -> None:
    *prefix, field = target.split(".")
    for item in prefix:
        t = getattr(to_module, item, None)
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        to_module = t
    if isinstance(obj, Tensor) and not isinstance(obj, Parameter):
        to_module.register_buffer(field, obj)
    else:
        setattr(to_module, field, obj)


class GraphModule(Module):
    """A module built from ``root`` (a Module or a dict of attributes) and ``graph``."""

    def __new__(cls, *args, **kwargs):
        # each instance gets its own class so that its generated forward does not leak to others
        for base in cls.__mro__:
            if not base.__dict__.get("_fx_impl", False):
                cls = base
                break
        impl = type("GraphModuleImpl", (cls,), {"_fx_impl": True})
        return super().__new__(impl)

    def __init__(self, root, graph: Graph, class_name: str = "GraphModule"):
        super().__init__()
        self.__class__.__name__ = class_name
        self.__class__.__qualname__ = class_name
        if isinstance(root, Module):
            if hasattr(root, "training"):
                self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(f"Node {node} referenced target {node.target} but that target was "
                                           f"not provided in ``root``!")
                    _assign_attr(root[node.target], self, node.target)
        else:
            raise RuntimeError("Unsupported type " + str(root) + " passed for root!")
        self.meta = getattr(root, "meta", {}) if isinstance(root, Module) else {}
        self._tracer_cls = None
        self.graph = graph

    @property
    def graph(self) -> Graph:
        return self._graph

    @graph.setter
    def graph(self, g: Graph) -> None:
        object.__setattr__(self, "_graph", g)
        g.owning_module = self
        self.recompile()

    @property
    def code(self) -> str:
        """The Python source of ``forward`` generated from the graph."""
        return self._code

    def recompile(self):
        """Regenerate ``forward`` from ``self.graph`` (call after editing the graph)."""
        python_code = self._graph.python_code(root_module="self")
        object.__setattr__(self, "_code", python_code.src)
        cls = type(self)
        filename = f"<eval_with_key>.{next(_counter)}"
        linecache.cache[filename] = (len(python_code.src), None, python_code.src.splitlines(True), filename)
        namespace = dict(python_code.globals)
        exec(compile(python_code.src, filename, "exec"), namespace)
        cls.forward = namespace["forward"]
        return python_code

    def print_readable(self, print_output: bool = True) -> str:
        s = f"class {type(self).__name__}(fabric.nn.Module):\n" + "\n".join(
            "    " + line for line in self._code.strip("\n").splitlines())
        if print_output:
            print(s)
        return s

    def __str__(self) -> str:
        return Module.__repr__(self) + "\n\n" + self._code + "\n# To see more debug info, please use " \
            "`graph_module.print_readable()`"

    def __reduce__(self):
        raise NotImplementedError("pickling a GraphModule is not supported; save it with fabric.jit.save or "
                                  "save its state_dict")

    def __deepcopy__(self, memo):
        import copy
        fake = Module()
        fake.__dict__ = copy.deepcopy({k: v for k, v in self.__dict__.items() if k not in ("_graph", "_code")},
                                      memo)
        return GraphModule(fake, copy.deepcopy(self.graph), type(self).__name__)

    def add_submodule(self, target: str, m: Module) -> bool:
        *prefix, field = target.split(".")
        mod: Module = self
        for item in prefix:
            sub = getattr(mod, item, None)
            if sub is None:
                sub = Module()
                setattr(mod, item, sub)
            if not isinstance(sub, Module):
                return False
            mod = sub
        mod.add_module(field, m)
        return True

    def delete_submodule(self, target: str) -> bool:
        *path, field = target.split(".")
        mod: Module = self
        for item in path:
            if not hasattr(mod, item):
                return False
            mod = getattr(mod, item)
        if not hasattr(mod, field):
            return False
        delattr(mod, field)
        return True

    def delete_all_unused_submodules(self) -> None:
        used = set()
        for node in self.graph.nodes:
            if node.op in ("call_module", "get_attr"):
                parts = node.target.split(".")
                for i in range(1, len(parts) + 1):
                    used.add(".".join(parts[:i]))
        for name, _ in list(self.named_modules()):
            if name and name not in used:
                self.delete_submodule(name)
