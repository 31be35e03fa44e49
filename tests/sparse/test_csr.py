"""Sparse CSR tensors: creation, attributes, conversions, printing, CSR @ dense
with gradients (gradcheck in float64; SciPy and NumPy kernels), pointwise ops
and PyTorch's errors, against PyTorch where installed."""
from __future__ import annotations

import numpy as np
import pytest

import fabric
from fabric.autograd import gradcheck, gradgradcheck
from fabric.sparse import _kernels

DENSE = [[0.0, 2.0, 0.0], [3.0, 0.0, 4.0], [0.0, 0.0, 0.0]]
CROW, COL, VAL = [0, 1, 3, 3], [1, 0, 2], [2.0, 3.0, 4.0]


def _csr(lib, dtype=None, **kw):
    return lib.sparse_csr_tensor(lib.tensor(CROW), lib.tensor(COL), lib.tensor(VAL, dtype=dtype or lib.float32), **kw)


def test_creation_attributes_and_conversions():
    c = fabric.tensor(DENSE).to_sparse_csr()
    assert c.layout is fabric.sparse_csr and repr(c.layout) == "fabric.sparse_csr"
    assert c.is_sparse_csr and not c.is_sparse and c.shape == (3, 3) and c._nnz() == 3 and c.dim() == 2
    assert c.sparse_dim() == 2 and c.dense_dim() == 0 and c.numel() == 9 and c.dtype is fabric.float32
    assert c.crow_indices().tolist() == CROW and c.col_indices().tolist() == COL and c.values().tolist() == VAL
    np.testing.assert_array_equal(c.to_dense().numpy(), DENSE)
    made = _csr(fabric)
    assert made.shape == (3, 3) and made.to_dense().tolist() == DENSE  # size inferred
    coo = c.to_sparse_coo()
    assert coo.is_sparse and coo.is_coalesced() and coo.indices().tolist() == [[0, 1, 1], [1, 0, 2]]
    assert c.to_sparse().layout is fabric.sparse_coo
    back = coo.to_sparse_csr()
    assert back.crow_indices().tolist() == CROW and back.values().tolist() == VAL
    assert fabric.tensor(DENSE).to_sparse(layout=fabric.sparse_csr).col_indices().tolist() == COL
    assert c.double().dtype is fabric.float64 and c.double().layout is fabric.sparse_csr
    assert c.clone().values().tolist() == VAL and c.detach().layout is fabric.sparse_csr
    e = fabric.zeros(2, 3).to_sparse_csr()
    assert e._nnz() == 0 and e.crow_indices().tolist() == [0, 0, 0] and e.to_dense().tolist() == [[0.0] * 3] * 2
    i32 = fabric.sparse_csr_tensor(fabric.tensor(CROW, dtype=fabric.int32), fabric.tensor(COL, dtype=fabric.int32),
                                   fabric.tensor(VAL), (3, 4))
    assert i32.crow_indices().dtype is fabric.int32 and i32.to_dense().shape == (3, 4)


def test_errors():
    c = _csr(fabric)
    for call, msg in ((c.indices, "indices expected sparse coordinate tensor layout but got SparseCsr"),
                      (c.coalesce, "coalesce expected sparse coordinate tensor layout but got SparseCsr"),
                      (c.stride, "Sparse CSR tensors do not have strides"),
                      (fabric.ones(2, 2).crow_indices,
                       "crow_indices expected sparse row compressed tensor layout but got Strided"),
                      (lambda: c / 2, "unsupported tensor layout: SparseCsr"),
                      (lambda: fabric.cos(c), "unsupported tensor layout: SparseCsr"),
                      (lambda: c ** 2, "unsupported tensor layout: SparseCsr"),
                      (lambda: c.sum(0), "reduction operations on CSR tensors with keepdim=False is unsupported"),
                      (lambda: c @ fabric.ones(2, 2), r"mat1 and mat2 shapes cannot be multiplied \(3x3 and 2x2\)"),
                      (lambda: c @ fabric.ones(3, 2, dtype=fabric.float64), "expected scalar type Float but found Double"),
                      (lambda: fabric.sparse_csr_tensor(CROW, COL, VAL, (3, 2), check_invariants=True),
                       "`0 <= col_indices < ncols` is not satisfied."),
                      (lambda: fabric.sparse_csr_tensor([0, 2, 1, 3], COL, VAL, check_invariants=True),
                       "is not satisfied")):
        with pytest.raises(RuntimeError, match=msg):
            call()
    with pytest.raises(NotImplementedError, match="2-D"):
        fabric.zeros(2, 2, 2).to_sparse_csr()


def test_pointwise_and_sums():
    c = _csr(fabric)
    d = fabric.tensor(DENSE)
    for r, want in ((fabric.sin(c), np.sin(DENSE)), (c * c, np.square(DENSE)), (c + c, 2 * np.array(DENSE)),
                    (c * 3, 3 * np.array(DENSE)), (-c, -np.array(DENSE)), (fabric.relu(c), DENSE),
                    (c - c * 2, -np.array(DENSE))):
        assert r.layout is fabric.sparse_csr
        np.testing.assert_allclose(r.to_dense().numpy(), want, rtol=1e-6)
    np.testing.assert_array_equal((c + d).numpy(), 2 * d.numpy())
    np.testing.assert_array_equal((d + c).numpy(), 2 * d.numpy())
    assert c.sum().item() == 9.0
    k = c.sum(0, keepdim=True)
    assert k.layout is fabric.sparse_csr and k.to_dense().tolist() == [[3.0, 2.0, 4.0]]


@pytest.mark.parametrize("use_scipy", [True, False])
def test_products_and_kernels(monkeypatch, use_scipy):
    if use_scipy and _kernels._scipy_sparse is None:
        pytest.skip("SciPy is not installed: the SciPy kernel path cannot run")
    if not use_scipy:
        monkeypatch.setattr(_kernels, "_scipy_sparse", None)
    c = _csr(fabric, fabric.float64)
    x = fabric.tensor(np.arange(6.0).reshape(3, 2), dtype=fabric.float64)
    want = np.array(DENSE) @ x.numpy()
    for r in (fabric.sparse.mm(c, x), c @ x, fabric.mm(c, x), fabric.matmul(c, x), fabric.spmm(c, x),
              fabric.addmm(fabric.zeros(3, 2, dtype=fabric.float64), c, x)):
        np.testing.assert_allclose(r.numpy(), want)
    np.testing.assert_allclose((c @ fabric.ones(3, dtype=fabric.float64)).numpy(), np.array(DENSE).sum(1))
    np.testing.assert_allclose((x.t() @ c).numpy(), x.numpy().T @ np.array(DENSE))
    np.testing.assert_allclose(fabric.sparse.addmm(x, c, x, beta=2.0, alpha=0.5).numpy(), 2 * x.numpy() + 0.5 * want)


def test_gradcheck_values_and_dense():
    v = fabric.tensor(VAL, dtype=fabric.float64, requires_grad=True)
    x = fabric.randn(3, 2, dtype=fabric.float64, requires_grad=True)

    def run(vals, dense):
        c = fabric.sparse_csr_tensor(CROW, COL, vals, (3, 3))
        return fabric.sparse.mm(c, dense) + (c @ dense) * 2 + fabric.sin(c).to_dense().sum()

    assert gradcheck(run, (v, x)) and gradgradcheck(run, (v, x))


def test_leaf_grad_is_csr():
    c = _csr(fabric, fabric.float64, requires_grad=True)
    x = fabric.ones(3, 2, dtype=fabric.float64)
    fabric.sparse.mm(c, x).sum().backward()
    g = c.grad
    assert g.layout is fabric.sparse_csr and g.crow_indices().tolist() == CROW and g.values().tolist() == [2.0] * 3


def test_printing():
    c = _csr(fabric, fabric.float64, requires_grad=True)
    assert repr(c) == ("tensor(crow_indices=tensor([0, 1, 3, 3]),\n"
                       "       col_indices=tensor([1, 0, 2]),\n"
                       "       values=tensor([2., 3., 4.]), size=(3, 3), nnz=3, dtype=fabric.float64,\n"
                       "       layout=fabric.sparse_csr, requires_grad=True)")


@pytest.mark.torch
def test_matches_torch():
    import torch

    c, tc = _csr(fabric, fabric.float64), _csr(torch, torch.float64)
    assert repr(c).replace("fabric", "torch") == repr(tc)
    e, te = fabric.zeros(2, 3).to_sparse_csr(), torch.zeros(2, 3).to_sparse_csr()
    assert repr(e).replace("fabric", "torch") == repr(te)
    for f in (lambda m: m.sin(), lambda m: m * m, lambda m: m + m, lambda m: m.abs() * 2, lambda m: -m):
        r, tr = f(c), f(tc)
        assert repr(r.layout).replace("fabric", "torch") == str(tr.layout)
        np.testing.assert_array_equal(r.crow_indices().numpy(), tr.crow_indices().numpy())
        np.testing.assert_array_equal(r.col_indices().numpy(), tr.col_indices().numpy())
        np.testing.assert_allclose(r.values().numpy(), tr.values().numpy(), rtol=1e-12)
    coo, tcoo = c.to_sparse_coo(), tc.to_sparse_coo()
    assert coo.is_coalesced() == tcoo.is_coalesced()
    np.testing.assert_array_equal(coo.indices().numpy(), tcoo.indices().numpy())

    def grads(lib, leaf):
        m = _csr(lib, lib.float64, requires_grad=True)
        x = lib.tensor(np.arange(6.0).reshape(3, 2), requires_grad=True)
        (lib.sparse.mm(m, x) ** 2).sum().backward()
        return m.grad, x.grad

    (g, gx), (tg, tgx) = grads(fabric, True), grads(torch, True)
    assert tg.layout is torch.sparse_csr and g.layout is fabric.sparse_csr
    np.testing.assert_allclose(g.values().numpy(), tg.values().numpy(), rtol=1e-12)
    np.testing.assert_allclose(gx.numpy(), tgx.numpy(), rtol=1e-12)


def test_save_load_round_trip():
    import io
    c = _csr(fabric, fabric.float64)
    s = fabric.sparse_coo_tensor([[0, 1, 0], [1, 0, 1]], [1.0, 2.0, 3.0], (2, 2))
    buf = io.BytesIO()
    fabric.save({"c": c, "s": s, "sc": s.coalesce()}, buf)
    buf.seek(0)
    out = fabric.load(buf)
    assert out["c"].layout is fabric.sparse_csr and out["c"].dtype is fabric.float64
    assert out["c"].crow_indices().tolist() == CROW and out["c"].values().tolist() == VAL
    assert not out["s"].is_coalesced() and out["s"]._indices().tolist() == [[0, 1, 0], [1, 0, 1]]
    assert out["sc"].is_coalesced() and out["sc"].to_dense().tolist() == [[0.0, 4.0], [2.0, 0.0]]


@pytest.mark.torch
def test_checkpoints_interchange_with_torch():
    import io

    import torch
    buf = io.BytesIO()
    fabric.save({"c": _csr(fabric), "s": fabric.tensor(DENSE).to_sparse()}, buf)
    buf.seek(0)
    theirs = torch.load(buf)
    assert theirs["c"].layout is torch.sparse_csr and theirs["c"].crow_indices().tolist() == CROW
    assert theirs["s"].is_coalesced() and theirs["s"].to_dense().tolist() == DENSE
    buf = io.BytesIO()
    torch.save({"c": _csr(torch), "s": torch.tensor(DENSE).to_sparse()}, buf)
    buf.seek(0)
    ours = fabric.load(buf)
    assert ours["c"].layout is fabric.sparse_csr and ours["c"].to_dense().tolist() == DENSE
    assert ours["s"].is_coalesced() and ours["s"].to_dense().tolist() == DENSE
    # an untrusted file: an index past the size, or a false "coalesced" flag, is refused on load
    for bad in (torch.sparse_coo_tensor(torch.tensor([[0, 5]]), torch.tensor([1.0, 2.0]), (3,)),
                torch.sparse_csr_tensor(torch.tensor([0, 1, 2]), torch.tensor([0, 7]), torch.tensor([1.0, 2.0]),
                                        (2, 3)),
                torch.sparse_coo_tensor(torch.tensor([[1, 0]]), torch.tensor([1.0, 2.0]), (3,), is_coalesced=True)):
        buf = io.BytesIO()
        torch.save(bad, buf)
        buf.seek(0)
        with pytest.raises(RuntimeError):
            fabric.load(buf)


@pytest.mark.torch
def test_repr_wraps_as_torch():
    import torch
    for lib_fn in (lambda lib: lib.tensor(np.arange(40.0).reshape(2, 20) % 3).to_sparse_csr(),
                   lambda lib: lib.tensor(np.arange(40.0).reshape(2, 20) % 3).to_sparse(),
                   lambda lib: lib.tensor([[0.0, 2.0], [3.0, 0.0]], dtype=lib.float64).to_sparse_csr().requires_grad_(),
                   lambda lib: lib.zeros(3, 2).to_sparse_csr()):
        assert repr(lib_fn(fabric)).replace("fabric", "torch") == repr(lib_fn(torch))
