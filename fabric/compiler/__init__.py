"""``fabric.compiler``: the ``torch.compiler`` names that code checks or decorates with.

fabric has no graph compiler behind ``torch.compile`` today, so code is
never being compiled: ``is_compiling()`` is False, ``disable`` returns the
function unchanged, ``allow_in_graph`` / ``assume_constant_result`` /
``substitute_in_graph`` are identities and ``reset`` has nothing to clear.

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

__all__ = ["is_compiling", "is_dynamo_compiling", "is_exporting", "disable", "allow_in_graph",
           "assume_constant_result", "substitute_in_graph", "reset", "list_backends", "cudagraph_mark_step_begin"]


def is_compiling() -> bool:
    """False: fabric code is never run under a graph compiler."""
    return False


def is_dynamo_compiling() -> bool:
    """False: there is no dynamo in fabric."""
    return False


def is_exporting() -> bool:
    """True only while a module is being exported (the flag ``fabric.jit._state.exporting``)."""
    try:
        from fabric.jit import _state
    except ImportError:  # pragma: no cover
        return False
    return _state.exporting


def disable(fn=None, recursive: bool = True, *, reason=None):
    """Keep ``fn`` out of compilation: a no-op in fabric. Usable bare or with arguments."""
    if fn is None:
        return lambda f: f
    return fn


def allow_in_graph(fn):
    """Identity (nothing is compiled)."""
    return fn


def assume_constant_result(fn):
    """Identity (nothing is compiled)."""
    return fn


def substitute_in_graph(original_fn, *, can_constant_fold_through=False, skip_signature_check=False):
    """Identity decorator (nothing is compiled, so no substitution is needed)."""
    return lambda fn: fn


def reset() -> None:
    """Nothing to clear: fabric keeps no compilation cache."""


def list_backends(exclude_tags=("debug", "experimental")) -> list:
    """No compile backends are available in fabric."""
    return []


def cudagraph_mark_step_begin() -> None:
    """No CUDA graphs are recorded by fabric, so there is no step to mark."""
