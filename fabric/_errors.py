"""Exception classes fabric shares with PyTorch that belong to no one layer.

``OutOfMemoryError`` is PyTorch's ``torch.OutOfMemoryError`` (also
``torch.cuda.OutOfMemoryError``): a ``RuntimeError`` raised when an
allocation fails, in place of NumPy's ``MemoryError``.

Example::

    >>> import fabric
    >>> issubclass(fabric.OutOfMemoryError, RuntimeError)
    True
"""
from __future__ import annotations


class OutOfMemoryError(RuntimeError):
    """An allocation failed (PyTorch's ``torch.OutOfMemoryError``)."""


def out_of_memory(exc: MemoryError) -> OutOfMemoryError:
    """PyTorch's CPU allocator message for a NumPy ``MemoryError``."""
    nbytes = getattr(exc, "_total_size", None)
    if nbytes is None:
        return OutOfMemoryError(f"DefaultCPUAllocator: can't allocate memory: {exc}")
    return OutOfMemoryError(f"DefaultCPUAllocator: can't allocate memory: you tried to allocate {nbytes} bytes. "
                            "Error code 12 (Cannot allocate memory)")
