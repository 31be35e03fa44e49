"""nn.init: values equal PyTorch's for the same seed, gains, fans, errors."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import fabric
from fabric.nn import init

CASES = [
    ("uniform_", (4, 5), {}),
    ("uniform_", (3,), {"a": -2.0, "b": 0.5}),
    ("normal_", (4, 5), {"mean": 1.0, "std": 0.3}),
    ("normal_", (40,), {}),
    ("trunc_normal_", (6, 7), {}),
    ("trunc_normal_", (50,), {"mean": 0.5, "std": 2.0, "a": -1.0, "b": 1.0}),  # narrow window: uniform proposals
    ("trunc_normal_", (30,), {"mean": 0.0, "std": 1.0, "a": 1.5, "b": 3.0}),
    ("trunc_normal_", (33,), {"mean": 0.0, "std": 0.02, "a": -0.04, "b": 0.04}),
    ("constant_", (2, 3), {"val": 0.25}),
    ("ones_", (2, 3), {}),
    ("zeros_", (2, 3), {}),
    ("eye_", (3, 5), {}),
    ("dirac_", (4, 2, 3), {}),
    ("dirac_", (6, 2, 3, 3), {"groups": 2}),
    ("dirac_", (2, 3, 1, 3, 3), {}),
    ("xavier_uniform_", (5, 4), {"gain": 2.0}),
    ("xavier_normal_", (3, 4, 2, 2), {}),
    ("kaiming_uniform_", (6, 5), {"a": math.sqrt(5)}),
    ("kaiming_uniform_", (4, 3, 3), {"mode": "fan_out", "nonlinearity": "relu"}),
    ("kaiming_normal_", (6, 5), {}),
    ("kaiming_normal_", (4, 2, 3), {"a": 0.2, "mode": "fan_out"}),
    ("orthogonal_", (4, 6), {}),
    ("orthogonal_", (6, 4), {"gain": 2.0}),
    ("orthogonal_", (3, 2, 2, 2), {}),
    ("sparse_", (6, 4), {"sparsity": 0.4}),
]


@pytest.mark.torch
@pytest.mark.parametrize("name,shape,kwargs", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_matches_torch(name, shape, kwargs):
    import torch

    fabric.manual_seed(7)
    torch.manual_seed(7)
    f = getattr(init, name)(fabric.empty(shape), **kwargs)
    t = getattr(torch.nn.init, name)(torch.empty(shape), **kwargs)
    assert tuple(f.shape) == tuple(t.shape)
    # orthogonal_ goes through QR (LAPACK builds may differ in the last bits)
    tol = 2e-6 if name == "orthogonal_" else 0
    np.testing.assert_allclose(f.numpy(), t.numpy(), rtol=tol, atol=tol)
    # the streams are left in the same state
    np.testing.assert_array_equal(fabric.rand(3).numpy(), torch.rand(3).numpy())


@pytest.mark.torch
@pytest.mark.parametrize("name", ["uniform_", "normal_", "xavier_uniform_", "kaiming_normal_", "trunc_normal_",
                                  "orthogonal_"])
def test_generator_argument(name):
    import torch

    g, tg = fabric.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    f = getattr(init, name)(fabric.empty(4, 5), generator=g)
    t = getattr(torch.nn.init, name)(torch.empty(4, 5), generator=tg)
    np.testing.assert_allclose(f.numpy(), t.numpy(), rtol=2e-6, atol=2e-6)


@pytest.mark.torch
def test_float64_and_parameters_match_torch():
    import torch

    fabric.manual_seed(1)
    torch.manual_seed(1)
    p = fabric.nn.Parameter(fabric.empty(3, 4, dtype=fabric.float64))
    tp = torch.nn.Parameter(torch.empty(3, 4, dtype=torch.float64))
    init.kaiming_uniform_(p)  # under no_grad: allowed on a leaf that requires grad
    torch.nn.init.kaiming_uniform_(tp)
    np.testing.assert_array_equal(p.detach().numpy(), tp.detach().numpy())
    assert p.requires_grad and p.is_leaf and p.grad_fn is None


def test_calculate_gain():
    assert init.calculate_gain("linear") == 1 and init.calculate_gain("conv2d") == 1
    assert init.calculate_gain("sigmoid") == 1
    assert init.calculate_gain("tanh") == pytest.approx(5 / 3)
    assert init.calculate_gain("relu") == pytest.approx(math.sqrt(2))
    assert init.calculate_gain("leaky_relu") == pytest.approx(math.sqrt(2 / (1 + 0.01 ** 2)))
    assert init.calculate_gain("leaky_relu", 0.2) == pytest.approx(math.sqrt(2 / 1.04))
    assert init.calculate_gain("selu") == 0.75
    with pytest.raises(ValueError, match="Unsupported nonlinearity foo"):
        init.calculate_gain("foo")
    with pytest.raises(ValueError, match="negative_slope True not a valid number"):
        init.calculate_gain("leaky_relu", True)


def test_fans_and_errors():
    assert init._calculate_fan_in_and_fan_out(fabric.empty(5, 3)) == (3, 5)
    assert init._calculate_fan_in_and_fan_out(fabric.empty(8, 4, 3, 3)) == (36, 72)
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(fabric.empty(3))
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_uniform_(fabric.empty(3, 3), mode="fan_avg")
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.eye_(fabric.empty(2, 2, 2))
    with pytest.raises(ValueError, match="Only tensors with 3, 4, or 5 dimensions"):
        init.dirac_(fabric.empty(2, 2))
    with pytest.raises(ValueError, match="dim 0 must be divisible by groups"):
        init.dirac_(fabric.empty(3, 2, 2), groups=2)
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions"):
        init.orthogonal_(fabric.empty(3))
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        init.kaiming_uniform_(fabric.empty(0, 3))
    with pytest.warns(UserWarning, match="mean is more than 2 std"):
        init.trunc_normal_(fabric.empty(5), mean=10.0, std=1.0, a=-1.0, b=1.0)


def test_values_and_properties():
    w = init.orthogonal_(fabric.empty(5, 3))
    np.testing.assert_allclose(w.numpy().T @ w.numpy(), np.eye(3), atol=1e-5)
    w = init.trunc_normal_(fabric.empty(2000), std=1.0, a=-0.5, b=0.3)
    assert float(w.numpy().min()) >= -0.5 and float(w.numpy().max()) <= 0.3
    w = init.sparse_(fabric.empty(10, 4), sparsity=0.3)
    assert ((w.numpy() == 0).sum(axis=0) == 3).all()
    d = init.dirac_(fabric.empty(2, 2, 3))
    assert d.numpy()[0, 0, 1] == 1 and d.numpy()[1, 1, 1] == 1 and d.numpy().sum() == 2
    e = init.eye_(fabric.empty(2, 3))
    np.testing.assert_array_equal(e.numpy(), np.eye(2, 3))
    t = fabric.empty(3)
    v = t._version
    assert init.constant_(t, 2.0) is t and t._version > v


def test_deprecated_aliases_warn():
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        init.normal(fabric.empty(2))
    assert any(issubclass(r.category, FutureWarning) and "nn.init.normal_" in str(r.message) for r in rec)
