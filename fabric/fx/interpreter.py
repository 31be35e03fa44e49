"""``fabric.fx.Interpreter`` runs a graph node by node; ``Transformer`` rebuilds it into a new graph.

Override ``call_function`` / ``call_method`` / ``call_module`` / ``get_attr`` /
``placeholder`` / ``output`` (or ``run_node``) to change what each node does.

Example::

    >>> import fabric, operator
    >>> from fabric import fx
    >>> class NegAdd(fx.Interpreter):
    ...     def call_function(self, target, args, kwargs):
    ...         if target is operator.add:
    ...             return operator.sub(*args)
    ...         return super().call_function(target, args, kwargs)
    >>> gm = fx.symbolic_trace(lambda x: x + 1)
    >>> NegAdd(gm).run(fabric.tensor([5.0]))
    tensor([4.])
"""
from __future__ import annotations

from typing import Any

from .graph import Graph
from .graph_module import GraphModule
from .node import Node, map_aggregate, map_arg
from .proxy import Proxy, TracerBase

__all__ = ["Interpreter", "Transformer"]


def _fetch_attr(mod, target: str):
    obj = mod
    for i, atom in enumerate(target.split(".")):
        if not hasattr(obj, atom):
            raise RuntimeError(f"Node referenced nonexistent target {'.'.join(target.split('.')[:i + 1])}")
        obj = getattr(obj, atom)
    return obj


class Interpreter:
    """Executes ``module.graph`` on concrete values."""

    def __init__(self, module, garbage_collect_values: bool = True, graph: Graph | None = None):
        self.module = module
        self.submodules = dict(module.named_modules())
        self.graph = graph if graph is not None else module.graph
        self.env: dict[Node, Any] = {}
        self.name = "Interpreter"
        self.garbage_collect_values = garbage_collect_values
        self.extra_traceback = True
        if garbage_collect_values:
            last_use: dict[Node, Node] = {}
            self.user_to_last_uses: dict[Node, list[Node]] = {}
            for node in reversed(list(self.graph.nodes)):
                for n in node.all_input_nodes:
                    if n not in last_use:
                        last_use[n] = node
                        self.user_to_last_uses.setdefault(node, []).append(n)

    def run(self, *args, initial_env: dict | None = None, enable_io_processing: bool = True):
        """Run the graph on ``args``; returns what its output node returns."""
        self.env = dict(initial_env) if initial_env else {}
        self.args_iter = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            try:
                self.env[node] = self.run_node(node)
            except Exception as e:
                if self.extra_traceback and not getattr(e, "_fx_noted", False):
                    msg = f"While executing {node.format_node()}"
                    if hasattr(e, "add_note"):
                        e.add_note(msg)
                    e._fx_noted = True
                raise
            if self.garbage_collect_values:
                for to_delete in self.user_to_last_uses.get(node, []):
                    del self.env[to_delete]
            if node.op == "output":
                return self.env[node]
        return None

    def run_node(self, n: Node):
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    # --- one method per op ---------------------------------------------------------------
    def placeholder(self, target: str, args, kwargs):
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration:
            if len(args) > 0:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but one was not passed in!"
                               ) from None

    def get_attr(self, target: str, args, kwargs):
        return self.fetch_attr(target)

    def call_function(self, target, args, kwargs):
        return target(*args, **kwargs)

    def call_method(self, target: str, args, kwargs):
        self_obj, *args_tail = args
        return getattr(self_obj, target)(*args_tail, **kwargs)

    def call_module(self, target: str, args, kwargs):
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target, args, kwargs):
        return args[0]

    # --- helpers ----------------------------------------------------------------------
    def fetch_attr(self, target: str):
        return _fetch_attr(self.module, target)

    def fetch_args_kwargs_from_env(self, n: Node):
        return self.map_nodes_to_values(n.args, n), self.map_nodes_to_values(n.kwargs, n)

    def map_nodes_to_values(self, args, n: Node):
        def load(n_arg: Node):
            if n_arg not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {n_arg}! Run Graph.lint() to diagnose "
                                   "such issues")
            return self.env[n_arg]
        return map_arg(args, load)

    def boxed_run(self, args_list: list):
        args = list(args_list)
        args_list.clear()
        return self.run(*args)


class _TransformerTracer(TracerBase):
    def __init__(self, graph: Graph):
        self.graph = graph


class Transformer(Interpreter):
    """Runs the graph on proxies to build a new one; override methods to rewrite nodes.

    Example::

        >>> import fabric, operator
        >>> from fabric import fx
        >>> class AddToMul(fx.Transformer):
        ...     def call_function(self, target, args, kwargs):
        ...         return super().call_function(operator.mul if target is operator.add else target, args, kwargs)
        >>> gm = AddToMul(fx.symbolic_trace(lambda x: x + 3)).transform()
        >>> gm(fabric.tensor([2.0]))
        tensor([6.])
    """

    def __init__(self, module):
        super().__init__(module, garbage_collect_values=False)
        self.new_graph = Graph()
        self.tracer = _TransformerTracer(self.new_graph)
        self.tracer.root = module

    def placeholder(self, target: str, args, kwargs):
        default = args if args else ()
        return Proxy(self.new_graph.placeholder(target, default_value=default[0]) if default
                     else self.new_graph.placeholder(target), self.tracer)

    def get_attr(self, target: str, args, kwargs):
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_function(self, target, args, kwargs):
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def call_method(self, target, args, kwargs):
        return self.tracer.create_proxy("call_method", target, args, kwargs)

    def call_module(self, target, args, kwargs):
        return self.tracer.create_proxy("call_module", target, args, kwargs)

    def run_node(self, n: Node):
        result = super().run_node(n)
        if isinstance(result, Proxy):
            result.node.meta = dict(n.meta)
        return result

    def transform(self) -> GraphModule:
        """The rewritten module."""
        result = self.run(enable_io_processing=False)
        if result is not None:
            def strip(a):
                return a.node if isinstance(a, Proxy) else a
            self.new_graph.output(map_aggregate(result, strip))
        return GraphModule(self.module, self.new_graph)

    def output(self, target, args, kwargs):
        return args[0]
