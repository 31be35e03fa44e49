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
unflatten ravel movedim moveaxis adjoint broadcast_to repeat repeat_interleave tile flip fliplr flipud roll rot90
select diagonal diag diag_embed diagflat tril triu tril_ triu_ as_strided as_strided_ unfold t_ squeeze_ unsqueeze_
transpose_ swapaxes_ swapdims_ split split_with_sizes chunk tensor_split hsplit vsplit dsplit
index_select gather scatter scatter_ scatter_add scatter_add_ scatter_reduce scatter_reduce_ index_add index_add_
index_copy index_copy_ index_fill index_fill_ index_put index_put_ masked_fill masked_fill_ masked_select
masked_scatter masked_scatter_ take take_along_dim put put_ nonzero argwhere
mm bmm mv dot vdot outer ger inner addmm addmv addbmm baddbmm addr addmm_ addmv_ addbmm_ baddbmm_ addr_ kron
trace cross det logdet slogdet inverse pinverse cholesky cholesky_solve cholesky_inverse qr svd matrix_power
matrix_exp
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
