"""LBFGS's state is Tensors as PyTorch keeps it (weights-only loadable, state_dict round trip
equal to PyTorch's), and its step runs the optimizer step hooks."""
from __future__ import annotations

import io

import numpy as np
import pytest

import fabric


def _run(lib, steps=2, dtype="float64", state=None, x0=(1.5, -0.5, 0.25), **kw):
    x = lib.nn.Parameter(lib.tensor(list(x0), dtype=getattr(lib, dtype)))
    opt = lib.optim.LBFGS([x], history_size=3, max_iter=4, **kw)
    if state is not None:
        opt.load_state_dict(state)

    def closure():
        opt.zero_grad()
        loss = ((x - 3) ** 4).sum() + (x[0] * x[1]) ** 2
        loss.backward()
        return loss

    for _ in range(steps):
        opt.step(closure)
    return x, opt


def _kinds(v):
    if isinstance(v, list):
        return [_kinds(e) for e in v]
    if hasattr(v, "shape") and hasattr(v, "dtype"):
        return ("Tensor", tuple(v.shape), str(v.dtype).split(".")[-1])
    return type(v).__name__


def _values(v):
    if isinstance(v, list):
        return [_values(e) for e in v]
    return np.asarray(v.detach().numpy()) if hasattr(v, "detach") else v


def test_state_is_tensors_and_loads_weights_only():
    x, opt = _run(fabric)
    st = opt.state_dict()["state"][0]
    for key in ("d", "prev_flat_grad", "H_diag"):
        assert isinstance(st[key], fabric.Tensor), key
    assert all(isinstance(e, fabric.Tensor) for key in ("old_dirs", "old_stps", "ro") for e in st[key])
    assert all(e is None or isinstance(e, fabric.Tensor) for e in st["al"])
    buf = io.BytesIO()
    fabric.save(opt.state_dict(), buf)
    buf.seek(0)
    loaded = fabric.load(buf)  # weights_only by default
    x, _ = _run(fabric)
    x2, _ = _run(fabric, steps=1, state=loaded, x0=x.tolist())
    x1, _ = _run(fabric, steps=3)
    np.testing.assert_array_equal(x2.detach().numpy(), x1.detach().numpy())


def test_step_hooks_run():
    calls = []
    x, opt = _run(fabric, steps=0)
    opt.register_step_pre_hook(lambda o, a, k: calls.append(("pre", len(a))))
    opt.register_step_post_hook(lambda o, a, k: calls.append(("post", len(a))))
    handle = fabric.optim.optimizer.register_optimizer_step_post_hook(lambda o, a, k: calls.append("global"))
    try:
        opt.step(lambda: ((x - 3) ** 2).sum())
    finally:
        handle.remove()
    assert calls == [("pre", 1), ("post", 1), "global"]


@pytest.mark.torch
@pytest.mark.parametrize("kw", [{}, {"line_search_fn": "strong_wolfe"}])
def test_state_dict_matches_torch(kw):
    import torch
    xf, of = _run(fabric, **kw)
    xt, ot = _run(torch, **kw)
    np.testing.assert_allclose(xf.detach().numpy(), xt.detach().numpy(), rtol=1e-12)
    sf, st = of.state_dict(), ot.state_dict()
    assert sf["param_groups"] == st["param_groups"]
    assert sf["state"].keys() == st["state"].keys()
    for key, want in st["state"][0].items():
        got = sf["state"][0][key]
        if key != "t" or not kw:  # a line search's step length: a Python float in fabric
            assert _kinds(got) == _kinds(want), key
        np.testing.assert_allclose(np.asarray(_values(got), dtype=float), np.asarray(_values(want), dtype=float),
                                   rtol=1e-10, err_msg=key)
    # torch's state dict, saved by torch, drives fabric's next step as it drives torch's
    buf = io.BytesIO()
    torch.save(ot.state_dict(), buf)
    buf.seek(0)
    xf2, _ = _run(fabric, steps=1, state=fabric.load(buf), x0=xt.tolist(), **kw)
    xt2, _ = _run(torch, steps=3, **kw)
    np.testing.assert_allclose(xf2.detach().numpy(), xt2.detach().numpy(), rtol=1e-10)
