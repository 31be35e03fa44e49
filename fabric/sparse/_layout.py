"""Tensor layouts: ``fabric.strided`` and ``fabric.sparse_coo``.

A layout is a string subclass so that older code comparing with ``"strided"``
keeps working; it prints as PyTorch's does (``fabric.sparse_coo``).

Example::

    >>> import fabric
    >>> fabric.ones(2).layout
    fabric.strided
"""


class layout(str):
    """A memory layout of a tensor."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"fabric.{str.__str__(self)}"

    __str__ = __repr__


strided = layout("strided")
sparse_coo = layout("sparse_coo")
