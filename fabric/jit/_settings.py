"""TorchScript's executor settings, kept for code that sets them.

fabric runs a graph as generated Python with no fuser and no profiling
executor, so these only record what was asked: ``set_fusion_strategy``
returns the previous strategy, ``enable_onednn_fusion`` /
``onednn_fusion_enabled`` keep a flag, ``fuser`` and ``optimized_execution``
are context managers that change nothing.

Example::

    >>> import fabric
    >>> previous = fabric.jit.set_fusion_strategy([("STATIC", 3)])
    >>> fabric.jit.set_fusion_strategy(previous)
    [('STATIC', 3)]
    >>> with fabric.jit.optimized_execution(False):
    ...     pass
"""
from __future__ import annotations

import contextlib

_fusion_strategy = [("STATIC", 2), ("DYNAMIC", 10)]
_onednn = False


def set_fusion_strategy(strategy: list) -> list:
    """Record the fusion strategy; returns the previous one (fabric has no fuser to apply it)."""
    global _fusion_strategy
    for kind, depth in strategy:
        if kind not in ("STATIC", "DYNAMIC") or not isinstance(depth, int):
            raise RuntimeError(f"Unrecognized fusion strategy: {kind!r}, {depth!r}")
    prev, _fusion_strategy = _fusion_strategy, list(strategy)
    return prev


def enable_onednn_fusion(enabled: bool) -> None:
    """Record the flag (fabric has no oneDNN fuser)."""
    global _onednn
    _onednn = bool(enabled)


def onednn_fusion_enabled() -> bool:
    return _onednn


@contextlib.contextmanager
def optimized_execution(should_optimize: bool):
    """A no-op context: fabric's graphs always run as generated Python."""
    yield


@contextlib.contextmanager
def fuser(name: str):
    """A no-op context for the fuser names PyTorch accepts (fabric does not fuse scripted graphs)."""
    if name not in ("fuser0", "fuser1", "fuser2", "fuser3", "none"):
        raise Exception(f"unrecognized fuser option (name: {name})")
    yield


def script_if_tracing(fn):
    """Eager calls run ``fn``; under ``fabric.jit.trace`` the concrete tracer records the path ``fn``
    takes (PyTorch scripts ``fn`` there, keeping its control flow; fabric warns through TracerWarning
    where the trace fixes a value read from a tensor)."""
    return fn


def interface(obj):
    """Returns ``obj`` unchanged (fabric's script compiler does not check interface types)."""
    return obj
