"""``torch.compiler``: controls of :func:`fabric.compile` (imported with it on first use).

Example::

    >>> import fabric
    >>> fabric.compiler.is_compiling()
    False
"""
from __future__ import annotations

__all__ = ["compile", "reset", "disable", "is_compiling", "is_dynamo_compiling", "list_backends",
           "allow_in_graph", "assume_constant_result"]


def compile(*args, **kwargs):
    from .compile import compile as impl
    return impl(*args, **kwargs)


def reset() -> None:
    """Forget every graph captured by ``fabric.compile``."""
    import sys
    if "fabric.compile" in sys.modules:
        sys.modules["fabric.compile"].reset()


def disable(fn=None, recursive: bool = True, *, reason: str | None = None):
    """Run ``fn`` eagerly, never captured (a graph break when met inside a compiled call)."""
    from .compile import disable as impl
    return impl(fn, recursive, reason=reason)


def is_compiling() -> bool:
    """True while ``fabric.compile`` is capturing a call."""
    import sys
    mod = sys.modules.get("fabric.compile._capture")
    return bool(mod is not None and mod.is_compiling())


is_dynamo_compiling = is_compiling


def list_backends(exclude_tags=("debug", "experimental")) -> list[str]:
    from .compile import list_backends as impl
    return impl(exclude_tags)


def allow_in_graph(fn):
    """Accepted for compatibility: every fabric op is already recorded in the graph."""
    return fn


def assume_constant_result(fn):
    """Accepted for compatibility: ``fn``'s Python result is a constant of the captured graph."""
    return fn
