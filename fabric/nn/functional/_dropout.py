"""Dropout family: ``dropout``, ``dropout1d/2d/3d``, ``alpha_dropout``,
``feature_alpha_dropout``.

On the CPU the mask comes from fabric's default generator exactly as in
PyTorch (``noise = empty_like(x).bernoulli_(1 - p); noise /= 1 - p;
x * noise``), so under the same ``manual_seed`` the mask equals PyTorch's.
On CUDA the mask comes from the backend's Philox kernel
(``backend.dropout(x, p, seed, offset)``).

Example::

    >>> import fabric
    >>> import fabric.nn.functional as F
    >>> _ = fabric.manual_seed(0)
    >>> y = F.dropout(fabric.ones(8), 0.5)
    >>> sorted(set(y.tolist())) in ([0.0, 2.0], [0.0], [2.0])
    True
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ..._tensor import Tensor
from ...autograd.function import Function, _apply
from ...ops._util import xp_of
from ...random import generator_for

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"]

_SELU_ALPHA = 1.7580993408473766  # -SELU's negative saturation value: scale * alpha


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _bernoulli(x, shape, keep):
    """``empty(shape, dtype=x.dtype).bernoulli_(keep)`` from the default generator of ``x``'s device
    (on CUDA, without a CUDA generator, drawn by the CPU generator and copied over)."""
    if x.__class__ is np.ndarray:
        return generator_for(None, None).bernoulli(float(keep), shape, x.dtype)
    try:
        return generator_for(None, _device_of(x)).bernoulli(float(keep), shape, x.dtype)
    except (AttributeError, NotImplementedError):
        from ...backends import backend_of

        host = generator_for(None, None).bernoulli(float(keep), shape, x.dtype)
        return backend_of(x).from_numpy(host, x.device.id)


def _memory_order(x):
    """The axis order in which PyTorch fills ``empty_like(x).bernoulli_(p)``,
    or None for C order.

    ``empty_like`` keeps the strides of a dense non-overlapping input (the
    transposed output of a ``batch_first`` MultiheadAttention, say) and the
    CPU kernel draws in memory order, so the mask of such an input is drawn
    in the permuted shape and transposed back."""
    if x.flags.c_contiguous or x.ndim < 2:
        return None
    strides = x.strides
    if min(strides) <= 0:
        return None
    perm = sorted(range(x.ndim), key=lambda d: -strides[d])
    expected = x.itemsize
    for d in reversed(perm):
        if x.shape[d] != 1 and strides[d] != expected:
            return None
        expected *= x.shape[d]
    return tuple(perm)


def _device_of(arr):
    from ..._device import device

    return device("cuda", arr.device.id)


class _FusedDropout(Function):
    """CUDA dropout with the backend's Philox kernel: ``y = x * mask / (1-p)``."""

    _array_forward = True
    _node_name = "NativeDropoutBackward0"

    @staticmethod
    def forward(ctx, x, p, seed, offset):
        from ...backends import backend_of

        y, mask = backend_of(x).dropout(x, p, seed, offset)
        ctx.scale = 1.0 / (1.0 - p)
        ctx.save_for_backward(mask)
        return y

    @staticmethod
    def backward(ctx, gy):
        mask, = ctx.saved_tensors
        return gy * (mask.to(gy.dtype) * ctx.scale), None, None, None


def _philox_seed_offset(x):
    """Seed and offset for the CUDA kernel: from the CUDA generator when it
    provides ``philox_seed_offset``, else a seed drawn from the CPU generator
    (deterministic under ``fabric.manual_seed``)."""
    try:
        impl = generator_for(None, _device_of(x))
    except (AttributeError, RuntimeError, NotImplementedError):
        impl = None
    if impl is not None and hasattr(impl, "philox_seed_offset"):
        return impl.philox_seed_offset(4)
    seed = int(generator_for(None, None).random_u64(1)[0])
    return seed, 0


def _dropout_impl(input, p, training, inplace, feature, alpha):
    _check_p(p)
    x = input._data
    if p == 0 or not training or x.size == 0:
        return input
    if x.dtype.kind != "f":
        raise RuntimeError(f'"bernoulli_scalar_cpu_" not implemented for \'{input.dtype}\'')
    if p == 1:
        zero = Tensor._make(xp_of(x).zeros((), x.dtype), False)
        return input.mul_(zero) if inplace else input * zero
    if feature:
        if x.ndim < 2:
            raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
        shape = x.shape[:2] + (1,) * (x.ndim - 2)
    else:
        shape = x.shape
    if x.__class__ is not np.ndarray and not feature and not alpha and not inplace:
        seed, offset = _philox_seed_offset(x)
        return _apply(_FusedDropout, (input, p, seed, offset), (x, p, seed, offset))
    perm = None if feature or x.__class__ is not np.ndarray else _memory_order(x)
    if perm is None:
        noise = _bernoulli(x, shape, 1.0 - p)
    else:
        noise = _bernoulli(x, tuple(shape[d] for d in perm), 1.0 - p).transpose(np.argsort(perm))
    dt = noise.dtype.type
    if alpha:
        a = 1.0 / math.sqrt((_SELU_ALPHA * _SELU_ALPHA * p + 1) * (1 - p))
        b = (noise - dt(1)) * dt(_SELU_ALPHA * a) + dt(_SELU_ALPHA * a * p)
        noise *= dt(a)
        noise_t, b_t = Tensor._make(noise, False), Tensor._make(b, False)
        return input.mul_(noise_t).add_(b_t) if inplace else input * noise_t + b_t
    noise /= dt(1.0 - p)
    noise_t = Tensor._make(noise, False)
    return input.mul_(noise_t) if inplace else input * noise_t


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by
    ``1/(1-p)``; the identity when ``training`` is False."""
    return _dropout_impl(input, p, training, inplace, feature=False, alpha=False)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Dropout for SELU networks: dropped elements are set to SELU's negative
    saturation and the result is rescaled to keep mean and variance."""
    return _dropout_impl(input, p, training, inplace, feature=False, alpha=True)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Alpha dropout of whole channels (dim 1)."""
    return _dropout_impl(input, p, training, inplace, feature=True, alpha=True)


def _channel_dropout(input, p, training, inplace, batched):
    if batched:
        return _dropout_impl(input, p, training, inplace, feature=True, alpha=False)
    out = _dropout_impl(input.unsqueeze(0), p, training, inplace, feature=True, alpha=False)
    return input if inplace else out.squeeze(0)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of ``(N, C, L)`` or ``(C, L)`` inputs."""
    _check_p(p)
    nd = input.dim()
    if nd not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {nd}D input. Note that dropout1d "
                           "exists to provide channel-wise dropout on inputs with 1 spatial dimension, a channel "
                           "dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    return _channel_dropout(input, p, training, inplace, nd == 3)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of ``(N, C, H, W)`` inputs (a 3-D input is taken
    as ``(N, C, L)``, with PyTorch's warning)."""
    _check_p(p)
    nd = input.dim()
    if nd not in (3, 4):
        warnings.warn(f"dropout2d: Received a {nd}-D input to dropout2d, which is deprecated and will result in an "
                      "error in a future release. To retain the behavior and silence this warning, please use "
                      "dropout instead. Note that dropout2d exists to provide channel-wise dropout on inputs with 2 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 3D or 4D "
                      "inputs).", stacklevel=2)
    if nd == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
                      "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel dim. "
                      "This behavior will change in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please "
                      "switch to using dropout1d instead.", stacklevel=2)
    return _dropout_impl(input, p, training, inplace, feature=True, alpha=False)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` inputs."""
    _check_p(p)
    nd = input.dim()
    if nd not in (4, 5):
        warnings.warn(f"dropout3d: Received a {nd}-D input to dropout3d, which is deprecated and will result in an "
                      "error in a future release. To retain the behavior and silence this warning, please use "
                      "dropout instead. Note that dropout3d exists to provide channel-wise dropout on inputs with 3 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 4D or 5D "
                      "inputs).", stacklevel=2)
    return _channel_dropout(input, p, training, inplace, nd == 5)
