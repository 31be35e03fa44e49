"""Installs ops as Tensor methods: ``x.exp()`` is ``fabric.exp(x)``.

Add a name here when PyTorch has it as a Tensor method; the function's first
parameter becomes ``self``.
"""
from __future__ import annotations

METHODS = """
add sub mul div true_divide multiply subtract divide neg negative pow exp log matmul rsub
sum mean
reshape view view_as reshape_as flatten transpose swapaxes swapdims permute expand expand_as squeeze unsqueeze
unbind t narrow
add_ sub_ mul_ div_ zero_ fill_ copy_
nansum nanmean prod max min amax amin aminmax argmax argmin var std logsumexp norm cumsum cumprod cummax cummin
logcumsumexp all any count_nonzero
sort argsort msort topk kthvalue median nanmedian mode quantile nanquantile unique unique_consecutive bincount
histc histogram
""".split()


def install_tensor_methods(names=None):
    """Set ``Tensor.<name> = fabric.ops.<name>`` for each listed op (never
    overriding a method the Tensor class defines itself)."""
    from .. import ops
    from .._tensor import Tensor

    for name in METHODS if names is None else names:
        if name in Tensor.__dict__:
            continue
        setattr(Tensor, name, getattr(ops, name))
