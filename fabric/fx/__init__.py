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

from . import control_flow  # noqa: F401
from ._symbolic_trace import PH, Tracer, symbolic_trace, wrap  # noqa: F401
from .graph import Graph, PythonCode  # noqa: F401
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .node import Node, map_aggregate, map_arg  # noqa: F401
from .proxy import Attribute, Proxy, TraceError  # noqa: F401

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
