"""nn.Embedding(sparse=True): sparse weight gradients, and the optimizers that
take them (SparseAdam, SGD, Adagrad), against PyTorch where installed."""
from __future__ import annotations

import numpy as np
import pytest

import fabric
import fabric.nn.functional as F

IDX = [[1, 3, 1], [0, 3, 4]]


def test_embedding_sparse_grad_values():
    w = fabric.randn(6, 3, dtype=fabric.float64, requires_grad=True)
    out = F.embedding(fabric.tensor(IDX), w, sparse=True)
    gy = fabric.randn(2, 3, 3, dtype=fabric.float64)
    (out * gy).sum().backward()
    assert w.grad.is_sparse and not w.grad.is_coalesced() and w.grad._nnz() == 6
    ref = np.zeros((6, 3))
    np.add.at(ref, np.array(IDX).reshape(-1), gy.numpy().reshape(6, 3))
    np.testing.assert_allclose(w.grad.to_dense().numpy(), ref)
    (out * gy).sum().backward()  # a second backward accumulates sparse + sparse
    np.testing.assert_allclose(w.grad.to_dense().numpy(), 2 * ref)


def test_embedding_sparse_padding_and_freq():
    w = fabric.ones(6, 2, requires_grad=True)
    emb = fabric.nn.Embedding.from_pretrained(w.detach(), freeze=False, sparse=True, padding_idx=1,
                                              scale_grad_by_freq=True)
    emb(fabric.tensor(IDX)).sum().backward()
    g = emb.weight.grad.coalesce()
    np.testing.assert_array_equal(g.indices().numpy(), [[0, 3, 4]])
    np.testing.assert_allclose(g.to_dense().numpy()[[0, 3, 4]], np.ones((3, 2)))


def test_dense_optimizers_reject_or_accept_sparse():
    emb = fabric.nn.Embedding(5, 2, sparse=True)
    emb(fabric.tensor([0, 2])).sum().backward()
    with pytest.raises(RuntimeError, match="Adam does not support sparse gradients"):
        fabric.optim.Adam(emb.parameters()).step()
    with pytest.raises(RuntimeError, match="weight_decay option is not compatible with sparse gradients"):
        fabric.optim.Adagrad(emb.parameters(), weight_decay=0.1).step()
    dense = fabric.nn.Linear(2, 2)
    dense(fabric.ones(1, 2)).sum().backward()
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients"):
        fabric.optim.SparseAdam(dense.parameters()).step()
    with pytest.raises(ValueError, match="Invalid learning rate"):
        fabric.optim.SparseAdam(dense.parameters(), lr=0)


def test_sparse_adam_only_touches_rows():
    emb = fabric.nn.Embedding(5, 2, sparse=True)
    before = emb.weight.detach().clone().numpy()
    opt = fabric.optim.SparseAdam(emb.parameters(), lr=0.1)
    emb(fabric.tensor([0, 2, 2])).sum().backward()
    opt.step()
    after = emb.weight.detach().numpy()
    np.testing.assert_array_equal(after[[1, 3, 4]], before[[1, 3, 4]])
    np.testing.assert_allclose(after[[0, 2]], before[[0, 2]] - 0.1, rtol=1e-5)  # Adam's first step is lr*sign


@pytest.mark.torch
@pytest.mark.parametrize("opt_name, kw", [("SparseAdam", {"lr": 0.05}), ("SGD", {"lr": 0.1}),
                                          ("SGD", {"lr": 0.1, "momentum": 0.9}), ("Adagrad", {"lr": 0.1})])
def test_training_matches_torch(opt_name, kw):
    import torch

    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((7, 3))
    batches = [rng.integers(0, 7, (4, 2)) for _ in range(4)]
    targets = [rng.standard_normal((4, 2, 3)) for _ in range(4)]

    def run(lib):
        emb = lib.nn.Embedding(7, 3, sparse=True, dtype=lib.float64)
        with lib.no_grad():
            emb.weight.copy_(lib.tensor(w0))
        opt = getattr(lib.optim, opt_name)(emb.parameters(), **kw)
        for b, t in zip(batches, targets):
            opt.zero_grad()
            ((emb(lib.tensor(b)) - lib.tensor(t)) ** 2).sum().backward()
            assert emb.weight.grad.is_sparse
            opt.step()
        return emb.weight.detach().numpy()

    np.testing.assert_allclose(run(fabric), run(torch), rtol=1e-10, atol=1e-12)
