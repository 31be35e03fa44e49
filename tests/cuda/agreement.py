"""Shared pieces of the CPU-vs-CUDA agreement matrices (test_ops_gpu.py,
test_modules_gpu.py): the ``device`` fixture and the comparison helpers.

``device`` has two values:

* ``"cuda"`` (marker ``cuda``): a real GPU through CuPy; skipped where
  ``cupy.is_available()`` is False;
* ``"fake-cuda"``: fabric's CUDA path on :mod:`fake_cupy` (NumPy arrays
  posing as device arrays, fused kernels run from their ``.cu`` sources by the
  g++ CPU harness), so the dispatch code runs on every machine; needs g++.

Both run the same samples on ``cpu`` and on ``cuda:0`` and compare forward
results, result device/dtype/shape, errors, and gradients.
"""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import fabric

# the ModuleInfo registry imports its families as top-level modules from tests/nn
_NN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "nn")
if _NN not in sys.path:
    sys.path.insert(0, _NN)

from moduleinfo import Const  # noqa: E402 (tests/nn is put on sys.path above)

DEVICES = [pytest.param("cuda", marks=pytest.mark.cuda, id="cuda"),
           pytest.param("fake-cuda", id="fake-cuda")]


def device_fixture(request):
    """Body of the test modules' ``device`` fixture (``params=DEVICES``): yields
    the device string to run on ("cuda"), the fake one installed meanwhile."""
    if request.param == "cuda":
        yield "cuda"
        return
    import harness

    if not harness.have_compiler():
        pytest.skip("fake-cuda runs the fused kernels on the CPU harness, which needs g++ and nm")
    import fake_cupy

    with fake_cupy.installed(kernels="harness"):
        yield "cuda"


# --- tolerances: by result dtype ---------------------------------------------------------
def tolerance(dtype, scale=1.0, atol=0.0, rtol=0.0):
    """(rtol, atol) for comparing a CPU and a CUDA result of ``dtype``: float32
    and float16 allow for a different summation order and libdevice vs libm
    results, float64 for the last few bits; integers and bools must be equal."""
    dt = np.dtype(dtype)
    if dt.kind != "f":
        return 0.0, 0.0
    base = {2: (2e-3, 2e-3), 4: (1e-4, 1e-5)}.get(dt.itemsize, (1e-7, 1e-9))
    return max(base[0] * scale, rtol), max(base[1] * scale, atol)


def to_device(v, dev, grad=False):
    """NumPy arrays anywhere in ``v`` (lists, tuples, dicts) to tensors on
    ``dev`` (leaves there: float ones require grad when ``grad``)."""
    if isinstance(v, Const):
        return to_device(v.array, dev, False)
    if isinstance(v, np.ndarray):
        t = fabric.from_numpy(np.array(v, copy=True))
        if dev != "cpu":
            t = t.to(dev)
        if grad and v.dtype.kind == "f":
            t.requires_grad_(True)
        return t
    if isinstance(v, list):
        return [to_device(x, dev, grad) for x in v]
    if isinstance(v, tuple):
        return tuple(to_device(x, dev, grad) for x in v)
    if isinstance(v, dict):
        return {k: to_device(x, dev, grad) for k, x in v.items()}
    return v


def flat_tensors(v) -> list:
    if isinstance(v, fabric.Tensor):
        return [v]
    if isinstance(v, (list, tuple)):
        return [t for x in v for t in flat_tensors(x)]
    if isinstance(v, dict):
        return [t for x in v.values() for t in flat_tensors(x)]
    return []


def leaves(v) -> list:
    return [t for t in flat_tensors(v) if t.requires_grad and t.grad_fn is None]


def flat_outputs(v) -> list:
    """Tensors and plain values (bools, numbers) of an op's result, in order."""
    if isinstance(v, fabric.Tensor):
        return [v]
    if isinstance(v, (list, tuple)):
        return [o for x in v for o in flat_outputs(x)]
    return [v]


def backward(outs, ins, seed=1):
    """Gradients of ``outs`` (float tensors that require grad) with respect to
    ``ins``, with upstream gradients drawn from ``seed`` (the same on every
    device); None entries for unused inputs."""
    outs = [o for o in outs if isinstance(o, fabric.Tensor) and o.requires_grad]
    if not outs or not ins:
        return None
    rng = np.random.default_rng(seed)
    dev = str(outs[0].device)
    gys = [to_device(rng.standard_normal(o.shape).astype(o._data.dtype), dev) for o in outs]
    grads = fabric.autograd.grad(outs, ins, gys, allow_unused=True)
    return [None if g is None else g.detach().cpu().numpy() for g in grads]


def host(v):
    if isinstance(v, fabric.Tensor):
        return v.detach().cpu().numpy()
    return np.asarray(v)


def assert_same_results(got, want, what, scale=1.0, atol=0.0, rtol=0.0):
    """``got`` (from the device) against ``want`` (from the CPU): same length,
    dtypes and shapes, values within :func:`tolerance`; NaNs in the same places."""
    assert len(got) == len(want), f"{what}: {len(got)} results on cuda, {len(want)} on cpu"
    for i, (g, w) in enumerate(zip(got, want)):
        if w is None or g is None:
            assert g is None and w is None, f"{what}[{i}]: None on one device only"
            continue
        g, w = host(g), host(w)
        assert g.dtype == w.dtype, f"{what}[{i}]: dtype {g.dtype} on cuda, {w.dtype} on cpu"
        assert g.shape == w.shape, f"{what}[{i}]: shape {g.shape} on cuda, {w.shape} on cpu"
        r, a = tolerance(w.dtype, scale, atol, rtol)
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=r, atol=a, equal_nan=True, err_msg=f"{what}[{i}]")
        else:
            np.testing.assert_array_equal(g, w, err_msg=f"{what}[{i}]")


def assert_on(outs, dev="cuda:0", what=""):
    for o in outs:
        if isinstance(o, fabric.Tensor):
            assert str(o.device) == dev, f"{what}: a result is on {o.device}, expected {dev}"
