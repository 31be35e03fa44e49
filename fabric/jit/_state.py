"""Whether a trace (or an export) is being recorded right now.

The flags live in this tiny module so that ``fabric.compiler`` and
``fabric.export`` can read or set them without importing the tracer.
"""
from __future__ import annotations

import contextlib

tracing = False
exporting = False


def is_tracing() -> bool:
    """True while :func:`fabric.jit.trace` runs the traced function.

    Example::

        >>> import fabric
        >>> fabric.jit.is_tracing()
        False
    """
    return tracing


@contextlib.contextmanager
def set_flag(name: str, value: bool = True):
    """Set ``tracing`` or ``exporting`` for the duration of a block (restored on exit)."""
    g = globals()
    prev = g[name]
    g[name] = value
    try:
        yield
    finally:
        g[name] = prev
