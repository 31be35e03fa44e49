"""``fabric.cpu.amp``: PyTorch's deprecated CPU spellings of ``fabric.amp``.

Example::

    >>> import warnings, fabric
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     fabric.cpu.amp.GradScaler().get_scale()
    65536.0
"""
from __future__ import annotations

import warnings

from ... import _dtype as D
from ...amp import autocast_mode as _am
from ...amp.grad_scaler import GradScaler as _GradScaler

__all__ = ["GradScaler", "autocast"]


class autocast(_am.autocast):
    """``fabric.autocast("cpu", ...)`` (deprecated spelling; the default dtype is bfloat16 as in PyTorch, which
    fabric cannot run: pass ``dtype=fabric.float16``)."""

    def __init__(self, enabled: bool = True, dtype=D.bfloat16, cache_enabled: bool = True):
        warnings.warn("`torch.cpu.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cpu', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cpu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """``fabric.amp.GradScaler("cpu", ...)`` (deprecated spelling)."""

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        warnings.warn("`torch.cpu.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cpu', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cpu", init_scale=init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor,
                         growth_interval=growth_interval, enabled=enabled)
