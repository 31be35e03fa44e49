"""``fabric.fx``: the graph IR (``Graph``, ``Node``, ``GraphModule``) and symbolic tracing.

See docs/graph.md for the design shared by fx, jit, export and onnx.

Example::

    >>> import fabric
    >>> from fabric import fx
    >>> gm = fx.symbolic_trace(lambda x: fabric.relu(x) * 2)
    >>> gm(fabric.tensor([-1.0, 3.0]))
    tensor([0., 6.])
"""
from __future__ import annotations

from .node import Node, map_arg, map_aggregate  # noqa: F401
from .graph import Graph, PythonCode  # noqa: F401
from .graph_module import GraphModule  # noqa: F401
from .proxy import Proxy, Attribute, TraceError  # noqa: F401
from ._symbolic_trace import Tracer, symbolic_trace, wrap, PH  # noqa: F401
from .interpreter import Interpreter, Transformer  # noqa: F401
from . import control_flow  # noqa: F401

__all__ = ["Graph", "GraphModule", "Interpreter", "Node", "Proxy", "Tracer", "Transformer", "map_arg",
           "replace_pattern",
           "symbolic_trace", "wrap"]


def __getattr__(name):
    if name == "replace_pattern":
        from .subgraph_rewriter import replace_pattern
        return replace_pattern
    if name in ("subgraph_rewriter", "passes", "_concrete"):
        import importlib
        return importlib.import_module(f"fabric.fx.{name}")
    raise AttributeError(f"module 'fabric.fx' has no attribute '{name}'")
