"""``ShapeProp``: run a graph on example inputs and record each node's shape, dtype and strides.

Example::

    >>> import fabric
    >>> from fabric import fx
    >>> from fabric.fx.passes.shape_prop import ShapeProp
    >>> gm = fx.symbolic_trace(lambda x: x.sum(dim=0))
    >>> _ = ShapeProp(gm).propagate(fabric.ones(3, 2))
    >>> [n.meta["tensor_meta"].shape for n in gm.graph.nodes if n.op != "output"]
    [fabric.Size([3, 2]), fabric.Size([2])]
"""
from __future__ import annotations

from typing import Any, NamedTuple

from ..._tensor import Tensor
from ..interpreter import Interpreter
from ..node import map_aggregate

__all__ = ["TensorMetadata", "ShapeProp"]


class TensorMetadata(NamedTuple):
    shape: Any
    dtype: Any
    requires_grad: bool
    stride: tuple
    memory_format: Any
    is_quantized: bool
    qparams: dict


def _extract_tensor_metadata(result: Tensor) -> TensorMetadata:
    return TensorMetadata(result.shape, result.dtype, result.requires_grad, result.stride(), None, False, {})


class ShapeProp(Interpreter):
    """Sets ``node.meta["tensor_meta"]`` (a :class:`TensorMetadata`, or a nested structure of them) and
    ``node.meta["type"]`` for every node."""

    def run_node(self, n):
        result = super().run_node(n)
        found = False

        def extract(obj):
            nonlocal found
            if isinstance(obj, Tensor):
                found = True
                return _extract_tensor_metadata(obj)
            return obj
        meta = map_aggregate(result, extract)
        if found:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args):
        """Run the module on ``args`` (recording metadata); returns its output."""
        return super().run(*args)
