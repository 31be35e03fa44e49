"""CPU-vs-CUDA agreement for every OpInfo entry (tests/opinfo ALL_OPS).

Each sample of each dtype runs on ``cpu`` and on ``cuda:0``: the results must
have the same dtypes and shapes and agree in value (tolerances in
:func:`agreement.tolerance`), stay on the device, raise the same error type
where the CPU raises, and give the same gradients for the same upstream
gradient.  ``device`` is a real GPU (marker ``cuda``, skipped without one) and
the fake CUDA device of ``fake_cupy`` (see agreement.py), which runs fabric's
whole CUDA dispatch path on every machine.
"""
from __future__ import annotations

import numpy as np
import pytest
from agreement import DEVICES, assert_on, assert_same_results, backward, device_fixture, flat_outputs, leaves, to_device
from opinfo import ALL_OPS

import fabric

# the op registry's samples trigger PyTorch's own deprecation / degrees-of-freedom warnings
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::RuntimeWarning")


@pytest.fixture(scope="module", params=DEVICES)
def device(request):
    yield from device_fixture(request)


def _fn(op):
    if op.name == "getitem":
        return lambda x, k: x[k]
    return op.resolve(fabric)


def _run(op, sample, dev, grad):
    """(outputs, gradients or None) of ``op`` on ``sample`` placed on ``dev``."""
    x = to_device(sample.input, dev, grad)
    args = to_device(sample.args, dev, grad)
    out = _fn(op)(x, *args, **sample.kwargs)
    if op.output_index is not None:
        out = out[op.output_index]
    outs = flat_outputs(out)
    return outs, (backward(outs, leaves([x, args])) if grad else None)


def _ids(op):
    return op.name if op.output_index is None else f"{op.name}[{op.output_index}]"


@pytest.mark.parametrize("op", ALL_OPS, ids=_ids)
def test_op_agrees_with_cpu(op, device):
    ran = 0
    for dtype in op.dtypes:
        grad = op.differentiable and np.dtype(dtype).kind == "f"
        for sample in op.sample_inputs(dtype, np.random.default_rng(0)):
            what = f"{op.name} {sample}"
            g = grad and sample.grad
            try:
                want, want_grads = _run(op, sample, "cpu", g)
            except Exception as e:
                with pytest.raises(type(e)):
                    _run(op, sample, device, g)
                continue
            got, got_grads = _run(op, sample, device, g)
            assert_on(got, "cuda:0", what)
            assert_same_results(got, want, what, atol=op.atol)
            if want_grads is not None:
                assert_same_results(got_grads, want_grads, f"grad of {what}", scale=10.0, atol=op.grad_atol)
            ran += 1
    assert ran, f"{op.name}: no sample ran"
