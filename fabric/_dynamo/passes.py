"""Graph passes of ``fabric.compile``: dead-code elimination and common subexpressions.

Both only touch nodes that are *pure*: no in-place method (``add_``), no
``inplace=True`` / ``out=``, no random numbers, no running-statistics update.

Example::

    >>> import operator, fabric
    >>> from fabric import fx
    >>> g = fx.Graph(); x = g.placeholder("x")
    >>> a = g.call_function(operator.mul, (x, 2)); b = g.call_function(operator.mul, (x, 2))
    >>> _ = g.call_function(fabric.exp, (x,)); _ = g.output(g.call_function(operator.add, (a, b)))
    >>> from fabric._dynamo.passes import eliminate_common_subexpressions, eliminate_dead_code
    >>> eliminate_common_subexpressions(g), eliminate_dead_code(g)
    (1, 1)
"""
from __future__ import annotations

import operator

from ..fx.graph import Graph
from ..fx.node import Node

__all__ = ["is_pure", "eliminate_dead_code", "eliminate_common_subexpressions"]

_IMPURE_WORDS = ("rand", "dropout", "bernoulli", "normal", "multinomial", "poisson", "exponential", "uniform",
                 "batch_norm", "instance_norm", "empty", "print", "seed", "copy_", "set_", "setitem", "manual")
_PURE_OPERATOR = {getattr(operator, n) for n in (
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "neg", "pos", "abs", "invert",
    "and_", "or_", "xor", "lshift", "rshift", "eq", "ne", "lt", "le", "gt", "ge", "getitem", "not_")}


def is_pure(node: Node) -> bool:
    """True when removing or merging ``node`` cannot change what the program does."""
    if node.op in ("placeholder", "output", "call_module"):
        return False
    if node.op == "get_attr":
        return True
    if node.kwargs.get("inplace") is True or "out" in node.kwargs:
        return False
    if node.op == "call_method":
        name = node.target
        if name.endswith("_") and not name.endswith("__"):
            return False
    elif node.target in _PURE_OPERATOR or node.target is getattr:
        return True
    else:
        if getattr(node.target, "_fx_impure", False):
            return False
        name = getattr(node.target, "__name__", "")
        if not name:
            return False
    return not any(w in name.lower() for w in _IMPURE_WORDS)


def eliminate_dead_code(graph: Graph) -> int:
    """Erase pure nodes whose values nobody uses; returns how many were erased."""
    n = 0
    for node in reversed(list(graph.nodes)):
        if not node.users and is_pure(node):
            graph.erase_node(node)
            n += 1
    return n


def _key(a):
    if isinstance(a, Node):
        return ("%node", id(a))
    if isinstance(a, (tuple, list)):
        return (type(a).__name__,) + tuple(_key(e) for e in a)
    if isinstance(a, dict):
        return ("dict",) + tuple((k, _key(v)) for k, v in a.items())
    if isinstance(a, slice):
        return ("slice", _key(a.start), _key(a.stop), _key(a.step))
    hash(a)
    return (type(a).__name__, a)


def eliminate_common_subexpressions(graph: Graph) -> int:
    """Replace a pure node computing what an earlier node computed by that node; returns how many."""
    seen: dict = {}
    n = 0
    for node in list(graph.nodes):
        if not is_pure(node):
            if node.op in ("call_function", "call_method", "call_module"):
                seen.clear()    # it may have mutated a tensor an earlier expression read
            continue
        try:
            key = (node.op, node.target if isinstance(node.target, str) else id(node.target),
                   _key(node.args), _key(node.kwargs))
        except TypeError:       # an unhashable constant: leave the node alone
            continue
        first = seen.get(key)
        if first is None:
            seen[key] = node
            continue
        node.replace_all_uses_with(first)
        graph.erase_node(node)
        n += 1
    return n
