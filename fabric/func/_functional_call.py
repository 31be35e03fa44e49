"""``functional_call``: run a module with substituted parameters and buffers.

Example::

    >>> import fabric
    >>> m = fabric.nn.Linear(2, 1)
    >>> p = {"weight": fabric.ones(1, 2), "bias": fabric.zeros(1)}
    >>> fabric.func.functional_call(m, p, (fabric.tensor([[1.0, 2.0]]),))
    tensor([[3.]])
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["functional_call"]


def functional_call(module, parameter_and_buffer_dicts, args: Any = None, kwargs: dict | None = None, *,
                    tie_weights: bool = True, strict: bool = False):
    """Run ``module(*args, **kwargs)`` with its parameters and buffers
    replaced by those in ``parameter_and_buffer_dicts`` (a dict, or a
    sequence of dicts with disjoint keys), restoring them afterwards even if
    the call raises.  Gradients flow to the given tensors.  See
    :func:`fabric.nn.utils.stateless.functional_call` for ``tie_weights`` and
    ``strict``.

    Example::

        >>> import fabric
        >>> m = fabric.nn.Linear(1, 1)
        >>> w = fabric.full((1, 1), 3.0, requires_grad=True)
        >>> fabric.func.functional_call(m, ({"weight": w}, {"bias": fabric.zeros(1)}), fabric.ones(1, 1)).item()
        3.0
    """
    from ..nn.utils.stateless import _functional_call
    if isinstance(parameter_and_buffer_dicts, dict):
        parameters_and_buffers = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
        counts: dict = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                counts[k] = counts.get(k, 0) + 1
        repeated_keys = [k for k, n in counts.items() if n > 1]
        if repeated_keys:
            raise ValueError(f"{repeated_keys} appeared in multiple dictionaries; behavior of functional call is "
                             "ambiguous")
        parameters_and_buffers = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError("Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
                         f"{type(parameter_and_buffer_dicts)}")
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)
