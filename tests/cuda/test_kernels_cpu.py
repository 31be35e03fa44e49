"""Every CUDA kernel, executed on the CPU by the harness through the CuPy
backend's own launch code (KernelOps), against its NumPy reference twin.

Four harness configurations: tiny launch limits (3 blocks, <=128 threads,
96-element optimizer chunks, so grid-stride and multi-chunk paths run, softmax
with a block per row) with rows cached in shared memory; the same with caching
off and guard pages before the arrays; GPU-sized limits (softmax rows of up to
1024 columns one warp each); and tiny limits under the race check (every
access recorded, threads preempted at memory operations)."""
from __future__ import annotations

import functools
import operator

import harness
import numpy as np
import pytest

from fabric.backends import fused
from fabric.backends.cuda import launch
from fabric.backends.numpy_backend import NumpyBackend

ref = NumpyBackend()   # the NumPy reference twins, also where the numba kernels are the default

pytestmark = pytest.mark.skipif(not harness.have_compiler(), reason="the CUDA CPU harness needs g++ and nm")

CONFIGS = {
    "tiny-cached": {"seed": 0, "guard": "end", "limits": launch.Limits(
        max_block=128, max_grid=3, elementwise_block=64, chunk_size=96, warp_row_max=0)},
    "tiny-uncached": {"seed": 1, "guard": "start", "limits": launch.Limits(
        max_block=64, max_grid=2, max_shared=0, elementwise_block=32, chunk_size=40, warp_row_max=0)},
    "gpu-sized": {"seed": 2, "guard": "end", "limits": launch.Limits()},
    # race check: every access recorded, threads preempted at memory operations
    "race-checked": {"seed": 3, "guard": "end", "race": True, "limits": launch.Limits(
        max_block=64, max_grid=3, max_shared=44 * 1024, elementwise_block=32, chunk_size=64)},
}
ALL = [np.float16, np.float32, np.float64]
LAUNCHED: set[str] = set()


@pytest.fixture(params=list(CONFIGS))
def hb(request, harness_modules):
    be = harness.HarnessBackend(**CONFIGS[request.param])
    yield be
    LAUNCHED.update(be.kernels.launched)


def tol(dt):
    return {np.dtype(np.float16): 3e-3, np.dtype(np.float32): 2e-5, np.dtype(np.float64): 1e-12}[np.dtype(dt)]


def check(got, want, t):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            check(g, w, t)
        return
    if want is None:
        assert got is None
        return
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype, want.shape, want.dtype)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=t, atol=t)


def ran(be, *kernels):
    names = {n.split("<")[0] for n in be.kernels.launched}
    assert set(kernels) <= names, f"fell back instead of launching {set(kernels) - names}"


rng = np.random.default_rng(7)


def randn(shape, dt, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(dt)


@pytest.mark.parametrize("dt", ALL)
@pytest.mark.parametrize("shape,axis", [((5, 37), -1), ((7, 300), 1), ((2, 9, 4), 1), ((4, 1), -1), ((3, 0), -1),
                                        ((3, 1100), -1)])
def test_softmax_family(hb, dt, shape, axis):
    x = randn(shape, dt, 3.0)
    gy = randn(shape, dt)
    for name in ("softmax", "log_softmax"):
        y = getattr(ref, name)(x, axis)
        check(getattr(hb, name)(x, axis), y, tol(dt))
        check(getattr(hb, name + "_backward")(y, gy, axis), getattr(ref, name + "_backward")(y, gy, axis), tol(dt))
    if x.size:
        ran(hb, "softmax_fwd", "log_softmax_fwd", "softmax_bwd", "log_softmax_bwd")


def test_softmax_masked_rows(hb):
    x = np.array([[0.0, -np.inf, 1.0, -np.inf], [-np.inf] * 4, [np.nan, 0, 0, 0]], np.float32)
    with np.errstate(invalid="ignore"):
        want = ref.softmax(x, -1), ref.log_softmax(x, -1)
    check(hb.softmax(x, -1), want[0], 1e-6)
    check(hb.log_softmax(x, -1)[0], want[1][0], 1e-6)
    assert np.isnan(hb.log_softmax(x, -1)[1:]).all()


@pytest.mark.parametrize("dt", ALL)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.15])
@pytest.mark.parametrize("n,c", [(6, 11), (5, 300)])
def test_cross_entropy(hb, dt, weighted, smoothing, n, c):
    x = randn((n, c), dt, 2.0)
    t = rng.integers(0, c, n)
    t[1] = -7
    w = (rng.random(c) + 0.5).astype(dt) if weighted else None
    g = (rng.random(n) + 0.5).astype(dt)
    loss, saved = hb.cross_entropy(x, t, w, -7, smoothing)
    want_loss, want_saved = ref.cross_entropy(x, t, w, -7, smoothing)
    check(loss, want_loss, tol(dt) * 4)
    check(saved[1], want_saved[1], tol(dt))
    check(hb.cross_entropy_backward(saved, t, w, -7, smoothing, g),
          ref.cross_entropy_backward(want_saved, t, w, -7, smoothing, g), tol(dt))
    ran(hb, "cross_entropy_fwd", "cross_entropy_bwd")


def test_cross_entropy_bad_target_is_nan_not_oob(hb):
    loss, _saved = hb.cross_entropy(np.zeros((2, 3), np.float32), np.array([0, 3]), None, -100, 0.0)
    assert loss[0] == pytest.approx(np.log(3)) and np.isnan(loss[1])



@pytest.mark.parametrize("dt", ALL)
@pytest.mark.parametrize("weighted,smoothing", [(False, 0.0), (True, 0.15)])
def test_cross_entropy_large_logits(hb, dt, weighted, smoothing):
    """Loss and gradient from the shifted logits in the kernel too: at logits ~1e4 a
    max + lse rounded to float32 would be off by ~5e-4 relative.  A -inf (masked) logit
    and an ignored row included."""
    n, c = 5, 70
    x = ((3e4 if dt == np.float16 else 1e4) + randn((n, c), np.float64, 60.0 if dt == np.float16 else 3.0)).astype(dt)
    x[0, 3] = -np.inf
    t = rng.integers(0, c, n)
    t[0], t[2] = 5, -7
    w = (rng.random(c) + 0.5).astype(dt) if weighted else None
    g = (rng.random(n) + 0.5).astype(dt)
    loss, saved = hb.cross_entropy(x, t, w, -7, smoothing)
    want_loss, want_saved = ref.cross_entropy(x, t, w, -7, smoothing)
    check(loss, want_loss, tol(dt) * 4)
    check(saved[1], want_saved[1], tol(dt))
    gx = hb.cross_entropy_backward(saved, t, w, -7, smoothing, g)
    check(gx, ref.cross_entropy_backward(want_saved, t, w, -7, smoothing, g), tol(dt))
    assert np.isfinite(gx).all() and (gx[2] == 0).all()


@pytest.mark.parametrize("dt", ALL)
def test_log_softmax_large_logits(hb, dt):
    x = ((3e4 if dt == np.float16 else 1e4) + randn((4, 50), np.float64, 60.0 if dt == np.float16 else 3.0)).astype(dt)
    check(hb.log_softmax(x, -1), ref.log_softmax(x, -1), tol(dt))
    check(hb.softmax(x, -1), ref.softmax(x, -1), tol(dt))


@pytest.mark.parametrize("dt", ALL)
def test_activation_tails_and_infinities(hb, dt):
    """The kernels' erfc / exp forms against the references over the whole range:
    tails relative to their size, +-inf and NaN as PyTorch."""
    big = float(np.finfo(dt).max)
    x = np.concatenate([np.linspace(-30, 30, 241), [np.inf, -np.inf, np.nan, big, -big, 0.0]]).astype(dt)
    gy = np.ones_like(x)
    tiny = float(np.finfo(dt).tiny)
    for name, args in (("gelu", (x, "none")), ("gelu_backward", (x, gy, "none")), ("silu", (x,)),
                       ("silu_backward", (x, gy))):
        got, want = getattr(hb, name)(*args), getattr(ref, name)(*args)
        atol = tol(dt) / 100 if name.endswith("backward") else tiny * 64   # derivatives cross zero
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol(dt), atol=atol,
                                   err_msg=name)
    ran(hb, "gelu_fwd", "gelu_bwd", "silu_fwd", "silu_bwd")

@pytest.mark.parametrize("dt", ALL)
@pytest.mark.parametrize("shape", [(4, 33), (2, 3, 300), (3, 1)])
@pytest.mark.parametrize("affine", [False, True])
def test_layer_norm(hb, dt, shape, affine):
    x = randn(shape, dt, 2.0) + dt(3)
    c = shape[-1]
    w, b = (randn(c, dt), randn(c, dt)) if affine else (None, None)
    gy = randn(shape, dt)
    y, mean, rstd = hb.layer_norm(x, w, b, 1e-5)
    want = ref.layer_norm(x, w, b, 1e-5)
    check((y, mean, rstd), want, tol(dt) * 10)
    check(hb.layer_norm_backward(gy, x, w, want[1], want[2], affine),
          ref.layer_norm_backward(gy, x, w, want[1], want[2], affine), tol(dt) * 30)
    ran(hb, "layer_norm_fwd", "layer_norm_bwd", *(["layer_norm_bwd_params"] if affine else []))


@pytest.mark.parametrize("dt", ALL)
@pytest.mark.parametrize("shape", [(4, 33), (2, 3, 300)])
@pytest.mark.parametrize("affine", [False, True])
def test_rms_norm(hb, dt, shape, affine):
    x = randn(shape, dt, 2.0)
    w = randn(shape[-1], dt) if affine else None
    gy = randn(shape, dt)
    y, rstd = hb.rms_norm(x, w, 1e-6)
    want = ref.rms_norm(x, w, 1e-6)
    check((y, rstd), want, tol(dt) * 10)
    check(hb.rms_norm_backward(gy, x, w, want[1]), ref.rms_norm_backward(gy, x, w, want[1]), tol(dt) * 30)
    ran(hb, "rms_norm_fwd", "rms_norm_bwd", *(["rms_norm_bwd_params"] if affine else []))


@pytest.mark.parametrize("dt", ALL)
def test_activations(hb, dt):
    x = randn((7, 45), dt, 3.0)
    gy = randn((7, 45), dt)
    bias = randn(45, dt)
    t = tol(dt) * 2
    for ap in ("none", "tanh"):
        check(hb.gelu(x, ap), ref.gelu(x, ap), t)
        check(hb.gelu_backward(x, gy, ap), ref.gelu_backward(x, gy, ap), t)
    check(hb.silu(x), ref.silu(x), t)
    check(hb.silu_backward(x, gy), ref.silu_backward(x, gy), t)
    for act in fused.ACTIVATIONS:
        check(hb.bias_act(x, bias, act), ref.bias_act(x, bias, act), t)
        check(hb.bias_act_backward(x, bias, gy, act), ref.bias_act_backward(x, bias, gy, act), t * 10)
    ran(hb, "gelu_fwd", "gelu_bwd", "silu_fwd", "silu_bwd", "bias_act_fwd", "bias_act_bwd")


@pytest.mark.parametrize("dt", ALL)
@pytest.mark.parametrize("n,p,seed,offset", [(1, 0.5, 0, 0), (1001, 0.1, 2 ** 40 + 5, 3), (64, 0.9, 17, 2 ** 33)])
def test_dropout_same_mask_as_reference(hb, dt, n, p, seed, offset):
    x = randn((n,), dt)
    y, mask = hb.dropout(x, p, seed, offset)
    want_y, want_mask = ref.dropout(x, p, seed, offset)
    np.testing.assert_array_equal(mask, want_mask)
    np.testing.assert_array_equal(y, want_y)
    ran(hb, "dropout_fwd")


@pytest.mark.parametrize("dt", ALL)
@pytest.mark.parametrize("padding_idx", [None, 2, -1])
def test_embedding_backward(hb, dt, padding_idx):
    idx = rng.integers(0, 10, (4, 6))
    gy = randn((4, 6, 5), dt)
    check(hb.embedding_backward(idx, gy, 10, padding_idx),
          ref.embedding_backward(idx, gy, 10, padding_idx), tol(dt) * 10)
    ran(hb, "embedding_bwd")


@pytest.mark.parametrize("dt", ALL)
@pytest.mark.parametrize("shape,k,s,p,d", [((2, 3, 7, 6), (3, 2), (2, 1), (1, 1), (1, 2)),
                                           ((1, 2, 5, 5), 3, 1, 1, 1),
                                           ((2, 3, 11), 3, 2, 1, 2)])
def test_im2col_col2im(hb, dt, shape, k, s, p, d):
    x = randn(shape, dt)
    cols = ref.im2col(x, k, s, p, d)
    check(hb.im2col(x, k, s, p, d), cols, 0)
    c = randn(cols.shape, dt)
    check(hb.col2im(c, shape, k, s, p, d), ref.col2im(c, shape, k, s, p, d), tol(dt) * 4)
    ran(hb, "im2col_fwd", "im2col_bwd")


@pytest.mark.parametrize("dt", ALL)
@pytest.mark.parametrize("k,s,p,d,ceil", [(2, 2, 0, 1, False), (3, 2, 1, 1, True), ((3, 2), (1, 2), (1, 0), (2, 1), True)])
def test_max_pool2d(hb, dt, k, s, p, d, ceil):
    x = randn((2, 3, 7, 6), dt)
    x[0, 0, 1, 1] = np.nan
    x[1, 1] = -np.inf
    y, idx = hb.max_pool2d(x, k, s, p, d, ceil)
    want_y, want_idx = ref.max_pool2d(x, k, s, p, d, ceil)
    np.testing.assert_array_equal(idx, want_idx)
    np.testing.assert_array_equal(y, want_y)
    gy = randn(y.shape, dt)
    check(hb.max_pool2d_backward(gy, idx, x.shape), ref.max_pool2d_backward(gy, want_idx, x.shape), tol(dt) * 4)
    ran(hb, "max_pool2d_fwd", "max_pool2d_bwd")


SHAPES = [(3, 4), (200,), (5,), (130, 2), (1,)]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("cfg", [{"momentum": 0.0}, {"momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01},
                                 {"momentum": 0.9, "nesterov": True, "maximize": True}])
def test_sgd_step(hb, dt, cfg):
    ps, gs, bs = ([randn(s, dt) for s in SHAPES] for _ in range(3))
    ps2, bs2 = [p.copy() for p in ps], [b.copy() for b in bs]
    for first in (True, False):
        hb.sgd_step(ps, gs, bs if cfg["momentum"] else None, 0.1, first_step=first, **cfg)
        ref.sgd_step(ps2, gs, bs2 if cfg["momentum"] else None, 0.1, first_step=first, **cfg)
    for a, b in zip(ps + bs, ps2 + bs2):
        check(a, b, tol(dt))
    ran(hb, "sgd_step")


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("cfg", [{}, {"weight_decay": 0.1, "amsgrad": True},
                                 {"weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True}])
def test_adam_step(hb, dt, cfg):
    ps, gs, ms = ([randn(s, dt) for s in SHAPES] for _ in range(3))
    vs, vm = ([np.abs(randn(s, dt)) for s in SHAPES] for _ in range(2))
    copies = [[a.copy() for a in lst] for lst in (ps, ms, vs, vm)]
    for step in (1, 2):
        hb.adam_step(ps, gs, ms, vs, vm, step, 1e-2, 0.9, 0.99, 1e-8, **cfg)
        ref.adam_step(*copies[:1], gs, *copies[1:], step, 1e-2, 0.9, 0.99, 1e-8, **cfg)
    for a, b in zip(ps + ms + vs + vm, functools.reduce(operator.iadd, copies, [])):
        check(a, b, tol(dt) * 10)
    ran(hb, "adam_step")


def test_thread_strided_loops_use_64_bit_indices():
    """A loop index that starts at a thread or block index and strides by blockDim / gridDim /
    a team width is 64-bit in every kernel: an `int c` wrapped past 2**31 - blockDim columns
    (bug: rows of more than 2**31 - 512 elements read and wrote at negative offsets).  Rows that
    large cannot be allocated here, so the rule is checked on the source NVRTC compiles."""
    import re

    offenders = []
    for file in launch.KERNELS:
        src = launch.module_source(file)
        for m in re.finditer(r"for \((?:const )?(?:unsigned )?(int|unsigned|short) (\w+) = ([^;]*);[^;]*;([^)]*)\)", src):
            init, step = m.group(3), m.group(4)
            if re.search(r"threadIdx|blockIdx|lane|first", init) or re.search(r"blockDim|gridDim|width|stride", step):
                offenders.append(f"{file}: {m.group(0)}")
    assert offenders == []


def test_row_kernels_refuse_columns_past_int32(monkeypatch):
    """`cols` is an int kernel parameter: rows of 2**31 or more columns fall back to the
    reference instead of launching (a zero-strided view: no memory behind it)."""
    hb = harness.HarnessBackend()
    big = np.lib.stride_tricks.as_strided(np.zeros(1, np.float16), (1, 2 ** 31), (0, 0))
    ok = np.lib.stride_tricks.as_strided(np.zeros(1, np.float16), (1, 2 ** 31 - 1), (0, 0))
    assert not hb._row_ok("softmax_fwd", big) and hb._row_ok("softmax_fwd", ok)


@pytest.fixture
def deterministic():
    import fabric

    prev = fabric.are_deterministic_algorithms_enabled()
    fabric.use_deterministic_algorithms(True)
    yield
    fabric.use_deterministic_algorithms(prev)


@pytest.mark.parametrize("dt", ALL)
def test_deterministic_embedding_and_max_pool_backward(harness_modules, deterministic, dt):
    """use_deterministic_algorithms(True): no atomics (sort + segment sums), the same bits
    under every thread interleaving (race-checked harness, preemption at memory operations)
    and, in float32/float64, the bits of the CPU reference (same summation order)."""
    idx = rng.integers(0, 6, (40, 3))
    idx[::7] = 2                                            # a long run of one index
    gy = randn((40, 3, 9), dt)
    x = randn((2, 3, 7, 6), dt)
    y, pidx = ref.max_pool2d(x, 3, 1, 1, 1, False)          # overlapping windows
    gyp = randn(y.shape, dt)
    results = []
    for seed in range(3):
        hb = harness.HarnessBackend(seed=seed, race=True, preempt=0.5, limits=launch.Limits(
            max_block=64, max_grid=3, elementwise_block=32))
        results.append((hb.embedding_backward(idx, gy, 6, 4), hb.max_pool2d_backward(gyp, pidx, x.shape)))
        LAUNCHED.update(hb.kernels.launched)
        names = {n.split("<")[0] for n in hb.kernels.launched}
        assert "embedding_bwd_sorted" in names and not names & {"embedding_bwd", "max_pool2d_bwd"}
    for emb, pool in results[1:]:
        np.testing.assert_array_equal(emb, results[0][0])
        np.testing.assert_array_equal(pool, results[0][1])
    want = ref.embedding_backward(idx, gy, 6, 4), ref.max_pool2d_backward(gyp, pidx, x.shape)
    check(results[0], want, tol(dt))


def test_zz_every_instantiation_ran():
    """Every (kernel, dtype) of the launch table was executed above."""
    expected = {ne for f in launch.KERNELS for ne in launch.name_expressions(f)}
    if not LAUNCHED:
        pytest.skip("the kernel tests did not run")
    assert expected - LAUNCHED == set()
