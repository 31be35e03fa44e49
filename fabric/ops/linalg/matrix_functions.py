"""Matrix functions and the rest of ``torch.linalg``: pinv, lstsq,
matrix_power, matrix_rank, matrix_exp, vander, tensorinv, tensorsolve,
diagonal, and the routines fabric does not have (LU, LDL, Householder),
which raise NotImplementedError.

Example::

    >>> import fabric
    >>> fabric.linalg.matrix_power(fabric.tensor([[1.0, 1.0], [0.0, 1.0]]), 3)
    tensor([[1., 3.],
            [0., 1.]])
"""
from __future__ import annotations

import builtins
from collections.abc import Sequence

import numpy as np

from ... import _dtype as D
from ..._tensor import Tensor, _wrap_dim
from ...autograd.function import Function, _apply
from .._registry import declare_op
from .._registry import public_names as declared_names
from .._util import xp_of
from ..arith import _np_errstate, matmul
from ._common import (
    _batch_shape_broadcast,
    _check_matrix,
    _check_not_bool,
    _check_tensor,
    _const,
    _converge_error,
    _eye,
    _out,
    _same_device,
    _tname,
    _ZerosGrad,
    linalg_lstsq_t,
)
from .decompositions import _lapack_svd
from .solvers import linalg_inv, linalg_solve

__all__ = ["linalg_diagonal", "linalg_householder_product", "linalg_ldl_factor", "linalg_ldl_factor_ex",
           "linalg_ldl_solve", "linalg_lstsq", "linalg_matrix_exp", "linalg_matrix_power", "linalg_matrix_rank",
           "linalg_pinv", "linalg_tensorinv", "linalg_tensorsolve", "linalg_vander"]  # + the declared ops

# =====================================================================================
# Pseudo-inverse, least squares, powers, rank, exponential, and the rest
# =====================================================================================

def _tolerances(a, S_max, atol, rtol, rcond, fn):
    """PyTorch's rule: tol = max(atol, rtol * smax); rtol defaults to
    eps * max(m, n), or to 0 when a positive atol is given."""
    xp = xp_of(a)
    if rcond is not None:
        if rtol is not None:
            raise RuntimeError(f"{fn}: rcond and rtol cannot both be given")
        rtol = rcond
    dt = a.real.dtype  # tolerances compare with (real) singular values

    def arr(v):
        if v is None:
            return None
        if isinstance(v, Tensor):
            v = v._data
        return xp.asarray(v, dtype=dt)

    atol_a, rtol_a = arr(atol), arr(rtol)
    eps = np.finfo(dt).eps * max(a.shape[-2], a.shape[-1])
    if rtol_a is None:
        rtol_a = xp.asarray(eps, dtype=dt)
        if atol_a is not None:
            rtol_a = xp.where(atol_a > 0, xp.zeros((), dt), rtol_a)
    if atol_a is None:
        atol_a = xp.zeros((), dt)
    return xp.maximum(atol_a[..., None] if atol_a.ndim else atol_a,
                      (rtol_a[..., None] if rtol_a.ndim else rtol_a) * S_max)


class LinalgPinv(Function):
    _array_forward = True
    _complex_native = True  # _pinv_backward is written with conjugate transposes

    @staticmethod
    def forward(ctx, a, atol, rtol, rcond, hermitian):
        xp = xp_of(a)
        m, n = a.shape[-2:]
        if a.size == 0:
            y = xp.zeros(a.shape[:-2] + (n, m), a.dtype)
        elif hermitian:
            L, V = xp.linalg.eigh(a)
            absL = xp.abs(L)
            tol = _tolerances(a, absL.max(-1, keepdims=True), atol, rtol, rcond, "linalg.pinv")
            with _np_errstate(xp):
                inv = xp.where(absL > tol, 1 / L, xp.zeros((), a.dtype))
            y = (V * inv[..., None, :]) @ xp.conj(xp.swapaxes(V, -1, -2))
        else:
            U, S, Vh = _lapack_svd(a, False)
            tol = _tolerances(a, S[..., :1], atol, rtol, rcond, "linalg.pinv")
            with _np_errstate(xp):
                inv = xp.where(tol < S, 1 / S, xp.zeros((), a.dtype))
            y = (xp.conj(xp.swapaxes(Vh, -1, -2)) * inv[..., None, :]) @ xp.conj(xp.swapaxes(U, -1, -2))
        ctx.save_for_backward(a, y)
        return y

    @staticmethod
    def backward(ctx, gy):
        a, p = ctx.saved_tensors
        return _pinv_backward(gy, p, a), None, None, None, None


def _pinv_backward(g, pinvA, A):
    """PyTorch's pinv_backward (valid where the rank is locally constant)."""
    m, n = A._data.shape[-2:]
    pinvAh = pinvA.mH
    gh = g.mH
    if m <= n:
        K = gh @ pinvA
        KpinvAh = K @ pinvAh
        return -(pinvA @ K).mH + KpinvAh - (A @ pinvA) @ KpinvAh + (pinvAh @ pinvA) @ (gh - K @ A)
    K = pinvA @ gh
    pinvAhK = pinvAh @ K
    return -(K @ pinvA).mH + (gh - A @ K) @ pinvA @ pinvAh + pinvAhK - pinvAhK @ pinvA @ A


@declare_op(name="pinv", namespace="linalg", autocast=False, method=False)
def linalg_pinv(A: Tensor, rcond: float | None = None, hermitian: bool = False, *, atol: float | Tensor | None = None,
                rtol: float | Tensor | None = None, out: Tensor | None = None) -> Tensor:
    """Moore-Penrose pseudo-inverse through the SVD (``eigh`` when
    ``hermitian``); singular values ``<= max(atol, rtol * smax)`` are treated
    as zero.  ``rcond`` is PyTorch's legacy name for ``rtol``.  The gradient
    is PyTorch's pinv_backward formula (also for ``hermitian=True``)."""
    a = _check_matrix(A, "linalg.pinv", square=False)
    atol, rtol, rcond = (v._data if isinstance(v, Tensor) else v for v in (atol, rtol, rcond))
    return _out(_apply(LinalgPinv, (A, None, None, None, hermitian), (a, atol, rtol, rcond, hermitian)), out)


@declare_op()
def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """``torch.pinverse``: ``linalg.pinv(input, rtol=rcond)``."""
    return linalg_pinv(input, rcond=rcond)


class LinalgLstsq(Function):
    """Minimum-norm least squares through one SVD; outputs
    ``(solution, singular_values, rank)`` (the last two non-differentiable)."""
    _array_forward = True
    _complex_native = True

    @staticmethod
    def forward(ctx, a, b, rcond, vector):
        xp = xp_of(a)
        ctx.vector = vector
        ctx.set_materialize_grads(False)
        ctx.mark_non_differentiable(1, 2)
        bb = b[..., None] if vector else b
        batch = np.broadcast_shapes(a.shape[:-2], bb.shape[:-2])
        U, S, Vh = _lapack_svd(xp.broadcast_to(a, batch + a.shape[-2:]), False)
        m, n = a.shape[-2:]
        if rcond is None or rcond < 0:
            rcond = np.finfo(a.dtype).eps * max(m, n)
        smax = S[..., :1] if S.shape[-1] else xp.zeros(S.shape[:-1] + (1,), S.dtype)
        keep = rcond * smax < S
        with _np_errstate(xp):
            inv = xp.where(keep, 1 / S, xp.zeros((), a.dtype))
        x = xp.conj(xp.swapaxes(Vh, -1, -2)) @ (inv[..., :, None] * (xp.conj(xp.swapaxes(U, -1, -2)) @ bb))
        if vector:
            x = x[..., 0]
        ctx.save_for_backward(a, b)
        return x, S, keep.sum(-1).astype(np.int64)

    @staticmethod
    def backward(ctx, gx, gS, grank):
        if gx is None:
            return None, None, None, None
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad[:2]
        if ctx.vector:
            gx, b = gx.unsqueeze(-1), b.unsqueeze(-1)
        pinvA = linalg_pinv(a)
        ga = _pinv_backward(gx @ b.mH, pinvA, a) if need_a else None
        gb = (pinvA.mH @ gx) if need_b else None
        if gb is not None and ctx.vector:
            gb = gb.squeeze(-1)
        return ga, gb, None, None


_LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


@declare_op(name="lstsq", namespace="linalg", autocast="linalg_lstsq", method=False)
def linalg_lstsq(A: Tensor, B: Tensor, rcond: float | None = None, *,
                 driver: str | None = None) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Least-squares solution of ``A X = B`` (minimum norm for rank-deficient
    ``A``), returned as ``(solution, residuals, rank, singular_values)``.

    Which outputs are filled follows PyTorch's CPU drivers: ``gelsy``
    (default): rank; ``gelsd``/``gelss``: rank and singular values; ``gels``:
    neither; residuals (squared column norms of ``A X - B``) when m > n and
    every matrix has full rank, except for ``gelsy``.  Every driver is
    computed with one SVD, so the effective rank is ``#{s > rcond * smax}``
    (gelsy uses a rank-revealing QR instead: borderline ranks may differ).
    The residuals are differentiable with their true gradient (PyTorch
    ignores their gradient).  The gradient of the solution is PyTorch's
    (through ``pinv(A)``).

    Example::

        >>> A = fabric.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
        >>> fabric.linalg.lstsq(A, fabric.tensor([[1.0], [2.0], [3.0]])).solution
        tensor([[1.0000],
                [2.0000]])
    """
    a = _check_matrix(A, "torch.linalg.lstsq", square=False)
    _check_tensor(B, "linalg.lstsq", "B", 2)
    b = B._data
    if a.dtype != b.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same dtype, but got input's "
                           f"dtype {_tname(a.dtype)} and other's dtype {_tname(b.dtype)}")
    if driver is None:
        driver = "gelsy"
    if driver not in _LSTSQ_DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    if not (a.ndim >= b.ndim and a.ndim - b.ndim <= 1):
        raise RuntimeError("torch.linalg.lstsq: input.dim() must be greater or equal to other.dim() and "
                           "(input.dim() - other.dim()) <= 1")
    vector = b.ndim == a.ndim - 1  # lstsq's own rule (not linalg.solve's)
    if (b.shape[-1] if vector else b.shape[-2]) != a.shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    _batch_shape_broadcast("torch.linalg.lstsq", a.shape[:-2], b.shape[:-1] if vector else b.shape[:-2])
    _same_device("linalg.lstsq", A, B)
    if isinstance(rcond, Tensor):
        rcond = rcond.item()
    X, S, rank = _apply(LinalgLstsq, (A, B, rcond, vector), (a, b, rcond, vector))
    xp = xp_of(a)
    m, n = a.shape[-2:]
    empty = _const(xp.zeros((0,), a.dtype))
    full_rank = bool((rank._data == n).all())
    if driver == "gels":
        rank = _const(xp.zeros((0,), np.int64))
    if driver not in ("gelsd", "gelss"):
        S = empty
    residuals = empty
    if driver != "gelsy" and m > n and full_rank:
        Xm = X.unsqueeze(-1) if vector else X
        r = matmul(A, Xm) - (B.unsqueeze(-1) if vector else B)
        residuals = (r * r).sum(-2)
        if vector:
            residuals = residuals.squeeze(-1)
    return linalg_lstsq_t(X, residuals, rank, S)


@declare_op(name="matrix_power", namespace="linalg", autocast=False, method=False)
def linalg_matrix_power(A: Tensor, n: int, *, out: Tensor | None = None) -> Tensor:
    """``A`` to the integer power ``n`` by repeated squaring; negative powers
    use the inverse; ``n = 0`` gives the identity (still joined to the
    graph with a zero gradient, as in PyTorch)."""
    _check_tensor(A, "linalg.matrix_power", "A", 1)
    if isinstance(n, Tensor):
        n = n.item()
    if isinstance(n, builtins.bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"matrix_power(): argument 'n' must be int, not {type(n).__name__}")
    a = A._data
    if a.ndim < 2:
        raise RuntimeError("linalg.matrix_power: The input tensor A must have at least 2 dimensions.")
    if a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they are {a.shape[-2]} "
                           f"by {a.shape[-1]} matrices")
    n = int(n)
    if n > 1:
        _check_not_bool("addmm_impl_cpu_", A)
    if n == 0:
        eye = xp_of(a).broadcast_to(_eye(a.shape[-1], a.shape[-1], a.dtype, a), a.shape).copy()
        return _out(_apply(_ZerosGrad, (A, eye), (a, eye)), out)
    if n == 1:
        return _out(A.clone(), out)
    if n < 0:
        A = linalg_inv(A)
        n = -n
    result = None
    base = A
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    return _out(result, out)


@declare_op()
def matrix_power(input: Tensor, n: int, *, out: Tensor | None = None) -> Tensor:
    """``torch.matrix_power``: alias of ``linalg.matrix_power``."""
    return linalg_matrix_power(input, n, out=out)


@declare_op(name="matrix_rank", namespace="linalg", autocast="linalg_matrix_rank", method=False)
def linalg_matrix_rank(A: Tensor, tol: float | Tensor | None = None, hermitian: bool = False, *,
                       atol: float | Tensor | None = None, rtol: float | Tensor | None = None,
                       out: Tensor | None = None) -> Tensor:
    """Number of singular values ``> max(atol, rtol * smax)`` (int64); ``tol``
    is PyTorch's legacy absolute tolerance."""
    _check_tensor(A, "linalg.matrix_rank", "A", 1)
    a = A._data
    if a.ndim < 2:
        raise RuntimeError("linalg.matrix_rank: The input tensor input must have at least 2 dimensions.")
    if a.dtype.kind != "f" or a.dtype.itemsize < 4:
        raise RuntimeError("This function doesn't handle types other than float and double")
    if tol is not None:
        if atol is not None or rtol is not None:
            raise RuntimeError("linalg.matrix_rank: tol cannot be given together with atol or rtol")
        atol, rtol = tol, 0.0
    xp = xp_of(a)
    if a.size == 0:
        return _out(_const(xp.zeros(a.shape[:-2], np.int64)), out)
    if hermitian:
        try:
            S = xp.abs(xp.linalg.eigvalsh(a))
        except np.linalg.LinAlgError:
            raise _converge_error("linalg.matrix_rank", "eigenvalues") from None
        smax = S.max(-1, keepdims=True)
    else:
        S = _lapack_svd(a, False, compute_uv=False)
        smax = S[..., :1]
    tolv = _tolerances(a, smax, atol, rtol, None, "linalg.matrix_rank")
    return _out(_const((tolv < S).sum(-1).astype(np.int64)), out)


# --- matrix exponential -------------------------------------------------------------------

_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0, 129060195264000.0,
           10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


def _expm(xp, a):
    """Batched matrix exponential: scaling and squaring with the degree-13
    Pade approximant (Higham 2005), computed in float64."""
    dt = a.dtype
    A = a.astype(np.complex128 if dt.kind == "c" else np.float64)
    n = A.shape[-1]
    if A.size == 0:
        return A.astype(dt)
    norm1 = xp.abs(A).sum(-2).max(-1)
    with _np_errstate(xp):
        s = xp.maximum(0, xp.ceil(xp.log2(norm1 / _THETA13)))
    s = xp.where(xp.isfinite(s), s, 0).astype(np.int64)
    A = A / (2.0 ** s)[..., None, None]
    b = _PADE13
    eye = xp.eye(n)
    A2 = A @ A
    A4 = A2 @ A2
    A6 = A4 @ A2
    U = A @ (A6 @ (b[13] * A6 + b[11] * A4 + b[9] * A2) + b[7] * A6 + b[5] * A4 + b[3] * A2 + b[1] * eye)
    V = A6 @ (b[12] * A6 + b[10] * A4 + b[8] * A2) + b[6] * A6 + b[4] * A4 + b[2] * A2 + b[0] * eye
    R = xp.linalg.solve(V - U, V + U)
    smax = int(s.max()) if s.size else 0
    for i in range(smax):
        R = xp.where((s > i)[..., None, None], R @ R, R)
    return R.astype(dt)


class LinalgMatrixExp(Function):
    _array_forward = True

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return _expm(xp_of(a), a)

    @staticmethod
    def backward(ctx, gy):
        a, = ctx.saved_tensors
        from ..join import cat

        n = a._data.shape[-1]
        at = a.mT
        z = _const(xp_of(a._data).zeros(a._data.shape, a._data.dtype))
        # d/dA <G, exp(A)> is the upper-right block of exp([[A^T, G], [0, A^T]])
        big = cat([cat([at, gy], -1), cat([z, at], -1)], -2)
        return linalg_matrix_exp(big)[..., :n, n:]


@declare_op(name="matrix_exp", namespace="linalg", autocast=False, method=False)
def linalg_matrix_exp(A: Tensor) -> Tensor:
    """Matrix exponential ``sum_k A^k / k!`` of square matrices."""
    a = _check_matrix(A, "linalg.matrix_exp")
    return _apply(LinalgMatrixExp, (A,), (a,))


@declare_op()
def matrix_exp(input: Tensor) -> Tensor:
    """``torch.matrix_exp``: alias of ``linalg.matrix_exp``."""
    return linalg_matrix_exp(input)


# --- vander, tensorinv, tensorsolve, diagonal -----------------------------------------------

class LinalgVander(Function):
    """Columns ``x**0, x**1, ...`` (``increasing``) or reversed."""
    _array_forward = True

    @staticmethod
    def forward(ctx, x, N, increasing):
        xp = xp_of(x)
        ctx.N, ctx.increasing = N, increasing
        out = xp.empty(x.shape + (N,), x.dtype)
        if N:
            out[..., 0] = 1
            if N > 1:
                out[..., 1:] = xp.cumprod(xp.broadcast_to(x[..., None], x.shape + (N - 1,)), axis=-1)
        if not increasing:
            out = out[..., ::-1].copy()
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, gy):
        V, = ctx.saved_tensors
        N = ctx.N
        if N < 2:
            return gy.sum(-1) * 0, None, None
        if not ctx.increasing:
            rev = np.arange(N - 1, -1, -1)
            gy, V = gy[..., rev], V[..., rev]
        k = _const(xp_of(V._data).arange(1, N, dtype=V._data.dtype))
        return (gy[..., 1:] * k * V[..., :N - 1]).sum(-1), None, None


def _vander(x, N, increasing, fn):
    _check_tensor(x, fn, "x", 1)
    if x._data.dtype.kind in "biu" and x._data.dtype != np.int64:
        x = x.to(D.int64)  # integer powers accumulate in int64, as in PyTorch
    if N is None:
        N = x._data.shape[-1] if x._data.ndim else 1
    if N < 0:
        raise RuntimeError("N must be non-negative.")
    return _apply(LinalgVander, (x, int(N), increasing), (x._data, int(N), increasing))


@declare_op(name="vander", namespace="linalg", autocast=False, method=False)
def linalg_vander(x: Tensor, *, N: int | None = None) -> Tensor:
    """``torch.linalg.vander``: ``(..., n) -> (..., n, N)`` with columns
    ``x**0 ... x**(N-1)`` (``N`` defaults to ``n``)."""
    _check_tensor(x, "linalg.vander", "x", 1)
    if x._data.dtype == np.bool_:
        raise RuntimeError("linalg.vander supports floating point, complex, and integer tensors, but got Bool")
    if (N if N is not None else (x._data.shape[-1] if x._data.ndim else 1)) <= 1:
        raise RuntimeError("N must be greater than 1.")
    return _vander(x, N, True, "linalg.vander")


@declare_op(method=False)
def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:
    """``torch.vander``: 1-D ``x``, decreasing powers unless ``increasing``."""
    _check_tensor(x, "vander", "x", 1)
    if x._data.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    return _vander(x, N, increasing, "vander")


@declare_op(name="tensorinv", namespace="linalg", autocast="linalg_tensorinv", method=False)
def linalg_tensorinv(A: Tensor, ind: int = 2, *, out: Tensor | None = None) -> Tensor:
    """Inverse of ``A`` viewed as a square matrix ``prod(shape[:ind]) x prod(shape[ind:])``."""
    _check_tensor(A, "linalg.tensorinv", "A", 1)
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    shp = A._data.shape
    rows, cols = int(np.prod(shp[:ind])), int(np.prod(shp[ind:]))
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {cols} != {rows}")
    return _out(linalg_inv(A.reshape(rows, cols)).reshape(shp[ind:] + shp[:ind]), out)


@declare_op(name="tensorsolve", namespace="linalg", autocast="linalg_tensorsolve", method=False)
def linalg_tensorsolve(A: Tensor, B: Tensor, dims: Sequence[int] | None = None, *, out: Tensor | None = None) -> Tensor:
    """``X`` with ``tensordot(A, X, X.ndim) == B``; ``dims`` are moved to the end of ``A`` first."""
    _check_tensor(A, "linalg.tensorsolve", "A", 1)
    _check_tensor(B, "linalg.tensorsolve", "B", 2)
    if dims is not None:
        nd = A._data.ndim
        dd = [_wrap_dim(d, nd) for d in dims]
        A = A.permute(tuple([i for i in range(nd) if i not in dd] + dd))
    shp = A._data.shape
    rest = shp[B._data.ndim:]
    n = int(np.prod(B._data.shape))
    m = int(np.prod(rest))
    if n != m:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {m} != {n}")
    return _out(linalg_solve(A.reshape(n, m), B.reshape(n)).reshape(rest), out)


@declare_op(name="diagonal", namespace="linalg", autocast=False, method=False)
def linalg_diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """``torch.linalg.diagonal``: ``A.diagonal(offset, dim1, dim2)`` (defaults
    pick the last two dims)."""
    from .. import shape

    return shape.diagonal(A, offset, dim1, dim2)


def _unsupported(name):
    def f(*args, **kwargs):
        raise NotImplementedError(f"fabric.linalg.{name} is not implemented (NumPy/CuPy expose no LDL/Householder "
                                  "factorization routines); use linalg.solve / inv / cholesky / qr / lu instead.")
    f.__name__ = name
    f.__doc__ = "Not implemented in fabric: raises NotImplementedError."
    return f


linalg_ldl_factor = _unsupported("ldl_factor")
linalg_ldl_factor_ex = _unsupported("ldl_factor_ex")
linalg_ldl_solve = _unsupported("ldl_solve")
linalg_householder_product = _unsupported("householder_product")


__all__ += declared_names(__name__)
