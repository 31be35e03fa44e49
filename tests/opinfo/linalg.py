"""OpInfo entries for linear algebra (the fabric/ops/linalg package, fabric.linalg).

Sample matrices are built to be well-conditioned (singular values in
[1, 2.5]), SPD for Cholesky, and with distinct, well-separated singular values
/ eigenvalues wherever a gradient of U, V or eigenvectors is checked.

Two test devices (``LinalgOpInfo.pre`` / ``.post``) handle what a plain call
cannot:

* ``pre``: symmetrize the input, ``(A + A^T) / 2``, before ops that read only
  one triangle (cholesky, eigh, eigvalsh, pinv(hermitian=True)).  Numerical
  gradients of the raw op see only that triangle while the analytical
  gradient is the symmetric one, as in PyTorch (whose OpInfos use the same
  wrapper).  On symmetric samples the forward is unchanged.
* ``post``: a gauge-invariant function of the outputs whose signs are not
  unique (singular vectors, eigenvectors): ``U * U``, ``Vh * Vh``,
  ``U diag(S^2) Vh``.  NumPy and PyTorch's LAPACKs may pick different signs,
  so these entries compare only gauge-invariant quantities.

Entries with a ``post`` (or whose PyTorch gradient is not symmetric, like
``pinv(hermitian=True)``) set ``torch_name=""`` for the generic torch test;
``tests/test_linalg.py`` compares them with PyTorch by applying the same
``pre``/``post`` on both sides.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import COMPLEX, FLOATS, INTS, OpInfo, SampleInput, make


@dataclass
class LinalgOpInfo(OpInfo):
    pre: Callable | None = None    # pre(x, *args) -> (x, *args), applied first (fabric and torch alike)
    post: Callable | None = None   # applied to the result
    torch_ref: Any = None          # torch function for the wrapped comparison (default: torch_name or name)

    def resolve(self, module):
        fn = super().resolve(module)
        return self.wrap(fn)

    def wrap(self, fn):
        if self.pre is None and self.post is None:
            return fn
        pre, post = self.pre, self.post

        def wrapped(x, *args, **kwargs):
            if pre is not None:
                x, *args = pre(x, *args)
            r = fn(x, *args, **kwargs)
            return post(r) if post is not None else r
        return wrapped


# --- matrices ----------------------------------------------------------------------------

def _orth(rng, n, batch=()):
    q, r = np.linalg.qr(rng.standard_normal(batch + (n, n)))
    return q * np.sign(np.diagonal(r, axis1=-2, axis2=-1))[..., None, :]


def _spectrum(rng, k, low=1.0, high=2.5, batch=()):
    """Distinct, well-separated values in [low, high], shuffled."""
    base = np.linspace(low, high, k) if k > 1 else np.array([(low + high) / 2])
    return np.stack([rng.permutation(base) for _ in range(int(np.prod(batch)))]).reshape(batch + (k,)) \
        + rng.uniform(-0.02, 0.02, batch + (k,))


def wellcond(rng, shape, dtype, low=1.0, high=2.5):
    """A (batch of) matrices with distinct singular values in [low, high]."""
    *batch, m, n = shape
    batch = tuple(batch)
    k = min(m, n)
    if k == 0:
        return np.zeros(shape, dtype)
    s = _spectrum(rng, k, low, high, batch)
    u = _orth(rng, m, batch)[..., :k]
    v = _orth(rng, n, batch)[..., :k]
    return np.asarray((u * s[..., None, :]) @ np.swapaxes(v, -1, -2), dtype=dtype)


def symmetric(rng, shape, dtype, low=-2.0, high=2.0):
    """Symmetric matrices with distinct eigenvalues (at least 0.3 apart)."""
    *batch, n, _ = shape
    batch = tuple(batch)
    q = _orth(rng, n, batch)
    lam = _spectrum(rng, n, low, high, batch)
    a = (q * lam[..., None, :]) @ np.swapaxes(q, -1, -2)
    return np.asarray((a + np.swapaxes(a, -1, -2)) / 2, dtype=dtype)


def spd(rng, shape, dtype):
    return symmetric(rng, shape, dtype, 1.0, 3.0)


def triangular(rng, shape, dtype, upper):
    a = rng.uniform(-0.5, 0.5, shape) + 2.0 * np.eye(shape[-1])
    a = np.triu(a) if upper else np.tril(a)
    # the other triangle is ignored by the op: fill it with noise to prove it
    noise = rng.uniform(-1, 1, shape)
    a = a + (np.tril(noise, -1) if upper else np.triu(noise, 1))
    return np.asarray(a, dtype=dtype)


def nc(a):
    """The same values in a transposed (non-contiguous) layout."""
    a = np.asarray(a)
    if a.ndim < 2:
        b = np.empty(2 * a.size, a.dtype)
        b[::2] = a.reshape(-1)
        return b[::2].reshape(a.shape)
    return np.swapaxes(np.ascontiguousarray(np.swapaxes(a, -1, -2)), -1, -2)


def sym(A, *args):
    """pre: symmetrize the input matrix."""
    return ((A + A.mT) / 2, *args)


def tril_arg0(B, L, *args):
    """pre: keep only the lower triangle of the factor (first argument)."""
    return (B, L.tril(), *args)


def tril_input(L, *args):
    return (L.tril(), *args)


def triu_arg0(B, U, *args):
    return (B, U.triu(), *args)


def triu_input(U, *args):
    return (U.triu(), *args)


# --- NumPy references ----------------------------------------------------------------

def _int_or_float_matmul(a, b):
    return np.matmul(a, b)


def _np_vector_norm(x, ord=2, dim=None, keepdim=False):
    dims = tuple(range(x.ndim)) if dim is None else ((dim,) if isinstance(dim, int) else tuple(dim))
    a = np.abs(x)
    with np.errstate(divide="ignore"):
        if ord == np.inf:
            r = a.max(axis=dims, keepdims=keepdim)
        elif ord == -np.inf:
            r = a.min(axis=dims, keepdims=keepdim)
        elif ord == 0:
            r = (a != 0).sum(axis=dims, keepdims=keepdim)
        else:
            r = (a ** ord).sum(axis=dims, keepdims=keepdim) ** (1.0 / ord)
    return np.asarray(r, dtype=x.dtype)


def _np_matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False):
    r = np.linalg.norm(np.moveaxis(A, dim, (-2, -1)), ord=ord, axis=(-2, -1))
    if keepdim:
        for d in sorted(x % A.ndim for x in dim):
            r = np.expand_dims(r, d)
    return np.asarray(r, dtype=A.dtype)


def _np_norm(A, ord=None, dim=None, keepdim=False):
    if isinstance(ord, str) or (dim is not None and not isinstance(dim, int) and len(dim) == 2):
        return _np_matrix_norm(A, "fro" if ord is None else ord, dim if dim is not None else (-2, -1), keepdim)
    if ord is not None and dim is None and A.ndim == 2:
        return _np_matrix_norm(A, ord, (-2, -1), keepdim)
    return _np_vector_norm(A, 2 if ord is None else ord, dim, keepdim)


def _np_solve(A, B, left=True):
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and B.shape == A.shape[:-1])
    if not left:
        return np.swapaxes(_np_solve(np.swapaxes(A, -1, -2), np.swapaxes(B, -1, -2)), -1, -2)
    Bm = B[..., None] if vector else B
    batch = np.broadcast_shapes(A.shape[:-2], Bm.shape[:-2])
    X = np.linalg.solve(np.broadcast_to(A, batch + A.shape[-2:]), np.broadcast_to(Bm, batch + Bm.shape[-2:]))
    return X[..., 0] if vector else X


def _np_solve_triangular(A, B, upper, left=True, unitriangular=False):
    T = np.triu(A) if upper else np.tril(A)
    if unitriangular:
        T = T - T * np.eye(A.shape[-1]) + np.eye(A.shape[-1])
    return _np_solve(T, B, left=left).astype(A.dtype)


def _np_pinv(A, rcond=None, hermitian=False, atol=None, rtol=None):
    if rtol is None:
        rtol = rcond
    if rtol is None:
        rtol = 0.0 if atol is not None and atol > 0 else np.finfo(A.dtype).eps * max(A.shape[-2:])
    u, s, vh = np.linalg.svd(A, full_matrices=False)
    tol = np.maximum(atol or 0.0, rtol * s[..., :1])
    inv = np.where(s > tol, 1 / np.where(s > 0, s, 1), 0)
    return np.asarray((np.swapaxes(vh, -1, -2) * inv[..., None, :]) @ np.swapaxes(u, -1, -2), A.dtype)


def _np_lstsq(A, B, rcond=None, driver=None):
    vector = B.ndim == A.ndim - 1
    Bm = B[..., None] if vector else B
    X = _np_pinv(np.broadcast_to(A, np.broadcast_shapes(A.shape[:-2], Bm.shape[:-2]) + A.shape[-2:])) @ Bm
    return (X[..., 0] if vector else X,)


def _np_matrix_power(A, n):
    if n < 0:
        return np.linalg.matrix_power(np.linalg.inv(A), -n).astype(A.dtype)
    return np.linalg.matrix_power(A, n).astype(A.dtype)


def _np_vander_increasing(x, N=None):
    N = x.shape[-1] if N is None else N
    return np.asarray(x[..., None] ** np.arange(N), dtype=np.int64 if x.dtype.kind in "biu" else x.dtype)


def _np_cdist(x1, x2, p=2.0, compute_mode=None):
    d = np.abs(x1[..., :, None, :] - x2[..., None, :, :])
    if p == 0:
        r = (d != 0).sum(-1)
    elif p == np.inf:
        r = d.max(-1)
    else:
        r = (d ** p).sum(-1) ** (1 / p)
    return np.asarray(r, x1.dtype)


def _np_cross(a, b, dim=-1):
    return np.cross(a, b, axis=dim).astype(np.result_type(a, b))


def _np_tensordot(a, b, dims=2):
    return np.tensordot(a, b, dims)


def _np_kron(a, b):
    return np.kron(a, b)


def _np_slogdet(A):
    s, l = np.linalg.slogdet(A)
    return (s.astype(A.dtype), l.astype(A.dtype))


def _np_logdet(A):
    s, l = np.linalg.slogdet(A)
    return np.where(s < 0, np.nan, l).astype(A.dtype)


def _np_addmm(inp, m1, m2, beta=1, alpha=1):
    return (beta * inp + alpha * (m1 @ m2)).astype(inp.dtype)


def _np_addbmm(inp, b1, b2, beta=1, alpha=1):
    return (beta * inp + alpha * (b1 @ b2).sum(0)).astype(inp.dtype)


def _np_addr(inp, v1, v2, beta=1, alpha=1):
    return (beta * inp + alpha * np.outer(v1, v2)).astype(inp.dtype)


def _np_multi_dot(ms):
    return np.linalg.multi_dot(ms)


def _np_svd_S(A, full_matrices=True):
    return np.linalg.svd(A, compute_uv=False)


def _np_qr(A, mode="reduced"):
    return np.linalg.qr(A, mode=mode)


def _np_eigh(A, UPLO="L"):
    return np.linalg.eigh(A, UPLO=UPLO)


def _np_cholesky(A, upper=False):
    L = np.linalg.cholesky(A)
    return np.swapaxes(L, -1, -2) if upper else L


def _np_tensorinv(A, ind=2):
    return np.linalg.tensorinv(A, ind)


def _np_tensorsolve(A, B, dims=None):
    return np.linalg.tensorsolve(A, B, dims)


def _np_matrix_rank(A, tol=None, hermitian=False, atol=None, rtol=None):
    s = np.abs(np.linalg.eigvalsh(A)) if hermitian else np.linalg.svd(A, compute_uv=False)
    if tol is not None:
        atol, rtol = tol, 0.0
    if rtol is None:
        rtol = 0.0 if atol is not None and atol > 0 else np.finfo(A.dtype).eps * max(A.shape[-2:])
    return (s > np.maximum(atol or 0.0, rtol * s.max(-1, keepdims=True))).sum(-1).astype(np.int64)


# --- sample generators ---------------------------------------------------------------------

def _mm_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype)
    return [
        SampleInput(m(3, 4), (m(4, 2),)),
        SampleInput(make(rng, (4, 3), dtype, noncontig=True), (make(rng, (3, 2), dtype, noncontig=True),),
                    name="noncontig"),
        SampleInput(m(0, 3), (m(3, 2),), name="empty"),
        SampleInput(m(2, 0), (m(0, 3),), name="empty_inner"),
    ]


def _bmm_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype)
    return [
        SampleInput(m(2, 3, 4), (m(2, 4, 2),)),
        SampleInput(make(rng, (2, 4, 3), dtype, noncontig=True), (m(2, 3, 2),), name="noncontig"),
        SampleInput(m(0, 3, 4), (m(0, 4, 2),), name="empty"),
    ]


def _mv_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype)
    return [
        SampleInput(m(3, 4), (m(4),)),
        SampleInput(make(rng, (3, 4), dtype, noncontig=True), (make(rng, (4,), dtype, noncontig=True),),
                    name="noncontig"),
        SampleInput(m(0, 4), (m(4),), name="empty"),
    ]


def _dot_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype)
    return [
        SampleInput(m(5), (m(5),)),
        SampleInput(make(rng, (4,), dtype, noncontig=True), (m(4),), name="noncontig"),
        SampleInput(m(0), (m(0),), name="empty"),
    ]


def _outer_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype)
    return [
        SampleInput(m(3), (m(4),)),
        SampleInput(make(rng, (4,), dtype, noncontig=True), (m(2),), name="noncontig"),
        SampleInput(m(0), (m(3),), name="empty"),
    ]


def _inner_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype)
    return [
        SampleInput(m(2, 3), (m(4, 3),)),
        SampleInput(m(3), (m(3),), name="1d"),
        SampleInput(m(2, 3), (m(),), name="0d"),
        SampleInput(m(2, 2, 3), (m(3),), name="3d"),
    ]


def _addmm_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype)
    return [
        SampleInput(m(2, 3), (m(2, 4), m(4, 3))),
        SampleInput(m(3), (m(2, 4), m(4, 3)), {"beta": 2, "alpha": 3}, name="broadcast"),
        SampleInput(m(2, 3), (m(2, 4), m(4, 3)), {"beta": 0}, name="beta0"),
        SampleInput(make(rng, (3, 2), dtype, noncontig=True), (m(3, 4), make(rng, (4, 2), dtype, noncontig=True)),
                    name="noncontig"),
    ]


def _addmv_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype)
    return [
        SampleInput(m(2), (m(2, 4), m(4))),
        SampleInput(m(), (m(2, 4), m(4)), {"beta": 2, "alpha": 3}, name="broadcast"),
        SampleInput(m(2), (make(rng, (2, 4), dtype, noncontig=True), m(4)), {"beta": 0}, name="beta0"),
    ]


def _addbmm_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype)
    return [
        SampleInput(m(2, 3), (m(4, 2, 5), m(4, 5, 3))),
        SampleInput(m(3), (m(2, 2, 5), m(2, 5, 3)), {"beta": 2, "alpha": 3}, name="broadcast"),
    ]


def _baddbmm_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype)
    return [
        SampleInput(m(4, 2, 3), (m(4, 2, 5), m(4, 5, 3))),
        SampleInput(m(2, 3), (m(4, 2, 5), m(4, 5, 3)), {"beta": 2, "alpha": 3}, name="broadcast"),
        SampleInput(m(4, 2, 3), (m(4, 2, 5), m(4, 5, 3)), {"beta": 0}, name="beta0"),
    ]


def _addr_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype)
    return [
        SampleInput(m(2, 3), (m(2), m(3))),
        SampleInput(m(3), (m(2), m(3)), {"beta": 2, "alpha": 3}, name="broadcast"),
    ]


def _einsum_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype)
    return [
        SampleInput("ij,jk->ik", (m(2, 3), m(3, 4)), name="mm"),
        SampleInput("ii->i", (m(3, 3),), name="diagonal"),
        SampleInput("ii", (m(3, 3),), name="trace"),
        SampleInput("...ij,...jk", (m(2, 1, 3, 4), m(5, 4, 2)), name="ellipsis_broadcast"),
        SampleInput("bij,bjk->bik", (m(2, 3, 4), make(rng, (2, 4, 3), dtype, noncontig=True)), name="bmm"),
        SampleInput("i,j->ij", (m(3), m(4)), name="outer"),
        SampleInput("ijk->kji", (m(2, 3, 4),), name="permute"),
        SampleInput("ij->", (m(2, 3),), name="sum"),
        # (PyTorch returns int64 for this contraction of integers: a quirk of its implementation)
        SampleInput("i,i->" if np.dtype(dtype).kind == "f" else "i,i->i", (m(1), m(3)), name="size1_broadcast"),
        SampleInput("ba", (m(3, 2),), name="implicit"),
        SampleInput("ij,jk,kl->il", (m(2, 3), m(3, 4), m(4, 2)), name="three"),
        SampleInput("iij->j", (m(3, 3, 2),), name="repeated_plus"),
        SampleInput("ij,ij->i", ([m(2, 3), m(2, 3)],), name="list_operands"),
        SampleInput("i,->i", (m(3), m()), name="scalar_operand"),
        SampleInput("ii->i", (m(0, 0),), name="empty"),
    ]


def _tensordot_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype)
    return [
        SampleInput(m(2, 3, 4), (m(3, 4, 5),)),
        SampleInput(m(2, 3), (m(3, 2),), {"dims": 1}),
        SampleInput(m(2, 3), (m(4,),), {"dims": 0}, name="outer"),
        SampleInput(m(2, 3, 4), (m(4, 2, 3),), {"dims": ([0, 2], [1, 0])}, name="lists"),
        SampleInput(m(2, 3), (m(3, 2),), {"dims": ([-1], [-2])}, name="negative"),
    ]


def _kron_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype)
    return [
        SampleInput(m(2, 3), (m(3, 2),)),
        SampleInput(m(2), (m(2, 3),), name="ndim_mismatch"),
        SampleInput(m(), (m(3),), name="0d"),
        SampleInput(make(rng, (3, 2), dtype, noncontig=True), (m(2, 2),), name="noncontig"),
    ]


def _trace_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype)
    return [SampleInput(m(3, 3)), SampleInput(m(3, 5), name="wide"), SampleInput(m(4, 2), name="tall"),
            SampleInput(make(rng, (3, 3), dtype, noncontig=True), name="noncontig"),
            SampleInput(m(0, 0), name="empty")]


def _cross_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype)
    return [
        SampleInput(m(4, 3), (m(4, 3),), {"dim": 1}),
        SampleInput(m(3, 2), (m(3, 2),), {"dim": 0}),
        SampleInput(m(2, 3), (m(1, 3),), {"dim": -1}, name="broadcast"),
    ]


def _linalg_cross_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype)
    return [
        SampleInput(m(4, 3), (m(4, 3),)),
        SampleInput(m(3, 2), (m(3, 2),), {"dim": 0}),
        SampleInput(m(2, 1, 3), (m(1, 4, 3),), name="broadcast"),
    ]


def _cdist_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype)
    return [
        SampleInput(m(3, 2), (m(4, 2),)),
        SampleInput(m(3, 2), (m(4, 2),), {"p": 1.0}, name="p1"),
        SampleInput(m(3, 2), (m(4, 2),), {"p": float("inf")}, name="pinf"),
        SampleInput(m(2, 1, 3, 2), (m(3, 4, 2),), {"p": 3.0}, name="p3_batch"),
        SampleInput(m(3, 2), (m(2, 2),), {"p": 0.5}, name="p05"),
        SampleInput(m(26, 2), (m(3, 2),), name="mm_path"),
        SampleInput(m(3, 2), (m(4, 2),), {"p": 0.0}, name="p0"),
        SampleInput(m(3, 2), (m(4, 2),), {"compute_mode": "use_mm_for_euclid_dist"}, name="force_mm"),
    ]


def _multi_dot_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype)
    return [
        SampleInput([m(2, 3), m(3, 4)]),
        SampleInput([m(3), m(3, 4), m(4, 2), m(2)], name="vector_ends"),
        SampleInput([m(5, 2), m(2, 6), m(6, 3)], name="three"),
    ]


def _chain_matmul_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype)
    return [SampleInput(m(2, 3), (m(3, 4), m(4, 2)))]


def _vecdot_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype)
    return [SampleInput(m(2, 3), (m(2, 3),)), SampleInput(m(2, 3), (m(3),), name="broadcast"),
            SampleInput(m(2, 3), (m(2, 1),), {"dim": 0}, name="dim0")]


def _vector_norm_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype, away_from=0.0)
    return [
        SampleInput(m(3, 4)),
        SampleInput(m(3, 4), (1.0,), {"dim": 1}),
        SampleInput(m(3, 4), (float("inf"),), {"dim": -1, "keepdim": True}, name="inf"),
        SampleInput(m(2, 3, 2), (-float("inf"),), {"dim": (0, 2)}, name="-inf"),
        SampleInput(m(3, 4), (3.0,), {"dim": 0}, name="p3"),
        SampleInput(m(3, 4), (0.5,), name="p05"),
        SampleInput(m(3, 4), (1.5,), {"dim": 1}, name="p15"),
        SampleInput(m(3, 4), (-1.0,), {"dim": 1}, name="p-1"),
        SampleInput(m(3, 4), (0.0,), name="p0"),
        SampleInput(m(), name="0d"),
        SampleInput(make(rng, (4, 3), dtype, noncontig=True), (2,), {"dim": 0}, name="noncontig"),
        SampleInput(m(0, 3), (2,), {"dim": 1}, name="empty"),
    ]


def _matrix_norm_samples(dtype, rng):
    return [
        SampleInput(wellcond(rng, (3, 4), dtype)),
        SampleInput(wellcond(rng, (2, 3, 3), dtype), ("nuc",), name="nuc"),
        SampleInput(wellcond(rng, (4, 3), dtype), (2,), name="2"),
        SampleInput(wellcond(rng, (3, 4), dtype), (-2,), name="-2"),
        SampleInput(make(rng, (3, 4), dtype, away_from=0.0), (1,), name="1"),
        SampleInput(make(rng, (3, 4), dtype, away_from=0.0), (-1,), {"keepdim": True}, name="-1"),
        SampleInput(make(rng, (3, 4), dtype, away_from=0.0), (float("inf"),), name="inf"),
        SampleInput(make(rng, (2, 3, 4), dtype, away_from=0.0), (-float("inf"),), {"dim": (0, 2)}, name="-inf"),
        SampleInput(wellcond(rng, (3, 2, 4), dtype).transpose(1, 0, 2).copy(), ("nuc",),
                    {"dim": (2, 0), "keepdim": True}, name="nuc_dims"),
        SampleInput(nc(wellcond(rng, (3, 3), dtype)), ("fro",), name="noncontig"),
    ]


def _norm_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype, away_from=0.0)
    return [
        SampleInput(m(2, 3, 4)),
        SampleInput(m(4), (3,), name="vector_ord"),
        SampleInput(wellcond(rng, (3, 4), dtype), (2,), name="matrix_ord"),
        SampleInput(m(3, 4), ("fro",), name="fro"),
        SampleInput(m(2, 3, 4), (1,), {"dim": 1}, name="dim_int"),
        SampleInput(wellcond(rng, (2, 3, 3), dtype), ("nuc",), {"dim": (1, 2)}, name="nuc"),
        SampleInput(m(2, 3, 4), (None, (0, 2), True), name="fro_dims"),
    ]


def _cond_samples(dtype, rng):
    return [SampleInput(wellcond(rng, (3, 3), dtype)), SampleInput(wellcond(rng, (2, 3, 4), dtype), name="batch"),
            SampleInput(wellcond(rng, (3, 3), dtype), (-2,), name="-2")]


def _cond_norm_samples(dtype, rng):
    return [SampleInput(wellcond(rng, (3, 3), dtype), ("fro",), name="fro"),
            SampleInput(wellcond(rng, (2, 3, 3), dtype), (1,), name="1"),
            SampleInput(wellcond(rng, (3, 3), dtype), (float("inf"),), name="inf"),
            SampleInput(wellcond(rng, (3, 3), dtype), ("nuc",), name="nuc")]


def _square_samples(dtype, rng):
    return [
        SampleInput(wellcond(rng, (3, 3), dtype)),
        SampleInput(wellcond(rng, (2, 3, 3), dtype), name="batch"),
        SampleInput(nc(wellcond(rng, (3, 3), dtype)), name="noncontig"),
        SampleInput(wellcond(rng, (1, 1), dtype), name="1x1"),
        SampleInput(np.zeros((0, 3, 3), dtype), name="empty_batch"),
        SampleInput(np.zeros((0, 0), dtype), name="0x0"),
    ]


def _posdet_samples(dtype, rng):
    return [SampleInput(spd(rng, (3, 3), dtype)), SampleInput(spd(rng, (2, 3, 3), dtype), name="batch"),
            SampleInput(-spd(rng, (3, 3), dtype), name="negative_det")]


def _solve_samples(dtype, rng):
    A = lambda *s: wellcond(rng, s, dtype)
    m = lambda *s: make(rng, s, dtype)
    return [
        SampleInput(A(3, 3), (m(3, 2),)),
        SampleInput(A(3, 3), (m(3),), name="vector"),
        SampleInput(A(2, 3, 3), (m(2, 3),), name="batched_vector"),
        SampleInput(A(3, 3), (m(2, 3, 2),), name="broadcast_A"),
        SampleInput(A(2, 1, 3, 3), (m(3, 3, 1),), name="broadcast_both"),
        SampleInput(A(3, 3), (m(2, 3),), {"left": False}, name="right"),
        SampleInput(nc(A(3, 3)), (nc(m(3, 2)),), name="noncontig"),
    ]


def _solve_triangular_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype)
    return [
        SampleInput(triangular(rng, (3, 3), dtype, True), (m(3, 2),), {"upper": True}),
        SampleInput(triangular(rng, (2, 3, 3), dtype, False), (m(2, 3, 2),), {"upper": False}, name="lower_batch"),
        SampleInput(triangular(rng, (3, 3), dtype, True), (m(2, 3),), {"upper": True, "left": False}, name="right"),
        SampleInput(triangular(rng, (3, 3), dtype, False), (m(3, 1),), {"upper": False, "unitriangular": True},
                    name="unit"),
        SampleInput(triangular(rng, (3, 3), dtype, True), (m(2, 2, 3),),
                    {"upper": True, "left": False, "unitriangular": True}, name="right_unit_broadcast"),
    ]


def _spd_samples(dtype, rng):
    return [
        SampleInput(spd(rng, (3, 3), dtype)),
        SampleInput(spd(rng, (2, 3, 3), dtype), name="batch"),
        SampleInput(spd(rng, (3, 3), dtype), kwargs={"upper": True}, name="upper"),
        SampleInput(nc(spd(rng, (4, 4), dtype)), name="noncontig"),
    ]


def _spd_samples_noupper(dtype, rng):
    return [SampleInput(spd(rng, (3, 3), dtype)), SampleInput(spd(rng, (2, 3, 3), dtype), name="batch")]


def _chol_factor(rng, shape, dtype, upper=False):
    L = np.linalg.cholesky(spd(rng, shape, np.float64))
    return np.ascontiguousarray(np.swapaxes(L, -1, -2) if upper else L).astype(dtype)


def _np_cholesky_solve(B, L, upper=False):
    T = np.triu(L) if upper else np.tril(L)
    A = np.swapaxes(T, -1, -2) @ T if upper else T @ np.swapaxes(T, -1, -2)
    batch = np.broadcast_shapes(A.shape[:-2], B.shape[:-2])
    return np.linalg.solve(np.broadcast_to(A, batch + A.shape[-2:]), np.broadcast_to(B, batch + B.shape[-2:])
                           ).astype(B.dtype)


def _np_cholesky_inverse(L, upper=False):
    T = np.triu(L) if upper else np.tril(L)
    return np.linalg.inv(np.swapaxes(T, -1, -2) @ T if upper else T @ np.swapaxes(T, -1, -2)).astype(L.dtype)


def _cholesky_solve_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype)
    return [  # grad=False: PyTorch's factor gradient is not the numerical one (see OPS)
        SampleInput(m(3, 2), (_chol_factor(rng, (3, 3), dtype),), grad=False),
        SampleInput(m(3, 2), (_chol_factor(rng, (3, 3), dtype, True),), {"upper": True}, name="upper", grad=False),
        SampleInput(m(2, 3, 1), (_chol_factor(rng, (3, 3), dtype),), name="broadcast", grad=False),
    ]


def _cholesky_solve_lower_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype)
    return [SampleInput(m(3, 2), (_chol_factor(rng, (3, 3), dtype),)),
            SampleInput(m(2, 3, 1), (_chol_factor(rng, (2, 3, 3), dtype),), name="batch")]


def _cholesky_solve_upper_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype)
    return [SampleInput(m(3, 2), (_chol_factor(rng, (3, 3), dtype, True),), {"upper": True})]


def _cholesky_inverse_samples(dtype, rng):
    return [SampleInput(_chol_factor(rng, (3, 3), dtype), grad=False),
            SampleInput(_chol_factor(rng, (3, 3), dtype, True), (True,), name="upper", grad=False),
            SampleInput(_chol_factor(rng, (2, 3, 3), dtype), name="batch", grad=False)]


def _cholesky_inverse_lower_samples(dtype, rng):
    return [SampleInput(_chol_factor(rng, (3, 3), dtype)), SampleInput(_chol_factor(rng, (2, 3, 3), dtype),
                                                                      name="batch")]


def _cholesky_inverse_upper_samples(dtype, rng):
    return [SampleInput(_chol_factor(rng, (3, 3), dtype, True), (True,))]


def _qr_samples(dtype, rng):
    return [
        SampleInput(wellcond(rng, (4, 3), dtype), name="tall"),
        SampleInput(wellcond(rng, (3, 3), dtype), name="square"),
        SampleInput(wellcond(rng, (3, 4), dtype), name="wide"),
        SampleInput(wellcond(rng, (2, 4, 3), dtype), name="batch"),
        SampleInput(wellcond(rng, (3, 4), dtype), ("complete",), name="complete_wide"),
        SampleInput(nc(wellcond(rng, (4, 3), dtype)), name="noncontig"),
    ]


def _qr_r_samples(dtype, rng):
    return [SampleInput(wellcond(rng, (4, 3), dtype), ("r",), name="r", grad=False),
            SampleInput(wellcond(rng, (4, 3), dtype), ("complete",), name="complete_tall", grad=False)]


def _svd_samples(dtype, rng):
    return [
        SampleInput(wellcond(rng, (3, 3), dtype), (False,)),
        SampleInput(wellcond(rng, (4, 3), dtype), (False,), name="tall"),
        SampleInput(wellcond(rng, (3, 4), dtype), (False,), name="wide"),
        SampleInput(wellcond(rng, (2, 4, 3), dtype), name="batch_full"),
        SampleInput(wellcond(rng, (3, 5), dtype), name="wide_full"),
        SampleInput(nc(wellcond(rng, (3, 3), dtype)), name="noncontig"),
    ]


def _svdvals_samples(dtype, rng):
    return [SampleInput(wellcond(rng, (3, 3), dtype)), SampleInput(wellcond(rng, (2, 4, 3), dtype), name="batch"),
            SampleInput(wellcond(rng, (3, 5), dtype), name="wide")]


def _torch_svd_samples(dtype, rng):
    return [SampleInput(wellcond(rng, (4, 3), dtype)), SampleInput(wellcond(rng, (3, 4), dtype), (False,),
                                                                    name="some_false")]


def _sym_samples(dtype, rng):
    return [
        SampleInput(symmetric(rng, (3, 3), dtype)),
        SampleInput(symmetric(rng, (2, 3, 3), dtype), name="batch"),
        SampleInput(symmetric(rng, (3, 3), dtype), ("U",), name="upper"),
        SampleInput(nc(symmetric(rng, (4, 4), dtype)), name="noncontig"),
    ]


def _pinv_samples(dtype, rng):
    return [
        SampleInput(wellcond(rng, (3, 3), dtype)),
        SampleInput(wellcond(rng, (4, 3), dtype), name="tall"),
        SampleInput(wellcond(rng, (2, 3, 4), dtype), name="wide_batch"),
        SampleInput(wellcond(rng, (3, 4), dtype), kwargs={"rtol": 0.1}, name="rtol"),
        SampleInput(wellcond(rng, (4, 3), dtype), kwargs={"atol": 0.5}, name="atol"),
    ]


def _pinv_hermitian_samples(dtype, rng):
    return [SampleInput(symmetric(rng, (3, 3), dtype), kwargs={"hermitian": True}),
            SampleInput(symmetric(rng, (2, 3, 3), dtype), kwargs={"hermitian": True}, name="batch")]


def _lstsq_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype)
    return [
        SampleInput(wellcond(rng, (4, 3), dtype), (m(4, 2),), name="tall"),
        SampleInput(wellcond(rng, (3, 3), dtype), (m(3, 2),), name="square"),
        SampleInput(wellcond(rng, (2, 5), dtype), (m(2, 1),), name="wide"),
        SampleInput(wellcond(rng, (4, 3), dtype), (m(4),), name="vector"),
        SampleInput(wellcond(rng, (2, 4, 3), dtype), (m(1, 4, 2),), name="broadcast"),
        SampleInput(wellcond(rng, (2, 4, 3), dtype), (m(2, 4),), name="batched_vector"),
        SampleInput(wellcond(rng, (4, 3), dtype), (m(4, 2),), {"driver": "gelsd"}, name="gelsd"),
    ]


def _matrix_power_samples(dtype, rng):
    A = lambda *s: wellcond(rng, s, dtype, 0.8, 1.2)
    return [
        SampleInput(A(3, 3), (3,)),
        SampleInput(A(2, 3, 3), (2,), name="batch"),
        SampleInput(A(3, 3), (0,), name="zero"),
        SampleInput(A(3, 3), (1,), name="one"),
        SampleInput(A(3, 3), (-1,), name="inverse"),
        SampleInput(A(2, 3, 3), (-2,), name="negative"),
        SampleInput(A(3, 3), (5,), name="five"),
    ]


def _int_matrix_power_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype)
    return [SampleInput(m(3, 3), (3,)), SampleInput(m(2, 3, 3), (0,), name="zero")]


def _matrix_rank_samples(dtype, rng):
    a = wellcond(rng, (4, 3), dtype)
    deficient = a.copy()
    deficient[:, 2] = deficient[:, 0] + deficient[:, 1]
    return [
        SampleInput(a),
        SampleInput(deficient, name="deficient"),
        SampleInput(wellcond(rng, (2, 3, 5), dtype), name="batch"),
        SampleInput(a, kwargs={"atol": 1.5}, name="atol"),
        SampleInput(a, kwargs={"rtol": 0.6}, name="rtol"),
        SampleInput(symmetric(rng, (3, 3), dtype), kwargs={"hermitian": True}, name="hermitian"),
    ]


def _matrix_exp_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype, low=-1, high=1)
    return [SampleInput(m(3, 3)), SampleInput(m(2, 2, 2), name="batch"), SampleInput(m(3, 3) * 4, name="scaled"),
            SampleInput(np.zeros((0, 2, 2), dtype), name="empty")]


def _vander_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype)
    return [SampleInput(m(4)), SampleInput(m(2, 3), kwargs={"N": 4}, name="batch_N")]


def _torch_vander_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype)
    return [SampleInput(m(4)), SampleInput(m(3), (5,), name="N"), SampleInput(m(3), (None, True), name="increasing")]


def _tensorinv_samples(dtype, rng):
    return [SampleInput(wellcond(rng, (6, 6), dtype).reshape(2, 3, 6)),
            SampleInput(wellcond(rng, (4, 4), dtype).reshape(4, 2, 2), (1,), name="ind1")]


def _tensorsolve_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype)
    return [SampleInput(wellcond(rng, (6, 6), dtype).reshape(2, 3, 6), (m(2, 3),)),
            SampleInput(wellcond(rng, (6, 6), dtype).reshape(6, 2, 3).transpose(1, 0, 2).copy(), (m(6),),
                        {"dims": (0,)}, name="dims")]


def _diagonal_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype)
    return [SampleInput(m(3, 4)), SampleInput(m(2, 3, 3), kwargs={"offset": 1}, name="offset"),
            SampleInput(m(2, 3, 4), kwargs={"dim1": 0, "dim2": 2}, name="dims")]


def _square_ex_samples(dtype, rng):
    return [SampleInput(wellcond(rng, (3, 3), dtype)), SampleInput(wellcond(rng, (2, 3, 3), dtype), name="batch")]


def _solve_ex_samples(dtype, rng):
    m = lambda *s: make(rng, s, dtype)
    return [SampleInput(wellcond(rng, (3, 3), dtype), (m(3, 2),)),
            SampleInput(wellcond(rng, (2, 3, 3), dtype), (m(2, 3),), name="batched_vector")]


# --- gauge-invariant post-processing (outputs whose signs are not unique) ------------------

def _svd_U2(r):
    k = r[1].shape[-1]
    return r[0][..., :k] * r[0][..., :k]


def _svd_Vh2(r):
    k = r[1].shape[-1]
    return r[2][..., :k, :] * r[2][..., :k, :]


def _svd_recon(r):
    k = r[1].shape[-1]
    return (r[0][..., :k] * (r[1] ** 2).unsqueeze(-2)) @ r[2][..., :k, :]


def _svd_V2(r):  # torch.svd returns V
    k = r[1].shape[-1]
    return r[2][..., :k] * r[2][..., :k]


def _eigh_V2(r):
    return r[1] * r[1]


def _eigh_recon(r):
    return (r[1] * (r[0] ** 3).unsqueeze(-2)) @ r[1].mT


def _svd_ref(post):
    def ref(A, full_matrices=True):
        u, s, vh = np.linalg.svd(A, full_matrices=full_matrices)
        k = s.shape[-1]
        if post is _svd_U2:
            return u[..., :k] ** 2
        if post is _svd_Vh2:
            return vh[..., :k, :] ** 2
        return (u[..., :k] * (s ** 2)[..., None, :]) @ vh[..., :k, :]
    return ref


def _torch_svd_ref(A, some=True):
    _u, s, vh = np.linalg.svd(A, full_matrices=not some)
    k = s.shape[-1]
    return np.swapaxes(vh, -1, -2)[..., :k] ** 2


def _eigh_ref(post):
    def ref(A, UPLO="L"):
        w, v = np.linalg.eigh(A, UPLO=UPLO)
        if post is _eigh_V2:
            return v * v
        return (v * (w ** 3)[..., None, :]) @ np.swapaxes(v, -1, -2)
    return ref


F64 = (np.float64,)

OPS = [
    # products
    LinalgOpInfo("mm", np.matmul, _mm_samples, dtypes=FLOATS + INTS, complex_dtypes=COMPLEX),
    LinalgOpInfo("bmm", np.matmul, _bmm_samples, dtypes=FLOATS + INTS, complex_dtypes=COMPLEX),
    LinalgOpInfo("mv", np.matmul, _mv_samples, dtypes=FLOATS + INTS, complex_dtypes=COMPLEX),
    LinalgOpInfo("dot", lambda a, b: np.asarray(np.dot(a, b), a.dtype), _dot_samples, dtypes=FLOATS + INTS, complex_dtypes=COMPLEX),
    LinalgOpInfo("vdot", lambda a, b: np.asarray(np.vdot(a, b), a.dtype), _dot_samples, dtypes=FLOATS + INTS, complex_dtypes=COMPLEX),
    LinalgOpInfo("outer", np.outer, _outer_samples, dtypes=FLOATS + INTS, complex_dtypes=COMPLEX),
    LinalgOpInfo("ger", np.outer, _outer_samples, dtypes=FLOATS),
    LinalgOpInfo("inner", np.inner, _inner_samples, dtypes=FLOATS + INTS, complex_dtypes=COMPLEX),
    LinalgOpInfo("addmm", _np_addmm, _addmm_samples, dtypes=FLOATS + INTS, inplace="addmm_", complex_dtypes=COMPLEX),
    LinalgOpInfo("addmv", _np_addmm, _addmv_samples, dtypes=FLOATS + INTS, inplace="addmv_", complex_dtypes=COMPLEX),
    LinalgOpInfo("addbmm", _np_addbmm, _addbmm_samples, dtypes=FLOATS + INTS, inplace="addbmm_", complex_dtypes=COMPLEX),
    LinalgOpInfo("baddbmm", _np_addmm, _baddbmm_samples, dtypes=FLOATS + INTS, inplace="baddbmm_", complex_dtypes=COMPLEX),
    LinalgOpInfo("addr", _np_addr, _addr_samples, dtypes=FLOATS + INTS, inplace="addr_"),
    LinalgOpInfo("einsum", lambda eq, *ops: np.einsum(eq, *(ops[0] if isinstance(ops[0], list) else ops)),
                 _einsum_samples, dtypes=FLOATS + INTS, method="",
                 notes="sublist format supported; integer contractions of several operands keep the input dtype "
                       "(PyTorch promotes some to int64 or raises)"),
    LinalgOpInfo("tensordot", _np_tensordot, _tensordot_samples, dtypes=FLOATS + INTS, method="", complex_dtypes=COMPLEX),
    LinalgOpInfo("kron", _np_kron, _kron_samples, dtypes=FLOATS + INTS, complex_dtypes=COMPLEX),
    LinalgOpInfo("trace", lambda a: np.asarray(np.trace(a), a.dtype), _trace_samples, dtypes=FLOATS + INTS,
                 check_dtype=True, complex_dtypes=COMPLEX),
    LinalgOpInfo("cross", _np_cross, _cross_samples, dtypes=FLOATS + INTS),
    LinalgOpInfo("linalg.cross", _np_cross, _linalg_cross_samples, dtypes=FLOATS + INTS),
    LinalgOpInfo("cdist", _np_cdist, _cdist_samples, method="", rtol=1e-5, atol=1e-5,
                 notes="compute_mode selects PyTorch's formulas; p != 2 materializes (..., P, R, M) differences"),
    LinalgOpInfo("linalg.multi_dot", _np_multi_dot, _multi_dot_samples, dtypes=FLOATS + INTS, complex_dtypes=COMPLEX),
    LinalgOpInfo("chain_matmul", lambda *ms: np.linalg.multi_dot(ms), _chain_matmul_samples, method=""),
    LinalgOpInfo("linalg.vecdot", lambda x, y, dim=-1: (x * y).sum(dim), _vecdot_samples),
    # norms
    LinalgOpInfo("linalg.vector_norm", _np_vector_norm, _vector_norm_samples, rtol=1e-5),
    LinalgOpInfo("linalg.matrix_norm", _np_matrix_norm, _matrix_norm_samples, rtol=1e-5),
    LinalgOpInfo("linalg.norm", _np_norm, _norm_samples, rtol=1e-5),
    LinalgOpInfo("linalg.cond", lambda A, p=None: np.asarray(np.linalg.cond(A, p), A.dtype), _cond_samples,
                 rtol=1e-5),
    # PyTorch's backward for these orders fails (an in-place op on inv_ex's output): forward compared in
    # test_linalg.py, gradients checked numerically here
    LinalgOpInfo("linalg.cond", lambda A, p=None: np.asarray(np.linalg.cond(A, p), A.dtype), _cond_norm_samples,
                 rtol=1e-5, torch_name="", notes="differentiable for every p (PyTorch's backward fails for "
                                                 "p other than None/2/-2)"),
    # inverses, determinants, solvers
    LinalgOpInfo("linalg.inv", np.linalg.inv, _square_samples, rtol=1e-5, complex_dtypes=COMPLEX),
    LinalgOpInfo("inverse", np.linalg.inv, _square_samples, rtol=1e-5, complex_dtypes=COMPLEX),
    LinalgOpInfo("linalg.inv_ex", lambda A: (np.linalg.inv(A),), _square_ex_samples, output_index=0, rtol=1e-5,
                 notes="failed matrices give NaN (LAPACK leaves partial results)"),
    LinalgOpInfo("linalg.det", lambda A: np.asarray(np.linalg.det(A), A.dtype), _square_samples, rtol=1e-5,
                 notes="gradient at exactly singular matrices through the SVD (first order only)", complex_dtypes=COMPLEX),
    LinalgOpInfo("det", lambda A: np.asarray(np.linalg.det(A), A.dtype), _square_samples, rtol=1e-5, complex_dtypes=COMPLEX),
    LinalgOpInfo("linalg.slogdet", _np_slogdet, _square_samples, output_index=1, rtol=1e-5),
    LinalgOpInfo("slogdet", _np_slogdet, _square_samples, output_index=1, rtol=1e-5),
    LinalgOpInfo("logdet", _np_logdet, _posdet_samples, rtol=1e-5),
    LinalgOpInfo("linalg.solve", _np_solve, _solve_samples, rtol=1e-5, complex_dtypes=COMPLEX),
    LinalgOpInfo("linalg.solve_ex", lambda A, B: (_np_solve(A, B),), _solve_ex_samples, output_index=0, rtol=1e-5),
    LinalgOpInfo("linalg.solve_triangular", _np_solve_triangular, _solve_triangular_samples, rtol=1e-5,
                 notes="LU solve of the masked triangle (NumPy has no trsm); substitution when the diagonal has a 0", complex_dtypes=COMPLEX),
    # decompositions
    LinalgOpInfo("linalg.cholesky", _np_cholesky, _spd_samples, pre=sym, rtol=1e-5),
    LinalgOpInfo("linalg.cholesky_ex", lambda A: (np.linalg.cholesky(A),), _spd_samples_noupper, pre=sym,
                 output_index=0, rtol=1e-5),
    LinalgOpInfo("cholesky", _np_cholesky, _spd_samples, pre=sym, rtol=1e-5),
    # PyTorch's gradient for the factor treats it as a full matrix although the forward reads one triangle:
    # the generic test compares raw calls with PyTorch, the gradchecks go through a tril/triu wrapper
    LinalgOpInfo("cholesky_solve", _np_cholesky_solve, _cholesky_solve_samples, rtol=1e-5,
                 notes="gradient w.r.t. the factor is PyTorch's formula, which treats it as a full matrix"),
    LinalgOpInfo("cholesky_solve", _np_cholesky_solve, _cholesky_solve_lower_samples, pre=tril_arg0, torch_name="",
                 rtol=1e-5),
    LinalgOpInfo("cholesky_solve", _np_cholesky_solve, _cholesky_solve_upper_samples, pre=triu_arg0, torch_name="",
                 rtol=1e-5),
    LinalgOpInfo("cholesky_inverse", _np_cholesky_inverse, _cholesky_inverse_samples, rtol=1e-5,
                 notes="gradient w.r.t. the factor is PyTorch's formula, which treats it as a full matrix"),
    LinalgOpInfo("cholesky_inverse", _np_cholesky_inverse, _cholesky_inverse_lower_samples, pre=tril_input,
                 torch_name="", rtol=1e-5),
    LinalgOpInfo("cholesky_inverse", _np_cholesky_inverse, _cholesky_inverse_upper_samples, pre=triu_input,
                 torch_name="", rtol=1e-5),
    LinalgOpInfo("linalg.qr", _np_qr, _qr_samples, output_index=0, rtol=1e-5,
                 notes="Q/R signs follow LAPACK's Householder QR (as in PyTorch)"),
    LinalgOpInfo("linalg.qr", _np_qr, _qr_samples, output_index=1, rtol=1e-5),
    LinalgOpInfo("linalg.qr", lambda A, mode: (np.linalg.qr(A, mode="r") if mode == "r" else np.linalg.qr(A, mode)[1]),
                 _qr_r_samples, output_index=1, rtol=1e-5, differentiable=False),
    LinalgOpInfo("qr", lambda A, some=True: np.linalg.qr(A, "reduced" if some else "complete"),
                 lambda d, r: [SampleInput(wellcond(r, (4, 3), d)),
                               SampleInput(wellcond(r, (3, 4), d), (False,), name="some_false")],
                 output_index=1, rtol=1e-5),
    LinalgOpInfo("linalg.svd", _np_svd_S, _svd_samples, output_index=1, rtol=1e-5,
                 notes="U/Vh unique up to signs (LAPACK gesdd's choice); gradients need distinct singular values"),
    LinalgOpInfo("linalg.svd", _svd_ref(_svd_U2), _svd_samples, post=_svd_U2, torch_name="", rtol=1e-5),
    LinalgOpInfo("linalg.svd", _svd_ref(_svd_Vh2), _svd_samples, post=_svd_Vh2, torch_name="", rtol=1e-5),
    LinalgOpInfo("linalg.svd", _svd_ref(_svd_recon), _svd_samples, post=_svd_recon, torch_name="", rtol=1e-5),
    LinalgOpInfo("linalg.svdvals", lambda A: np.linalg.svd(A, compute_uv=False), _svdvals_samples, rtol=1e-5),
    LinalgOpInfo("svd", lambda A, some=True: np.linalg.svd(A, compute_uv=False), _torch_svd_samples,
                 output_index=1, rtol=1e-5),
    LinalgOpInfo("svd", _torch_svd_ref, _torch_svd_samples, post=_svd_V2, torch_name="", method="", rtol=1e-5),
    LinalgOpInfo("linalg.eigh", _np_eigh, _sym_samples, pre=sym, output_index=0, rtol=1e-5,
                 notes="eigenvectors unique up to sign (a phase for complex); gradients need distinct eigenvalues"),
    LinalgOpInfo("linalg.eigh", _eigh_ref(_eigh_V2), _sym_samples, pre=sym, post=_eigh_V2, torch_name="",
                 rtol=1e-5),
    LinalgOpInfo("linalg.eigh", _eigh_ref(_eigh_recon), _sym_samples, pre=sym, post=_eigh_recon, torch_name="",
                 rtol=1e-5),
    LinalgOpInfo("linalg.eigvalsh", lambda A, UPLO="L": np.linalg.eigvalsh(A, UPLO), _sym_samples, pre=sym,
                 rtol=1e-5),
    LinalgOpInfo("linalg.pinv", _np_pinv, _pinv_samples, rtol=1e-5),
    LinalgOpInfo("linalg.pinv", lambda A, hermitian: np.linalg.pinv(A, hermitian=True), _pinv_hermitian_samples,
                 pre=sym, torch_name="", rtol=1e-5,
                 notes="hermitian=True: gradient is PyTorch's (non-symmetric) pinv_backward formula"),
    LinalgOpInfo("pinverse", lambda A: _np_pinv(A, 1e-15), lambda d, r: [SampleInput(wellcond(r, (4, 3), d))],
                 rtol=1e-5),
    LinalgOpInfo("linalg.lstsq", _np_lstsq, _lstsq_samples, output_index=0, rtol=1e-5,
                 notes="every driver computed with one SVD (gelsy's QR rank test replaced by singular values); "
                       "residuals get their true gradient (PyTorch ignores it)"),
    LinalgOpInfo("linalg.matrix_power", _np_matrix_power, _matrix_power_samples, rtol=1e-5, complex_dtypes=COMPLEX),
    LinalgOpInfo("linalg.matrix_power", _np_matrix_power, _int_matrix_power_samples, dtypes=INTS),
    LinalgOpInfo("matrix_power", _np_matrix_power, _matrix_power_samples, rtol=1e-5, complex_dtypes=COMPLEX),
    LinalgOpInfo("linalg.matrix_rank", _np_matrix_rank, _matrix_rank_samples, differentiable=False),
    LinalgOpInfo("linalg.matrix_exp", None, _matrix_exp_samples, rtol=1e-5,
                 notes="Pade-13 scaling and squaring (Higham 2005) in float64"),
    LinalgOpInfo("matrix_exp", None, _matrix_exp_samples, rtol=1e-5),
    LinalgOpInfo("linalg.vander", _np_vander_increasing, _vander_samples, dtypes=FLOATS + INTS),
    # torch.vander's own backward fails in PyTorch 2.13 (an in-place op): compared in test_linalg.py
    LinalgOpInfo("vander", lambda x, N=None, increasing=False: np.vander(x, N, increasing).astype(
        np.int64 if x.dtype.kind in "biu" else x.dtype), _torch_vander_samples, dtypes=FLOATS + INTS, method="",
        torch_name="", notes="differentiable (torch.vander's backward fails in PyTorch 2.13)"),
    LinalgOpInfo("linalg.tensorinv", _np_tensorinv, _tensorinv_samples, rtol=1e-5),
    LinalgOpInfo("linalg.tensorsolve", _np_tensorsolve, _tensorsolve_samples, rtol=1e-5),
    LinalgOpInfo("linalg.diagonal", lambda A, offset=0, dim1=-2, dim2=-1: np.diagonal(A, offset, dim1, dim2),
                 _diagonal_samples, dtypes=FLOATS + INTS),
]
