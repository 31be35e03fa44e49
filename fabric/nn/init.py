"""``nn.init``: in-place parameter initialisers, as in ``torch.nn.init``.

Every initialiser runs under ``no_grad``, takes ``generator=`` and draws
from the random stream in the same order and with the same transformations
as PyTorch, so after ``manual_seed(s)`` the numbers equal PyTorch's on the
CPU (``trunc_normal_`` follows PyTorch 2.13's rejection sampler).

Example::

    >>> import fabric
    >>> from fabric import nn
    >>> w = fabric.empty(3, 5)
    >>> nn.init.xavier_uniform_(w).shape
    fabric.Size([3, 5])
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ..autograd.grad_mode import no_grad
from ..ops._util import xp_of

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_", "dirac_",
           "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_", "sparse_",
           "uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal", "kaiming_uniform",
           "kaiming_normal", "orthogonal", "sparse"]


def _no_grad_uniform_(tensor, a, b, generator=None):
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def _no_grad_normal_(tensor, mean, std, generator=None):
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def _no_grad_fill_(tensor, val):
    with no_grad():
        return tensor.fill_(val)


def _no_grad_zero_(tensor):
    with no_grad():
        return tensor.zero_()


def _store(tensor, arr):
    tensor._data[...] = arr
    tensor._bump_version()
    return tensor


def _no_grad_trunc_normal_(tensor, mean, std, a, b, generator=None):
    def norm_cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values may "
                      "be incorrect.", stacklevel=2)
    with no_grad():
        from .._creation import empty_like

        xp = xp_of(tensor._data)
        dt = tensor._data.dtype.type
        p = norm_cdf((b - mean) / std) - norm_cdf((a - mean) / std)
        if p > 0.3:
            # mostly inside [a, b]: redraw the outliers from full-size normal draws
            lo, hi = float(dt(a)), float(dt(b))
            result = tensor.normal_(mean, std, generator=generator)._data.copy()
            while True:
                mask = (result < lo) | (result > hi)
                if not bool(mask.any()):
                    break
                fresh = empty_like(tensor).normal_(mean, std, generator=generator)._data
                result = xp.where(mask, fresh, result)
            return _store(tensor, result)
        # a narrow or shifted window: uniform proposals accepted with the normal density
        mode = max(a, min(mean, b))
        log_peak = -0.5 * ((mode - mean) / std) ** 2
        accept_buf = empty_like(tensor)
        tensor.uniform_(a, b, generator=generator)

        def log_density(c):
            c = (c - dt(mean)) / dt(std)
            return (c * c) * dt(-0.5) - dt(log_peak)

        cand = log_density(tensor._data.copy())
        with np.errstate(divide="ignore"):
            pending = xp.log(accept_buf.uniform_(generator=generator)._data) > cand
        if not bool(pending.any()):
            return tensor
        result = tensor._data.copy()
        candidates = empty_like(tensor)
        while True:
            draw = candidates.uniform_(a, b, generator=generator)._data
            result = xp.where(pending, draw, result)
            cand = log_density(draw.copy())
            with np.errstate(divide="ignore"):
                accept = xp.log(accept_buf.uniform_(generator=generator)._data) > cand
            pending = xp.where(pending, accept, pending)
            if not bool(pending.any()):
                break
        return _store(tensor, result)


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity (``'relu'`` -> sqrt(2), ...).

    Example::

        >>> from fabric.nn import init
        >>> round(init.calculate_gain('leaky_relu', 0.2), 4)
        1.3868
    """
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, int) or isinstance(param, float):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def uniform_(tensor, a: float = 0.0, b: float = 1.0, generator=None):
    """Fill with samples from U(a, b)."""
    return _no_grad_uniform_(tensor, a, b, generator)


def normal_(tensor, mean: float = 0.0, std: float = 1.0, generator=None):
    """Fill with samples from N(mean, std**2)."""
    return _no_grad_normal_(tensor, mean, std, generator)


def trunc_normal_(tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0, generator=None):
    """Fill with samples from N(mean, std**2) truncated to [a, b].

    Example::

        >>> import fabric
        >>> w = fabric.nn.init.trunc_normal_(fabric.empty(100), std=1.0, a=-0.5, b=0.5)
        >>> bool((w.abs() <= 0.5).all())
        True
    """
    return _no_grad_trunc_normal_(tensor, mean, std, a, b, generator=generator)


def constant_(tensor, val: float):
    """Fill with ``val``."""
    return _no_grad_fill_(tensor, val)


def ones_(tensor):
    """Fill with ones."""
    return _no_grad_fill_(tensor, 1.0)


def zeros_(tensor):
    """Fill with zeros."""
    return _no_grad_zero_(tensor)


def eye_(tensor):
    """Fill a 2-D tensor with the identity matrix."""
    if tensor.ndimension() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with no_grad():
        x = tensor._data
        _store(tensor, xp_of(x).eye(x.shape[0], x.shape[1], dtype=x.dtype))
    return tensor


def dirac_(tensor, groups: int = 1):
    """Fill a 3/4/5-D conv weight with the Dirac delta (identity convolution)."""
    dimensions = tensor.ndimension()
    if dimensions not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.size()
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = sizes[0] // groups
    min_dim = min(out_per_group, sizes[1])
    with no_grad():
        x = tensor._data
        xp = xp_of(x)
        x[...] = 0
        d = np.arange(min_dim)
        outs = (np.arange(groups)[:, None] * out_per_group + d[None, :]).reshape(-1)
        ins = np.tile(d, groups)
        centre = tuple(s // 2 for s in sizes[2:])
        key = (outs, ins) + tuple(np.full(outs.shape, c) for c in centre)
        if xp is not np:
            key = tuple(xp.asarray(k) for k in key)
        x[key] = 1
        tensor._bump_version()
    return tensor


def _calculate_fan_in_and_fan_out(tensor):
    dimensions = tensor.dim()
    if dimensions < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    num_input_fmaps = tensor.size(1)
    num_output_fmaps = tensor.size(0)
    receptive_field_size = 1
    for s in tensor.shape[2:]:
        receptive_field_size *= s
    return num_input_fmaps * receptive_field_size, num_output_fmaps * receptive_field_size


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor, gain: float = 1.0, generator=None):
    """Glorot uniform: U(-a, a) with ``a = gain * sqrt(6 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return _no_grad_uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain: float = 1.0, generator=None):
    """Glorot normal: N(0, std**2) with ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return _no_grad_normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", generator=None):
    """He uniform: U(-bound, bound) with ``bound = gain * sqrt(3 / fan_mode)``.

    Example::

        >>> import fabric, math
        >>> w = fabric.nn.init.kaiming_uniform_(fabric.empty(4, 3), a=math.sqrt(5))
        >>> bool((w.abs() <= 1 / math.sqrt(3)).all())
        True
    """
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    bound = math.sqrt(3.0) * (gain / math.sqrt(fan))
    with no_grad():
        return tensor.uniform_(-bound, bound, generator=generator)


def kaiming_normal_(tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", generator=None):
    """He normal: N(0, std**2) with ``std = gain / sqrt(fan_mode)``."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    with no_grad():
        return tensor.normal_(0, std, generator=generator)


def orthogonal_(tensor, gain: float = 1, generator=None):
    """A (semi-)orthogonal matrix from the QR decomposition of a normal
    sample (trailing dims flattened), scaled by ``gain``."""
    if tensor.ndimension() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    from .._creation import empty

    rows = tensor.size(0)
    cols = tensor.numel() // rows
    with no_grad():
        flat = empty((rows, cols), dtype=tensor.dtype, device=tensor.device).normal_(0, 1, generator=generator)._data
        xp = xp_of(flat)
        if rows < cols:
            flat = flat.T
        q, r = xp.linalg.qr(flat)
        q = q * xp.sign(xp.diagonal(r))[None, :].astype(q.dtype)
        if rows < cols:
            q = q.T
        _store(tensor, (q * q.dtype.type(gain)).reshape(tensor._data.shape).astype(tensor._data.dtype))
    return tensor


def sparse_(tensor, sparsity: float, std: float = 0.01, generator=None):
    """Normal N(0, std**2) entries with a ``sparsity`` fraction of each column
    zeroed (rows chosen by ``randperm``, as PyTorch does)."""
    if tensor.ndimension() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    from .._random_ops import randperm

    rows, cols = tensor.shape
    num_zeros = math.ceil(sparsity * rows)
    with no_grad():
        tensor.normal_(0, std, generator=generator)
        x = tensor._data
        for col in range(cols):  # one randperm per column: PyTorch's draw order
            zero_rows = randperm(rows)._data[:num_zeros]
            if x.__class__ is not np.ndarray:
                zero_rows = xp_of(x).asarray(zero_rows)
            x[zero_rows, col] = 0
        tensor._bump_version()
    return tensor


def _make_deprecate(meth):
    new_name = meth.__name__
    old_name = new_name[:-1]

    def deprecated_init(*args, **kwargs):
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of `nn.init.{new_name}`.", FutureWarning,
                      stacklevel=2)
        return meth(*args, **kwargs)

    deprecated_init.__doc__ = f"Deprecated alias of :func:`{new_name}`."
    deprecated_init.__name__ = old_name
    return deprecated_init


uniform = _make_deprecate(uniform_)
normal = _make_deprecate(normal_)
constant = _make_deprecate(constant_)
eye = _make_deprecate(eye_)
dirac = _make_deprecate(dirac_)
xavier_uniform = _make_deprecate(xavier_uniform_)
xavier_normal = _make_deprecate(xavier_normal_)
kaiming_uniform = _make_deprecate(kaiming_uniform_)
kaiming_normal = _make_deprecate(kaiming_normal_)
orthogonal = _make_deprecate(orthogonal_)
sparse = _make_deprecate(sparse_)
