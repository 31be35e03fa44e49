"""LU factorization with partial pivoting (LAPACK's getrf, written with NumPy/CuPy
array ops: NumPy exposes no LU routine): ``linalg.lu_factor`` / ``lu_factor_ex``,
``linalg.lu`` (``P, L, U``) and ``linalg.lu_solve``, for real and complex dtypes.

The pivot of each column is the first entry of largest magnitude, measured as
LAPACK does (``|re| + |im|`` for complex), so the pivots equal PyTorch's.
Gradients are PyTorch's ``linalg_lu_backward`` for square matrices.

Example::

    >>> import fabric
    >>> LU, pivots = fabric.linalg.lu_factor(fabric.tensor([[1.0, 2.0], [3.0, 4.0]]))
    >>> pivots
    tensor([2, 2], dtype=fabric.int32)
    >>> LU
    tensor([[3.0000, 4.0000],
            [0.3333, 0.6667]])
"""
from __future__ import annotations

import numpy as np

from ...autograd.function import Function, _apply
from .._util import xp_of
from ..reduce import _return_type
from ._common import (
    LinAlgError,
    _batch_prefix,
    _check_matrix,
    _check_tensor,
    _const,
    _out,
    _tril,
)
from .triangular import linalg_solve_triangular

__all__ = ["linalg_lu", "linalg_lu_factor", "linalg_lu_factor_ex", "linalg_lu_solve"]

linalg_lu_factor_t = _return_type("linalg_lu_factor", ["LU", "pivots"])
linalg_lu_factor_ex_t = _return_type("linalg_lu_factor_ex", ["LU", "pivots", "info"])
linalg_lu_t = _return_type("linalg_lu", ["P", "L", "U"])


def _getrf(a):
    """``(LU, pivots, info)`` of a batch of matrices: Doolittle elimination, one column at a time."""
    xp = xp_of(a)
    m, n = a.shape[-2:]
    k = min(m, n)
    batch = a.shape[:-2]
    lu = a.reshape((-1, m, n)).copy()
    rows = xp.arange(lu.shape[0])
    piv = xp.zeros((lu.shape[0], k), np.int32)
    info = xp.zeros(lu.shape[0], np.int32)
    for j in range(k):
        col = lu[:, j:, j]
        size = xp.abs(col.real) + xp.abs(col.imag) if col.dtype.kind == "c" else xp.abs(col)
        p = xp.argmax(size, axis=-1) + j
        piv[:, j] = p + 1
        top = lu[rows, j].copy()
        lu[rows, j] = lu[rows, p]
        lu[rows, p] = top
        pivot = lu[:, j, j]
        zero = pivot == 0
        info = xp.where(zero & (info == 0), j + 1, info)
        scale = xp.where(zero, 1, pivot)  # a zero pivot leaves its column unscaled, as getrf
        lu[:, j + 1:, j] /= scale[:, None]
        lu[:, j + 1:, j + 1:] -= lu[:, j + 1:, j:j + 1] * lu[:, j:j + 1, j + 1:]
    return lu.reshape(a.shape), piv.reshape(batch + (k,)), info.reshape(batch)


def _permutation(xp, pivots, m, dtype):
    """The matrix P with ``A = P L U`` from LAPACK's 1-based row interchanges."""
    batch = pivots.shape[:-1]
    flat = pivots.reshape((-1, pivots.shape[-1])) - 1
    perm = xp.broadcast_to(xp.arange(m), (flat.shape[0], m)).copy()
    rows = xp.arange(flat.shape[0])
    for j in range(flat.shape[1]):
        p = flat[:, j]
        top = perm[rows, j].copy()
        perm[rows, j] = perm[rows, p]
        perm[rows, p] = top
    eye = xp.eye(m, dtype=dtype)
    # row i of P^T A is row perm[i] of A, so P[perm[i], i] = 1
    return xp.swapaxes(eye[perm], -1, -2).reshape(batch + (m, m))


class LinalgLuFactor(Function):
    """The packed factorization; differentiable for square matrices."""

    _array_forward = True
    _complex_native = True  # the backward is written with conjugate transposes

    @staticmethod
    def forward(ctx, a):
        lu, piv, info = _getrf(a)
        ctx.mark_non_differentiable(1, 2)
        ctx.save_for_backward(lu, piv)
        return lu, piv, info

    @staticmethod
    def backward(ctx, g_lu, g_piv, g_info):
        lu, piv = ctx.saved_tensors
        m, n = lu._data.shape[-2:]
        if m != n:
            raise NotImplementedError("fabric.linalg.lu_factor: the gradient is implemented for square matrices only")
        L = _tril(lu, -1) + _const(xp_of(lu._data).eye(n, dtype=lu._data.dtype))
        U = lu - _tril(lu, -1)
        P = _const(_permutation(xp_of(lu._data), piv._data, m, lu._data.dtype))
        return _lu_backward(_tril(g_lu, -1), g_lu - _tril(g_lu, -1), P, L, U)


def _lu_backward(gL, gU, P, L, U):
    """PyTorch's linalg_lu_backward, square case: gA = P L^{-H} (tril(L^H gL, -1) + triu(gU U^H)) U^{-H}."""
    phi = _tril(L.mH @ gL, -1) + (gU @ U.mH - _tril(gU @ U.mH, -1))
    phi = linalg_solve_triangular(U.mH, phi, upper=False, left=False)
    phi = linalg_solve_triangular(L.mH, phi, upper=True, left=True, unitriangular=True)
    return P @ phi


def linalg_lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    """``(LU, pivots, info)``: ``A = P L U`` packed as in LAPACK's getrf (L below the
    diagonal with a unit diagonal, U on and above it), ``pivots`` 1-based row
    interchanges (int32), ``info`` the 1-based index of the first zero pivot (0 if none)."""
    a = _check_matrix(A, "linalg.lu_factor_ex", square=False)
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    lu, piv, info = _apply(LinalgLuFactor, (A,), (a,))
    if check_errors:
        _check_info(info._data, a, "torch.linalg.lu_factor_ex")
    return _out(linalg_lu_factor_ex_t(lu, piv, info), out)


def _check_info(info, a, fn):
    host = info if info.__class__ is np.ndarray else info.get()
    prefix, k = _batch_prefix(np.asarray(host), a.ndim > 2)
    if prefix is not None:
        raise LinAlgError(f"{fn}: {prefix}U[{k},{k}] is zero and using it on lu_solve would result in a "
                          "division by zero. If you still want to perform the factorization, consider calling "
                          "linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")


def linalg_lu_factor(A, *, pivot=True, out=None):
    """``(LU, pivots)`` of :func:`linalg_lu_factor_ex`; a zero pivot (a singular
    matrix) raises ``LinAlgError``, as PyTorch (``lu_factor_ex`` / ``lu`` factor it)."""
    lu, piv, info = linalg_lu_factor_ex(A, pivot=pivot)
    _check_info(info._data, A._data, "torch.linalg.lu_factor")
    return _out(linalg_lu_factor_t(lu, piv), out)


def linalg_lu(A, *, pivot=True, out=None):
    """``(P, L, U)`` with ``A = P @ L @ U``: ``L`` unit lower triangular (m x k),
    ``U`` upper triangular (k x n), ``k = min(m, n)``.

    Example::

        >>> P, L, U = fabric.linalg.lu(fabric.tensor([[1.0, 2.0], [3.0, 4.0]]))
        >>> P @ L @ U
        tensor([[1., 2.],
                [3., 4.]])
    """
    _check_tensor(A, "linalg.lu", "A", 1)
    lu, piv, _ = linalg_lu_factor_ex(A, pivot=pivot)
    a = lu._data
    m, n = a.shape[-2:]
    k = min(m, n)
    xp = xp_of(a)
    L = _tril(lu[..., :, :k], -1) + _const(xp.eye(m, k, dtype=a.dtype))
    U = lu[..., :k, :] - _tril(lu[..., :k, :], -1)
    P = _const(_permutation(xp, piv._data, m, a.dtype))
    return _out(linalg_lu_t(P, L, U), out)


def linalg_lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """Solve ``A X = B`` (``X A = B`` when ``left=False``; ``A^H`` for ``A`` when
    ``adjoint``) from :func:`linalg_lu_factor`'s output; differentiable in ``LU`` and ``B``."""
    _check_tensor(LU, "linalg.lu_solve", "LU", 1)
    _check_tensor(B, "linalg.lu_solve", "B", 3)
    a = LU._data
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise RuntimeError("linalg.lu_solve: Expected LU to be square")
    n = a.shape[-1]
    xp = xp_of(a)
    L = _tril(LU, -1) + _const(xp.eye(n, dtype=a.dtype))
    U = LU - _tril(LU, -1)
    P = _const(_permutation(xp, pivots._data, n, a.dtype))
    # A = P L U
    if left and not adjoint:  # X = U^{-1} L^{-1} P^T B
        y = linalg_solve_triangular(L, P.mT @ B, upper=False, unitriangular=True)
        return _out(linalg_solve_triangular(U, y, upper=True), out)
    if left:  # A^H X = B: X = P L^{-H} U^{-H} B
        y = linalg_solve_triangular(U.mH, B, upper=False)
        return _out(P @ linalg_solve_triangular(L.mH, y, upper=True, unitriangular=True), out)
    if not adjoint:  # X A = B: X = B U^{-1} L^{-1} P^T
        y = linalg_solve_triangular(U, B, upper=True, left=False)
        return _out(linalg_solve_triangular(L, y, upper=False, left=False, unitriangular=True) @ P.mT, out)
    # X A^H = B: X = B P L^{-H} U^{-H}
    y = linalg_solve_triangular(L.mH, B @ P, upper=True, left=False, unitriangular=True)
    return _out(linalg_solve_triangular(U.mH, y, upper=False, left=False), out)
