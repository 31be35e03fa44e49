"""The batching rule of the pointwise tables (``vmap``; see ``fabric/func/_batched.py``).

A batching rule ``rule(ctx, *args, **kwargs)`` receives an op's arguments with every batched tensor
replaced by its physical value (batch at dimension 0) and returns the result with the batch at
dimension 0.  For an elementwise op one rule serves every table row: each batched operand gets size-1
dimensions inserted after the batch up to the largest logical rank, so that broadcasting pairs logical
dimensions with logical dimensions (and the batch with the batch, or with nothing), and the op runs
once on the whole batch.

Example::

    >>> import fabric
    >>> fabric.func.vmap(fabric.add)(fabric.ones(3, 2), fabric.ones(3, 1, 2)).shape   # (2,) + (1, 2) per example
    fabric.Size([3, 1, 2])
"""
from __future__ import annotations

from typing import Any

from .._tensor import Tensor


def elementwise(op, key: str | None = None) -> Any:
    """The batching rule of elementwise op ``op`` (any number of tensor operands, broadcasting);
    ``key``: its name in the registry (default: ``op.__name__``)."""
    key = key or op.__name__

    def rule(ctx, *args, **kwargs):
        tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, Tensor)]
        rank = max(ctx.ldim(a) for a in tensors)
        args = tuple(ctx.pad(a, rank) if ctx.batched(a) else a for a in args)
        kwargs = {k: ctx.pad(v, rank) if ctx.batched(v) else v for k, v in kwargs.items()}
        if kwargs.get("out") is not None:
            return NotImplemented
        return ctx.call(key, op, *args, **kwargs)

    rule.__name__ = f"batch_{getattr(op, '__name__', 'op')}"
    return rule
