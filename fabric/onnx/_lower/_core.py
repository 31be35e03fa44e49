"""Lowering the fx graph IR to ONNX: one rule per ``call_function`` target, ``call_method`` name and
``call_module`` class.

Shapes are never baked in where a dimension may be dynamic: ``x.size(0)``
becomes ``Shape``/``Gather``, ``view(b, -1)`` a ``Reshape`` by a tensor built
with ``Concat``.  Parameters are initializers named by their ``state_dict``
keys; layout changes (a linear layer's transpose, LSTM gate order) are ONNX
nodes over them, so that tied weights stay one initializer (constant folding,
on by default, evaluates them at export time).
"""
from __future__ import annotations

import math

import numpy as np

from .._builder import Builder, ShapeV, V


class UnsupportedOperatorError(RuntimeError):
    """An op of the captured graph has no ONNX lowering."""


FUNCTIONS: dict = {}
METHODS: dict = {}
MODULES: dict = {}


def _reg_fn(*targets):
    def deco(fn):
        for t in targets:
            FUNCTIONS[t] = fn
        return fn
    return deco


def _reg_method(*names):
    def deco(fn):
        for n in names:
            METHODS[n] = fn
        return fn
    return deco


def _reg_module(*classes):
    def deco(fn):
        for c in classes:
            MODULES[c] = fn
        return fn
    return deco


class Lowering:
    """State while lowering one graph: the builder, the value of each fx node, the module."""

    def __init__(self, gm, builder: Builder):
        self.gm = gm
        self.b = builder
        self.env: dict = {}
        self.node = None

    # meta of the node being lowered
    def out_dtype(self, default=np.float32):
        tm = self.node.meta.get("tensor_meta")
        if tm is not None and hasattr(tm, "dtype"):
            return np.dtype(tm.dtype.to_numpy())
        ex = self.node.meta.get("example_value")   # a Python number computed from sizes
        if isinstance(ex, bool):
            return np.dtype(np.bool_)
        if isinstance(ex, int):
            return np.dtype(np.int64)
        if isinstance(ex, float):
            return np.dtype(np.float64)
        return np.dtype(default)

    def out_rank(self):
        tm = self.node.meta.get("tensor_meta")
        if tm is not None and hasattr(tm, "shape"):
            return len(tm.shape)
        return None

    def param(self, qualname: str) -> V:
        obj = self.gm
        for atom in qualname.split("."):
            obj = getattr(obj, atom)
        return self.b.param(obj, qualname)

    def lower_node(self, node):
        self.node = node
        args = _load(self.env, node.args)
        kwargs = _load(self.env, node.kwargs)
        if node.op == "get_attr":
            obj = self.gm
            for atom in node.target.split("."):
                obj = getattr(obj, atom)
            from ..._tensor import Tensor
            if isinstance(obj, Tensor):
                return self.b.param(obj, node.target)
            return obj
        if node.op == "call_function":
            fn = FUNCTIONS.get(node.target)
            if fn is None:
                raise UnsupportedOperatorError(_unsupported(_name_of(node.target), self.b.opset))
            return fn(self, *args, **kwargs)
        if node.op == "call_method":
            fn = METHODS.get(node.target)
            if fn is None:
                raise UnsupportedOperatorError(_unsupported(f"Tensor.{node.target}", self.b.opset))
            return fn(self, *args, **kwargs)
        if node.op == "call_module":
            mod = self.gm.get_submodule(node.target)
            fn = MODULES.get(type(mod))
            if fn is None:
                raise UnsupportedOperatorError(_unsupported(f"{type(mod).__module__}.{type(mod).__name__}",
                                                            self.b.opset))
            return fn(self, mod, node.target, *args, **kwargs)
        raise AssertionError(node.op)


def _unsupported(name: str, opset: int) -> str:
    return (f"Exporting the operator '{name}' to ONNX opset version {opset} is not supported by fabric.onnx "
            "(no lowering is registered for it)")


def _name_of(fn) -> str:
    from ...fx.node import _qualified_name
    return _qualified_name(fn)


def _load(env, a):
    from ...fx.node import map_arg
    return map_arg(a, lambda n: env[n])


# --- small emission helpers ------------------------------------------------------------------------

def _is_v(x) -> bool:
    return isinstance(x, V)


def tensor(L: Lowering, x, like: V | None = None, dtype=None) -> V:
    """``x`` as an ONNX value: Python numbers become constants of ``like``'s dtype."""
    if isinstance(x, V):
        return x
    if isinstance(x, (list, tuple)) and any(isinstance(e, V) for e in x):
        return shape_tensor(L, x)
    if dtype is None:
        if like is not None:
            dtype = like.dtype
        elif isinstance(x, bool):
            dtype = np.bool_
        elif isinstance(x, int):
            dtype = np.int64
        else:
            dtype = np.float32
    return L.b.const(np.asarray(x, dtype=dtype))


def shape_tensor(L: Lowering, items) -> V:
    """A 1-D int64 value from a mix of Python ints and scalar/1-D int64 values."""
    if isinstance(items, V):
        return items
    items = list(items)
    if all(not isinstance(i, V) for i in items):
        return L.b.i64([int(i) for i in items])
    parts = []
    for i in items:
        if isinstance(i, V):
            i = cast(L, i, np.int64)
            parts.append(unsqueeze(L, i, [0]) if i.rank == 0 else i)
        else:
            parts.append(L.b.i64([int(i)]))
    return L.b.op("Concat", parts, np.int64, 1, axis=0)


def cast(L: Lowering, x: V, dtype) -> V:
    dtype = np.dtype(dtype)
    if x.dtype == dtype:
        return x
    return L.b.op("Cast", [x], dtype, x.rank, to=_onnx_type(dtype))


def _onnx_type(dtype) -> int:
    from onnx import helper
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def unsqueeze(L, x: V, axes) -> V:
    r = None if x.rank is None else x.rank + len(axes)
    return L.b.op("Unsqueeze", [x, L.b.i64(list(axes))], x.dtype, r)


def squeeze(L, x: V, axes) -> V:
    r = None if x.rank is None else x.rank - len(axes)
    return L.b.op("Squeeze", [x, L.b.i64(list(axes))], x.dtype, r)


def transpose(L, x: V, perm) -> V:
    return L.b.op("Transpose", [x], x.dtype, len(perm), perm=list(perm))


def reduce(L, op: str, x: V, axes, keepdims: bool) -> V:
    rank = None if x.rank is None else (x.rank if keepdims else x.rank - len(axes))
    if op == "ReduceSum" or L.b.opset >= 18:
        return L.b.op(op, [x, L.b.i64(list(axes))], x.dtype, rank, keepdims=int(keepdims))
    return L.b.op(op, [x], x.dtype, rank, axes=list(axes), keepdims=int(keepdims))


def shape_of(L, x: V) -> ShapeV:
    s = L.b.op("Shape", [x], np.int64, 1)
    return ShapeV(s.name, np.int64, 1)


def size_at(L, x: V, dim: int) -> V:
    return L.b.op("Gather", [shape_of(L, x), L.b.i64(dim)], np.int64, 0, axis=0)


def _rank(x: V) -> int:
    if x.rank is None:
        raise UnsupportedOperatorError(f"fabric.onnx needs the rank of {x.name}, which shape propagation did not "
                                       "record")
    return x.rank


def _dim(d: int, rank: int) -> int:
    return d + rank if d < 0 else d


def matmul_t(L, x: V, w: V) -> V:
    """``x @ w.T`` (a linear layer's weight)."""
    wt = transpose(L, w, [1, 0])
    r = x.rank
    return L.b.op("MatMul", [x, wt], x.dtype, r)


def linear(L, x: V, w: V, b) -> V:
    y = matmul_t(L, x, w)
    if b is not None:
        y = L.b.op("Add", [y, b], y.dtype, y.rank)
    return y


def gelu(L, x: V, approximate: str = "none") -> V:
    b = L.b
    if approximate == "tanh":
        c = b.const(np.asarray(math.sqrt(2.0 / math.pi), x.dtype))
        x3 = b.op("Mul", [b.op("Mul", [x, x]), x])
        inner = b.op("Mul", [c, b.op("Add", [x, b.op("Mul", [b.const(np.asarray(0.044715, x.dtype)), x3])])])
        t = b.op("Tanh", [inner])
    else:
        t = b.op("Erf", [b.op("Div", [x, b.const(np.asarray(math.sqrt(2.0), x.dtype))])])
    one = b.const(np.asarray(1.0, x.dtype))
    half = b.const(np.asarray(0.5, x.dtype))
    return b.op("Mul", [b.op("Mul", [half, x]), b.op("Add", [one, t])], x.dtype, x.rank)


def layer_norm(L, x: V, normalized_shape, w, bias, eps: float) -> V:
    n = len(normalized_shape) if isinstance(normalized_shape, (tuple, list)) else 1
    if w is None:
        w = L.b.const(np.ones(tuple(normalized_shape), x.dtype))
    inputs = [x, w] + ([bias] if bias is not None else [])
    return L.b.op("LayerNormalization", inputs, x.dtype, x.rank, axis=-n, epsilon=float(eps))
