"""Matrix products: mm, bmm, mv, dot, vdot, outer, inner, the add* family
(addmm, baddbmm ...), kron, trace, cross, cdist, multi_dot, vecdot.

Example::

    >>> import fabric
    >>> fabric.mm(fabric.eye(2), fabric.ones(2, 2))
    tensor([[1., 1.],
            [1., 1.]])
"""
from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

from ... import _dtype as D
from ..._tensor import Tensor, _wrap_dim
from ...autograd.function import Function, _apply
from .._registry import declare_op
from .._registry import public_names as declared_names
from .._util import xp_of
from ..arith import MatMul, _np_errstate, matmul, mul
from ._common import (
    _CNAME,
    _abs,
    _batch_shape_broadcast,
    _check_not_bool,
    _check_tensor,
    _const,
    _eye,
    _inf,
    _masked_fill,
    _out,
    _same_device,
    _sign,
    _tname,
)
from .contractions import tensordot

__all__ = ["linalg_cross", "linalg_multi_dot", "linalg_vecdot"]  # + the declared ops (end of module)

# =====================================================================================
# Matrix products
# =====================================================================================

class Mm(MatMul):
    _node_name = "MmBackward0"


class Bmm(MatMul):
    _node_name = "BmmBackward0"


class Mv(MatMul):
    _node_name = "MvBackward0"


class Dot(MatMul):
    _node_name = "DotBackward0"


def _check_mm_dtype(a, b):
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {_CNAME.get(a._data.dtype.name)} != "
                           f"{_CNAME.get(b._data.dtype.name)}")


@declare_op()
def mm(input: Tensor, mat2: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Matrix product of two 2-D tensors (no broadcasting; see ``matmul``).

    Example::

        >>> fabric.mm(fabric.ones(2, 3), fabric.ones(3, 4)).shape
        fabric.Size([2, 4])
    """
    _check_tensor(input, "mm", "input", 1)
    _check_tensor(mat2, "mm", "mat2", 2)
    if input._sparse or mat2._sparse:  # a sparse operand: fabric/sparse
        return _out(input.mm(mat2) if input._sparse else mat2._rmm(input), out)
    x, y = input._data, mat2._data
    if x.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if y.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    if x.shape[1] != y.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({x.shape[0]}x{x.shape[1]} and "
                           f"{y.shape[0]}x{y.shape[1]})")
    _check_mm_dtype(input, mat2)
    _check_not_bool("addmm_impl_cpu_", input)
    _same_device("mm", input, mat2)
    return _out(_apply(Mm, (input, mat2), (x, y)), out)


@declare_op()
def bmm(input: Tensor, mat2: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Batched matrix product of two 3-D tensors ``(b, n, m) @ (b, m, p)``."""
    _check_tensor(input, "bmm", "input", 1)
    _check_tensor(mat2, "bmm", "mat2", 2)
    x, y = input._data, mat2._data
    if x.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if y.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if y.shape[0] != x.shape[0] or y.shape[1] != x.shape[2]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{x.shape[0]}, "
                           f"{x.shape[2]}] but got: [{y.shape[0]}, {y.shape[1]}].")
    if x.dtype != y.dtype:
        raise RuntimeError(f"expected scalar type {_tname(x.dtype)} but found {_tname(y.dtype)}")
    _check_not_bool("bmm", input)
    _same_device("bmm", input, mat2)
    return _out(_apply(Bmm, (input, mat2), (x, y)), out)


@declare_op()
def mv(input: Tensor, vec: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Matrix-vector product ``(n, m) @ (m,)``."""
    _check_tensor(input, "mv", "input", 1)
    _check_tensor(vec, "mv", "vec", 2)
    x, y = input._data, vec._data
    if x.ndim != 2 or y.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {x.ndim}, {y.ndim}")
    if x.shape[1] != y.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({x.shape[0]}), mat ({x.shape[0]}x{x.shape[1]}), vec "
                           f"({y.shape[0]})")
    if x.dtype != y.dtype:
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {_tname(y.dtype)}, "
                           f"{_tname(x.dtype)}, and {_tname(y.dtype)}")
    _check_not_bool("addmv_impl_cpu", input)
    _same_device("mv", input, vec)
    return _out(_apply(Mv, (input, vec), (x, y)), out)


@declare_op()
def dot(input: Tensor, tensor: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Inner product of two 1-D tensors of the same size and dtype."""
    _check_tensor(input, "dot", "input", 1)
    _check_tensor(tensor, "dot", "tensor", 2)
    x, y = input._data, tensor._data
    if x.ndim != 1 or y.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {x.ndim}D and {y.ndim}D tensors")
    if x.shape[0] != y.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{x.shape[0]}] and src [{y.shape[0]}] to have "
                           f"the same number of elements, but got {x.shape[0]} and {y.shape[0]} elements respectively")
    if x.dtype != y.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found {_tname(x.dtype)} and "
                           f"{_tname(y.dtype)}")
    _check_not_bool("dot", input)
    _same_device("dot", input, tensor)
    return _out(_apply(Dot, (input, tensor), (x, y)), out)


@declare_op()
def vdot(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """``dot`` that conjugates its first argument (identical for real dtypes)."""
    return dot(input.conj() if isinstance(input, Tensor) else input, other, out=out)


@declare_op(aliases=("ger",))
def outer(input: Tensor, vec2: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Outer product ``input[:, None] * vec2[None, :]`` (dtypes promote)."""
    _check_tensor(input, "outer", "input", 1)
    _check_tensor(vec2, "outer", "vec2", 2)
    if input._data.ndim != 1:
        raise RuntimeError(f"outer: Expected 1-D argument self, but got {input._data.ndim}-D")
    if vec2._data.ndim != 1:
        raise RuntimeError(f"outer: Expected 1-D argument vec2, but got {vec2._data.ndim}-D")
    return _out(mul(input.reshape(-1, 1), vec2), out)


ger = outer


@declare_op()
def inner(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Sum of products over the last dim: shape ``input.shape[:-1] + other.shape[:-1]``
    (a plain product when either is 0-d)."""
    _check_tensor(input, "inner", "input", 1)
    _check_tensor(other, "inner", "other", 2)
    x, y = input._data, other._data
    if x.ndim == 0 or y.ndim == 0:
        return _out(mul(input, other), out)
    if x.shape[-1] != y.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(x.shape)} and {list(y.shape)}")
    if x.dtype != y.dtype:
        raise RuntimeError("both inputs should have same dtype")
    return _out(tensordot(input, other, ([-1], [-1])), out)


class _AddScaled(Function):
    """``beta * input + alpha * prod`` (``input`` ignored, NaN included, when beta == 0)."""
    _array_forward = True

    @staticmethod
    def forward(ctx, x, p, beta, alpha):
        ctx.beta, ctx.alpha = beta, alpha
        # ``p`` is always a fresh internal product (mm/mv/bmm/outer), so it may be updated in place
        out = p * alpha if alpha != 1 else p
        if out.dtype != p.dtype:
            out = out.astype(p.dtype)
        if beta != 0:
            out += x * beta if beta != 1 else x
        return out

    @staticmethod
    def backward(ctx, gy):
        need_x, need_p = ctx.needs_input_grad[:2]
        gx = gy * ctx.beta if need_x else None
        gp = (gy * ctx.alpha if ctx.alpha != 1 else gy) if need_p else None
        return gx, gp, None, None


def _scalar(v, kind):
    v = v.item() if isinstance(v, Tensor) else v
    if kind in "iu":
        return int(v)  # PyTorch truncates a float alpha/beta for integer tensors
    return v


def _add_scaled(fn, input, prod, beta, alpha):
    _check_tensor(input, fn, "input", 1)
    kind = prod._data.dtype.kind
    beta, alpha = _scalar(beta, kind), _scalar(alpha, kind)
    shp, target = input._data.shape, prod._data.shape
    if len(shp) > len(target):
        raise RuntimeError(f"expand(torch.{_tname(input._data.dtype)}Tensor{{{list(shp)}}}, size={list(target)}): the "
                           f"number of sizes provided ({len(target)}) must be greater or equal to the number of "
                           f"dimensions in the tensor ({len(shp)})")
    for i in range(1, len(shp) + 1):
        if shp[-i] not in (1, target[-i]):
            raise RuntimeError(f"The expanded size of the tensor ({target[-i]}) must match the existing size "
                               f"({shp[-i]}) at non-singleton dimension {len(target) - i}.  Target sizes: "
                               f"{list(target)}.  Tensor sizes: {list(shp)}")
    _same_device(fn, input, prod)
    return _apply(_AddScaled, (input, prod, beta, alpha), (input._data, prod._data, beta, alpha))


def _check_add_dtype(input, mat2):
    if input._data.dtype != mat2._data.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {_tname(input._data.dtype)} and "
                           f"{_tname(mat2._data.dtype)}")


@declare_op()
def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: float = 1, alpha: float = 1,
          out: Tensor | None = None) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)``; ``input`` broadcasts to the result.

    Example::

        >>> fabric.addmm(fabric.zeros(3), fabric.ones(2, 4), fabric.ones(4, 3), alpha=0.5)
        tensor([[2., 2., 2.],
                [2., 2., 2.]])
    """
    _check_tensor(input, "addmm", "input", 1)
    _check_tensor(mat2, "addmm", "mat2", 3)
    _check_add_dtype(input, mat2)
    return _out(_add_scaled("addmm", input, mm(mat1, mat2), beta, alpha), out)


@declare_op()
def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta: float = 1, alpha: float = 1,
          out: Tensor | None = None) -> Tensor:
    """``beta * input + alpha * (mat @ vec)``."""
    _check_tensor(input, "addmv", "input", 1)
    _check_tensor(mat, "addmv", "mat", 2)
    _check_tensor(vec, "addmv", "vec", 3)
    if not (input._data.dtype == mat._data.dtype == vec._data.dtype):
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {_tname(input._data.dtype)}, "
                           f"{_tname(mat._data.dtype)}, and {_tname(vec._data.dtype)}")
    return _out(_add_scaled("addmv", input, mv(mat, vec), beta, alpha), out)


@declare_op()
def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: float = 1, alpha: float = 1,
           out: Tensor | None = None) -> Tensor:
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``."""
    _check_tensor(input, "addbmm", "input", 1)
    _check_tensor(batch2, "addbmm", "batch2", 3)
    _check_add_dtype(input, batch2)
    return _out(_add_scaled("addbmm", input, bmm(batch1, batch2).sum(0, dtype=batch1.dtype), beta, alpha), out)


@declare_op()
def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: float = 1, alpha: float = 1,
            out: Tensor | None = None) -> Tensor:
    """``beta * input + alpha * (batch1 @ batch2)`` batched."""
    _check_tensor(input, "baddbmm", "input", 1)
    _check_tensor(batch2, "baddbmm", "batch2", 3)
    _check_add_dtype(input, batch2)
    return _out(_add_scaled("baddbmm", input, bmm(batch1, batch2), beta, alpha), out)


@declare_op()
def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta: float = 1, alpha: float = 1,
         out: Tensor | None = None) -> Tensor:
    """``beta * input + alpha * outer(vec1, vec2)`` (dtypes promote, as in PyTorch)."""
    _check_tensor(input, "addr", "input", 1)
    prod = outer(vec1, vec2)
    dt = D.result_type(input, prod)
    if input.dtype != dt:
        input = input.to(dt)
    if prod.dtype != dt:
        prod = prod.to(dt)
    return _out(_add_scaled("addr", input, prod, beta, alpha), out)


def _inplace_from(self, result, name):
    if result._data.shape != self._data.shape:
        raise RuntimeError(f"{name}: output with shape {list(self._data.shape)} doesn't match the broadcast shape "
                           f"{list(result._data.shape)}")
    return self.copy_(result)


@declare_op()
def addmm_(self: Tensor, mat1: Tensor, mat2: Tensor, *, beta: float = 1, alpha: float = 1) -> Tensor:
    """In-place ``addmm``."""
    return _inplace_from(self, addmm(self, mat1, mat2, beta=beta, alpha=alpha), "addmm_")


@declare_op()
def addmv_(self: Tensor, mat: Tensor, vec: Tensor, *, beta: float = 1, alpha: float = 1) -> Tensor:
    """In-place ``addmv``."""
    return _inplace_from(self, addmv(self, mat, vec, beta=beta, alpha=alpha), "addmv_")


@declare_op()
def addbmm_(self: Tensor, batch1: Tensor, batch2: Tensor, *, beta: float = 1, alpha: float = 1) -> Tensor:
    """In-place ``addbmm``."""
    return _inplace_from(self, addbmm(self, batch1, batch2, beta=beta, alpha=alpha), "addbmm_")


@declare_op()
def baddbmm_(self: Tensor, batch1: Tensor, batch2: Tensor, *, beta: float = 1, alpha: float = 1) -> Tensor:
    """In-place ``baddbmm``."""
    return _inplace_from(self, baddbmm(self, batch1, batch2, beta=beta, alpha=alpha), "baddbmm_")


@declare_op()
def addr_(self: Tensor, vec1: Tensor, vec2: Tensor, *, beta: float = 1, alpha: float = 1) -> Tensor:
    """In-place ``addr``."""
    return _inplace_from(self, addr(self, vec1, vec2, beta=beta, alpha=alpha), "addr_")



@declare_op()
def kron(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Kronecker product; the result's shape is the elementwise product of
    the (left-padded) shapes, and dtypes promote."""
    _check_tensor(input, "kron", "input", 1)
    _check_tensor(other, "kron", "other", 2)
    nd = max(input._data.ndim, other._data.ndim)
    sa = (1,) * (nd - input._data.ndim) + input._data.shape
    sb = (1,) * (nd - other._data.ndim) + other._data.shape
    a = input.reshape(tuple(v for s in sa for v in (s, 1)))
    b = other.reshape(tuple(v for s in sb for v in (1, s)))
    return _out(mul(a, b).reshape(tuple(x * y for x, y in zip(sa, sb))), out)


class Trace(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, x):
        ctx.nm = x.shape
        dt = np.int64 if x.dtype.kind in "biu" else x.dtype
        return xp_of(x).trace(x, dtype=dt)

    @staticmethod
    def backward(ctx, gy):
        n, m = ctx.nm
        return gy * _const(_eye(n, m, gy._data.dtype, gy._data))


@declare_op()
def trace(input: Tensor) -> Tensor:
    """Sum of the main diagonal of a 2-D tensor (integers sum as int64)."""
    _check_tensor(input, "trace", "input", 1)
    if input._data.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input._data.ndim}")
    _check_not_bool("trace", input)
    return _apply(Trace, (input,), (input._data,))


class LinalgCross(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, a, b, dim):
        ctx.dim = dim
        ctx.save_for_backward(a, b)
        xp = xp_of(a)
        shape = np.broadcast_shapes(a.shape, b.shape)
        a = xp.broadcast_to(a, shape)
        b = xp.broadcast_to(b, shape)
        pre = (slice(None),) * dim

        def c(x, i):
            return x[pre + (i,)]

        return xp.stack([c(a, 1) * c(b, 2) - c(a, 2) * c(b, 1),
                         c(a, 2) * c(b, 0) - c(a, 0) * c(b, 2),
                         c(a, 0) * c(b, 1) - c(a, 1) * c(b, 0)], axis=dim)

    @staticmethod
    def backward(ctx, gy):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad[:2]
        ga = _cross(b, gy, ctx.dim) if need_a else None
        gb = _cross(gy, a, ctx.dim) if need_b else None
        return ga, gb, None


def _cross(a, b, dim):
    return _apply(LinalgCross, (a, b, dim), (a._data, b._data, dim))


def _cross_checked(input, other, dim, fn):
    _check_tensor(input, fn, "input", 1)
    _check_tensor(other, fn, "other", 2)
    x, y = input._data, other._data
    if x.ndim != y.ndim:
        raise RuntimeError(f"linalg.cross: inputs must have the same number of dimensions. Got {x.ndim} and {y.ndim}")
    if x.dtype != y.dtype:
        raise RuntimeError(f"expected scalar type {_tname(x.dtype)} but found {_tname(y.dtype)}")
    _check_not_bool("cross", input)
    shape = _batch_shape_broadcast(fn, x.shape, y.shape, f"linalg.cross: the shapes of the inputs do not broadcast: "
                                                          f"{list(x.shape)} and {list(y.shape)}")
    d = _wrap_dim(dim, len(shape))
    if x.shape[d] != 3 or y.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {x.shape[d]} and "
                           f"{y.shape[d]}")
    _same_device(fn, input, other)
    return _cross(input, other, d)


@declare_op()
def cross(input: Tensor, other: Tensor, dim: int | None = None, *, out: Tensor | None = None) -> Tensor:
    """Cross product of 3-vectors along ``dim``; without ``dim``, the first
    dim of size 3 (deprecated in PyTorch, which warns; so does fabric)."""
    if dim is None:
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim "
                      "explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to agree "
                      "with that of linalg.cross in a future release.", UserWarning, stacklevel=2)
        _check_tensor(input, "cross", "input", 1)
        _check_tensor(other, "cross", "other", 2)
        shape = _batch_shape_broadcast("cross", input._data.shape, other._data.shape)
        dims = [i for i, s in enumerate(shape) if s == 3]
        if not dims:
            raise RuntimeError("no dimension of size 3 in input")
        dim = dims[0]
    return _out(_cross_checked(input, other, dim, "cross"), out)


@declare_op(name="cross", namespace="linalg", autocast=False, method=False)
def linalg_cross(input: Tensor, other: Tensor, *, dim: int = -1, out: Tensor | None = None) -> Tensor:
    """``torch.linalg.cross``: cross product along ``dim`` (default -1), broadcasting."""
    return _out(_cross_checked(input, other, dim, "linalg.cross"), out)


class Cdist(Function):
    """Pairwise p-norm distances between the rows of ``x1`` and ``x2``."""
    _array_forward = True
    _node_name = "CdistBackward0"

    @staticmethod
    def forward(ctx, x1, x2, p, use_mm):
        xp = xp_of(x1)
        ctx.p = p
        with _np_errstate(xp):
            if p == 2 and use_mm:
                n1 = (x1 * x1).sum(-1)[..., :, None]
                n2 = (x2 * x2).sum(-1)[..., None, :]
                d = n1 + n2 - 2 * (x1 @ xp.swapaxes(x2, -1, -2))
                y = xp.sqrt(xp.maximum(d, 0))
            else:
                diff = xp.abs(x1[..., :, None, :] - x2[..., None, :, :])
                if p == 0:
                    y = (diff != 0).sum(-1).astype(x1.dtype)
                elif p == 1:
                    y = diff.sum(-1)
                elif p == 2:
                    y = xp.sqrt((diff * diff).sum(-1))
                elif p == _inf:
                    y = diff.max(-1) if diff.shape[-1] else xp.zeros(diff.shape[:-1], x1.dtype)
                else:
                    y = (diff ** p).sum(-1) ** (1.0 / p)
        ctx.save_for_backward(x1, x2, y)
        return y

    @staticmethod
    def backward(ctx, gy):
        x1, x2, y = ctx.saved_tensors
        p = ctx.p
        need1, need2 = ctx.needs_input_grad[:2]
        if p == 0:
            return (x1 * 0 if need1 else None), (x2 * 0 if need2 else None), None, None
        if p == 2:
            zero = y._data == 0
            ratio = _masked_fill(gy / _masked_fill(y, zero, 1), zero, 0)
            g1 = (x1 * ratio.sum(-1, keepdim=True) - ratio @ x2) if need1 else None
            g2 = (x2 * ratio.sum(-2).unsqueeze(-1) - ratio.mT @ x1) if need2 else None
            return g1, g2, None, None
        diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
        sgn = _sign(diff)
        g = gy.unsqueeze(-1)
        if p == 1:
            t = sgn * g
        elif p == _inf:
            mask = _abs(diff)._data == y._data[..., None]
            t = sgn * _const(mask.astype(diff._data.dtype)) * g
        else:
            zero = y._data == 0
            dz = diff._data == 0
            ad = _masked_fill(_abs(diff), dz, 1)
            scale = _masked_fill(gy / _masked_fill(y, zero, 1) ** (p - 1), zero, 0).unsqueeze(-1)
            t = _masked_fill(sgn * ad ** (p - 1), dz, 0) * scale
        return (t.sum(-2) if need1 else None), (-t.sum(-3) if need2 else None), None, None


@declare_op(method=False)
def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """Batched pairwise distances ``(..., P, M), (..., R, M) -> (..., P, R)``.

    ``compute_mode`` picks, as in PyTorch, the matrix-product formula for
    p = 2 ('use_mm_for_euclid_dist_if_necessary': when P or R > 25;
    'use_mm_for_euclid_dist': always; 'donot_use_mm_for_euclid_dist': never).
    It changes only rounding, never the gradient, which is zero where a
    distance is zero.
    """
    _check_tensor(x1, "cdist", "x1", 1)
    _check_tensor(x2, "cdist", "x2", 2)
    a, b = x1._data, x2._data
    if a.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {a.ndim}D")
    if b.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X2 got: {b.ndim}D")
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {a.shape[-1]} X2: {b.shape[-1]}")
    if a.dtype.kind != "f":
        raise RuntimeError(f"cdist only supports floating-point dtypes, X1 got: {_tname(a.dtype)}")
    if b.dtype.kind != "f":
        raise RuntimeError(f"cdist only supports floating-point dtypes, X2 got: {_tname(b.dtype)}")
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected scalar type {_tname(a.dtype)} but found {_tname(b.dtype)}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    modes = {"use_mm_for_euclid_dist_if_necessary": 0, "use_mm_for_euclid_dist": 1, "donot_use_mm_for_euclid_dist": 2}
    if compute_mode not in modes:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    _same_device("cdist", x1, x2)
    mode = modes[compute_mode]
    batch = _batch_shape_broadcast("cdist", a.shape[:-2], b.shape[:-2])
    xp = xp_of(a)
    aa = xp.broadcast_to(a, batch + a.shape[-2:])
    bb = xp.broadcast_to(b, batch + b.shape[-2:])
    use_mm = p == 2 and (mode == 1 or (mode == 0 and (a.shape[-2] > 25 or b.shape[-2] > 25)))
    p = float(p)
    return _apply(Cdist, (x1, x2, p, use_mm), (aa, bb, p, use_mm))


def _chain_order(shapes):
    """Optimal parenthesization of a matrix chain (classic O(n^3) DP)."""
    n = len(shapes)
    dims = [shapes[0][0]] + [s[1] for s in shapes]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _multi_dot(mats, split, i, j):
    if i == j:
        return mats[i]
    k = split[i][j]
    return matmul(_multi_dot(mats, split, i, k), _multi_dot(mats, split, k + 1, j))


@declare_op(name="multi_dot", namespace="linalg", autocast="linalg_multi_dot", method=False)
def linalg_multi_dot(tensors: Sequence[Tensor], *, out: Tensor | None = None) -> Tensor:
    """Product of a chain of matrices in the cheapest order; the first may be
    a 1-D row vector and the last a 1-D column vector."""
    tensors = list(tensors)
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"multi_dot(): expected Tensors, but element {i} is {type(t).__name__}")
    first, last = tensors[0]._data.ndim, tensors[-1]._data.ndim
    if first not in (1, 2):
        raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got {first}D")
    if last not in (1, 2):
        raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got {last}D")
    for i in range(1, n - 1):
        if tensors[i]._data.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {tensors[i]._data.ndim}D")
    dt = tensors[0]._data.dtype
    for i, t in enumerate(tensors[1:], 1):
        if t._data.dtype != dt:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                               f"{_CNAME.get(dt.name)} and tensor {i} {_CNAME.get(t._data.dtype.name)}")
    _check_not_bool("addmm_impl_cpu_", tensors[0])
    _same_device("multi_dot", *tensors)
    mats = list(tensors)
    if first == 1:
        mats[0] = mats[0].unsqueeze(0)
    if last == 1:
        mats[-1] = mats[-1].unsqueeze(-1)
    for i in range(n - 1):
        s1, s2 = mats[i]._data.shape, mats[i + 1]._data.shape
        if s1[1] != s2[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes {list(s1)} and {list(s2)} cannot "
                               "be multiplied")
    if n == 2:
        r = matmul(mats[0], mats[1])
    else:
        r = _multi_dot(mats, _chain_order([m._data.shape for m in mats]), 0, n - 1)
    if first == 1 and last == 1:
        r = r.reshape(())
    elif first == 1:
        r = r.squeeze(0)
    elif last == 1:
        r = r.squeeze(-1)
    return _out(r, out)


@declare_op(method=False)
def chain_matmul(*matrices: Tensor, out: Tensor | None = None) -> Tensor:
    """Deprecated PyTorch alias of ``linalg.multi_dot`` for 2-D matrices (warns)."""
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
                  "torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather than multiple "
                  "parameters.", UserWarning, stacklevel=2)
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    for _i, m in enumerate(matrices):
        if not isinstance(m, Tensor) or m._data.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {getattr(m, 'ndim', '?')}, expected 2 instead.")
    if len(matrices) == 1:
        return _out(matrices[0].clone(), out)
    return linalg_multi_dot(matrices, out=out)


@declare_op(name="vecdot", namespace="linalg", autocast="linalg_vecdot", method=False)
def linalg_vecdot(x: Tensor, y: Tensor, *, dim: int = -1, out: Tensor | None = None) -> Tensor:
    """``sum(x * y, dim)`` with broadcasting (``torch.linalg.vecdot``)."""
    _check_tensor(x, "linalg.vecdot", "x", 1)
    _check_tensor(y, "linalg.vecdot", "y", 2)
    if x._data.dtype.kind not in "fc":
        raise RuntimeError(f"linalg.vecdot: Expected a floating point or complex tensor as input. Got "
                           f"{_tname(x._data.dtype)}")
    if x._data.dtype != y._data.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
                           f"{_tname(x._data.dtype)} and y of type {_tname(y._data.dtype)} instead")
    return _out(mul(x.conj(), y).sum(dim), out)


__all__ += declared_names(__name__)
