"""Installs ops as Tensor methods: ``x.exp()`` is ``fabric.exp(x)``.

Ops declared in the registry (``ops/_registry.py``) become methods from their
declaration; for the others, add the name here when PyTorch has it as a Tensor
method.  The function's first parameter becomes ``self``.
"""
from __future__ import annotations

METHODS = """
eq ne lt le gt ge greater greater_equal less less_equal not_equal
logical_and logical_or logical_xor bitwise_and bitwise_or bitwise_xor
eq_ ne_ lt_ le_ gt_ ge_ greater_ greater_equal_ less_ less_equal_ not_equal_
logical_and_ logical_or_ logical_xor_ bitwise_and_ bitwise_or_ bitwise_xor_
cumsum_ cumprod_ divide_ multiply_ subtract_ fill_diagonal_ is_shared
share_memory_ sum_to_size resize_ unsafe_chunk unsafe_split
unsafe_split_with_sizes apply_ map_ heaviside_ mvlgamma_
index_reduce_ new
diff cov corrcoef
""".split()

# Tensor methods PyTorch has no top-level function for: fabric.ops has them (the methods are installed from
# it) but leaves them out of its ``__all__``, so ``fabric.cumsum_`` does not exist, as ``torch.cumsum_`` does not.
METHOD_ONLY = frozenset("""
apply_ cumprod_ cumsum_ divide_ fill_diagonal_ heaviside_ index_reduce_ is_shared map_ multiply_ mvlgamma_ new resize_
share_memory_ subtract_ sum_to_size
""".split())


def install_tensor_methods(names=None):
    """Set ``Tensor.<name> = fabric.ops.<name>`` for each listed op and each
    op the registry declares as a method (never overriding a method the Tensor
    class defines itself)."""
    from .. import ops
    from .._tensor import Tensor
    from ._registry import tensor_methods

    if names is None:
        for name, fn in tensor_methods().items():
            if name not in Tensor.__dict__:
                setattr(Tensor, name, fn)
    for name in METHODS if names is None else names:
        if name in Tensor.__dict__:
            continue
        setattr(Tensor, name, getattr(ops, name))
