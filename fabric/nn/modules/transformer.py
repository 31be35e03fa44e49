"""Transformer layers: ``TransformerEncoderLayer``, ``TransformerEncoder``,
``TransformerDecoderLayer``, ``TransformerDecoder``, ``Transformer``.

Submodules, parameter names and default initialisation are PyTorch's (the
stacks deep-copy their layer, so all layers start from the same weights;
``Transformer`` then re-initialises every matrix with ``xavier_uniform_``).
``TransformerEncoder`` reproduces the observable effect of PyTorch's
nested-tensor inference path: when that path would run (eval mode, no
gradient needed, ``batch_first``, a left-aligned ``src_key_padding_mask``,
...) the padded positions of the output are zero before the final norm.

Example::

    >>> import fabric
    >>> from fabric import nn
    >>> layer = nn.TransformerEncoderLayer(d_model=16, nhead=4, dim_feedforward=32, batch_first=True)
    >>> enc = nn.TransformerEncoder(layer, num_layers=2)
    >>> enc(fabric.randn(2, 5, 16)).shape
    fabric.Size([2, 5, 16])
"""
from __future__ import annotations

import copy
import warnings
from typing import Any

from ... import _creation
from ...autograd.grad_mode import is_grad_enabled
from .. import functional as F
from ..init import xavier_uniform_
from .activation import GELU, ReLU
from .attention import MultiheadAttention
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm

__all__ = [
    "Transformer",
    "TransformerDecoder",
    "TransformerDecoderLayer",
    "TransformerEncoder",
    "TransformerEncoderLayer",
]


def _generate_square_subsequent_mask(sz: int, device=None, dtype=None):
    """A float ``(sz, sz)`` mask with ``-inf`` above the diagonal and 0 elsewhere."""
    from ...ops.shape import triu

    return triu(_creation.full((sz, sz), float("-inf"), dtype=dtype, device=device), diagonal=1)


def _get_seq_len(src, batch_first: bool):
    src_size = src.size()
    if len(src_size) == 2:
        return src_size[0]
    return src_size[1 if batch_first else 0]


def _get_clones(module, N):
    return ModuleList([copy.deepcopy(module) for _ in range(N)])


def _get_activation_fn(activation: str):
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def _detect_is_causal_mask(mask, is_causal=None, size=None) -> bool:
    """``is_causal`` if given; otherwise whether ``mask`` equals the causal mask."""
    make_causal = is_causal is True
    if is_causal is None and mask is not None:
        sz = size if size is not None else mask.size(-2)
        causal_comparison = _generate_square_subsequent_mask(sz, device=mask.device, dtype=mask.dtype)
        if tuple(mask.size()) == tuple(causal_comparison.size()):
            make_causal = bool((mask == causal_comparison).all())
        else:
            make_causal = False
    return make_causal


def _left_aligned(valid) -> bool:
    """Whether every row of a boolean ``(N, S)`` mask is True on a prefix and False after it."""
    v = valid._data
    if v.shape[1] < 2:
        return True
    return not bool((v[:, 1:] & ~v[:, :-1]).any())


class Transformer(Module):
    """The encoder-decoder model of "Attention Is All You Need".

    ``forward(src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
    src_key_padding_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
    memory_is_causal=False)``.

    Example::

        >>> import fabric
        >>> model = fabric.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
        ...                               dim_feedforward=16)
        >>> src, tgt = fabric.randn(5, 2, 8), fabric.randn(3, 2, 8)
        >>> mask = model.generate_square_subsequent_mask(3)
        >>> model(src, tgt, tgt_mask=mask).shape
        fabric.Size([3, 2, 8])
    """

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6, num_decoder_layers: int = 6,
                 dim_feedforward: int = 2048, dropout: float = 0.1, activation=F.relu, custom_encoder=None,
                 custom_decoder=None, layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None) -> None:
        factory_kwargs: dict[str, Any] = {"device": device, "dtype": dtype}
        super().__init__()
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            encoder_layer = TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, activation,
                                                    layer_norm_eps, batch_first, norm_first, bias, **factory_kwargs)
            encoder_norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory_kwargs)
            self.encoder = TransformerEncoder(encoder_layer, num_encoder_layers, encoder_norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            decoder_layer = TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout, activation,
                                                    layer_norm_eps, batch_first, norm_first, bias, **factory_kwargs)
            decoder_norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory_kwargs)
            self.decoder = TransformerDecoder(decoder_layer, num_decoder_layers, decoder_norm)
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None, src_key_padding_mask=None,
                tgt_key_padding_mask=None, memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal: bool = False):
        is_batched = src.dim() == 3
        if not self.batch_first and src.size(1) != tgt.size(1) and is_batched:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if self.batch_first and src.size(0) != tgt.size(0) and is_batched:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.size(-1) != self.d_model or tgt.size(-1) != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                            memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None):
        """The causal mask for ``sz`` positions: ``-inf`` above the diagonal, 0 elsewhere.

        Example::

            >>> import fabric
            >>> fabric.nn.Transformer.generate_square_subsequent_mask(3).tolist()
            [[0.0, -inf, -inf], [0.0, 0.0, -inf], [0.0, 0.0, 0.0]]
        """
        return _generate_square_subsequent_mask(sz, dtype=dtype, device=device)

    def _reset_parameters(self) -> None:
        for p in self.parameters():
            if p.dim() > 1:
                xavier_uniform_(p)


class TransformerEncoder(Module):
    """A stack of ``num_layers`` copies of ``encoder_layer`` and an optional
    final ``norm``.  ``forward(src, mask=None, src_key_padding_mask=None,
    is_causal=None)``.

    Example::

        >>> import fabric
        >>> layer = fabric.nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16)
        >>> fabric.nn.TransformerEncoder(layer, 3, enable_nested_tensor=False)(fabric.randn(4, 2, 8)).shape
        fabric.Size([4, 2, 8])
    """

    __constants__ = ["norm"]

    def __init__(self, encoder_layer, num_layers: int, norm=None, enable_nested_tensor: bool = True,
                 mask_check: bool = True) -> None:
        super().__init__()
        self.layers = _get_clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check
        enc_layer = "encoder_layer"
        why_not_sparsity_fast_path = ""
        if not isinstance(encoder_layer, TransformerEncoderLayer):
            why_not_sparsity_fast_path = f"{enc_layer} was not TransformerEncoderLayer"
        elif encoder_layer.norm_first:
            why_not_sparsity_fast_path = f"{enc_layer}.norm_first was True"
        elif not encoder_layer.self_attn.batch_first:
            why_not_sparsity_fast_path = (f"{enc_layer}.self_attn.batch_first was not True"
                                          "(use batch_first for better inference performance)")
        elif not encoder_layer.self_attn._qkv_same_embed_dim:
            why_not_sparsity_fast_path = f"{enc_layer}.self_attn._qkv_same_embed_dim was not True"
        elif encoder_layer.self_attn.in_proj_bias is None:
            why_not_sparsity_fast_path = f"{enc_layer}.self_attn was passed bias=False"
        elif not encoder_layer.activation_relu_or_gelu:
            why_not_sparsity_fast_path = f"{enc_layer}.activation_relu_or_gelu was not True"
        elif encoder_layer.norm1.eps != encoder_layer.norm2.eps:
            why_not_sparsity_fast_path = f"{enc_layer}.norm1.eps was not equal to {enc_layer}.norm2.eps"
        elif encoder_layer.self_attn.num_heads % 2 == 1:
            why_not_sparsity_fast_path = f"{enc_layer}.self_attn.num_heads is odd"
        if enable_nested_tensor and why_not_sparsity_fast_path:
            warnings.warn(f"enable_nested_tensor is True, but self.use_nested_tensor is False because "
                          f"{why_not_sparsity_fast_path}", stacklevel=2)
            self.use_nested_tensor = False

    def _nested_path(self, src, mask, src_key_padding_mask) -> bool:
        """Whether PyTorch would run this call through its nested-tensor path
        (which leaves zeros at padded positions)."""
        first_layer = self.layers[0]
        if not getattr(self, "use_nested_tensor", False) or first_layer.training or src.dim() != 3:
            return False
        if src_key_padding_mask is None or mask is not None:
            return False
        if getattr(self, "mask_check", True) and not _left_aligned(src_key_padding_mask.logical_not()):
            return False
        attn = first_layer.self_attn
        tensor_args = (src, attn.in_proj_weight, attn.in_proj_bias, attn.out_proj.weight, attn.out_proj.bias,
                       first_layer.norm1.weight, first_layer.norm1.bias, first_layer.norm2.weight,
                       first_layer.norm2.bias, first_layer.linear1.weight, first_layer.linear1.bias,
                       first_layer.linear2.weight, first_layer.linear2.bias)
        return not (is_grad_enabled() and any(x is not None and x.requires_grad for x in tensor_args))

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        src_key_padding_mask = F._canonical_mask(mask=src_key_padding_mask, mask_name="src_key_padding_mask",
                                                 other_type=F._none_or_dtype(mask), other_name="mask",
                                                 target_type=src.dtype)
        mask = F._canonical_mask(mask=mask, mask_name="mask", other_type=None, other_name="", target_type=src.dtype,
                                 check_other=False)
        output = src
        first_layer = self.layers[0]
        padded = None
        if self._nested_path(src, mask, src_key_padding_mask):
            padded = src_key_padding_mask != 0
        seq_len = _get_seq_len(src, first_layer.self_attn.batch_first)
        is_causal = _detect_is_causal_mask(mask, is_causal, seq_len)
        for mod in self.layers:
            output = mod(output, src_mask=mask, is_causal=is_causal, src_key_padding_mask=src_key_padding_mask)
        if padded is not None:
            output = output.masked_fill(padded.unsqueeze(-1), 0.0)
        if self.norm is not None:
            output = self.norm(output)
        return output


class TransformerDecoder(Module):
    """A stack of ``num_layers`` copies of ``decoder_layer`` and an optional
    final ``norm``.  ``forward(tgt, memory, tgt_mask=None, memory_mask=None,
    tgt_key_padding_mask=None, memory_key_padding_mask=None,
    tgt_is_causal=None, memory_is_causal=False)``.

    Example::

        >>> import fabric
        >>> layer = fabric.nn.TransformerDecoderLayer(d_model=8, nhead=2, dim_feedforward=16)
        >>> fabric.nn.TransformerDecoder(layer, 2)(fabric.randn(3, 2, 8), fabric.randn(5, 2, 8)).shape
        fabric.Size([3, 2, 8])
    """

    __constants__ = ["norm"]

    def __init__(self, decoder_layer, num_layers: int, norm=None) -> None:
        super().__init__()
        self.layers = _get_clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal: bool = False):
        output = tgt
        seq_len = _get_seq_len(tgt, self.layers[0].self_attn.batch_first)
        tgt_is_causal = _detect_is_causal_mask(tgt_mask, tgt_is_causal, seq_len)
        for mod in self.layers:
            output = mod(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                         tgt_key_padding_mask=tgt_key_padding_mask, memory_key_padding_mask=memory_key_padding_mask,
                         tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)
        if self.norm is not None:
            output = self.norm(output)
        return output


class TransformerEncoderLayer(Module):
    """Self-attention and a feed-forward block, each with dropout, a
    residual connection and layer norm (after, or before with
    ``norm_first=True``).  ``activation`` is ``"relu"``, ``"gelu"`` or a
    callable.  ``forward(src, src_mask=None, src_key_padding_mask=None,
    is_causal=False)``.

    Example::

        >>> import fabric
        >>> layer = fabric.nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, activation="gelu")
        >>> layer(fabric.randn(4, 2, 8)).shape
        fabric.Size([4, 2, 8])
    """

    __constants__ = ["norm_first"]

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation=F.relu, layer_norm_eps: float = 1e-5, batch_first: bool = False, norm_first: bool = False,
                 bias: bool = True, device=None, dtype=None) -> None:
        factory_kwargs: dict[str, Any] = {"device": device, "dtype": dtype}
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            **factory_kwargs)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory_kwargs)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory_kwargs)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory_kwargs)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory_kwargs)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if isinstance(activation, str):
            activation = _get_activation_fn(activation)
        if activation is F.relu or isinstance(activation, ReLU):
            self.activation_relu_or_gelu = 1
        elif activation is F.gelu or isinstance(activation, GELU):
            self.activation_relu_or_gelu = 2
        else:
            self.activation_relu_or_gelu = 0
        self.activation = activation

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "activation"):
            self.activation = F.relu

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal: bool = False):
        src_key_padding_mask = F._canonical_mask(mask=src_key_padding_mask, mask_name="src_key_padding_mask",
                                                 other_type=F._none_or_dtype(src_mask), other_name="src_mask",
                                                 target_type=src.dtype)
        src_mask = F._canonical_mask(mask=src_mask, mask_name="src_mask", other_type=None, other_name="",
                                     target_type=src.dtype, check_other=False)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal=is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal=is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal: bool = False):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout2(x)


class TransformerDecoderLayer(Module):
    """Self-attention, cross-attention over ``memory`` and a feed-forward
    block, each with dropout, a residual connection and layer norm.
    ``forward(tgt, memory, tgt_mask=None, memory_mask=None,
    tgt_key_padding_mask=None, memory_key_padding_mask=None,
    tgt_is_causal=False, memory_is_causal=False)``.

    Example::

        >>> import fabric
        >>> layer = fabric.nn.TransformerDecoderLayer(d_model=8, nhead=2, dim_feedforward=16, norm_first=True)
        >>> layer(fabric.randn(3, 2, 8), fabric.randn(5, 2, 8)).shape
        fabric.Size([3, 2, 8])
    """

    __constants__ = ["norm_first"]

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation=F.relu, layer_norm_eps: float = 1e-5, batch_first: bool = False, norm_first: bool = False,
                 bias: bool = True, device=None, dtype=None) -> None:
        factory_kwargs: dict[str, Any] = {"device": device, "dtype": dtype}
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first, bias=bias,
                                            **factory_kwargs)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first, bias=bias,
                                                 **factory_kwargs)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory_kwargs)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory_kwargs)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory_kwargs)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory_kwargs)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory_kwargs)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        if isinstance(activation, str):
            self.activation = _get_activation_fn(activation)
        else:
            self.activation = activation

    def __setstate__(self, state):
        if "activation" not in state:
            state["activation"] = F.relu
        super().__setstate__(state)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal: bool = False, memory_is_causal: bool = False):
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal: bool = False):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, is_causal=is_causal,
                           need_weights=False)[0]
        return self.dropout1(x)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal: bool = False):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                                is_causal=is_causal, need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout3(x)
