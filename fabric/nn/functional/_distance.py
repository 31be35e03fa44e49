"""Distances: ``pairwise_distance``, ``cosine_similarity`` and ``pdist``.

The p-norm is one Function whose backward is PyTorch's ``norm_backward``
(gradient 0 where the norm is 0, ties of the inf-norm share the gradient),
written with Tensor ops so it can be differentiated again.

Example::

    >>> import fabric
    >>> import fabric.nn.functional as F
    >>> F.pairwise_distance(fabric.tensor([[3.0, 4.0]]), fabric.tensor([[0.0, 0.0]]), eps=0.0)
    tensor([5.])
"""
from __future__ import annotations

import numpy as np

from ... import _dtype as D
from ..._tensor import Tensor, _wrap_dim
from ...autograd.function import _apply1
from ...ops._registry import declare_op
from ...ops._util import xp_of
from ...ops.reduce import VectorNorm

__all__ = ["pairwise_distance", "cosine_similarity", "pdist"]


def _const(array) -> Tensor:
    """A Tensor that does not require grad around ``array`` (NumPy scalars,
    which 0-d arithmetic returns, become 0-d arrays)."""
    if array.__class__ is not np.ndarray and isinstance(array, np.generic):
        array = np.asarray(array)
    return Tensor._make(array, False)


def _mask(t, mask):
    from ._activation import _mask_scale

    return _mask_scale(t, mask)


class _NormBackward1(VectorNorm):
    """The vector norm, its node named as PyTorch's ``norm(p, dim)`` overload.  The 0-"norm"
    (a count) passes a zero gradient rather than none: ``pdist``'s is defined in PyTorch."""

    _node_name = "NormBackward1"

    @staticmethod
    def backward(ctx, gy):
        if ctx.ord == 0:
            x, _ = ctx.saved_tensors
            return _const(xp_of(x._data).zeros_like(x._data)), None, None, None
        return VectorNorm.backward(ctx, gy)


def _vector_norm(x, p, dim, keepdim=False):
    d = _wrap_dim(dim, x._data.ndim) if x._data.ndim else None
    if d is None:  # 0-d: |x| (any p > 0), written as a 1-element reduction
        flat = x.reshape((1,))
        return _apply1(_NormBackward1, flat, (flat._data, float(p), (0,), False)).reshape((1,) if keepdim else ())
    return _apply1(_NormBackward1, x, (x._data, float(p), (d,), keepdim))


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """``||x1 - x2 + eps||_p`` over the last dimension (inputs broadcast).

    >>> import fabric, fabric.nn.functional as F
    >>> F.pairwise_distance(fabric.tensor([[1.0, 1.0]]), fabric.tensor([[0.0, 0.0]]), p=1, eps=0.0)
    tensor([2.])
    """
    for name, t in (("x1", x1), ("x2", x2)):
        if not isinstance(t, Tensor):
            raise TypeError(f"pairwise_distance(): argument '{name}' must be Tensor, not {type(t).__name__}")
    out_dim = max(x1.dim(), x2.dim())
    d = x1 - x2 + eps
    return _vector_norm(d, p, out_dim - 1 if out_dim else 0, keepdim)


@declare_op(method=False)
def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """``<x1, x2> / (max(||x1||, eps) * max(||x2||, eps))`` along ``dim``; each
    input is divided by its (clamped) norm first, as in PyTorch, so the result
    stays in [-1, 1].

    >>> import fabric, fabric.nn.functional as F
    >>> F.cosine_similarity(fabric.tensor([[1.0, 0.0]]), fabric.tensor([[1.0, 1.0]]))
    tensor([0.7071])
    """
    for name, t in (("x1", x1), ("x2", x2)):
        if not isinstance(t, Tensor):
            raise TypeError(f"cosine_similarity(): argument '{name}' (position {1 if name == 'x1' else 2}) must be "
                            f"Tensor, not {type(t).__name__}")
    rt = D.result_type(x1, x2)
    if not rt.is_floating_point:
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is {rt}")
    if x1.dtype != rt:
        x1 = x1.to(rt)
    if x2.dtype != rt:
        x2 = x2.to(rt)
    shape = np.broadcast_shapes(x1._data.shape, x2._data.shape)
    if x1._data.shape != shape:
        x1 = x1.expand(shape)
    if x2._data.shape != shape:
        x2 = x2.expand(shape)
    n1 = _vector_norm(x1, 2, dim, keepdim=True)
    n2 = _vector_norm(x2, 2, dim, keepdim=True)
    # clamp the values only: PyTorch clamps a clone under no_grad, so the
    # gradient flows through the unclamped norm
    xp = xp_of(n1._data)
    n1 = n1 + _const(xp.maximum(n1._data, n1._data.dtype.type(eps)) - n1._data)
    n2 = n2 + _const(xp.maximum(n2._data, n2._data.dtype.type(eps)) - n2._data)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


@declare_op(method=False)
def pdist(input, p=2):
    """p-norm distances between all pairs of rows (i < j) of a 2-D ``input``,
    in row-major order.

    >>> import fabric, fabric.nn.functional as F
    >>> F.pdist(fabric.tensor([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]]))
    tensor([5.0000, 1.0000, 4.2426])
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"pdist(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    if input._data.dtype.kind != "f":
        raise RuntimeError("pdist only supports floating-point dtypes")
    n = input.shape[0]
    i, j = np.triu_indices(n, 1)
    xp = xp_of(input._data)
    if xp is not np:
        i, j = xp.asarray(i), xp.asarray(j)
    ti, tj = _const(i), _const(j)
    return _vector_norm(input[ti] - input[tj], p, 1)
