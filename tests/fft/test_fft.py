"""fabric.fft transforms: values against NumPy (no torch needed) and PyTorch, dtypes, errors, out=,
gradients by gradcheck / gradgradcheck in float64 and against PyTorch's."""
from __future__ import annotations

import numpy as np
import pytest

import fabric
from fabric.autograd import gradcheck, gradgradcheck

FFT = fabric.fft
_SWAP = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}


def _np_hfftn(a, s=None, axes=None, norm=None):
    return np.fft.irfftn(np.conj(a), s, axes, norm=_SWAP[norm])


def _np_ihfftn(a, s=None, axes=None, norm=None):
    return np.conj(np.fft.rfftn(a, s, axes, norm=_SWAP[norm]))


# name, NumPy reference (n-dim signature for the 2/n forms), input is complex, default dims of the 2-D forms
ONE_D = [("fft", np.fft.fft, True), ("ifft", np.fft.ifft, True), ("rfft", np.fft.rfft, False),
         ("irfft", np.fft.irfft, True), ("hfft", np.fft.hfft, True), ("ihfft", np.fft.ihfft, False)]
N_D = [("fftn", np.fft.fftn, True), ("ifftn", np.fft.ifftn, True), ("rfftn", np.fft.rfftn, False),
       ("irfftn", np.fft.irfftn, True), ("hfftn", _np_hfftn, True), ("ihfftn", _np_ihfftn, False)]
NORMS = [None, "backward", "forward", "ortho"]


def _signal(shape, complex_, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape).astype(dtype)
    if complex_:
        a = a + 1j * rng.standard_normal(shape).astype(dtype)
    return a


def _numpy(t):
    """Values of a fabric or torch tensor (``ifft`` of a real input is a conjugate view, as PyTorch's)."""
    return t.detach().resolve_conj().numpy()


def _close(t, ref, rtol=1e-10, atol=1e-10):
    np.testing.assert_allclose(_numpy(t), ref, rtol=rtol, atol=atol)


@pytest.mark.parametrize("name,ref,cplx", ONE_D, ids=[c[0] for c in ONE_D])
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("n,dim", [(None, -1), (5, -1), (12, 0), (3, 1)])
def test_one_d_matches_numpy(name, ref, cplx, norm, n, dim):
    a = _signal((6, 8), cplx)
    _close(getattr(FFT, name)(fabric.tensor(a), n=n, dim=dim, norm=norm), ref(a, n=n, axis=dim, norm=norm))


@pytest.mark.parametrize("name,ref,cplx", N_D, ids=[c[0] for c in N_D])
@pytest.mark.parametrize("norm", [None, "forward", "ortho"])
@pytest.mark.parametrize("s,dim", [(None, None), ((4, 6), None), (None, (0, 2)), ((3, -1), (2, 1)), ((5,), None)])
def test_n_d_matches_numpy(name, ref, cplx, norm, s, dim):
    a = _signal((3, 4, 6), cplx)
    axes = dim
    if s is not None and -1 in s:  # NumPy has no -1 ("keep") in s
        s_np = [a.shape[d] for d in dim]
        s_np = [q if q != -1 else s_np[i] for i, q in enumerate(s)]
        if name in ("irfftn", "hfftn") and s[-1] == -1:
            s_np[-1] = 2 * (a.shape[dim[-1]] - 1)
    else:
        s_np = s
    if s_np is not None and axes is None:
        axes = tuple(range(a.ndim - len(s_np), a.ndim))
    _close(getattr(FFT, name)(fabric.tensor(a), s=s, dim=dim, norm=norm), ref(a, s_np, axes, norm=norm))


@pytest.mark.parametrize("name", ["fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2"])
def test_two_d_forms_are_n_d_over_the_last_two_dims(name):
    cplx = name not in ("rfft2", "ihfft2")
    x = fabric.tensor(_signal((2, 4, 6), cplx))
    nd = getattr(FFT, name[:-1] + "n")
    _close(getattr(FFT, name)(x), _numpy(nd(x, dim=(-2, -1))))
    _close(getattr(FFT, name)(x, s=(3, 4), dim=(0, 2), norm="ortho"),
           _numpy(nd(x, s=(3, 4), dim=(0, 2), norm="ortho")))


def test_dtypes():
    f32, f64 = fabric.randn(8), fabric.randn(8, dtype=fabric.float64)
    assert FFT.fft(f32).dtype is fabric.complex64 and FFT.rfft(f64).dtype is fabric.complex128
    assert FFT.irfft(FFT.rfft(f32)).dtype is fabric.float32 and FFT.hfft(FFT.rfft(f64)).dtype is fabric.float64
    assert FFT.fft(fabric.arange(4)).dtype is fabric.complex64
    assert FFT.rfftn(fabric.ones(2, 2, dtype=fabric.bool)).dtype is fabric.complex64
    assert FFT.irfft(fabric.arange(5)).dtype is fabric.float32                # real input promoted to complex
    with pytest.raises(RuntimeError, match="^Unsupported dtype Half$"):
        FFT.fft(fabric.ones(4, dtype=fabric.float16))
    _close(FFT.fft(fabric.arange(4)), np.fft.fft(np.arange(4.0)), rtol=1e-6)


def test_shapes_and_layouts():
    a = _signal((5, 6), True)
    t = fabric.tensor(a).t()                                                 # non-contiguous
    _close(FFT.fft(t), np.fft.fft(a.T))
    _close(FFT.fftn(fabric.tensor(a), dim=()), a)                            # no dims: a copy
    assert FFT.fft(fabric.zeros(0, 4)).shape == (0, 4)                       # empty batch
    assert FFT.rfft(fabric.zeros(3, 0, 4)).shape == (3, 0, 3)
    x = fabric.tensor(_signal((4,), False))
    y = FFT.fft(x)
    assert y.shape == (4,) and FFT.ifft(y).real.numpy() == pytest.approx(x.numpy())


@pytest.mark.parametrize("call,exc,message", [
    (lambda x: FFT.fft(x, norm="bad"), RuntimeError, 'Invalid normalization mode: "bad"'),
    (lambda x: FFT.fft(x, n=0), RuntimeError, r"Invalid number of data points \(0\) specified"),
    (lambda x: FFT.irfft(x[:, :1]), RuntimeError, r"Invalid number of data points \(0\) specified"),
    (lambda x: FFT.fft(x, dim=2), IndexError, r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"),
    (lambda x: FFT.fft(x[0, 0]), IndexError, "Dimension specified as -1 but tensor has no dimensions"),
    (lambda x: FFT.rfft(FFT.fft(x)), RuntimeError, "rfft expects a real input tensor, but got ComplexFloat"),
    (lambda x: FFT.ihfft(FFT.fft(x)), RuntimeError, "ihfft expects a real input tensor, but got ComplexFloat"),
    (lambda x: FFT.fftn(x, s=(2, 3, 4)), RuntimeError, "Got shape with 3 values but input tensor only has 2 dimensions."),
    (lambda x: FFT.fftn(x, s=(2, 3), dim=(0,)), RuntimeError, "When given, dim and shape arguments must have the same length"),
    (lambda x: FFT.fftn(x, dim=(0, -2)), RuntimeError, "FFT dims must be unique"),
    (lambda x: FFT.rfftn(x, dim=()), RuntimeError, "rfftn must transform at least one axis"),
    (lambda x: FFT.irfftn(x, dim=()), RuntimeError, "irfftn must transform at least one axis"),
    (lambda x: FFT.fft(x, out=fabric.empty(0)), RuntimeError, "fft expects a complex output tensor, but got Float"),
    (lambda x: FFT.irfft(x, out=FFT.fft(x)), RuntimeError,
     "irfft expects a floating point output tensor, but got ComplexFloat"),
    (lambda x: FFT.rfftn(x, out=fabric.empty(0)), RuntimeError, "rfftn expects a complex output tensor, but got Float"),
    (lambda x: FFT.hfft2(x, out=FFT.fft(x)), RuntimeError,
     "hfftn expects a floating point output tensor, but got ComplexFloat"),
    (lambda x: FFT.fft(x, n=3.0), TypeError, r"fft_fft\(\): argument 'n' must be int, not float"),
])
def test_errors(call, exc, message):
    with pytest.raises(exc, match=f"^{message}$"):
        call(fabric.randn(4, 5))


def test_out():
    x = fabric.randn(3, 8, dtype=fabric.float64)
    out = fabric.empty(0, dtype=fabric.complex128)
    assert FFT.rfft(x, out=out) is out
    _close(out, np.fft.rfft(x.numpy()))
    real_out = fabric.empty(3, 8, dtype=fabric.float64)
    assert FFT.irfftn(FFT.rfftn(x), s=(3, 8), out=real_out) is real_out
    _close(real_out, x.numpy())
    wide = fabric.empty(0, dtype=fabric.complex128)
    FFT.fft(x.float(), out=wide)                                             # a wider out dtype is accepted
    assert wide.dtype is fabric.complex128


def test_torch_alias_imports_fft(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "uses_torch_fft.py"
    script.write_text("import torch.fft\nfrom torch.fft import rfft\nfrom torch.signal.windows.windows import hann\n"
                      "import torch.signal.windows as W\n"
                      "print(torch.fft.rfft is rfft, torch.fft.__name__, W.hann is hann, torch.Tensor.stft is torch.stft)\n")
    out = subprocess.run([sys.executable, "-m", "fabric.run", str(script)], capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.split() == ["True", "fabric.fft", "True", "True"], out.stderr


# --- gradients -------------------------------------------------------------------------------------------------

GRAD_CASES = [
    ("fft", {}, True), ("fft", {"n": 5, "norm": "ortho"}, False), ("ifft", {"n": 8}, True),
    ("ifft", {"norm": "forward"}, False), ("rfft", {}, False), ("rfft", {"n": 5, "norm": "forward"}, False),
    ("irfft", {}, True), ("irfft", {"n": 7, "norm": "ortho"}, True), ("irfft", {"n": 4}, False),
    ("hfft", {}, True), ("hfft", {"n": 5, "norm": "forward"}, True), ("ihfft", {}, False),
    ("ihfft", {"n": 7, "norm": "ortho"}, False),
    ("fft2", {}, True), ("ifft2", {"s": (3, 5)}, False), ("rfft2", {"norm": "ortho"}, False),
    ("irfft2", {}, True), ("irfft2", {"s": (4, 5)}, True), ("hfft2", {"s": (3, 6)}, True),
    ("ihfft2", {"norm": "forward"}, False),
    ("fftn", {"dim": (0, 2)}, True), ("ifftn", {}, True), ("rfftn", {"s": (2, 3, 5)}, False),
    ("irfftn", {"dim": (0, 1)}, True), ("hfftn", {}, True), ("ihfftn", {"dim": (1, 2), "norm": "ortho"}, False),
]


def _grad_input(cplx, seed=1):
    return fabric.tensor(_signal((3, 4, 4), cplx, seed), requires_grad=True)


@pytest.mark.parametrize("name,kwargs,cplx", GRAD_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(GRAD_CASES)])
def test_gradcheck(name, kwargs, cplx):
    fn = getattr(FFT, name)
    x = _grad_input(cplx)
    assert gradcheck(lambda t: fn(t, **kwargs), (x,))
    assert gradgradcheck(lambda t: fn(t, **kwargs), (x,))


def test_shift_and_stack_of_transforms_gradcheck():
    x = _grad_input(False)
    assert gradcheck(lambda t: FFT.irfft(FFT.fftshift(FFT.rfft(t), dim=-1), n=4).sum(0), (x,))


# --- PyTorch parity --------------------------------------------------------------------------------------------

def _torch_of(a):
    import torch

    return torch.tensor(a)


@pytest.mark.torch
@pytest.mark.parametrize("name,kwargs,cplx", GRAD_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(GRAD_CASES)])
def test_values_and_gradients_match_torch(name, kwargs, cplx):
    import torch

    a = _signal((3, 4, 4), cplx, seed=2)
    ours_x = fabric.tensor(a, requires_grad=True)
    theirs_x = torch.tensor(a, requires_grad=True)
    ours = getattr(FFT, name)(ours_x, **kwargs)
    theirs = getattr(torch.fft, name)(theirs_x, **kwargs)
    assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
    np.testing.assert_allclose(_numpy(ours), _numpy(theirs), rtol=1e-10, atol=1e-10)
    g = _signal(tuple(theirs.shape), theirs.is_complex(), seed=3)
    ours.backward(fabric.tensor(g))
    theirs.backward(torch.tensor(g))
    np.testing.assert_allclose(_numpy(ours_x.grad), _numpy(theirs_x.grad), rtol=1e-10, atol=1e-10)


@pytest.mark.torch
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool", "complex64", "complex128"])
@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "rfftn", "irfftn",
                                  "hfftn", "ihfftn"])
def test_dtypes_match_torch(name, dtype):
    import torch

    a = (np.arange(12).reshape(3, 4) % 3).astype(dtype)
    ours, theirs = None, None
    try:
        theirs = getattr(torch.fft, name)(torch.tensor(a))
    except RuntimeError as e:
        with pytest.raises(RuntimeError, match=str(e).splitlines()[0]):
            getattr(FFT, name)(fabric.tensor(a))
        return
    ours = getattr(FFT, name)(fabric.tensor(a))
    assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
    tol = 1e-5 if dtype in ("float32", "complex64", "int64", "bool") else 1e-12
    np.testing.assert_allclose(_numpy(ours), _numpy(theirs), rtol=tol, atol=tol)


@pytest.mark.parametrize("name,kwargs,cplx", GRAD_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(GRAD_CASES)])
def test_forward_ad(name, kwargs, cplx):
    """Every transform is linear (over the reals): its forward-mode tangent is the transform of the tangent."""
    import fabric.autograd.forward_ad as fwAD

    fn = getattr(FFT, name)
    x, t = _grad_input(cplx, seed=4).detach(), _grad_input(cplx, seed=5).detach()
    with fwAD.dual_level():
        tangent = fwAD.unpack_dual(fn(fwAD.make_dual(x, t), **kwargs)).tangent
    np.testing.assert_allclose(_numpy(tangent), _numpy(fn(t, **kwargs)), rtol=1e-10, atol=1e-10)


# --- vmap ------------------------------------------------------------------------------------------------------

VMAP_CASES = GRAD_CASES + [("fftshift", {}, True), ("ifftshift", {"dim": 0}, False), ("fftn", {"s": (2, 3)}, True),
                           ("rfft2", {}, False)]


@pytest.mark.parametrize("name,kwargs,cplx", VMAP_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(VMAP_CASES)])
def test_vmap_runs_batched(name, kwargs, cplx):
    from fabric.func import _batched, vmap

    def f(x):
        return getattr(FFT, name)(x, **kwargs)   # looked up when called, as ``fabric.fft.fft(x)`` is

    xs = fabric.tensor(_signal((2, 3, 4, 4), cplx, seed=6))
    before = _batched.calls["per_example"]
    out = vmap(f)(xs)
    moved = vmap(f, in_dims=2)(xs.movedim(0, 2))
    nested = vmap(vmap(f))(xs.unsqueeze(0).expand(2, *xs.shape))
    assert _batched.calls["per_example"] == before                          # the rules ran, not a per-example loop
    expected = np.stack([_numpy(f(xs[i])) for i in range(2)])
    for got in (out, moved, nested[1]):
        np.testing.assert_allclose(_numpy(got), expected, rtol=1e-12, atol=1e-12)


def test_vmap_passes_errors_through():
    from fabric.func import vmap

    with pytest.raises(IndexError, match="Dimension out of range"):
        vmap(lambda x: FFT.fft(x, dim=2))(fabric.randn(3, 4, 5))
    with pytest.raises(RuntimeError, match="Invalid number of data points"):
        vmap(lambda x: FFT.fftn(x, s=(0,)))(fabric.randn(3, 4))
