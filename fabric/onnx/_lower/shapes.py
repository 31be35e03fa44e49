"""Lowering rules: sizes, views, indexing, concatenation, constructors; shapes stay symbolic."""
from __future__ import annotations

import builtins
import operator

import numpy as np

from .._builder import ShapeV, V
from ._core import (
    FUNCTIONS,
    METHODS,
    UnsupportedOperatorError,
    _dim,
    _is_v,
    _rank,
    _reg_fn,
    _reg_method,
    _unsupported,
    cast,
    reduce,
    shape_of,
    shape_tensor,
    size_at,
    squeeze,
    tensor,
    transpose,
    unsqueeze,
)
from .elementwise import _matmul

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



_register_misc()
