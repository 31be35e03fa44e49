"""The ``use_deterministic_algorithms`` switch, where the backends read it.

``fabric.use_deterministic_algorithms(True)`` sets it; the CUDA backend then
runs embedding and max-pool backward without atomics (docs/cuda.md).

Example::

    >>> from fabric.backends import determinism
    >>> determinism.enabled()
    False
"""
from __future__ import annotations

_state = {"on": False, "warn_only": False}


def set_enabled(mode: bool, warn_only: bool = False) -> None:
    _state["on"], _state["warn_only"] = bool(mode), bool(warn_only)


def enabled() -> bool:
    return _state["on"]
