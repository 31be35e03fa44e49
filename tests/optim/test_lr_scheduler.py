"""LR schedulers: sequences equal PyTorch's; state_dict; closed forms."""
from __future__ import annotations

import math

import numpy as np
import pytest

import fabric

SCHEDULERS = [
    ("LambdaLR", dict(lr_lambda=lambda e: 0.95 ** e)),
    ("MultiplicativeLR", dict(lr_lambda=lambda e: 0.9)),
    ("StepLR", dict(step_size=3, gamma=0.5)),
    ("MultiStepLR", dict(milestones=[2, 5, 5, 9], gamma=0.3)),
    ("ConstantLR", dict(factor=0.25, total_iters=4)),
    ("LinearLR", dict(start_factor=0.1, end_factor=0.9, total_iters=7)),
    ("ExponentialLR", dict(gamma=0.9)),
    ("PolynomialLR", dict(total_iters=8, power=2.0)),
    ("CosineAnnealingLR", dict(T_max=6, eta_min=0.01)),
    ("CosineAnnealingWarmRestarts", dict(T_0=4, T_mult=2, eta_min=0.001)),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=3, mode="triangular2")),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=2, step_size_down=4, mode="exp_range", gamma=0.9)),
    ("OneCycleLR", dict(max_lr=0.5, total_steps=30)),
    ("OneCycleLR", dict(max_lr=0.5, total_steps=30, three_phase=True, anneal_strategy="linear")),
]


def _sequence(lib, name, kwargs, steps=25, optim="SGD"):
    w = lib.nn.Parameter(lib.zeros(2))
    b = lib.nn.Parameter(lib.zeros(1))
    opt = getattr(lib.optim, optim)([{"params": [w]}, {"params": [b], "lr": 0.5}], lr=0.1, momentum=0.9)
    sched = getattr(lib.optim.lr_scheduler, name)(opt, **kwargs)
    out = []
    for _ in range(steps):
        opt.step()
        sched.step()
        out.append(list(sched.get_last_lr()) + [opt.param_groups[0].get("momentum")])
    return out


@pytest.mark.torch
@pytest.mark.parametrize("name,kwargs", SCHEDULERS, ids=[s[0] for s in SCHEDULERS])
def test_sequence_matches_torch(name, kwargs):
    import torch

    steps = 29 if name == "OneCycleLR" else 25
    ours = _sequence(fabric, name, kwargs, steps)
    theirs = _sequence(torch, name, kwargs, steps)
    assert ours == theirs  # bit-identical floats


@pytest.mark.torch
def test_sequential_chained_and_plateau_match_torch():
    import torch

    def run(lib):
        w = lib.nn.Parameter(lib.zeros(1))
        opt = lib.optim.SGD([w], lr=1.0)
        S = lib.optim.lr_scheduler
        seq = S.SequentialLR(opt, [S.LinearLR(opt, start_factor=0.1, total_iters=3),
                                   S.CosineAnnealingLR(opt, T_max=5)], milestones=[3])
        out = []
        for _ in range(10):
            opt.step()
            seq.step()
            out.append(seq.get_last_lr()[0])
        opt2 = lib.optim.SGD([lib.nn.Parameter(lib.zeros(1))], lr=1.0)
        ch = S.ChainedScheduler([S.ExponentialLR(opt2, 0.9), S.StepLR(opt2, 2, 0.5)])
        for _ in range(6):
            opt2.step()
            ch.step()
            out.append(ch.get_last_lr()[0])
        opt3 = lib.optim.SGD([lib.nn.Parameter(lib.zeros(1))], lr=1.0)
        pl = S.ReduceLROnPlateau(opt3, patience=1, factor=0.5, cooldown=1, min_lr=0.05)
        for m in [1.0, 0.9, 0.95, 0.95, 0.96, 0.97, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]:
            opt3.step()
            pl.step(m)
            out.append(pl.get_last_lr()[0])
        return out

    assert run(fabric) == run(torch)


@pytest.mark.torch
def test_adam_betas_cycled_like_torch():
    import torch

    a = _sequence(fabric, "OneCycleLR", dict(max_lr=0.1, total_steps=20), 19, optim="Adam") if False else None
    del a

    def run(lib):
        w = lib.nn.Parameter(lib.zeros(1))
        opt = lib.optim.Adam([w], lr=0.1)
        s = lib.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=20)
        out = []
        for _ in range(19):
            opt.step()
            s.step()
            out.append(opt.param_groups[0]["betas"])
        return out

    assert run(fabric) == run(torch)


def test_step_lr_values_without_torch():
    seq = _sequence(fabric, "StepLR", dict(step_size=2, gamma=0.5), 5)
    assert [s[0] for s in seq] == [0.1, 0.05, 0.05, 0.025, 0.025]


def test_cosine_closed_form_with_epoch_argument():
    w = fabric.nn.Parameter(fabric.zeros(1))
    opt = fabric.optim.SGD([w], lr=1.0)
    s = fabric.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)
    with pytest.warns(UserWarning):
        s.step(5)
    assert math.isclose(s.get_last_lr()[0], 0.5, rel_tol=1e-12)


def test_state_dict_round_trip():
    def make():
        w = fabric.nn.Parameter(fabric.zeros(1))
        opt = fabric.optim.SGD([w], lr=1.0)
        return opt, fabric.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2)

    opt, s = make()
    for _ in range(4):
        opt.step()
        s.step()
    sd = s.state_dict()
    assert "optimizer" not in sd
    rest = []
    for _ in range(5):
        opt.step()
        s.step()
        rest.append(s.get_last_lr()[0])
    opt2, s2 = make()
    s2.load_state_dict(sd)
    opt2.param_groups[0]["lr"] = sd["_last_lr"][0]
    again = []
    for _ in range(5):
        opt2.step()
        s2.step()
        again.append(s2.get_last_lr()[0])
    np.testing.assert_allclose(rest, again, rtol=0, atol=0)


def test_warning_when_scheduler_steps_first():
    w = fabric.nn.Parameter(fabric.zeros(1))
    opt = fabric.optim.SGD([w], lr=1.0)
    s = fabric.optim.lr_scheduler.StepLR(opt, 1)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        s.step()


def test_errors():
    w = fabric.nn.Parameter(fabric.zeros(1))
    opt = fabric.optim.SGD([w], lr=1.0)
    S = fabric.optim.lr_scheduler
    with pytest.raises(TypeError, match="is not an Optimizer"):
        S.StepLR(object(), 1)
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        S.ReduceLROnPlateau(opt, factor=2.0)
    with pytest.raises(ValueError, match="total_steps OR"):
        S.OneCycleLR(opt, max_lr=1.0)
    with pytest.raises(ValueError, match="one more than the number of milestone"):
        S.SequentialLR(opt, [S.StepLR(opt, 1)], milestones=[1])
