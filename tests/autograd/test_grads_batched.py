"""autograd.grad(is_grads_batched=True): one row of grad_outputs per result row."""
import numpy as np
import pytest

import fabric


def test_batched_grads_give_the_jacobian():
    x = fabric.tensor([0.3, 1.2, -0.5], dtype=fabric.float64, requires_grad=True)
    y = x.sin() * x.sum()
    (jac,) = fabric.autograd.grad(y, x, fabric.eye(3, dtype=fabric.float64), is_grads_batched=True)
    xn = x.detach().numpy()
    ref = np.diag(np.cos(xn) * xn.sum()) + np.sin(xn)[:, None]
    np.testing.assert_allclose(jac.numpy(), ref, rtol=1e-12)
    with pytest.raises(RuntimeError, match="we interpret the first dimension of each grad_output"):
        fabric.autograd.grad(x * 2, x, fabric.ones(3), is_grads_batched=True)


@pytest.mark.torch
def test_against_torch():
    import torch

    xn = np.array([[0.5, -1.0], [2.0, 0.1]])
    gs = np.random.default_rng(0).standard_normal((4, 2, 2))
    res = []
    for lib in (torch, fabric):
        x = lib.tensor(xn, requires_grad=True)
        y = (x @ x).exp()
        (g,) = lib.autograd.grad(y, x, lib.tensor(gs), is_grads_batched=True)
        res.append(g.detach().numpy())
    np.testing.assert_allclose(res[1], res[0], rtol=1e-12)
