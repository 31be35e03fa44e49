"""nn.EmbeddingBag(sparse=True) / F.embedding_bag(sparse=True): sparse weight
gradients for sum and mean bags (per_sample_weights, padding_idx, 2-D input,
include_last_offset), PyTorch's errors, and training with SparseAdam / SGD,
against PyTorch where installed."""
from __future__ import annotations

import numpy as np
import pytest

import fabric
import fabric.nn.functional as F

INP = [1, 2, 4, 1, 3, 0]
OFF = [0, 2, 2]  # the middle bag is empty


def _bag_grad(lib, mode, **kw):
    w = lib.tensor(np.arange(10.0).reshape(5, 2) / 7, dtype=lib.float64, requires_grad=True)
    inp = lib.tensor(kw.pop("inp", INP))
    off = kw.pop("off", OFF)
    gy_rows = kw.pop("gy_rows", 3)
    psw = kw.pop("psw", None)
    out = lib.nn.functional.embedding_bag(inp, w, None if off is None else lib.tensor(off), mode=mode, sparse=True,
                          per_sample_weights=None if psw is None else lib.tensor(psw, dtype=lib.float64), **kw)
    out.backward(lib.tensor(np.arange(2.0 * gy_rows).reshape(gy_rows, 2)))
    return out, w.grad


def test_sum_and_mean_grads_are_sparse_rows_per_entry():
    _, g = _bag_grad(fabric, "sum")
    assert g.is_sparse and not g.is_coalesced() and g.shape == (5, 2)
    np.testing.assert_array_equal(g._indices().numpy(), [INP])
    np.testing.assert_array_equal(g._values().numpy(), [[0, 1], [0, 1], [4, 5], [4, 5], [4, 5], [4, 5]])
    _, g = _bag_grad(fabric, "mean", padding_idx=1)
    np.testing.assert_array_equal(g._indices().numpy(), [[2, 4, 3, 0]])  # padding entries dropped
    np.testing.assert_allclose(g._values().numpy(), [[0, 1], [4 / 3, 5 / 3], [4 / 3, 5 / 3], [4 / 3, 5 / 3]])


def test_sparse_grad_equals_dense_grad():
    for mode, kw in (("sum", {"psw": [1., 2., 3., 4., 5., 6.]}), ("mean", {"padding_idx": 3}), ("sum", {})):
        w = fabric.randn(5, 2, dtype=fabric.float64, requires_grad=True)
        grads = []
        for sparse in (False, True):
            w.grad = None
            psw = kw.get("psw")
            out = F.embedding_bag(fabric.tensor(INP), w, fabric.tensor(OFF), mode=mode, sparse=sparse,
                                  padding_idx=kw.get("padding_idx"),
                                  per_sample_weights=None if psw is None else fabric.tensor(psw, dtype=fabric.float64))
            (out * fabric.arange(6.0, dtype=fabric.float64).reshape(3, 2)).sum().backward()
            grads.append(w.grad.to_dense() if sparse else w.grad)
        np.testing.assert_allclose(grads[1].numpy(), grads[0].numpy())


def test_errors():
    with pytest.raises(ValueError, match="max mode does not support sparse weights"):
        fabric.nn.EmbeddingBag(3, 2, mode="max", sparse=True)(fabric.tensor([[0, 1]]))
    w = fabric.ones(5, 2, requires_grad=True)
    out = F.embedding_bag(fabric.tensor(INP), w, fabric.tensor(OFF), mode="sum", sparse=True, scale_grad_by_freq=True)
    with pytest.raises(RuntimeError, match="scale_grad_by_freq not supported with sparse gradients"):
        out.sum().backward()
    assert w.grad is None


@pytest.mark.torch
@pytest.mark.parametrize("mode, kw", [
    ("sum", {}), ("mean", {}), ("sum", {"psw": [1., 2., 3., 4., 5., 6.]}), ("mean", {"padding_idx": 1}),
    ("sum", {"padding_idx": -1, "psw": [1., 2., 3., 4., 5., 6.]}),
    ("mean", {"inp": [[1, 2, 4], [1, 3, 0]], "off": None, "gy_rows": 2, "padding_idx": 1}),
    ("mean", {"off": [0, 2, 6], "include_last_offset": True, "gy_rows": 2}),
])
def test_grads_match_torch(mode, kw):
    import torch
    out, g = _bag_grad(fabric, mode, **dict(kw))
    tout, tg = _bag_grad(torch, mode, **dict(kw))
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy())
    assert g.is_sparse and tg.is_sparse and g.is_coalesced() == tg.is_coalesced()
    np.testing.assert_array_equal(g._indices().numpy(), tg._indices().numpy())
    np.testing.assert_allclose(g._values().numpy(), tg._values().numpy(), rtol=1e-12)


@pytest.mark.torch
@pytest.mark.parametrize("opt_name, kw", [("SparseAdam", {"lr": 0.05}), ("SGD", {"lr": 0.1}),
                                          ("SGD", {"lr": 0.1, "momentum": 0.9})])
@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_training_matches_torch(opt_name, kw, mode):
    import torch

    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((7, 3))
    batches = [rng.integers(0, 7, 8) for _ in range(3)]
    weights = [rng.random(8) for _ in range(3)]
    targets = [rng.standard_normal((3, 3)) for _ in range(3)]

    def run(lib):
        bag = lib.nn.EmbeddingBag(7, 3, mode=mode, sparse=True, padding_idx=2, dtype=lib.float64)
        with lib.no_grad():
            bag.weight.copy_(lib.tensor(w0))
        opt = getattr(lib.optim, opt_name)(bag.parameters(), **kw)
        for b, pw, t in zip(batches, weights, targets):
            opt.zero_grad()
            psw = lib.tensor(pw) if mode == "sum" else None
            out = bag(lib.tensor(b), lib.tensor([0, 3, 3]), per_sample_weights=psw)
            ((out - lib.tensor(t)) ** 2).sum().backward()
            assert bag.weight.grad.is_sparse
            opt.step()
        return bag.weight.detach().numpy()

    np.testing.assert_allclose(run(fabric), run(torch), rtol=1e-10, atol=1e-12)
