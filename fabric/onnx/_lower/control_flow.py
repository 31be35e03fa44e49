"""Lowering rules: fx.control_flow ops as ONNX If / Loop with subgraphs."""
from __future__ import annotations

import numpy as np

from .._builder import V
from ._core import FUNCTIONS, Lowering, UnsupportedOperatorError, _is_v, _load, _onnx_type, cast, tensor

# --- control flow: fx.control_flow ops become ONNX If / Loop with subgraphs ----------------------------------

def _as_graph_module(fn):
    from ...fx import GraphModule, symbolic_trace
    return fn if isinstance(fn, GraphModule) else symbolic_trace(fn)


def _example(L, v, fx_arg):
    """A zero tensor (or the Python value) shaped like an fx argument, to propagate shapes through a sub-graph."""
    import fabric
    if not _is_v(v):
        return v
    tm = getattr(fx_arg, "meta", {}).get("tensor_meta")
    if tm is not None and hasattr(tm, "shape"):
        return fabric.zeros(tuple(tm.shape), dtype=tm.dtype)
    ex = getattr(fx_arg, "meta", {}).get("example_value")
    if ex is not None:
        return ex
    return fabric.zeros((), dtype=fabric.int64) if np.issubdtype(v.dtype, np.integer) else fabric.zeros(())


def _subgraph(L, fn, inputs: list, examples: list, graph_inputs: list, extra_outputs: tuple = (),
              inline: bool = False):
    """Lower ``fn(*inputs)`` (a GraphModule or function) into its own node list.

    Returns (onnx GraphProto or None when ``inline``, list of output values)."""
    from ...fx.passes.shape_prop import ShapeProp
    b = L.b
    gm = _as_graph_module(fn)
    ShapeProp(gm).propagate(*examples)
    sub = Lowering(gm, b)
    saved, b.nodes = b.nodes, ([] if not inline else b.nodes)
    try:
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        for n, v in zip(placeholders, inputs):
            sub.env[n] = v
        result = None
        for n in gm.graph.nodes:
            if n.op == "placeholder":
                continue
            if n.op == "output":
                result = _load(sub.env, n.args[0])
                break
            sub.env[n] = sub.lower_node(n)
        outs = [tensor(L, o) for o in (result if isinstance(result, (tuple, list)) else (result,))]
        outs = list(extra_outputs) + outs
        if inline:
            return None, outs
        onnx = b.onnx
        out_infos = []
        for o in outs:
            name = b.fresh(f"{o.name}_out")
            b.nodes.append(onnx.helper.make_node("Identity", [o.name], [name], name=b.fresh("/Identity")))
            out_infos.append(_value_info(onnx, name, o))
        body = onnx.helper.make_graph(b.nodes, b.fresh("subgraph"), graph_inputs, out_infos)
        return body, outs
    finally:
        if not inline:
            b.nodes = saved


def _value_info(onnx, name: str, v: V):
    shape = None if v.rank is None else [None] * v.rank
    return onnx.helper.make_tensor_value_info(name, _onnx_type(v.dtype), shape)


def _pred(L, p) -> V:
    p = tensor(L, p)
    p = cast(L, p, np.bool_)
    return L.b.op("Reshape", [p, L.b.i64([])], np.bool_, 0)


def _register_control_flow():
    from ...fx import control_flow as cf

    def lower_cond(L, pred, true_fn, false_fn, operands):
        fx_ops = L.node.args[3]
        examples = [_example(L, v, a) for v, a in zip(operands, fx_ops)]
        then_g, then_outs = _subgraph(L, true_fn, list(operands), examples, [])
        else_g, _ = _subgraph(L, false_fn, list(operands), examples, [])
        outs = L.b.op("If", [_pred(L, pred)], then_outs[0].dtype, None, n_out=len(then_outs),
                      then_branch=then_g, else_branch=else_g)
        outs = outs if isinstance(outs, tuple) else (outs,)
        for o, t in zip(outs, then_outs):
            o.dtype, o.rank = t.dtype, t.rank
        return outs

    def loop(L, body_fn, carried, fx_carried, index_fn, trip, cond_fn=None, cond_init=None):
        b = L.b
        carried = [tensor(L, c) for c in carried]
        it = b.fresh("iter")
        cond_in = b.fresh("cond_in")
        names = [b.fresh(f"{c.name}_in") for c in carried]
        ins = [V(n, c.dtype, c.rank) for n, c in zip(names, carried)]
        onnx = b.onnx
        graph_inputs = [onnx.helper.make_tensor_value_info(it, onnx.TensorProto.INT64, []),
                        onnx.helper.make_tensor_value_info(cond_in, onnx.TensorProto.BOOL, [])] + [
            _value_info(onnx, n, c) for n, c in zip(names, carried)]
        examples = [_example(L, c, a) for c, a in zip(carried, fx_carried)]
        saved, b.nodes = b.nodes, []
        try:
            i_val, i_example = index_fn(V(it, np.int64, 0))
            _, new = _subgraph(L, body_fn, ([i_val] if i_example is not None else []) + ins,
                               ([i_example] if i_example is not None else []) + examples, [], inline=True)
            new = [cast(L, n, c.dtype) for n, c in zip(new, carried)]
            if cond_fn is not None:
                _, (c_out,) = _subgraph(L, cond_fn, new, examples, [], inline=True)
                c_out = _pred(L, c_out)
            else:
                c_out = V(cond_in, np.bool_, 0)
            outs = [c_out] + new
            out_infos = []
            for o in outs:
                name = b.fresh(f"{o.name}_out")
                b.nodes.append(onnx.helper.make_node("Identity", [o.name], [name], name=b.fresh("/Identity")))
                out_infos.append(_value_info(onnx, name, o))
            body = onnx.helper.make_graph(b.nodes, b.fresh("loop_body"), graph_inputs, out_infos)
        finally:
            b.nodes = saved
        outs = b.op("Loop", [trip, cond_init] + carried, np.float32, None, n_out=len(carried), body=body)
        outs = outs if isinstance(outs, tuple) else (outs,)
        for o, c in zip(outs, carried):
            o.dtype, o.rank = c.dtype, c.rank
        return outs

    def lower_range_loop(L, start, stop, step, body_fn, carried):
        b = L.b
        if _is_v(step) or step <= 0:
            raise UnsupportedOperatorError("fabric.onnx: range_loop needs a positive constant step")
        if not _is_v(start) and not _is_v(stop):
            trip = b.i64(max(0, -(-(stop - start) // step)))
        else:
            span = b.op("Sub", [cast(L, tensor(L, stop), np.int64), cast(L, tensor(L, start), np.int64)], np.int64, 0)
            span = b.op("Add", [span, b.i64(step - 1)], np.int64, 0)
            trip = b.op("Max", [b.op("Div", [span, b.i64(step)], np.int64, 0), b.i64(0)], np.int64, 0)

        def index(it):
            i = it
            if step != 1:
                i = b.op("Mul", [i, b.i64(step)], np.int64, 0)
            if _is_v(start) or start != 0:
                i = b.op("Add", [i, cast(L, tensor(L, start), np.int64)], np.int64, 0)
            return i, 0
        return loop(L, body_fn, list(carried), L.node.args[4], index, trip, None,
                    b.const(np.asarray(True)))

    def lower_while_loop(L, cond_fn, body_fn, carried):
        fx_carried = L.node.args[2]
        examples = [_example(L, c, a) for c, a in zip(carried, fx_carried)]
        _, (c0,) = _subgraph(L, cond_fn, list(carried), examples, [], inline=True)
        return loop(L, body_fn, list(carried), fx_carried, lambda it: (None, None), None, cond_fn, _pred(L, c0))

    FUNCTIONS[cf.cond] = lower_cond
    FUNCTIONS[cf.range_loop] = lower_range_loop
    FUNCTIONS[cf.while_loop] = lower_while_loop


_register_control_flow()
