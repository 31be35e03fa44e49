"""Linear algebra beyond the generic OpInfo tests: gauge-invariant and
wrapped comparisons with PyTorch, error types and messages, return types,
dtype rules, lstsq drivers, singular inputs, double backward against
PyTorch, and the docstring examples."""
from __future__ import annotations

import doctest
import warnings

import numpy as np
import pytest
from opinfo.linalg import OPS, spd, symmetric, wellcond

import fabric

rng = np.random.default_rng


def _conv(v, lib, requires_grad=False):
    if isinstance(v, np.ndarray):
        if lib is fabric:
            t = fabric.from_numpy(np.array(v))
        else:
            import torch

            t = torch.from_numpy(np.array(v))
        if requires_grad and v.dtype.kind == "f":
            t.requires_grad_(True)
        return t
    if isinstance(v, (list, tuple)):
        return type(v)(_conv(x, lib, requires_grad) for x in v)
    return v


def _np(t):
    if isinstance(t, fabric.Tensor):
        return t.detach().numpy()
    return t.detach().numpy()


def _attr(mod, name):
    for part in name.split("."):
        mod = getattr(mod, part)
    return mod


def _leaves(x, args):
    out = []
    for v in [x, *args]:
        vs = v if isinstance(v, (list, tuple)) else [v]
        out.extend(t for t in vs if hasattr(t, "requires_grad") and t.requires_grad)
    return out


# PyTorch 2.13's own backward fails (an in-place op on a saved tensor) for these; we compare forwards only.
_TORCH_BACKWARD_BROKEN = {"vander", "linalg.cond"}

WRAPPED = [op for op in OPS if op.pre is not None or op.post is not None or not op.torch_name]


@pytest.mark.torch
@pytest.mark.parametrize("op", WRAPPED, ids=[f"{op.name}-{i}" for i, op in enumerate(WRAPPED)])
def test_wrapped_matches_torch(op):
    """Entries skipped by the generic torch test: the same pre/post wrapper
    is applied to the PyTorch function, so gauge-invariant quantities (and
    symmetrized inputs) are compared, forward and gradient."""
    import torch

    fn = op.resolve(fabric)
    tfn = op.wrap(_attr(torch, op.name))
    for dtype in op.dtypes:
        for s in op.sample_inputs(dtype, rng(1)):
            diff = op.differentiable and np.dtype(dtype).kind == "f"
            x, args = _conv(s.input, fabric, diff), _conv(s.args, fabric, diff)
            tx, targs = _conv(s.input, torch, diff), _conv(s.args, torch, diff)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out = fn(x, *args, **s.kwargs)
                tout = tfn(tx, *targs, **s.kwargs)
            if op.output_index is not None:
                out, tout = out[op.output_index], tout[op.output_index]
            tol = 1e-4 if dtype == np.float32 else 1e-7
            np.testing.assert_allclose(_np(out), _np(tout), rtol=tol, atol=tol, err_msg=f"{op.name} {s}")
            assert str(out.dtype).split(".")[-1] == str(tout.dtype).split(".")[-1]
            if not diff or not tout.requires_grad:
                continue
            g = np.random.default_rng(2).standard_normal(tuple(tout.shape)).astype(dtype)
            try:
                tout.backward(torch.from_numpy(g.copy()))
            except RuntimeError as e:
                assert op.name in _TORCH_BACKWARD_BROKEN and "inplace" in str(e), str(e)
                continue
            out.backward(fabric.from_numpy(g.copy()))
            for a, b in zip(_leaves(x, args), _leaves(tx, targs)):
                np.testing.assert_allclose(_np(a.grad), b.grad.numpy(), rtol=10 * tol, atol=10 * tol,
                                           err_msg=f"grad of {op.name} {s}")


# --- errors -------------------------------------------------------------------------------

def _a(*shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


_SING = np.array([[1.0, 2.0], [2.0, 4.0]])
_NOTPD = np.array([[1.0, 2.0], [2.0, 1.0]])

# (name, call(T, t)) where T is the library and t converts NumPy arrays; exact=True also compares messages
ERROR_CASES = [
    ("mm_shapes", lambda T, t: T.mm(t(_a(3, 3)), t(_a(4, 2))), True),
    ("mm_1d", lambda T, t: T.mm(t(_a(3)), t(_a(3, 3))), True),
    ("mm_dtype", lambda T, t: T.mm(t(_a(3, 3)), t(_a(3, 3, dtype=np.float64))), True),
    ("matmul_dtype", lambda T, t: T.matmul(t(_a(3, 3)), t(_a(3, 3, dtype=np.float64))), False),
    ("bmm_2d", lambda T, t: T.bmm(t(_a(3, 3)), t(_a(3, 3))), True),
    ("bmm_batch", lambda T, t: T.bmm(t(_a(2, 3, 4)), t(_a(3, 4, 2))), True),
    ("bmm_dtype", lambda T, t: T.bmm(t(_a(1, 3, 3)), t(_a(1, 3, 3, dtype=np.float64))), True),
    ("mv_size", lambda T, t: T.mv(t(_a(3, 3)), t(_a(4))), True),
    ("mv_1d", lambda T, t: T.mv(t(_a(3)), t(_a(3))), True),
    ("dot_2d", lambda T, t: T.dot(t(_a(3, 3)), t(_a(3, 3))), True),
    ("dot_size", lambda T, t: T.dot(t(_a(3)), t(_a(4))), True),
    ("dot_dtype", lambda T, t: T.dot(t(_a(3)), t(_a(3, dtype=np.float64))), True),
    ("outer_2d", lambda T, t: T.outer(t(_a(3, 3)), t(_a(3))), True),
    ("inner_shapes", lambda T, t: T.inner(t(_a(3, 3)), t(_a(3, 4))), True),
    ("inner_dtype", lambda T, t: T.inner(t(_a(3)), t(_a(3, dtype=np.float64))), True),
    ("addmm_expand", lambda T, t: T.addmm(t(_a(4)), t(_a(3, 3)), t(_a(3, 3))), True),
    ("addmm_dtype", lambda T, t: T.addmm(t(_a(3, 3)), t(_a(3, 3)), t(_a(3, 3, dtype=np.float64))), True),
    ("einsum_operands", lambda T, t: T.einsum("ij,jk", t(_a(3, 3))), True),
    ("einsum_more", lambda T, t: T.einsum("ij", t(_a(3, 3)), t(_a(3))), True),
    ("einsum_char", lambda T, t: T.einsum("i1", t(_a(3, 3))), True),
    ("einsum_dims", lambda T, t: T.einsum("ij", t(_a(3, 3, 3))), True),
    ("einsum_out_twice", lambda T, t: T.einsum("ij->ii", t(_a(3, 3))), True),
    ("einsum_out_missing", lambda T, t: T.einsum("ij->k", t(_a(3, 3))), True),
    ("einsum_diag_sizes", lambda T, t: T.einsum("ii->i", t(_a(3, 4))), True),
    ("einsum_broadcast", lambda T, t: T.einsum("ij,ij->ij", t(_a(2, 3)), t(_a(4, 3))), True),
    ("einsum_dots", lambda T, t: T.einsum("..i", t(_a(2, 3))), True),
    ("einsum_dtype", lambda T, t: T.einsum("ij,jk", t(_a(3, 3)), t(_a(3, 3, dtype=np.float64))), True),
    ("tensordot_size", lambda T, t: T.tensordot(t(_a(2, 3)), t(_a(4, 2)), 1), True),
    ("tensordot_lists", lambda T, t: T.tensordot(t(_a(2, 3)), t(_a(3, 2)), ([0, 1], [1])), True),
    ("tensordot_neg", lambda T, t: T.tensordot(t(_a(2, 3)), t(_a(3, 2)), -1), True),
    ("tensordot_big", lambda T, t: T.tensordot(t(_a(2, 3)), t(_a(3, 2)), 3), True),
    ("trace_1d", lambda T, t: T.trace(t(_a(3))), True),
    ("cross_len", lambda T, t: T.linalg.cross(t(_a(3, 2)), t(_a(3, 2))), True),
    ("cross_dim", lambda T, t: T.cross(t(_a(3, 2)), t(_a(3, 2)), dim=1), True),
    ("cdist_1d", lambda T, t: T.cdist(t(_a(3)), t(_a(4, 3))), True),
    ("cdist_cols", lambda T, t: T.cdist(t(_a(3, 2)), t(_a(4, 3))), True),
    ("cdist_p", lambda T, t: T.cdist(t(_a(3, 2)), t(_a(4, 2)), p=-1), True),
    ("cdist_int", lambda T, t: T.cdist(t(_a(3, 2).astype(np.int64)), t(_a(4, 2).astype(np.int64))), True),
    ("cdist_dtype", lambda T, t: T.cdist(t(_a(3, 2)), t(_a(4, 2, dtype=np.float64))), True),
    ("multi_dot_one", lambda T, t: T.linalg.multi_dot([t(_a(2, 2))]), True),
    ("multi_dot_3d", lambda T, t: T.linalg.multi_dot([t(_a(2, 2, 2)), t(_a(2, 2))]), True),
    ("multi_dot_shapes", lambda T, t: T.linalg.multi_dot([t(_a(2, 3)), t(_a(4, 2))]), True),
    ("multi_dot_dtype", lambda T, t: T.linalg.multi_dot([t(_a(2, 2)), t(_a(2, 2, dtype=np.float64))]), True),
    ("inv_int", lambda T, t: T.linalg.inv(t(np.eye(3, dtype=np.int64))), True),
    ("inv_rect", lambda T, t: T.linalg.inv(t(_a(3, 4))), True),
    ("inv_1d", lambda T, t: T.linalg.inv(t(_a(3))), True),
    ("inv_singular", lambda T, t: T.linalg.inv(t(np.zeros((3, 3), np.float32))), True),
    ("inv_singular_batch", lambda T, t: T.linalg.inv(t(np.stack([np.eye(2), _SING]))), True),
    ("inv_half", lambda T, t: T.linalg.inv(t(np.eye(2, dtype=np.float16))), True),
    ("det_rect", lambda T, t: T.linalg.det(t(_a(3, 4))), True),
    ("det_int", lambda T, t: T.linalg.det(t(np.eye(2, dtype=np.int64))), True),
    ("solve_singular", lambda T, t: T.linalg.solve(t(np.zeros((3, 3))), t(_a(3, dtype=np.float64))), True),
    ("solve_singular_batch", lambda T, t: T.linalg.solve(t(np.zeros((2, 3, 3))), t(_a(2, 3, dtype=np.float64))),
     True),
    ("solve_shapes", lambda T, t: T.linalg.solve(t(_a(3, 3)), t(_a(4, 2))), True),
    ("solve_left_vector", lambda T, t: T.linalg.solve(t(_a(3, 3)), t(_a(3)), left=False), True),
    ("cholesky_notpd", lambda T, t: T.linalg.cholesky(t(_NOTPD)), True),
    ("cholesky_notpd_batch", lambda T, t: T.linalg.cholesky(t(np.stack([np.eye(2), _NOTPD]))), True),
    ("cholesky_minor2", lambda T, t: T.linalg.cholesky(t(np.diag([1.0, -1.0, 1.0]))), True),
    ("qr_mode", lambda T, t: T.linalg.qr(t(_a(3, 3)), mode="bad"), True),
    ("eigh_uplo", lambda T, t: T.linalg.eigh(t(np.eye(3)), UPLO="X"), True),
    ("vector_norm_int", lambda T, t: T.linalg.vector_norm(t(np.ones(3, np.int64))), True),
    ("vector_norm_inf_empty", lambda T, t: T.linalg.vector_norm(t(np.zeros(0, np.float32)), float("inf")), True),
    ("vector_norm_neg_empty", lambda T, t: T.linalg.vector_norm(t(np.zeros(0, np.float32)), -1), True),
    ("vector_norm_narrow", lambda T, t: T.linalg.vector_norm(t(_a(3, dtype=np.float64)), dtype=T.float32), True),
    ("matrix_norm_ord", lambda T, t: T.linalg.matrix_norm(t(_a(3, 3)), 3), True),
    ("matrix_norm_str", lambda T, t: T.linalg.matrix_norm(t(_a(3, 3)), "abc"), True),
    ("matrix_norm_dims", lambda T, t: T.linalg.matrix_norm(t(_a(3, 3)), dim=(0, 0)), True),
    ("matrix_norm_1d", lambda T, t: T.linalg.matrix_norm(t(_a(3))), True),
    ("norm_3d_ord", lambda T, t: T.linalg.norm(t(_a(2, 3, 4)), 2), True),
    ("norm_dims", lambda T, t: T.linalg.norm(t(_a(2, 3, 4)), dim=(0, 1, 2)), True),
    ("lstsq_dtype", lambda T, t: T.linalg.lstsq(t(_a(4, 3)), t(_a(4, 2, dtype=np.float64))), True),
    ("lstsq_rows", lambda T, t: T.linalg.lstsq(t(_a(4, 3)), t(_a(3, 2))), True),
    ("lstsq_driver", lambda T, t: T.linalg.lstsq(t(_a(4, 3)), t(_a(4, 2)), driver="foo"), True),
    ("lstsq_dims", lambda T, t: T.linalg.lstsq(t(_a(2, 4, 3)), t(_a(4))), True),
    ("matrix_rank_int", lambda T, t: T.linalg.matrix_rank(t(np.eye(3, dtype=np.int64))), True),
    ("matrix_power_rect", lambda T, t: T.linalg.matrix_power(t(_a(3, 4)), 2), True),
    ("matrix_power_int_neg", lambda T, t: T.linalg.matrix_power(t(np.eye(3, dtype=np.int64)), -1), True),
    ("vecdot_int", lambda T, t: T.linalg.vecdot(t(np.ones(3, np.int64)), t(np.ones(3, np.int64))), True),
    ("tensorinv_shape", lambda T, t: T.linalg.tensorinv(t(_a(2, 3, 4)), 2), True),
    ("addr_shape", lambda T, t: T.addr(t(_a(3, 4)), t(_a(3)), t(_a(3))), False),
    ("mm_bool", lambda T, t: T.mm(t(np.ones((2, 2), bool)), t(np.ones((2, 2), bool))), True),
    ("bmm_bool", lambda T, t: T.bmm(t(np.ones((1, 2, 2), bool)), t(np.ones((1, 2, 2), bool))), True),
    ("mv_bool", lambda T, t: T.mv(t(np.ones((2, 2), bool)), t(np.ones(2, bool))), True),
    ("dot_bool", lambda T, t: T.dot(t(np.ones(2, bool)), t(np.ones(2, bool))), True),
    ("trace_bool", lambda T, t: T.trace(t(np.ones((2, 2), bool))), True),
    ("cross_bool", lambda T, t: T.linalg.cross(t(np.ones(3, bool)), t(np.ones(3, bool))), True),
    ("einsum_bool", lambda T, t: T.einsum("ij,jk", t(np.ones((2, 2), bool)), t(np.ones((2, 2), bool))), True),
    ("vander_bool", lambda T, t: T.linalg.vander(t(np.ones(3, bool))), True),
    ("vander_N", lambda T, t: T.linalg.vander(t(_a(3)), N=1), True),
    ("matrix_norm_empty_min", lambda T, t: T.linalg.matrix_norm(t(np.zeros((0, 3), np.float32)), -2), True),
    ("matrix_norm_empty_min1", lambda T, t: T.linalg.matrix_norm(t(np.zeros((3, 0), np.float32)), -1), True),
    ("svd_nan", lambda T, t: T.linalg.svd(t(np.full((2, 2), np.nan))), True),
    ("cholesky_nan", lambda T, t: T.linalg.cholesky(t(np.full((2, 2), np.nan))), False),
]


@pytest.mark.torch
@pytest.mark.parametrize("case", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_errors_match_torch(case):
    import torch

    name, call, exact = case
    with pytest.raises(Exception) as theirs:
        call(torch, torch.from_numpy)
    with pytest.raises(Exception) as ours:
        call(fabric, fabric.from_numpy)
    tt, ot = theirs.type, ours.type
    if tt.__name__ == "_LinAlgError":
        assert ot is fabric.linalg.LinAlgError
    else:
        assert issubclass(ot, tt) or ot is tt, (name, ot, tt, str(ours.value))
    if exact:
        assert str(ours.value) == str(theirs.value), name


EDGE_CASES = [
    ("matrix_norm_empty", lambda T, t: [T.linalg.matrix_norm(t(np.zeros(s, np.float32)), o)
                                        for s in ((0, 3), (3, 0)) for o in ("fro", "nuc", 2, 1, float("inf"))]),
    ("cond_singular", lambda T, t: [T.linalg.cond(t(_SING), p) for p in (None, "fro", 1, float("inf"))]),
    ("cond_empty", lambda T, t: [T.linalg.cond(t(np.zeros((0, 0))))]),
    ("pinv_zeros", lambda T, t: [T.linalg.pinv(t(np.zeros((2, 3)))),
                                 T.linalg.pinv(t(np.zeros((2, 2))), hermitian=True)]),
    ("rank_zeros", lambda T, t: [T.linalg.matrix_rank(t(np.zeros((2, 3)))), T.linalg.matrix_rank(t(np.zeros((0, 3))))]),
    ("lstsq_empty", lambda T, t: [T.linalg.lstsq(t(np.zeros((0, 3))), t(np.zeros((0, 2)))).solution]),
    ("cdist_empty", lambda T, t: [T.cdist(t(np.zeros((0, 3))), t(_a(2, 3, dtype=np.float64))),
                                  T.cdist(t(np.zeros((2, 0))), t(np.zeros((2, 0))), p=float("inf"))]),
    ("empty_decompositions", lambda T, t: [
        T.linalg.det(t(np.zeros((0, 2, 2)))), T.linalg.slogdet(t(np.zeros((0, 0))))[1],
        T.linalg.svd(t(np.zeros((3, 0))))[0], T.linalg.qr(t(np.zeros((3, 0))))[0],
        T.linalg.cholesky(t(np.zeros((0, 0)))), T.linalg.eigh(t(np.zeros((0, 0))))[0],
        T.linalg.matrix_exp(t(np.zeros((0, 0))))]),
    ("solve_triangular_zero_diag", lambda T, t: [T.linalg.solve_triangular(
        t(np.array([[0.0, 1.0], [0.0, 1.0]])), t(np.ones((2, 1))), upper=True)]),
    ("nan_inputs", lambda T, t: [T.linalg.inv(t(np.full((2, 2), np.nan))),
                                 T.linalg.eigvalsh(t(np.full((2, 2), np.nan)))]),
    ("bool_ok", lambda T, t: [T.kron(t(np.ones((2, 2), bool)), t(np.ones((2, 2), bool))),
                              T.outer(t(np.ones(2, bool)), t(np.ones(2, bool))),
                              T.einsum("ij->", t(np.ones((2, 2), bool)))]),
    ("multi_dot_vectors", lambda T, t: [T.linalg.multi_dot([t(np.ones(3)), t(np.ones(3))])]),
    ("int_matrix_power_0", lambda T, t: [T.linalg.matrix_power(t(np.ones((2, 2), np.int64)), 0)]),
]


@pytest.mark.torch
@pytest.mark.parametrize("case", EDGE_CASES, ids=[c[0] for c in EDGE_CASES])
def test_edge_cases_match_torch(case):
    import torch

    name, call = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = call(fabric, fabric.from_numpy), call(torch, torch.from_numpy)
    for o, t in zip(ours, theirs):
        assert o.shape == tuple(t.shape), name
        assert str(o.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], name
        np.testing.assert_allclose(o.detach().numpy(), t.detach().numpy(), rtol=1e-6, equal_nan=True, err_msg=name)


def test_linalg_error_is_runtime_error():
    assert issubclass(fabric.linalg.LinAlgError, RuntimeError)
    with pytest.raises(RuntimeError, match="singular"):
        fabric.linalg.inv(fabric.zeros(2, 2))
    with pytest.raises(fabric.linalg.LinAlgError, match=r"leading minor of order 2"):
        fabric.linalg.cholesky(fabric.tensor([[1.0, 2.0], [2.0, 1.0]]))


def test_lu_factor_of_a_singular_matrix():
    A = fabric.tensor([[0.0, 1.0], [0.0, 2.0]])
    LU, piv, info = fabric.linalg.lu_factor_ex(A)
    assert info.item() == 1 and piv.tolist() == [1, 2]  # as LAPACK: the first zero pivot
    with pytest.raises(fabric.linalg.LinAlgError, match=r"^torch.linalg.lu_factor: U\[1,1\] is zero"):
        fabric.linalg.lu_factor(A)
    P, L, U = fabric.linalg.lu(A)
    np.testing.assert_allclose((P @ L @ U).numpy(), A.numpy())


def test_eig_of_a_real_matrix_is_complex():
    A = fabric.tensor([[0.0, -1.0], [1.0, 0.0]])
    L, V = fabric.linalg.eig(A)
    assert L.dtype is fabric.complex64 and V.dtype is fabric.complex64
    np.testing.assert_allclose((A.to(fabric.cfloat) @ V - V * L).abs().numpy(), 0, atol=1e-6)
    assert fabric.linalg.eigvals(A.double()).dtype is fabric.complex128


# --- return types, dtypes, semantics -----------------------------------------------------------

def test_return_types():
    A = fabric.tensor(spd(rng(0), (3, 3), np.float64))
    assert fabric.linalg.slogdet(A)._fields == ("sign", "logabsdet")
    assert fabric.slogdet(A)._fields == ("sign", "logabsdet")
    assert fabric.linalg.qr(A)._fields == ("Q", "R")
    assert fabric.linalg.svd(A)._fields == ("U", "S", "Vh")
    assert fabric.svd(A)._fields == ("U", "S", "V")
    assert fabric.linalg.eigh(A)._fields == ("eigenvalues", "eigenvectors")
    assert fabric.linalg.lstsq(A, A)._fields == ("solution", "residuals", "rank", "singular_values")
    assert fabric.linalg.inv_ex(A)._fields == ("inverse", "info")
    assert fabric.linalg.cholesky_ex(A)._fields == ("L", "info")
    assert fabric.linalg.solve_ex(A, A)._fields == ("result", "info")
    assert fabric.linalg.inv_ex(A).info.dtype == fabric.int32


@pytest.mark.torch
def test_integer_products_match_torch():
    import torch

    a = np.arange(12, dtype=np.int64).reshape(3, 4) - 5
    b = np.arange(8, dtype=np.int64).reshape(4, 2) - 3
    for name, args in [("mm", (a, b)), ("matmul", (a, b)), ("mv", (a, b[:, 0])), ("dot", (b[:, 0], b[:, 1])),
                       ("kron", (a, b)), ("trace", (a,)), ("outer", (a[0], b[0])), ("inner", (a, a)),
                       ("tensordot", (a, a))]:
        ours = getattr(fabric, name)(*[fabric.from_numpy(x.copy()) for x in args])
        theirs = getattr(torch, name)(*[torch.from_numpy(x.copy()) for x in args])
        assert ours.dtype == fabric.int64 and str(theirs.dtype) == "torch.int64", name
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    i32 = fabric.ones(3, 3, dtype=fabric.int32)
    assert fabric.trace(i32).dtype == fabric.int64
    assert fabric.mm(i32, i32).dtype == fabric.int32
    assert fabric.einsum("ij->", i32).dtype == fabric.int64
    assert fabric.einsum("ii->i", i32).dtype == fabric.int32
    # promoting ops
    assert fabric.outer(fabric.ones(2, dtype=fabric.int64), fabric.ones(2)).dtype == fabric.float32
    assert fabric.kron(fabric.ones(2, 2), fabric.ones(2, 2, dtype=fabric.float64)).dtype == fabric.float64
    assert fabric.addr(fabric.ones(2, 2), fabric.ones(2), fabric.ones(2, dtype=fabric.float64)).dtype == fabric.float64
    # float alpha/beta are truncated for integer tensors, as in PyTorch
    ii = np.ones((2, 2), np.int64)
    for kw in ({"alpha": 0.5}, {"beta": 0.5}, {"alpha": 1.7, "beta": 2}):
        np.testing.assert_array_equal(
            fabric.addmm(*[fabric.from_numpy(ii.copy())] * 3, **kw).numpy(),
            torch.addmm(*[torch.from_numpy(ii.copy())] * 3, **kw).numpy())


def test_addmm_beta_zero_ignores_nan():
    x = fabric.tensor([[float("nan"), 1.0], [1.0, 1.0]])
    r = fabric.addmm(x, fabric.eye(2), fabric.eye(2), beta=0)
    np.testing.assert_array_equal(r.numpy(), np.eye(2))


def test_addmm_inplace_autograd():
    a = fabric.randn(2, 3, dtype=fabric.float64, requires_grad=True)
    m1 = fabric.randn(2, 4, dtype=fabric.float64, requires_grad=True)
    m2 = fabric.randn(4, 3, dtype=fabric.float64)
    y = a * 2
    v = y._version
    r = y.addmm_(m1, m2, beta=3)
    assert r is y and y._version > v
    y.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.full((2, 3), 6.0))
    np.testing.assert_allclose(m1.grad.numpy(), np.ones((2, 3)) @ m2.numpy().T)


def test_vector_norm_dtype_and_dims():
    x = fabric.tensor(_a(3, 4))
    r = fabric.linalg.vector_norm(x, dtype=fabric.float64)
    assert r.dtype == fabric.float64
    np.testing.assert_allclose(r.item(), np.linalg.norm(x.numpy().astype(np.float64)), rtol=1e-12)
    assert fabric.linalg.vector_norm(x, dim=(0, 1), keepdim=True).shape == (1, 1)
    assert fabric.linalg.norm(x, dtype=fabric.float64).dtype == fabric.float64
    assert fabric.linalg.matrix_norm(x, dtype=fabric.float64).dtype == fabric.float64


@pytest.mark.torch
def test_svd_old_semantics_match_torch():
    import torch

    a = wellcond(rng(3), (4, 3), np.float64)
    for some in (True, False):
        U, S, V = fabric.svd(fabric.from_numpy(a.copy()), some=some)
        tU, tS, tV = torch.svd(torch.from_numpy(a.copy()), some=some)
        assert U.shape == tuple(tU.shape) and V.shape == tuple(tV.shape)
        np.testing.assert_allclose((U.numpy()[:, :3] * S.numpy()) @ V.numpy().T, a, atol=1e-12)
    U, S, V = fabric.from_numpy(a.copy()).svd(compute_uv=False)
    tU, tS, tV = torch.svd(torch.from_numpy(a.copy()), compute_uv=False)
    np.testing.assert_array_equal(U.numpy(), tU.numpy())
    np.testing.assert_array_equal(V.numpy(), tV.numpy())
    np.testing.assert_allclose(S.numpy(), tS.numpy(), rtol=1e-12)


@pytest.mark.torch
def test_qr_modes_and_gradient_errors():
    import torch

    a = wellcond(rng(4), (4, 3), np.float64)
    for mode in ("reduced", "complete", "r"):
        Q, R = fabric.linalg.qr(fabric.from_numpy(a.copy()), mode=mode)
        tQ, tR = torch.linalg.qr(torch.from_numpy(a.copy()), mode=mode)
        assert Q.shape == tuple(tQ.shape) and R.shape == tuple(tR.shape)
        np.testing.assert_allclose(R.numpy(), tR.numpy(), atol=1e-12)
    x = fabric.from_numpy(a.copy()).requires_grad_()
    with pytest.raises(RuntimeError, match="mode='r'"):
        fabric.linalg.qr(x, mode="r").R.sum().backward()
    with pytest.raises(RuntimeError, match="complete"):
        fabric.linalg.qr(x, mode="complete").Q.sum().backward()


@pytest.mark.torch
def test_lstsq_drivers_match_torch():
    import torch

    a = wellcond(rng(5), (5, 3), np.float64)
    b = rng(6).standard_normal((5, 2))
    deficient = a.copy()
    deficient[:, 2] = deficient[:, 0] + deficient[:, 1]
    for A in (a, deficient, a[:2].copy()):
        for driver in (None, "gelsy", "gelsd", "gelss", "gels"):
            if driver == "gels" and A is deficient:
                continue  # gels assumes full rank
            B = b[:A.shape[0]]
            ours = fabric.linalg.lstsq(fabric.from_numpy(A.copy()), fabric.from_numpy(B.copy()), driver=driver)
            theirs = torch.linalg.lstsq(torch.from_numpy(A.copy()), torch.from_numpy(B.copy()), driver=driver)
            for o, t, name in zip(ours, theirs, ours._fields):
                assert o.shape == tuple(t.shape), (driver, name)
                assert str(o.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (driver, name)
                np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-8, atol=1e-10, err_msg=f"{driver} {name}")


def test_lstsq_residuals_gradient():
    A = fabric.tensor(wellcond(rng(7), (5, 3), np.float64), requires_grad=True)
    B = fabric.tensor(rng(8).standard_normal((5, 2)), requires_grad=True)

    def f(A, B):
        return fabric.linalg.lstsq(A, B, driver="gelsd").residuals

    assert fabric.autograd.gradcheck(f, (A, B))


@pytest.mark.torch
def test_singular_det_gradient_matches_torch():
    import torch

    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.5, -1.0, 2.0]])  # rank 2
    batch = np.stack([a, wellcond(rng(9), (3, 3), np.float64)])
    for x in (a, batch):
        ours = fabric.from_numpy(x.copy()).requires_grad_()
        theirs = torch.from_numpy(x.copy()).requires_grad_()
        fabric.linalg.det(ours).sum().backward()
        torch.linalg.det(theirs).sum().backward()
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-7, atol=1e-10)
    A = fabric.from_numpy(a.copy()).requires_grad_()
    assert fabric.autograd.gradcheck(fabric.linalg.det, (A,))


@pytest.mark.torch
def test_logdet_negative_and_singular():
    import torch

    for x in (-spd(rng(10), (3, 3), np.float64), np.zeros((2, 2))):
        ours, theirs = fabric.logdet(fabric.from_numpy(x.copy())), torch.logdet(torch.from_numpy(x.copy()))
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_matrix_power_zero_joins_graph():
    A = fabric.randn(3, 3, requires_grad=True)
    y = fabric.linalg.matrix_power(A, 0)
    assert y.requires_grad
    np.testing.assert_array_equal(y.detach().numpy(), np.eye(3))
    y.sum().backward()
    np.testing.assert_array_equal(A.grad.numpy(), np.zeros((3, 3)))


def test_einsum_forms():
    a, b = fabric.randn(2, 3), fabric.randn(3, 4)
    ref = (a @ b).numpy()
    np.testing.assert_allclose(fabric.einsum("ij,jk->ik", a, b).numpy(), ref, rtol=1e-5)
    np.testing.assert_allclose(fabric.einsum(" i j , j k -> i k ", a, b).numpy(), ref, rtol=1e-5)
    np.testing.assert_allclose(fabric.einsum("ij,jk", [a, b]).numpy(), ref, rtol=1e-5)
    np.testing.assert_allclose(fabric.einsum(a, [0, 1], b, [1, 2], [0, 2]).numpy(), ref, rtol=1e-5)
    np.testing.assert_allclose(fabric.einsum(a, [0, 1], b, [1, 2]).numpy(), ref, rtol=1e-5)
    x = fabric.arange(6.0).reshape(3, 2)
    np.testing.assert_array_equal(fabric.einsum("ba", x).numpy(), x.numpy().T)
    np.testing.assert_array_equal(fabric.einsum("Ba", x).numpy(), x.numpy())  # uppercase sorts first
    y = fabric.einsum("ij->ij", x)
    y[0, 0] = 100.0
    assert x[0, 0].item() == 0.0  # einsum never returns a view of its input
    r = rng(30)
    for eq, shapes in [("abc,cd,dbe->ae", [(2, 3, 4), (4, 5), (5, 3, 2)]), ("ij,ij,ij->", [(2, 3)] * 3),
                       ("bij,bjk,bkl->bil", [(2, 3, 4), (2, 4, 5), (2, 5, 2)]), ("i,i,i->i", [(4,)] * 3),
                       ("iij,jk->ik", [(3, 3, 2), (2, 4)]), ("ab,cd->dcba", [(2, 3), (4, 5)]),
                       ("abc,bc->", [(2, 3, 4), (3, 4)]), ("ijk,jil->kl", [(2, 3, 4), (3, 2, 5)])]:
        arrays = [r.standard_normal(sh) for sh in shapes]
        np.testing.assert_allclose(fabric.einsum(eq, *[fabric.from_numpy(a) for a in arrays]).numpy(),
                                   np.einsum(eq, *arrays), rtol=1e-10, atol=1e-12, err_msg=eq)


@pytest.mark.torch
def test_einsum_gradients_match_torch():
    import torch

    cases = [("ii->i", [(3, 3)]), ("iij->ji", [(2, 2, 3)]), ("i...,...j->ij", [(3, 2), (2, 4)]),
             ("bij,bjk->bik", [(2, 3, 4), (1, 4, 2)]), ("ij,j->", [(2, 3), (3,)]), ("ii,ij->j", [(3, 3), (3, 2)])]
    for eq, shapes in cases:
        arrays = [rng(i).standard_normal(s) for i, s in enumerate(shapes)]
        ours = [fabric.from_numpy(x.copy()).requires_grad_() for x in arrays]
        theirs = [torch.from_numpy(x.copy()).requires_grad_() for x in arrays]
        fabric.einsum(eq, *ours).sum().backward()
        torch.einsum(eq, *theirs).sum().backward()
        for o, t in zip(ours, theirs):
            np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), rtol=1e-10, err_msg=eq)
        assert fabric.autograd.gradgradcheck(lambda *xs, _eq=eq: fabric.einsum(_eq, *xs),
                                             tuple(fabric.from_numpy(x.copy()).requires_grad_() for x in arrays))


@pytest.mark.torch
def test_cdist_compute_modes():
    import torch

    x1, x2 = rng(11).standard_normal((30, 3)), rng(12).standard_normal((5, 3))
    x2[0] = x1[0]  # a zero distance: gradient zero there in every mode
    for mode in ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"):
        a, b = fabric.from_numpy(x1.copy()).requires_grad_(), fabric.from_numpy(x2.copy()).requires_grad_()
        ta, tb = torch.from_numpy(x1.copy()).requires_grad_(), torch.from_numpy(x2.copy()).requires_grad_()
        d, td = fabric.cdist(a, b, compute_mode=mode), torch.cdist(ta, tb, compute_mode=mode)
        np.testing.assert_allclose(d.detach().numpy(), td.detach().numpy(), rtol=1e-7, atol=1e-7)
        d.sum().backward()
        td.sum().backward()
        np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-7, atol=1e-7)
        np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-7, atol=1e-7)


def test_cross_default_dim_warns():
    a, b = fabric.randn(3, 2), fabric.randn(3, 2)
    with pytest.warns(UserWarning, match="dim"):
        r = fabric.cross(a, b)
    np.testing.assert_allclose(r.numpy(), np.cross(a.numpy(), b.numpy(), axis=0), rtol=1e-6)


def test_ex_variants_report_info():
    bad = np.stack([np.eye(2), [[1.0, 2.0], [2.0, 4.0]]])
    inv, info = fabric.linalg.inv_ex(fabric.from_numpy(bad.copy()))
    assert info.tolist() == [0, 2]
    np.testing.assert_allclose(inv[0].numpy(), np.eye(2))
    _L, info = fabric.linalg.cholesky_ex(fabric.from_numpy(np.stack([np.eye(2), [[1.0, 2.0], [2.0, 1.0]]])))
    assert info.tolist() == [0, 2]
    x, info = fabric.linalg.solve_ex(fabric.from_numpy(bad.copy()), fabric.ones(2, 2, dtype=fabric.float64))
    assert info.tolist() == [0, 2] and np.isnan(x[1].numpy()).all()
    with pytest.raises(fabric.linalg.LinAlgError):
        fabric.linalg.inv_ex(fabric.from_numpy(bad.copy()), check_errors=True)


@pytest.mark.torch
def test_ex_info_matches_torch():
    import torch

    for m in ([[0.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [2.0, 4.0]], [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 1.0, 1.0]]):
        m = np.array(m)
        assert fabric.linalg.inv_ex(fabric.from_numpy(m.copy())).info.item() == \
            torch.linalg.inv_ex(torch.from_numpy(m.copy())).info.item()
    for m in ([[1.0, 2.0], [2.0, 1.0]], [[-1.0, 0.0], [0.0, 1.0]], np.diag([1.0, 1.0, -1.0])):
        m = np.array(m)
        assert fabric.linalg.cholesky_ex(fabric.from_numpy(m.copy())).info.item() == \
            torch.linalg.cholesky_ex(torch.from_numpy(m.copy())).info.item()


@pytest.mark.torch
def test_out_argument():
    import torch

    a = wellcond(rng(13), (3, 3), np.float64)
    out = fabric.empty(0, dtype=fabric.float64)
    r = fabric.linalg.inv(fabric.from_numpy(a.copy()), out=out)
    assert r is out
    np.testing.assert_allclose(out.numpy(), torch.linalg.inv(torch.from_numpy(a)).numpy(), rtol=1e-12)
    out = fabric.empty(3, 3)
    fabric.mm(fabric.ones(3, 2), fabric.ones(2, 3), out=out)
    np.testing.assert_array_equal(out.numpy(), np.full((3, 3), 2.0))


@pytest.mark.torch
@pytest.mark.parametrize("name", ["inv", "det", "cholesky", "eigvalsh", "svdvals", "pinv", "matrix_exp"])
def test_double_backward_matches_torch(name):
    """Hessian-vector products (grad of grad) agree with PyTorch."""
    import torch

    a = spd(rng(14), (3, 3), np.float64) if name in ("cholesky", "eigvalsh") else wellcond(rng(14), (3, 3),
                                                                                          np.float64)
    if name == "matrix_exp":
        a = a * 0.5
    v = rng(15).standard_normal((3, 3))
    res = []
    for lib in (fabric, torch):
        x = (fabric.from_numpy if lib is fabric else torch.from_numpy)(a.copy()).requires_grad_()
        vv = (fabric.from_numpy if lib is fabric else torch.from_numpy)(v.copy())
        xs = (x + x.mT) / 2 if name in ("cholesky", "eigvalsh") else x
        y = getattr(lib.linalg, name)(xs)
        w = (y * y).sum() if y.ndim else y * y
        g, = lib.autograd.grad(w, x, create_graph=True)
        h, = lib.autograd.grad((g * vv).sum(), x)
        res.append(h.detach().numpy())
    np.testing.assert_allclose(res[0], res[1], rtol=1e-7, atol=1e-9)


@pytest.mark.torch
def test_vander_forward_matches_torch():
    import torch

    for x in (np.array([1.5, -2.0, 0.5]), np.array([1, 2, 3], np.int32)):
        for kw in ({}, {"N": 5}, {"increasing": True}):
            ours = fabric.vander(fabric.from_numpy(x.copy()), **kw)
            theirs = torch.vander(torch.from_numpy(x.copy()), **kw)
            assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
            np.testing.assert_allclose(ours.numpy(), theirs.numpy())


def test_linalg_namespace_complete():
    import fabric.linalg as L

    for name in L.__all__:
        assert callable(getattr(L, name)) or name == "LinAlgError"
    assert fabric.linalg.matmul is fabric.matmul
    assert fabric.Tensor.inverse is not None and fabric.Tensor.det is not None


def test_symmetric_ops_read_one_triangle():
    s = symmetric(rng(16), (3, 3), np.float64)
    noisy = s + np.triu(rng(17).standard_normal((3, 3)), 1)  # garbage above the diagonal
    w1 = fabric.linalg.eigvalsh(fabric.from_numpy(s.copy()))
    w2 = fabric.linalg.eigvalsh(fabric.from_numpy(noisy.copy()))
    np.testing.assert_allclose(w1.numpy(), w2.numpy(), rtol=1e-12)
    p = spd(rng(18), (3, 3), np.float64)
    L1 = fabric.linalg.cholesky(fabric.from_numpy(p.copy()))
    L2 = fabric.linalg.cholesky(fabric.from_numpy(p + np.triu(np.ones((3, 3)), 1)))
    np.testing.assert_allclose(L1.numpy(), L2.numpy(), rtol=1e-12)


def test_docstring_examples():
    import fabric.linalg
    import fabric.ops.linalg as L

    for mod in (L, L.products, L.contractions, L.norms, L.triangular, L.solvers, L.decompositions,
                L.matrix_functions, fabric.linalg):
        res = doctest.testmod(mod, extraglobs={"fabric": fabric}, optionflags=doctest.NORMALIZE_WHITESPACE)
        assert res.failed == 0, mod.__name__


@pytest.mark.cuda
def test_cuda_matches_cpu():
    """Forwards and gradients on CuPy agree with the NumPy path."""
    a = wellcond(rng(19), (2, 3, 3), np.float64)
    b = rng(20).standard_normal((2, 3, 2))
    for name, args in [("linalg.inv", (a,)), ("linalg.det", (a,)), ("linalg.solve", (a, b)),
                       ("linalg.cholesky", (spd(rng(21), (2, 3, 3), np.float64),)),
                       ("linalg.eigvalsh", (symmetric(rng(22), (3, 3), np.float64),)), ("linalg.svdvals", (a,)),
                       ("linalg.qr", (a,)), ("linalg.pinv", (a,)), ("linalg.matrix_exp", (a * 0.3,)),
                       ("einsum", ("bij,bjk->bik", a, b)), ("cdist", (b, b)), ("linalg.vector_norm", (a,))]:
        fn = _attr(fabric, name)
        cpu = [fabric.from_numpy(x.copy()).requires_grad_() if isinstance(x, np.ndarray) else x for x in args]
        gpu = [fabric.from_numpy(x.copy()).cuda().requires_grad_() if isinstance(x, np.ndarray) else x
               for x in args]
        rc, rg = fn(*cpu), fn(*gpu)
        rc, rg = (rc[1], rg[1]) if isinstance(rc, tuple) else (rc, rg)
        np.testing.assert_allclose(rg.detach().cpu().numpy(), rc.detach().numpy(), rtol=1e-8, atol=1e-10)
        rc.sum().backward()
        rg.sum().backward()
        for c, g in zip(cpu, gpu):
            if isinstance(c, fabric.Tensor):
                np.testing.assert_allclose(g.grad.cpu().numpy(), c.grad.numpy(), rtol=1e-7, atol=1e-9)
