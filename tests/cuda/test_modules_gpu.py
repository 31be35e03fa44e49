"""CPU-vs-CUDA agreement for every ModuleInfo entry (tests/nn/moduleinfo.py)
and every OptimizerInfo configuration (tests/optim/optiminfo.py).

A module is built once on the CPU (seeded), deep-copied and moved with
``.to("cuda")``; both run every sample in training and evaluation mode (modules
that draw random numbers in training only in evaluation mode: the CUDA
generator is not PyTorch's nor the CPU's stream, see docs/cuda.md), and must
agree in outputs, their device, the gradients of inputs and parameters for the
same upstream gradient, and the buffers afterwards (running statistics).
Random modules are checked in training mode for reproducibility on the
device instead.  Optimizers take the same steps on both devices.
"""
from __future__ import annotations

import copy

import numpy as np
import pytest
from agreement import DEVICES, assert_on, assert_same_results, backward, device_fixture, flat_tensors, leaves, to_device
from moduleinfo import ALL_MODULES
from optim.optiminfo import OPTIMIZERS

import fabric

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(scope="module", params=DEVICES)
def device(request):
    yield from device_fixture(request)

DTYPES = [np.float64, np.float32]

# forward arguments PyTorch requires on the CPU whatever the module's device
# (pack_padded_sequence's lengths), by ModuleInfo name -> positional indices
HOST_ARGS = {"PackedRNN": {1}, "PackedLSTM": {1}, "PackedGRU": {1}}


def _forward(info, module, sample, dev, train):
    module.train(train)
    host = HOST_ARGS.get(info.name, ())
    args = tuple(to_device(a, "cpu" if i in host else dev, True) for i, a in enumerate(sample.forward_args))
    kwargs = to_device(sample.forward_kwargs, dev, True)
    out = module(*args, **kwargs)
    if info.output_index is not None:
        out = out[info.output_index]
    outs = flat_tensors(out)
    ins = leaves([args, kwargs]) + [p for p in module.parameters() if p.requires_grad]
    return outs, backward(outs, ins), [b.detach() for b in module.buffers()]


@pytest.mark.parametrize("info", ALL_MODULES, ids=lambda i: i.name)
def test_module_agrees_with_cpu(info, device):
    """Every sample in float64; in float32 the first (the op matrix covers float32 broadly)."""
    for dtype in DTYPES:
        samples = info.module_inputs(dtype, np.random.default_rng(0))
        for idx, sample in enumerate(samples if dtype == np.float64 else samples[:1]):
            fabric.manual_seed(0)
            cpu = info.build(fabric.nn, sample).to(fabric.from_numpy(np.zeros(1, dtype)).dtype)
            gpu = copy.deepcopy(cpu).to(device)
            assert all(str(p.device) == "cuda:0" for p in gpu.parameters())
            for train in (False,) if info.random else (True, False):
                what = f"{info.name}[{idx}] {sample.desc} {np.dtype(dtype)} train={train}"
                want, want_grads, want_bufs = _forward(info, cpu, sample, "cpu", train)
                got, got_grads, got_bufs = _forward(info, gpu, sample, device, train)
                assert_on(got, "cuda:0", what)
                assert_same_results(got, want, what, atol=info.atol if dtype == np.float32 else 0.0)
                if want_grads is not None:
                    assert_same_results(got_grads, want_grads, f"grad of {what}", scale=10.0,
                                        atol=info.grad_atol if dtype == np.float32 else 0.0)
                assert_same_results(got_bufs, want_bufs, f"buffers of {what}")


@pytest.mark.parametrize("info", [i for i in ALL_MODULES if i.random], ids=lambda i: i.name)
def test_random_module_is_reproducible_on_device(info, device):
    """Training mode draws from the CUDA generator: the same seed gives the same
    output and gradients on the device, and the output is finite."""
    sample = info.module_inputs(np.float32, np.random.default_rng(0))[0]
    fabric.manual_seed(0)
    m = info.build(fabric.nn, sample).to(device)
    runs = []
    for _ in range(2):
        fabric.manual_seed(7)
        outs, grads, _bufs = _forward(info, m, sample, device, True)
        assert_on(outs, "cuda:0", info.name)
        runs.append(([o.detach().cpu().numpy() for o in outs], grads))
    for a, b in zip(runs[0][0], runs[1][0]):
        np.testing.assert_array_equal(a, b)
        assert np.isfinite(a).all()
    if runs[0][1] is not None:
        for a, b in zip(*(r[1] for r in runs)):
            np.testing.assert_array_equal(a, b)


def _loss(params, step):
    total = 0
    for i, p in enumerate(params):
        total = total + ((p - 0.1 * (i + 1)) ** 2).sum() * (1 + 0.1 * step) + (p * p * p).sum() * 0.01
    return total


def _trajectory(name, config, inits, dev, closure_needed, steps=3):
    params = [fabric.nn.Parameter(fabric.tensor(a, device=dev)) for a in inits]
    opt = getattr(fabric.optim, name)(params, **config)
    for step in range(steps):
        def closure(step=step):
            opt.zero_grad()
            loss = _loss(params, step)
            loss.backward()
            return loss
        if closure_needed:
            opt.step(closure)
        else:
            closure()
            opt.step()
    return params, opt


OPT_CASES = [pytest.param(o.name, c, o.needs_closure, id=f"{o.name}-{i}")
             for o in OPTIMIZERS for i, c in enumerate(o.configs)]


@pytest.mark.parametrize("name,config,closure", OPT_CASES)
def test_optimizer_agrees_with_cpu(name, config, closure, device):
    rng = np.random.default_rng(0)
    for dtype in DTYPES:
        inits = [rng.standard_normal(s).astype(dtype) for s in [(3, 4), (4,), (2, 2, 3), ()]]
        want, opt_cpu = _trajectory(name, config, inits, "cpu", closure)
        got, opt_gpu = _trajectory(name, config, inits, device, closure)
        assert_on(got, "cuda:0", name)
        assert_same_results(got, want, f"{name} {config} {np.dtype(dtype)}", scale=10.0)
        for p_cpu, p_gpu in zip(want, got):
            state_cpu = [v for v in opt_cpu.state[p_cpu].values() if isinstance(v, fabric.Tensor)]
            state_gpu = [v for v in opt_gpu.state[p_gpu].values() if isinstance(v, fabric.Tensor)]
            assert_same_results(state_gpu, state_cpu, f"{name} state", scale=10.0)
