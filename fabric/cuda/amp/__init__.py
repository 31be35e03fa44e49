"""``fabric.cuda.amp``: PyTorch's deprecated CUDA spellings of ``fabric.amp``.

Each emits a FutureWarning naming the ``fabric.amp`` form, as PyTorch does.

Example::

    >>> import warnings, fabric
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     fabric.cuda.amp.GradScaler(enabled=False).is_enabled()
    False
"""
from __future__ import annotations

import functools
import warnings

from ... import _dtype as D
from ...amp import autocast_mode as _am
from ...amp.grad_scaler import GradScaler as _GradScaler

__all__ = ["GradScaler", "amp_definitely_not_available", "autocast", "custom_bwd", "custom_fwd"]


def amp_definitely_not_available() -> bool:
    from ... import cuda

    return not cuda.is_available()


class autocast(_am.autocast):
    """``fabric.autocast("cuda", ...)`` (deprecated spelling)."""

    def __init__(self, enabled: bool = True, dtype=D.float16, cache_enabled: bool = True):
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """``fabric.amp.custom_fwd(device_type="cuda")`` (deprecated spelling)."""
    warnings.warn("`torch.cuda.amp.custom_fwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_fwd(args..., device_type='cuda')` instead.", FutureWarning, stacklevel=2)
    return functools.partial(_am.custom_fwd, device_type="cuda")(fwd=fwd, cast_inputs=cast_inputs)


def custom_bwd(bwd):
    """``fabric.amp.custom_bwd(device_type="cuda")`` (deprecated spelling)."""
    warnings.warn("`torch.cuda.amp.custom_bwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_bwd(args..., device_type='cuda')` instead.", FutureWarning, stacklevel=2)
    return functools.partial(_am.custom_bwd, device_type="cuda")(bwd)


class GradScaler(_GradScaler):
    """``fabric.amp.GradScaler("cuda", ...)`` (deprecated spelling)."""

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor,
                         growth_interval=growth_interval, enabled=enabled)
