"""Sample frequencies (``fftfreq``, ``rfftfreq``) and the zero-frequency shifts
(``fftshift``, ``ifftshift``) of ``fabric.fft``."""
from __future__ import annotations

import math
import numbers

import numpy as np

from .. import _dtype as D
from .._creation import _finish
from ..ops.inplace import copy_into_out
from ..ops.shape import roll
from ._transforms import _int_list, _wrap

__all__ = ["fftfreq", "rfftfreq", "fftshift", "ifftshift"]


def _freqs(name, n, d, values, out, dtype, device, requires_grad):
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise TypeError(f"fft_{name}(): argument 'n' (position 1) must be int, not {type(n).__name__}")
    dt = D.get_default_dtype() if dtype is None else D.to_dtype(dtype)
    if not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError(f"{name} requires a floating point or complex dtype")
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    # as PyTorch: the integer sample indices times 1 / (n * d), both in the result dtype
    target = dt.to_numpy()
    product = n * d
    scale = 1.0 / product if product else math.copysign(math.inf, product)
    k = values(int(n)).astype(target)
    with np.errstate(invalid="ignore"):  # rfftfreq(0) is [nan], as PyTorch's 0 * inf
        result = _finish((k * np.asarray(scale).astype(target)).astype(target, copy=False), device, requires_grad)
    return result if out is None else copy_into_out(out, result)


def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The sample frequencies of :func:`fft` for a signal of ``n`` points spaced ``d`` apart:
    ``[0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1] / (d * n)``.

    Example::

        >>> fabric.fft.fftfreq(4)
        tensor([ 0.0000,  0.2500, -0.5000, -0.2500])
    """
    return _freqs("fftfreq", n, d, lambda m: np.concatenate([np.arange((m + 1) // 2), np.arange(-(m // 2), 0)]),
                  out, dtype, device, requires_grad)


def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The sample frequencies of :func:`rfft`: ``[0, 1, ..., n // 2] / (d * n)``.

    Example::

        >>> fabric.fft.rfftfreq(4)
        tensor([0.0000, 0.2500, 0.5000])
    """
    return _freqs("rfftfreq", n, d, lambda m: np.arange(m // 2 + 1), out, dtype, device, requires_grad)


def _shift(input, dim, inverse):
    dims = list(range(input.ndim)) if dim is None else [_wrap(d, input.ndim) for d in _int_list(dim, "dim")]
    shifts = [(input.shape[d] + 1) // 2 if inverse else input.shape[d] // 2 for d in dims]
    if not dims:  # PyTorch's roll with no shifts
        raise RuntimeError("`shifts` required")
    return roll(input, shifts, dims)


def fftshift(input, dim=None):
    """Move the zero frequency to the centre of ``dim`` (default: every dim), as ``roll`` by ``n // 2``.

    Example::

        >>> fabric.fft.fftshift(fabric.fft.fftfreq(4))
        tensor([-0.5000, -0.2500,  0.0000,  0.2500])
    """
    return _shift(input, dim, False)


def ifftshift(input, dim=None):
    """Inverse of :func:`fftshift` (roll by ``(n + 1) // 2``).

    Example::

        >>> fabric.fft.ifftshift(fabric.fft.fftshift(fabric.arange(5)))
        tensor([0, 1, 2, 3, 4])
    """
    return _shift(input, dim, True)
