"""Helpers of the ops' forward-mode (JVP) rules (``Function.jvp``, read by ``fabric.autograd.forward_ad``).

A rule ``jvp(ctx, *tangents)`` gets the node of the recorded op as ``ctx`` (what forward saved, its
attributes) and one tangent per input (None where the input has none) and returns the output's tangent,
or ``NotImplemented`` to leave the whole product to forward_ad's double-backward fallback.

Example::

    >>> import fabric
    >>> import fabric.autograd.forward_ad as fwAD
    >>> with fwAD.dual_level():
    ...     x = fwAD.make_dual(fabric.tensor([1.0, 2.0]), fabric.tensor([1.0, 0.0]))
    ...     fwAD.unpack_dual(x * fabric.tensor([[3.0], [4.0]])).tangent   # Mul's rule, broadcast
    tensor([[3., 0.],
            [4., 0.]])
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .._tensor import Tensor


def shape_of(v) -> tuple:
    return tuple(v.shape) if isinstance(v, (Tensor, np.ndarray)) or hasattr(v, "shape") else ()


def jvp_sum(terms, operands, tangents) -> Any:
    """The sum of the non-None ``terms``, in the broadcast shape of ``operands`` (elementwise ops)."""
    if any(t is not None and t.is_complex() for t in tangents):
        return NotImplemented   # complex gradients are conjugated: the double-backward fallback is exact
    out = None
    for term in terms:
        if term is not None:
            out = term if out is None else out + term
    shape = np.broadcast_shapes(*[shape_of(v) for v in operands])
    if out is None:
        t = next(t for t in tangents if t is not None)
        return t.new_zeros(shape)
    return out if tuple(out.shape) == shape else out.expand(shape)


def broadcast_tangents(ctx, *tangents) -> Any:
    """The sum of the tangents in the output's shape, for ops whose output is the sum (``add``); None
    when the output shape cannot be told from the node (an input without a tangent and unknown shape)."""
    meta = ctx._input_meta
    live = [t for t in tangents if t is not None]
    if any(t.is_complex() for t in live):
        return NotImplemented
    if meta is None:
        shape = np.broadcast_shapes(*[tuple(t.shape) for t in live])
    elif all(m is not None for m in meta):
        shape = np.broadcast_shapes(*[tuple(m[0]) for m in meta])
    else:
        return NotImplemented
    out = live[0]
    for t in live[1:]:
        out = out + t
    return out if tuple(out.shape) == shape else out.expand(shape)
