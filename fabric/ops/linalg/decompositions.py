"""Decompositions: Cholesky (and cholesky_solve / cholesky_inverse), QR,
SVD, eigh / eigvalsh, eig / eigvals (complex results); real and complex dtypes.

Example::

    >>> import fabric
    >>> fabric.linalg.eigvalsh(fabric.tensor([[2.0, 0.0], [0.0, 3.0]]))
    tensor([2., 3.])
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ... import _dtype as D
from ..._tensor import Tensor
from ...autograd.function import Function, _apply
from ...autograd.grad_mode import state as _grad_state
from ...backends import backend_of
from .._registry import declare_op
from .._registry import public_names as declared_names
from .._util import xp_of
from ._common import (
    LinAlgError,
    _bad_mask,
    _batch_shape_broadcast,
    _check_float,
    _check_matrix,
    _check_tensor,
    _const,
    _converge_error,
    _diag_embed,
    _diagonal,
    _eye_t,
    _infos,
    _masked_fill,
    _out,
    _raise_chol,
    _replace_bad,
    _same_device,
    _tname,
    _to_device,
    _tril,
    linalg_cholesky_ex_t,
    linalg_eig_t,
    linalg_eigh_t,
    linalg_qr_t,
    linalg_svd_t,
    qr_t,
    svd_t,
)
from .triangular import linalg_solve_triangular

__all__ = ["linalg_cholesky", "linalg_cholesky_ex", "linalg_eig", "linalg_eigh", "linalg_eigvals", "linalg_eigvalsh",
           "linalg_qr", "linalg_svd", "linalg_svdvals"]  # + the declared ops (end of module)

# =====================================================================================
# Decompositions
# =====================================================================================

class LinalgCholesky(Function):
    _array_forward = True
    _complex_native = True  # A = L L^H: the formula below is written with conjugate transposes

    @staticmethod
    def forward(ctx, a, upper):
        xp = xp_of(a)
        ctx.upper = upper
        try:
            L = xp.linalg.cholesky(a)
        except np.linalg.LinAlgError:
            _raise_chol("linalg.cholesky", a)
        if not bool(xp.isfinite(L).all()):  # NaN input: potrf reports failure, NumPy/CuPy do not
            _raise_chol("linalg.cholesky", a)
        if upper:
            L = xp.ascontiguousarray(xp.conj(xp.swapaxes(L, -1, -2)))
        ctx.save_for_backward(L)
        return L

    @staticmethod
    def backward(ctx, gL):
        L, = ctx.saved_tensors
        if ctx.upper:  # Murray (2016), arXiv:1602.07527, as in PyTorch's cholesky_backward
            L, gL = L.mH, gL.mH
        P = _tril(L.mH @ gL)
        P = 0.5 * (P + _tril(P, -1).mH)
        P = linalg_solve_triangular(L.mH, P, upper=True, left=True)
        return linalg_solve_triangular(L, P, upper=False, left=False), None


@declare_op(name="cholesky", namespace="linalg", autocast="linalg_cholesky", method=False)
def linalg_cholesky(A: Tensor, *, upper: bool = False, out: Tensor | None = None) -> Tensor:
    """Cholesky factor ``L`` (lower; ``upper=True`` gives ``L^T``) of a
    symmetric positive-definite matrix, reading its lower triangle.  Not
    positive-definite input raises ``fabric.linalg.LinAlgError``."""
    a = _check_matrix(A, "linalg.cholesky")
    return _out(_apply(LinalgCholesky, (A, upper), (a, upper)), out)


@declare_op(name="cholesky_ex", namespace="linalg", autocast="linalg_cholesky_ex", method=False)
def linalg_cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False,
                       out: tuple[Tensor, ...] | None = None) -> tuple[Tensor, Tensor]:
    """``(L, info)``: ``info`` (int32) is 0 on success, else the order of the
    first leading minor that is not positive-definite; ``L`` of such a
    matrix is NaN (LAPACK leaves a partial factor there)."""
    a = _check_matrix(A, "linalg.cholesky_ex")
    try:
        L = linalg_cholesky(A, upper=upper)
        info = xp_of(a).zeros(a.shape[:-2], np.int32)
    except LinAlgError:
        if check_errors:
            raise
        infos = _infos(a, "chol")
        bad = _bad_mask(infos, a)
        L = _masked_fill(linalg_cholesky(_replace_bad(A, bad), upper=upper), bad[..., None, None], math.nan)
        info = _to_device(infos, a)
    return _out(linalg_cholesky_ex_t(L, _const(info)), out)


@declare_op()
def cholesky(input: Tensor, upper: bool = False, *, out: Tensor | None = None) -> Tensor:
    """``torch.cholesky`` (deprecated in PyTorch, which warns; so does fabric)."""
    warnings.warn("torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed in a future "
                  "PyTorch release.\nL = torch.cholesky(A)\nshould be replaced with\nL = torch.linalg.cholesky(A)\n"
                  "and\nU = torch.cholesky(A, upper=True)\nshould be replaced with\nU = torch.linalg.cholesky(A).mH",
                  UserWarning, stacklevel=2)
    return linalg_cholesky(input, upper=upper, out=out)


def _tri_array(xp, L, upper):
    n = L.shape[-1]
    mask = xp.tri(n, n, dtype=bool)
    return xp.where(mask.T if upper else mask, L, xp.zeros((), L.dtype))


def _cholesky_solve_arrays(xp, b, L, upper):
    T = _tri_array(xp, L, upper)
    Tt = xp.conj(xp.swapaxes(T, -1, -2))
    first, second = (Tt, T) if upper else (T, Tt)  # A = U^H U or L L^H
    batch = np.broadcast_shapes(T.shape[:-2], b.shape[:-2])
    b = xp.broadcast_to(b, batch + b.shape[-2:])
    first = xp.broadcast_to(first, batch + T.shape[-2:])
    second = xp.broadcast_to(second, batch + T.shape[-2:])
    try:
        return xp.linalg.solve(second, xp.linalg.solve(first, b))
    except np.linalg.LinAlgError:
        raise LinAlgError("cholesky_solve: the Cholesky factor has a zero on its diagonal") from None


class CholeskySolve(Function):
    _array_forward = True
    _complex_native = True

    @staticmethod
    def forward(ctx, b, L, upper):
        ctx.upper = upper
        x = _cholesky_solve_arrays(xp_of(b), b, L, upper)
        ctx.save_for_backward(L, x)
        return x

    @staticmethod
    def backward(ctx, gx):
        L, x = ctx.saved_tensors
        need_b, need_L = ctx.needs_input_grad[:2]
        gb = cholesky_solve(gx, L, ctx.upper)
        gL = None
        if need_L:  # PyTorch's cholesky_solve_backward: treats L as a full matrix
            common = gb @ x.mH
            common = common + common.mH
            gL = -(L @ common) if ctx.upper else -(common @ L)
        return (gb if need_b else None), gL, None


@declare_op()
def cholesky_solve(B: Tensor, L: Tensor, upper: bool = False, *, out: Tensor | None = None) -> Tensor:
    """Solve ``A X = B`` given the Cholesky factor of ``A`` (lower ``L``, or
    upper ``U`` with ``upper=True``); batch dims broadcast.  The forward reads
    only the factor's triangle; the gradient with respect to ``L`` is
    PyTorch's formula, which treats ``L`` as a full matrix."""
    _check_tensor(B, "cholesky_solve", "input", 1)
    _check_tensor(L, "cholesky_solve", "input2", 2)
    b, l_ = B._data, L._data
    if b.ndim < 2 or l_.ndim < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {b.ndim} dimensions instead" if b.ndim < 2
                           else f"u should have at least 2 dimensions, but has {l_.ndim} dimensions instead")
    if b.dtype != l_.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type {_tname(b.dtype)} and A of "
                           f"type {_tname(l_.dtype)} instead.")
    _check_float(l_, "cholesky_solve")
    if l_.shape[-1] != l_.shape[-2] or b.shape[-2] != l_.shape[-1]:
        raise RuntimeError(f"Incompatible matrix sizes for cholesky_solve: each A matrix is {l_.shape[-2]} by "
                           f"{l_.shape[-1]} but each b matrix is {b.shape[-2]} by {b.shape[-1]}")
    _batch_shape_broadcast("cholesky_solve", b.shape[:-2], l_.shape[:-2])
    _same_device("cholesky_solve", B, L)
    return _out(_apply(CholeskySolve, (B, L, upper), (b, l_, upper)), out)


class CholeskyInverse(Function):
    _array_forward = True
    _complex_native = True

    @staticmethod
    def forward(ctx, L, upper):
        xp = xp_of(L)
        ctx.upper = upper
        eye = xp.broadcast_to(xp.eye(L.shape[-1], dtype=L.dtype), L.shape)
        y = _cholesky_solve_arrays(xp, eye, L, upper)
        ctx.save_for_backward(L, y)
        return y

    @staticmethod
    def backward(ctx, g):
        L, inv = ctx.saved_tensors
        common = inv @ ((g + g.mH) @ inv)  # PyTorch's cholesky_inverse_backward
        return (-(L @ common) if ctx.upper else -(common @ L)), None


@declare_op()
def cholesky_inverse(L: Tensor, upper: bool = False, *, out: Tensor | None = None) -> Tensor:
    """Inverse of ``A`` from its Cholesky factor (``A = L L^T``, or ``U^T U``
    with ``upper=True``), reading the factor's triangle; the gradient is
    PyTorch's formula (``L`` treated as a full matrix)."""
    _check_tensor(L, "cholesky_inverse", "input", 1)
    l_ = L._data
    if l_.ndim < 2:
        raise RuntimeError("cholesky_inverse: The input tensor input must have at least 2 dimensions.")
    if l_.shape[-1] != l_.shape[-2]:
        raise RuntimeError(f"cholesky_inverse: A must be batches of square matrices, but they are {l_.shape[-2]} by "
                           f"{l_.shape[-1]} matrices")
    _check_float(l_, "cholesky_inverse")
    return _out(_apply(CholeskyInverse, (L, upper), (l_, upper)), out)


class LinalgQr(Function):
    _array_forward = True
    _complex_native = True  # written with conjugate transposes (R has a real diagonal)

    @staticmethod
    def forward(ctx, a, mode):
        xp = xp_of(a)
        ctx.mode = mode
        ctx.set_materialize_grads(False)
        if mode == "r":
            R = xp.linalg.qr(a, mode="r")
            Q = xp.empty((0,), a.dtype)
        else:
            Q, R = xp.linalg.qr(a, mode=mode)
        ctx.save_for_backward(Q, R)
        return Q, R

    @staticmethod
    def backward(ctx, gQ, gR):
        Q, R = ctx.saved_tensors
        mode = ctx.mode
        if mode == "r":
            raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please "
                               "use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.")
        m, n = Q._data.shape[-2], R._data.shape[-1]
        if mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
        if m >= n:
            return _qr_backward_square(gQ, gR, Q, R), None
        # wide case: A = [X | Y], R = [U | V], X = Q U, Y = Q V (Liao et al., 2019)
        U = R[..., :, :m]
        gU = gR[..., :, :m] if gR is not None else None
        gV = gR[..., :, m:] if gR is not None else None
        if gV is not None:
            Y = Q @ R[..., :, m:]  # the input's trailing columns
            gQ = (gQ + Y @ gV.mH) if gQ is not None else Y @ gV.mH
        gX = _qr_backward_square(gQ, gU, Q, U)
        gY = Q @ gV if gV is not None else _const(xp_of(Q._data).zeros(Q._data.shape[:-1] + (n - m,), Q._data.dtype))
        from ..join import cat

        return cat([gX, gY], -1), None


def _copyltu(M):
    """The Hermitian matrix with ``M``'s strict lower triangle and the real part of its diagonal."""
    return _tril(M, -1) + _tril(M, -1).mH + _diag_embed(_diagonal(M).real)


def _qr_backward_square(gQ, gR, Q, R):
    """gA = (gQ + Q copyltu(M)) R^{-H}, M = R gR^H - gQ^H Q (A = QR, m >= n)."""
    M = None
    if gR is not None:
        M = R @ gR.mH
    if gQ is not None:
        M = -(gQ.mH @ Q) if M is None else M - gQ.mH @ Q
    if M is None:
        return None
    B = Q @ _copyltu(M)
    if gQ is not None:
        B = B + gQ
    return linalg_solve_triangular(R.mH, B, upper=False, left=False)


@declare_op(name="qr", namespace="linalg", autocast="linalg_qr", method=False)
def linalg_qr(A: Tensor, mode: str = "reduced", *, out: tuple[Tensor, ...] | None = None) -> tuple[Tensor, Tensor]:
    """QR decomposition ``A = Q R`` (Householder, via LAPACK geqrf/orgqr):
    ``mode`` is 'reduced', 'complete' or 'r' (Q is then an empty tensor)."""
    a = _check_matrix(A, "linalg.qr", square=False)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', or "
                           "'complete'")
    return _out(linalg_qr_t(*_apply(LinalgQr, (A, mode), (a, mode))), out)


@declare_op()
def qr(input: Tensor, some: bool = True, *, out: tuple[Tensor, ...] | None = None) -> tuple[Tensor, Tensor]:
    """``torch.qr`` (deprecated in PyTorch, which warns; so does fabric):
    ``some=True`` is mode 'reduced', ``some=False`` 'complete'."""
    warnings.warn("torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a future PyTorch "
                  "release.\nThe boolean parameter 'some' has been replaced with a string parameter 'mode'.\n"
                  "Q, R = torch.qr(A, some)\nshould be replaced with\n"
                  "Q, R = torch.linalg.qr(A, 'reduced' if some else 'complete')", UserWarning, stacklevel=2)
    return _out(qr_t(*linalg_qr(input, "reduced" if some else "complete")), out)


def _lapack_svd(a, full_matrices, compute_uv=True):
    xp = xp_of(a)
    try:
        return xp.linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)
    except np.linalg.LinAlgError:
        if not bool(xp.isfinite(a).all()):
            raise LinAlgError("linalg.svd: The algorithm failed to converge because the input matrix contained "
                              "non-finite values.") from None
        raise _converge_error("linalg.svd", "singular values") from None


class LinalgSvd(Function):
    _array_forward = True
    _complex_native = True  # _svd_backward is written with conjugate transposes

    @staticmethod
    def forward(ctx, a, full_matrices):
        ctx.full = full_matrices
        ctx.set_materialize_grads(False)
        U, S, Vh = _lapack_svd(a, full_matrices)
        ctx.save_for_backward(U, S, Vh)
        return U, S, Vh

    @staticmethod
    def backward(ctx, gU, gS, gVh):
        U, S, Vh = ctx.saved_tensors
        return _svd_backward(gU, gS, gVh, U, S, Vh, ctx.full), None


def _svd_backward(gU, gS, gVh, U, S, Vh, full):
    """PyTorch's svd_backward, well-defined for distinct nonzero singular values
    (and, for complex input, for losses that do not depend on the phases of
    the singular vectors); extra columns of a full U / rows of a full Vh are ignored."""
    k = S._data.shape[-1]
    if full:
        if U._data.shape[-1] != k:
            U = U[..., :k]
            gU = gU[..., :k] if gU is not None else None
        if Vh._data.shape[-2] != k:
            Vh = Vh[..., :k, :]
            gVh = gVh[..., :k, :] if gVh is not None else None
    m, n = U._data.shape[-2], Vh._data.shape[-1]
    if gU is None and gVh is None:
        if gS is None:
            return None
        return (U * gS.unsqueeze(-2)) @ Vh
    Sr, Sc = S.unsqueeze(-2), S.unsqueeze(-1)
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + _eye_t(k, S)  # E_ij = s_j^2 - s_i^2, 1 on the diagonal
    UhgU = None
    if gU is not None:
        X = U.mH @ gU
        UhgU = X - X.mH
    VhgV = None
    if gVh is not None:
        X = Vh @ gVh.mH
        VhgV = X - X.mH
    if UhgU is not None and VhgV is not None:
        gA = (UhgU * Sr + Sc * VhgV) / E
    elif UhgU is not None:
        gA = (UhgU * Sr) / E
    else:
        gA = (Sc * VhgV) / E
    if gA.is_complex():
        # the diagonal of the skew-Hermitian parts is imaginary: the phases of the singular vectors;
        # PyTorch keeps i Im(diag(U^H gU)) / S from it
        gA = gA - _diag_embed(_diagonal(gA))
        if UhgU is not None:
            gA = gA + _diag_embed(_diagonal(UhgU) * 0.5 / S)
    if gS is not None:
        gA = gA + _diag_embed(gS)
    if m > n and gU is not None:
        gA = U @ gA
        gUSinv = gU / Sr
        gA = gA + gUSinv - U @ (U.mH @ gUSinv)
        gA = gA @ Vh
    elif m < n and gVh is not None:
        gA = gA @ Vh
        SinvgVh = gVh / Sc
        gA = gA + SinvgVh - (SinvgVh @ Vh.mH) @ Vh
        gA = U @ gA
    else:
        gA = U @ (gA @ Vh)
    return gA


@declare_op(name="svd", namespace="linalg", autocast="linalg_svd", method=False)
def linalg_svd(A: Tensor, full_matrices: bool = True, *, driver: str | None = None,
               out: tuple[Tensor, ...] | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """``A = U diag(S) Vh`` with ``S`` descending.  Gradients follow PyTorch's
    formula (defined for distinct singular values; U and Vh are unique only
    up to the signs of their columns/rows)."""
    a = _check_matrix(A, "linalg.svd", square=False)
    if driver is not None:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with "
                           "cuSOLVER backend.")
    return _out(linalg_svd_t(*_apply(LinalgSvd, (A, full_matrices), (a, full_matrices))), out)


def _needs_grad(*ts):
    return _grad_state.enabled and any(t._requires_grad for t in ts)


@declare_op(name="svdvals", namespace="linalg", autocast="linalg_svdvals", method=False)
def linalg_svdvals(A: Tensor, *, driver: str | None = None, out: Tensor | None = None) -> Tensor:
    """Singular values in descending order (no U/V computed unless a gradient
    is needed)."""
    a = _check_matrix(A, "linalg.svdvals", square=False)
    if _needs_grad(A):
        return _out(linalg_svd(A, full_matrices=False, driver=driver).S, out)
    return _out(_const(_lapack_svd(a, False, compute_uv=False)), out)


@declare_op()
def svd(input: Tensor, some: bool = True, compute_uv: bool = True, *,
        out: tuple[Tensor, ...] | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """``torch.svd``: returns ``(U, S, V)`` with ``V`` (not ``Vh``);
    ``some=True`` gives the reduced decomposition.  With
    ``compute_uv=False``, U and V are zero-filled ``(m, m)``/``(n, n)``."""
    a = _check_matrix(input, "svd", square=False)
    if not compute_uv:
        S = linalg_svdvals(input)
        xp = xp_of(a)
        m, n = a.shape[-2:]
        U = _const(xp.zeros(a.shape[:-2] + (m, m), a.dtype))
        V = _const(xp.zeros(a.shape[:-2] + (n, n), a.dtype))
        return _out(svd_t(U, S, V), out)
    U, S, Vh = linalg_svd(input, full_matrices=not some)
    return _out(svd_t(U, S, Vh.mH), out)


class LinalgEigh(Function):
    _array_forward = True
    _complex_native = True  # Hermitian: written with conjugate transposes

    @staticmethod
    def forward(ctx, a, uplo):
        ctx.set_materialize_grads(False)
        try:
            L, V = xp_of(a).linalg.eigh(a, UPLO=uplo)
        except np.linalg.LinAlgError:
            raise _converge_error("linalg.eigh", "eigenvalues") from None
        ctx.save_for_backward(L, V)
        return L, V

    @staticmethod
    def backward(ctx, gL, gV):
        L, V = ctx.saved_tensors
        if gV is None:
            if gL is None:
                return None, None
            return (V * gL.unsqueeze(-2)) @ V.mH, None
        X = V.mH @ gV
        X = 0.5 * (X - X.mH)
        if X.is_complex():  # the imaginary diagonal belongs to the eigenvectors' phases: no gradient
            X = X - _diag_embed(_diagonal(X))
        n = L._data.shape[-1]
        E = L.unsqueeze(-2) - L.unsqueeze(-1) + _eye_t(n, L)  # E_ij = l_j - l_i, 1 on the diagonal
        if gL is not None:
            X = X + _diag_embed(gL)
        return V @ ((X / E) @ V.mH), None


def _check_uplo(UPLO, fn):
    if UPLO not in ("L", "U", "l", "u"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO.upper()


@declare_op(name="eigh", namespace="linalg", autocast="linalg_eigh", method=False)
def linalg_eigh(A: Tensor, UPLO: str = "L", *, out: tuple[Tensor, ...] | None = None) -> tuple[Tensor, Tensor]:
    """Eigenvalues (ascending) and orthonormal eigenvectors of a symmetric
    matrix, reading the ``UPLO`` triangle.  Gradients are defined for
    distinct eigenvalues; eigenvectors are unique only up to sign."""
    a = _check_matrix(A, "linalg.eigh")
    uplo = _check_uplo(UPLO, "linalg.eigh")
    return _out(linalg_eigh_t(*_apply(LinalgEigh, (A, uplo), (a, uplo))), out)


@declare_op(name="eigvalsh", namespace="linalg", autocast="linalg_eigvalsh", method=False)
def linalg_eigvalsh(A: Tensor, UPLO: str = "L", *, out: Tensor | None = None) -> Tensor:
    """Eigenvalues (ascending) of a symmetric matrix."""
    a = _check_matrix(A, "linalg.eigvalsh")
    uplo = _check_uplo(UPLO, "linalg.eigvalsh")
    if _needs_grad(A):
        return _out(linalg_eigh(A, uplo).eigenvalues, out)
    try:
        w = xp_of(a).linalg.eigvalsh(a, UPLO=uplo)
    except np.linalg.LinAlgError:
        raise _converge_error("linalg.eigvalsh", "eigenvalues") from None
    return _out(_const(w), out)


def _host_eig(a, vectors):
    """LAPACK's geev (NumPy on the host; CuPy has no general eigensolver), results always complex."""
    host = a if a.__class__ is np.ndarray else backend_of(a).to_numpy(a)
    ct = D.to_complex(D.from_numpy_dtype(host.dtype)).np
    try:
        out = np.linalg.eig(host) if vectors else (np.linalg.eigvals(host),)
    except np.linalg.LinAlgError:
        raise _converge_error("linalg.eig", "eigenvalues") from None
    return tuple(_to_device(np.asarray(o).astype(ct, copy=False), a) for o in out)


class LinalgEig(Function):
    _array_forward = True
    _complex_native = True  # PyTorch's linalg_eig_backward, written for complex eigenvalues and vectors

    @staticmethod
    def forward(ctx, a):
        ctx.set_materialize_grads(False)
        L, V = _host_eig(a, True)
        ctx.save_for_backward(L, V)
        return L, V

    @staticmethod
    def backward(ctx, gL, gV):
        from .solvers import linalg_solve  # solvers imports this module

        L, V = ctx.saved_tensors
        Vh = V.mH
        if gV is None:
            if gL is None:
                return None
            return linalg_solve(Vh, gL.unsqueeze(-1) * Vh)
        X = Vh @ gV
        # eigenvectors have norm 1 and a free phase: project out what changes only those
        X = X - Vh @ (V * _diagonal(X).real.unsqueeze(-2))
        Lc = L.conj()
        E = Lc.unsqueeze(-2) - Lc.unsqueeze(-1) + _eye_t(L._data.shape[-1], L)  # conj(l_j - l_i), 1 on the diagonal
        X = X / E
        X = X - _diag_embed(_diagonal(X))
        if gL is not None:
            X = X + _diag_embed(gL)
        return linalg_solve(Vh, X @ Vh)


@declare_op(name="eig", namespace="linalg", autocast="linalg_eig", method=False)
def linalg_eig(A: Tensor, *, out: tuple[Tensor, ...] | None = None) -> tuple[Tensor, Tensor]:
    """Eigenvalues and eigenvectors (unit norm, as LAPACK's geev) of a square
    matrix; complex results also for real input.  Gradients follow PyTorch's
    formula (distinct eigenvalues; the loss must not depend on the eigenvectors' phases).

    Example::

        >>> fabric.linalg.eig(fabric.tensor([[2.0, 0.0], [0.0, 3.0]])).eigenvalues
        tensor([2.+0.j, 3.+0.j])
    """
    a = _check_matrix(A, "linalg.eig")
    return _out(linalg_eig_t(*_apply(LinalgEig, (A,), (a,))), out)


@declare_op(name="eigvals", namespace="linalg", autocast="linalg_eigvals", method=False)
def linalg_eigvals(A: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Eigenvalues of a square matrix (complex also for real input).

    Example::

        >>> fabric.linalg.eigvals(fabric.tensor([[0.0, -1.0], [1.0, 0.0]]))
        tensor([0.+1.j, 0.-1.j])
    """
    a = _check_matrix(A, "linalg.eigvals")
    if _needs_grad(A):
        return _out(linalg_eig(A).eigenvalues, out)
    return _out(_const(_host_eig(a, False)[0]), out)


__all__ += declared_names(__name__)
