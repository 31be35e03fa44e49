"""Inverses, determinants and solvers: inv, det, slogdet, solve (the
triangular solve is in ``triangular.py``).

Example::

    >>> import fabric
    >>> fabric.linalg.det(fabric.tensor([[2.0, 1.0], [1.0, 3.0]]))
    tensor(5.)
"""
from __future__ import annotations

import math

import numpy as np

from ..._tensor import Tensor
from ...autograd.function import Function, _apply, once_differentiable
from .._registry import declare_op
from .._registry import public_names as declared_names
from .._util import xp_of
from ._common import (
    LinAlgError,
    _bad_mask,
    _batch_shape_broadcast,
    _check_matrix,
    _check_tensor,
    _const,
    _eye,
    _gpu_failed,
    _infos,
    _masked_fill,
    _out,
    _raise_lu,
    _replace_bad,
    _same_device,
    _tname,
    _to_device,
    linalg_inv_ex_t,
    linalg_slogdet_t,
    linalg_solve_ex_t,
    slogdet_t,
)
from .decompositions import linalg_svd

# the ops declared in this module join __all__ at its end
__all__ = ["linalg_det", "linalg_inv", "linalg_inv_ex", "linalg_slogdet", "linalg_solve", "linalg_solve_ex"]

# =====================================================================================
# Inverses, determinants, solvers
# =====================================================================================

class LinalgInv(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, a):
        xp = xp_of(a)
        try:
            y = xp.linalg.inv(a)
        except np.linalg.LinAlgError:
            _raise_lu("linalg.inv", a, "inv")
        if _gpu_failed(y, a):
            _raise_lu("linalg.inv", a, "inv")
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, gy):
        y, = ctx.saved_tensors
        yt = y.mT
        return -(yt @ (gy @ yt))


@declare_op(name="inv", namespace="linalg", autocast="linalg_inv", method=False)
def linalg_inv(A: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Inverse of a (batch of) square matrices; singular input raises
    ``fabric.linalg.LinAlgError``.

    Example::

        >>> fabric.linalg.inv(fabric.tensor([[2.0, 0.0], [0.0, 4.0]]))
        tensor([[0.5000, 0.0000],
                [0.0000, 0.2500]])
    """
    a = _check_matrix(A, "linalg.inv")
    return _out(_apply(LinalgInv, (A,), (a,)), out)


@declare_op()
def inverse(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """``torch.inverse``: alias of ``linalg.inv``."""
    return linalg_inv(input, out=out)


@declare_op(name="inv_ex", namespace="linalg", autocast="linalg_inv_ex", method=False)
def linalg_inv_ex(A: Tensor, *, check_errors: bool = False,
                  out: tuple[Tensor, ...] | None = None) -> tuple[Tensor, Tensor]:
    """``(inverse, info)``: ``info`` (int32) is 0 for invertible matrices and
    the 1-based index of the first zero pivot of the LU factorization
    otherwise; the inverse of such a matrix is NaN (LAPACK leaves partial
    results there)."""
    a = _check_matrix(A, "linalg.inv_ex")
    try:
        inv = linalg_inv(A)
        info = xp_of(a).zeros(a.shape[:-2], np.int32)
    except LinAlgError:
        if check_errors:
            raise
        infos = _infos(a, "lu")
        bad = _bad_mask(infos, a)
        inv = _masked_fill(linalg_inv(_replace_bad(A, bad)), bad[..., None, None], math.nan)
        info = _to_device(infos, a)
    return _out(linalg_inv_ex_t(inv, _const(info)), out)


class LinalgDet(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, a):
        y = xp_of(a).linalg.det(a)
        ctx.save_for_backward(a, y)
        return y

    @staticmethod
    def backward(ctx, gy):
        a, det = ctx.saved_tensors
        d = (gy * det).unsqueeze(-1).unsqueeze(-1)
        singular = det._data == 0
        if not bool(singular.any()):
            return d * linalg_inv(a).mT
        # cofactor matrix through the SVD: det(U) det(Vh) U diag(prod_{j != i} s_j) Vh
        U, S, Vh = linalg_svd(a, full_matrices=False)
        alpha = _const(xp_of(a._data).linalg.det(U._data) * xp_of(a._data).linalg.det(Vh._data))
        cof = (U * (_ProdOthers.apply(S) * alpha.unsqueeze(-1)).unsqueeze(-2)) @ Vh
        g_sing = gy.unsqueeze(-1).unsqueeze(-1) * cof
        if bool(singular.all()):
            return g_sing
        ok = ~singular
        safe = _masked_fill(a, singular[..., None, None], 0) + _const(
            singular[..., None, None] * _eye(a._data.shape[-1], a._data.shape[-1], a._data.dtype, a._data))
        g_reg = d * linalg_inv(safe).mT
        return _masked_fill(g_reg, singular[..., None, None], 0) + _masked_fill(g_sing, ok[..., None, None], 0)


class _ProdOthers(Function):
    """``out[..., i] = prod_{j != i} s[..., j]`` (exact with zeros)."""
    _array_forward = True

    @staticmethod
    def forward(ctx, s):
        ctx.save_for_backward(s)
        return _prod_others(xp_of(s), s)

    @staticmethod
    @once_differentiable
    def backward(ctx, gy):
        s, = ctx.saved_tensors
        xp = xp_of(s._data)
        sd, g = s._data, gy._data
        k = sd.shape[-1]
        out = xp.zeros_like(sd)
        for j in range(k):  # d out_i / d s_j = prod_{l not in {i, j}} s_l
            t = sd.copy()
            t[..., j] = 1
            q = _prod_others(xp, t)
            q[..., j] = 0
            out[..., j] = (g * q).sum(-1)
        return _const(out)


def _prod_others(xp, s):
    k = s.shape[-1]
    ones = xp.ones(s.shape[:-1] + (1,), s.dtype)
    pre = xp.concatenate([ones, xp.cumprod(s[..., :-1], axis=-1)], axis=-1) if k else s
    suf = xp.flip(xp.concatenate([ones, xp.cumprod(xp.flip(s[..., 1:], -1), axis=-1)], axis=-1), -1) if k else s
    return pre * suf


@declare_op(name="det", namespace="linalg", autocast=False, method=False)
def linalg_det(A: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Determinant of a (batch of) square matrices; the gradient is the
    cofactor matrix (through the SVD where ``det == 0``)."""
    a = _check_matrix(A, "linalg.det")
    return _out(_apply(LinalgDet, (A,), (a,)), out)


@declare_op()
def det(input: Tensor) -> Tensor:
    """``torch.det``: alias of ``linalg.det``."""
    return linalg_det(input)


class LinalgSlogdet(Function):
    _array_forward = True
    _complex_native = True  # logabsdet is real: its gradient is glad * A^{-H}

    @staticmethod
    def forward(ctx, a):
        sign, lad = xp_of(a).linalg.slogdet(a)
        ctx.mark_non_differentiable(0)
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(a)
        return sign, lad

    @staticmethod
    def backward(ctx, gsign, glad):
        if glad is None:
            return None
        a, = ctx.saved_tensors
        return glad.unsqueeze(-1).unsqueeze(-1) * linalg_inv(a).mH


@declare_op(name="slogdet", namespace="linalg", autocast=False, method=False)
def linalg_slogdet(A: Tensor, *, out: tuple[Tensor, ...] | None = None) -> tuple[Tensor, Tensor]:
    """``(sign, logabsdet)`` of the determinant: ``det = sign * exp(logabsdet)``."""
    a = _check_matrix(A, "linalg.slogdet")
    return _out(linalg_slogdet_t(*_apply(LinalgSlogdet, (A,), (a,))), out)


@declare_op()
def slogdet(input: Tensor) -> tuple[Tensor, Tensor]:
    """``torch.slogdet``: like ``linalg.slogdet``."""
    return slogdet_t(*linalg_slogdet(input))


@declare_op()
def logdet(input: Tensor) -> Tensor:
    """``log(det(input))``: NaN for a negative determinant (with a zero
    gradient there, as in PyTorch), -inf for a singular matrix."""
    if input._data.dtype.kind == "c":  # the complex logarithm of the determinant
        from ..arith import log

        return log(linalg_det(input))
    sign, lad = linalg_slogdet(input)
    return _masked_fill(lad, sign._data < 0, math.nan)


def _solve_is_vector(a, b):
    return b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])


class LinalgSolve(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, a, b, left, vector):
        xp = xp_of(a)
        a_in = a
        ctx.left, ctx.vector = left, vector
        bb = b[..., None] if vector else b
        if not left:
            a = xp.swapaxes(a, -1, -2)
            bb = xp.swapaxes(bb, -1, -2)
        batch = np.broadcast_shapes(a.shape[:-2], bb.shape[:-2])
        if a.ndim == 2 and batch:
            # one matrix, many right-hand sides: factor A once, solve for all columns together
            n, k = bb.shape[-2:]
            a2 = a
            b2 = xp.moveaxis(xp.broadcast_to(bb, batch + (n, k)), -2, 0).reshape(n, -1)
        else:
            a2 = xp.broadcast_to(a, batch + a.shape[-2:])
            b2 = xp.broadcast_to(bb, batch + bb.shape[-2:])
        try:
            x = xp.linalg.solve(a2, b2)
        except np.linalg.LinAlgError:
            _raise_lu("torch.linalg.solve", a2, "solve")
        if _gpu_failed(x, a2):
            _raise_lu("torch.linalg.solve", a2, "solve")
        if a2.ndim == 2 and batch:
            x = xp.moveaxis(x.reshape((n,) + batch + (k,)), 0, -2)
        if not left:
            x = xp.ascontiguousarray(xp.swapaxes(x, -1, -2))
        if vector:
            x = x[..., 0]
        ctx.save_for_backward(a_in, x)
        return x

    @staticmethod
    def backward(ctx, gy):
        a, x = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad[:2]
        left, vector = ctx.left, ctx.vector
        gb = linalg_solve(a.mT, gy, left=left)
        ga = None
        if need_a:
            if vector:
                ga = -(gb.unsqueeze(-1) @ x.unsqueeze(-2))
            elif left:
                ga = -(gb @ x.mT)
            else:
                ga = -(x.mT @ gb)
        return ga, (gb if need_b else None), None, None


@declare_op(name="solve", namespace="linalg", autocast="linalg_solve", method=False)
def linalg_solve(A: Tensor, B: Tensor, *, left: bool = True, out: Tensor | None = None) -> Tensor:
    """Solve ``A X = B`` (``X A = B`` when ``left=False``) for square ``A``.
    ``B`` is a batch of vectors when it is 1-D or has shape ``A.shape[:-1]``.

    Example::

        >>> A = fabric.tensor([[3.0, 1.0], [1.0, 2.0]])
        >>> fabric.linalg.solve(A, fabric.tensor([9.0, 8.0]))
        tensor([2., 3.])
    """
    a = _check_matrix(A, "linalg.solve")
    _check_tensor(B, "linalg.solve", "B", 2)
    b = B._data
    if a.dtype != b.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A of type "
                           f"{_tname(a.dtype)} and B of type {_tname(b.dtype)} instead")
    _same_device("linalg.solve", A, B)
    vector = _solve_is_vector(a, b)
    n = a.shape[-1]
    if vector and not left and n != 1:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation XA = B ({n}x{n} and "
                           f"{b.shape[-1]}x1)")
    if vector and not left:
        raise RuntimeError("linalg.solve: Vector broadcasting of the left hand side is not supported for left=False. "
                           "In this case linalg.solve is equivalent to B / A.squeeze(-1)")
    n = a.shape[-1]
    if vector:
        if b.shape[-1] != n:
            raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation AX = B ({n}x{n} and "
                               f"{b.shape[-1]}x1)")
        batch_b = b.shape[:-1]
    else:
        if b.ndim < 2:
            raise RuntimeError("linalg.solve: The input tensor B must have at least 1 dimensions.")
        k = b.shape[-2] if left else b.shape[-1]
        if k != n:
            shown = f"{b.shape[-2]}x{b.shape[-1]}"
            eq = "AX = B" if left else "XA = B"
            raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation {eq} ({n}x{n} and "
                               f"{shown})")
        batch_b = b.shape[:-2]
    _batch_shape_broadcast("linalg.solve", a.shape[:-2], batch_b)
    return _out(_apply(LinalgSolve, (A, B, left, vector), (a, b, left, vector)), out)


@declare_op(name="solve_ex", namespace="linalg", autocast=False, method=False)
def linalg_solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False,
                    out: tuple[Tensor, ...] | None = None) -> tuple[Tensor, Tensor]:
    """``(result, info)`` version of ``solve``: a singular matrix gives a
    nonzero ``info`` (the first zero pivot of its LU factorization) and NaN
    results instead of raising, unless ``check_errors``."""
    vector = isinstance(A, Tensor) and isinstance(B, Tensor) and _solve_is_vector(A._data, B._data)
    try:
        x = linalg_solve(A, B, left=left)
        b = B._data
        batch = np.broadcast_shapes(A._data.shape[:-2], b.shape[:-1] if vector else b.shape[:-2])
        info = xp_of(A._data).zeros(batch, np.int32)
    except LinAlgError:
        if check_errors:
            raise
        a, b = A._data, B._data
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-1] if vector else b.shape[:-2])
        Ab = A.expand(batch + a.shape[-2:])
        infos = _infos(Ab._data, "lu")
        bad = _bad_mask(infos, a)
        x = _masked_fill(linalg_solve(_replace_bad(Ab, bad), B, left=left),
                         bad[..., None] if vector else bad[..., None, None], math.nan)
        info = _to_device(infos, a)
    return _out(linalg_solve_ex_t(x, _const(info)), out)


__all__ += declared_names(__name__)
