"""Lowering rules for the ONNX operators of a model built by ``load_model``: each becomes that operator again,
so a loaded (and fine-tuned) model exports back to ONNX."""
from __future__ import annotations

import numpy as np

from .._builder import V
from .._onnx_ops import OPS
from ._core import FUNCTIONS, Lowering


def _metas(L: Lowering):
    tm = L.node.meta.get("tensor_meta")
    if tm is None:
        return []
    return list(tm) if isinstance(tm, (tuple, list)) and not hasattr(tm, "shape") else [tm]


def _rule(op_type: str):
    def rule(L: Lowering, *inputs, **attrs):
        if op_type == "ConstantOfShape":
            from onnx import numpy_helper
            dt = np.dtype(attrs.pop("value_dtype", "float32"))
            attrs["value"] = numpy_helper.from_array(np.asarray([attrs.get("value", 0.0)], dt), name="value")
        metas = _metas(L)
        if not metas:
            raise NotImplementedError(f"fabric.onnx: re-exporting ONNX {op_type} needs the node's shape metadata")
        outs = L.b.op(op_type, [x if isinstance(x, V) or x is None else _const(L, x) for x in inputs],
                      np.dtype(metas[0].dtype.to_numpy()), len(metas[0].shape), n_out=len(metas), **attrs)
        if len(metas) == 1:
            return outs
        for o, m in zip(outs, metas):
            o.dtype, o.rank = np.dtype(m.dtype.to_numpy()), len(m.shape)
        return outs
    return rule


def _const(L, x):
    from ._core import tensor
    return tensor(L, x)


for _name, _fn in OPS.items():
    FUNCTIONS[_fn] = _rule(_name)
