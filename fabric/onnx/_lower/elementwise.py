"""Lowering rules: arithmetic, comparisons, activations, reductions, casts, einsum."""
from __future__ import annotations

import math
import operator

import numpy as np

from ... import nn
from ...nn import functional as F
from ._core import (
    FUNCTIONS,
    METHODS,
    MODULES,
    UnsupportedOperatorError,
    _dim,
    _is_v,
    _rank,
    _reg_fn,
    _reg_method,
    _unsupported,
    cast,
    gelu,
    layer_norm,
    linear,
    reduce,
    shape_of,
    shape_tensor,
    tensor,
    unsqueeze,
)

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
