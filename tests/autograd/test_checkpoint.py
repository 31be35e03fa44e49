"""fabric.utils.checkpoint: both variants give the gradients of the plain
computation, replay the RNG, recompute only in backward, and raise PyTorch's errors."""
import warnings

import numpy as np
import pytest

import fabric
from fabric.utils.checkpoint import CheckpointError, checkpoint, checkpoint_sequential


def _block(x, w):
    return (x @ w).tanh().exp() * x.sin()


@pytest.mark.parametrize("reentrant", [True, False])
def test_gradients_match_plain(reentrant):
    fabric.manual_seed(0)
    x = fabric.randn(3, 4, dtype=fabric.float64, requires_grad=True)
    w = fabric.randn(4, 4, dtype=fabric.float64, requires_grad=True)
    _block(x, w).sum().backward()
    gx, gw = x.grad.clone(), w.grad.clone()
    x.grad = w.grad = None
    out = checkpoint(_block, x, w, use_reentrant=reentrant)
    np.testing.assert_allclose(out.detach().numpy(), _block(x, w).detach().numpy())
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), gx.numpy(), rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), gw.numpy(), rtol=1e-12)


def test_nonreentrant_recomputes_in_backward_only():
    calls = []

    def f(x):
        calls.append(1)
        return x.exp().sin()

    x = fabric.tensor([0.5, 1.0], dtype=fabric.float64, requires_grad=True)
    y = checkpoint(f, x, use_reentrant=False)
    assert len(calls) == 1
    (g,) = fabric.autograd.grad(y.sum(), x)  # autograd.grad works in this variant
    assert len(calls) == 2
    np.testing.assert_allclose(g.numpy(), (x.exp() * x.exp().cos()).detach().numpy())


def test_nonreentrant_closure_parameters_and_kwargs():
    lin = fabric.nn.Linear(3, 2).double()
    x = fabric.randn(5, 3, dtype=fabric.float64)  # input needs no grad: the parameters still get theirs
    lin(x).relu().pow(2).sum().backward()
    ref = lin.weight.grad.clone()
    lin.zero_grad()
    out = checkpoint(lambda x, scale: lin(x).relu().pow(2) * scale, x, use_reentrant=False, scale=1.0)
    out.sum().backward()
    np.testing.assert_allclose(lin.weight.grad.numpy(), ref.numpy(), rtol=1e-12)


@pytest.mark.parametrize("reentrant", [True, False])
def test_rng_state_replayed(reentrant):
    def f(x):
        return fabric.nn.functional.dropout(x, 0.5, training=True) * x

    x = fabric.ones(200, dtype=fabric.float64, requires_grad=True)
    fabric.manual_seed(3)
    y = checkpoint(f, x, use_reentrant=reentrant)
    after = fabric.random.get_rng_state()
    y.sum().backward()
    # d/dx (mask * x * x) = 2 * mask * x: the recomputed mask is the forward's
    np.testing.assert_allclose(x.grad.numpy(), 2 * y.detach().numpy())
    assert bool((fabric.random.get_rng_state() == after).all())  # backward leaves the generator as it was


def test_preserve_rng_state_false_draws_new_numbers():
    def f(x):
        return fabric.nn.functional.dropout(x, 0.5, training=True) * x

    x = fabric.ones(400, dtype=fabric.float64, requires_grad=True)
    fabric.manual_seed(3)
    y = checkpoint(f, x, use_reentrant=False, preserve_rng_state=False)
    y.sum().backward()
    assert not np.allclose(x.grad.numpy(), 2 * y.detach().numpy())


def test_context_fn_runs_in_forward_and_recompute():
    import contextlib

    log = []

    @contextlib.contextmanager
    def tag(name):
        log.append(name)
        yield

    x = fabric.tensor([1.0, 2.0], requires_grad=True)
    y = checkpoint(lambda t: t.exp(), x, use_reentrant=False, context_fn=lambda: (tag("fwd"), tag("re")))
    y.sum().backward()
    assert log == ["fwd", "re"]


def test_determinism_check_catches_different_recomputation():
    state = {"n": 3}

    def f(x):
        out = x[: state["n"]].exp()
        state["n"] = 2
        return out

    x = fabric.ones(4, requires_grad=True)
    y = checkpoint(f, x, use_reentrant=False)
    with pytest.raises(CheckpointError, match="different metadata"):
        y.sum().backward()
    state["n"] = 3
    y = checkpoint(f, x, use_reentrant=False, determinism_check="none")
    with pytest.raises(RuntimeError) as info:  # the check is off: the bad value reaches the op's backward
        y.sum().backward()
    assert not isinstance(info.value, CheckpointError)


def test_errors():
    x = fabric.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: foo"):
        checkpoint(lambda t: t, x, use_reentrant=True, foo=1)
    with pytest.raises(ValueError, match="Passing `context_fn` or `debug` is only supported"):
        checkpoint(lambda t: t, x, use_reentrant=True, debug=True)
    with pytest.raises(ValueError, match="determinism_check should be one of"):
        checkpoint(lambda t: t, x, use_reentrant=False, determinism_check="bad")
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        checkpoint(lambda t: t * 2, x)
    y = checkpoint(lambda t: t.exp(), x, use_reentrant=True)
    with pytest.raises(RuntimeError, match="incompatible with .grad"):
        fabric.autograd.grad(y.sum(), x)
    y = checkpoint(lambda t: t.exp(), fabric.ones(2), use_reentrant=True)
    assert not y.requires_grad


@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpoint_sequential(reentrant):
    fabric.manual_seed(0)
    seq = fabric.nn.Sequential(*[fabric.nn.Linear(4, 4) for _ in range(4)]).double()
    x = fabric.randn(2, 4, dtype=fabric.float64, requires_grad=True)
    seq(x).sum().backward()
    ref = [p.grad.clone() for p in seq.parameters()] + [x.grad.clone()]
    seq.zero_grad()
    x.grad = None
    out = checkpoint_sequential(seq, 2, x, use_reentrant=reentrant)
    out.sum().backward()
    for a, b in zip([p.grad for p in seq.parameters()] + [x.grad], ref):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)


def test_nested_checkpoint():
    x = fabric.tensor([0.3, 0.7], dtype=fabric.float64, requires_grad=True)

    def inner(t):
        return t.sin().exp()

    def outer(t):
        return checkpoint(inner, t.cos(), use_reentrant=False) * t

    y = checkpoint(outer, x, use_reentrant=False)
    (g,) = fabric.autograd.grad(y.sum(), x)
    xr = x.detach().requires_grad_()
    (ref,) = fabric.autograd.grad((xr.cos().sin().exp() * xr).sum(), xr)
    np.testing.assert_allclose(g.numpy(), ref.numpy(), rtol=1e-12)


@pytest.mark.torch
@pytest.mark.parametrize("reentrant", [True, False])
def test_against_torch(reentrant):
    import torch
    import torch.utils.checkpoint as tcp

    rs = np.random.RandomState(0)
    xn, wn = rs.randn(3, 4), rs.randn(4, 4)
    xt = torch.tensor(xn, requires_grad=True)
    wt = torch.tensor(wn, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tcp.checkpoint(_block, xt, wt, use_reentrant=reentrant).sum().backward()
    x = fabric.tensor(xn, requires_grad=True)
    w = fabric.tensor(wn, requires_grad=True)
    checkpoint(_block, x, w, use_reentrant=reentrant).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(w.grad.numpy(), wt.grad.numpy(), rtol=1e-10)


def test_early_stop_and_global_override():
    from fabric.utils.checkpoint import set_checkpoint_early_stop

    tail = []

    def f(x):
        y = x.exp()          # the only saved tensor
        tail.append(1)       # runs after it: skipped by an early-stopped recomputation
        return y

    x = fabric.tensor([1.0], requires_grad=True)
    checkpoint(f, x, use_reentrant=False).sum().backward()
    assert len(tail) == 1
    with set_checkpoint_early_stop(False):
        y = checkpoint(f, x, use_reentrant=False)
    y.sum().backward()
    assert len(tail) == 3
