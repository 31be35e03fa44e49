"""On a real GPU: every fused CupyBackend method against the NumPy reference,
and the kernels actually ran (no silent fallback).  Skipped where
``cupy.is_available()`` is False; run with ``pytest tests/cuda -m cuda``."""
from __future__ import annotations

import numpy as np
import pytest

from fabric.backends import fused
from fabric.backends.numpy_backend import NumpyBackend

ref = NumpyBackend()   # the NumPy reference twins, also where the numba kernels are the default

pytestmark = pytest.mark.cuda

rng = np.random.default_rng(3)
ALL = [np.float16, np.float32, np.float64]


@pytest.fixture(scope="module")
def gpu():
    cupy = pytest.importorskip("cupy")
    if not cupy.is_available():
        pytest.skip("no CUDA device (cupy.is_available() is False)")
    from fabric.backends import get_cupy_backend

    return get_cupy_backend()


def to_dev(be, v):
    if isinstance(v, np.ndarray):
        return be.xp.asarray(v)
    if isinstance(v, (list, tuple)):
        return type(v)(to_dev(be, e) for e in v)
    return v


def to_host(be, v):
    if isinstance(v, (list, tuple)):
        return type(v)(to_host(be, e) for e in v)
    if v is None or isinstance(v, (int, float, np.ndarray)):
        return v
    return be.xp.asnumpy(v)


def tol(dt):
    return {np.dtype(np.float16): 3e-3, np.dtype(np.float32): 5e-5, np.dtype(np.float64): 1e-11}[np.dtype(dt)]


def same(got, want, t):
    if isinstance(want, (tuple, list)):
        for g, w in zip(got, want):
            same(g, w, t)
    elif want is None:
        assert got is None
    else:
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=t, atol=t)


def compare(gpu, name, *args, t=None, dt=np.float32):
    want = getattr(ref, name)(*args)
    got = to_host(gpu, getattr(gpu, name)(*to_dev(gpu, list(args))))
    same(got, want, tol(dt) if t is None else t)
    return want


def r(shape, dt, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(dt)


@pytest.mark.parametrize("dt", ALL)
@pytest.mark.parametrize("shape,axis", [((64, 1000), -1), ((3, 20000), -1), ((8, 65, 5), 1), ((256, 65), -1)])
def test_softmax_family(gpu, dt, shape, axis):
    x, gy = r(shape, dt, 3), r(shape, dt)
    for name in ("softmax", "log_softmax"):
        y = compare(gpu, name, x, axis, dt=dt)
        compare(gpu, name + "_backward", y, gy, axis, dt=dt)


@pytest.mark.parametrize("dt", ALL)
@pytest.mark.parametrize("weighted,smoothing", [(False, 0.0), (True, 0.1)])
def test_cross_entropy(gpu, dt, weighted, smoothing):
    n, c = 512, 65
    x, t = r((n, c), dt, 2), rng.integers(0, c, n)
    t[::7] = -100
    w = (rng.random(c) + 0.5).astype(dt) if weighted else None
    loss, saved = ref.cross_entropy(x, t, w, -100, smoothing)
    gl, gs = gpu.cross_entropy(*to_dev(gpu, [x, t, w, -100, smoothing]))
    same(to_host(gpu, gl), loss, tol(dt) * 4)
    g = (rng.random(n)).astype(dt)
    same(to_host(gpu, gpu.cross_entropy_backward(gs, *to_dev(gpu, [t, w, -100, smoothing, g]))),
         ref.cross_entropy_backward(saved, t, w, -100, smoothing, g), tol(dt))


@pytest.mark.parametrize("dt", ALL)
@pytest.mark.parametrize("cols", [384, 20000])
def test_norms(gpu, dt, cols):
    x, gy, w, b = r((64, cols), dt, 2), r((64, cols), dt), r(cols, dt), r(cols, dt)
    _, mean, rstd = compare(gpu, "layer_norm", x, w, b, 1e-5, t=tol(dt) * 10, dt=dt)
    compare(gpu, "layer_norm_backward", gy, x, w, mean, rstd, True, t=tol(dt) * 50, dt=dt)
    _y, rstd = compare(gpu, "rms_norm", x, w, 1e-6, t=tol(dt) * 10, dt=dt)
    compare(gpu, "rms_norm_backward", gy, x, w, rstd, t=tol(dt) * 50, dt=dt)


@pytest.mark.parametrize("dt", ALL)
def test_activations(gpu, dt):
    x, gy, b = r((300, 257), dt, 3), r((300, 257), dt), r(257, dt)
    for ap in ("none", "tanh"):
        compare(gpu, "gelu", x, ap, dt=dt)
        compare(gpu, "gelu_backward", x, gy, ap, dt=dt)
    compare(gpu, "silu", x, dt=dt)
    compare(gpu, "silu_backward", x, gy, dt=dt)
    for act in fused.ACTIVATIONS:
        compare(gpu, "bias_act", x, b, act, dt=dt)
        compare(gpu, "bias_act_backward", x, b, gy, act, t=tol(dt) * 50, dt=dt)


@pytest.mark.parametrize("dt", ALL)
def test_dropout_bitwise(gpu, dt):
    x = r((1000, 33), dt)
    compare(gpu, "dropout", x, 0.2, 1234, 99, t=0)


@pytest.mark.parametrize("dt", ALL)
def test_embedding_backward(gpu, dt):
    idx = rng.integers(0, 65, (64, 256))
    compare(gpu, "embedding_backward", idx, r((64, 256, 384), dt), 65, 0, t=tol(dt) * 100, dt=dt)


@pytest.mark.parametrize("dt", ALL)
def test_im2col_pool(gpu, dt):
    x = r((8, 16, 28, 28), dt)
    cols = compare(gpu, "im2col", x, 3, 1, 1, 1, t=0)
    compare(gpu, "col2im", cols, x.shape, 3, 1, 1, 1, t=tol(dt) * 10, dt=dt)
    compare(gpu, "im2col", r((8, 16, 100), dt), 5, 2, 2, 1, t=0)
    y, idx = compare(gpu, "max_pool2d", x, 3, 2, 1, 1, True, t=0)
    compare(gpu, "max_pool2d_backward", r(y.shape, dt), idx, x.shape, t=tol(dt) * 4, dt=dt)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_optimizers(gpu, dt):
    shapes = [(384, 384), (384,), (65, 384), (1,)]
    ps, gs, ms = ([r(s, dt) for s in shapes] for _ in range(3))
    vs = [np.abs(r(s, dt)) for s in shapes]
    dev = [to_dev(gpu, [a.copy() for a in lst]) for lst in (ps, gs, ms, vs)]
    for step in (1, 2):
        ref.adam_step(ps, gs, ms, vs, None, step, 1e-3, 0.9, 0.95, 1e-8, 0.1, False, False, True)
        gpu.adam_step(dev[0], dev[1], dev[2], dev[3], None, step, 1e-3, 0.9, 0.95, 1e-8, 0.1, False, False, True)
    for lst, d in zip((ps, ms, vs), (dev[0], dev[2], dev[3])):
        same(to_host(gpu, d), lst, tol(dt) * 10)
    bufs = [np.zeros(s, dt) for s in shapes]
    dp, dg, db = (to_dev(gpu, [a.copy() for a in lst]) for lst in (ps, gs, bufs))
    ref.sgd_step(ps, gs, bufs, 0.1, 0.9, 0.0, 0.01, True, False, True)
    gpu.sgd_step(dp, dg, db, 0.1, 0.9, 0.0, 0.01, True, False, True)
    same(to_host(gpu, dp), ps, tol(dt))


def test_kernels_were_used(gpu):
    x = gpu.xp.ones((4, 8), "float32")
    gpu.softmax(x, -1)
    assert gpu.kernels._modules, "no RawModule was compiled: the backend fell back to CuPy compositions"


def test_host_transfers(gpu):
    a = r((100, 7), np.float32)
    d = gpu.from_numpy(a, 0, non_blocking=True)
    h = gpu.to_numpy(d, non_blocking=True)
    gpu.xp.cuda.get_current_stream().synchronize()
    np.testing.assert_array_equal(h, a)
    t = gpu.xp.zeros(5, "float32")
    gpu.scatter_add(t, gpu.xp.asarray([1, 1, 3]), gpu.xp.asarray([1.0, 2.0, 3.0], "float32"))
    assert gpu.to_numpy(t).tolist() == [0, 3, 0, 3, 0]
