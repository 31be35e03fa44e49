"""``fabric.compiler``: ``torch.compiler``'s controls of :func:`fabric.compile`.

``is_compiling()`` is True only while ``fabric.compile`` captures a call;
``disable`` keeps a function out of capture (a graph break when met inside a
compiled call; on a compiled function or module it makes it run eagerly);
``reset`` forgets every captured graph.  ``allow_in_graph`` /
``assume_constant_result`` / ``substitute_in_graph`` are identities: every
fabric op is recorded in the graph anyway.  ``fabric.compile`` (with
``fabric.fx``) is imported only when one of these needs it.

Example::

    >>> import fabric
    >>> fabric.compiler.is_compiling()
    False
    >>> @fabric.compiler.disable
    ... def f(x):
    ...     return x + 1
    >>> f(1)
    2
"""
from __future__ import annotations

import sys

__all__ = ["compile", "is_compiling", "is_dynamo_compiling", "is_exporting", "disable", "allow_in_graph",
           "assume_constant_result", "substitute_in_graph", "reset", "list_backends", "cudagraph_mark_step_begin"]


def compile(*args, **kwargs):
    """``fabric.compile`` (``torch.compiler.compile``)."""
    from .._dynamo import compile as impl
    return impl(*args, **kwargs)


def is_compiling() -> bool:
    """True while ``fabric.compile`` is capturing a call (False inside a ``disable``d function)."""
    mod = sys.modules.get("fabric._dynamo._capture")
    return bool(mod is not None and mod.is_compiling())


def is_dynamo_compiling() -> bool:
    """The same as :func:`is_compiling` (fabric's capture plays dynamo's part)."""
    return is_compiling()


def is_exporting() -> bool:
    """True only while a module is being exported (the flag ``fabric.jit._state.exporting``)."""
    try:
        from fabric.jit import _state
    except ImportError:  # pragma: no cover
        return False
    return _state.exporting


def disable(fn=None, recursive: bool = True, *, reason=None):
    """Run ``fn`` eagerly, never captured. Usable bare or with arguments."""
    from .._dynamo import disable as impl
    return impl(fn, recursive, reason=reason)


def allow_in_graph(fn):
    """Identity: every fabric op is already recorded in the graph."""
    return fn


def assume_constant_result(fn):
    """Identity: a Python value ``fn`` returns during capture is a constant of the graph anyway."""
    return fn


def substitute_in_graph(original_fn, *, can_constant_fold_through=False, skip_signature_check=False):
    """Identity decorator (capture records fabric ops, so no substitution is needed)."""
    return lambda fn: fn


def reset() -> None:
    """Forget every graph captured by ``fabric.compile``."""
    mod = sys.modules.get("fabric._dynamo")
    if mod is not None:
        mod.reset()


def list_backends(exclude_tags=("debug", "experimental")) -> list:
    """The ``backend=`` names of ``fabric.compile``."""
    from .._dynamo import list_backends as impl
    return impl(exclude_tags)


def cudagraph_mark_step_begin() -> None:
    """No CUDA graphs are recorded by fabric, so there is no step to mark."""
