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

import builtins
import math
import operator

import numpy as np

from .. import nn
from ..nn import functional as F
from ._builder import Builder, ShapeV, V


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
            from .._tensor import Tensor
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
    from ..fx.node import _qualified_name
    return _qualified_name(fn)


def _load(env, a):
    from ..fx.node import map_arg
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


# --- elementwise --------------------------------------------------------------------------------------

def _binary(onnx_op: str, pyop, compare: bool = False):
    def rule(L, a, b, **kw):
        alpha = kw.get("alpha", 1)
        if alpha != 1:
            b = b * alpha if not _is_v(b) else L.b.op("Mul", [b, tensor(L, alpha, like=b)], b.dtype, b.rank)
        if not _is_v(a) and not _is_v(b):
            return pyop(a, b)
        like = a if _is_v(a) else b
        if compare:
            dt = like.dtype
            if _is_v(a) and _is_v(b) and a.dtype != b.dtype:
                dt = np.result_type(a.dtype, b.dtype)
        else:
            dt = L.out_dtype(like.dtype)
        va = cast(L, tensor(L, a, dtype=dt), dt)
        vb = cast(L, tensor(L, b, dtype=dt), dt)
        ranks = [v.rank for v in (va, vb)]
        rank = None if None in ranks else max(ranks)
        return L.b.op(onnx_op, [va, vb], np.bool_ if compare else dt, rank)
    return rule


for _op, _onnx, _cmp, _meths in [
        (operator.add, "Add", False, ("add", "__add__")), (operator.sub, "Sub", False, ("sub", "__sub__")),
        (operator.mul, "Mul", False, ("mul", "__mul__")), (operator.truediv, "Div", False, ("div", "__truediv__")),
        (operator.pow, "Pow", False, ("pow",)), (operator.eq, "Equal", True, ("eq",)),
        (operator.lt, "Less", True, ("lt",)), (operator.gt, "Greater", True, ("gt",)),
        (operator.le, "LessOrEqual", True, ("le",)), (operator.ge, "GreaterOrEqual", True, ("ge",))]:
    _rule = _binary(_onnx, _op, _cmp)
    FUNCTIONS[_op] = _rule
    for _m in _meths:
        METHODS[_m] = _rule

_fabric_names = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv,
                 "pow": operator.pow, "eq": operator.eq, "lt": operator.lt, "gt": operator.gt}


def _register_fabric_binaries():
    import fabric
    for name, op in _fabric_names.items():
        f = getattr(fabric, name, None)
        if f is not None:
            FUNCTIONS[f] = FUNCTIONS[op]


_register_fabric_binaries()


@_reg_fn(operator.floordiv)
def _floordiv(L, a, b):
    if not _is_v(a) and not _is_v(b):
        return a // b
    like = a if _is_v(a) else b
    if np.issubdtype(like.dtype, np.integer):
        return L.b.op("Div", [tensor(L, a, like=like), tensor(L, b, like=like)], like.dtype, like.rank)
    q = L.b.op("Div", [tensor(L, a, like=like), tensor(L, b, like=like)])
    return L.b.op("Floor", [q], like.dtype, like.rank)


@_reg_fn(operator.matmul)
@_reg_method("matmul", "__matmul__")
def _matmul(L, a, b):
    rank = max(a.rank or 2, b.rank or 2)
    return L.b.op("MatMul", [a, b], a.dtype, rank)


@_reg_fn(operator.neg)
@_reg_method("neg", "__neg__")
def _neg(L, x):
    return -x if not _is_v(x) else L.b.op("Neg", [x], x.dtype, x.rank)


def _unary(onnx_op):
    def rule(L, x, *args, **kwargs):
        if kwargs.get("inplace"):
            pass  # in-place on a traced value is the same value in a graph
        return L.b.op(onnx_op, [x], x.dtype, x.rank)
    return rule


def _register_unaries():
    import fabric
    for name, onnx_op in [("relu", "Relu"), ("sigmoid", "Sigmoid"), ("tanh", "Tanh"), ("exp", "Exp"),
                          ("log", "Log"), ("sqrt", "Sqrt"), ("abs", "Abs"), ("sin", "Sin"), ("cos", "Cos"),
                          ("erf", "Erf"), ("floor", "Floor"), ("ceil", "Ceil"), ("reciprocal", "Reciprocal")]:
        rule = _unary(onnx_op)
        for ns in (fabric, F):
            f = getattr(ns, name, None)
            if f is not None:
                FUNCTIONS[f] = rule
        METHODS[name] = rule


_register_unaries()


@_reg_method("rsqrt")
def _rsqrt(L, x):
    return L.b.op("Reciprocal", [L.b.op("Sqrt", [x])], x.dtype, x.rank)


@_reg_fn(F.gelu)
def _gelu(L, x, approximate="none"):
    return gelu(L, x, approximate)


@_reg_fn(F.silu)
def _silu(L, x, inplace=False):
    return L.b.op("Mul", [x, L.b.op("Sigmoid", [x])], x.dtype, x.rank)


def _softmax_rule(onnx_op):
    def rule(L, x, dim=None, _stacklevel=3, dtype=None):
        if dim is None:
            raise UnsupportedOperatorError("softmax without dim cannot be exported; pass dim=")
        if dtype is not None:
            x = cast(L, x, dtype.to_numpy())
        return L.b.op(onnx_op, [x], x.dtype, x.rank, axis=int(dim))
    return rule


def _register_softmax():
    import fabric
    for f in (F.softmax, fabric.softmax):
        FUNCTIONS[f] = _softmax_rule("Softmax")
    for f in (F.log_softmax, fabric.log_softmax):
        FUNCTIONS[f] = _softmax_rule("LogSoftmax")
    METHODS["softmax"] = _softmax_rule("Softmax")
    METHODS["log_softmax"] = _softmax_rule("LogSoftmax")


_register_softmax()


@_reg_fn(F.dropout)
def _dropout(L, x, p=0.5, training=True, inplace=False):
    if training and p > 0:
        raise UnsupportedOperatorError("fabric.onnx exports inference graphs: F.dropout(training=True) cannot be "
                                       "exported (call model.eval() or pass training=False)")
    return x


@_reg_fn(F.linear)
def _linear(L, x, weight, bias=None):
    return linear(L, x, weight, bias)


@_reg_fn(F.layer_norm)
def _layer_norm(L, x, normalized_shape, weight=None, bias=None, eps=1e-5):
    return layer_norm(L, x, normalized_shape, weight, bias, eps)


@_reg_fn(F.embedding)
def _embedding(L, idx, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
               sparse=False):
    if max_norm is not None:
        raise UnsupportedOperatorError(_unsupported("embedding(max_norm=...)", L.b.opset))
    return L.b.op("Gather", [weight, idx], weight.dtype, (idx.rank or 0) + 1, axis=0)


# --- shapes, views, indexing --------------------------------------------------------------------------------

@_reg_fn(builtins.getattr)
def _getattr(L, x, name):
    if not _is_v(x):
        return getattr(x, name)
    if name == "shape":
        return shape_of(L, x)
    if name == "T" or name == "mT":
        r = _rank(x)
        perm = list(range(r))[::-1] if name == "T" else list(range(r - 2)) + [r - 1, r - 2]
        return transpose(L, x, perm)
    if name == "ndim":
        return _rank(x)
    arg_meta = L.node.args[0].meta.get("tensor_meta")
    if name == "dtype" and arg_meta is not None:
        return arg_meta.dtype
    if name == "device":
        import fabric
        return fabric.device("cpu")
    raise UnsupportedOperatorError(_unsupported(f"Tensor.{name} (attribute)", L.b.opset))


@_reg_method("size")
def _size(L, x, dim=None):
    if dim is None:
        return shape_of(L, x)
    return size_at(L, x, _dim(dim, _rank(x)))


@_reg_method("dim")
def _dimm(L, x):
    return _rank(x)


@_reg_method("view", "reshape")
def _view(L, x, *shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list, V)):
        shape = shape[0]
    rank = len(shape) if not isinstance(shape, V) else L.out_rank()
    return L.b.op("Reshape", [x, shape_tensor(L, shape)], x.dtype, rank)


def _register_reshape_fn():
    import fabric
    FUNCTIONS[fabric.reshape] = lambda L, x, shape: _view(L, x, shape)


_register_reshape_fn()


def flatten(L, x: V, start_dim: int = 0, end_dim: int = -1) -> V:
    r = _rank(x)
    s, e = _dim(start_dim, r), _dim(end_dim, r)
    if s == e:
        return x
    if e == r - 1:
        if s == 0:
            return L.b.op("Reshape", [x, L.b.i64([-1])], x.dtype, 1)
        shp = L.b.op("Slice", [shape_of(L, x), L.b.i64([0]), L.b.i64([s])], np.int64, 1)
        return L.b.op("Reshape", [x, L.b.op("Concat", [shp, L.b.i64([-1])], np.int64, 1, axis=0)], x.dtype, s + 1)
    full = shape_of(L, x)
    head = L.b.op("Slice", [full, L.b.i64([0]), L.b.i64([s])], np.int64, 1)
    tail = L.b.op("Slice", [full, L.b.i64([e + 1]), L.b.i64([r])], np.int64, 1)
    target = L.b.op("Concat", [head, L.b.i64([-1]), tail], np.int64, 1, axis=0)
    return L.b.op("Reshape", [x, target], x.dtype, r - (e - s))


def _register_flatten():
    import fabric
    FUNCTIONS[fabric.flatten] = lambda L, x, start_dim=0, end_dim=-1: flatten(L, x, start_dim, end_dim)
    METHODS["flatten"] = lambda L, x, start_dim=0, end_dim=-1: flatten(L, x, start_dim, end_dim)


_register_flatten()


@_reg_method("transpose")
def _transpose(L, x, d0, d1):
    r = _rank(x)
    perm = list(range(r))
    d0, d1 = _dim(d0, r), _dim(d1, r)
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return transpose(L, x, perm)


@_reg_method("permute")
def _permute(L, x, *dims):
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = dims[0]
    r = _rank(x)
    return transpose(L, x, [_dim(d, r) for d in dims])


@_reg_method("t")
def _t(L, x):
    return x if _rank(x) < 2 else transpose(L, x, [1, 0])


@_reg_method("contiguous", "detach", "clone")
def _identity_method(L, x, *args, **kwargs):
    return x


@_reg_method("unsqueeze")
def _unsqueeze(L, x, dim):
    return unsqueeze(L, x, [_dim(dim, _rank(x) + 1)])


@_reg_method("squeeze")
def _squeeze(L, x, dim=None):
    if dim is None:
        raise UnsupportedOperatorError("Tensor.squeeze() without dim cannot be exported with dynamic shapes; "
                                       "pass dim=")
    return squeeze(L, x, [_dim(dim, _rank(x))])


@_reg_method("float")
def _float(L, x):
    return cast(L, x, np.float32)


@_reg_method("to", "type")
def _to(L, x, *args, **kwargs):
    import fabric
    dt = kwargs.get("dtype")
    for a in args:
        if isinstance(a, fabric.dtype):
            dt = a
    return x if dt is None else cast(L, x, dt.to_numpy())


@_reg_method("masked_fill")
def _masked_fill(L, x, mask, value):
    v = tensor(L, value, like=x) if not _is_v(value) else cast(L, value, x.dtype)
    return L.b.op("Where", [cast(L, mask, np.bool_), v, x], x.dtype, x.rank)


def _trilu(upper: bool):
    def rule(L, x, diagonal=0):
        return L.b.op("Trilu", [x, L.b.i64(int(diagonal)) if not _is_v(diagonal) else diagonal], x.dtype, x.rank,
                      upper=int(upper))
    return rule


def _register_misc():
    import fabric
    FUNCTIONS[fabric.triu] = _trilu(True)
    FUNCTIONS[fabric.tril] = _trilu(False)
    METHODS["triu"] = _trilu(True)
    METHODS["tril"] = _trilu(False)
    FUNCTIONS[fabric.matmul] = _matmul
    FUNCTIONS[fabric.bmm] = _matmul
    FUNCTIONS[fabric.cat] = _cat
    FUNCTIONS[fabric.stack] = _stack
    FUNCTIONS[fabric.arange] = _arange
    FUNCTIONS[fabric.full] = _full
    FUNCTIONS[fabric.ones] = lambda L, *size, dtype=None, **kw: _full(L, size, 1.0, dtype=dtype)
    FUNCTIONS[fabric.zeros] = lambda L, *size, dtype=None, **kw: _full(L, size, 0.0, dtype=dtype)
    FUNCTIONS[fabric.masked_fill] = _masked_fill
    FUNCTIONS[fabric.transpose] = _transpose
    FUNCTIONS[fabric.permute] = _permute
    FUNCTIONS[fabric.unsqueeze] = _unsqueeze
    FUNCTIONS[fabric.mean] = _mean
    FUNCTIONS[fabric.sum] = _sum
    FUNCTIONS[fabric.where] = _where


def _cat(L, tensors, dim=0):
    r = _rank(tensors[0])
    return L.b.op("Concat", list(tensors), tensors[0].dtype, r, axis=_dim(dim, r))


def _stack(L, tensors, dim=0):
    r = _rank(tensors[0]) + 1
    d = _dim(dim, r)
    return L.b.op("Concat", [unsqueeze(L, t, [d]) for t in tensors], tensors[0].dtype, r, axis=d)


def _arange(L, start, end=None, step=1, *, dtype=None, device=None, requires_grad=False, **kw):
    if end is None:
        start, end = 0, start
    vals = (start, end, step)
    is_int = all(isinstance(v, int) or (_is_v(v) and np.issubdtype(v.dtype, np.integer)) for v in vals)
    dt = np.int64 if is_int else np.float32
    parts = [cast(L, tensor(L, v, dtype=dt), dt) for v in vals]
    out = L.b.op("Range", parts, dt, 1)
    if dtype is not None:
        out = cast(L, out, dtype.to_numpy())
    return out


def _full(L, size, fill_value, *, dtype=None, device=None, requires_grad=False, **kw):
    if len(size) == 1 and isinstance(size[0], (tuple, list, V)):
        size = size[0]
    dt = L.out_dtype()
    from onnx import numpy_helper
    shape = shape_tensor(L, size)
    value = numpy_helper.from_array(np.asarray([fill_value], dtype=dt), name="value")
    rank = len(size) if not isinstance(size, V) else None
    return L.b.op("ConstantOfShape", [shape], dt, rank, value=value)


def _where(L, cond, x, y):
    like = x if _is_v(x) else y
    return L.b.op("Where", [cast(L, cond, np.bool_), tensor(L, x, like=like), tensor(L, y, like=like)],
                  like.dtype, like.rank)


@_reg_method("mean")
def _mean(L, x, dim=None, keepdim=False, dtype=None):
    r = _rank(x)
    axes = list(range(r)) if dim is None else [_dim(d, r) for d in (dim if isinstance(dim, (tuple, list)) else [dim])]
    return reduce(L, "ReduceMean", x, axes, keepdim)


@_reg_method("sum")
def _sum(L, x, dim=None, keepdim=False, dtype=None):
    r = _rank(x)
    axes = list(range(r)) if dim is None else [_dim(d, r) for d in (dim if isinstance(dim, (tuple, list)) else [dim])]
    return reduce(L, "ReduceSum", x, axes, keepdim)


@_reg_method("expand")
def _expand(L, x, *sizes):
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = sizes[0]
    r = len(sizes)
    items = []
    for i, s in enumerate(sizes):
        items.append(size_at(L, x, i - (r - _rank(x))) if (not _is_v(s) and s == -1) else s)
    return L.b.op("Expand", [x, shape_tensor(L, items)], x.dtype, r)


@_reg_fn(operator.getitem)
def _getitem(L, x, idx):
    if not _is_v(x):
        return x[idx]
    if isinstance(x, ShapeV):
        if isinstance(idx, int):
            return L.b.op("Gather", [x, L.b.i64(idx)], np.int64, 0, axis=0)
        if isinstance(idx, slice) and idx.step in (None, 1):
            start = 0 if idx.start is None else idx.start
            end = np.iinfo(np.int64).max if idx.stop is None else idx.stop
            out = L.b.op("Slice", [x, L.b.i64([start]), L.b.i64([end])], np.int64, 1)
            return ShapeV(out.name, np.int64, 1)
        raise UnsupportedOperatorError(_unsupported(f"shape indexing with {idx!r}", L.b.opset))
    return index_tensor(L, x, idx)


def index_tensor(L, x: V, idx) -> V:
    """``x[idx]`` for ints, slices (bounds may be values), None and Ellipsis."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    if any(isinstance(i, V) and i.rank != 0 for i in idx) or any(isinstance(i, (list, tuple)) for i in idx):
        raise UnsupportedOperatorError(_unsupported("advanced (tensor) indexing", L.b.opset))
    r = _rank(x)
    n_real = sum(1 for i in idx if i is not None and i is not Ellipsis)
    if Ellipsis in idx:
        k = idx.index(Ellipsis)
        idx = idx[:k] + (slice(None),) * (r - n_real) + idx[k + 1:]
    starts, ends, axes, steps, squeeze_axes, none_pos = [], [], [], [], [], []
    axis = 0
    out_pos = 0
    for i in idx:
        if i is None:
            none_pos.append(out_pos)
            out_pos += 1
            continue
        if isinstance(i, slice):
            if not (i.start is None and i.stop is None and i.step in (None, 1)):
                starts.append(0 if i.start is None else i.start)
                ends.append(np.iinfo(np.int64).max if i.stop is None else i.stop)
                axes.append(axis)
                steps.append(1 if i.step is None else i.step)
            out_pos += 1
        else:  # an int (or a 0-d value): take one element and drop the axis
            starts.append(i)
            ends.append(np.iinfo(np.int64).max if (not _is_v(i) and i == -1) else
                        (i + 1 if not _is_v(i) else L.b.op("Add", [cast(L, i, np.int64), L.b.i64(1)], np.int64, 0)))
            axes.append(axis)
            steps.append(1)
            squeeze_axes.append(axis)
        axis += 1
    y = x
    if axes:
        y = L.b.op("Slice", [x, shape_tensor(L, starts), shape_tensor(L, ends), L.b.i64(axes), L.b.i64(steps)],
                   x.dtype, r)
    if squeeze_axes:
        y = squeeze(L, y, squeeze_axes)
    if none_pos:
        y = unsqueeze(L, y, none_pos)
    return y


# --- modules ------------------------------------------------------------------------------------------------

def _p(L, path: str, name: str):
    mod = L.gm.get_submodule(path)
    if getattr(mod, name, None) is None:
        return None
    return L.param(f"{path}.{name}")


@_reg_module(nn.Linear, nn.modules.linear.NonDynamicallyQuantizableLinear)
def _m_linear(L, m, path, x):
    return linear(L, x, _p(L, path, "weight"), _p(L, path, "bias"))


@_reg_module(nn.Identity)
def _m_identity(L, m, path, x, *args, **kwargs):
    return x


@_reg_module(nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.AlphaDropout)
def _m_dropout(L, m, path, x):
    return x


def _act_module(fn):
    def rule(L, m, path, x):
        return fn(L, x)
    return rule


MODULES[nn.ReLU] = _act_module(lambda L, x: L.b.op("Relu", [x], x.dtype, x.rank))
MODULES[nn.Tanh] = _act_module(lambda L, x: L.b.op("Tanh", [x], x.dtype, x.rank))
MODULES[nn.Sigmoid] = _act_module(lambda L, x: L.b.op("Sigmoid", [x], x.dtype, x.rank))
MODULES[nn.SiLU] = _act_module(lambda L, x: _silu(L, x))


@_reg_module(nn.GELU)
def _m_gelu(L, m, path, x):
    return gelu(L, x, m.approximate)


@_reg_module(nn.Softmax)
def _m_softmax(L, m, path, x):
    return L.b.op("Softmax", [x], x.dtype, x.rank, axis=int(m.dim if m.dim is not None else -1))


@_reg_module(nn.LayerNorm)
def _m_layer_norm(L, m, path, x):
    return layer_norm(L, x, m.normalized_shape, _p(L, path, "weight"), _p(L, path, "bias"), m.eps)


@_reg_module(nn.Flatten)
def _m_flatten(L, m, path, x):
    return flatten(L, x, m.start_dim, m.end_dim)


@_reg_module(nn.Embedding)
def _m_embedding(L, m, path, idx):
    return _embedding(L, idx, _p(L, path, "weight"), max_norm=m.max_norm)


def _tuple(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


@_reg_module(nn.Conv1d, nn.Conv2d, nn.Conv3d)
def _m_conv(L, m, path, x):
    n = len(m.kernel_size)
    if m.padding_mode != "zeros":
        raise UnsupportedOperatorError(_unsupported(f"Conv{n}d(padding_mode='{m.padding_mode}')", L.b.opset))
    k, d = _tuple(m.kernel_size, n), _tuple(m.dilation, n)
    if isinstance(m.padding, str):
        if m.padding == "valid":
            pads = [0] * (2 * n)
        else:
            total = [dd * (kk - 1) for kk, dd in zip(k, d)]
            pads = [t // 2 for t in total] + [t - t // 2 for t in total]
    else:
        p = _tuple(m.padding, n)
        pads = list(p) + list(p)
    inputs = [x, _p(L, path, "weight")] + ([_p(L, path, "bias")] if m.bias is not None else [])
    return L.b.op("Conv", inputs, x.dtype, x.rank, kernel_shape=list(k), strides=list(_tuple(m.stride, n)),
                  pads=pads, dilations=list(d), group=int(m.groups))


@_reg_module(nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)
def _m_batch_norm(L, m, path, x):
    if m.training or not m.track_running_stats:
        raise UnsupportedOperatorError("fabric.onnx exports BatchNorm in eval mode with running statistics "
                                       f"({path} is in training mode or has track_running_stats=False)")
    c = m.num_features
    scale = _p(L, path, "weight") if m.affine else L.b.const(np.ones(c, x.dtype))
    bias = _p(L, path, "bias") if m.affine else L.b.const(np.zeros(c, x.dtype))
    return L.b.op("BatchNormalization", [x, scale, bias, _p(L, path, "running_mean"), _p(L, path, "running_var")],
                  x.dtype, x.rank, epsilon=float(m.eps))


@_reg_module(nn.MaxPool1d, nn.MaxPool2d, nn.MaxPool3d)
def _m_max_pool(L, m, path, x):
    n = _rank(x) - 2
    if m.return_indices:
        raise UnsupportedOperatorError(_unsupported("MaxPool(return_indices=True)", L.b.opset))
    k = _tuple(m.kernel_size, n)
    s = _tuple(m.stride if m.stride is not None else m.kernel_size, n)
    p = _tuple(m.padding, n)
    return L.b.op("MaxPool", [x], x.dtype, x.rank, kernel_shape=list(k), strides=list(s), pads=list(p) + list(p),
                  dilations=list(_tuple(m.dilation, n)), ceil_mode=int(m.ceil_mode))


@_reg_module(nn.AvgPool1d, nn.AvgPool2d, nn.AvgPool3d)
def _m_avg_pool(L, m, path, x):
    n = _rank(x) - 2
    if getattr(m, "divisor_override", None):
        raise UnsupportedOperatorError(_unsupported("AvgPool(divisor_override=...)", L.b.opset))
    k = _tuple(m.kernel_size, n)
    s = _tuple(m.stride if m.stride is not None else m.kernel_size, n)
    p = _tuple(m.padding, n)
    return L.b.op("AveragePool", [x], x.dtype, x.rank, kernel_shape=list(k), strides=list(s),
                  pads=list(p) + list(p), ceil_mode=int(m.ceil_mode), count_include_pad=int(m.count_include_pad))


@_reg_module(nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d, nn.AdaptiveAvgPool3d)
def _m_adaptive_avg_pool(L, m, path, x):
    n = _rank(x) - 2
    out = _tuple(m.output_size, n)
    if all(o == 1 for o in out):
        return L.b.op("GlobalAveragePool", [x], x.dtype, x.rank)
    tm = L.node.args[0].meta.get("tensor_meta")
    spatial = tuple(tm.shape[2:]) if tm is not None else None
    if spatial is None or any(o is None or s % o for s, o in zip(spatial, out)):
        raise UnsupportedOperatorError(_unsupported(f"AdaptiveAvgPool{n}d to {out} from {spatial}", L.b.opset))
    k = [s // o for s, o in zip(spatial, out)]
    return L.b.op("AveragePool", [x], x.dtype, x.rank, kernel_shape=k, strides=k)


# --- attention and transformers ---------------------------------------------------------------------------

def attention(L, m, path, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
              average_attn_weights=True, is_causal=False):
    """nn.MultiheadAttention (eval) as MatMul/Softmax; returns (output, weights or None)."""
    b = L.b
    if m.bias_k is not None or m.add_zero_attn:
        raise UnsupportedOperatorError(_unsupported("MultiheadAttention(add_bias_kv / add_zero_attn)", b.opset))
    if _rank(query) != 3:
        raise UnsupportedOperatorError(_unsupported("MultiheadAttention on unbatched input", b.opset))
    E, H = m.embed_dim, m.num_heads
    D = E // H
    if not m.batch_first:
        query, key, value = (transpose(L, t, [1, 0, 2]) for t in (query, key, value))
    if m._qkv_same_embed_dim:
        W = _p(L, path, "in_proj_weight")
        ws = [b.op("Slice", [W, b.i64([i * E]), b.i64([(i + 1) * E]), b.i64([0])], W.dtype, 2) for i in range(3)]
    else:
        ws = [_p(L, path, n) for n in ("q_proj_weight", "k_proj_weight", "v_proj_weight")]
    bias = _p(L, path, "in_proj_bias")
    bs = [None] * 3 if bias is None else [
        b.op("Slice", [bias, b.i64([i * E]), b.i64([(i + 1) * E]), b.i64([0])], bias.dtype, 1) for i in range(3)]
    q, k, v = (linear(L, t, w, bb) for t, w, bb in zip((query, key, value), ws, bs))
    heads = b.i64([0, 0, H, D])
    q = transpose(L, b.op("Reshape", [q, heads], q.dtype, 4), [0, 2, 1, 3])       # B H T D
    kt = transpose(L, b.op("Reshape", [k, heads], k.dtype, 4), [0, 2, 3, 1])      # B H D S
    v = transpose(L, b.op("Reshape", [v, heads], v.dtype, 4), [0, 2, 1, 3])       # B H S D
    q = b.op("Mul", [q, b.const(np.asarray(1.0 / math.sqrt(D), q.dtype))], q.dtype, 4)
    scores = b.op("MatMul", [q, kt], q.dtype, 4)
    ninf = b.const(np.asarray(-np.inf, q.dtype))
    zero = b.const(np.asarray(0.0, q.dtype))
    if attn_mask is not None:
        if _rank(attn_mask) != 2:
            raise UnsupportedOperatorError(_unsupported("MultiheadAttention with a 3-D attn_mask", b.opset))
        if attn_mask.dtype == np.bool_:
            attn_mask = b.op("Where", [attn_mask, ninf, zero], q.dtype, 2)
        scores = b.op("Add", [scores, cast(L, attn_mask, q.dtype)], q.dtype, 4)
    elif is_causal:
        t_len, s_len = size_at(L, scores, 2), size_at(L, scores, 3)
        from onnx import numpy_helper
        full = b.op("ConstantOfShape", [shape_tensor(L, [t_len, s_len])], q.dtype, 2,
                    value=numpy_helper.from_array(np.asarray([-np.inf], q.dtype), name="value"))
        scores = b.op("Add", [scores, b.op("Trilu", [full, b.i64(1)], q.dtype, 2, upper=1)], q.dtype, 4)
    if key_padding_mask is not None:
        kpm = key_padding_mask
        if kpm.dtype == np.bool_:
            kpm = b.op("Where", [kpm, ninf, zero], q.dtype, 2)
        scores = b.op("Add", [scores, unsqueeze(L, cast(L, kpm, q.dtype), [1, 2])], q.dtype, 4)
    attn = b.op("Softmax", [scores], q.dtype, 4, axis=-1)
    out = b.op("MatMul", [attn, v], q.dtype, 4)
    out = b.op("Reshape", [transpose(L, out, [0, 2, 1, 3]), b.i64([0, 0, E])], q.dtype, 3)
    out = linear(L, out, _p(L, f"{path}.out_proj", "weight"), _p(L, f"{path}.out_proj", "bias"))
    if not m.batch_first:
        out = transpose(L, out, [1, 0, 2])
    weights = None
    if need_weights:
        weights = reduce(L, "ReduceMean", attn, [1], False) if average_attn_weights else attn
    return out, weights


@_reg_module(nn.MultiheadAttention)
def _m_mha(L, m, path, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
           average_attn_weights=True, is_causal=False):
    return attention(L, m, path, query, key, value, key_padding_mask, need_weights, attn_mask, average_attn_weights,
                     is_causal)


def _activation(L, layer, x):
    code = getattr(layer, "activation_relu_or_gelu", 0)
    act = layer.activation
    if code == 1:
        return L.b.op("Relu", [x], x.dtype, x.rank)
    if code == 2:
        return gelu(L, x, getattr(act, "approximate", "none"))
    rule = MODULES.get(type(act))
    if rule is not None:
        return rule(L, act, None, x)
    fn = FUNCTIONS.get(act)
    if fn is not None:
        return fn(L, x)
    raise UnsupportedOperatorError(_unsupported(f"TransformerEncoderLayer activation {act!r}", L.b.opset))


def encoder_layer(L, m, path, x, src_mask=None, src_key_padding_mask=None, is_causal=False):
    def sa(h):
        return attention(L, m.self_attn, f"{path}.self_attn", h, h, h, src_key_padding_mask, False, src_mask,
                         True, is_causal)[0]

    def ff(h):
        h = linear(L, h, _p(L, f"{path}.linear1", "weight"), _p(L, f"{path}.linear1", "bias"))
        h = _activation(L, m, h)
        return linear(L, h, _p(L, f"{path}.linear2", "weight"), _p(L, f"{path}.linear2", "bias"))

    def norm(name, h):
        mod = getattr(m, name)
        return layer_norm(L, h, mod.normalized_shape, _p(L, f"{path}.{name}", "weight"),
                          _p(L, f"{path}.{name}", "bias"), mod.eps)

    add = L.b.op
    if m.norm_first:
        x = add("Add", [x, sa(norm("norm1", x))], x.dtype, x.rank)
        x = add("Add", [x, ff(norm("norm2", x))], x.dtype, x.rank)
    else:
        x = norm("norm1", add("Add", [x, sa(x)], x.dtype, x.rank))
        x = norm("norm2", add("Add", [x, ff(x)], x.dtype, x.rank))
    return x


@_reg_module(nn.TransformerEncoderLayer)
def _m_encoder_layer(L, m, path, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
    return encoder_layer(L, m, path, src, src_mask, src_key_padding_mask, is_causal)


@_reg_module(nn.TransformerEncoder)
def _m_encoder(L, m, path, src, mask=None, src_key_padding_mask=None, is_causal=None):
    x = src
    for i, layer in enumerate(m.layers):
        x = encoder_layer(L, layer, f"{path}.layers.{i}", x, mask, src_key_padding_mask, bool(is_causal))
    if m.norm is not None:
        x = layer_norm(L, x, m.norm.normalized_shape, _p(L, f"{path}.norm", "weight"), _p(L, f"{path}.norm", "bias"),
                       m.norm.eps)
    return x


# --- recurrent layers -----------------------------------------------------------------------------------------

_GATES = {"LSTM": (4, [0, 3, 1, 2]),   # torch i,f,g,o -> ONNX i,o,f,c
          "GRU": (3, [1, 0, 2])}       # torch r,z,n   -> ONNX z,r,h


def _reorder(L, w: V, hidden: int, order) -> V:
    b = L.b
    rows = [b.op("Slice", [w, b.i64([g * hidden]), b.i64([(g + 1) * hidden]), b.i64([0])], w.dtype, w.rank)
            for g in order]
    return b.op("Concat", rows, w.dtype, w.rank, axis=0)


def rnn(L, m, path, x, hx=None):
    b = L.b
    mode = m.mode
    if mode not in _GATES:
        raise UnsupportedOperatorError(_unsupported(f"nn.RNN (mode {mode})", b.opset))
    if m.proj_size:
        raise UnsupportedOperatorError(_unsupported("LSTM(proj_size>0)", b.opset))
    if _rank(x) != 3:
        raise UnsupportedOperatorError(_unsupported(f"{mode} on unbatched input", b.opset))
    n_gates, order = _GATES[mode]
    H, dirs = m.hidden_size, 2 if m.bidirectional else 1
    if m.batch_first:
        x = transpose(L, x, [1, 0, 2])
    h0 = c0 = None
    if hx is not None:
        h0, c0 = (hx if mode == "LSTM" else (hx, None))
    hs, cs = [], []
    for layer in range(m.num_layers):
        Ws, Rs, Bs = [], [], []
        for d in range(dirs):
            sfx = f"_l{layer}" + ("_reverse" if d else "")
            Ws.append(_reorder(L, _p(L, path, "weight_ih" + sfx), H, order))
            Rs.append(_reorder(L, _p(L, path, "weight_hh" + sfx), H, order))
            if m.bias:
                Bs.append(b.op("Concat", [_reorder(L, _p(L, path, "bias_ih" + sfx), H, order),
                                          _reorder(L, _p(L, path, "bias_hh" + sfx), H, order)], x.dtype, 1, axis=0))
        W = b.op("Concat", [unsqueeze(L, w, [0]) for w in Ws], x.dtype, 3, axis=0)
        R = b.op("Concat", [unsqueeze(L, r, [0]) for r in Rs], x.dtype, 3, axis=0)
        B = b.op("Concat", [unsqueeze(L, bb, [0]) for bb in Bs], x.dtype, 2, axis=0) if Bs else None

        def init(state, layer=layer):
            if state is None:
                return None
            return b.op("Slice", [state, b.i64([layer * dirs]), b.i64([(layer + 1) * dirs]), b.i64([0])],
                        state.dtype, 3)
        inputs = [x, W, R, B, None, init(h0)]
        attrs = {"hidden_size": H, "direction": "bidirectional" if dirs == 2 else "forward"}
        if mode == "LSTM":
            inputs.append(init(c0))
            y, y_h, y_c = b.op("LSTM", inputs, x.dtype, 4, n_out=3, **attrs)
            y_c.rank = 3
            cs.append(y_c)
        else:
            y, y_h = b.op("GRU", inputs, x.dtype, 4, n_out=2, linear_before_reset=1, **attrs)
        y_h.rank = 3
        hs.append(y_h)
        # Y: [T, dirs, B, H] -> [T, B, dirs * H]
        x = b.op("Reshape", [transpose(L, y, [0, 2, 1, 3]), b.i64([0, 0, -1])], x.dtype, 3)
    out = transpose(L, x, [1, 0, 2]) if m.batch_first else x
    h_n = hs[0] if len(hs) == 1 else b.op("Concat", hs, x.dtype, 3, axis=0)
    if mode == "LSTM":
        c_n = cs[0] if len(cs) == 1 else b.op("Concat", cs, x.dtype, 3, axis=0)
        return out, (h_n, c_n)
    return out, h_n


@_reg_module(nn.LSTM, nn.GRU)
def _m_rnn(L, m, path, x, hx=None):
    return rnn(L, m, path, x, hx)


_register_misc()


def _split_sizes(L, x: V, split, dim: int) -> list[int]:
    tm = L.node.args[0].meta.get("tensor_meta")
    if tm is None or not hasattr(tm, "shape"):
        raise UnsupportedOperatorError("fabric.onnx: split needs the size of the split dimension")
    total = int(tm.shape[dim])
    if isinstance(split, int):
        return [split] * (total // split) + ([total % split] if total % split else [])
    return [int(s) for s in split]


def _static(L, value, position: int):
    """The example value of a size argument that ONNX needs as a constant (a split size)."""
    if not _is_v(value):
        return value
    src = L.node.args[position] if position < len(L.node.args) else None
    ex = getattr(src, "meta", {}).get("example_value")
    if ex is None:
        raise UnsupportedOperatorError(f"fabric.onnx: {L.node.format_node()} needs a constant size")
    return ex


@_reg_method("split")
def _split(L, x, split_size_or_sections, dim=0):
    split_size_or_sections = _static(L, split_size_or_sections, 1)
    d = _dim(dim, _rank(x))
    sizes = _split_sizes(L, x, split_size_or_sections, d)
    outs = L.b.op("Split", [x, L.b.i64(sizes)], x.dtype, x.rank, n_out=len(sizes), axis=d)
    return outs if isinstance(outs, tuple) else (outs,)


@_reg_method("chunk")
def _chunk(L, x, chunks, dim=0):
    d = _dim(dim, _rank(x))
    tm = L.node.args[0].meta["tensor_meta"]
    size = -(-int(tm.shape[d]) // chunks)
    return _split(L, x, size, d)


def _register_split():
    import fabric
    FUNCTIONS[fabric.split] = _split
    FUNCTIONS[fabric.chunk] = _chunk


_register_split()


# --- control flow: fx.control_flow ops become ONNX If / Loop with subgraphs ----------------------------------

def _as_graph_module(fn):
    from ..fx import GraphModule, symbolic_trace
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
    from ..fx.passes.shape_prop import ShapeProp
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
    from ..fx import control_flow as cf

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


# --- more activations, functional layers, sdpa, nn.RNN ------------------------------------------------------

def _clip(L, x, lo, hi):
    lo_v = None if lo is None else tensor(L, lo, like=x)
    hi_v = None if hi is None else tensor(L, hi, like=x)
    return L.b.op("Clip", [x, lo_v, hi_v], x.dtype, x.rank)


def _register_activations():
    import fabric
    b_ops = {
        "leaky_relu": lambda L, x, negative_slope=0.01, inplace=False: L.b.op("LeakyRelu", [x], x.dtype, x.rank,
                                                                               alpha=float(negative_slope)),
        "elu": lambda L, x, alpha=1.0, inplace=False: L.b.op("Elu", [x], x.dtype, x.rank, alpha=float(alpha)),
        "hardtanh": lambda L, x, min_val=-1.0, max_val=1.0, inplace=False: _clip(L, x, min_val, max_val),
        "relu6": lambda L, x, inplace=False: _clip(L, x, 0.0, 6.0),
        "hardsigmoid": lambda L, x, inplace=False: L.b.op("HardSigmoid", [x], x.dtype, x.rank, alpha=1 / 6, beta=0.5),
        "hardswish": lambda L, x, inplace=False: L.b.op("HardSwish", [x], x.dtype, x.rank),
        "mish": lambda L, x, inplace=False: L.b.op("Mul", [x, L.b.op("Tanh", [L.b.op("Softplus", [x])])],
                                                  x.dtype, x.rank),
    }
    for name, rule in b_ops.items():
        FUNCTIONS[getattr(F, name)] = rule

    def softplus(L, x, beta=1.0, threshold=20.0):
        if beta == 1.0:
            sp = L.b.op("Softplus", [x], x.dtype, x.rank)
        else:
            bx = L.b.op("Mul", [x, tensor(L, beta, like=x)], x.dtype, x.rank)
            sp = L.b.op("Div", [L.b.op("Softplus", [bx]), tensor(L, beta, like=x)], x.dtype, x.rank)
            x = bx
        # PyTorch returns x itself where beta * x > threshold
        big = L.b.op("Greater", [x if beta == 1.0 else x, tensor(L, threshold, like=x)], np.bool_, x.rank)
        orig = x if beta == 1.0 else L.b.op("Div", [x, tensor(L, beta, like=x)], x.dtype, x.rank)
        return L.b.op("Where", [big, orig, sp], x.dtype, x.rank)
    FUNCTIONS[F.softplus] = softplus

    def clamp(L, x, min=None, max=None):
        return _clip(L, x, min, max)
    FUNCTIONS[fabric.clamp] = clamp
    METHODS["clamp"] = clamp
    MODULES[nn.LeakyReLU] = lambda L, m, path, x: b_ops["leaky_relu"](L, x, m.negative_slope)
    MODULES[nn.ELU] = lambda L, m, path, x: b_ops["elu"](L, x, m.alpha)
    MODULES[nn.Hardtanh] = lambda L, m, path, x: _clip(L, x, m.min_val, m.max_val)
    MODULES[nn.ReLU6] = lambda L, m, path, x: _clip(L, x, 0.0, 6.0)
    MODULES[nn.Hardswish] = lambda L, m, path, x: b_ops["hardswish"](L, x)
    MODULES[nn.Mish] = lambda L, m, path, x: b_ops["mish"](L, x)
    MODULES[nn.Softplus] = lambda L, m, path, x: softplus(L, x, m.beta, m.threshold)


_register_activations()


class _Conf:
    """Attribute bag so a functional call reuses a module's lowering rule."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


def _register_functional_layers():
    def conv(n):
        def rule(L, x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
            k = tuple(int(s) for s in L.node.args[1].meta["tensor_meta"].shape[2:])
            if isinstance(padding, str):
                pad = padding
            else:
                pad = _tuple(padding, n)
            pads = ([0] * (2 * n)) if pad == "valid" else (
                [dd * (kk - 1) // 2 for kk, dd in zip(k, _tuple(dilation, n))]
                + [dd * (kk - 1) - dd * (kk - 1) // 2 for kk, dd in zip(k, _tuple(dilation, n))]
                if pad == "same" else list(pad) + list(pad))
            inputs = [x, weight] + ([bias] if bias is not None else [])
            return L.b.op("Conv", inputs, x.dtype, x.rank, kernel_shape=list(k), strides=list(_tuple(stride, n)),
                          pads=pads, dilations=list(_tuple(dilation, n)), group=int(groups))
        return rule
    FUNCTIONS[F.conv1d] = conv(1)
    FUNCTIONS[F.conv2d] = conv(2)

    def max_pool(L, x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
        m = _Conf(kernel_size=kernel_size, stride=stride or kernel_size, padding=padding, dilation=dilation,
                  ceil_mode=ceil_mode, return_indices=return_indices)
        return _m_max_pool(L, m, None, x)

    def avg_pool(L, x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        m = _Conf(kernel_size=kernel_size, stride=stride or kernel_size, padding=padding, ceil_mode=ceil_mode,
                  count_include_pad=count_include_pad, divisor_override=divisor_override)
        return _m_avg_pool(L, m, None, x)
    for f in (F.max_pool1d, F.max_pool2d):
        FUNCTIONS[f] = max_pool
    for f in (F.avg_pool1d, F.avg_pool2d):
        FUNCTIONS[f] = avg_pool
    for f in (F.adaptive_avg_pool1d, F.adaptive_avg_pool2d):
        FUNCTIONS[f] = lambda L, x, output_size: _m_adaptive_avg_pool(L, _Conf(output_size=output_size), None, x)

    def batch_norm(L, x, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
                   eps=1e-5):
        if training or running_mean is None:
            raise UnsupportedOperatorError("fabric.onnx exports F.batch_norm in inference form (training=False, "
                                           "running statistics given)")
        c = int(L.node.args[0].meta["tensor_meta"].shape[1])
        scale = weight if weight is not None else L.b.const(np.ones(c, x.dtype))
        shift = bias if bias is not None else L.b.const(np.zeros(c, x.dtype))
        return L.b.op("BatchNormalization", [x, scale, shift, running_mean, running_var], x.dtype, x.rank,
                      epsilon=float(eps))
    FUNCTIONS[F.batch_norm] = batch_norm

    def pad(L, x, pad, mode="constant", value=None):
        r = _rank(x)
        k = len(pad) // 2
        begins, ends = [0] * r, [0] * r
        for i in range(k):     # pad lists the last dimension first
            begins[r - 1 - i], ends[r - 1 - i] = pad[2 * i], pad[2 * i + 1]
        onnx_mode = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}.get(mode)
        if onnx_mode is None:
            raise UnsupportedOperatorError(_unsupported(f"F.pad(mode='{mode}')", L.b.opset))
        inputs = [x, L.b.i64(begins + ends)]
        if mode == "constant":
            inputs.append(tensor(L, 0.0 if value is None else value, like=x))
        return L.b.op("Pad", inputs, x.dtype, r, mode=onnx_mode)
    FUNCTIONS[F.pad] = pad

    def sdpa(L, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        b = L.b
        if enable_gqa:
            raise UnsupportedOperatorError(_unsupported("scaled_dot_product_attention(enable_gqa=True)", b.opset))
        r = _rank(q)
        perm = list(range(r - 2)) + [r - 1, r - 2]
        if scale is None:
            d = size_at(L, q, r - 1)
            s = b.op("Div", [b.const(np.asarray(1.0, q.dtype)), b.op("Sqrt", [cast(L, d, q.dtype)], q.dtype, 0)],
                     q.dtype, 0)
        else:
            s = b.const(np.asarray(scale, q.dtype))
        scores = b.op("Mul", [b.op("MatMul", [q, transpose(L, k, perm)], q.dtype, r), s], q.dtype, r)
        ninf, zero = b.const(np.asarray(-np.inf, q.dtype)), b.const(np.asarray(0.0, q.dtype))
        if is_causal:
            t_len, s_len = size_at(L, scores, r - 2), size_at(L, scores, r - 1)
            from onnx import numpy_helper
            full = b.op("ConstantOfShape", [shape_tensor(L, [t_len, s_len])], q.dtype, 2,
                        value=numpy_helper.from_array(np.asarray([-np.inf], q.dtype), name="value"))
            scores = b.op("Add", [scores, b.op("Trilu", [full, b.i64(1)], q.dtype, 2, upper=1)], q.dtype, r)
        if attn_mask is not None:
            m = attn_mask
            if m.dtype == np.bool_:    # True = may attend
                m = b.op("Where", [m, zero, ninf], q.dtype, m.rank)
            scores = b.op("Add", [scores, cast(L, m, q.dtype)], q.dtype, r)
        attn = b.op("Softmax", [scores], q.dtype, r, axis=-1)
        return b.op("MatMul", [attn, v], q.dtype, r)
    FUNCTIONS[F.scaled_dot_product_attention] = sdpa


_register_functional_layers()


_GATES["RNN_TANH"] = (1, [0])
_GATES["RNN_RELU"] = (1, [0])


@_reg_module(nn.RNN)
def _m_plain_rnn(L, m, path, x, hx=None):
    b = L.b
    if _rank(x) != 3:
        raise UnsupportedOperatorError(_unsupported("nn.RNN on unbatched input", b.opset))
    H, dirs = m.hidden_size, 2 if m.bidirectional else 1
    act = "Tanh" if m.nonlinearity == "tanh" else "Relu"
    if m.batch_first:
        x = transpose(L, x, [1, 0, 2])
    hs = []
    for layer in range(m.num_layers):
        sfx = [f"_l{layer}" + ("_reverse" if d else "") for d in range(dirs)]
        W = b.op("Concat", [unsqueeze(L, _p(L, path, "weight_ih" + s), [0]) for s in sfx], x.dtype, 3, axis=0)
        R = b.op("Concat", [unsqueeze(L, _p(L, path, "weight_hh" + s), [0]) for s in sfx], x.dtype, 3, axis=0)
        B = None
        if m.bias:
            B = b.op("Concat", [unsqueeze(L, b.op("Concat", [_p(L, path, "bias_ih" + s), _p(L, path, "bias_hh" + s)],
                                                  x.dtype, 1, axis=0), [0]) for s in sfx], x.dtype, 2, axis=0)
        h0 = None
        if hx is not None:
            h0 = b.op("Slice", [hx, b.i64([layer * dirs]), b.i64([(layer + 1) * dirs]), b.i64([0])], hx.dtype, 3)
        y, y_h = b.op("RNN", [x, W, R, B, None, h0], x.dtype, 4, n_out=2, hidden_size=H,
                      direction="bidirectional" if dirs == 2 else "forward", activations=[act] * dirs)
        y_h.rank = 3
        hs.append(y_h)
        x = b.op("Reshape", [transpose(L, y, [0, 2, 1, 3]), b.i64([0, 0, -1])], x.dtype, 3)
    out = transpose(L, x, [1, 0, 2]) if m.batch_first else x
    return out, (hs[0] if len(hs) == 1 else b.op("Concat", hs, x.dtype, 3, axis=0))


@_reg_fn(operator.invert, operator.not_)
@_reg_method("logical_not", "bitwise_not", "__invert__")
def _invert(L, x):
    if not _is_v(x):
        return ~x
    if x.dtype != np.bool_:
        raise UnsupportedOperatorError(_unsupported("bitwise not of an integer tensor", L.b.opset))
    return L.b.op("Not", [x], np.bool_, x.rank)


def _register_math():
    import fabric
    FUNCTIONS[fabric.logical_not] = _invert

    def scalar(np_fn, onnx_op):
        def rule(L, x):
            if not _is_v(x):
                return np_fn(x)
            return L.b.op(onnx_op, [cast(L, x, np.float64)], np.float64, x.rank)
        return rule
    FUNCTIONS[math.sqrt] = scalar(math.sqrt, "Sqrt")
    FUNCTIONS[math.exp] = scalar(math.exp, "Exp")
    FUNCTIONS[math.log] = scalar(math.log, "Log")


_register_math()


# --- likes, casts, einsum, arg/max reductions, repeat, normalize ------------------------------------------------

def _register_more():
    import fabric

    def like(fill):
        def rule(L, x, *args, dtype=None, **kw):
            from onnx import numpy_helper
            value = args[0] if (fill is None and args) else fill
            dt = np.dtype(dtype.to_numpy()) if dtype is not None else x.dtype
            if _is_v(value):
                raise UnsupportedOperatorError(_unsupported("full_like with a traced fill value", L.b.opset))
            return L.b.op("ConstantOfShape", [shape_of(L, x)], dt, x.rank,
                          value=numpy_helper.from_array(np.asarray([value], dt), name="value"))
        return rule
    FUNCTIONS[fabric.zeros_like] = like(0)
    FUNCTIONS[fabric.ones_like] = like(1)
    FUNCTIONS[fabric.full_like] = like(None)

    for name, dt in (("long", np.int64), ("int", np.int32), ("bool", np.bool_), ("double", np.float64),
                     ("half", np.float16)):
        METHODS[name] = (lambda d: lambda L, x, *a, **k: cast(L, x, d))(dt)

    def einsum(L, equation, *operands):
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = operands[0]
        return L.b.op("Einsum", list(operands), operands[0].dtype, L.out_rank(), equation=equation.replace(" ", ""))
    FUNCTIONS[fabric.einsum] = einsum

    def arg_reduce(onnx_op):
        def rule(L, x, dim=None, keepdim=False):
            if dim is None:
                x = L.b.op("Reshape", [x, L.b.i64([-1])], x.dtype, 1)
                dim = 0
            r = _rank(x)
            return L.b.op(onnx_op, [x], np.int64, r if keepdim else r - 1, axis=_dim(dim, r), keepdims=int(keepdim))
        return rule
    FUNCTIONS[fabric.argmax] = METHODS["argmax"] = arg_reduce("ArgMax")
    FUNCTIONS[fabric.argmin] = METHODS["argmin"] = arg_reduce("ArgMin")

    def amax(onnx_op):
        def rule(L, x, dim=(), keepdim=False):
            r = _rank(x)
            dims = list(range(r)) if dim in ((), None) else [_dim(d, r) for d in
                                                          (dim if isinstance(dim, (tuple, list)) else [dim])]
            return reduce(L, onnx_op, x, dims, keepdim)
        return rule
    FUNCTIONS[fabric.amax] = METHODS["amax"] = amax("ReduceMax")
    FUNCTIONS[fabric.amin] = METHODS["amin"] = amax("ReduceMin")

    def max_min(onnx_reduce, onnx_arg, onnx_pair):
        def rule(L, x, dim=None, keepdim=False, **kw):
            other = kw.get("other")
            if _is_v(dim) or other is not None:     # elementwise max(x, y)
                y = other if other is not None else dim
                return L.b.op(onnx_pair, [x, tensor(L, y, like=x)], x.dtype, x.rank)
            if dim is None:
                return reduce(L, onnx_reduce, x, list(range(_rank(x))), False)
            r = _rank(x)
            d = _dim(dim, r)
            values = reduce(L, onnx_reduce, x, [d], keepdim)
            idx = L.b.op(onnx_arg, [x], np.int64, r if keepdim else r - 1, axis=d, keepdims=int(keepdim))
            return values, idx
        return rule
    FUNCTIONS[fabric.max] = METHODS["max"] = max_min("ReduceMax", "ArgMax", "Max")
    FUNCTIONS[fabric.min] = METHODS["min"] = max_min("ReduceMin", "ArgMin", "Min")
    FUNCTIONS[fabric.maximum] = lambda L, x, y: L.b.op("Max", [x, tensor(L, y, like=x)], x.dtype, x.rank)
    FUNCTIONS[fabric.minimum] = lambda L, x, y: L.b.op("Min", [x, tensor(L, y, like=x)], x.dtype, x.rank)

    def repeat(L, x, *sizes):
        if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
            sizes = sizes[0]
        r = _rank(x)
        if len(sizes) > r:      # PyTorch prepends dimensions of size 1
            x = unsqueeze(L, x, list(range(len(sizes) - r)))
        return L.b.op("Tile", [x, shape_tensor(L, sizes)], x.dtype, len(sizes))
    METHODS["repeat"] = repeat

    def normalize(L, x, p=2.0, dim=1, eps=1e-12, out=None):
        r = _rank(x)
        d = _dim(dim, r)
        if p == 2.0:
            norm = reduce(L, "ReduceL2", x, [d], True)
        elif p == 1.0:
            norm = reduce(L, "ReduceL1", x, [d], True)
        else:
            raise UnsupportedOperatorError(_unsupported(f"F.normalize(p={p})", L.b.opset))
        norm = L.b.op("Max", [norm, tensor(L, eps, like=x)], x.dtype, r)
        return L.b.op("Div", [x, norm], x.dtype, r)
    FUNCTIONS[F.normalize] = normalize
    FUNCTIONS[fabric.rsqrt] = _rsqrt
    FUNCTIONS[fabric.pow] = FUNCTIONS[operator.pow]


_register_more()


# --- transformer decoder and nn.Transformer -----------------------------------------------------------------

def decoder_layer(L, m, path, x, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                  memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
    def sa(h):
        return attention(L, m.self_attn, f"{path}.self_attn", h, h, h, tgt_key_padding_mask, False, tgt_mask,
                         True, bool(tgt_is_causal))[0]

    def mha(h):
        return attention(L, m.multihead_attn, f"{path}.multihead_attn", h, memory, memory, memory_key_padding_mask,
                         False, memory_mask, True, bool(memory_is_causal))[0]

    def ff(h):
        h = linear(L, h, _p(L, f"{path}.linear1", "weight"), _p(L, f"{path}.linear1", "bias"))
        h = _activation(L, m, h)
        return linear(L, h, _p(L, f"{path}.linear2", "weight"), _p(L, f"{path}.linear2", "bias"))

    def norm(name, h):
        mod = getattr(m, name)
        return layer_norm(L, h, mod.normalized_shape, _p(L, f"{path}.{name}", "weight"),
                          _p(L, f"{path}.{name}", "bias"), mod.eps)

    add = L.b.op
    if m.norm_first:
        x = add("Add", [x, sa(norm("norm1", x))], x.dtype, x.rank)
        x = add("Add", [x, mha(norm("norm2", x))], x.dtype, x.rank)
        x = add("Add", [x, ff(norm("norm3", x))], x.dtype, x.rank)
    else:
        x = norm("norm1", add("Add", [x, sa(x)], x.dtype, x.rank))
        x = norm("norm2", add("Add", [x, mha(x)], x.dtype, x.rank))
        x = norm("norm3", add("Add", [x, ff(x)], x.dtype, x.rank))
    return x


@_reg_module(nn.TransformerDecoderLayer)
def _m_decoder_layer(L, m, path, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                     memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
    return decoder_layer(L, m, path, tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                         memory_key_padding_mask, tgt_is_causal, memory_is_causal)


def _final_norm(L, m, path, x):
    if m.norm is None:
        return x
    return layer_norm(L, x, m.norm.normalized_shape, _p(L, f"{path}.norm", "weight"), _p(L, f"{path}.norm", "bias"),
                      m.norm.eps)


@_reg_module(nn.TransformerDecoder)
def _m_decoder(L, m, path, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
               memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False):
    x = tgt
    for i, layer in enumerate(m.layers):
        x = decoder_layer(L, layer, f"{path}.layers.{i}", x, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                          memory_key_padding_mask, bool(tgt_is_causal), memory_is_causal)
    return _final_norm(L, m, path, x)


@_reg_module(nn.Transformer)
def _m_transformer(L, m, path, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None, src_key_padding_mask=None,
                   tgt_key_padding_mask=None, memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                   memory_is_causal=False):
    enc_rule, dec_rule = MODULES.get(type(m.encoder)), MODULES.get(type(m.decoder))
    if enc_rule is None or dec_rule is None:
        raise UnsupportedOperatorError(_unsupported("nn.Transformer with a custom encoder or decoder", L.b.opset))
    memory = enc_rule(L, m.encoder, f"{path}.encoder", src, src_mask, src_key_padding_mask, src_is_causal)
    return dec_rule(L, m.decoder, f"{path}.decoder", tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                    memory_key_padding_mask, tgt_is_causal, memory_is_causal)


# --- GroupNorm / InstanceNorm, ConvTranspose, Upsample / interpolate ------------------------------------------

def _affine_channels(L, y, w, bias, rank):
    """``y * w + b`` with per-channel ``w``/``b`` broadcast over (N, C, *spatial)."""
    axes = list(range(1, rank - 1))
    if w is not None:
        y = L.b.op("Mul", [y, unsqueeze(L, w, axes)], y.dtype, rank)
    if bias is not None:
        y = L.b.op("Add", [y, unsqueeze(L, bias, axes)], y.dtype, rank)
    return y


def group_norm(L, x, groups: int, w, bias, eps: float):
    b = L.b
    r = _rank(x)
    g = b.op("Reshape", [x, b.i64([0, groups, -1])], x.dtype, 3)
    mean = reduce(L, "ReduceMean", g, [2], True)
    centered = b.op("Sub", [g, mean], x.dtype, 3)
    var = reduce(L, "ReduceMean", b.op("Mul", [centered, centered], x.dtype, 3), [2], True)
    normed = b.op("Div", [centered, b.op("Sqrt", [b.op("Add", [var, tensor(L, eps, like=x)], x.dtype, 3)],
                                         x.dtype, 3)], x.dtype, 3)
    y = b.op("Reshape", [normed, shape_of(L, x)], x.dtype, r)
    return _affine_channels(L, y, w, bias, r)


@_reg_module(nn.GroupNorm)
def _m_group_norm(L, m, path, x):
    return group_norm(L, x, m.num_groups, _p(L, path, "weight"), _p(L, path, "bias"), m.eps)


@_reg_module(nn.InstanceNorm1d, nn.InstanceNorm2d, nn.InstanceNorm3d)
def _m_instance_norm(L, m, path, x):
    if m.track_running_stats and not m.training:
        raise UnsupportedOperatorError(_unsupported("InstanceNorm with running statistics in eval mode", L.b.opset))
    c = m.num_features
    w = _p(L, path, "weight") if m.affine else L.b.const(np.ones(c, x.dtype))
    bias = _p(L, path, "bias") if m.affine else L.b.const(np.zeros(c, x.dtype))
    return L.b.op("InstanceNormalization", [x, w, bias], x.dtype, x.rank, epsilon=float(m.eps))


def _register_norm_functions():
    FUNCTIONS[F.group_norm] = lambda L, x, num_groups, weight=None, bias=None, eps=1e-5: group_norm(
        L, x, num_groups, weight, bias, eps)


_register_norm_functions()


@_reg_module(nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)
def _m_conv_transpose(L, m, path, x, output_size=None):
    n = len(m.kernel_size)
    if output_size is not None or m.padding_mode != "zeros":
        raise UnsupportedOperatorError(_unsupported("ConvTranspose with output_size / non-zero padding_mode",
                                                    L.b.opset))
    p = list(_tuple(m.padding, n))
    inputs = [x, _p(L, path, "weight")] + ([_p(L, path, "bias")] if m.bias is not None else [])
    return L.b.op("ConvTranspose", inputs, x.dtype, x.rank, kernel_shape=list(m.kernel_size),
                  strides=list(_tuple(m.stride, n)), pads=p + p, dilations=list(_tuple(m.dilation, n)),
                  output_padding=list(_tuple(m.output_padding, n)), group=int(m.groups))


def interpolate(L, x, size=None, scale_factor=None, mode="nearest", align_corners=None):
    b = L.b
    r = _rank(x)
    n = r - 2
    onnx_mode = {"nearest": "nearest", "linear": "linear", "bilinear": "linear", "trilinear": "linear",
                 "bicubic": "cubic"}.get(mode)
    if onnx_mode is None:
        raise UnsupportedOperatorError(_unsupported(f"interpolate(mode='{mode}')", b.opset))
    if onnx_mode == "nearest":
        ctm, extra = "asymmetric", {"nearest_mode": "floor"}
    else:
        ctm, extra = ("align_corners" if align_corners else "half_pixel"), {}
        if onnx_mode == "cubic":
            extra["cubic_coeff_a"] = -0.75
    if size is not None:
        sizes = list(_tuple(size, n))
        target = b.op("Concat", [b.op("Slice", [shape_of(L, x), b.i64([0]), b.i64([2])], np.int64, 1),
                                 shape_tensor(L, sizes)], np.int64, 1, axis=0)
        return b.op("Resize", [x, None, None, target], x.dtype, r, mode=onnx_mode,
                    coordinate_transformation_mode=ctm, **extra)
    scales = [1.0, 1.0] + [float(s) for s in _tuple(scale_factor, n)]
    return b.op("Resize", [x, None, b.const(np.asarray(scales, np.float32))], x.dtype, r, mode=onnx_mode,
                coordinate_transformation_mode=ctm, **extra)


@_reg_module(nn.Upsample)
def _m_upsample(L, m, path, x):
    return interpolate(L, x, m.size, m.scale_factor, m.mode, m.align_corners)


def _register_interpolate():
    def rule(L, x, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None,
             antialias=False):
        if antialias:
            raise UnsupportedOperatorError(_unsupported("interpolate(antialias=True)", L.b.opset))
        return interpolate(L, x, size, scale_factor, mode, align_corners)
    FUNCTIONS[F.interpolate] = rule


_register_interpolate()
