"""fabric.fft, stft/istft and the windows on the CUDA path: on a real GPU (marker ``cuda``) and on
``tests/cuda/fake_cupy`` (NumPy arrays posing as CuPy device arrays, so ``xp`` is ``cupy`` and every
array operation goes through CuPy's API), compared with the CPU results, gradients included."""
from __future__ import annotations

import importlib
import os
import sys

import numpy as np
import pytest

import fabric

_CUDA_TESTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "cuda")


@pytest.fixture(params=[pytest.param("cuda", marks=pytest.mark.cuda), "fake-cuda"])
def device(request):
    if request.param == "cuda":
        yield "cuda"
        return
    if _CUDA_TESTS not in sys.path:
        sys.path.insert(0, _CUDA_TESTS)
    fake_cupy = importlib.import_module("fake_cupy")  # tests/cuda, put on sys.path above

    with fake_cupy.installed():
        yield "cuda"


def _both(fn, *arrays):
    """``fn`` on CPU and on the device with the same inputs: (cpu outputs, device outputs, cpu grads, device grads)."""
    results = []
    for dev in ("cpu", "cuda"):
        leaves = [fabric.from_numpy(a.copy()).to(dev).requires_grad_(True) for a in arrays]
        y = fn(*leaves)
        assert y.device.type == dev
        g = np.random.default_rng(7).standard_normal(tuple(y.shape) + (2,)).view(np.complex128)[..., 0]
        g = fabric.from_numpy(g if y.is_complex() else g.real.copy()).to(dev)
        y.backward(g)
        results.append((y.detach().cpu().numpy(), [t.grad.cpu().numpy() for t in leaves]))
    return results


CASES = [
    ("fft", lambda x: fabric.fft.fft(x, n=6, norm="ortho"), False),
    ("ifft", lambda x: fabric.fft.ifft(x), True),
    ("rfft", lambda x: fabric.fft.rfft(x, dim=0), False),
    ("irfft", lambda x: fabric.fft.irfft(x, n=7), True),
    ("hfft", lambda x: fabric.fft.hfft(x), True),
    ("ihfft", lambda x: fabric.fft.ihfft(x), False),
    ("fft2", lambda x: fabric.fft.fft2(x, s=(3, 4)), True),
    ("rfftn", lambda x: fabric.fft.rfftn(x, norm="forward"), False),
    ("irfftn", lambda x: fabric.fft.irfftn(x), True),
    ("hfftn", lambda x: fabric.fft.hfftn(x), True),
    ("shift", lambda x: fabric.fft.fftshift(fabric.fft.fft(x)), True),
]


@pytest.mark.parametrize("name,fn,cplx", CASES, ids=[c[0] for c in CASES])
def test_transforms_agree_with_cpu(device, name, fn, cplx):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 5))
    if cplx:
        a = a + 1j * rng.standard_normal((4, 5))
    (y_cpu, g_cpu), (y_dev, g_dev) = _both(fn, a)
    np.testing.assert_allclose(y_dev, y_cpu, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(g_dev[0], g_cpu[0], rtol=1e-10, atol=1e-12)


def test_stft_istft_and_windows_agree_with_cpu(device):
    a = np.random.default_rng(2).standard_normal((2, 40))
    w = np.hanning(10)[1:-1]

    def round_trip(x, window):
        s = fabric.stft(x, 8, 2, window=window, return_complex=True)
        return fabric.istft(s * 2, 8, 2, window=window, length=40)

    (y_cpu, g_cpu), (y_dev, g_dev) = _both(round_trip, a, w)
    np.testing.assert_allclose(y_dev, y_cpu, rtol=1e-10, atol=1e-12)
    for gd, gc in zip(g_dev, g_cpu):
        np.testing.assert_allclose(gd, gc, rtol=1e-10, atol=1e-10)
    for name in ("hann_window", "kaiser_window"):
        on_device = getattr(fabric, name)(6, device=device)
        assert on_device.device.type == "cuda"
        np.testing.assert_array_equal(on_device.cpu().numpy(), getattr(fabric, name)(6).numpy())
    freq = fabric.fft.rfftfreq(6, device=device)
    assert freq.device.type == "cuda" and freq.cpu().tolist() == fabric.fft.rfftfreq(6).tolist()
