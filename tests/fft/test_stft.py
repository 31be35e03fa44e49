"""fabric.stft / fabric.istft: NumPy reference, round trips, PyTorch's checks and texts, gradients, PyTorch parity."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import fabric
from fabric.autograd import gradcheck, gradgradcheck


def _np_stft(x, n_fft, hop, window, center=True, onesided=True):
    """Frames of the reflect-padded signal times the window, FFT per frame: (freq, frames)."""
    if center:
        x = np.pad(x, n_fft // 2, mode="reflect")
    count = 1 + (len(x) - n_fft) // hop
    frames = np.stack([x[i * hop:i * hop + n_fft] * window for i in range(count)])
    spectra = np.fft.rfft(frames, axis=-1) if onesided else np.fft.fft(frames, axis=-1)
    return spectra.T


def _numpy(t):
    return t.detach().resolve_conj().numpy()


@pytest.mark.parametrize("n_fft,hop,onesided", [(16, 4, True), (16, 5, False), (9, 3, True)])
def test_stft_matches_numpy(n_fft, hop, onesided):
    x = np.random.default_rng(0).standard_normal(70)
    w = np.hanning(n_fft + 1)[:-1]
    s = fabric.stft(fabric.tensor(x), n_fft, hop, window=fabric.tensor(w), onesided=onesided, return_complex=True)
    np.testing.assert_allclose(_numpy(s), _np_stft(x, n_fft, hop, w, onesided=onesided), atol=1e-10)


def test_stft_options():
    x = fabric.randn(2, 40, dtype=fabric.float64)
    s = fabric.stft(x, 8, return_complex=True)                                # batch, default hop n_fft // 4
    assert s.shape == (2, 5, 21) and s.dtype is fabric.complex128
    short = fabric.stft(x, 8, 2, win_length=4, window=fabric.ones(4, dtype=fabric.float64), center=False,
                        return_complex=True)
    padded = fabric.cat([fabric.zeros(2), fabric.ones(4), fabric.zeros(2)]).double()
    np.testing.assert_allclose(_numpy(short), _numpy(fabric.stft(x, 8, 2, window=padded, center=False,
                                                                 return_complex=True)))
    normalized = fabric.stft(x, 8, normalized=True, return_complex=True)
    np.testing.assert_allclose(_numpy(normalized), _numpy(s) / np.sqrt(8), atol=1e-12)
    c = fabric.stft(x.to(fabric.complex128), 8, return_complex=True)         # complex input: two-sided
    assert c.shape == (2, 8, 21)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        old = fabric.stft(x, 8, return_complex=False)
    assert old.shape == (2, 5, 21, 2)
    np.testing.assert_allclose(old[..., 1].numpy(), _numpy(s.imag))
    assert x[0].stft(8, return_complex=True).shape == (5, 21)                 # Tensor method


def test_stft_under_autocast_runs_in_float32():
    x = fabric.randn(64).half()
    with fabric.autocast("cpu", dtype=fabric.float16):
        s = fabric.stft(x, 16, window=fabric.hann_window(16, dtype=fabric.float16), return_complex=True)
    assert s.dtype is fabric.complex64
    with pytest.raises(RuntimeError, match="^Unsupported dtype Half$"):
        fabric.fft.rfft(x)


@pytest.mark.parametrize("n_fft,hop,win,center,length", [(16, 4, 16, True, None), (16, 4, 12, True, 50),
                                                           (8, 2, 8, False, None), (10, 5, 10, True, 64),
                                                           (8, 4, 8, True, 70)])
def test_istft_inverts_stft(n_fft, hop, win, center, length):
    x = fabric.randn(3, 60, dtype=fabric.float64)
    w = fabric.tensor(np.hanning(win + 2)[1:-1])                             # no zeros at the ends
    s = fabric.stft(x, n_fft, hop, win, w, center=center, return_complex=True)
    y = fabric.istft(s, n_fft, hop, win, w, center=center, length=length)
    n = min(y.shape[-1], 60)
    assert y.shape[-1] == (length if length is not None else hop * (s.shape[-1] - 1) + (0 if center else n_fft))
    np.testing.assert_allclose(y.numpy()[:, :n], x.numpy()[:, :n], atol=1e-10)
    assert s.istft(n_fft, hop, win, w, center=center, length=length).shape == y.shape
    if length == 70:                                                         # past the signal: zeros, as PyTorch
        assert not y[:, 64:].any()


def test_istft_two_sided_and_complex():
    x = fabric.randn(40, dtype=fabric.float64).to(fabric.complex128)
    w = fabric.hann_window(8, dtype=fabric.float64)
    s = fabric.stft(x, 8, 2, window=w, return_complex=True)
    y = fabric.istft(s, 8, 2, window=w, onesided=False, return_complex=True, length=40)
    np.testing.assert_allclose(_numpy(y), _numpy(x), atol=1e-10)


@pytest.mark.parametrize("call,message", [
    (lambda x: fabric.stft(x, 16), "stft requires the return_complex parameter be given for real inputs"),
    (lambda x: fabric.stft(x, 16, hop_length=0, return_complex=True),
     r"stft\(torch.FloatTensor\[80\], n_fft=16, hop_length=0, win_length=16, window=None, normalized=0, "
     r"onesided=None, return_complex=1, align_to_window=None\) : expected hop_length > 0, but got hop_length=0"),
    (lambda x: fabric.stft(x, 16, win_length=20, return_complex=True), "expected 0 < win_length <= n_fft"),
    (lambda x: fabric.stft(x, 100, center=False, return_complex=True), "expected 0 < n_fft < 64, but got n_fft=100"),
    (lambda x: fabric.stft(x, 16, window=fabric.ones(15), return_complex=True),
     r"expected a 1D window tensor of size equal to win_length=16, but got window with size \[15\]"),
    (lambda x: fabric.stft(x.reshape(2, 2, 16), 8, return_complex=True), "expected a 1D or 2D tensor"),
    (lambda x: fabric.stft(x.int(), 8, center=False, return_complex=True),
     "expected a tensor of floating point or complex values"),
    (lambda x: fabric.stft(x.to(fabric.complex64), 3, return_complex=True),
     r"^stft\(CPUComplexFloatType\[66\], n_fft=3, hop_length=0, win_length=3, window=None, "),
    (lambda x: fabric.stft(x.to(fabric.complex64), 16, onesided=True, return_complex=True),
     "Cannot have onesided output if window or input is complex"),
    (lambda x: fabric.stft(x, 16, align_to_window=True, return_complex=True),
     "stft align_to_window should only be set when center = false"),
    (lambda x: fabric.istft(x, 16), "istft requires a complex-valued input tensor"),
    (lambda x: fabric.istft(fabric.stft(x, 16, return_complex=True), 15, window=fabric.ones(15)),
     "expected the frequency dimension .3rd to the last. of the input tensor to match n_fft / 2 . 1 when "
     "onesided=True, but got 9"),
    (lambda x: fabric.istft(fabric.stft(x, 16, return_complex=True), 16, window=fabric.zeros(16)),
     "window overlap add min: 1"),
])
def test_errors(call, message):
    x = fabric.randn(64)
    with pytest.raises(RuntimeError, match=message):
        call(x)


def test_gradients():
    fabric.manual_seed(0)
    x = fabric.randn(30, dtype=fabric.float64, requires_grad=True)
    w = fabric.hann_window(8, dtype=fabric.float64, requires_grad=True)
    assert gradcheck(lambda t, v: fabric.stft(t, 8, 3, window=v, return_complex=True), (x, w))
    assert gradgradcheck(lambda t: fabric.stft(t, 8, 3, window=w.detach(), return_complex=True), (x,))
    s = fabric.stft(x.detach(), 8, 2, window=w.detach(), return_complex=True).contiguous().requires_grad_()
    assert gradcheck(lambda z: fabric.istft(z, 8, 2, window=w.detach(), length=30), (s,))


@pytest.mark.torch
@pytest.mark.parametrize("kwargs", [dict(n_fft=16), dict(n_fft=16, hop_length=3, win_length=10, normalized=True),
                                    dict(n_fft=12, center=False), dict(n_fft=16, pad_mode="constant"),
                                    dict(n_fft=8, win_length=4, center=False, align_to_window=True),
                                    dict(n_fft=10, onesided=False)])
def test_matches_torch(kwargs):
    import torch

    a = np.random.default_rng(4).standard_normal((2, 50))
    win = kwargs.get("win_length", kwargs["n_fft"])
    wa = np.hanning(win + 2)[1:-1]
    ours_x, theirs_x = fabric.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    ours = fabric.stft(ours_x, window=fabric.tensor(wa), return_complex=True, **kwargs)
    theirs = torch.stft(theirs_x, window=torch.tensor(wa), return_complex=True, **kwargs)
    np.testing.assert_allclose(_numpy(ours), _numpy(theirs), atol=1e-10)
    g = np.random.default_rng(5).standard_normal(tuple(theirs.shape) + (2,)).view(np.complex128)[..., 0]
    ours.backward(fabric.tensor(g))
    theirs.backward(torch.tensor(g))
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), atol=1e-10)

    ikw = {k: v for k, v in kwargs.items() if k not in ("pad_mode", "align_to_window")}
    spec = theirs.detach()
    try:
        theirs_y = torch.istft(spec, window=torch.tensor(wa), **ikw)
    except RuntimeError as e:  # the zero-padded window of win_length < n_fft, uncentred: both refuse
        with pytest.raises(RuntimeError, match=re.escape(str(e))):
            fabric.istft(fabric.tensor(spec.numpy()), window=fabric.tensor(wa), **ikw)
        return
    ours_y = fabric.istft(fabric.tensor(spec.numpy()), window=fabric.tensor(wa), **ikw)
    np.testing.assert_allclose(ours_y.numpy(), theirs_y.numpy(), atol=1e-10)


@pytest.mark.torch
def test_error_texts_match_torch():
    import torch

    a = np.random.default_rng(0).standard_normal(64).astype(np.float32)
    cases = [dict(n_fft=16, hop_length=0), dict(n_fft=16, win_length=20), dict(n_fft=100, center=False)]
    for kw in cases:
        with pytest.raises(RuntimeError) as theirs:
            torch.stft(torch.tensor(a), return_complex=True, **kw)
        with pytest.raises(RuntimeError) as ours:
            fabric.stft(fabric.tensor(a), return_complex=True, **kw)
        assert str(ours.value) == str(theirs.value)
    spec = torch.stft(torch.tensor(a), 16, return_complex=True)
    with pytest.raises(RuntimeError) as theirs:
        torch.istft(spec, 16, onesided=False)
    with pytest.raises(RuntimeError) as ours:
        fabric.istft(fabric.tensor(spec.numpy()), 16, onesided=False)
    assert str(ours.value) == str(theirs.value)


def test_vmap_runs_batched():
    from fabric.func import _batched, vmap

    x = fabric.randn(3, 40, dtype=fabric.float64)
    w = fabric.hann_window(8, dtype=fabric.float64)

    def round_trip(v):
        s = fabric.stft(v, 8, 2, window=w, return_complex=True)
        return s, fabric.istft(s, 8, 2, window=w, length=40)

    before = _batched.calls["per_example"]
    s, y = vmap(round_trip)(x)
    assert _batched.calls["per_example"] == before                          # the rules ran, not a per-example loop
    np.testing.assert_allclose(_numpy(s), _numpy(fabric.stft(x, 8, 2, window=w, return_complex=True)))
    np.testing.assert_allclose(y.numpy(), x.numpy(), atol=1e-10)
    two_d = vmap(lambda v: fabric.stft(v, 8, 2, window=w, return_complex=True))(x.reshape(3, 1, 40))
    assert two_d.shape == (3, 1, 5, 21)                                      # a 2-D example: per example
