"""Top-level composite ops (diff, cov, isin ... in their ops family modules) and compatibility switches."""
from __future__ import annotations

import numpy as np
import pytest

import fabric
from fabric.autograd import gradcheck

CASES = [
    ("diff", lambda L, x: L.diff(x, dim=1)),
    ("diff_n2_prepend", lambda L, x: L.diff(x, n=2, dim=0, prepend=x[:1])),
    ("cov", lambda L, x: L.cov(x)),
    ("cov_corr0", lambda L, x: L.cov(x, correction=0)),
    ("corrcoef", lambda L, x: L.corrcoef(x)),
    ("dist", lambda L, x: L.dist(x, x * 0.5 + 1, 3)),
    ("trapezoid", lambda L, x: L.trapezoid(x)),
    ("trapezoid_dx", lambda L, x: L.trapezoid(x, dx=0.5, dim=0)),
    ("cumulative_trapezoid", lambda L, x: L.cumulative_trapezoid(x)),
    ("heaviside", lambda L, x: L.heaviside(x, L.tensor(0.5, dtype=x.dtype))),
    ("select_scatter", lambda L, x: L.select_scatter(x, x[0] * 2, 0, 1)),
    ("slice_scatter", lambda L, x: L.slice_scatter(x, x[:2] * 3, 0, 1, 3)),
    ("diagonal_scatter", lambda L, x: L.diagonal_scatter(x, x.diagonal() * 2)),
    ("hann", lambda L, x: L.hann_window(7, dtype=x.dtype)),
    ("hamming", lambda L, x: L.hamming_window(6, periodic=False, dtype=x.dtype)),
    ("bartlett", lambda L, x: L.bartlett_window(5, dtype=x.dtype)),
    ("blackman", lambda L, x: L.blackman_window(8, dtype=x.dtype)),
]


@pytest.mark.torch
@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
def test_matches_torch(name, fn):
    import torch

    a = np.random.default_rng(0).standard_normal((4, 5))
    np.testing.assert_allclose(fn(fabric, fabric.tensor(a)).numpy(), fn(torch, torch.tensor(a)).numpy(),
                               rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name,fn", [c for c in CASES if c[0] not in ("hann", "hamming", "bartlett", "blackman",
                                                                      "heaviside")], ids=lambda c: str(c)[:20])
def test_gradcheck(name, fn):
    x = fabric.tensor(np.random.default_rng(1).standard_normal((4, 5)), requires_grad=True)
    assert gradcheck(lambda t: fn(fabric, t), (x,))


@pytest.mark.torch
def test_integer_and_bool_helpers_match_torch():
    import torch

    a, b = [12, 18, -7, 0], [8, 12, 21, 5]
    assert fabric.gcd(fabric.tensor(a), fabric.tensor(b)).tolist() == torch.gcd(torch.tensor(a), torch.tensor(b)).tolist()
    assert fabric.lcm(fabric.tensor(a), fabric.tensor(b)).tolist() == torch.lcm(torch.tensor(a), torch.tensor(b)).tolist()
    assert fabric.isin(fabric.tensor(a), fabric.tensor(b)).tolist() == torch.isin(torch.tensor(a), torch.tensor(b)).tolist()
    assert fabric.diff(fabric.tensor([True, False, False])).tolist() == torch.diff(
        torch.tensor([True, False, False])).tolist()
    ours = fabric.unravel_index(fabric.tensor([0, 5, -1]), (2, 3))
    theirs = torch.unravel_index(torch.tensor([0, 5, -1]), (2, 3))
    assert [t.tolist() for t in ours] == [t.tolist() for t in theirs]


def test_functional_aliases_and_switches():
    x = fabric.randn(1, 2, 5, 5)
    w = fabric.randn(3, 2, 3, 3)
    np.testing.assert_allclose(fabric.conv2d(x, w).numpy(), fabric.nn.functional.conv2d(x, w).numpy())
    assert fabric.max_pool2d is fabric.nn.functional.max_pool2d
    fabric.use_deterministic_algorithms(True)
    assert fabric.are_deterministic_algorithms_enabled()
    fabric.use_deterministic_algorithms(False)
    fabric.set_float32_matmul_precision("high")
    assert fabric.get_float32_matmul_precision() == "high"
    fabric.set_float32_matmul_precision("highest")  # a process-wide switch: leave it as found
    model = fabric.nn.Linear(2, 2)
    assert fabric.compile(model)._orig_mod is model and fabric.compile(model, disable=True) is model
    assert fabric.get_default_device() == fabric.device("cpu")
    assert fabric.is_same_size(fabric.ones(2), fabric.zeros(2)) and not fabric.is_complex(fabric.ones(1))
    with pytest.raises(AttributeError):
        fabric.not_a_real_function  # noqa: B018 (the attribute access is what raises)
