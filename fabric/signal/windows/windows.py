"""The windows of ``torch.signal.windows`` (SciPy's definitions and argument
names: ``M`` points, ``sym=False`` for the periodic form).  Each is evaluated
in float64 and rounded once to the requested float32 / float64 result.

Example::

    >>> import fabric
    >>> fabric.signal.windows.hann(4, sym=False)
    tensor([0.0000, 0.5000, 1.0000, 0.5000])
"""
from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from ... import _dtype as D
from ..._creation import _finish
from ..._layout import strided

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine", "general_hamming",
           "hamming", "hann", "kaiser", "nuttall"]


def _checked(name, M, dtype, layout):
    """PyTorch's ``_window_function_checks``; returns the result dtype."""
    dt = D.get_default_dtype() if dtype is None else D.to_dtype(dtype)
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dt is not D.float32 and dt is not D.float64:
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dt}")
    return dt


def _make(values, dt, device, requires_grad):
    return _finish(np.asarray(values, np.float64).astype(dt.to_numpy()), device, requires_grad)


def _span(M, sym):
    """The denominator of the window's phase: ``M - 1`` (symmetric) or ``M`` (periodic)."""
    return M - 1 if sym or M <= 1 else M


def _window(name, M, sym, dtype, layout, device, requires_grad, formula):
    dt = _checked(name, M, dtype, layout)
    if M <= 1:
        return _make(np.ones(M), dt, device, requires_grad)
    return _make(formula(np.arange(M, dtype=np.float64), _span(M, sym)), dt, device, requires_grad)


def exponential(M, *, center=None, tau=1.0, sym=True, dtype=None, layout=strided, device=None,
                requires_grad=False):
    """Exponential (Poisson) window ``exp(-|n - center| / tau)``.

    Example::

        >>> fabric.signal.windows.exponential(3)
        tensor([0.3679, 1.0000, 0.3679])
    """
    dt = _checked("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    return _make(np.exp(-np.abs(np.arange(M) - center) / tau), dt, device, requires_grad)


def cosine(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """Cosine (sine) window ``sin(pi (n + 0.5) / M)``.

    Example::

        >>> fabric.signal.windows.cosine(2)
        tensor([0.7071, 0.7071])
    """
    dt = _checked("cosine", M, dtype, layout)
    return _make(np.sin(math.pi * (np.arange(M) + 0.5) / (M + 1 if not sym and M > 1 else M)), dt, device,
                 requires_grad)


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """Gaussian window ``exp(-((n - c) / std)^2 / 2)``.

    Example::

        >>> fabric.signal.windows.gaussian(3)
        tensor([0.6065, 1.0000, 0.6065])
    """
    dt = _checked("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    return _make(np.exp(-(((np.arange(M) + start) / (std * math.sqrt(2))) ** 2)), dt, device, requires_grad)


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """Kaiser window ``I0(beta sqrt(1 - (2n / span - 1)^2)) / I0(beta)``.

    Example::

        >>> fabric.signal.windows.kaiser(3, beta=0.0)
        tensor([1., 1., 1.])
    """
    dt = _checked("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    if M <= 1:
        return _make(np.ones(M), dt, device, requires_grad)
    k = np.minimum(-beta + np.arange(M) * (2.0 * beta / _span(M, sym)), beta)
    return _make(np.i0(np.sqrt(np.maximum(beta * beta - k * k, 0.0))) / np.i0(beta), dt, device, requires_grad)


def general_cosine(M, *, a, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """Sum of cosines ``sum_i (-1)^i a_i cos(2 pi i n / span)``.

    Example::

        >>> fabric.signal.windows.general_cosine(3, a=[0.5, 0.5])
        tensor([0., 1., 0.])
    """
    dt = _checked("general_cosine", M, dtype, layout)
    if M <= 1:
        return _make(np.ones(M), dt, device, requires_grad)
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    coefficients = np.array([(-1) ** i * w for i, w in enumerate(a)], np.float64)
    phase = np.arange(M) * (2 * math.pi / _span(M, sym))
    return _make((coefficients[:, None] * np.cos(np.arange(len(coefficients))[:, None] * phase)).sum(0), dt, device,
                 requires_grad)


def general_hamming(M, *, alpha=0.54, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """Generalized Hamming window ``alpha - (1 - alpha) cos(2 pi n / span)``.

    Example::

        >>> fabric.signal.windows.general_hamming(3, alpha=0.5)
        tensor([0., 1., 0.])
    """
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def hamming(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """Hamming window (``general_hamming`` with ``alpha = 0.54``).

    Example::

        >>> fabric.signal.windows.hamming(3)
        tensor([0.0800, 1.0000, 0.0800])
    """
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device, requires_grad=requires_grad)


def hann(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """Hann window (``general_hamming`` with ``alpha = 0.5``).

    Example::

        >>> fabric.signal.windows.hann(3)
        tensor([0., 1., 0.])
    """
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """Blackman window (``general_cosine`` with ``a = [0.42, 0.5, 0.08]``).

    Example::

        >>> fabric.signal.windows.blackman(3, dtype=fabric.float64)
        tensor([-1.3878e-17,  1.0000e+00, -1.3878e-17], dtype=fabric.float64)
    """
    _checked("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def bartlett(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """Bartlett (triangular) window ``1 - |2n / span - 1|``.

    Example::

        >>> fabric.signal.windows.bartlett(3)
        tensor([0., 1., 0.])
    """
    return _window("bartlett", M, sym, dtype, layout, device, requires_grad,
                   lambda n, span: 1 - np.abs(-1 + n * (2 / span)))


def nuttall(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """Minimum 4-term Blackman-Harris window after Nuttall.

    Example::

        >>> fabric.signal.windows.nuttall(3)
        tensor([3.6280e-04, 1.0000e+00, 3.6280e-04])
    """
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)
