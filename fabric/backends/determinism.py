"""The ``use_deterministic_algorithms`` switch, where the kernels read it.

Its state lives with the other backend flags (``backends/_flags.py``);
``fabric.use_deterministic_algorithms(True)`` sets it, and the CUDA backend
then runs embedding and max-pool backward without atomics (docs/cuda.md).

Example::

    >>> from fabric.backends import determinism
    >>> determinism.enabled()
    False
"""
from __future__ import annotations

from . import _flags


def set_enabled(mode: bool, warn_only: bool = False) -> None:
    _flags.use_deterministic_algorithms(mode, warn_only=warn_only)


def enabled() -> bool:
    return _flags.are_deterministic_algorithms_enabled()
