"""Triangular solves (``linalg.solve_triangular``), also the building block
of the Cholesky and QR backward formulas.

Example::

    >>> import fabric
    >>> A = fabric.tensor([[2.0, 0.0], [1.0, 1.0]])
    >>> fabric.linalg.solve_triangular(A, fabric.tensor([[2.0], [3.0]]), upper=False)
    tensor([[1.],
            [2.]])
"""
from __future__ import annotations

import numpy as np

from ..._tensor import Tensor
from ...autograd.function import Function, _apply
from .._registry import declare_op
from .._registry import public_names as declared_names
from .._util import xp_of
from ..arith import _np_errstate
from ..reduce import _return_type
from ._common import _batch_shape_broadcast, _check_matrix, _check_tensor, _out, _same_device, _tname, _tri

__all__ = ["linalg_solve_triangular"]


class LinalgSolveTriangular(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, a, b, upper, left, unitriangular):
        xp = xp_of(a)
        ctx.upper, ctx.left, ctx.unit = upper, left, unitriangular
        n = a.shape[-1]
        mask = xp.tri(n, n, -1 if unitriangular else 0, dtype=bool)
        if upper:
            mask = mask.T
        t = xp.where(mask, a, xp.zeros((), a.dtype))
        if unitriangular:
            t = t + xp.eye(n, dtype=a.dtype)
        if not left:
            t = xp.swapaxes(t, -1, -2)
            b = xp.swapaxes(b, -1, -2)
        batch = np.broadcast_shapes(t.shape[:-2], b.shape[:-2])
        t = xp.broadcast_to(t, batch + t.shape[-2:])
        b = xp.broadcast_to(b, batch + b.shape[-2:])
        try:
            x = xp.linalg.solve(t, b)
        except np.linalg.LinAlgError:  # a zero on the diagonal: substitute, giving inf/nan like LAPACK's trsm
            x = _substitute(xp, t, b, lower=(not upper) if left else upper)
        if not left:
            x = xp.ascontiguousarray(xp.swapaxes(x, -1, -2))
        ctx.save_for_backward(a, x)
        return x

    @staticmethod
    def backward(ctx, gy):
        a, x = ctx.saved_tensors
        upper, left, unit = ctx.upper, ctx.left, ctx.unit
        need_a, need_b = ctx.needs_input_grad[:2]
        gb = linalg_solve_triangular(a.mT, gy, upper=not upper, left=left, unitriangular=unit)
        ga = None
        if need_a:
            ga = -(gb @ x.mT) if left else -(x.mT @ gb)
            ga = _tri(ga, (1 if unit else 0) if upper else (-1 if unit else 0), upper)
        return ga, (gb if need_b else None), None, None, None


def _substitute(xp, T, B, lower):
    """Forward/back substitution, one row at a time (only used for singular
    triangular matrices, where the LU-based solver refuses)."""
    n = T.shape[-1]
    X = xp.zeros(B.shape, np.result_type(T, B))
    rows = range(n) if lower else range(n - 1, -1, -1)
    with _np_errstate(xp):
        for i in rows:
            done = slice(0, i) if lower else slice(i + 1, n)
            acc = (T[..., i:i + 1, done] @ X[..., done, :])[..., 0, :]
            X[..., i, :] = (B[..., i, :] - acc) / T[..., i, i:i + 1]
    return X


@declare_op(name="solve_triangular", namespace="linalg", autocast=False, method=False)
def linalg_solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True, unitriangular: bool = False,
                            out: Tensor | None = None) -> Tensor:
    """Solve ``A X = B`` (``X A = B`` if not ``left``) reading only the upper
    or lower triangle of ``A`` (and assuming a unit diagonal if
    ``unitriangular``).  Computed with the general (LU) solver on the masked
    triangle; a zero on the diagonal gives inf/nan, as in PyTorch."""
    a = _check_matrix(A, "linalg.solve_triangular")
    _check_tensor(B, "linalg.solve_triangular", "B", 2)
    b = B._data
    if b.ndim < 2:
        raise RuntimeError("linalg.solve_triangular: The input tensor B must have at least 2 dimensions.")
    if a.dtype != b.dtype:
        raise RuntimeError(f"linalg.solve_triangular: Expected A and B to have the same dtype, but found A of type "
                           f"{_tname(a.dtype)} and B of type {_tname(b.dtype)} instead")
    n = a.shape[-1]
    if (b.shape[-2] if left else b.shape[-1]) != n:
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and {b.shape[-2]}x{b.shape[-1]})")
    _batch_shape_broadcast("linalg.solve_triangular", a.shape[:-2], b.shape[:-2])
    _same_device("linalg.solve_triangular", A, B)
    return _out(_apply(LinalgSolveTriangular, (A, B, upper, left, unitriangular), (a, b, upper, left, unitriangular)),
                out)




# --- triangular_solve (the deprecated spelling of linalg.solve_triangular) ---------------------

_triangular_solve_t = _return_type("triangular_solve", ("solution", "cloned_coefficient"))
_TRIANGULAR_SOLVE_WARNED = [False]


@declare_op()
def triangular_solve(input: Tensor, A: Tensor, upper: bool = True, transpose: bool = False, unitriangular: bool = False,
                     *, out: tuple[Tensor, ...] | None = None) -> tuple[Tensor, Tensor]:
    """Solve ``op(A) X = input`` for triangular ``A`` (``op`` transposes when
    ``transpose``); returns ``(solution, cloned_coefficient)``, batches
    broadcast. Deprecated in PyTorch in favour of ``linalg.solve_triangular``.

    Example::

        >>> A = fabric.tensor([[2.0, 1.0], [0.0, 4.0]])
        >>> fabric.triangular_solve(fabric.tensor([[3.0], [4.0]]), A).solution
        tensor([[1.],
                [1.]])
    """
    import warnings

    for t, name in ((input, "b"), (A, "A")):
        if t.dim() < 2:
            raise RuntimeError(f"torch.triangular_solve: Expected {name} to have at least 2 dimensions, but it has "
                               f"{t.dim()} dimensions instead")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"A must be batches of square matrices, but they are {A.shape[-2]} by {A.shape[-1]} "
                           "matrices")
    if input.dtype is not A.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type {_tname(input._data.dtype)} "
                           f"and A of type {_tname(A._data.dtype)} instead.")
    if not _TRIANGULAR_SOLVE_WARNED[0]:  # PyTorch warns once per process
        _TRIANGULAR_SOLVE_WARNED[0] = True
        warnings.warn("torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangular and will be "
                      "removed in a future PyTorch release.", UserWarning, stacklevel=2)
    batch = tuple(np.broadcast_shapes(tuple(input.shape[:-2]), tuple(A.shape[:-2])))
    a = A.expand(*batch, *A.shape[-2:]) if tuple(A.shape[:-2]) != batch else A
    b = input.expand(*batch, *input.shape[-2:]) if tuple(input.shape[:-2]) != batch else input
    x = linalg_solve_triangular(a.mT if transpose else a, b, upper=bool(upper) != bool(transpose),
                                unitriangular=unitriangular)
    coeff = a.clone()
    if out is not None:
        from ..inplace import copy_into_out

        copy_into_out(out[0], x)
        copy_into_out(out[1], coeff)
        return _triangular_solve_t(out[0], out[1])
    return _triangular_solve_t(x, coeff)


__all__ += declared_names(__name__)
