"""Optimizers: trajectories vs PyTorch, batched update vs one-parameter
groups, state_dict round trips, errors."""
from __future__ import annotations

import io

import numpy as np
import pytest
from optim.optiminfo import OPTIMIZERS

import fabric

SHAPES = [(3, 4), (4,), (2, 2, 3), ()]


def _init(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in SHAPES]


def _loss(lib, params, step):
    # a smooth, non-quadratic objective whose gradients change every step
    total = 0
    for i, p in enumerate(params):
        total = total + ((p - 0.1 * (i + 1)) ** 2).sum() * (1 + 0.1 * step) + (p * p * p).sum() * 0.01
    return total


def _run(lib, name, config, inits, steps=20, needs_closure=False, split_groups=False, skip_grad_every=0):
    params = [lib.nn.Parameter(lib.tensor(a.copy())) for a in inits]
    groups = [{"params": [p]} for p in params] if split_groups else params
    opt = getattr(lib.optim, name)(groups, **config)
    for step in range(steps):
        def closure(step=step):
            opt.zero_grad()
            loss = _loss(lib, params, step)
            loss.backward()
            if skip_grad_every and step % skip_grad_every == 0:
                params[1].grad = None
            return loss
        if needs_closure:
            opt.step(closure)
        else:
            closure()
            opt.step()
    return [p.detach().numpy().copy() for p in params], opt


CASES = [(o.name, i, c, o.needs_closure) for o in OPTIMIZERS for i, c in enumerate(o.configs)]
IDS = [f"{n}-{i}" for n, i, _, _ in CASES]


MULTI_GROUP = [c for c in CASES if c[0] != "LBFGS"]  # LBFGS takes a single parameter group


@pytest.mark.parametrize("name,i,config,closure", MULTI_GROUP, ids=[f"{c[0]}-{c[1]}" for c in MULTI_GROUP])
def test_batched_update_equals_per_parameter_groups(name, i, config, closure):
    inits = _init()
    a, _ = _run(fabric, name, config, inits, needs_closure=closure)
    b, _ = _run(fabric, name, config, inits, needs_closure=closure, split_groups=True)
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-6)


@pytest.mark.torch
@pytest.mark.parametrize("name,i,config,closure", CASES, ids=IDS)
def test_trajectory_matches_torch(name, i, config, closure):
    import torch

    inits = _init()
    ours, _ = _run(fabric, name, config, inits, needs_closure=closure)
    theirs, _ = _run(torch, name, config, inits, needs_closure=closure)
    for x, y in zip(ours, theirs):
        np.testing.assert_allclose(x, y, rtol=2e-5, atol=2e-5)


@pytest.mark.torch
@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop", "Adagrad", "ASGD", "NAdam"])
def test_missing_gradients_match_torch(name):
    import torch

    inits = _init()
    cfg = dict(lr=0.01, momentum=0.9) if name in ("SGD", "RMSprop") else dict(lr=0.01)
    ours, _ = _run(fabric, name, cfg, inits, skip_grad_every=3)
    theirs, _ = _run(torch, name, cfg, inits, skip_grad_every=3)
    for x, y in zip(ours, theirs):
        np.testing.assert_allclose(x, y, rtol=2e-5, atol=2e-5)


@pytest.mark.torch
@pytest.mark.parametrize("name", [o.name for o in OPTIMIZERS if not o.needs_closure])
def test_state_dict_layout_matches_torch(name):
    import torch

    inits = _init()
    _, ours = _run(fabric, name, OPTIMIZERS[[o.name for o in OPTIMIZERS].index(name)].configs[-1], inits, steps=2)
    _, theirs = _run(torch, name, OPTIMIZERS[[o.name for o in OPTIMIZERS].index(name)].configs[-1], inits, steps=2)
    a, b = ours.state_dict(), theirs.state_dict()
    assert a["param_groups"][0].keys() == b["param_groups"][0].keys()
    assert {k: v for k, v in a["param_groups"][0].items()} == {k: v for k, v in b["param_groups"][0].items()}
    for k in b["state"]:
        assert list(a["state"][k].keys()) == list(b["state"][k].keys())
        for key, v in b["state"][k].items():
            mine = a["state"][k][key]
            if isinstance(v, torch.Tensor):
                assert str(mine.dtype).split(".")[-1] == str(v.dtype).split(".")[-1]
                np.testing.assert_allclose(mine.numpy(), v.numpy(), rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("name,i,config,closure", [c for c in CASES if not c[3]], ids=[i for c, i in zip(CASES, IDS)
                                                                                       if not c[3]])
def test_state_dict_round_trip_resumes_identically(name, i, config, closure):
    inits = _init()
    full, _ = _run(fabric, name, config, inits, steps=12)

    params = [fabric.nn.Parameter(fabric.tensor(a.copy())) for a in inits]
    opt = getattr(fabric.optim, name)(params, **config)
    for step in range(6):
        opt.zero_grad()
        _loss(fabric, params, step).backward()
        opt.step()
    buf = io.BytesIO()
    fabric.save({"opt": opt.state_dict(), "params": [p.detach() for p in params]}, buf)
    buf.seek(0)
    ck = fabric.load(buf)
    params2 = [fabric.nn.Parameter(t.clone()) for t in ck["params"]]
    opt2 = getattr(fabric.optim, name)(params2, **config)
    opt2.load_state_dict(ck["opt"])
    for step in range(6, 12):
        opt2.zero_grad()
        _loss(fabric, params2, step).backward()
        opt2.step()
    for x, p in zip(full, params2):
        np.testing.assert_allclose(x, p.detach().numpy(), rtol=1e-6, atol=1e-6)


def test_param_group_api_and_errors():
    a = fabric.nn.Parameter(fabric.ones(2))
    b = fabric.nn.Parameter(fabric.ones(3))
    opt = fabric.optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1, momentum=0.9)
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[1]["lr"] == 0.5
    assert opt.param_groups[1]["momentum"] == 0.9
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [a]})
    with pytest.raises(ValueError, match="Invalid learning rate"):
        fabric.optim.Adam([a], lr=-1)
    with pytest.raises(ValueError, match="empty parameter list"):
        fabric.optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="iterable of Tensors"):
        fabric.optim.SGD(a, lr=0.1)
    with pytest.raises(ValueError, match="Nesterov"):
        fabric.optim.SGD([a], lr=0.1, nesterov=True)
    (a.sum() + b.sum()).backward()
    opt.zero_grad()
    assert a.grad is None
    (a.sum()).backward()
    opt.zero_grad(set_to_none=False)
    assert a.grad.tolist() == [0.0, 0.0]
    assert "Parameter Group 1" in repr(opt)


def test_step_hooks_and_closure_return():
    w = fabric.nn.Parameter(fabric.ones(2))
    opt = fabric.optim.SGD([w], lr=0.1)
    calls = []
    h1 = opt.register_step_pre_hook(lambda o, a, k: calls.append("pre"))
    opt.register_step_post_hook(lambda o, a, k: calls.append("post"))

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert loss.item() == 2.0 and calls == ["pre", "post"]
    h1.remove()
    opt.step(closure)
    assert calls == ["pre", "post", "post"]


def test_lbfgs_converges_on_rosenbrock():
    x = fabric.nn.Parameter(fabric.tensor([-1.5, 2.0], dtype=fabric.float64))
    opt = fabric.optim.LBFGS([x], lr=1, max_iter=200, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
        loss.backward()
        return loss

    for _ in range(5):
        opt.step(closure)
    np.testing.assert_allclose(x.detach().numpy(), [1.0, 1.0], atol=1e-5)
