"""Shape and view ops: reshape/view, transpose/permute/movedim, expand and
broadcasting, squeeze/unsqueeze (and their in-place forms), flips and rolls,
diagonals and triangles, ``as_strided``/``unfold``, meshgrid and friends,
narrow_copy, resize_.  ``x[key]`` / ``x[key] = v`` are in ``indexing.py``.

Views share memory and the version counter with their base (``_base`` is
the root tensor that owns the memory).

Example::

    >>> import fabric
    >>> x = fabric.arange(6).reshape(2, 3)
    >>> x.t().shape
    fabric.Size([3, 2])
    >>> x[:, 1:].flip(1)
    tensor([[2, 1],
            [5, 4]])
"""
from __future__ import annotations

import builtins
import itertools
import math
import warnings
from collections.abc import Sequence

import numpy as np

from .. import _dtype as D
from .. import _layout
from .._tensor import Size, Tensor, _wrap_dim
from ..autograd.function import Function, _apply, _apply1, _make_view, _record1
from ..autograd.grad_mode import state as _state
from ..autograd.observe import hook as _hook
from ..backends import backend_of
from ._registry import declare_op
from ._registry import public_names as declared_names
from ._util import infer_size, shape_args, xp_of
from .indexing import _SLICE, Slice

__all__: list[str] = []  # + the declared ops (end of module)

_int = builtins.int

_prod = math.prod


def _dims_arg(dims, name="dims"):
    """``f(x, 0, 1)``, ``f(x, (0, 1))`` or ``f(x, [0, 1])`` -> tuple of ints."""
    return shape_args(dims, name)


def _mark_views(base, outs, multi=None):
    """Make every tensor in ``outs`` a view of ``base``, sharing memory and
    the version counter.  ``multi`` names the op for the outputs of
    multi-output view ops (unbind, split ...), which PyTorch forbids to
    modify in place while autograd records."""
    root = base._base if base._base is not None else base
    vc = root._shared_vc()
    for o in outs:
        o._base = root
        o._vc = vc
        if o.grad_fn is not None:
            o.grad_fn._view_base_fn = root.grad_fn
        if multi is not None:
            o._multi_view = type(o.grad_fn).__name__ if o.grad_fn is not None else multi
    return outs


# --- reshape / view ------------------------------------------------------------

class Reshape(Function):
    _array_forward = True
    _ctx_slots = ("shape", "out")
    _exact_grads = True
    _is_view = True
    _node_name = "ViewBackward0"

    @staticmethod
    def forward(ctx, x, shape):
        ctx.shape, ctx.out = x.shape, shape
        return x.reshape(shape)

    @staticmethod
    def backward(ctx, gy):
        return gy.reshape(ctx.shape), None

    @staticmethod
    def jvp(ctx, t, _):
        return t.reshape(ctx.out)


class ReshapeCopy(Function):
    _array_forward = True
    _ctx_slots = ("shape",)
    _exact_grads = True
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
        x.reshape(shape, copy=False)  # NumPy >= 2.1: raises instead of copying
        return True
    except ValueError:
        return False


def _view(input, shape):
    return _apply1(Reshape, input, (input._data, shape))


@declare_op()
def reshape(input: Tensor, *shape: int | Sequence[int]) -> Tensor:
    """Same data in a new shape; a view when possible, else a copy.

    Example::

        >>> fabric.arange(6).reshape(2, -1).shape
        fabric.Size([2, 3])
    """
    x = input._data
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    for s in shape:
        if s.__class__ is not _int or s < 0:
            shape = infer_size(shape_args(shape), x.size)
            break
    else:  # explicit non-negative sizes: only their product needs checking
        if _prod(shape) != x.size:
            shape = infer_size(shape_args(shape), x.size)
        elif shape.__class__ is not tuple:
            shape = tuple(shape)
    if x.flags.c_contiguous or shape == x.shape or _is_viewable(x, shape):
        if (not input._requires_grad or not _state.enabled) and _hook.observer is None:  # Reshape.forward's call
            return _make_view(input, x.reshape(shape), False, None)
        return _record1(Reshape, input, (x, shape))
    return _apply1(ReshapeCopy, input, (x, shape))


@declare_op()
def view(input: Tensor, *shape: int | Sequence[int] | D.dtype) -> Tensor:
    """A view with a new shape (or, given a dtype of the same size, a
    reinterpretation of the bytes); errors when the strides do not allow it."""
    if len(shape) == 1 and isinstance(shape[0], (D.dtype, np.dtype, type)) and not isinstance(shape[0], (tuple, list)):
        dt = D.to_dtype(shape[0])
        if dt.itemsize != input._data.itemsize:
            raise RuntimeError("view(dtype) with a different element size is not supported")
        t = Tensor._make(input._data.view(dt.np), False)
        return _mark_views(input, (t,))[0]
    shape = infer_size(shape_args(shape), input._data.size)
    if not _is_viewable(input._data, shape):
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at least one dimension "
                           "spans across two contiguous subspaces). Use .reshape(...) instead.")
    return _view(input, shape)


@declare_op()
def view_as(input: Tensor, other: Tensor) -> Tensor:
    """``input.view(other.shape)``."""
    return view(input, other._data.shape)


@declare_op()
def reshape_as(input: Tensor, other: Tensor) -> Tensor:
    """``input.reshape(other.shape)``."""
    return reshape(input, other._data.shape)


@declare_op()
def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dims ``start_dim..end_dim`` into one.

    Example::

        >>> fabric.zeros(2, 3, 4).flatten(1).shape
        fabric.Size([2, 12])
    """
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
    return reshape(input, shp[:s] + (_prod(shp[s:e + 1]),) + shp[e + 1:])


@declare_op()
def ravel(input: Tensor) -> Tensor:
    """The elements as a 1-D tensor (a view when contiguous)."""
    return reshape(input, (-1,))


@declare_op()
def unflatten(input: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    """Split dim ``dim`` into ``sizes`` (one entry may be -1).

    Example::

        >>> fabric.zeros(2, 12).unflatten(1, (3, -1)).shape
        fabric.Size([2, 3, 4])
    """
    shp = input._data.shape
    d = _wrap_dim(dim, len(shp))
    sizes = shape_args((sizes,), "sizes")
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    if sum(1 for s in sizes if s == -1) > 1:
        raise RuntimeError("unflatten: only one dimension can be inferred")
    n = shp[d] if shp else 1
    known = _prod(s for s in sizes if s != -1)
    if -1 in sizes:
        if known == 0 or n % known:
            raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {d} "
                               f"({n}) in the input tensor")
        sizes = tuple(n // known if s == -1 else s for s in sizes)
    elif known != n:
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {d} ({n}) "
                           "in the input tensor")
    return reshape(input, shp[:d] + sizes + shp[d + 1:])


# --- permutations ---------------------------------------------------------------

class Permute(Function):
    _array_forward = True
    _ctx_slots = ("dims",)
    _exact_grads = True
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

    @staticmethod
    def jvp(ctx, t, _):
        return permute(t, ctx.dims)


@declare_op()
def permute(input: Tensor, *dims: int | Sequence[int]) -> Tensor:
    """Reorder dimensions (a view).

    Example::

        >>> fabric.zeros(2, 3, 4).permute(2, 0, 1).shape
        fabric.Size([4, 2, 3])
    """
    nd = input._data.ndim
    dims = _dims_arg(dims)
    if len(dims) != nd:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match the length "
                           f"of the desired ordering of dimensions i.e. input.dim() = {nd} is not equal to "
                           f"len(dims) = {len(dims)}")
    dims = tuple(_wrap_dim(d, nd) for d in dims)
    if len(set(dims)) != nd:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return _apply1(Permute, input, (input._data, dims))


class Transpose(Function):
    _array_forward = True
    _ctx_slots = ("d",)
    _exact_grads = True
    _is_view = True

    @staticmethod
    def forward(ctx, x, d0, d1):
        ctx.d = (d0, d1)
        return x.swapaxes(d0, d1)

    @staticmethod
    def backward(ctx, gy):
        return transpose(gy, *ctx.d), None, None

    @staticmethod
    def jvp(ctx, t, *_):
        return transpose(t, *ctx.d)


@declare_op(aliases=("swapaxes", "swapdims"))
def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swap two dimensions (a view).

    Example::

        >>> fabric.zeros(2, 3).transpose(0, 1).shape
        fabric.Size([3, 2])
    """
    nd = input._data.ndim
    d0, d1 = _wrap_dim(dim0, nd), _wrap_dim(dim1, nd)
    if nd == 0:
        return _view(input, ())
    return _apply1(Transpose, input, (input._data, d0, d1))


swapaxes = swapdims = transpose


@declare_op()
def t(input: Tensor) -> Tensor:
    """Transpose a tensor of at most 2 dims (0-d and 1-d are returned as views)."""
    if input._data.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input._data.ndim}D")
    if input._data.ndim < 2:
        return _view(input, input._data.shape)
    return transpose(input, 0, 1)


@declare_op()
def adjoint(input: Tensor) -> Tensor:
    """The conjugate transpose of the last two dims (``x.mH``); a copy for complex
    tensors (fabric conjugates physically), a view for real ones."""
    if input._data.ndim < 2:
        raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of matrices. Got "
                           f"{input._data.ndim}-D tensor.")
    return transpose(input, -2, -1).conj()


@declare_op(aliases=("moveaxis",))
def movedim(input: Tensor, source: int | Sequence[int], destination: int | Sequence[int]) -> Tensor:
    """Move dims ``source`` to positions ``destination`` (a view).

    Example::

        >>> fabric.zeros(2, 3, 4).movedim(0, -1).shape
        fabric.Size([3, 4, 2])
    """
    nd = input._data.ndim
    src = (source,) if isinstance(source, (builtins.int, np.integer)) else tuple(source)
    dst = (destination,) if isinstance(destination, (builtins.int, np.integer)) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} dims) should contain "
                           f"the same number of dims as destination ({list(dst)} dims)")
    src = tuple(_wrap_dim(d, nd) for d in src)
    dst = tuple(_wrap_dim(d, nd) for d in dst)
    if len(set(src)) != len(src):
        raise RuntimeError(f"movedim: repeated dim in `source` ({list(src)})")
    if len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({list(dst)})")
    if nd == 0:
        return _view(input, ())
    order = [None] * nd
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(nd) if d not in src)
    order = tuple(o if o is not None else next(rest) for o in order)
    return permute(input, order)


moveaxis = movedim


# --- broadcasting ---------------------------------------------------------------

class Expand(Function):
    _array_forward = True
    _is_view = True

    @staticmethod
    def forward(ctx, x, shape):
        y = xp_of(x).broadcast_to(x, shape)
        if y.__class__ is np.ndarray and x.flags.writeable:
            # writeable as in PyTorch: ``x.expand(3)[0] = 5`` writes the shared element; in-place ops
            # over the repeated elements raise the internal-overlap error (autograd.function)
            y.flags.writeable = True
        return y

    @staticmethod
    def backward(ctx, gy):
        return gy, None  # the engine sums back to the input's shape


@declare_op(aliases=("broadcast_to",))
def expand(input: Tensor, *sizes: int | Sequence[int]) -> Tensor:
    """Broadcast to a larger shape without copying (-1 keeps a size).

    Example::

        >>> fabric.zeros(3, 1).expand(2, 3, 4).shape
        fabric.Size([2, 3, 4])
    """
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
                                   f"non-existing dimension {i}")
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
        return _view(input, shp)
    return _apply1(Expand, input, (input._data, target))


@declare_op()
def expand_as(input: Tensor, other: Tensor) -> Tensor:
    """``input.expand(other.shape)``."""
    return expand(input, other._data.shape)


broadcast_to = expand


@declare_op(method=False)
def broadcast_shapes(*shapes: int | Sequence[int]) -> Size:
    """The shape that tensors of ``shapes`` broadcast to.

    Example::

        >>> fabric.broadcast_shapes((2, 1), (3,))
        fabric.Size([2, 3])
    """
    norm = []
    for s in shapes:
        if isinstance(s, (builtins.int, np.integer)):
            norm.append((builtins.int(s),))
        else:
            norm.append(shape_args((s,)))
    ndim = max((len(s) for s in norm), default=0)
    out = [1] * ndim
    for i, s in enumerate(norm):
        for k, n in enumerate(s):
            j = ndim - len(s) + k
            if n < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {n}: {list(s)}")
            if out[j] == 1:
                out[j] = n
            elif n != 1 and n != out[j]:
                raise RuntimeError(f"Attempting to broadcast a dimension of length {n} at {k - len(s)}! Mismatching "
                                   f"argument at index {i} had {tuple(s)}; but expected shape should be broadcastable "
                                   f"to {out}")
    return Size(out)


def _broadcast_shape_of(tensors):
    shape = ()
    for t in tensors:
        s = t._data.shape
        if s == shape:
            continue
        nd = max(len(shape), len(s))
        a = (1,) * (nd - len(shape)) + shape
        b = (1,) * (nd - len(s)) + s
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y and x != 1 and y != 1:
                raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b ({y}) at "
                                   f"non-singleton dimension {i}")
            out.append(y if x == 1 else x)
        shape = tuple(out)
    return shape


@declare_op(method=False)
def broadcast_tensors(*tensors: Tensor) -> tuple[Tensor, ...]:
    """Expand every tensor to their common broadcast shape (views).

    Example::

        >>> a, b = fabric.broadcast_tensors(fabric.zeros(2, 1), fabric.zeros(3))
        >>> a.shape, b.shape
        (fabric.Size([2, 3]), fabric.Size([2, 3]))
    """
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = _broadcast_shape_of(tensors)
    return tuple(expand(t, shape) for t in tensors)


# --- squeeze / unsqueeze --------------------------------------------------------

def _squeezed_shape(shp, dim):
    if dim is None:
        return tuple(s for s in shp if s != 1)
    dims = (dim,) if isinstance(dim, (builtins.int, np.integer, Tensor)) else tuple(dim)
    dims = {_wrap_dim(d, len(shp)) for d in dims}
    return tuple(s for i, s in enumerate(shp) if not (i in dims and s == 1))


@declare_op()
def squeeze(input: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """Remove size-1 dims (all, or those in ``dim``: an int or a tuple).

    Example::

        >>> fabric.zeros(2, 1, 3, 1).squeeze((1, 3)).shape
        fabric.Size([2, 3])
    """
    return _view(input, _squeezed_shape(input._data.shape, dim))


def _unsqueezed_shape(shp, dim):
    d = _wrap_dim(dim, len(shp) + 1)
    return shp[:d] + (1,) + shp[d:]


@declare_op()
def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """Insert a size-1 dim at ``dim``.

    Example::

        >>> fabric.zeros(2, 3).unsqueeze(-1).shape
        fabric.Size([2, 3, 1])
    """
    return _view(input, _unsqueezed_shape(input._data.shape, dim))


# --- in-place view ops (change the tensor's own shape) --------------------------

def _inplace_view(self, result):
    """Make ``self`` take the geometry and history of ``result`` (a view of
    ``self``): the in-place forms ``t_``, ``squeeze_``, ``transpose_`` ..."""
    self._data = result._data
    if result._requires_grad:
        self.grad_fn = result.grad_fn
        self._output_nr = result._output_nr
        self._requires_grad = True
    self._bump_version()
    return self


def _check_inplace_view(self):
    if _state.enabled and self._requires_grad and self.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")


@declare_op()
def t_(self: Tensor) -> Tensor:
    """In-place :func:`t`."""
    _check_inplace_view(self)
    return _inplace_view(self, t(self))


@declare_op()
def squeeze_(self: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """In-place :func:`squeeze`."""
    _check_inplace_view(self)
    return _inplace_view(self, squeeze(self, dim))


@declare_op()
def unsqueeze_(self: Tensor, dim: int) -> Tensor:
    """In-place :func:`unsqueeze`."""
    _check_inplace_view(self)
    return _inplace_view(self, unsqueeze(self, dim))


@declare_op(aliases=("swapaxes_", "swapdims_"))
def transpose_(self: Tensor, dim0: int, dim1: int) -> Tensor:
    """In-place :func:`transpose`."""
    _check_inplace_view(self)
    return _inplace_view(self, transpose(self, dim0, dim1))


swapaxes_ = swapdims_ = transpose_


@declare_op()
def as_strided_(self: Tensor, size: Sequence[int], stride: Sequence[int], storage_offset: int | None = None) -> Tensor:
    """In-place :func:`as_strided`."""
    _check_inplace_view(self)
    return _inplace_view(self, as_strided(self, size, stride, storage_offset))


# --- repeat / tile ----------------------------------------------------------------

class Repeat(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, reps):
        lead = len(reps) - x.ndim
        ctx.shape = x.shape
        ctx.reps = reps
        return xp_of(x).tile(x.reshape((1,) * lead + x.shape), reps)

    @staticmethod
    def backward(ctx, gy):
        reps = ctx.reps
        shp = (1,) * (len(reps) - len(ctx.shape)) + ctx.shape
        inter = []
        for r, s in zip(reps, shp):
            inter += [r, s]
        g = gy.reshape(inter).sum(tuple(range(0, 2 * len(reps), 2)))
        return g.reshape(ctx.shape), None


@declare_op()
def repeat(input: Tensor, *sizes: int | Sequence[int]) -> Tensor:
    """Tile ``input`` ``sizes`` times along each dim (a copy).

    Example::

        >>> fabric.tensor([1, 2]).repeat(2, 2)
        tensor([[1, 2, 1, 2],
                [1, 2, 1, 2]])
    """
    reps = shape_args(sizes, "repeats")
    if len(reps) < input._data.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of "
                           "tensor")
    if any(r < 0 for r in reps):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(reps)}: {list(reps)}")
    return _apply1(Repeat, input, (input._data, reps))


@declare_op()
def tile(input: Tensor, dims: Sequence[int]) -> Tensor:
    """Like :func:`repeat`, padding ``dims`` with leading 1s when it is short."""
    reps = shape_args((dims,), "dims")
    nd = input._data.ndim
    if len(reps) < nd:
        reps = (1,) * (nd - len(reps)) + reps
    return repeat(input, reps)


@declare_op()
def repeat_interleave(input: Tensor, repeats: int | Tensor | None = None, dim: int | None = None, *,
                      output_size: int | None = None) -> Tensor:
    """Repeat each element ``repeats`` times (an int, or a tensor with one
    count per element along ``dim``). With only a tensor of counts, returns
    the indices repeated by those counts.

    Example::

        >>> fabric.tensor([1, 2]).repeat_interleave(2)
        tensor([1, 1, 2, 2])
        >>> fabric.repeat_interleave(fabric.tensor([2, 1]))
        tensor([0, 0, 1])
    """
    from .indexing import index_select

    if repeats is None:  # repeat_interleave(repeats)
        counts = _repeat_counts(input, None)
        xp = xp_of(input._data)
        idx = xp.repeat(xp.arange(counts.shape[0], dtype=np.int64), counts)
        _check_output_size(idx.shape[0], output_size)
        return Tensor._make(idx, False)
    if dim is None:
        input = flatten(input)
        d = 0
    else:
        d = _wrap_dim(dim, input._data.ndim)
    if input._data.ndim == 0:
        input = reshape(input, (1,))
    n = input._data.shape[d]
    if isinstance(repeats, Tensor) and (repeats._data.ndim > 0 and repeats._data.size != 1):
        counts = _repeat_counts(repeats, n)
        xp = xp_of(input._data)
        idx = xp.repeat(xp.arange(n, dtype=np.int64), xp.asarray(counts))
        _check_output_size(idx.shape[0], output_size)
        return index_select(input, d, Tensor._make(idx, False))
    r = builtins.int(repeats.item()) if isinstance(repeats, Tensor) else builtins.int(repeats)
    if r < 0:
        raise RuntimeError("repeats can not be negative")
    _check_output_size(n * r, output_size)
    if r == 1:
        return clone(input)
    shp = input._data.shape
    return reshape(expand(unsqueeze(input, d + 1), shp[:d + 1] + (r,) + shp[d + 1:]),
                   shp[:d] + (n * r,) + shp[d + 1:])


def _repeat_counts(repeats, n):
    r = repeats._data
    if r.dtype.kind not in "iu":
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    if r.ndim != 1:
        raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
    if n is not None and r.shape[0] != n:
        raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                           f"{r.shape[0]} and input.size(0) = {n}")
    if r.size and builtins.int(r.min()) < 0:
        raise RuntimeError("repeats can not be negative")
    return r


def _check_output_size(n, output_size):
    if output_size is not None and output_size != n:
        raise RuntimeError("allocated size does not match required size")


# --- flips and rolls --------------------------------------------------------------

class Flip(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        return xp_of(x).flip(x, dims).copy() if dims else x.copy()

    @staticmethod
    def backward(ctx, gy):
        return _apply(Flip, (gy, ctx.dims), (gy._data, ctx.dims)), None

    @staticmethod
    def jvp(ctx, t, _):
        return _apply(Flip, (t, ctx.dims), (t._data, ctx.dims))


@declare_op()
def flip(input: Tensor, *dims: int | Sequence[int]) -> Tensor:
    """Reverse the order of elements along ``dims`` (a copy, as in PyTorch).

    Example::

        >>> fabric.tensor([[1, 2], [3, 4]]).flip(0, 1)
        tensor([[4, 3],
                [2, 1]])
    """
    dims = _dims_arg(dims)
    nd = input._data.ndim
    wrapped = tuple(_wrap_dim(d, nd) for d in dims)
    if len(set(wrapped)) != len(wrapped):
        dup = next(d for d in wrapped if wrapped.count(d) > 1)
        raise RuntimeError(f"dim {dup} appears multiple times in the list of dims")
    if nd == 0:
        wrapped = ()
    return _apply1(Flip, input, (input._data, wrapped))


@declare_op()
def fliplr(input: Tensor) -> Tensor:
    """Flip left/right (dim 1); needs at least 2 dims."""
    if input._data.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, (1,))


@declare_op()
def flipud(input: Tensor) -> Tensor:
    """Flip up/down (dim 0); needs at least 1 dim."""
    if input._data.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, (0,))


class Roll(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, shifts, dims):
        ctx.shifts, ctx.dims = shifts, dims
        return xp_of(x).roll(x, shifts, dims)

    @staticmethod
    def backward(ctx, gy):
        neg = tuple(-s for s in ctx.shifts)
        return _apply(Roll, (gy, neg, ctx.dims), (gy._data, neg, ctx.dims)), None, None


@declare_op()
def roll(input: Tensor, shifts: int | Sequence[int], dims: int | Sequence[int] | None = None) -> Tensor:
    """Rotate elements along ``dims`` by ``shifts`` (flattened when ``dims`` is None).

    Example::

        >>> fabric.tensor([1, 2, 3]).roll(1)
        tensor([3, 1, 2])
    """
    shifts = (shifts,) if isinstance(shifts, (builtins.int, np.integer)) else shape_args((shifts,), "shifts")
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
        return reshape(roll(flatten(input), shifts, 0), input._data.shape)
    dims = (dims,) if isinstance(dims, (builtins.int, np.integer)) else shape_args((dims,), "dims")
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    nd = input._data.ndim
    dims = tuple(_wrap_dim(d, nd) for d in dims)
    if nd == 0:
        return clone(input)
    return _apply1(Roll, input, (input._data, shifts, dims))


@declare_op()
def rot90(input: Tensor, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
    """Rotate by 90 degrees ``k`` times in the plane of ``dims``.

    Example::

        >>> fabric.tensor([[1, 2], [3, 4]]).rot90()
        tensor([[2, 4],
                [1, 3]])
    """
    dims = shape_args((dims,), "dims")
    nd = input._data.ndim
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if nd < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {nd}")
    d0, d1 = _wrap_dim(dims[0], nd), _wrap_dim(dims[1], nd)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    k %= 4
    if k == 1:
        return transpose(flip(input, (d1,)), d0, d1)
    if k == 2:
        return flip(input, (d0, d1))
    if k == 3:
        return transpose(flip(input, (d0,)), d0, d1)
    return clone(input)


# --- clone ---------------------------------------------------------------------------

class Clone(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, fmt=_layout.preserve_format):
        return _layout.copy_in_format(x, fmt)

    @staticmethod
    def backward(ctx, gy):
        return gy

    @staticmethod
    def jvp(ctx, t, *_):
        return t


@declare_op(method=False)
def clone(input: Tensor, *, memory_format: _layout.memory_format | None = None) -> Tensor:
    """A copy with its own memory, differentiable; laid out as ``memory_format``
    (default ``preserve_format``: the input's order of strides, as PyTorch).

    Example::

        >>> fabric.zeros(2, 3).t().clone().stride()
        (1, 3)
    """
    fmt = _layout.preserve_format if memory_format is None else _layout.check_format(memory_format, input.ndim)
    return _apply(Clone, (input,), (input._data, fmt))


@declare_op(method=False)
def contiguous(input: Tensor, memory_format: _layout.memory_format | None = None) -> Tensor:
    return input.contiguous(memory_format)


# --- narrow / select / unbind -------------------------------------------------------

@declare_op()
def narrow(input: Tensor, dim: int, start: int | Tensor, length: int | Tensor) -> Tensor:
    """The slice ``start:start+length`` along ``dim`` (a view).

    Example::

        >>> fabric.arange(5).narrow(0, 1, 3)
        tensor([1, 2, 3])
    """
    nd = input._data.ndim
    if nd == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = _wrap_dim(dim, nd)
    size = input._data.shape[d]
    if isinstance(start, Tensor):
        start = builtins.int(start.item())
    if isinstance(length, Tensor):
        length = builtins.int(length.item())
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")
    if start < 0:
        start += size
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    key = ((_SLICE,) * d + (slice(start, start + length),), None)
    return _apply1(Slice, input, (input._data, key))


@declare_op()
def select(input: Tensor, dim: int, index: int) -> Tensor:
    """The slice at ``index`` along ``dim``, without that dim (a view).

    Example::

        >>> fabric.arange(6).reshape(2, 3).select(1, -1)
        tensor([2, 5])
    """
    nd = input._data.ndim
    if nd == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = _wrap_dim(dim, nd)
    n = input._data.shape[d]
    index = builtins.int(index)
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(input._data.shape)} at "
                         f"dimension {d}")
    key = ((_SLICE,) * d + (index, Ellipsis), None)
    return _apply1(Slice, input, (input._data, key))


class Unbind(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        lead = (_SLICE,) * dim
        return tuple(x[lead + (i, Ellipsis)] for i in range(x.shape[dim]))

    @staticmethod
    def backward(ctx, *grads):
        from .join import stack

        return stack(grads, ctx.dim), None

    @staticmethod
    def jvp(ctx, t, _):
        return t.unbind(ctx.dim)


@declare_op()
def unbind(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """Split along ``dim`` into a tuple of views without that dim.

    Example::

        >>> a, b = fabric.tensor([[1, 2], [3, 4]]).unbind(1)
        >>> a
        tensor([1, 3])
    """
    if input._data.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = _wrap_dim(dim, input._data.ndim)
    if input._data.shape[d] == 0:
        return ()
    return _mark_views(input, _apply1(Unbind, input, (input._data, d)), "UnbindBackward0")


# --- diagonals and triangles --------------------------------------------------------

def _diagonal_view(x, offset, d1, d2):
    """A writeable strided view of a diagonal of array ``x`` (NumPy's own
    ``diagonal`` is read-only)."""
    shape, st = x.shape, x.strides
    n1, n2 = shape[d1], shape[d2]
    if offset >= 0:
        length = max(0, min(n1, n2 - offset))
        key = (_SLICE,) * d2 + (slice(offset, None),)
    else:
        length = max(0, min(n1 + offset, n2))
        key = (_SLICE,) * d1 + (slice(-offset, None),)
    src = x[key] if length else x
    keep = [i for i in range(x.ndim) if i != d1 and i != d2]
    new_shape = tuple(shape[i] for i in keep) + (length,)
    new_strides = tuple(st[i] for i in keep) + (st[d1] + st[d2],)
    return backend_of(x).as_strided(src, new_shape, new_strides)


class Diagonal(Function):
    _array_forward = True
    _is_view = True

    @staticmethod
    def forward(ctx, x, offset, d1, d2):
        ctx.args = (x.shape, offset, d1, d2)
        return _diagonal_view(x, offset, d1, d2)

    @staticmethod
    def backward(ctx, gy):
        return _apply(DiagonalBackward, (gy, *ctx.args), (gy._data, *ctx.args)), None, None, None


class DiagonalBackward(Function):
    """Zeros of the input shape with ``gy`` written on the diagonal."""
    _array_forward = True

    @staticmethod
    def forward(ctx, gy, shape, offset, d1, d2):
        ctx.args = (offset, d1, d2)
        z = xp_of(gy).zeros(shape, gy.dtype)
        _diagonal_view(z, offset, d1, d2)[...] = gy
        return z

    @staticmethod
    def backward(ctx, gg):
        return diagonal(gg, *ctx.args), None, None, None, None


@declare_op()
def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal of the ``dim1``/``dim2`` planes, as a view; the
    diagonal becomes the last dim.

    Example::

        >>> fabric.arange(9).reshape(3, 3).diagonal(1)
        tensor([1, 5])
    """
    nd = input._data.ndim
    d1, d2 = _wrap_dim(dim1, nd), _wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return _apply1(Diagonal, input, (input._data, offset, d1, d2))


class DiagEmbed(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, offset, d1, d2):
        ctx.args = (offset, d1, d2)
        n = x.shape[-1] + abs(offset)
        rest = list(x.shape[:-1])
        shape = []
        for i in range(x.ndim + 1):
            shape.append(n if i in (d1, d2) else rest.pop(0))
        z = xp_of(x).zeros(shape, x.dtype)
        _diagonal_view(z, offset, d1, d2)[...] = x
        return z

    @staticmethod
    def backward(ctx, gy):
        return diagonal(gy, *ctx.args), None, None, None


@declare_op()
def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Tensors whose ``dim1``/``dim2`` diagonals hold the last dim of ``input``.

    Example::

        >>> fabric.diag_embed(fabric.tensor([1, 2]))
        tensor([[1, 0],
                [0, 2]])
    """
    nd = input._data.ndim + 1
    d1, d2 = _wrap_dim(dim1, nd), _wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    if input._data.ndim == 0:
        input = reshape(input, (1,))
    return _apply1(DiagEmbed, input, (input._data, offset, d1, d2))


@declare_op()
def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """1-D input: a square matrix with ``input`` on diagonal ``diagonal``;
    2-D input: that diagonal as a new 1-D tensor.

    Example::

        >>> fabric.diag(fabric.tensor([1, 2]))
        tensor([[1, 0],
                [0, 2]])
    """
    nd = input._data.ndim
    if nd == 1:
        return diag_embed(input, diagonal, 0, 1)
    if nd == 2:
        k = builtins.int(diagonal)
        return clone(_apply1(Diagonal, input, (input._data, k, 0, 1)))
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {nd}D")


@declare_op()
def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """A 2-D tensor with the flattened ``input`` on diagonal ``offset``."""
    return diag_embed(flatten(input), offset, 0, 1)


def _tri_mask(xp, n, m, k, upper):
    mask = xp.tri(n, m, k - 1 if upper else k, dtype=bool)
    return ~mask if upper else mask


class Tri(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x, k, upper):
        ctx.k, ctx.upper = k, upper
        xp = xp_of(x)
        mask = _tri_mask(xp, x.shape[-2], x.shape[-1], k, upper)
        return xp.where(mask, x, xp.zeros((), x.dtype))

    @staticmethod
    def backward(ctx, gy):
        return _apply(Tri, (gy, ctx.k, ctx.upper), (gy._data, ctx.k, ctx.upper)), None, None


class TriInplace(Function):
    _array_forward = True
    _is_inplace = True

    @staticmethod
    def forward(ctx, x, k, upper):
        ctx.k, ctx.upper = k, upper
        x[..., ~_tri_mask(xp_of(x), x.shape[-2], x.shape[-1], k, upper)] = 0
        return x

    backward = Tri.backward


def _tri(input, diagonal, upper, inplace):
    name = "triu" if upper else "tril"
    if input._data.ndim < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
    k = builtins.int(diagonal)
    cls = TriInplace if inplace else Tri
    return _apply1(cls, input, (input._data, k, upper))


@declare_op()
def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle (elements on and below diagonal ``diagonal``) of the
    last two dims; the rest zero.

    Example::

        >>> fabric.ones(2, 2).tril()
        tensor([[1., 0.],
                [1., 1.]])
    """
    return _tri(input, diagonal, False, False)


@declare_op()
def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle (on and above diagonal ``diagonal``) of the last two dims."""
    return _tri(input, diagonal, True, False)


@declare_op()
def tril_(self: Tensor, diagonal: int = 0) -> Tensor:
    """In-place :func:`tril`."""
    return _tri(self, diagonal, False, True)


@declare_op()
def triu_(self: Tensor, diagonal: int = 0) -> Tensor:
    """In-place :func:`triu`."""
    return _tri(self, diagonal, True, True)


# --- as_strided / unfold ------------------------------------------------------------

def _ptr(a):
    return a.__array_interface__["data"][0] if a.__class__ is np.ndarray else a.data.ptr


def _storage_of(a):
    """``(storage, offset)``: a 1-D array over the whole memory block that
    ``a`` lives in (PyTorch's storage), and the index of ``a``'s first
    element in it."""
    if a.__class__ is not np.ndarray:
        import cupy

        mem = a.data.mem
        storage = cupy.ndarray((mem.size // a.itemsize,), a.dtype, cupy.cuda.MemoryPointer(mem, 0))
    else:
        root = a
        b = a.base
        while b is not None:  # through views and as_strided's wrapper objects to the owner
            if isinstance(b, np.ndarray):
                root = b
            b = getattr(b, "base", None)
        if not (root.flags.c_contiguous or root.flags.f_contiguous):
            raise NotImplementedError("as_strided: the tensor's memory is not a contiguous block fabric can address")
        storage = root.ravel(order="K")
        if storage.dtype != a.dtype:
            storage = storage.view(a.dtype) if storage.dtype.itemsize == a.itemsize else \
                storage.view(np.uint8)[:(storage.nbytes // a.itemsize) * a.itemsize].view(a.dtype)
    return storage, (_ptr(a) - _ptr(storage)) // a.itemsize


def _geometry_index(xp, shape, strides, offset):
    """Storage index of every element of a strided view (shape ``shape``)."""
    idx = xp.asarray(offset, dtype=np.int64)
    nd = len(shape)
    for k, (n, s) in enumerate(zip(shape, strides)):
        idx = idx + (xp.arange(n, dtype=np.int64) * s).reshape((n,) + (1,) * (nd - k - 1))
    return xp.broadcast_to(idx, shape)


class AsStrided(Function):
    _array_forward = True
    _is_view = True

    @staticmethod
    def forward(ctx, x, size, stride, offset, storage, own_offset):
        it = x.itemsize
        ctx.geom = ((x.shape, tuple(s // it for s in x.strides), own_offset), (size, stride, offset))
        src = storage[offset:] if _prod(size) else storage
        return backend_of(x).as_strided(src, size, tuple(s * it for s in stride))

    @staticmethod
    def backward(ctx, gy):
        from .indexing import put, take

        (ishape, istride, ioff), (oshape, ostride, ooff) = ctx.geom
        xp = xp_of(gy._data)
        in_idx = _geometry_index(xp, ishape, istride, ioff)
        out_idx = _geometry_index(xp, oshape, ostride, ooff)
        if in_idx.size == 0:
            return gy.new_zeros(ishape), None, None, None, None, None
        lo = builtins.int(in_idx.min()) if out_idx.size == 0 else builtins.int(min(in_idx.min(), out_idx.min()))
        hi = builtins.int(in_idx.max()) if out_idx.size == 0 else builtins.int(max(in_idx.max(), out_idx.max()))
        g = gy.new_zeros((hi - lo + 1,))
        g = put(g, Tensor._make(out_idx - lo, False), gy, accumulate=True)
        in_rel = in_idx - lo
        gx = take(g, Tensor._make(in_rel, False))
        counts = xp.bincount(in_rel.reshape(-1), minlength=hi - lo + 1)
        if builtins.int(counts.max()) > 1:  # overlapping input (e.g. expanded): share the gradient
            gx = gx / Tensor._make(counts[in_rel].astype(gy._data.dtype), False)
        return gx, None, None, None, None, None


@declare_op()
def as_strided(input: Tensor, size: Sequence[int], stride: Sequence[int], storage_offset: int | None = None) -> Tensor:
    """A view with arbitrary ``size``/``stride`` (in elements) over the
    memory of ``input`` starting at ``storage_offset`` (default: that of
    ``input``).

    Example::

        >>> fabric.arange(4).as_strided((3, 2), (1, 1))
        tensor([[0, 1],
                [1, 2],
                [2, 3]])
    """
    size = shape_args((size,), "size")
    stride = shape_args((stride,), "stride")
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got strides: {list(stride)}")
    if any(s < 0 for s in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(size)}: {list(size)}")
    x = input._data
    storage, own = _storage_of(x)
    off = own if storage_offset is None else builtins.int(storage_offset)
    if off < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {off}")
    need = 0 if 0 in size else off + 1 + sum((n - 1) * s for n, s in zip(size, stride))
    if need > storage.shape[0]:
        it = x.itemsize
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {off}, "
                           f"and itemsize {it} requiring a storage size of {need * it} are out of bounds for storage "
                           f"of size {storage.shape[0] * it}")
    return _apply(AsStrided, (input, size, stride, off, storage, own), (x, size, stride, off, storage, own))


class Unfold(Function):
    _array_forward = True
    _is_view = True

    @staticmethod
    def forward(ctx, x, d, size, step):
        ctx.args = (x.shape, d, size, step)
        count = (x.shape[d] - size) // step + 1
        shape = x.shape[:d] + (count,) + x.shape[d + 1:] + (size,)
        st = x.strides
        strides = st[:d] + (st[d] * step,) + st[d + 1:] + (st[d],)
        return backend_of(x).as_strided(x, shape, strides)

    @staticmethod
    def backward(ctx, gy):
        from .indexing import index_add

        shape, d, size, step = ctx.args
        count = gy._data.shape[d]
        xp = xp_of(gy._data)
        idx = (xp.arange(count, dtype=np.int64)[:, None] * step + xp.arange(size, dtype=np.int64)[None, :]).reshape(-1)
        g = movedim(gy, -1, d + 1)
        g = reshape(g, shape[:d] + (count * size,) + shape[d + 1:])
        return index_add(gy.new_zeros(shape), d, Tensor._make(idx, False), g), None, None, None


@declare_op()
def unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """``Tensor.unfold``: all windows of length ``size`` (every ``step``
    elements) along ``dimension``, as a view with the window as a new last dim.

    Example::

        >>> fabric.arange(5).unfold(0, 2, 2)
        tensor([[0, 1],
                [2, 3]])
    """
    x = input._data
    if x.ndim == 0:  # a scalar unfolds to its single window, without a window-count dim
        _wrap_dim(dimension, 0)
        return reshape(unfold(reshape(input, (1,)), 0, size, step), (builtins.int(size),))
    d = _wrap_dim(dimension, x.ndim)
    size, step = builtins.int(size), builtins.int(step)
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if size > x.shape[d]:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {x.shape[d]} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    return _apply1(Unfold, input, (x, d, size, step))


# --- atleast_nd, meshgrid, cartesian_prod, block_diag, combinations -------------------

def _atleast(tensors, fn):
    if len(tensors) == 1:
        a = tensors[0]
        if isinstance(a, (list, tuple)):
            return tuple(fn(t) for t in a)
        return fn(a)
    return tuple(fn(t) for t in tensors)


def _at1(t):
    return reshape(t, (1,)) if t._data.ndim == 0 else t


def _at2(t):
    nd = t._data.ndim
    return reshape(t, (1, 1)) if nd == 0 else unsqueeze(t, 0) if nd == 1 else t


def _at3(t):
    nd = t._data.ndim
    if nd == 0:
        return reshape(t, (1, 1, 1))
    if nd == 1:
        return reshape(t, (1, t._data.shape[0], 1))
    return unsqueeze(t, -1) if nd == 2 else t


@declare_op(method=False)
def atleast_1d(*tensors: Tensor) -> Tensor | tuple[Tensor, ...]:
    """Each tensor viewed with at least 1 dim (a tuple for several tensors)."""
    return _atleast(tensors, _at1)


@declare_op(method=False)
def atleast_2d(*tensors: Tensor) -> Tensor | tuple[Tensor, ...]:
    """Each tensor viewed with at least 2 dims (a tuple for several tensors)."""
    return _atleast(tensors, _at2)


@declare_op(method=False)
def atleast_3d(*tensors: Tensor) -> Tensor | tuple[Tensor, ...]:
    """Each tensor viewed with at least 3 dims (a tuple for several tensors)."""
    return _atleast(tensors, _at3)


@declare_op(method=False)
def meshgrid(*tensors: Tensor, indexing: str | None = None) -> tuple[Tensor, ...]:
    """Coordinate grids from 1-D tensors (views via expand).

    ``indexing='ij'`` (the default, with a warning when not given as in
    PyTorch) gives shape ``(len(t0), len(t1), ...)``; ``'xy'`` swaps the
    first two dims.

    Example::

        >>> gx, gy = fabric.meshgrid(fabric.arange(2), fabric.arange(3), indexing="ij")
        >>> gx.shape
        fabric.Size([2, 3])
    """
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.",
                      UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t_ in tensors:
        if t_._data.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: "
                               f"{list(t_._data.shape)}")
        if t_._data.dtype != tensors[0]._data.dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
        if t_.device != tensors[0].device:
            raise RuntimeError("meshgrid expects all tensors to have the same device")
    n = len(tensors)
    shape = tuple(t_._data.size for t_ in tensors)
    out = []
    for i, t_ in enumerate(tensors):
        v = reshape(t_, (1,) * i + (shape[i],) + (1,) * (n - i - 1))
        out.append(expand(v, shape))
    if indexing == "xy" and n >= 2:
        out = [transpose(o, 0, 1) for o in out]
    return tuple(out)


@declare_op(method=False)
def cartesian_prod(*tensors: Tensor) -> Tensor:
    """The Cartesian product of 1-D tensors, one combination per row.

    Example::

        >>> fabric.cartesian_prod(fabric.tensor([1, 2]), fabric.tensor([3, 4]))
        tensor([[1, 3],
                [1, 4],
                [2, 3],
                [2, 4]])
    """
    from .join import stack

    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    for t_ in tensors:
        if t_._data.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t_._data.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return stack([flatten(g) for g in grids], 1)


class BlockDiag(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, dtype, *mats):
        ctx.shapes = [m.shape for m in mats]
        rows = sum(m.shape[0] for m in mats)
        cols = sum(m.shape[1] for m in mats)
        out = xp_of(mats[0]).zeros((rows, cols), dtype)
        r = c = 0
        for m in mats:
            out[r:r + m.shape[0], c:c + m.shape[1]] = m
            r += m.shape[0]
            c += m.shape[1]
        return out

    @staticmethod
    def backward(ctx, gy):
        grads = [None]
        r = c = 0
        for shp in ctx.shapes:
            grads.append(gy[r:r + shp[0], c:c + shp[1]])
            r += shp[0]
            c += shp[1]
        return tuple(grads)


@declare_op(method=False)
def block_diag(*tensors: Tensor) -> Tensor:
    """A block-diagonal matrix from 0-, 1- or 2-D tensors.

    Example::

        >>> fabric.block_diag(fabric.tensor([[1]]), fabric.tensor([2, 3]))
        tensor([[1, 0, 0],
                [0, 2, 3]])
    """
    from .._creation import empty

    if not tensors:
        return empty((1, 0))
    mats = []
    for i, t_ in enumerate(tensors):
        nd = t_._data.ndim
        if nd > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has {nd} "
                               "dimensions")
        mats.append(reshape(t_, (1, 1)) if nd == 0 else reshape(t_, (1, t_._data.shape[0])) if nd == 1 else t_)
        if t_.device != tensors[0].device:
            raise RuntimeError("torch.block_diag: input tensors must all be on the same device. Input 0 is on device "
                               f"{tensors[0].device} and input {i} is on device {t_.device}.")
    dt = D.result_type(*tensors).np
    return _apply(BlockDiag, (None, *mats), (dt, *(m._data for m in mats)))


@declare_op(method=False)
def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """All length-``r`` combinations of the elements of a 1-D tensor (like
    ``itertools.combinations``, one per row).

    Example::

        >>> fabric.combinations(fabric.tensor([1, 2, 3]))
        tensor([[1, 2],
                [1, 3],
                [2, 3]])
    """
    from .indexing import index_select
    from .join import stack

    if input._data.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input._data.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_empty((0,))
    n = input._data.shape[0]
    grids = np.meshgrid(*([np.arange(n)] * r), indexing="ij")
    mask = np.ones(grids[0].shape, bool)
    for a, b in itertools.pairwise(grids):
        mask &= (a <= b) if with_replacement else (a < b)
    xp = xp_of(input._data)
    return stack([index_select(input, 0, Tensor._make(xp.asarray(g[mask]), False)) for g in grids], 1)


# --- narrow_copy ----------------------------------------------------------------------------------------



@declare_op()
def narrow_copy(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """A copy (not a view) of ``input.narrow(dim, start, length)``.

    Example::

        >>> fabric.arange(5).narrow_copy(0, 1, 2)
        tensor([1, 2])
    """
    return clone(narrow(input, dim, start, length))


# --- resize_ ------------------------------------------------------------------------------------

@declare_op(top_level=False)
def resize_(self: Tensor, *sizes: int | Sequence[int], memory_format: _layout.memory_format | None = None) -> Tensor:
    """Change the shape in place, keeping the leading elements (in C order);
    new elements are zeros.  Raises for tensors that require grad and for
    views (a view cannot change its base's memory).

    Example::

        >>> fabric.arange(6.).resize_(2, 2)
        tensor([[0., 1.],
                [2., 3.]])
    """
    shape = shape_args(sizes, "size")
    for s in shape:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(shape)}")
    if self._requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    x = self._data
    if shape == x.shape:
        return self
    if self._base is not None:
        raise RuntimeError("resize_(): fabric cannot resize a view to a new shape (its memory belongs to the base "
                           "tensor); resize a copy (.clone()) or the base instead")
    n = math.prod(shape)
    if n <= x.size and x.flags.c_contiguous:
        new = x.reshape(-1)[:n].reshape(shape)  # same memory: other views keep seeing it
    else:
        new = xp_of(x).zeros(shape, x.dtype)
        k = builtins.min(n, x.size)
        new.reshape(-1)[:k] = x.reshape(-1)[:k]
    self._data = new
    self._bump_version()
    return self


@declare_op()
def resize_as_(input: Tensor, the_template: Tensor, *, memory_format: _layout.memory_format | None = None) -> Tensor:
    """:func:`resize_` to ``the_template``'s shape (the dtype is kept)."""
    return resize_(input, the_template._data.shape)


__all__ += declared_names(__name__)
