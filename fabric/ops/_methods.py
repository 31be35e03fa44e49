"""Installs ops as Tensor methods: ``x.exp()`` is ``fabric.exp(x)``.

Ops declared in the registry (``ops/_registry.py``) become methods from their
declaration; for the others, add the name here when PyTorch has it as a Tensor
method.  The function's first parameter becomes ``self``.
"""
from __future__ import annotations

METHODS = """
reshape view view_as reshape_as flatten transpose swapaxes swapdims permute expand expand_as squeeze unsqueeze
unbind t narrow
unflatten ravel movedim moveaxis adjoint broadcast_to repeat repeat_interleave tile flip fliplr flipud roll rot90
select diagonal diag diag_embed diagflat tril triu tril_ triu_ as_strided as_strided_ unfold t_ squeeze_ unsqueeze_
transpose_ swapaxes_ swapdims_
index_select gather scatter scatter_ scatter_reduce scatter_reduce_ index_add index_add_
index_fill index_fill_ masked_fill masked_fill_ masked_select
masked_scatter masked_scatter_ take take_along_dim put put_ nonzero argwhere
outer ger inner addmm_ addmv_ addbmm_ baddbmm_ addr_ kron
det logdet slogdet matrix_power
matrix_exp
square
logit
round relu nan_to_num positive isnan isinf isposinf isneginf isfinite isreal
signbit logical_not bitwise_not float_power
eq ne lt le gt ge greater greater_equal less less_equal not_equal
logical_and logical_or logical_xor bitwise_and bitwise_or bitwise_xor bitwise_left_shift bitwise_right_shift isclose
allclose equal clamp clip clamp_min clamp_max lerp neg_ negative_
square_ exp_ log_
logit_
round_ relu_ nan_to_num_
logical_not_ bitwise_not_ float_power_
pow_ true_divide_ eq_ ne_ lt_ le_ gt_ ge_ greater_ greater_equal_ less_ less_equal_ not_equal_
logical_and_ logical_or_ logical_xor_ bitwise_and_ bitwise_or_ bitwise_xor_ bitwise_left_shift_ bitwise_right_shift_
clamp_ clip_ clamp_min_ clamp_max_ lerp_
cumsum_ cumprod_ divide_ multiply_ subtract_ fill_diagonal_ is_inference is_nonzero is_same_size get_device is_shared
share_memory_ sum_to_size narrow_copy resize_ resize_as_ unsafe_chunk unsafe_split
unsafe_split_with_sizes apply_ map_ gcd gcd_ lcm lcm_ heaviside heaviside_ ldexp ldexp_ frexp i0 i0_ mvlgamma mvlgamma_
slice_scatter select_scatter diagonal_scatter index_reduce index_reduce_ new
triangular_solve
diff cov corrcoef dist
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
