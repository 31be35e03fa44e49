"""``fabric.onnx.load_model``: an ONNX file -> a trainable :class:`fabric.fx.GraphModule`.

Each ONNX node becomes a ``call_function`` node of the graph IR whose target is
the op written with fabric ops (so it is differentiable); initializers become
parameters (floating point, at least 1-D) or buffers, under their ONNX names
(``0.weight`` -> submodule ``0``, parameter ``weight``, so a file exported by
fabric loads with the original ``state_dict`` keys).

Example::

    >>> import fabric, fabric.onnx, io
    >>> m = fabric.nn.Linear(3, 2)
    >>> f = io.BytesIO()
    >>> _ = fabric.onnx.export(m, (fabric.ones(1, 3),), f, do_constant_folding=False)  # doctest: +SKIP
    >>> loaded = fabric.onnx.load_model(io.BytesIO(f.getvalue()))                    # doctest: +SKIP
    >>> sorted(loaded.state_dict())                                                  # doctest: +SKIP
    ['bias', 'weight']
"""
from __future__ import annotations

import operator
import os
import re

import numpy as np

import fabric

from .. import nn
from ..fx import Graph, GraphModule
from ..nn.parameter import Parameter
from ._onnx_ops import OPS

# --- building the module ------------------------------------------------------------------------------------

def _ident(name: str) -> str:
    s = re.sub(r"[^0-9a-zA-Z_]", "_", name)
    return s if s and not s[0].isdigit() else f"v_{s}"


def _attr_name(name: str) -> str:
    """An initializer name as a dotted attribute path (each part a valid attribute name)."""
    parts = [re.sub(r"[^0-9a-zA-Z_]", "_", p) or "_" for p in name.split(".")]
    return ".".join(parts)


def _register(root: nn.Module, path: str, value, as_param: bool) -> None:
    *prefix, field = path.split(".")
    mod = root
    for p in prefix:
        sub = mod._modules.get(p)
        if sub is None:
            sub = nn.Module()
            mod.add_module(p, sub)
        mod = sub
    if as_param:
        mod.register_parameter(field, Parameter(value))
    else:
        mod.register_buffer(field, value)


def _attrs(onnx, node) -> dict:
    from onnx import numpy_helper
    out = {}
    for a in node.attribute:
        v = onnx.helper.get_attribute_value(a)
        if isinstance(v, bytes):
            v = v.decode()
        elif isinstance(v, list) and v and isinstance(v[0], bytes):
            v = [e.decode() for e in v]
        elif a.type == onnx.AttributeProto.TENSOR:
            arr = numpy_helper.to_array(v)
            if node.op_type == "ConstantOfShape":
                out["value_dtype"] = str(arr.dtype)
                v = arr.reshape(-1)[0].item()
            else:
                v = arr
        elif a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
            raise NotImplementedError(f"fabric.onnx.load_model: {node.op_type} with a subgraph attribute")
        out[a.name] = v
    return out


def _free_vars(g) -> list[str]:
    """Names a (sub)graph reads from an enclosing scope, in order of first use."""
    defined = {i.name for i in g.input} | {i.name for i in g.initializer}
    free: list[str] = []

    def use(name):
        if name and name not in defined and name not in free:
            free.append(name)
    for node in g.node:
        for i in node.input:
            use(i)
        for a in node.attribute:
            for sub in ([a.g] if a.HasField("g") else list(a.graphs)):
                for name in _free_vars(sub):
                    use(name)
        defined.update(node.output)
    for o in g.output:
        use(o.name)
    return free


class _Importer:
    """Turns an ONNX GraphProto (and its If / Loop subgraphs) into GraphModules."""

    def __init__(self, onnx):
        self.onnx = onnx
        self.n_sub = 0

    def graph_module(self, g, input_names: list, free: list, name: str, as_tuple: bool) -> GraphModule:
        from onnx import numpy_helper
        root = nn.Module()
        graph = Graph()
        env: dict = {}
        inits = {i.name: numpy_helper.to_array(i) for i in g.initializer}
        for n in list(input_names) + list(free):
            env[n] = graph.placeholder(_ident(n))
        used_paths: set = set()

        def constant(cname: str, arr: np.ndarray):
            path = _attr_name(cname)
            while path in used_paths:
                path += "_"
            used_paths.add(path)
            t = fabric.tensor(np.array(arr, copy=True))
            as_param = np.issubdtype(arr.dtype, np.floating) and arr.ndim > 0
            _register(root, path, t, as_param)
            return graph.get_attr(path)

        def value(vname: str):
            if vname == "":
                return None
            if vname not in env:
                if vname not in inits:
                    raise ValueError(f"fabric.onnx.load_model: value '{vname}' is used before it is defined")
                env[vname] = constant(vname, inits[vname])
            return env[vname]

        def submodule(gm: GraphModule, kind: str):
            self.n_sub += 1
            attr = f"{kind}_{self.n_sub}"
            root.add_module(attr, gm)
            return graph.get_attr(attr)

        for node in g.node:
            if node.domain not in ("", "ai.onnx"):
                raise NotImplementedError(f"fabric.onnx.load_model: operator domain '{node.domain}' "
                                          f"({node.op_type})")
            if node.op_type == "If":
                outs = self._if(node, graph, value, submodule)
            elif node.op_type == "Loop":
                outs = self._loop(node, graph, value, submodule)
            else:
                attrs = _attrs(self.onnx, node)
                if node.op_type == "Constant":
                    env[node.output[0]] = constant(node.output[0], attrs["value"])
                    continue
                fn = OPS.get(node.op_type)
                if fn is None:
                    raise NotImplementedError(f"fabric.onnx.load_model: no fabric implementation of ONNX operator "
                                              f"'{node.op_type}'")
                call = graph.call_function(fn, tuple(value(i) for i in node.input), attrs)
                outs = [call] if len(node.output) == 1 else [
                    graph.call_function(operator.getitem, (call, k)) for k in range(len(node.output))]
            for out, v in zip(node.output, outs):
                if out:
                    env[out] = v
        results = [value(o.name) for o in g.output]
        graph.output(tuple(results) if as_tuple or len(results) != 1 else results[0])
        return GraphModule(root, graph, name)

    def _if(self, node, graph, value, submodule) -> list:
        from ..fx.control_flow import cond
        branches = {a.name: a.g for a in node.attribute}
        free: list[str] = []
        for br in (branches["then_branch"], branches["else_branch"]):
            for n in _free_vars(br):
                if n not in free:
                    free.append(n)
        then_gm = self.graph_module(branches["then_branch"], [], free, "then_branch", True)
        else_gm = self.graph_module(branches["else_branch"], [], free, "else_branch", True)
        call = graph.call_function(cond, (value(node.input[0]), submodule(then_gm, "then"),
                                          submodule(else_gm, "else"), tuple(value(n) for n in free)))
        return [graph.call_function(operator.getitem, (call, k)) for k in range(len(node.output))]

    def _loop(self, node, graph, value, submodule) -> list:
        from ..fx.control_flow import while_loop
        body = next(a.g for a in node.attribute if a.name == "body")
        n_carried = len(node.input) - 2
        if len(body.output) != 1 + n_carried:
            raise NotImplementedError("fabric.onnx.load_model: Loop with scan outputs")
        free = _free_vars(body)
        body_inputs = [i.name for i in body.input]
        body_gm = self.graph_module(body, body_inputs, free, "loop_body", True)
        n_free = len(free)
        # the loop state is (iteration, condition, trip count, *free values, *carried values)
        wrap = Graph()
        i, c, m = wrap.placeholder("i"), wrap.placeholder("c"), wrap.placeholder("m")
        fv = [wrap.placeholder(f"f{k}") for k in range(n_free)]
        cv = [wrap.placeholder(f"v{k}") for k in range(n_carried)]
        res = wrap.call_module("body", (i, c, *cv, *fv))
        outs = [wrap.call_function(operator.getitem, (res, k)) for k in range(1 + n_carried)]
        wrap.output((wrap.call_function(operator.add, (i, 1)), outs[0], m, *fv, *outs[1:]))
        body_wrap = GraphModule({"body": body_gm}, wrap, "loop_step")
        cg = Graph()
        ci, cc, cm = cg.placeholder("i"), cg.placeholder("c"), cg.placeholder("m")
        for k in range(n_free + n_carried):
            cg.placeholder(f"s{k}")
        cg.output(cg.call_function(fabric.logical_and, (cg.call_function(fabric.lt, (ci, cm)), cc)))
        cond_gm = GraphModule({}, cg, "loop_cond")
        i0 = graph.call_function(fabric.tensor, (0,), {"dtype": fabric.int64})
        m0 = value(node.input[0]) if node.input[0] else graph.call_function(
            fabric.tensor, (np.iinfo(np.int64).max,), {"dtype": fabric.int64})
        c0 = value(node.input[1]) if node.input[1] else graph.call_function(fabric.tensor, (True,))
        state = (i0, c0, m0, *(value(n) for n in free), *(value(n) for n in node.input[2:]))
        call = graph.call_function(while_loop, (submodule(cond_gm, "loop_cond"), submodule(body_wrap, "loop"),
                                                state))
        return [graph.call_function(operator.getitem, (call, 3 + n_free + k)) for k in range(n_carried)]


def load_model(f) -> GraphModule:
    from . import _require_onnx
    onnx = _require_onnx()
    if isinstance(f, onnx.ModelProto):
        model = f
    elif isinstance(f, (str, os.PathLike)):
        model = onnx.load(str(f))
    else:
        model = onnx.load_model_from_string(f.read())
    opsets = {o.domain: o.version for o in model.opset_import}
    if opsets.get("", 0) < 13:
        raise NotImplementedError(f"fabric.onnx.load_model reads opset 13 or newer, the file uses {opsets.get('')}")
    g = model.graph
    inits = {i.name for i in g.initializer}
    inputs = [i.name for i in g.input if i.name not in inits]
    return _Importer(onnx).graph_module(g, inputs, [], _ident(g.name or "OnnxModel"), False)
