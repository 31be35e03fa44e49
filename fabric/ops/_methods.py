"""Installs the declared ops as Tensor methods: ``x.exp()`` is ``fabric.exp(x)``.

Every op PyTorch has as a Tensor method is declared in the registry
(``ops/_registry.py``) with ``method`` (the default) and, for the ones PyTorch
has only as methods (``Tensor.cumsum_``), ``top_level=False``; nothing is
listed here by hand.  The function's first parameter becomes ``self``.
"""
from __future__ import annotations


def install_tensor_methods() -> None:
    """Set ``Tensor.<name>`` for each op the registry declares as a method (never overriding a method the
    Tensor class defines itself).  Run when ``fabric.ops`` is imported and again once ``nn`` is, for the
    methods ``nn.functional`` declares."""
    from .._tensor import Tensor
    from ._registry import tensor_methods

    for name, fn in tensor_methods().items():
        if name not in Tensor.__dict__:
            setattr(Tensor, name, fn)
