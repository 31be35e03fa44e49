"""``replace_pattern``: find every match of a pattern graph in a module's graph and substitute a replacement.

Example::

    >>> import fabric
    >>> from fabric import fx
    >>> def f(x):
    ...     return fabric.neg(fabric.neg(x)) + 1
    >>> gm = fx.symbolic_trace(f)
    >>> matches = fx.replace_pattern(gm, lambda x: fabric.neg(fabric.neg(x)), lambda x: x)
    >>> len(matches), gm(fabric.tensor([2.0]))
    (1, tensor([3.]))
"""
from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from .graph import Graph
from .graph_module import GraphModule
from .node import Node, map_arg

__all__ = ["Match", "replace_pattern"]


class Match(NamedTuple):
    anchor: Node                   # the node of the original graph that matched the pattern's output
    nodes_map: dict                # pattern node -> original node


def _graph_of(p) -> Graph:
    if isinstance(p, GraphModule):
        return p.graph
    if isinstance(p, Graph):
        return p
    from ._symbolic_trace import symbolic_trace
    return symbolic_trace(p).graph


def _pattern_outputs(g: Graph) -> list[Node]:
    out = next(n for n in g.nodes if n.op == "output")
    ret = out.args[0]
    return list(ret) if isinstance(ret, (tuple, list)) else [ret]


class _Matcher:
    def __init__(self, pattern: Graph):
        self.pattern = pattern
        self.outputs = _pattern_outputs(pattern)
        self.placeholders = [n for n in pattern.nodes if n.op == "placeholder"]

    def match_at(self, anchor: Node) -> dict | None:
        nodes_map: dict = {}
        if len(self.outputs) != 1:
            raise NotImplementedError("replace_pattern supports patterns with a single output")
        if not self._match(self.outputs[0], anchor, nodes_map):
            return None
        # values computed inside the match must not escape it (except through the anchor)
        inside = {g for p, g in nodes_map.items() if p.op != "placeholder"}
        for g in inside:
            if g is anchor:
                continue
            if any(u not in inside for u in g.users):
                return None
        return nodes_map

    def _match(self, pn: Node, gn, nodes_map: dict) -> bool:
        if pn in nodes_map:
            return nodes_map[pn] is gn
        if pn.op == "placeholder":
            if gn in nodes_map.values() and not isinstance(gn, Node):
                return False
            nodes_map[pn] = gn
            return True
        if not isinstance(gn, Node) or pn.op != gn.op or pn.target != gn.target:
            return False
        if len(pn.args) != len(gn.args) or set(pn.kwargs) != set(gn.kwargs):
            return False
        nodes_map[pn] = gn
        pairs = list(zip(pn.args, gn.args)) + [(pn.kwargs[k], gn.kwargs[k]) for k in pn.kwargs]
        return all(self._match_arg(a, b, nodes_map) for a, b in pairs)

    def _match_arg(self, a, b, nodes_map) -> bool:
        if isinstance(a, Node):
            return self._match(a, b, nodes_map)
        if isinstance(a, (tuple, list)):
            return type(a) is type(b) and len(a) == len(b) and all(
                self._match_arg(x, y, nodes_map) for x, y in zip(a, b))
        if isinstance(a, dict):
            return isinstance(b, dict) and a.keys() == b.keys() and all(
                self._match_arg(a[k], b[k], nodes_map) for k in a)
        return not isinstance(b, Node) and type(a) is type(b) and a == b


def replace_pattern(gm: GraphModule, pattern: Callable | GraphModule, replacement: Callable | GraphModule
                    ) -> list[Match]:
    """Replace every non-overlapping match of ``pattern`` in ``gm.graph`` with ``replacement``.

    Both are callables (traced symbolically) or GraphModules with the same inputs.  Returns the matches.
    """
    original = gm.graph
    matcher = _Matcher(_graph_of(pattern))
    repl_graph = _graph_of(replacement)
    repl_ph = [n for n in repl_graph.nodes if n.op == "placeholder"]
    if len(repl_ph) != len(matcher.placeholders):
        raise ValueError("the pattern and the replacement must take the same number of inputs")
    matches: list[Match] = []
    taken: set = set()
    for anchor in list(original.nodes):
        if anchor in taken or anchor.op in ("placeholder", "output"):
            continue
        nodes_map = matcher.match_at(anchor)
        if nodes_map is None:
            continue
        inside = [g for p, g in nodes_map.items() if p.op != "placeholder"]
        if any(g in taken for g in inside):
            continue
        taken.update(inside)
        matches.append(Match(anchor, nodes_map))
    replaced: dict = {}   # anchor of an earlier match -> what replaced it (a later match may read it)
    for m in matches:
        val_map = {r: replaced.get(m.nodes_map[p], m.nodes_map[p]) for r, p in zip(repl_ph, matcher.placeholders)}
        with original.inserting_before(m.anchor):
            for rn in repl_graph.nodes:
                if rn.op == "placeholder":
                    continue
                if rn.op == "output":
                    result = map_arg(rn.args[0], val_map.__getitem__)
                    if isinstance(result, (tuple, list)):
                        result = result[0]
                    break
                if rn.op in ("get_attr", "call_module") and isinstance(replacement, GraphModule):
                    from .graph_module import _copy_attr
                    _copy_attr(replacement, gm, rn.target)
                val_map[rn] = original.node_copy(rn, val_map.__getitem__)
        m.anchor.replace_all_uses_with(result)
        replaced[m.anchor] = result
        # nodes_map lists the anchor first, then its producers: erase in that order
        for g in [g for p, g in m.nodes_map.items() if p.op != "placeholder"]:
            if not g._erased and not g.users:
                original.erase_node(g)
    gm.recompile()
    return matches
