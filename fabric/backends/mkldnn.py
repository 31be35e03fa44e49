"""``torch.backends.mkldnn``: fabric calls no oneDNN (``is_available()`` is
False); ``enabled``, ``deterministic`` and ``allow_tf32`` are recorded so
scripts that set them run unchanged.

Example::

    >>> import fabric
    >>> fabric.backends.mkldnn.is_available()
    False
    >>> with fabric.backends.mkldnn.flags(enabled=False):
    ...     fabric.backends.mkldnn.enabled
    False
"""
from __future__ import annotations

import sys

from ._flags import FlagModule, flag, make_flag_module, swap_flags

__all__ = ["is_available", "is_acl_available", "set_flags", "flags", "VERBOSE_OFF", "VERBOSE_ON",
           "VERBOSE_ON_CREATION", "verbose"]

VERBOSE_OFF = 0
VERBOSE_ON = 1
VERBOSE_ON_CREATION = 2


def is_available() -> bool:
    return False


def is_acl_available() -> bool:
    return False


class verbose:
    """``with verbose(level):`` oneDNN's verbose logging: nothing to log in fabric."""

    def __init__(self, level):
        self.level = level

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def set_flags(_enabled=None, _deterministic=None, _allow_tf32=None, _fp32_precision="none"):
    module = sys.modules[__name__]
    orig = (module.enabled, module.deterministic, module.allow_tf32, module.fp32_precision)
    for name, value in zip(("enabled", "deterministic", "allow_tf32", "fp32_precision"),
                           (_enabled, _deterministic, _allow_tf32, _fp32_precision)):
        if value is not None:
            setattr(module, name, value)
    return orig


def flags(enabled=False, deterministic=False, allow_tf32=True, fp32_precision="none"):
    return swap_flags(sys.modules[__name__], enabled=enabled, deterministic=deterministic, allow_tf32=allow_tf32,
                      fp32_precision=fp32_precision)


class MkldnnModule(FlagModule):
    enabled = flag("enabled", True)
    deterministic = flag("deterministic", False)
    allow_tf32 = flag("allow_tf32", True)
    fp32_precision = flag("fp32_precision", "none")


make_flag_module(__name__, MkldnnModule)
