"""``nn.MultiheadAttention`` (PyTorch keeps it in ``torch.nn.modules.activation``).

Parameters are PyTorch's, with the same names, shapes and initialisation
order (``in_proj_weight`` or ``q_proj_weight``/``k_proj_weight``/
``v_proj_weight``, ``in_proj_bias``, ``bias_k``/``bias_v``, ``out_proj``), so
state_dicts move between the two.  The forward is PyTorch's standard path
(:func:`fabric.nn.functional.multi_head_attention_forward`); PyTorch's
inference fast path (``torch._native_multi_head_attention``) computes the
same values and is not reproduced separately.

Example::

    >>> import fabric
    >>> mha = fabric.nn.MultiheadAttention(8, 2, batch_first=True)
    >>> x = fabric.randn(3, 5, 8)
    >>> out, weights = mha(x, x, x)
    >>> out.shape, weights.shape
    (fabric.Size([3, 5, 8]), fabric.Size([3, 5, 5]))
"""
from __future__ import annotations

from typing import Any

from ... import _creation
from .. import functional as F
from ..init import constant_, xavier_normal_, xavier_uniform_
from ..parameter import Parameter
from .linear import NonDynamicallyQuantizableLinear
from .module import Module

__all__ = ["MultiheadAttention"]


class MultiheadAttention(Module):
    """Attention over ``num_heads`` heads of ``embed_dim // num_heads`` features:
    ``MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O`` with
    ``head_i = softmax(Q W_i^Q (K W_i^K)^T / sqrt(d)) V W_i^V``.

    ``forward(query, key, value, key_padding_mask=None, need_weights=True,
    attn_mask=None, average_attn_weights=True, is_causal=False)`` takes
    ``(L, N, E)`` inputs (``(N, L, E)`` with ``batch_first``, or unbatched
    ``(L, E)``) and returns ``(attn_output, attn_weights)``; weights are
    averaged over heads unless ``average_attn_weights=False`` and ``None``
    when ``need_weights=False``.  In masks, ``True`` (or ``-inf``) excludes
    a position.

    Example::

        >>> import fabric
        >>> mha = fabric.nn.MultiheadAttention(4, 2, kdim=3, vdim=5)
        >>> q, k, v = fabric.randn(2, 1, 4), fabric.randn(6, 1, 3), fabric.randn(6, 1, 5)
        >>> [tuple(t.shape) for t in mha(q, k, v, need_weights=True)]
        [(2, 1, 4), (1, 2, 6)]
    """

    __constants__ = ["batch_first"]

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False, device=None, dtype=None) -> None:
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        factory_kwargs: dict[str, Any] = {"device": device, "dtype": dtype}
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != self.embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(_creation.empty((embed_dim, embed_dim), **factory_kwargs))
            self.k_proj_weight = Parameter(_creation.empty((embed_dim, self.kdim), **factory_kwargs))
            self.v_proj_weight = Parameter(_creation.empty((embed_dim, self.vdim), **factory_kwargs))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(_creation.empty((3 * embed_dim, embed_dim), **factory_kwargs))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(_creation.empty(3 * embed_dim, **factory_kwargs))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **factory_kwargs)
        if add_bias_kv:
            self.bias_k = Parameter(_creation.empty((1, 1, embed_dim), **factory_kwargs))
            self.bias_v = Parameter(_creation.empty((1, 1, embed_dim), **factory_kwargs))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            xavier_uniform_(self.in_proj_weight)
        else:
            xavier_uniform_(self.q_proj_weight)
            xavier_uniform_(self.k_proj_weight)
            xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            constant_(self.in_proj_bias, 0.0)
            constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            xavier_normal_(self.bias_v)

    def __setstate__(self, state):
        if "_qkv_same_embed_dim" not in state:
            state["_qkv_same_embed_dim"] = True
        super().__setstate__(state)

    def forward(self, query, key, value, key_padding_mask=None, need_weights: bool = True, attn_mask=None,
                average_attn_weights: bool = True, is_causal: bool = False):
        is_batched = query.dim() == 3
        key_padding_mask = F._canonical_mask(mask=key_padding_mask, mask_name="key_padding_mask",
                                             other_type=F._none_or_dtype(attn_mask), other_name="attn_mask",
                                             target_type=query.dtype)
        attn_mask = F._canonical_mask(mask=attn_mask, mask_name="attn_mask", other_type=None, other_name="",
                                      target_type=query.dtype, check_other=False)
        if self.batch_first and is_batched:
            # keep the identity of self-attention inputs (the packed in-projection relies on it)
            if key is value:
                if query is key:
                    query = key = value = query.transpose(1, 0)
                else:
                    query, key = (x.transpose(1, 0) for x in (query, key))
                    value = key
            else:
                query, key, value = (x.transpose(1, 0) for x in (query, key, value))
        common = {"training": self.training, "key_padding_mask": key_padding_mask, "need_weights": need_weights,
                      "attn_mask": attn_mask, "average_attn_weights": average_attn_weights, "is_causal": is_causal}
        if not self._qkv_same_embed_dim:
            attn_output, attn_output_weights = F.multi_head_attention_forward(
                query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias,
                self.bias_k, self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias,
                use_separate_proj_weight=True, q_proj_weight=self.q_proj_weight, k_proj_weight=self.k_proj_weight,
                v_proj_weight=self.v_proj_weight, **common)
        else:
            attn_output, attn_output_weights = F.multi_head_attention_forward(
                query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias,
                self.bias_k, self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias,
                **common)
        if self.batch_first and is_batched:
            return attn_output.transpose(1, 0), attn_output_weights
        return attn_output, attn_output_weights

    def merge_masks(self, attn_mask, key_padding_mask, query):
        """Combine ``attn_mask`` and ``key_padding_mask`` into one
        ``(N, num_heads, L, S)`` mask and its type (1: padding only, 2: merged),
        as PyTorch's fast path does."""
        mask_type = None
        merged_mask = None
        if key_padding_mask is not None:
            mask_type = 1
            merged_mask = key_padding_mask
        if attn_mask is not None:
            batch_size, seq_len, _ = query.shape
            mask_type = 2
            if attn_mask.dim() == 3:
                attn_mask_expanded = attn_mask.view(batch_size, -1, seq_len, seq_len)
            else:
                attn_mask_expanded = attn_mask.view(1, 1, seq_len, seq_len).expand(batch_size, self.num_heads, -1, -1)
            merged_mask = attn_mask_expanded
            if key_padding_mask is not None:
                key_padding_mask_expanded = key_padding_mask.view(batch_size, 1, 1, seq_len).expand(
                    -1, self.num_heads, -1, -1)
                merged_mask = attn_mask_expanded + key_padding_mask_expanded
        return merged_mask, mask_type
