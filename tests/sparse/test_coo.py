"""Sparse COO tensors: creation, conversion, coalesce, printing, sparse @ dense
with gradients (gradcheck in float64 and against PyTorch where installed)."""
from __future__ import annotations

import numpy as np
import pytest

import fabric
from fabric.sparse import _kernels

IDX = [[0, 1, 1, 0], [2, 0, 2, 2]]  # (0, 2) appears twice: uncoalesced
VAL = [3.0, 4.0, 5.0, 1.0]


def _dense_ref():
    a = np.zeros((2, 3))
    for r, c, v in zip(*IDX, VAL):
        a[r, c] += v
    return a


def test_creation_and_attributes():
    s = fabric.sparse_coo_tensor(IDX, VAL, (2, 3))
    assert s.is_sparse and s.layout == fabric.sparse_coo and repr(s.layout) == "fabric.sparse_coo"
    assert fabric.ones(2).layout == fabric.strided and not fabric.ones(2).is_sparse
    assert s.shape == (2, 3) and s.dim() == 2 and s.sparse_dim() == 2 and s.dense_dim() == 0
    assert s._nnz() == 4 and not s.is_coalesced() and s.dtype is fabric.float32
    np.testing.assert_array_equal(s.to_dense().numpy(), _dense_ref())
    with pytest.raises(RuntimeError, match="uncoalesced"):
        s.indices()
    c = s.coalesce()
    assert c.is_coalesced() and c._nnz() == 3
    np.testing.assert_array_equal(c.indices().numpy(), [[0, 1, 1], [2, 0, 2]])
    np.testing.assert_array_equal(c.values().numpy(), [4.0, 4.0, 5.0])
    assert fabric.sparse_coo_tensor([[0, 2]], [1.0, 2.0]).shape == (3,)  # size inferred


def test_hybrid_and_to_sparse_dims():
    x = fabric.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]])
    s = x.to_sparse(1)
    assert s.sparse_dim() == 1 and s.dense_dim() == 1 and s._nnz() == 2
    np.testing.assert_array_equal(s.values().numpy(), [[1.0, 0.0], [0.0, 2.0]])
    np.testing.assert_array_equal(s.to_dense().numpy(), x.numpy())
    e = fabric.zeros(2, 3).to_sparse()
    assert e._nnz() == 0 and e.to_dense().shape == (2, 3)
    z = fabric.tensor(5.0).to_sparse()
    assert z.dim() == 0 and z.to_dense().item() == 5.0


def test_bad_inputs():
    with pytest.raises(RuntimeError, match="same nnz"):
        fabric.sparse_coo_tensor(IDX, [1.0], (2, 3))
    with pytest.raises(RuntimeError, match="size is inconsistent with indices: for dim 1, size is 2 but found index 2"):
        fabric.sparse_coo_tensor(IDX, VAL, (2, 2), check_invariants=True)
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
        fabric.sparse.mm(fabric.sparse_coo_tensor(IDX, VAL, (2, 3)), fabric.ones(2, 2))


def test_arith():
    s = fabric.sparse_coo_tensor(IDX, VAL, (2, 3))
    ref = _dense_ref()
    np.testing.assert_array_equal((-s).to_dense().numpy(), -ref)
    np.testing.assert_array_equal((s * 2).to_dense().numpy(), 2 * ref)
    np.testing.assert_array_equal((2 * s).to_dense().numpy(), 2 * ref)
    np.testing.assert_array_equal((s / 2).to_dense().numpy(), ref / 2)
    np.testing.assert_array_equal((s + s).to_dense().numpy(), 2 * ref)
    np.testing.assert_array_equal((s - s).coalesce().to_dense().numpy(), 0 * ref)
    d = fabric.ones(2, 3)
    np.testing.assert_array_equal((d + s).numpy(), ref + 1)
    with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported. Use add\(dense, sparse\) instead."):
        s + d
    np.testing.assert_array_equal((s * (d * 3)).to_dense().numpy(), 3 * ref)
    assert fabric.sparse.sum(s).item() == ref.sum()
    np.testing.assert_array_equal(s.t().to_dense().numpy(), ref.T)


@pytest.mark.parametrize("use_scipy", [True, False])
def test_spmm_kernels_agree(use_scipy):
    if use_scipy:
        pytest.importorskip("scipy")
    rng = np.random.default_rng(0)
    row, col = np.array(IDX[0]), np.array(IDX[1])
    d = rng.standard_normal((3, 4))
    out = _kernels.spmm(row, col, np.array(VAL), (2, 3), d, use_scipy=use_scipy)
    np.testing.assert_allclose(out, _dense_ref() @ d)


def test_mm_forward_and_entry_points():
    s = fabric.sparse_coo_tensor(IDX, VAL, (2, 3))
    d = fabric.randn(3, 4)
    ref = _dense_ref() @ d.numpy()
    for out in (fabric.sparse.mm(s, d), fabric.mm(s, d), s @ d, fabric.matmul(s, d), fabric.spmm(s, d), s.mm(d)):
        np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5)
    np.testing.assert_allclose((s @ d[:, 0]).numpy(), ref[:, 0], rtol=1e-5)
    np.testing.assert_allclose(fabric.addmm(fabric.ones(2, 4), s, d, beta=2.0).numpy(), ref + 2, rtol=1e-5)
    np.testing.assert_allclose(fabric.sparse.addmm(fabric.ones(2, 4), s, d, alpha=0.5).numpy(), ref / 2 + 1, rtol=1e-5)
    np.testing.assert_allclose(fabric.mm(d.t(), s.t()).numpy(), ref.T, rtol=1e-5)  # dense @ sparse
    ss = fabric.sparse.mm(s, s.t())
    assert ss.is_sparse
    np.testing.assert_allclose(ss.to_dense().numpy(), _dense_ref() @ _dense_ref().T)


def test_mm_gradcheck():
    idx = fabric.tensor(IDX)
    v = fabric.tensor(VAL, dtype=fabric.float64, requires_grad=True)
    d = fabric.randn(3, 2, dtype=fabric.float64, requires_grad=True)

    def f(v, d):
        return fabric.sparse.mm(fabric.sparse_coo_tensor(idx, v, (2, 3)), d)

    assert fabric.autograd.gradcheck(f, (v, d))
    assert fabric.autograd.gradgradcheck(f, (v, d))
    assert fabric.autograd.gradcheck(lambda v: fabric.sparse_coo_tensor(idx, v, (2, 3)).to_dense(), (v,))
    x = fabric.randn(3, 3, dtype=fabric.float64, requires_grad=True)
    assert fabric.autograd.gradcheck(lambda x: (x * 1).to_sparse().to_dense(), (x,))


def test_sparse_leaf_grad_is_sparse():
    s = fabric.sparse_coo_tensor(IDX, VAL, (2, 3)).coalesce().requires_grad_()
    assert s.requires_grad and s.is_leaf
    d = fabric.ones(3, 2, requires_grad=True)
    (fabric.sparse.mm(s, d) ** 2).sum().backward()
    assert s.grad.is_sparse
    np.testing.assert_array_equal(s.grad.indices().numpy(), s.indices().numpy())
    np.testing.assert_allclose(s.grad.values().numpy(), [16.0, 36.0, 36.0])


def test_printing():
    s = fabric.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [3.0, 4.0, 5.0], (2, 3))
    assert repr(s) == ("tensor(indices=tensor([[0, 1, 1],\n"
                       "                       [2, 0, 2]]),\n"
                       "       values=tensor([3., 4., 5.]),\n"
                       "       size=(2, 3), nnz=3, layout=fabric.sparse_coo)")
    assert repr(s.double().requires_grad_()).endswith(  # wrapped at the line width, as PyTorch
        "size=(2, 3), nnz=3, dtype=fabric.float64, layout=fabric.sparse_coo,\n       requires_grad=True)")
    e = fabric.sparse_coo_tensor(fabric.zeros(2, 0, dtype=fabric.long), fabric.zeros(0), (2, 2))
    assert repr(e) == ("tensor(indices=tensor([], size=(2, 0)),\n       values=tensor([], size=(0,)),\n"
                       "       size=(2, 2), nnz=0, layout=fabric.sparse_coo)")


def _to_torch(s, torch):
    return torch.sparse_coo_tensor(torch.tensor(s._indices().numpy()), torch.tensor(s._values().detach().numpy()),
                                   tuple(s.shape))


@pytest.mark.torch
def test_matches_torch():
    import torch

    rng = np.random.default_rng(3)
    a = rng.standard_normal((5, 4)) * (rng.random((5, 4)) < 0.4)
    d = rng.standard_normal((4, 3))
    s, ts = fabric.tensor(a).to_sparse(), torch.tensor(a).to_sparse()
    np.testing.assert_array_equal(s.indices().numpy(), ts.indices().numpy())
    np.testing.assert_array_equal(s.values().detach().numpy(), ts.values().numpy())
    assert str(s).replace("fabric", "torch") == str(ts)
    s.requires_grad_()
    ts.requires_grad_()
    fd = fabric.tensor(d, requires_grad=True)
    td = torch.tensor(d, requires_grad=True)
    (fabric.sparse.mm(s, fd).sin().sum()).backward()
    (torch.sparse.mm(ts, td).sin().sum()).backward()
    np.testing.assert_allclose(fd.grad.numpy(), td.grad.numpy(), rtol=1e-12)
    tg = ts.grad.coalesce()
    np.testing.assert_array_equal(s.grad.indices().numpy(), tg.indices().numpy())
    np.testing.assert_allclose(s.grad.values().numpy(), tg.values().numpy(), rtol=1e-12)
    u = fabric.sparse_coo_tensor(IDX, VAL, (2, 3)).coalesce()
    tu = torch.sparse_coo_tensor(torch.tensor(IDX), torch.tensor(VAL), (2, 3)).coalesce()
    assert str(u).replace("fabric", "torch") == str(tu)


def test_softmax_gradcheck():
    idx = fabric.tensor([[0, 0, 1, 2], [0, 2, 1, 2]])
    v = fabric.tensor([1.0, 2.0, 3.0, -1.0], dtype=fabric.float64, requires_grad=True)
    for fn in (fabric.sparse.softmax, fabric.sparse.log_softmax):
        for dim in (0, 1, -1):
            assert fabric.autograd.gradcheck(
                lambda v, fn=fn, dim=dim: fn(fabric.sparse_coo_tensor(idx, v, (3, 3)), dim)._values(), (v,))
    out = fabric.sparse.softmax(fabric.sparse_coo_tensor(idx, v, (3, 3)), 1)
    np.testing.assert_allclose(out.values().detach().numpy()[:2], np.exp([1.0, 2.0]) / np.exp([1.0, 2.0]).sum())
    np.testing.assert_allclose(out.values().detach().numpy()[2:], [1.0, 1.0])


@pytest.mark.torch
def test_softmax_matches_torch():
    import torch

    rng = np.random.default_rng(5)
    a = rng.standard_normal((4, 5)) * (rng.random((4, 5)) < 0.5)
    for dim in (0, 1):
        for name in ("softmax", "log_softmax"):
            f = getattr(fabric.sparse, name)(fabric.tensor(a).to_sparse(), dim)
            t = getattr(torch.sparse, name)(torch.tensor(a).to_sparse(), dim).coalesce()
            np.testing.assert_array_equal(f.indices().numpy(), t.indices().numpy())
            np.testing.assert_allclose(f.values().detach().numpy(), t.values().numpy(), rtol=1e-12)
