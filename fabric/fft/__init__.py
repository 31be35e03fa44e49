"""Discrete Fourier transforms: ``fabric.fft`` is ``torch.fft``.

One-dimensional ``fft``, ``ifft``, ``rfft``, ``irfft``, ``hfft``, ``ihfft``;
their two- and N-dimensional forms (``fft2`` ... ``ihfftn``); the sample
frequencies ``fftfreq`` / ``rfftfreq``; ``fftshift`` / ``ifftshift``.  Every
transform takes ``norm="backward" | "forward" | "ortho"`` and ``out=``, follows
PyTorch's dtype rules (float32 -> complex64, float64 -> complex128, integers
and bool promoted to the default dtype, float16 / bfloat16 rejected as on
PyTorch's CPU) and is differentiable with PyTorch's backward formulas (see
``_core``).  The transforms run ``xp.fft`` of the input's backend: NumPy's
pocketfft on CPU, cuFFT through CuPy on GPU.

Example::

    >>> import fabric
    >>> x = fabric.tensor([0.0, 1.0, 0.0, -1.0])
    >>> fabric.fft.rfft(x)
    tensor([0.+0.j, 0.-2.j, 0.+0.j])
    >>> fabric.fft.irfft(fabric.fft.rfft(x), n=4)
    tensor([ 0.,  1.,  0., -1.])
"""
from __future__ import annotations

from .._tensor import Tensor  # noqa: F401  (torch.fft's namespace has torch.Tensor too)
from . import _batching, _helpers, _transforms  # noqa: F401  (_batching registers the vmap rules)
from ._helpers import *  # noqa: F403
from ._transforms import *  # noqa: F403

__all__ = _transforms.__all__ + _helpers.__all__
