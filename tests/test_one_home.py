"""One home per numeric routine (issue 17): the routines that used to exist twice agree
with themselves and with PyTorch."""
import math

import numpy as np
import pytest

import fabric
import fabric.nn.functional as F
from fabric import _special_functions as sf
from fabric.backends import fused


def test_gelu_uses_fabrics_own_erfc():
    # GELU's reference twin (float64 path) is x * Phi(x) with the erfc of fabric.erfc, not SciPy's
    x = np.linspace(-30.0, 8.0, 301)
    arg = x * -math.sqrt(0.5)
    np.testing.assert_array_equal(fused.gelu(np, x), x * (0.5 * sf.evaluate(sf.erfc, np, arg)))
    np.testing.assert_array_equal(fabric.erfc(fabric.from_numpy(arg)).numpy(), sf.evaluate(sf.erfc, np, arg))


def test_hurwitz_zeta_one_kernel_serves_polygamma_and_zeta():
    x = np.array([0.3, 1.0, 2.5, 7.0, 40.0])
    for n in (1, 2, 3):
        expected = (-1) ** (n + 1) * math.factorial(n) * fabric.special.zeta(
            fabric.full((5,), n + 1.0, dtype=fabric.float64), fabric.from_numpy(x)).numpy()
        np.testing.assert_allclose(fabric.polygamma(n, fabric.from_numpy(x)).numpy(), expected, rtol=1e-15)
    # a huge q: the leading term z**(1 - s) / (s - 1) does not underflow through z * z**-s
    assert fabric.special.zeta(fabric.tensor([2.0], dtype=fabric.float64),
                               fabric.tensor([1e300], dtype=fabric.float64)).item() == pytest.approx(1e-300)


def test_is_nonzero_texts():
    with pytest.raises(RuntimeError, match="^Boolean value of Tensor with no values is ambiguous$"):
        fabric.is_nonzero(fabric.tensor([]))
    with pytest.raises(RuntimeError, match="^Boolean value of Tensor with more than one value is ambiguous$"):
        fabric.is_nonzero(fabric.ones(2))
    assert fabric.is_nonzero(fabric.tensor([2])) is True and fabric.tensor(0.0).is_nonzero() is False
    assert fabric.is_nonzero is fabric.Tensor.is_nonzero


def test_is_same_size_and_heaviside_have_one_definition():
    assert fabric.is_same_size is fabric.Tensor.is_same_size and fabric.heaviside is fabric.Tensor.heaviside
    with pytest.raises(TypeError, match=r"is_same_size\(\): argument 'other' \(position 2\) must be Tensor, not list"):
        fabric.is_same_size(fabric.ones(2), [1, 2])
    x = fabric.tensor([-1.0, 0.0, 2.0], requires_grad=True)
    y = fabric.heaviside(x, fabric.tensor([0.5]))
    assert y.tolist() == [0.0, 0.5, 1.0]
    with pytest.raises(RuntimeError, match="derivative for aten::heaviside is not implemented"):
        y.sum().backward()
    with pytest.raises(RuntimeError, match="heaviside is not yet implemented for tensors with different dtypes."):
        fabric.heaviside(fabric.tensor([0, 1]), fabric.tensor([0.5]))
    with pytest.raises(TypeError, match=r"heaviside\(\): argument 'values' \(position 2\) must be Tensor, not float"):
        fabric.heaviside(fabric.tensor([0.0]), 0.5)
    out = fabric.empty(2, 3)
    r = fabric.heaviside(fabric.tensor([0.0, 1.0, -2.0]), fabric.tensor([[0.5], [0.25]]), out=out)
    assert r is out and out.tolist() == [[0.5, 1.0, 0.0], [0.25, 1.0, 0.0]]


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 0.5, math.inf, -math.inf])
def test_one_vector_norm(p):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4))
    x = fabric.tensor(a, requires_grad=True)
    grads = []
    for f in (lambda t: fabric.linalg.vector_norm(t, p, dim=1), lambda t: fabric.norm(t, p, dim=1),
              lambda t: F.pairwise_distance(t, fabric.zeros(3, 4, dtype=fabric.float64), p=p, eps=0.0)):
        x.grad = None
        y = f(x)
        np.testing.assert_allclose(y.detach().numpy(), np.linalg.norm(a, p, axis=1), rtol=1e-12)
        y.sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12)
    np.testing.assert_allclose(grads[2], grads[0], rtol=1e-12)
    assert fabric.autograd.gradcheck(lambda t: fabric.linalg.vector_norm(t, p, dim=1), (x,))


@pytest.mark.torch
def test_heaviside_matches_torch():
    import torch

    a, v = np.array([[-1.0, 0.0, 3.0], [0.0, 0.0, -2.0]]), np.array([0.25, 0.5, 0.75])
    assert np.array_equal(fabric.heaviside(fabric.tensor(a), fabric.tensor(v)).numpy(),
                          torch.heaviside(torch.tensor(a), torch.tensor(v)).numpy())
