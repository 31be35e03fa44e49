"""Creation functions beyond the core: triangle indices, logspace, *_like,
empty_strided, and the random samplers vs PyTorch for the same seed."""
from __future__ import annotations

import numpy as np
import pytest

import fabric


@pytest.mark.parametrize("args", [(4, 4), (3, 5, 1), (5, 3, -2), (0, 3), (4, 6, 10)])
def test_triangle_indices(args):
    r, c = args[0], args[1]
    off = args[2] if len(args) > 2 else 0
    lo = fabric.tril_indices(r, c, off)
    up = fabric.triu_indices(r, c, off)
    er, ec = np.tril_indices(r, off, c)
    np.testing.assert_array_equal(lo.numpy(), np.stack([er, ec]))
    er, ec = np.triu_indices(r, off, c)
    np.testing.assert_array_equal(up.numpy(), np.stack([er, ec]))
    assert lo.dtype == fabric.int64


def test_logspace_full_like_empty_strided():
    np.testing.assert_allclose(fabric.logspace(0, 2, 3).numpy(), [1.0, 10.0, 100.0], rtol=1e-6)
    np.testing.assert_allclose(fabric.logspace(0, 3, 4, base=2).numpy(), [1, 2, 4, 8])
    x = fabric.zeros(2, 3, dtype=fabric.float64)
    f = fabric.full_like(x, 1.5)
    assert f.dtype == fabric.float64 and f.tolist() == [[1.5] * 3] * 2
    e = fabric.empty_strided((2, 3), (1, 2))
    assert e.shape == (2, 3) and e.stride() == (1, 2)


@pytest.mark.torch
@pytest.mark.parametrize("fn", ["rand_like", "randn_like", "normal", "bernoulli", "multinomial", "poisson",
                                "randint_like", "tril_indices", "logspace"])
def test_matches_torch_for_the_same_seed(fn):
    import torch

    def run(lib):
        lib.manual_seed(7)
        x = lib.ones(5, 4)
        if fn == "rand_like":
            return lib.rand_like(x)
        if fn == "randn_like":
            return lib.randn_like(x)
        if fn == "normal":
            return lib.normal(lib.arange(4.0), lib.ones(4) * 2)
        if fn == "bernoulli":
            return lib.bernoulli(lib.full((20,), 0.3))
        if fn == "multinomial":
            return lib.multinomial(lib.tensor([[0.1, 0.2, 0.7], [0.5, 0.4, 0.1]]), 5, replacement=True)
        if fn == "poisson":
            return lib.poisson(lib.full((10,), 3.0))
        if fn == "randint_like":
            return lib.randint_like(x, 3, 9)
        if fn == "tril_indices":
            return lib.tril_indices(5, 4, -1)
        return lib.logspace(-2, 2, 9)

    a, b = run(fabric), run(torch)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]


def test_requires_grad_on_integer_tensors_raises_pytorchs_messages():
    import fabric

    with pytest.raises(RuntimeError, match="^Only Tensors of floating point and complex dtype can require"):
        fabric.zeros(2, dtype=fabric.int64, requires_grad=True)
    with pytest.raises(RuntimeError, match="^Only Tensors of floating point and complex dtype can require"):
        fabric.tensor([1, 2], requires_grad=True)
    with pytest.raises(RuntimeError, match="^only Tensors of floating point dtype can require gradients"):
        fabric.ones(2, dtype=fabric.int64).requires_grad_()
