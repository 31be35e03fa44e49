"""Tensor layouts for the sparse package: the objects of :mod:`fabric._layout`
(``fabric.strided``, ``fabric.sparse_coo``), one definition for all of fabric.

Example::

    >>> import fabric
    >>> fabric.ones(2).layout
    fabric.strided
"""
from .._layout import layout, sparse_coo, sparse_csr, strided

__all__ = ["layout", "sparse_coo", "sparse_csr", "strided"]
