"""OpInfo entries for fabric.fft (fabric/fft): the transforms with a real
result (the inverse real and the Hermitian ones) and the shifts, on real
(``dtypes``, promoted to complex as PyTorch does) and complex inputs
(``complex_dtypes``).

The transforms with a complex result (``fft``, ``rfft``, ``fftn`` ...) are not
entries yet: the generic forward-AD test (tests/autograd) compares float64
outputs only.  ``tests/fft/test_fft.py`` checks them against NumPy, by
gradcheck / gradgradcheck and against PyTorch's values and gradients, together
with empty batches (PyTorch's MKL backend raises on some) and the error texts.
"""
from __future__ import annotations

import numpy as np

from . import COMPLEX, FLOATS, OpInfo, SampleInput, make

_SWAP = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}


def _one_d_samples(dtype, rng):
    m = lambda *s, **kw: make(rng, s, dtype, **kw)
    return [
        SampleInput(m(3, 6), name="2d"),
        SampleInput(m(5), (), {"n": 7}, name="n_odd"),
        SampleInput(m(4, 3), (), {"n": 4, "dim": 0, "norm": "ortho"}, name="dim0_ortho"),
        SampleInput(m(2, 3, 4), (), {"dim": 1, "norm": "forward"}, name="3d_forward"),
        SampleInput(m(4, 5, noncontig=True), (), {"n": 6}, name="noncontig"),
    ]


def _n_d_samples(dtype, rng):
    m = lambda *s, **kw: make(rng, s, dtype, **kw)
    return [
        SampleInput(m(3, 4), name="2d"),
        SampleInput(m(2, 3, 4), (), {"s": (3, 5)}, name="s"),
        SampleInput(m(2, 3, 4), (), {"dim": (0, 2), "norm": "ortho"}, name="dims_ortho"),
        SampleInput(m(4, 3, noncontig=True), (), {"s": (4, -1), "dim": (1, 0)}, name="noncontig_keep"),
    ]


def _two_d_samples(dtype, rng):
    m = lambda *s, **kw: make(rng, s, dtype, **kw)
    return [
        SampleInput(m(2, 3, 4), name="3d"),
        SampleInput(m(3, 4), (), {"s": (2, 6), "norm": "forward"}, name="s_forward"),
    ]


def _shift_samples(dtype, rng):
    m = lambda *s, **kw: make(rng, s, dtype, **kw)
    return [
        SampleInput(m(5), name="1d"),
        SampleInput(m(4, 5), name="2d"),
        SampleInput(m(3, 4, 5), (), {"dim": (0, -1)}, name="dims"),
        SampleInput(m(4, 3, noncontig=True), (), {"dim": 1}, name="noncontig"),
        SampleInput(m(0, 3), name="empty"),
    ]


def _np_n_d_shape(a, s, dim, c2r):
    """NumPy's (s, axes) for PyTorch's (s, dim) of a complex-to-real transform (-1 keeps a size)."""
    if dim is None and s is None:
        dim = tuple(range(a.ndim))
    elif dim is None:
        dim = tuple(range(a.ndim - len(s), a.ndim))
    if s is None:
        return None, dim
    sizes = [a.shape[d] if n == -1 else n for d, n in zip(dim, s)]
    if c2r and s[-1] == -1:
        sizes[-1] = 2 * (a.shape[dim[-1]] - 1)
    return sizes, dim


def _np_irfftn(a, s=None, dim=None, norm=None):
    s, dim = _np_n_d_shape(a, s, dim, True)
    return np.fft.irfftn(a, s, dim, norm=norm)


def _np_hfftn(a, s=None, dim=None, norm=None):
    s, dim = _np_n_d_shape(a, s, dim, True)
    return np.fft.irfftn(np.conj(a), s, dim, norm=_SWAP[norm])


def _two_d(ref):
    return lambda a, s=None, dim=(-2, -1), norm=None: ref(a, s, dim, norm)


def _one_d(ref):
    return lambda a, n=None, dim=-1, norm=None: ref(a, n, dim, norm=norm)


_C = dict(dtypes=FLOATS, complex_dtypes=COMPLEX)       # real inputs are promoted to complex

OPS = [
    OpInfo("fft.irfft", _one_d(np.fft.irfft), _one_d_samples, **_C),
    OpInfo("fft.hfft", _one_d(np.fft.hfft), _one_d_samples, **_C),
    OpInfo("fft.irfftn", _np_irfftn, _n_d_samples, **_C),
    OpInfo("fft.hfftn", _np_hfftn, _n_d_samples, **_C),
    OpInfo("fft.irfft2", _two_d(_np_irfftn), _two_d_samples, **_C),
    OpInfo("fft.hfft2", _two_d(_np_hfftn), _two_d_samples, **_C),
    OpInfo("fft.fftshift", lambda a, dim=None: np.fft.fftshift(a, dim), _shift_samples, **_C),
    OpInfo("fft.ifftshift", lambda a, dim=None: np.fft.ifftshift(a, dim), _shift_samples, **_C),
]
