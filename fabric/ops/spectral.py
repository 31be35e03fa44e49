"""Window functions: ``hann_window``, ``hamming_window``, ``blackman_window``,
``bartlett_window`` and ``kaiser_window`` (the tapers ``stft`` multiplies its
frames by).

Each is computed in the requested dtype with the same sequence of operations
PyTorch uses (``arange`` scaled, then ``cos``), each step rounded to that
dtype, so float16 and bfloat16 windows round as PyTorch's do.
``periodic=True`` (the default) gives the first ``N`` points of an
``N + 1``-point symmetric window, the form spectral analysis wants.

Example::

    >>> import fabric
    >>> fabric.hann_window(4)
    tensor([0.0000, 0.5000, 1.0000, 0.5000])
    >>> fabric.hann_window(5, periodic=False, dtype=fabric.float64)
    tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000], dtype=fabric.float64)
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from .. import _dtype as D
from .._creation import _finish

__all__ = ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]

# C++ spellings of the dtypes in PyTorch's "expects floating point dtypes" message
_CPP_NAMES = {"int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
              "uint8": "unsigned char", "bool": "bool", "complex64": "c10::complex<float>",
              "complex128": "c10::complex<double>"}


def _checked(name, window_length, dtype, device, requires_grad):
    """PyTorch's argument checks of every window function; returns the result's fabric dtype."""
    if isinstance(window_length, bool) or not isinstance(window_length, numbers.Integral):
        raise TypeError(f"{name}(): argument 'window_length' (position 1) must be int, not "
                        f"{type(window_length).__name__}")
    dt = D.get_default_dtype() if dtype is None else D.to_dtype(dtype)
    if not dt.is_floating_point:
        dev = "cpu" if device is None else str(device)
        raise RuntimeError(
            f"{name} expects floating point dtypes, got: TensorOptions(dtype={_CPP_NAMES.get(dt.name, dt.name)}, "
            f"device={dev}, layout=Strided (default), requires_grad={'true' if requires_grad else 'false (default)'}"
            f", pinned_memory=false, memory_format=(nullopt))")
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={window_length}")
    return dt


def _same(a):
    return a


def _window(name, window_length, periodic, formula, dtype, device, requires_grad):
    """Evaluate ``formula(k, m, r)`` for an ``m``-point symmetric window (``m = window_length + 1`` when
    ``periodic``) and keep the first ``window_length`` points.  ``k = arange(m)`` is in the compute dtype and
    ``r`` rounds an intermediate to the result dtype (bfloat16, which NumPy cannot compute in, is computed in
    float32 and rounded after each step; the other dtypes round by themselves)."""
    dt = _checked(name, window_length, dtype, device, requires_grad)
    target = dt.to_numpy()
    if window_length <= 1:
        arr = np.ones(window_length, target)
    else:
        m = int(window_length) + 1 if periodic else int(window_length)
        if dt is D.bfloat16:
            def r(a):  # PyTorch rounds scalar operands to bfloat16 too
                return np.asarray(a).astype(target).astype(np.float32)
            k = np.arange(m, dtype=np.float32)
        else:
            r, k = _same, np.arange(m, dtype=target)
        arr = formula(k, m, r)[:window_length].astype(target, copy=False)
    return _finish(arr, device, requires_grad)


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   requires_grad=False):
    """Hamming window ``alpha - beta * cos(2 pi k / (M - 1))``.

    Example::

        >>> fabric.hamming_window(4)
        tensor([0.0800, 0.5400, 1.0000, 0.5400])
    """
    def formula(k, m, r):
        return r(r(r(np.cos(r(k * r(math.pi * 2.0 / (m - 1))))) * r(-beta)) + r(alpha))

    return _window("hamming_window", window_length, periodic, formula, dtype, device, requires_grad)


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """Hann window ``0.5 - 0.5 cos(2 pi k / (M - 1))`` (``hamming_window`` with ``alpha = beta = 0.5``).

    Example::

        >>> fabric.hann_window(4)
        tensor([0.0000, 0.5000, 1.0000, 0.5000])
    """
    _checked("hann_window", window_length, dtype, device, requires_grad)
    return hamming_window(window_length, periodic, 0.5, 0.5, dtype=dtype, device=device, requires_grad=requires_grad)


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """Blackman window ``0.42 - 0.5 cos(2 pi k / (M - 1)) + 0.08 cos(4 pi k / (M - 1))``.

    Example::

        >>> fabric.blackman_window(3, periodic=False, dtype=fabric.float64)
        tensor([0., 1., 0.], dtype=fabric.float64)
    """
    def formula(k, m, r):
        w = r(k * r(math.pi / (m - 1)))
        return r(r(r(r(np.cos(r(w * 4))) * r(0.08)) - r(r(np.cos(r(w * 2))) * r(0.5))) + r(0.42))

    return _window("blackman_window", window_length, periodic, formula, dtype, device, requires_grad)


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """Bartlett (triangular) window ``1 - |2k / (M - 1) - 1|``.

    Example::

        >>> fabric.bartlett_window(4)
        tensor([0.0000, 0.5000, 1.0000, 0.5000])
    """
    def formula(k, m, r):
        w = r(k * r(2.0 / (m - 1)))
        first_half = (m - 1) // 2 + 1
        w[first_half:] = r(w[first_half:] * -1 + 2)
        return w

    return _window("bartlett_window", window_length, periodic, formula, dtype, device, requires_grad)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  requires_grad=False):
    """Kaiser window ``I0(beta sqrt(1 - ((k - a) / a)^2)) / I0(beta)`` with ``a = (M - 1) / 2``.

    Example::

        >>> fabric.kaiser_window(3, periodic=False, beta=0.0)
        tensor([1., 1., 1.])
    """
    def formula(k, m, r):
        opmath = np.float64 if k.dtype == np.float64 else np.float32  # float16 is evaluated in float32, as PyTorch
        a = opmath((m - 1) / 2.0)
        b = opmath(beta)
        x = k.astype(opmath)
        return (np.i0(b * np.sqrt(np.abs(1 - ((x - a) / a) ** 2))) / np.i0(b)).astype(k.dtype)

    return _window("kaiser_window", window_length, periodic, formula, dtype, device, requires_grad)
