"""Shape and view ops: reshape/view, transpose, permute, expand, squeeze,
unsqueeze, indexing (``__getitem__`` / ``__setitem__``), unbind.

Views share memory and the version counter with their base.

Example::

    >>> import fabric
    >>> x = fabric.arange(6).reshape(2, 3)
    >>> x.t().shape
    fabric.Size([3, 2])
"""
from __future__ import annotations

import builtins

import numpy as np

from .. import _dtype as D
from ..autograd.function import Function, _apply, _check_inplace
from ..autograd.grad_mode import state as _state
from .._tensor import Tensor, _wrap_dim
from ..backends import backend_of
from ._util import infer_size, shape_args, xp_of

__all__ = ["reshape", "view", "transpose", "swapaxes", "swapdims", "permute", "expand", "squeeze", "unsqueeze",
           "getitem", "setitem", "unbind", "t", "flatten", "expand_as", "view_as", "reshape_as", "clone",
           "contiguous", "narrow"]


class Reshape(Function):
    _array_forward = True
    _is_view = True
    _node_name = "ViewBackward0"

    @staticmethod
    def forward(ctx, x, shape):
        ctx.shape = x.shape
        return x.reshape(shape)

    @staticmethod
    def backward(ctx, gy):
        return gy.reshape(ctx.shape), None


class ReshapeCopy(Function):
    _array_forward = True
    _node_name = "UnsafeViewBackward0"

    @staticmethod
    def forward(ctx, x, shape):
        ctx.shape = x.shape
        return x.reshape(shape)

    @staticmethod
    def backward(ctx, gy):
        return gy.reshape(ctx.shape), None


def _is_viewable(x, shape):
    """Whether NumPy can reshape ``x`` to ``shape`` without copying."""
    if x.flags.c_contiguous:
        return True
    try:
        v = x.view()
        v.shape = shape
        return True
    except AttributeError:
        return False


def reshape(input, *shape):
    """Same data in a new shape; a view when possible, else a copy."""
    shape = infer_size(shape_args(shape), input._data.size)
    if shape == input._data.shape:
        return _apply(Reshape, (input, shape), (input._data, shape))
    cls = Reshape if _is_viewable(input._data, shape) else ReshapeCopy
    return _apply(cls, (input, shape), (input._data, shape))


def view(input, *shape):
    """A view with a new shape; errors when the strides do not allow it."""
    if len(shape) == 1 and isinstance(shape[0], (D.dtype, np.dtype, type)) and not isinstance(shape[0], (tuple, list)):
        dt = D.to_dtype(shape[0])
        if dt.itemsize != input._data.itemsize:
            raise RuntimeError("view(dtype) with a different element size is not supported")
        return Tensor._make(input._data.view(dt.np), False, None, 0, input._shared_vc())
    shape = infer_size(shape_args(shape), input._data.size)
    if not _is_viewable(input._data, shape):
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at least one dimension "
                           "spans across two contiguous subspaces). Use .reshape(...) instead.")
    return _apply(Reshape, (input, shape), (input._data, shape))


def view_as(input, other):
    return view(input, other._data.shape)


def reshape_as(input, other):
    return reshape(input, other._data.shape)


def flatten(input, start_dim=0, end_dim=-1):
    """Merge dims ``start_dim..end_dim`` into one."""
    nd = input._data.ndim
    if nd == 0:
        return reshape(input, (1,))
    s = _wrap_dim(start_dim, nd)
    e = _wrap_dim(end_dim, nd)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input
    shp = input._data.shape
    n = 1
    for d in shp[s:e + 1]:
        n *= d
    return reshape(input, shp[:s] + (n,) + shp[e + 1:])


class Permute(Function):
    _array_forward = True
    _is_view = True

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        return x.transpose(dims)

    @staticmethod
    def backward(ctx, gy):
        inv = [0] * len(ctx.dims)
        for i, d in enumerate(ctx.dims):
            inv[d] = i
        return permute(gy, tuple(inv)), None


def permute(input, *dims):
    """Reorder dimensions (a view)."""
    nd = input._data.ndim
    dims = shape_args(dims, "dims")
    if len(dims) != nd:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match the length "
                           f"of the desired ordering of dimensions i.e. input.dim() = {nd} is not equal to "
                           f"len(dims) = {len(dims)}")
    dims = tuple(_wrap_dim(d, nd) for d in dims)
    if len(set(dims)) != nd:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return _apply(Permute, (input, dims), (input._data, dims))


class Transpose(Function):
    _array_forward = True
    _is_view = True

    @staticmethod
    def forward(ctx, x, d0, d1):
        ctx.d = (d0, d1)
        return x.swapaxes(d0, d1)

    @staticmethod
    def backward(ctx, gy):
        return transpose(gy, *ctx.d), None, None


def transpose(input, dim0, dim1):
    """Swap two dimensions (a view)."""
    nd = input._data.ndim
    d0, d1 = _wrap_dim(dim0, nd), _wrap_dim(dim1, nd)
    if nd == 0:
        return input.detach() if not input._requires_grad else _apply(Reshape, (input, ()), (input._data, ()))
    return _apply(Transpose, (input, d0, d1), (input._data, d0, d1))


swapaxes = swapdims = transpose


def t(input):
    """Transpose a tensor of at most 2 dims."""
    if input._data.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input._data.ndim}D")
    if input._data.ndim < 2:
        return _apply(Reshape, (input, input._data.shape), (input._data, input._data.shape))
    return transpose(input, 0, 1)


class Expand(Function):
    _array_forward = True
    _is_view = True

    @staticmethod
    def forward(ctx, x, shape):
        return backend_of(x).xp.broadcast_to(x, shape)

    @staticmethod
    def backward(ctx, gy):
        return gy, None  # the engine sums back to the input's shape


def expand(input, *sizes):
    """Broadcast to a larger shape without copying (-1 keeps a size)."""
    sizes = shape_args(sizes, "size")
    shp = input._data.shape
    if len(sizes) < len(shp):
        raise RuntimeError(f"expand({input.type()}{{{list(shp)}}}, size=[{', '.join(map(str, sizes))}]): the number "
                           f"of sizes provided ({len(sizes)}) must be greater or equal to the number of dimensions "
                           f"in the tensor ({len(shp)})")
    lead = len(sizes) - len(shp)
    target = []
    for i, s in enumerate(sizes):
        if i < lead:
            if s < 0:
                raise RuntimeError(f"The expanded size of the tensor ({s}) isn't allowed in a leading, "
                                   "non-existing dimension 0")
            target.append(s)
            continue
        cur = shp[i - lead]
        if s == -1:
            target.append(cur)
        elif cur == 1 or cur == s:
            target.append(s)
        else:
            raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing size ({cur}) at "
                               f"non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: "
                               f"{list(shp)}")
    target = tuple(target)
    if target == shp:
        return input
    return _apply(Expand, (input, target), (input._data, target))


def expand_as(input, other):
    return expand(input, other._data.shape)


def squeeze(input, dim=None):
    """Remove size-1 dims (all, or those in ``dim``)."""
    shp = input._data.shape
    if dim is None:
        new = tuple(s for s in shp if s != 1)
    else:
        dims = (dim,) if isinstance(dim, (builtins.int, np.integer)) else tuple(dim)
        dims = {_wrap_dim(d, len(shp)) for d in dims}
        new = tuple(s for i, s in enumerate(shp) if not (i in dims and s == 1))
    if new == shp:
        return _apply(Reshape, (input, shp), (input._data, shp))
    return _apply(Reshape, (input, new), (input._data, new))


def unsqueeze(input, dim):
    """Insert a size-1 dim at ``dim``."""
    shp = input._data.shape
    d = _wrap_dim(dim, len(shp) + 1)
    new = shp[:d] + (1,) + shp[d:]
    return _apply(Reshape, (input, new), (input._data, new))


class Clone(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x):
        return x.copy()

    @staticmethod
    def backward(ctx, gy):
        return gy


def clone(input, *, memory_format=None):
    """A copy with its own memory, differentiable."""
    return _apply(Clone, (input,), (input._data,))


def contiguous(input, memory_format=None):
    return input.contiguous()


# --- indexing ------------------------------------------------------------------

def _convert_key(key, x):
    """Turn a PyTorch index into a NumPy one. Returns (key, advanced)."""
    if not isinstance(key, tuple):
        key = (key,)
    out = []
    advanced = False
    for k in key:
        if isinstance(k, Tensor):
            kd = k._data
            if kd.dtype.kind == "f":
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            if kd.dtype.kind == "u" and kd.dtype != np.uint8:
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            if kd.dtype == np.uint8:
                kd = kd.astype(bool)
            if kd.ndim == 0 and kd.dtype.kind in "i":
                out.append(builtins.int(kd))
                continue
            if kd.__class__ is not x.__class__:
                kd = backend_of(x).xp.asarray(kd) if x.__class__ is not np.ndarray else backend_of(kd).to_numpy(kd)
            out.append(kd)
            advanced = True
        elif isinstance(k, slice):
            if k.step is not None:
                step = k.step.item() if isinstance(k.step, Tensor) else k.step
                if step <= 0:
                    raise ValueError("step must be greater than zero")
            out.append(slice(*(v.item() if isinstance(v, Tensor) else v for v in (k.start, k.stop, k.step))))
        elif k is None or k is Ellipsis:
            out.append(k)
        elif isinstance(k, (builtins.bool, np.bool_)):
            out.append(builtins.bool(k))
            advanced = True
        elif isinstance(k, (builtins.int, np.integer)):
            out.append(builtins.int(k))
        elif isinstance(k, (list, np.ndarray)):
            arr = np.asarray([v.item() if isinstance(v, Tensor) else v for v in k] if isinstance(k, list) else k)
            if arr.dtype.kind == "f":
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            if arr.size == 0:
                arr = arr.astype(np.int64)
            if x.__class__ is not np.ndarray:
                arr = backend_of(x).xp.asarray(arr)
            out.append(arr)
            advanced = True
        elif isinstance(k, float):
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
                             "valid indices (got float)")
        else:
            raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
                             f"valid indices (got {type(k).__name__})")
    _check_int_bounds(out, x.shape)
    return tuple(out), advanced


def _check_int_bounds(key, shape):
    if sum(1 for k in key if k is not None and k is not Ellipsis and not isinstance(k, builtins.bool)
           and not (hasattr(k, "dtype") and k.dtype == bool)) > len(shape) + sum(
            k.ndim - 1 for k in key if hasattr(k, "dtype") and k.dtype == bool):
        raise IndexError(f"too many indices for tensor of dimension {len(shape)}")
    dim = 0
    for i, k in enumerate(key):
        if k is Ellipsis:
            rest = sum(1 for kk in key[i + 1:] if kk is not None and not isinstance(kk, builtins.bool))
            dim = len(shape) - rest
            continue
        if k is None or isinstance(k, builtins.bool):
            continue
        if isinstance(k, builtins.int):
            if dim < len(shape) and not -shape[dim] <= k < shape[dim]:
                raise IndexError(f"index {k} is out of bounds for dimension {dim} with size {shape[dim]}")
        dim += k.ndim if hasattr(k, "dtype") and k.dtype == bool else 1


class Slice(Function):
    """Basic indexing (ints, slices, None, Ellipsis): a view."""
    _array_forward = True
    _is_view = True
    _node_name = "SliceBackward0"

    @staticmethod
    def forward(ctx, x, key):
        ctx.shape, ctx.key = x.shape, key
        return x[key]

    @staticmethod
    def backward(ctx, gy):
        return _IndexBackward.apply(gy, ctx.shape, ctx.key, False), None


class Index(Function):
    """Advanced indexing (integer/bool arrays): a copy."""
    _array_forward = True

    @staticmethod
    def forward(ctx, x, key):
        ctx.shape, ctx.key = x.shape, key
        return x[key]

    @staticmethod
    def backward(ctx, gy):
        return _IndexBackward.apply(gy, ctx.shape, ctx.key, True), None


class _IndexBackward(Function):
    """Scatter ``gy`` into zeros of the input shape (duplicates add up)."""
    _array_forward = True
    _node_name = "IndexPutBackward0"

    @staticmethod
    def forward(ctx, gy, shape, key, advanced):
        ctx.key, ctx.advanced = key, advanced
        xp = xp_of(gy)
        z = xp.zeros(shape, gy.dtype)
        if advanced:
            backend_of(gy).scatter_add(z, key if len(key) != 1 else key[0], gy)
        else:
            z[key] = gy
        return z

    @staticmethod
    def backward(ctx, ggz):
        cls = Index if ctx.advanced else Slice
        return _apply(cls, (ggz, ctx.key), (ggz._data, ctx.key)), None, None, None


def getitem(input, key):
    """``input[key]`` with PyTorch's indexing rules."""
    if key.__class__ is builtins.int and input._data.ndim:
        n = input._data.shape[0]
        if not -n <= key < n:
            raise IndexError(f"index {key} is out of bounds for dimension 0 with size {n}")
        return _apply(Slice, (input, (key,)), (input._data, (key,)))
    if input._data.ndim == 0 and key is not None and key is not Ellipsis and not (
            isinstance(key, tuple) and all(k is None or k is Ellipsis for k in key)) and not isinstance(
            key, (builtins.bool, Tensor)):
        raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in "
                         "C++ to convert a 0-dim tensor to a number")
    k, advanced = _convert_key(key, input._data)
    cls = Index if advanced else Slice
    return _apply(cls, (input, k), (input._data, k))


class SetItem(Function):
    """``x[key] = value`` recorded as an in-place op on ``x``."""
    _array_forward = True
    _is_inplace = True
    _node_name = "CopySlices"

    @staticmethod
    def forward(ctx, x, value, key, advanced):
        ctx.key, ctx.advanced = key, advanced
        x[key] = value
        return x

    @staticmethod
    def backward(ctx, gy):
        need_x, need_v = ctx.needs_input_grad[:2]
        gx = gv = None
        cls = Index if ctx.advanced else Slice
        if need_v:
            gv = _apply(cls, (gy, ctx.key), (gy._data, ctx.key))
        if need_x:
            gx = _MaskOut.apply(gy, ctx.key)
        return gx, gv, None, None


class _MaskOut(Function):
    """Copy of ``g`` with ``g[key] = 0`` (gradient of overwritten elements)."""
    _array_forward = True

    @staticmethod
    def forward(ctx, g, key):
        ctx.key = key
        out = g.copy()
        out[key] = 0
        return out

    @staticmethod
    def backward(ctx, gg):
        return _MaskOut.apply(gg, ctx.key), None


def setitem(input, key, value):
    """``input[key] = value``: in place, bumps the version, differentiable."""
    k, advanced = _convert_key(key, input._data)
    x = input._data
    if isinstance(value, Tensor):
        v = value._data
        if v.__class__ is not x.__class__:
            if v.ndim == 0:
                v = backend_of(x).xp.asarray(backend_of(v).to_numpy(v))
            else:
                from ._util import device_mismatch

                device_mismatch(input, value)
        if v.dtype != x.dtype:
            v = v.astype(x.dtype)
    else:
        v = value
        if isinstance(v, (list, tuple, np.ndarray)):
            v = xp_of(x).asarray(np.asarray(v), dtype=x.dtype)
    if _state.enabled and (input._requires_grad or (isinstance(value, Tensor) and value._requires_grad)):
        _apply(SetItem, (input, value, k, advanced), (x, v, k, advanced))
        return
    x[k] = v
    input._bump_version()


class Unbind(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim, ctx.shape = dim, x.shape
        return tuple(x[(slice(None),) * dim + (i,)] for i in range(x.shape[dim]))

    @staticmethod
    def backward(ctx, *grads):
        from .join import stack

        return stack(grads, ctx.dim), None


def unbind(input, dim=0):
    """Split along ``dim`` into a tuple of tensors without that dim."""
    d = _wrap_dim(dim, input._data.ndim)
    if input._data.shape[d] == 0:
        return ()
    return _apply(Unbind, (input, d), (input._data, d))


def narrow(input, dim, start, length):
    """The slice ``start:start+length`` along ``dim`` (a view)."""
    nd = input._data.ndim
    d = _wrap_dim(dim, nd)
    size = input._data.shape[d]
    if isinstance(start, Tensor):
        start = builtins.int(start.item())
    if start < 0:
        start += size
    if not 0 <= start <= size or length < 0 or start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    key = (slice(None),) * d + (slice(start, start + length),)
    return _apply(Slice, (input, key), (input._data, key))
