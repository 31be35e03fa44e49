"""Window functions (fabric/ops/spectral.py) and the frequency / shift helpers of fabric.fft."""
from __future__ import annotations

import numpy as np
import pytest

import fabric

WINDOWS = ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]


def _reference(name, n, periodic, beta=12.0):
    """The textbook formulas in float64 (the NumPy reference, no torch needed)."""
    if n <= 1:
        return np.ones(n)
    m = n + 1 if periodic else n
    k = np.arange(m)
    if name == "hann_window":
        w = 0.5 - 0.5 * np.cos(2 * np.pi * k / (m - 1))
    elif name == "hamming_window":
        w = 0.54 - 0.46 * np.cos(2 * np.pi * k / (m - 1))
    elif name == "blackman_window":
        w = 0.42 - 0.5 * np.cos(2 * np.pi * k / (m - 1)) + 0.08 * np.cos(4 * np.pi * k / (m - 1))
    elif name == "bartlett_window":
        w = 1 - np.abs(2 * k / (m - 1) - 1)
    else:
        a = (m - 1) / 2
        w = np.i0(beta * np.sqrt(1 - ((k - a) / a) ** 2)) / np.i0(beta)
    return w[:n]


@pytest.mark.parametrize("name", WINDOWS)
@pytest.mark.parametrize("periodic", [True, False])
@pytest.mark.parametrize("n", [0, 1, 2, 5, 8])
def test_window_matches_formula(name, periodic, n):
    w = getattr(fabric, name)(n, periodic, dtype=fabric.float64)
    assert w.dtype is fabric.float64 and w.shape == (n,)
    np.testing.assert_allclose(w.numpy(), _reference(name, n, periodic), rtol=1e-12, atol=1e-14)
    assert getattr(fabric, name)(n, periodic).dtype is fabric.float32


def test_window_options():
    np.testing.assert_allclose(fabric.hamming_window(6, False, 0.5, 0.5, dtype=fabric.float64).numpy(),
                               fabric.hann_window(6, False, dtype=fabric.float64).numpy())
    np.testing.assert_allclose(fabric.kaiser_window(7, False, 5.0, dtype=fabric.float64).numpy(),
                               np.kaiser(7, 5.0), rtol=1e-12)
    w = fabric.hann_window(4, requires_grad=True)
    assert w.requires_grad and w.is_leaf
    old = fabric.get_default_dtype()
    fabric.set_default_dtype(fabric.float64)
    try:
        assert fabric.blackman_window(3).dtype is fabric.float64
    finally:
        fabric.set_default_dtype(old)


@pytest.mark.parametrize("name", WINDOWS)
def test_window_errors(name):
    fn = getattr(fabric, name)
    with pytest.raises(RuntimeError, match=rf"^{name} expects floating point dtypes, got: TensorOptions\(dtype=long int"):
        fn(4, dtype=fabric.int64)
    with pytest.raises(RuntimeError, match=rf"^{name} requires non-negative window_length, got window_length=-1$"):
        fn(-1)
    with pytest.raises(TypeError, match="must be int, not float"):
        fn(4.0)


@pytest.mark.torch
@pytest.mark.parametrize("name", WINDOWS)
@pytest.mark.parametrize("dtype,tol", [("float16", 1e-3), ("bfloat16", 1e-2), ("float32", 3e-7), ("float64", 1e-15)])
def test_window_matches_torch(name, dtype, tol):
    import torch

    for n in (0, 1, 2, 7, 16):
        for periodic in (True, False):
            ours = getattr(fabric, name)(n, periodic, dtype=getattr(fabric, dtype))
            theirs = getattr(torch, name)(n, periodic, dtype=getattr(torch, dtype))
            assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
            np.testing.assert_allclose(ours.float().numpy(), theirs.float().numpy(), atol=tol, rtol=0)


@pytest.mark.torch
def test_window_error_texts_match_torch():
    import torch

    for args, kwargs in [((5,), {"dtype": "int16"}), ((-2,), {}), ((3,), {"dtype": "uint8"})]:
        kw = {k: getattr(torch, v) for k, v in kwargs.items()}
        with pytest.raises(RuntimeError) as theirs:
            torch.hann_window(*args, **kw)
        kw = {k: getattr(fabric, v) for k, v in kwargs.items()}
        with pytest.raises(RuntimeError) as ours:
            fabric.hann_window(*args, **kw)
        assert str(ours.value) == str(theirs.value)


# --- fftfreq, rfftfreq, fftshift, ifftshift --------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 4, 5])
@pytest.mark.parametrize("d", [1.0, 0.25])
def test_fftfreq_matches_numpy(n, d):
    np.testing.assert_allclose(fabric.fft.fftfreq(n, d, dtype=fabric.float64).numpy(), np.fft.fftfreq(n, d))
    np.testing.assert_allclose(fabric.fft.rfftfreq(n, d, dtype=fabric.float64).numpy(), np.fft.rfftfreq(n, d))
    assert fabric.fft.fftfreq(n, d).dtype is fabric.float32
    assert fabric.fft.fftfreq(0).shape == (0,) and fabric.fft.rfftfreq(0).shape == (1,)


def test_fftfreq_options_and_errors():
    f = fabric.fft.fftfreq(4, requires_grad=True, dtype=fabric.float64)
    assert f.requires_grad and f.dtype is fabric.float64
    out = fabric.empty(0)
    assert fabric.fft.rfftfreq(6, out=out) is out and out.shape == (4,)
    with pytest.raises(RuntimeError, match="^fftfreq requires a floating point or complex dtype$"):
        fabric.fft.fftfreq(5, dtype=fabric.int64)
    with pytest.raises(RuntimeError, match=r"^Trying to create tensor with negative dimension -1: \[-1\]$"):
        fabric.fft.rfftfreq(-1)


@pytest.mark.parametrize("shape,dim", [((5,), None), ((4, 5), None), ((4, 5), 1), ((4, 5), (0,)), ((3, 4, 5), (-1, 0)),
                                       ((0, 3), None)])
def test_shifts_match_numpy(shape, dim):
    a = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    x = fabric.tensor(a)
    np.testing.assert_array_equal(fabric.fft.fftshift(x, dim).numpy(), np.fft.fftshift(a, dim))
    np.testing.assert_array_equal(fabric.fft.ifftshift(x, dim).numpy(), np.fft.ifftshift(a, dim))
    np.testing.assert_array_equal(fabric.fft.ifftshift(fabric.fft.fftshift(x, dim), dim).numpy(), a)


def test_shift_gradient_and_errors():
    x = fabric.randn(4, 5, dtype=fabric.float64, requires_grad=True)
    assert fabric.autograd.gradcheck(lambda t: fabric.fft.fftshift(t, dim=1), (x,))
    assert fabric.autograd.gradgradcheck(lambda t: fabric.fft.ifftshift(t), (x,))
    with pytest.raises(IndexError, match=r"expected to be in range of \[-2, 1\], but got 3"):
        fabric.fft.fftshift(x, dim=3)
    with pytest.raises(RuntimeError, match="^`shifts` required$"):
        fabric.fft.fftshift(fabric.tensor(1.0))


@pytest.mark.torch
def test_freq_and_shift_match_torch():
    import torch

    for dtype in ("float16", "float32", "float64"):
        for n in (1, 6, 7):
            np.testing.assert_allclose(fabric.fft.fftfreq(n, 0.3, dtype=getattr(fabric, dtype)).numpy(),
                                       torch.fft.fftfreq(n, 0.3, dtype=getattr(torch, dtype)).numpy(), rtol=1e-6)
            np.testing.assert_allclose(fabric.fft.rfftfreq(n, 2, dtype=getattr(fabric, dtype)).numpy(),
                                       torch.fft.rfftfreq(n, 2, dtype=getattr(torch, dtype)).numpy(), rtol=1e-6)
    a = np.arange(24.0).reshape(2, 3, 4)
    for dim in (None, 0, (1, 2), -1):
        assert fabric.fft.fftshift(fabric.tensor(a), dim).tolist() == torch.fft.fftshift(torch.tensor(a), dim).tolist()
        assert fabric.fft.ifftshift(fabric.tensor(a), dim).tolist() == torch.fft.ifftshift(torch.tensor(a),
                                                                                            dim).tolist()


# --- fabric.signal.windows (torch.signal.windows) --------------------------------------------------------------

SIGNAL_WINDOWS = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine", "general_hamming",
                  "hamming", "hann", "kaiser", "nuttall"]


def _signal_kwargs(name):
    return {"a": [0.3, 0.5, 0.2]} if name == "general_cosine" else {}


@pytest.mark.parametrize("name", SIGNAL_WINDOWS)
def test_signal_windows_agree_with_the_classic_ones(name):
    W = fabric.signal.windows
    for M in (0, 1, 6, 9):
        for sym in (True, False):
            w = getattr(W, name)(M, sym=sym, dtype=fabric.float64, **_signal_kwargs(name))
            assert w.shape == (M,) and w.dtype is fabric.float64
            classic = {"hann": "hann_window", "hamming": "hamming_window", "blackman": "blackman_window",
                       "bartlett": "bartlett_window"}.get(name)
            if classic is not None:
                np.testing.assert_allclose(w.numpy(), getattr(fabric, classic)(M, not sym, dtype=fabric.float64).numpy(),
                                           atol=1e-12)
    np.testing.assert_allclose(W.kaiser(7, beta=5.0, dtype=fabric.float64).numpy(), np.kaiser(7, 5.0), rtol=1e-12)
    np.testing.assert_allclose(W.gaussian(5, std=2.0, dtype=fabric.float64).numpy(),
                               np.exp(-0.5 * ((np.arange(5) - 2) / 2.0) ** 2), rtol=1e-12)


def test_signal_window_errors():
    W = fabric.signal.windows
    with pytest.raises(ValueError, match="^general_cosine requires non-negative window length, got M=-1$"):  # as torch
        W.hann(-1)
    with pytest.raises(ValueError, match=r"^gaussian expects float32 or float64 dtypes, got: fabric\.float16$"):
        W.gaussian(3, dtype=fabric.float16)
    with pytest.raises(ValueError, match="^Center must be None for symmetric windows$"):
        W.exponential(3, center=1.0)
    with pytest.raises(ValueError, match="^Coefficients cannot be empty$"):
        W.general_cosine(3, a=[])


@pytest.mark.torch
@pytest.mark.parametrize("name", SIGNAL_WINDOWS)
def test_signal_windows_match_torch(name):
    import torch

    for M in (0, 1, 2, 5, 8):
        for sym in (True, False):
            for dtype, tol in (("float32", 1e-6), ("float64", 1e-13)):
                ours = getattr(fabric.signal.windows, name)(M, sym=sym, dtype=getattr(fabric, dtype),
                                                            **_signal_kwargs(name))
                theirs = getattr(torch.signal.windows, name)(M, sym=sym, dtype=getattr(torch, dtype),
                                                             **_signal_kwargs(name))
                np.testing.assert_allclose(ours.numpy(), theirs.numpy(), atol=tol, rtol=0)
