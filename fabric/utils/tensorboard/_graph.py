"""``SummaryWriter.add_graph``: a model's fx graph as TensorBoard's GraphDef.

The model is traced symbolically with :mod:`fabric.fx` (the graph IR) and,
given example inputs, its shapes are propagated; each fx node becomes a
NodeDef named by its module scope (``Net/Sequential[body]/Linear[0]/body_0``),
so TensorBoard's graph view nests layers as the model does.
"""
from __future__ import annotations

import importlib

from tensorboard.compat.proto.attr_value_pb2 import AttrValue  # pyright: ignore[reportMissingImports] (optional)
from tensorboard.compat.proto.graph_pb2 import GraphDef  # pyright: ignore[reportMissingImports] (optional)
from tensorboard.compat.proto.node_def_pb2 import NodeDef  # pyright: ignore[reportMissingImports] (optional)
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto  # pyright: ignore[reportMissingImports] (optional)
from tensorboard.compat.proto.versions_pb2 import VersionDef  # pyright: ignore[reportMissingImports] (optional)

__all__ = ["graph_def"]


def _fx():
    try:
        return importlib.import_module("fabric.fx")
    except ImportError as e:
        raise NotImplementedError(
            "SummaryWriter.add_graph needs fabric's graph IR (fabric.fx), which this version does not have yet; "
            "fabric.viz.make_dot draws the autograd graph of an output meanwhile") from e


def _scope(model, target: str) -> str:
    """``Net/Sequential[body]/Linear[0]`` for submodule ``body.0`` of a ``Net``."""
    parts, mod = [type(model).__name__], model
    for name in target.split("."):
        mod = getattr(mod, name)
        parts.append(f"{type(mod).__name__}[{name}]")
    return "/".join(parts)


def _inputs(args, names) -> list:
    out = []
    stack = [args]
    while stack:
        a = stack.pop(0)
        if isinstance(a, (list, tuple)):
            stack[:0] = list(a)
        elif isinstance(a, dict):
            stack[:0] = list(a.values())
        elif id(a) in names:
            out.append(names[id(a)])
    return out


def _shape_attr(node) -> dict:
    meta = node.meta.get("tensor_meta")
    shape = getattr(meta, "shape", None)
    if shape is None:
        return {}
    dims = [TensorShapeProto.Dim(size=int(d)) for d in shape]
    return {"_output_shapes": AttrValue(list=AttrValue.ListValue(shape=[TensorShapeProto(dim=dims)]))}


def graph_def(model, input_to_model=None, verbose: bool = False) -> GraphDef:
    """The GraphDef of ``model`` traced by fabric.fx (shapes from ``input_to_model``)."""
    fx = _fx()
    gm = fx.symbolic_trace(model)
    if input_to_model is not None:
        shape_prop = importlib.import_module("fabric.fx.passes.shape_prop")
        inputs = input_to_model if isinstance(input_to_model, (tuple, list)) else (input_to_model,)
        shape_prop.ShapeProp(gm).propagate(*inputs)
    top = type(model).__name__
    names, nodes = {}, []
    for n in gm.graph.nodes:
        if n.op == "placeholder":
            name, op = f"input/{n.name}", "IO Node"
        elif n.op == "output":
            name, op = "output/output", "IO Node"
        elif n.op == "call_module":
            name, op = f"{_scope(model, n.target)}/{n.name}", type(gm.get_submodule(n.target)).__name__
        elif n.op == "get_attr":
            name, op = f"{top}/{n.target}", "prim::GetAttr"
        else:  # call_function / call_method
            target = n.target if isinstance(n.target, str) else getattr(n.target, "__name__", str(n.target))
            name, op = f"{top}/{n.name}", f"aten::{target}"
        names[id(n)] = name
        attrs = _shape_attr(n)
        if verbose:
            attrs["attr"] = AttrValue(s=str(n.format_node()).encode())
        nodes.append(NodeDef(name=name, op=op, input=_inputs((n.args, n.kwargs), names),
                             device="/device:CPU:0", attr=attrs))
        if verbose:
            print(n.format_node())
    return GraphDef(node=nodes, versions=VersionDef(producer=22))
