"""The numba CPU kernels (the ``cpu`` extra) against their NumPy reference twins.

The kernel-agreement tests of tests/cuda/test_kernels_cpu.py (the CUDA kernels on the CPU
harness against the same references) run here once more with ``hb`` the numba backend, so
both kernel sets face one sample set; ``ran`` checks that the kernel ran rather than the
``super()`` fallback.  Skipped cleanly without numba.  The whole suite also runs against the
kernels whenever numba is installed (the CPU backend default), and against the NumPy path
with ``FABRIC_CPU_KERNELS=0``.
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("numba")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "cuda"))

import test_kernels_cpu as agreement

from fabric.backends.cpu_kernels import backend as numba_backend


class RecordingKernels:
    """The kernel module, recording which kernels ran (the ``launched`` set ``ran`` reads)."""

    def __init__(self, module):
        self._module = module
        self.launched: set[str] = set()

    def __getattr__(self, name):
        self.launched.add(name)
        return getattr(self._module, name)


@pytest.fixture
def hb(monkeypatch):
    rec = RecordingKernels(numba_backend.kernels())
    rec32 = RecordingKernels(numba_backend.kernels32())
    rec32.launched = rec.launched      # one record for both kernel sets
    monkeypatch.setattr(numba_backend, "kernels", lambda: rec)
    monkeypatch.setattr(numba_backend, "kernels32", lambda: rec32)
    be = numba_backend.NumbaBackend()
    be.kernels = rec
    return be


# kernel names of the CUDA set that the numba set spells differently
_ALIASES = {"gelu_fwd": "act_fwd", "silu_fwd": "act_fwd", "gelu_bwd": "act_bwd", "silu_bwd": "act_bwd",
            "layer_norm_bwd_params": "norm_bwd_params", "rms_norm_bwd_params": "norm_bwd_params",
            "im2col_bwd": "col2im_2d", "sgd_step": "sgd_update", "adam_step": "adam_update"}


@pytest.fixture(autouse=True)
def _numba_ran(monkeypatch, request):
    """``ran``: the kernels ran (float16 inputs: the reference ran instead, by design)."""
    callspec = getattr(request.node, "callspec", None)
    dt = callspec.params.get("dt") if callspec is not None else None
    half = dt is np.float16

    def ran(be, *names):
        if half:
            assert be.kernels.launched == set()
            return
        # a CUDA name ran when its numba twin of either set ran (the float32 set keeps the CUDA names)
        launched = be.kernels.launched
        skip = {"im2col_fwd"}                  # im2col stays a strided view + copy
        if dt is np.float64:
            skip |= numba_backend.REFERENCE_FLOAT64
        missing = {n for n in names if n not in skip and n not in launched and _ALIASES.get(n, n) not in launched}
        assert not missing, f"fell back instead of running {missing}"

    monkeypatch.setattr(agreement, "ran", ran)


test_softmax_family = agreement.test_softmax_family
test_softmax_masked_rows = agreement.test_softmax_masked_rows
test_cross_entropy = agreement.test_cross_entropy
test_cross_entropy_bad_target_is_nan_not_oob = agreement.test_cross_entropy_bad_target_is_nan_not_oob
test_cross_entropy_large_logits = agreement.test_cross_entropy_large_logits
test_log_softmax_large_logits = agreement.test_log_softmax_large_logits
test_activation_tails_and_infinities = agreement.test_activation_tails_and_infinities
test_layer_norm = agreement.test_layer_norm
test_rms_norm = agreement.test_rms_norm
test_activations = agreement.test_activations
test_dropout_same_mask_as_reference = agreement.test_dropout_same_mask_as_reference
test_embedding_backward = agreement.test_embedding_backward
test_im2col_col2im = agreement.test_im2col_col2im
test_max_pool2d = agreement.test_max_pool2d
test_sgd_step = agreement.test_sgd_step
test_adam_step = agreement.test_adam_step


def test_float16_falls_back_to_the_reference(hb):
    x = np.random.default_rng(0).standard_normal((3, 4, 5)).astype(np.float16)
    np.testing.assert_array_equal(hb.softmax(x, 1), agreement.ref.softmax(x, 1))
    assert hb.kernels.launched == set()


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_safe_softmax_in_place(hb, dt):
    """Attention's softmax: in place, rows of all -inf give zeros, NaN rows stay NaN."""
    s = np.random.default_rng(2).standard_normal((2, 3, 5, 7)).astype(dt) * 4
    s[0, 1, 2] = -np.inf
    s[1, 0, :, 3] = -np.inf
    s[1, 2, 4, 0] = np.nan
    want = agreement.ref.safe_softmax_(s.copy())
    got = s.copy()
    assert hb.safe_softmax_(got) is got
    agreement.check(got, want, agreement.tol(dt))
    assert (got[0, 1, 2] == 0).all() and np.isnan(got[1, 2, 4]).all()
    assert hb.kernels.launched == ({"safe_softmax_inplace"} if dt is np.float32 else set())   # float64: NumPy


def test_non_contiguous_inputs(hb):
    x = np.random.default_rng(1).standard_normal((6, 8)).astype(np.float32).T
    agreement.check(hb.log_softmax(x, -1), agreement.ref.log_softmax(x, -1), 2e-6)
    y, m, r = hb.layer_norm(x[::2], None, None, 1e-5)
    agreement.check((y, m, r), agreement.ref.layer_norm(x[::2], None, None, 1e-5), 1e-5)


def test_backend_choice_and_lazy_numba_import():
    """numba is the default CPU backend's only when installed and not disabled, and is not
    imported by ``import fabric`` (only by the first kernel call)."""
    code = ("import sys, fabric; from fabric.backends import cpu_backend as b; "
            "print(type(b).__name__, 'numba' in sys.modules)")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    on = subprocess.run([sys.executable, "-c", code], env=dict(env, FABRIC_CPU_KERNELS="1"),
                        capture_output=True, text=True, check=True).stdout.split()
    off = subprocess.run([sys.executable, "-c", code], env=dict(env, FABRIC_CPU_KERNELS="0"),
                         capture_output=True, text=True, check=True).stdout.split()
    assert on == ["NumbaBackend", "False"]
    assert off == ["NumpyBackend", "False"]


def test_exp32_within_two_ulp_and_specials():
    """The vectorisable float32 exp of the float32 kernels: within 2 ulp of the float64 exp
    over the normal range, +-inf and NaN as ``np.exp``, denormal results flushed to 0."""
    k32 = numba_backend.kernels32()
    x = np.concatenate([np.linspace(-87.3, 88.7, 200001), np.random.default_rng(3).standard_normal(10000)])
    x = x.astype(np.float32)
    got = np.array([k32.exp32(v) for v in x[::50]] + [k32.exp32(v) for v in x[-10000:]], np.float32)
    want = np.exp(np.concatenate([x[::50], x[-10000:]]).astype(np.float64))
    ulp = np.spacing(want.astype(np.float32)).astype(np.float64)
    assert (np.abs(got - want) / ulp).max() <= 2
    special = np.array([-np.inf, np.inf, np.nan, 0.0, -87.4, -100.0, -110.0, 88.75], np.float32)
    got = np.array([k32.exp32(v) for v in special], np.float32)
    np.testing.assert_array_equal(got, [0.0, np.inf, np.nan, 1.0, 0.0, 0.0, 0.0, np.inf])


@pytest.mark.parametrize("name,args,kernel", [("gelu", ("none",), "gelu_fwd"), ("gelu_backward", (None, "none"), "gelu_bwd"),
                                              ("silu", (), "silu_fwd"), ("silu_backward", (None,), "silu_bwd")])
def test_float32_activations_take_the_vectorised_kernels(hb, name, args, kernel):
    """float32 activations run the :mod:`kernels32` twins and agree with the NumPy reference
    over a wide range (non-contiguous input: the kernels get a contiguous copy)."""
    x = (np.random.default_rng(4).standard_normal((300, 40)) * 6).astype(np.float32).T
    gy = np.random.default_rng(5).standard_normal((40, 300)).astype(np.float32)
    full = tuple(gy if a is None else a for a in args)
    got, want = getattr(hb, name)(x, *full), getattr(agreement.ref, name)(x, *full)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert hb.kernels.launched == {kernel}


def test_float32_row_ops_take_the_vectorised_kernels(monkeypatch):
    """float32 softmax family, cross entropy and layer norm run :mod:`kernels32` (the
    float64-arithmetic set only for layer norm's weight/bias column sums)."""
    rec, rec32 = RecordingKernels(numba_backend.kernels()), RecordingKernels(numba_backend.kernels32())
    monkeypatch.setattr(numba_backend, "kernels", lambda: rec)
    monkeypatch.setattr(numba_backend, "kernels32", lambda: rec32)
    be = numba_backend.NumbaBackend()
    rng = np.random.default_rng(6)
    x, gy = (rng.standard_normal((2, 5, 33)).astype(np.float32) for _ in range(2))
    ref = agreement.ref
    for name in ("softmax", "log_softmax"):
        y = getattr(be, name)(x, 1)
        agreement.check(y, getattr(ref, name)(x, 1), 2e-6)
        agreement.check(getattr(be, name + "_backward")(y, gy, 1), getattr(ref, name + "_backward")(y, gy, 1), 2e-6)
    s = x.copy()
    agreement.check(be.safe_softmax_(s), ref.safe_softmax_(x.copy()), 2e-6)
    logits, target = x.reshape(10, 33), rng.integers(0, 33, 10)
    loss, saved = be.cross_entropy(logits, target, None, -100, 0.1)
    want_loss, want_saved = ref.cross_entropy(logits, target, None, -100, 0.1)
    agreement.check(loss, want_loss, 2e-5)
    g = np.full(10, 0.1, np.float32)
    agreement.check(be.cross_entropy_backward(saved, target, None, -100, 0.1, g),
                    ref.cross_entropy_backward(want_saved, target, None, -100, 0.1, g), 2e-5)
    w, b = rng.standard_normal(33).astype(np.float32), rng.standard_normal(33).astype(np.float32)
    y, mean, rstd = be.layer_norm(x, w, b, 1e-5)
    agreement.check((y, mean, rstd), ref.layer_norm(x, w, b, 1e-5), 2e-5)
    agreement.check(be.layer_norm_backward(gy, x, w, mean, rstd), ref.layer_norm_backward(gy, x, w, mean, rstd), 1e-4)
    assert rec.launched == {"norm_bwd_params"}
    assert rec32.launched == {"softmax_fwd", "softmax_bwd", "log_softmax_fwd", "log_softmax_bwd", "safe_softmax_inplace",
                              "cross_entropy_fwd", "cross_entropy_bwd", "layer_norm_fwd", "layer_norm_bwd"}


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_compiled_bernoulli_is_the_numpy_stream(monkeypatch, dt):
    """The CPU generator's compiled bernoulli masks (dropout's) are the NumPy draws bit for bit,
    across twist boundaries and from any state position, and leave the same state behind."""
    from fabric._rng import mt19937 as _rng

    numba_backend.NumbaBackend()              # registers the kernel
    kernel = _rng._compiled_bernoulli53
    assert kernel is not None
    fast, slow = _rng.MT19937Generator(11), _rng.MT19937Generator(11)
    for n, p in ((4096, 0.9), (5001, 0.5), (70001, 0.1), (1, 0.5), (100_000, 1.0), (8192, 0.0)):
        slow.uniform((3,), np.float32)         # shift the position off the block boundary
        fast.uniform((3,), np.float32)
        got = fast.bernoulli(p, (n,), dt)
        monkeypatch.setattr(_rng, "_compiled_bernoulli53", None)
        want = slow.bernoulli(p, (n,), dt)
        monkeypatch.setattr(_rng, "_compiled_bernoulli53", kernel)
        assert got.dtype == want.dtype and np.array_equal(got, want)
        assert np.array_equal(fast.get_state(), slow.get_state())
