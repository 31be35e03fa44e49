"""Lowering rules: multi-head and scaled dot-product attention, transformer layers."""
from __future__ import annotations

import math

import numpy as np

from ... import nn
from ._core import (
    FUNCTIONS,
    MODULES,
    UnsupportedOperatorError,
    _rank,
    _reg_module,
    _unsupported,
    cast,
    gelu,
    layer_norm,
    linear,
    reduce,
    shape_tensor,
    size_at,
    transpose,
    unsqueeze,
)
from .layers import _p

# --- attention and transformers ---------------------------------------------------------------------------

def attention(L, m, path, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
              average_attn_weights=True, is_causal=False):
    """nn.MultiheadAttention (eval) as MatMul/Softmax; returns (output, weights or None)."""
    b = L.b
    if m.bias_k is not None or m.add_zero_attn:
        raise UnsupportedOperatorError(_unsupported("MultiheadAttention(add_bias_kv / add_zero_attn)", b.opset))
    if _rank(query) != 3:
        raise UnsupportedOperatorError(_unsupported("MultiheadAttention on unbatched input", b.opset))
    E, H = m.embed_dim, m.num_heads
    D = E // H
    if not m.batch_first:
        query, key, value = (transpose(L, t, [1, 0, 2]) for t in (query, key, value))
    if m._qkv_same_embed_dim:
        W = _p(L, path, "in_proj_weight")
        ws = [b.op("Slice", [W, b.i64([i * E]), b.i64([(i + 1) * E]), b.i64([0])], W.dtype, 2) for i in range(3)]
    else:
        ws = [_p(L, path, n) for n in ("q_proj_weight", "k_proj_weight", "v_proj_weight")]
    bias = _p(L, path, "in_proj_bias")
    bs = [None] * 3 if bias is None else [
        b.op("Slice", [bias, b.i64([i * E]), b.i64([(i + 1) * E]), b.i64([0])], bias.dtype, 1) for i in range(3)]
    q, k, v = (linear(L, t, w, bb) for t, w, bb in zip((query, key, value), ws, bs))
    heads = b.i64([0, 0, H, D])
    q = transpose(L, b.op("Reshape", [q, heads], q.dtype, 4), [0, 2, 1, 3])       # B H T D
    kt = transpose(L, b.op("Reshape", [k, heads], k.dtype, 4), [0, 2, 3, 1])      # B H D S
    v = transpose(L, b.op("Reshape", [v, heads], v.dtype, 4), [0, 2, 1, 3])       # B H S D
    q = b.op("Mul", [q, b.const(np.asarray(1.0 / math.sqrt(D), q.dtype))], q.dtype, 4)
    scores = b.op("MatMul", [q, kt], q.dtype, 4)
    ninf = b.const(np.asarray(-np.inf, q.dtype))
    zero = b.const(np.asarray(0.0, q.dtype))
    if attn_mask is not None:
        if _rank(attn_mask) != 2:
            raise UnsupportedOperatorError(_unsupported("MultiheadAttention with a 3-D attn_mask", b.opset))
        if attn_mask.dtype == np.bool_:
            attn_mask = b.op("Where", [attn_mask, ninf, zero], q.dtype, 2)
        scores = b.op("Add", [scores, cast(L, attn_mask, q.dtype)], q.dtype, 4)
    elif is_causal:
        t_len, s_len = size_at(L, scores, 2), size_at(L, scores, 3)
        from onnx import numpy_helper
        full = b.op("ConstantOfShape", [shape_tensor(L, [t_len, s_len])], q.dtype, 2,
                    value=numpy_helper.from_array(np.asarray([-np.inf], q.dtype), name="value"))
        scores = b.op("Add", [scores, b.op("Trilu", [full, b.i64(1)], q.dtype, 2, upper=1)], q.dtype, 4)
    if key_padding_mask is not None:
        kpm = key_padding_mask
        if kpm.dtype == np.bool_:
            kpm = b.op("Where", [kpm, ninf, zero], q.dtype, 2)
        scores = b.op("Add", [scores, unsqueeze(L, cast(L, kpm, q.dtype), [1, 2])], q.dtype, 4)
    attn = b.op("Softmax", [scores], q.dtype, 4, axis=-1)
    out = b.op("MatMul", [attn, v], q.dtype, 4)
    out = b.op("Reshape", [transpose(L, out, [0, 2, 1, 3]), b.i64([0, 0, E])], q.dtype, 3)
    out = linear(L, out, _p(L, f"{path}.out_proj", "weight"), _p(L, f"{path}.out_proj", "bias"))
    if not m.batch_first:
        out = transpose(L, out, [1, 0, 2])
    weights = None
    if need_weights:
        weights = reduce(L, "ReduceMean", attn, [1], False) if average_attn_weights else attn
    return out, weights


@_reg_module(nn.MultiheadAttention)
def _m_mha(L, m, path, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
           average_attn_weights=True, is_causal=False):
    return attention(L, m, path, query, key, value, key_padding_mask, need_weights, attn_mask, average_attn_weights,
                     is_causal)


def _activation(L, layer, x):
    code = getattr(layer, "activation_relu_or_gelu", 0)
    act = layer.activation
    if code == 1:
        return L.b.op("Relu", [x], x.dtype, x.rank)
    if code == 2:
        return gelu(L, x, getattr(act, "approximate", "none"))
    rule = MODULES.get(type(act))
    if rule is not None:
        return rule(L, act, None, x)
    fn = FUNCTIONS.get(act)
    if fn is not None:
        return fn(L, x)
    raise UnsupportedOperatorError(_unsupported(f"TransformerEncoderLayer activation {act!r}", L.b.opset))


def encoder_layer(L, m, path, x, src_mask=None, src_key_padding_mask=None, is_causal=False):
    def sa(h):
        return attention(L, m.self_attn, f"{path}.self_attn", h, h, h, src_key_padding_mask, False, src_mask,
                         True, is_causal)[0]

    def ff(h):
        h = linear(L, h, _p(L, f"{path}.linear1", "weight"), _p(L, f"{path}.linear1", "bias"))
        h = _activation(L, m, h)
        return linear(L, h, _p(L, f"{path}.linear2", "weight"), _p(L, f"{path}.linear2", "bias"))

    def norm(name, h):
        mod = getattr(m, name)
        return layer_norm(L, h, mod.normalized_shape, _p(L, f"{path}.{name}", "weight"),
                          _p(L, f"{path}.{name}", "bias"), mod.eps)

    add = L.b.op
    if m.norm_first:
        x = add("Add", [x, sa(norm("norm1", x))], x.dtype, x.rank)
        x = add("Add", [x, ff(norm("norm2", x))], x.dtype, x.rank)
    else:
        x = norm("norm1", add("Add", [x, sa(x)], x.dtype, x.rank))
        x = norm("norm2", add("Add", [x, ff(x)], x.dtype, x.rank))
    return x


@_reg_module(nn.TransformerEncoderLayer)
def _m_encoder_layer(L, m, path, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
    return encoder_layer(L, m, path, src, src_mask, src_key_padding_mask, is_causal)


@_reg_module(nn.TransformerEncoder)
def _m_encoder(L, m, path, src, mask=None, src_key_padding_mask=None, is_causal=None):
    x = src
    for i, layer in enumerate(m.layers):
        x = encoder_layer(L, layer, f"{path}.layers.{i}", x, mask, src_key_padding_mask, bool(is_causal))
    if m.norm is not None:
        x = layer_norm(L, x, m.norm.normalized_shape, _p(L, f"{path}.norm", "weight"), _p(L, f"{path}.norm", "bias"),
                       m.norm.eps)
    return x


# --- transformer decoder and nn.Transformer -----------------------------------------------------------------

def decoder_layer(L, m, path, x, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                  memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
    def sa(h):
        return attention(L, m.self_attn, f"{path}.self_attn", h, h, h, tgt_key_padding_mask, False, tgt_mask,
                         True, bool(tgt_is_causal))[0]

    def mha(h):
        return attention(L, m.multihead_attn, f"{path}.multihead_attn", h, memory, memory, memory_key_padding_mask,
                         False, memory_mask, True, bool(memory_is_causal))[0]

    def ff(h):
        h = linear(L, h, _p(L, f"{path}.linear1", "weight"), _p(L, f"{path}.linear1", "bias"))
        h = _activation(L, m, h)
        return linear(L, h, _p(L, f"{path}.linear2", "weight"), _p(L, f"{path}.linear2", "bias"))

    def norm(name, h):
        mod = getattr(m, name)
        return layer_norm(L, h, mod.normalized_shape, _p(L, f"{path}.{name}", "weight"),
                          _p(L, f"{path}.{name}", "bias"), mod.eps)

    add = L.b.op
    if m.norm_first:
        x = add("Add", [x, sa(norm("norm1", x))], x.dtype, x.rank)
        x = add("Add", [x, mha(norm("norm2", x))], x.dtype, x.rank)
        x = add("Add", [x, ff(norm("norm3", x))], x.dtype, x.rank)
    else:
        x = norm("norm1", add("Add", [x, sa(x)], x.dtype, x.rank))
        x = norm("norm2", add("Add", [x, mha(x)], x.dtype, x.rank))
        x = norm("norm3", add("Add", [x, ff(x)], x.dtype, x.rank))
    return x


@_reg_module(nn.TransformerDecoderLayer)
def _m_decoder_layer(L, m, path, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                     memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
    return decoder_layer(L, m, path, tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                         memory_key_padding_mask, tgt_is_causal, memory_is_causal)


def _final_norm(L, m, path, x):
    if m.norm is None:
        return x
    return layer_norm(L, x, m.norm.normalized_shape, _p(L, f"{path}.norm", "weight"), _p(L, f"{path}.norm", "bias"),
                      m.norm.eps)


@_reg_module(nn.TransformerDecoder)
def _m_decoder(L, m, path, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
               memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False):
    x = tgt
    for i, layer in enumerate(m.layers):
        x = decoder_layer(L, layer, f"{path}.layers.{i}", x, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                          memory_key_padding_mask, bool(tgt_is_causal), memory_is_causal)
    return _final_norm(L, m, path, x)


@_reg_module(nn.Transformer)
def _m_transformer(L, m, path, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None, src_key_padding_mask=None,
                   tgt_key_padding_mask=None, memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                   memory_is_causal=False):
    enc_rule, dec_rule = MODULES.get(type(m.encoder)), MODULES.get(type(m.decoder))
    if enc_rule is None or dec_rule is None:
        raise UnsupportedOperatorError(_unsupported("nn.Transformer with a custom encoder or decoder", L.b.opset))
    memory = enc_rule(L, m.encoder, f"{path}.encoder", src, src_mask, src_key_padding_mask, src_is_causal)
    return dec_rule(L, m.decoder, f"{path}.decoder", tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                    memory_key_padding_mask, tgt_is_causal, memory_is_causal)
