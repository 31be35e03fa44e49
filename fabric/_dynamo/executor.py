"""The lean executor: one generated Python function per captured graph.

Unlike ``GraphModule.forward`` it reads no module attributes at run time: each
``get_attr`` value (a parameter, buffer or graph constant — the very objects
the model holds, so optimizer updates are seen) and each callable is bound once
as a global of the generated code, and each intermediate is dropped (``del``)
right after its last use, so NumPy's allocator can reuse the buffer for the
next temporary.

Example::

    >>> import operator, fabric
    >>> from fabric import fx
    >>> from fabric._dynamo.executor import build
    >>> g = fx.Graph(); x = g.placeholder("x")
    >>> _ = g.output(g.call_function(operator.mul, (g.call_function(fabric.exp, (x,)), 2)))
    >>> fn = build(g, {})
    >>> float(fn(fabric.zeros(())))
    2.0
"""
from __future__ import annotations

import itertools
import linecache

from ..fx.node import Node

__all__ = ["build"]

_counter = itertools.count()


def build(graph, attrs: dict, name: str = "compiled"):
    """A function running ``graph``; ``attrs`` maps each ``get_attr`` target to its value."""
    ns: dict = {}
    names: dict[Node, str] = {}

    def const(v) -> str:
        if v is None or type(v) in (bool, int, str):
            return repr(v)
        key = f"__k{len(ns)}"
        ns[key] = v
        return key

    def emit(a) -> str:
        if isinstance(a, Node):
            return names[a]
        if type(a) is tuple:
            return "(" + "".join(emit(e) + ", " for e in a) + ")"
        if type(a) is list:
            return "[" + ", ".join(emit(e) for e in a) + "]"
        if type(a) is dict:
            return "{" + ", ".join(f"{k!r}: {emit(v)}" for k, v in a.items()) + "}"
        if type(a) is slice:
            return f"slice({emit(a.start)}, {emit(a.stop)}, {emit(a.step)})"
        return const(a)

    def call_args(args, kwargs) -> str:
        parts = [emit(a) for a in args] + [f"{k}={emit(v)}" for k, v in kwargs.items()]
        return ", ".join(parts)

    nodes = list(graph.nodes)
    last_use: dict[Node, Node] = {}
    for node in nodes:
        for inp in node.all_input_nodes:
            last_use[inp] = node
    dying: dict[Node, list] = {}
    for v, user in last_use.items():
        dying.setdefault(user, []).append(v)

    params, body = [], []
    for i, node in enumerate(nodes):
        var = f"__v{i}"
        if node.op == "placeholder":
            var = node.target if node.target.isidentifier() else var
            params.append(var)
            names[node] = var
            continue
        names[node] = var
        if node.op == "get_attr":
            names[node] = const(attrs[node.target])
            continue
        if node.op == "call_function":
            body.append(f"{var} = {const(node.target)}({call_args(node.args, node.kwargs)})")
        elif node.op == "call_method":
            body.append(f"{var} = {emit(node.args[0])}.{node.target}({call_args(node.args[1:], node.kwargs)})")
        elif node.op == "call_module":
            body.append(f"{var} = {const(attrs[node.target])}({call_args(node.args, node.kwargs)})")
        elif node.op == "output":
            body.append(f"return {emit(node.args[0])}")
            break
        drop = [names[v] for v in dying.get(node, ()) if names[v].startswith("__v") and v.op != "placeholder"]
        if drop:
            body.append("del " + ", ".join(drop))
    src = f"def {name}({', '.join(params)}):\n" + "".join(f"    {line}\n" for line in body or ["return None"])
    filename = f"<fabric.compile {name} {next(_counter)}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    exec(compile(src, filename, "exec"), ns)
    fn = ns[name]
    fn.source = src
    return fn
