"""Complex linear algebra: values and gradients against torch (complex128), and
gradcheck of fabric alone.  Functions of decompositions whose vectors have a
free phase (eig, eigh, svd) are checked through phase-invariant quantities;
Hermitian inputs are built as ``a a^H + 3I`` so that perturbing either
triangle counts (the decompositions read only one)."""
from __future__ import annotations

import numpy as np
import pytest

import fabric
from fabric.autograd import gradcheck

rng = np.random.default_rng(0)
A = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
B = rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2))
W = rng.standard_normal((4, 3)) + 1j * rng.standard_normal((4, 3))


def gauge_svd(T, a):
    U, S, Vh = T.linalg.svd(a, full_matrices=False)
    return (U * S.unsqueeze(-2)) @ Vh + (U @ Vh).abs() + S.sum()
def gauge_eigh(T, a):
    L, V = T.linalg.eigh(a)
    return (V * L.unsqueeze(-2)) @ V.mH + V.abs()
def gauge_eig(T, a):
    L, V = T.linalg.eig(a)
    return L.sum() + V.abs().sum() + (V @ T.diag_embed(L) @ T.linalg.inv(V)).sum()
def qr_fn(T, a):
    Q, R = T.linalg.qr(a)
    return Q @ R + Q.abs().sum() + R.abs().sum()
def herm(T, a):
    return a @ a.mH + 3 * T.eye(3, dtype=a.dtype)
CASES = {
    "lu_factor": (lambda T, a: T.linalg.lu_factor(a)[0], (A,)), "lu_factor_real": (lambda T, a: T.linalg.lu_factor(a)[0], (A.real.copy(),)),
    "lu_L": (lambda T, a: T.linalg.lu(a)[1], (A,)), "lu_U": (lambda T, a: T.linalg.lu(a)[2], (A,)),
    "lu_solve": (lambda T, a, b: T.linalg.lu_solve(*T.linalg.lu_factor(a), b), (A, B)),
    "lu_solve_adjoint": (lambda T, a, b: T.linalg.lu_solve(*T.linalg.lu_factor(a), b, adjoint=True), (A, B)),
    "lu_solve_right": (lambda T, a, b: T.linalg.lu_solve(*T.linalg.lu_factor(a), b.mT.contiguous(), left=False), (A, B)),
    "lu_solve_right_adjoint": (lambda T, a, b: T.linalg.lu_solve(*T.linalg.lu_factor(a), b.mT.contiguous(), left=False,
                                                                 adjoint=True), (A, B)),"inv": (lambda T,a: T.linalg.inv(a), (A,)), "det": (lambda T,a: T.linalg.det(a), (A,)),
   "slogdet": (lambda T,a: T.linalg.slogdet(a)[1], (A,)), "solve": (lambda T,a,b: T.linalg.solve(a,b), (A,B)), "solve_right": (lambda T,a,b: T.linalg.solve(a,b.mT.contiguous(), left=False), (A,B)),
   "logdet": (lambda T,a: T.logdet(a), (A,)), "inv_ex": (lambda T,a: T.linalg.inv_ex(a)[0], (A,)), "matrix_power": (lambda T,a: T.linalg.matrix_power(a, 3), (A,)), "matrix_exp": (lambda T,a: T.linalg.matrix_exp(a), (A,)),
   "pinv": (lambda T,a: T.linalg.pinv(a), (W,)), "pinv_h": (lambda T,a: T.linalg.pinv(herm(T, a), hermitian=True), (A,)), "lstsq": (lambda T,a,b: T.linalg.lstsq(a, b).solution, (W, W[:, :2].copy())),
   "solve_triangular": (lambda T,a,b: T.linalg.solve_triangular(a.triu(), b, upper=True), (A,B)), "multi_dot": (lambda T,a,b: T.linalg.multi_dot([a,b]), (A,B)),
   "eigvalsh": (lambda T,a: T.linalg.eigvalsh(herm(T, a)), (A,)), "eigh": (lambda T,a: gauge_eigh(T, herm(T, a)), (A,)), "svdvals": (lambda T,a: T.linalg.svdvals(a), (W,)), "svd": (gauge_svd, (W,)), "svd_wide": (gauge_svd, (W.T.copy(),)),
   "eigvals": (lambda T,a: T.linalg.eigvals(a), (A,)), "eig": (gauge_eig, (A,)), "eig_real": (lambda T,a: T.linalg.eigvals(a), (A.real.copy(),)),
   "cholesky": (lambda T,a: T.linalg.cholesky(herm(T, a)), (A,)), "cholesky_up": (lambda T,a: T.linalg.cholesky(herm(T, a), upper=True), (A,)), "qr": (qr_fn, (W,)), "qr_wide": (qr_fn, (W.T.copy(),)),

   "matrix_norm_nuc": (lambda T,a: T.linalg.matrix_norm(a, "nuc"), (W,)), "matrix_norm_2": (lambda T,a: T.linalg.matrix_norm(a, 2), (W,)), "cond": (lambda T,a: T.linalg.cond(a), (A,)),
   "cholesky_solve": (lambda T,a,b: T.cholesky_solve(b, T.linalg.cholesky(herm(T, a))), (A,B)), "cholesky_inverse": (lambda T,a: T.cholesky_inverse(T.linalg.cholesky(herm(T, a))), (A,)),
   "vander": (lambda T,a: T.linalg.vander(a[:, 0]), (A,)), "tensorinv": (lambda T,a: T.linalg.tensorinv(a.reshape(3,3), ind=1), (A,)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck(name):
    fn, args = CASES[name]
    assert gradcheck(lambda *xs: fn(fabric, *xs), [fabric.tensor(a, requires_grad=True) for a in args])


@pytest.mark.torch
@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients_match_torch(name):
    torch = pytest.importorskip("torch")
    fn, args = CASES[name]
    ta = [torch.tensor(a, requires_grad=True) for a in args]
    fa = [fabric.tensor(a, requires_grad=True) for a in args]
    tr, fr = fn(torch, *ta), fn(fabric, *fa)
    np.testing.assert_allclose(fr.detach().numpy(), tr.detach().resolve_conj().numpy(), rtol=1e-7, atol=1e-9)
    assert str(fr.dtype).split(".")[1] == str(tr.dtype).split(".")[1]
    g = np.random.default_rng(1).standard_normal(tuple(tr.shape))
    if tr.is_complex():
        g = g + 1j * np.random.default_rng(2).standard_normal(tuple(tr.shape))
    for ours, theirs in zip(fabric.autograd.grad(fr, fa, fabric.tensor(g)), torch.autograd.grad(tr, ta, torch.tensor(g))):
        np.testing.assert_allclose(ours.numpy(), theirs.resolve_conj().numpy(), rtol=1e-6, atol=1e-8)


@pytest.mark.torch
def test_eig_matches_torch_up_to_lapack():
    torch = pytest.importorskip("torch")
    for a in (A, A.real.copy()):
        L, V = fabric.linalg.eig(fabric.tensor(a))
        tL, tV = torch.linalg.eig(torch.tensor(a))
        np.testing.assert_allclose(L.numpy(), tL.numpy(), rtol=1e-10)
        np.testing.assert_allclose(V.numpy(), tV.numpy(), rtol=1e-10, atol=1e-12)
        assert fabric.linalg.eigvals(fabric.tensor(a, dtype=fabric.float32 if a.dtype.kind == "f" else None)).dtype.name \
            == str(torch.linalg.eigvals(torch.tensor(a, dtype=torch.float32 if a.dtype.kind == "f" else None)).dtype)[6:]


@pytest.mark.torch
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3), (4, 3), (3, 5)])
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_lu_factor_pivots_and_factors_match_torch(shape, dtype):
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(3).standard_normal(shape)
    if dtype == "complex128":
        a = a + 1j * np.random.default_rng(4).standard_normal(shape)
    LU, piv = fabric.linalg.lu_factor(fabric.tensor(a))
    tLU, tpiv = torch.linalg.lu_factor(torch.tensor(a))
    assert piv.tolist() == tpiv.tolist() and piv.dtype is fabric.int32
    np.testing.assert_allclose(LU.numpy(), tLU.numpy(), rtol=1e-10, atol=1e-12)
    for ours, theirs in zip(fabric.linalg.lu(fabric.tensor(a)), torch.linalg.lu(torch.tensor(a))):
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12)
